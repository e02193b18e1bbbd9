//! `cosmos validate`: the reader's problems plus the checks that need the whole run
//! (node references, step links), printed as `FILE:LINE: reason`.

use crate::cli::output::outln;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use cosmos_trajectory::event::{EventBody, NodeId};
use cosmos_trajectory::reader::{EventStream, Problem, Severity, collect_files};
use cosmos_trajectory::sanitize::inert;

/// Checks every file; exit code 1 when any has an error.
pub fn run(paths: &[PathBuf], quiet: bool) -> Result<ExitCode> {
    let found = collect_files(paths)?;
    for skipped in &found.skipped {
        outln!("{}: warning: skipped", inert(skipped));
    }
    let skipped = found.skipped.len();
    let files = found.files;
    if files.is_empty() {
        anyhow::bail!(
            "no *.jsonl files under {}",
            cosmos_trajectory::reader::path_list(paths)
        );
    }
    let (mut bad_files, mut warnings) = (0usize, skipped);
    for file in &files {
        let problems = check_file(file);
        let errors = problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count();
        warnings += problems.len() - errors;
        bad_files += usize::from(errors > 0);
        for p in problems
            .iter()
            .filter(|p| !quiet || p.severity == Severity::Error)
        {
            outln!("{}", inert(&p.to_string()));
        }
    }
    outln!(
        "{} file(s) checked: {} with errors, {} warning(s)",
        files.len(),
        bad_files,
        warnings
    );
    Ok(if bad_files > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Every problem in one file.
pub fn check_file(path: &Path) -> Vec<Problem> {
    let mut stream = match EventStream::open(path) {
        Ok(s) => s,
        Err(e) => {
            // The error already reads FILE:1: reason, or is an I/O error about the file.
            let reason = format!("{e:#}");
            let prefix = format!("{}:1: ", path.display());
            let reason = reason.strip_prefix(&prefix).unwrap_or(&reason).to_string();
            return vec![Problem {
                path: path.to_path_buf(),
                line: 1,
                severity: Severity::Error,
                reason,
                skipped: false,
            }];
        }
    };
    let mut nodes: HashSet<NodeId> = HashSet::new();
    let mut extra = Vec::new();
    loop {
        let event = match stream.next_event() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                extra.push(Problem {
                    path: path.to_path_buf(),
                    line: 0,
                    severity: Severity::Error,
                    reason: format!("{e:#}"),
                    skipped: false,
                });
                break;
            }
        };
        let line = stream.line_no();
        let mut bad = |reason: String| {
            extra.push(Problem {
                path: path.to_path_buf(),
                line,
                severity: Severity::Error,
                reason,
                skipped: false,
            });
        };
        match &event.body {
            EventBody::NodeAdded { node, parent, .. } => {
                // The parent is checked before the node counts as added: a node that names
                // itself as its parent would otherwise pass (and make the tree a loop).
                match parent {
                    Some(p) if p == node => bad(format!("node {node} is its own parent")),
                    Some(p) if !nodes.contains(p) => bad(format!(
                        "node {node} has parent {p}, which was not added before it"
                    )),
                    _ => {}
                }
                if !nodes.insert(*node) {
                    bad(format!("node {node} added twice"));
                }
            }
            EventBody::NodeSimulated { node, .. } | EventBody::NodeEvaluated { node, .. }
                if !nodes.contains(node) =>
            {
                bad(format!(
                    "{} refers to node {node}, which was not added",
                    event.body.kind()
                ));
            }
            EventBody::Backpropagated { path: ids, .. }
            | EventBody::PlanSelected { nodes: ids, .. } => {
                if let Some(n) = ids.iter().find(|n| !nodes.contains(n)) {
                    bad(format!(
                        "{} refers to node {n}, which was not added",
                        event.body.kind()
                    ));
                }
            }
            EventBody::ToolCalled { node: Some(n), .. } if !nodes.contains(n) => {
                bad(format!(
                    "tool_called executes node {n}, which was not added"
                ));
            }
            _ => {}
        }
    }
    let mut problems = stream.take_problems();
    problems.extend(extra);
    problems.sort_by_key(|p| p.line);
    problems
}
