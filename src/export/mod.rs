//! `cosmos export`: a run where people already look, and data for the next world model.
//! `markdown` and `json` are accounts of one run (`account.rs`); `transitions` writes a
//! training set of real calls (`transitions.rs`). OpenTelemetry export is not built yet.

pub mod account;
pub mod transitions;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::trajectory::run::Run;

/// `cosmos export` and its formats.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// What to write.
    #[command(subcommand)]
    pub what: Export,
}

/// The export formats.
#[derive(Debug, Subcommand)]
pub enum Export {
    /// One run as Markdown: task, settings, the plan and why it won, each step simulated beside
    /// real with its fidelity, the answer, the metrics, the notes (for an issue or a model).
    Markdown {
        /// The run file.
        run: PathBuf,
        /// Write here instead of standard output.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// One run as one JSON document: header, every event, metrics (docs/export.md).
    Json {
        /// The run file.
        run: PathBuf,
        /// Write here instead of standard output.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// A training set for world models: one example per real tool call of the runs, the `llm`
    /// world model's input for it and the real result as the reply, with a datasheet.
    Transitions {
        /// Run files or folders (searched recursively for *.jsonl).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// The folder to write train.jsonl (test.jsonl) and datasheet.md into.
        #[arg(long)]
        out: PathBuf,
        /// How each example is written.
        #[arg(long, value_enum, default_value_t)]
        format: transitions::Format,
        /// Share of tasks held out as test.jsonl (by task: never a task on both sides).
        #[arg(long, default_value_t = 0.0)]
        split: f64,
    },
}

/// Runs `cosmos export`.
pub fn run(args: ExportArgs) -> Result<ExitCode> {
    match args.what {
        Export::Markdown { run, out } => account_to(&run, out, account::markdown),
        Export::Json { run, out } => account_to(&run, out, account::json),
        Export::Transitions {
            runs,
            out,
            format,
            split,
        } => {
            transitions::check_out(&out)?;
            let spec = transitions::Spec {
                paths: runs,
                out: out.clone(),
                format,
                split,
            };
            let written = transitions::export(&spec, &transitions::redactor())?;
            for why in &written.skipped {
                eprintln!("cosmos: skipped {why}");
            }
            println!(
                "{} examples (train {}, test {}) from {} real calls into {}; see its datasheet.md",
                written.train + written.test,
                written.train,
                written.test,
                written.calls,
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Opens `path` and writes its account with `write` to `out` (standard output by default).
fn account_to(
    path: &std::path::Path,
    out: Option<PathBuf>,
    write: fn(&Run, &mut dyn Write) -> Result<()>,
) -> Result<ExitCode> {
    let run = Run::open(path).with_context(|| format!("opening {}", path.display()))?;
    match out {
        Some(file) => {
            let mut w = std::io::BufWriter::new(
                std::fs::File::create(&file)
                    .with_context(|| format!("creating {}", file.display()))?,
            );
            write(&run, &mut w)?;
            w.flush()?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            write(&run, &mut w)?;
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
