//! `cosmos recheck`: make runs' recorded real calls again against today's servers and say how
//! far each has drifted; the findings are appended to each run.

use crate::cli::output::{errln, out, outln};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use serde_json::json;

use cosmos_engine::mcp::McpConfig;
use cosmos_engine::mcp::Timeouts;
use cosmos_engine::recheck::{self, Found};
use cosmos_trajectory::describe::recheck_summary;
use cosmos_trajectory::reader::collect_files;
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::sanitize::inert;

/// `cosmos recheck` options.
#[derive(Debug, Args)]
pub struct RecheckArgs {
    /// Run files or folders.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Today's servers, in the usual {"mcpServers": {...}} form.
    #[arg(long)]
    pub mcp_config: PathBuf,
    /// Also make the calls of tools not annotated read-only (they may change something; they
    /// are listed before they are made).
    #[arg(long)]
    pub all: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: RecheckFormat,
    /// Time a server may take to start and list its tools, seconds.
    #[arg(long, default_value_t = 60)]
    pub startup_timeout_s: u64,
    /// Time one tool call may take, seconds.
    #[arg(long, default_value_t = 60)]
    pub call_timeout_s: u64,
}

/// `--format`.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum RecheckFormat {
    /// A line per run and a row per call.
    #[default]
    Table,
    /// One JSON document: per run, its calls' drift.
    Json,
}

/// Rechecks every run; 1 when a run could not be rechecked, 130 when a signal stopped it
/// (the runs finished by then keep their findings).
pub fn run(args: RecheckArgs) -> Result<ExitCode> {
    let mcp = McpConfig::load(&args.mcp_config)?;
    let found = collect_files(&args.paths)?;
    for skipped in &found.skipped {
        errln!("cosmos: skipped {}", inert(skipped));
    }
    if found.files.is_empty() {
        bail!("no *.jsonl files to recheck");
    }
    let redactor = Redactor::with_secrets(
        mcp.secrets
            .iter()
            .cloned()
            .chain(Redactor::environment_secrets()),
    );
    let timeouts = Timeouts {
        startup: Duration::from_secs(args.startup_timeout_s.max(1)),
        call: Duration::from_secs(args.call_timeout_s.max(1)),
        ..Timeouts::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut failures = 0;
    let mut documents = Vec::new();
    let mut stopped = false;
    runtime.block_on(async {
        let mut stop = cosmos_engine::agent::stop_on_signals().rx;
        for file in &found.files {
            let recheck::RecordedRun {
                header,
                calls,
                last_ms,
                unreadable,
            } = match recheck::recorded_calls(file) {
                Ok(read) => read,
                Err(e) => {
                    failures += 1;
                    errln!("cosmos: {}: {}", file.display(), inert(&format!("{e:#}")));
                    continue;
                }
            };
            // A call on a line that could not be read is not made again: said, not hidden.
            for line in &unreadable {
                errln!("cosmos: skipped {}", inert(line));
            }
            let mut warn = |unsafe_calls: &[String]| {
                errln!(
                    "cosmos: {}: making {} call(s) of tools the servers do not annotate read-only: {}",
                    file.display(),
                    unsafe_calls.len(),
                    inert(&unsafe_calls.join(", "))
                );
            };
            let rechecked = tokio::select! {
                found = recheck::recheck(&header, &calls, args.all, &mut warn, &mcp, timeouts) => found,
                _ = stop.wait_for(|s| *s) => {
                    stopped = true;
                    break;
                }
            };
            let rechecked = match rechecked {
                Ok(found) => found,
                Err(e) => {
                    failures += 1;
                    errln!("cosmos: {}: {}", file.display(), inert(&format!("{e:#}")));
                    continue;
                }
            };
            if let Err(e) = recheck::append(file, &rechecked, last_ms, redactor.clone()) {
                failures += 1;
                errln!("cosmos: {}: {}", file.display(), inert(&format!("{e:#}")));
            }
            match args.format {
                RecheckFormat::Table => print_table(file, &rechecked, &unreadable),
                RecheckFormat::Json => documents.push(json!({
                    "file": file.display().to_string(),
                    "at": rechecked.at,
                    "calls": rechecked.calls,
                    "skipped": rechecked.skipped,
                    "skipped_lines": unreadable,
                })),
            }
        }
    });
    if let RecheckFormat::Json = args.format {
        outln!("{}", inert(&serde_json::to_string_pretty(&documents)?));
    }
    Ok(if stopped {
        errln!("cosmos: stopped; the runs rechecked before the stop keep their findings");
        ExitCode::from(130)
    } else if failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_table(file: &std::path::Path, found: &Found, unreadable: &[String]) {
    let mut out = format!(
        "{}: {}\n",
        file.display(),
        recheck_summary(&found.at, &found.calls, &found.skipped)
    );
    if !found.calls.is_empty() {
        out.push_str(&format!(
            "  {:>5}  {:<12} {:>8}  {}\n",
            "step", "drift", "fidelity", "tool"
        ));
    }
    for c in &found.calls {
        let fidelity = c.fidelity.map_or("—".to_string(), |f| {
            cosmos_engine::metrics::figure::fraction(f, 2)
        });
        out.push_str(&format!(
            "  {:>5}  {:<12} {:>8}  {}{}\n",
            c.step,
            c.drift.as_str(),
            fidelity,
            c.tool,
            c.error
                .as_deref()
                .map_or(String::new(), |e| format!(" ({e})"))
        ));
    }
    if !found.skipped.is_empty() {
        let steps: Vec<String> = found.skipped.iter().map(u64::to_string).collect();
        out.push_str(&format!(
            "  skipped, tools not annotated read-only (--all makes them): steps {}\n",
            steps.join(", ")
        ));
    }
    if !unreadable.is_empty() {
        out.push_str(&format!(
            "  {} line(s) of the file could not be read: a call they held was not made again\n",
            unreadable.len()
        ));
    }
    out!("{}", inert(&out));
}
