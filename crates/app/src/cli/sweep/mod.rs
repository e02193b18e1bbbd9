//! `cosmos sweep SPEC.toml`: the paper's experiment as one command. A spec names tasks,
//! configurations (an agent, a world model and `cosmos run`'s flags with underscores) and
//! repeats; each (task, configuration, repeat) is a cell with an id derived from its content,
//! and its run file is named after it. Rerunning the same spec into the same folder starts only
//! the cells without a finished run (a torn or interrupted one is set aside, not overwritten);
//! a cell whose servers would not start is retried with backoff; an agent's failure is a result.
//! `--shard I/N` takes a deterministic share, balanced by expected cost.
//!
//! `spec.rs` makes the cells, `shard.rs` picks this process's share, `disk.rs` reads and claims
//! a cell's files, `runner.rs` runs cells, `matrix.rs` shows them live, `emit.rs` writes cluster
//! jobs.
//!
//! ```toml
//! mcp_config = "mcp.json"
//! config = "cosmos.toml"      # optional: endpoints per role, [world_models.NAME]
//! repeats = 2
//! [[tasks]]
//! file = "tasks.json"
//! ids = ["time_mcp_000", "unit_converter_000"]   # optional: every task of the file
//! [[configs]]
//! name = "react"
//! agent = "react"
//! max_steps = 2
//! ```
//!
//! # Cells, resuming, the matrix, shards
//!
//! - **Cells.** Each (task, configuration, repeat) has an id derived from its content (the task
//!   file as named in the spec, the task id, the configuration's settings, the repeat); its run is
//!   `<out>/<id>_<task>_<config>_r<repeat>.jsonl` (`--out`, default `runs/<spec name>` beside the
//!   spec).
//! - **Tasks.** A task set with `ids` takes those tasks; without, every task of the file whose
//!   servers the MCP config has (the others are listed as left out, with the servers they need).
//! - **Resumable.** A rerun starts only cells without a finished run. A torn or interrupted run is
//!   set aside (renamed `….jsonl.set-aside-<time>`, kept, no longer read as a run) and run again. A
//!   run that failed for the infrastructure — none of its servers started, or its model endpoint
//!   never answered (every LLM call of the run failed) — is retried with backoff (2 s, 4 s, three
//!   tries), then set aside so the next run of the sweep tries the cell again; an agent's failure
//!   (a completed or failed run in which the model answered) is a result and is not retried.
//! - **Running.** A process running a cell holds an OS lock on `….jsonl.lock` beside its run
//!   (removed when the cell ends), so
//!   `--status` says `running (pid N since T)` and another process (a second shard launched by
//!   mistake) skips the cell. The lock goes with the process however it ends, `kill -9` included:
//!   a killed sweep leaves its cell `incomplete`, and the next run sets it aside and runs it again.
//! - **The matrix.** Without `--no-tui`, one row per task (per task and repeat when the spec
//!   repeats), one column per configuration; each cell shows its state and outcome as it runs:
//!   `✓ 4 calls fid 0.86` (completed: real calls, mean fidelity), `✗ failed 3 calls ✗2` (the run
//!   failed; two calls failed), `▶ 2 calls` (running), `queued`, `↻ retrying`, `! could not run`,
//!   `⋯ another process` (claimed by another sweep process, e.g. another shard), `·` (not run). ←/→ and ↑/↓ move, `f`/`F` go to the next/previous failed cell, Enter opens
//!   the cell's run — a running one followed live, Esc comes back to the matrix — `x` stops the
//!   sweep (running cells end `interrupted`, and are run again next time), `q` asks first while
//!   cells run: stop them, or leave the view and let the sweep go on printing progress lines.
//! - **Progress.** With `--no-tui`, one line per cell as it ends — its status, file, time and how
//!   much of it its servers took to start — with the time left at the pace so far.
//! - **Shards.** `--shard I/N` takes a deterministic share of the cells, balanced by expected cost
//!   (a SPIRAL cell weighs more than a ReAct one by its iterations), the same on every shard so
//!   shards never overlap; they can write into one shared folder. `--shard auto` reads a Slurm
//!   array's `SLURM_ARRAY_TASK_ID` and `SLURM_ARRAY_TASK_COUNT`, or a Kubernetes Indexed Job's
//!   `JOB_COMPLETION_INDEX` with `--shards N`.
//! - **Traces.** `--otel-endpoint URL` (with `--otel-header`, `--otel-content`) sends every
//!   cell's run to an OpenTelemetry receiver as it runs, one trace per run, as `cosmos run` does
//!   (docs/export.md); a receiver that is down is an `error` event in each run, never a failed
//!   cell. `--emit` does not copy these options into the job (it says so on stderr): add them to
//!   the job's command, and give a header that holds a key through `OTEL_EXPORTER_OTLP_HEADERS`
//!   rather than the command.

use crate::cli::output::{errln, out, outln};
mod args;
mod disk;
mod emit;
mod matrix;
mod runner;
mod shard;
mod spec;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use self::runner::{Reporter, Workers, run_cells};
use self::spec::Cell;
use cosmos_engine::agent;
use cosmos_trajectory::sanitize::inert;

pub use args::SweepArgs;
pub use matrix::finished_cell;

/// Runs (or lists, or emits) a sweep.
pub fn run(args: SweepArgs) -> Result<ExitCode> {
    let (mut all, skipped) = spec::cells(&args.spec)?;
    // The judge's endpoint and settings are checked before anything runs.
    let judge = match spec::judging(&args.spec)? {
        Some(config) if args.emit.is_none() && !args.status => Some(
            crate::cli::judge::Judge::from_config(config.as_deref())
                .context("the sweep's judge (judge = true)")?,
        ),
        _ => None,
    };
    // Checked once here rather than in every cell.
    if args.otel.target()?.is_some() {
        for cell in &mut all {
            cell.add_args(args.otel.to_args());
        }
    }
    if !skipped.is_empty() && args.emit.is_none() {
        errln!(
            "cosmos: {} task(s) left out, their servers not configured: {}",
            skipped.len(),
            inert(&skipped.join("; "))
        );
    }
    if let Some(engine) = &args.emit {
        if args.otel.otel_endpoint.is_some() {
            // Said rather than copied: a header may hold a key, and a job file is kept.
            errln!(
                "cosmos: warning: the --otel-* options are not copied into the job; add them to \
                 its command, with any key in OTEL_EXPORTER_OTLP_HEADERS"
            );
        }
        out!("{}", emit::emit(engine, &args)?);
        return Ok(ExitCode::SUCCESS);
    }
    let total = all.len();
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .spec
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().to_string());
        args.spec
            .parent()
            .unwrap_or(Path::new("."))
            .join("runs")
            .join(stem)
    });
    if args.resume
        && all
            .iter()
            .all(|c| disk::state(&out, c) == disk::State::Missing)
    {
        bail!(
            "--resume: {} holds no cell of {}: nothing to resume (without --resume the sweep starts)",
            out.display(),
            args.spec.display()
        );
    }
    let mine = match shard::which_shard(&args)? {
        Some((i, n)) => shard::shard(all, i, n),
        None => all,
    };
    if args.status {
        print_status(&out, &mine, total);
        return Ok(ExitCode::SUCCESS);
    }
    if !args.no_tui {
        // What the view needs is checked before anything starts or is written.
        crate::tui::terminal::require_terminal()?;
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let states: Vec<disk::State> = mine.iter().map(|c| disk::state(&out, c)).collect();
    let todo: Vec<(usize, Cell)> = mine
        .iter()
        .zip(&states)
        .enumerate()
        .filter(|(_, (_, s))| !s.is_done())
        .map(|(i, (c, _))| (i, c.clone()))
        .collect();
    let jobs = args.jobs.max(1);
    let workers = Workers {
        jobs,
        shared: spec::shared_servers(&args.spec)?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (could_not_run, stopped) = if args.no_tui {
        errln!(
            "cosmos: sweep {}: {} cell(s) here ({} done already, {} to run), {jobs} at once, into {}",
            args.spec.display(),
            mine.len(),
            mine.len() - todo.len(),
            todo.len(),
            out.display()
        );
        runtime.block_on(async {
            let signals = agent::stop_on_signals();
            let could_not_run =
                run_cells(&out, todo, &workers, Reporter::lines(), signals.rx.clone()).await;
            let stopped = *signals.rx.borrow();
            (could_not_run, stopped)
        })
    } else {
        let title = args.spec.display().to_string();
        matrix::run_with_matrix(&runtime, &out, title, &mine, states, todo, workers)?
    };
    // Every finished cell not judged yet is judged, this time or the next (a stop leaves the
    // rest to the next run of the sweep).
    let not_judged = match &judge {
        Some(judge) if !stopped => runtime.block_on(async {
            let signals = agent::stop_on_signals();
            let finished: Vec<PathBuf> = mine
                .iter()
                .filter(|c| disk::state(&out, c).is_done())
                .map(|c| disk::run_path(&out, c))
                .collect();
            judge.files(&finished, Some(&signals.rx)).await
        }),
        _ => 0,
    };
    // A shard is done only when every one of its cells has a finished run: a scheduler (an
    // Indexed Job, a Slurm array) that sees 0 will never run it again.
    let left = mine
        .iter()
        .filter(|c| !disk::state(&out, c).is_done())
        .count();
    Ok(sweep_exit(could_not_run + not_judged, left, stopped))
}

/// The exit code of a sweep: 0 only when every cell of this shard has its finished run; 130
/// when a stop (SIGINT, SIGTERM, SIGHUP, the stop key) left cells to do; 1 for cells that
/// could not run or are left otherwise.
fn sweep_exit(could_not_run: usize, left: usize, stopped: bool) -> ExitCode {
    if could_not_run > 0 {
        errln!(
            "cosmos: {could_not_run} cell(s) could not run (see above); rerun the sweep to try them again"
        );
    }
    if left > 0 {
        errln!(
            "cosmos: {left} cell(s) of this shard have no finished run{}; rerun the same command to resume",
            if stopped { " (stopped)" } else { "" }
        );
    }
    match (left, could_not_run, stopped) {
        (0, 0, _) => ExitCode::SUCCESS,
        (_, _, true) if left > 0 => ExitCode::from(130),
        _ => ExitCode::from(1),
    }
}

/// `--status`: one line per cell, then the counts.
fn print_status(out: &Path, cells: &[Cell], total: usize) {
    // Counts in the order a cell goes through: done or failed, running, incomplete, missing.
    let mut counts = BTreeMap::new();
    let width = |f: fn(&Cell) -> usize| cells.iter().map(f).max().unwrap_or(0);
    let (task_w, config_w) = (width(|c| c.task_id.len()), width(|c| c.config.len()));
    for cell in cells {
        let state = disk::state(out, cell);
        let label = state.label();
        let rank = match state {
            disk::State::Done(..) => 0,
            disk::State::Running(_) => 1,
            disk::State::Incomplete(_) => 2,
            disk::State::Missing => 3,
        };
        let word = label.split(' ').next().unwrap_or("").to_string();
        *counts.entry((rank, word)).or_insert(0) += 1;
        outln!(
            "{}",
            inert(&format!(
                "{}  {:<task_w$}  {:<config_w$}  r{}  {label}",
                cell.id, cell.task_id, cell.config, cell.repeat
            ))
        );
    }
    outln!(
        "{} cell(s) here of {total}: {}",
        cells.len(),
        counts
            .iter()
            .map(|((_, k), v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}
