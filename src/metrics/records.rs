//! Reading runs into [`RunRecord`]s for tables: one streaming pass per file.

use std::path::PathBuf;

use anyhow::Result;

use super::group::RunRecord;
use super::run::RunAccumulator;
use crate::trajectory::reader::{EventStream, Severity, collect_files};

/// One record per readable run under `paths`; unreadable files come back with their reason.
pub fn read_records(paths: &[PathBuf]) -> Result<(Vec<RunRecord>, Vec<String>)> {
    let found = collect_files(paths)?;
    let mut records = Vec::with_capacity(found.files.len());
    let mut unreadable = found.skipped;
    for file in found.files {
        let mut stream = match EventStream::open(&file) {
            Ok(s) => s,
            Err(e) => {
                unreadable.push(format!("{e:#}"));
                continue;
            }
        };
        // A wm-eval file is not an agent's run: its calls are copies, scored by wm-eval.
        if stream.header().agent.kind == crate::trajectory::event::AgentKind::WmEval {
            unreadable.push(format!(
                "{}: a wm-eval file, not a run (its leaderboard: cosmos wm-eval)",
                file.display()
            ));
            continue;
        }
        let mut acc = RunAccumulator::new(stream.header());
        while let Some(event) = stream.next_event()? {
            acc.push(&event);
        }
        let errors = stream
            .problems()
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .count();
        if errors > 0 {
            tracing::warn!(file = %file.display(), errors, "skipped bad lines");
        }
        records.push(RunRecord::new(file, stream.header(), acc.metrics()));
    }
    Ok((records, unreadable))
}
