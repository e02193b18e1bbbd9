//! `cosmos export`: markdown and json accounts of a run, OpenTelemetry traces, transition
//! datasets. Everything printed from a run passes through the one sanitiser.

use crate::cli::output::{errln, outln};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use cosmos_export::{account, atif_writer, otel, redactor, transitions};
use cosmos_trajectory::out_file::{self, Staged};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::{InertWriter, inert};

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
    /// One run as an ATIF v1.7 trajectory (Harbor's Agent Trajectory Interchange Format, read by
    /// Docent and Arize Phoenix); what only cosmos has under `extra.cosmos` (docs/import.md).
    Atif {
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
    /// Runs as OpenTelemetry traces over OTLP/HTTP (Phoenix, Langfuse, Jaeger, a collector):
    /// one trace per run, GenAI spans (`invoke_agent`, `chat`, `execute_tool`), simulated calls
    /// marked and linked to their real twins (docs/export.md).
    Otel {
        /// Run files or folders (searched recursively for *.jsonl).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// The receiver: a base URL (`http://localhost:6006`; `/v1/traces` is added) or the
        /// full traces URL.
        #[arg(long, required_unless_present = "out", conflicts_with = "out")]
        endpoint: Option<String>,
        /// Write OTLP JSON to this file instead (a line per run, as a collector's file
        /// exporter writes; `cosmos import` reads it back).
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// An HTTP header for the receiver, `NAME=VALUE` (repeatable). The command line is
        /// visible to every user of the machine: give a key through `OTEL_EXPORTER_OTLP_HEADERS`.
        #[arg(long = "header", value_name = "NAME=VALUE")]
        headers: Vec<String>,
        /// Also send prompts, arguments, results and answers (redacted); off by default, as
        /// the conventions make content opt-in.
        #[arg(long)]
        content: bool,
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
        Export::Markdown { run, out } => account_to(&run, out, account::markdown, false),
        Export::Json { run, out } => account_to(&run, out, account::json, true),
        Export::Atif { run, out } => account_to(&run, out, atif_writer::write, true),
        Export::Otel {
            runs,
            endpoint,
            out,
            headers,
            content,
        } => {
            let opened = crate::cli::import::open_runs(&runs)?;
            match (endpoint, out) {
                (Some(endpoint), _) => otel(
                    &opened.paths,
                    &otel::Target::new(&endpoint, &headers, content)?,
                ),
                (None, Some(out)) => otel_file(&opened.paths, &out, content),
                (None, None) => anyhow::bail!("give --endpoint URL or --out FILE"),
            }
        }
        Export::Transitions {
            runs,
            out,
            format,
            split,
        } => {
            transitions::check_out(&out)?;
            let opened = crate::cli::import::open_runs(&runs)?;
            let spec = transitions::Spec {
                paths: opened.paths.clone(),
                out: out.clone(),
                format,
                split,
            };
            let written = transitions::export(&spec, &redactor())?;
            for why in &written.skipped {
                errln!("cosmos: skipped {}", inert(why));
            }
            outln!(
                "{} examples (train {}, test {}) from {} real calls into {}; see its datasheet.md",
                written.train + written.test,
                written.train,
                written.test,
                written.calls,
                inert(&out.display().to_string())
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Sends each run to the receiver as one trace; any run not delivered whole makes the
/// command fail after the others were tried.
fn otel(runs: &[PathBuf], target: &otel::Target) -> Result<ExitCode> {
    let found = run_files(runs)?;
    let redactor = redactor();
    let (mut spans, mut failed_runs) = (0, 0);
    for path in &found.files {
        match otel::export_file(path, target, &redactor) {
            Ok((delivery, problems)) => {
                for p in problems {
                    errln!("cosmos: {} (skipped)", inert(&p.to_string()));
                }
                spans += delivery.spans;
                if let Some(problem) = delivery.problem(&target.shown()) {
                    failed_runs += 1;
                    errln!(
                        "cosmos: {}: {}",
                        inert(&path.display().to_string()),
                        inert(&problem)
                    );
                }
            }
            Err(e) => {
                failed_runs += 1;
                errln!(
                    "cosmos: {}: {}",
                    inert(&path.display().to_string()),
                    inert(&format!("{e:#}"))
                );
            }
        }
    }
    outln!(
        "{spans} span(s) of {} run(s) sent to {}{}",
        found.files.len(),
        target.shown(),
        if failed_runs > 0 {
            format!("; {failed_runs} run(s) not delivered whole")
        } else {
            String::new()
        }
    );
    Ok(if failed_runs > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The run files under `runs` (what was passed over said), at least one.
fn run_files(runs: &[PathBuf]) -> Result<cosmos_trajectory::reader::Found> {
    let found = cosmos_trajectory::reader::collect_files(runs)?;
    for why in &found.skipped {
        errln!("cosmos: skipped {}", inert(why));
    }
    if found.files.is_empty() {
        anyhow::bail!("no *.jsonl run files under the paths given");
    }
    Ok(found)
}

/// Writes each run as one line of OTLP JSON into `out` (whole or not at all).
fn otel_file(runs: &[PathBuf], out: &std::path::Path, content: bool) -> Result<ExitCode> {
    let found = run_files(runs)?;
    let redactor = redactor();
    let mut staged = Staged::create(out)?;
    let mut spans = 0;
    for path in &found.files {
        let (n, problems) = otel::write_otlp_json(path, content, &redactor, staged.writer())?;
        for p in problems {
            errln!("cosmos: {} (skipped)", inert(&p));
        }
        spans += n;
    }
    staged.finish()?;
    outln!(
        "{spans} span(s) of {} run(s) written to {}",
        found.files.len(),
        inert(&out.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

/// Opens `path` and writes its account with `write` to `out` (standard output by default),
/// redacted and made inert on the way: a run's text may hold a key pasted into it, or escape
/// sequences, in a file as on a terminal.
fn account_to(
    path: &std::path::Path,
    out: Option<PathBuf>,
    write: fn(&Run, &mut dyn Write) -> Result<()>,
    json: bool,
) -> Result<ExitCode> {
    // Another program's trajectory is written as the one run made of it.
    let opened = crate::cli::import::open_runs(&[path.to_path_buf()])?;
    let path = match opened.paths.as_slice() {
        [one] => one.as_path(),
        many => anyhow::bail!(
            "{} holds {} sessions or samples: import it (`cosmos import`) and export one run",
            path.display(),
            many.len()
        ),
    };
    let run = Run::open(path).with_context(|| format!("opening {}", path.display()))?;
    // Said here too: the account lists them, and a reader of stdout may never look.
    for line in cosmos_export::account::skipped_lines(&run) {
        errln!("cosmos: skipped {}", inert(&line));
    }
    let inert_to = |w: &mut dyn Write| -> Result<()> {
        let inert = if json {
            InertWriter::json(w)
        } else {
            InertWriter::text(w)
        };
        // Keys the environment names out first, then escapes made inert.
        let mut w = cosmos_export::Redacting::new(inert, redactor());
        write(&run, &mut w)?;
        w.flush()?;
        Ok(())
    };
    match out {
        Some(file) => {
            let mut staged = Staged::create(&file)?;
            inert_to(staged.writer())?;
            staged.finish()?;
        }
        None => {
            // A closed stdout would take every byte silently: an export that wrote nothing
            // must not say it succeeded.
            if !out_file::stdout_is_open() {
                anyhow::bail!("standard output is closed: nothing written (name a file with -o)");
            }
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            let written = inert_to(&mut w).and_then(|()| Ok(w.flush()?));
            // A reader that stopped early (`| head`) is no error: printing ends quietly.
            if let Err(e) = written
                && !e.chain().any(|c| {
                    c.downcast_ref::<std::io::Error>()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
                })
            {
                return Err(e);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
