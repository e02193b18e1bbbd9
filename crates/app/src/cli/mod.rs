//! The command line: one subcommand per file.
//!
//! One file per subcommand (`run.rs`, `fork.rs`, `login.rs` (login and logout), `proxy.rs`, `recheck.rs`, `servers.rs`, `judge.rs`, `validate.rs`, `report.rs`,
//! `wm_eval.rs`, `export.rs`, `sweep/`; `replay` is `tui::explore`). `run.rs` also holds
//! `WorldModelArgs`, the world-model flags `run` and `proxy` share, and `RunOptions`, everything `run` and `fork` share (`run_spec` runs either). `run.rs` without `--no-tui` runs the agent on a tokio task and the
//! explorer on the main thread, joined by two channels: events to the UI, the stop key to the agent.
//! A forwarding thread switches the events to progress lines when the person leaves the view with
//! the run still going. `sweep/`: `spec.rs` turns a spec into cells whose `cosmos run` flags are
//! parsed by the same `RunArgs`; `shard.rs` picks this process's share; `disk.rs` is a cell's
//! files (its run, its claim `….jsonl.lock` held with an OS file lock while a process runs it, so
//! `--status` can say *running* and a killed process leaves no stale claim, and set-aside runs);
//! `runner.rs` runs cells through `agent::session` (claim, set aside, retry) in `--jobs` workers,
//! each pulling the next cell and keeping its `mcp::shared` servers, and tells a
//! `Reporter` (lines, or news to the matrix view); `matrix.rs` sets up the matrix view over the
//! runner; `emit.rs` writes the cluster jobs, whose image is the root `Containerfile` (the Slurm
//! array is run on a real Slurm by `tests/sweeps/slurm.rs`; `--resume` finishes what shards left). A shard
//! exits 0 only when every cell of it has a finished run (130 when a stop left cells): the
//! scheduler's contract. `live.rs` is the one harness for the explorer in
//! front of running work (a run, a sweep): stop key and signals into one stop signal, a signal
//! closes the view, a panic stops the work, leaving it running switches to progress lines.
//! `mod.rs` has the top-level clap definitions (`Cli`, and `Command` with the flags of the small
//! commands); a big command's flags and enums live in its file (`RunArgs`, `AgentArg` and
//! `PlanRuleArg` in `run.rs`, `ReportFormat` in `report.rs`, `SweepArgs` in `sweep/args.rs`) and
//! convert into the domain types (`report --group-by` is the engine's `GroupBy` itself). Every piece of untrusted text a command prints
//! passes through `sanitize::inert`. `logging.rs`
//! sends tracing output to a file (`$COSMOS_LOG_FILE` or `~/.local/state/mcp-cosmos/cosmos.log`),
//! never to the terminal.

mod export;
mod fork;
mod import;
mod judge;
mod live;
mod logging;
mod login;
pub(crate) mod output;
mod proxy;
mod recheck;
mod report;
mod run;
mod servers;
mod sweep;
mod validate;
mod wm_eval;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

pub use report::ReportFormat;
pub use sweep::finished_cell;

/// mcp-cosmos: run, record, replay and compare world-model-augmented MCP agents.
#[derive(Debug, Parser)]
#[command(
    name = "cosmos",
    version,
    about,
    long_about = None,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do; without a command, the explorer opens (as `cosmos replay`).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Runs to explore without a command: `cosmos runs/` is `cosmos replay runs/`.
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Explore runs: a folder opens the run browser, a file opens the run view (the default).
    Replay {
        /// A folder of runs or one run file.
        #[arg(default_value = "sample_runs")]
        path: PathBuf,
        /// cosmos.toml, for probing a node with a named world model (`p` on a tree node).
        #[arg(long)]
        config: Option<PathBuf>,
        /// The MCP servers, for making a node's call for real (`P`, after a question).
        #[arg(long)]
        mcp_config: Option<PathBuf>,
    },
    /// Run a task with an agent against real MCP servers, recording a trajectory.
    Run(Box<run::RunArgs>),
    /// Fork a run at a step: the steps before it are replayed from the recording, and from
    /// there the agent (any run option may differ) decides afresh; calls are real, or answered
    /// from the recording (--tools recorded) with a miss going where --on-miss says.
    Fork(Box<fork::ForkArgs>),
    /// Serve the servers of an MCP config to any MCP client (stdio or streamable HTTP),
    /// recording each session as a run; a world model can shadow the real calls or answer
    /// instead of the servers.
    Proxy(Box<proxy::ProxyArgs>),
    /// Make runs' recorded real calls again against today's servers and report how each has
    /// drifted (same, changed, now fails, server gone); appends the findings to each run. Only
    /// tools annotated read-only are called unless --all.
    Recheck(Box<recheck::RecheckArgs>),
    /// Log into a remote server (OAuth: the browser opened with $BROWSER, or the address
    /// printed; the tokens kept owner-only in ${COSMOS_CACHE:-~/.cache/mcp-cosmos}/oauth).
    Login(login::LoginArgs),
    /// Forget a remote server's stored login.
    Logout(login::LoginArgs),
    /// Start the configured MCP servers and list their tools.
    Servers {
        /// MCP servers, in the usual {"mcpServers": {...}} form.
        #[arg(long)]
        mcp_config: PathBuf,
        /// Show each tool's input schema.
        #[arg(short, long)]
        verbose: bool,
        /// Time a server may take to start and list its tools, seconds.
        #[arg(long, default_value_t = 60)]
        startup_timeout_s: u64,
    },
    /// Score finished runs with the MCP-Bench rubric (the judge role); appends to each file.
    Judge {
        /// Run files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Endpoints per role (the `judge` role is used).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Judge runs that were judged already (adds a newer judgement; the last one counts).
        #[arg(long)]
        force: bool,
        /// The judge's model and trials.
        #[command(flatten)]
        settings: judge::JudgeArgs,
    },
    /// Check trajectory files; print each problem as FILE:LINE: reason.
    ///
    /// Exit code 1 when any file has an error (a corrupt line, a bad header, a newer
    /// format); warnings (a torn last line, a run that never finished) do not fail.
    Validate {
        /// Files or folders (searched recursively for *.jsonl).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print only errors, not warnings.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Evaluate world models on the same recorded calls: each simulates every real call of the
    /// runs in the context it was made in; prints a leaderboard and writes the simulations.
    WmEval(Box<wm_eval::WmEvalArgs>),
    /// Run a matrix of tasks × configurations × repeats (the paper's experiment), resumably,
    /// on one machine or as a shard of a cluster job.
    Sweep(Box<sweep::SweepArgs>),
    /// Export runs: a readable account (markdown, json), an ATIF trajectory (atif),
    /// OpenTelemetry traces (otel), or a transition dataset for world models (transitions).
    Export(export::ExportArgs),
    /// Make cosmos runs of other programs' trajectories (ATIF, Inspect AI logs, OTLP JSON):
    /// one run per session, sample or trace, its path printed. Every command that reads runs also opens such
    /// files directly (docs/import.md).
    Import(import::ImportArgs),
    /// Print the paper's tables for groups of runs: one row per configuration.
    Report {
        /// Files or folders (searched recursively for *.jsonl).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// What one row stands for.
        #[arg(long, value_enum, default_value_t)]
        group_by: cosmos_engine::metrics::group::GroupBy,
        /// Output format; `json` is a stable shape for scripts (docs/report-format.md).
        #[arg(long, value_enum, default_value_t)]
        format: ReportFormat,
        /// Compare every group with this one (its key, or a part naming one group) on the tasks
        /// both ran: mean differences with paired 95% intervals, per metric.
        #[arg(long, value_name = "GROUP")]
        baseline: Option<String>,
        /// With --baseline: also how many tasks each comparison needs to detect its observed
        /// difference with 80% power (paired t-test at 5%), from the spread of its differences.
        #[arg(long, requires = "baseline")]
        power: bool,
        /// With --format json: also every run's own metrics (`per_run`), as every view shows them.
        #[arg(long)]
        per_run: bool,
    },
}

/// What the explorer opens for `path`: the path itself; for a foreign file the one run made
/// of it, or the folder of the runs made of a log of many samples; for a folder holding
/// foreign files, the folder and the runs made of them, listed together.
fn explored(path: &std::path::Path, opened: &cosmos_engine::import::Opened) -> Vec<PathBuf> {
    match (opened.paths.as_slice(), opened.converted_folder()) {
        ([_, _, ..], Some(folder)) if !path.is_dir() => vec![folder.join("given")],
        (paths, _) => paths.to_vec(),
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    logging::init();
    match cli.command.unwrap_or(Command::Replay {
        path: cli.path.unwrap_or_else(|| PathBuf::from("sample_runs")),
        config: None,
        mcp_config: None,
    }) {
        Command::Replay {
            path,
            config,
            mcp_config,
        } => {
            // Another program's trajectory opens as the runs made of it (kept while exploring).
            let opened = import::open_runs(std::slice::from_ref(&path))?;
            crate::tui::explore(
                &explored(&path, &opened),
                cosmos_engine::probe::ProbeSetup { config, mcp_config },
            )
            .map(|()| ExitCode::SUCCESS)
        }
        Command::Run(args) => run::run(*args),
        Command::Proxy(args) => proxy::run(*args),
        Command::Fork(args) => fork::run(*args),
        Command::Login(args) => login::login(args),
        Command::Logout(args) => login::logout(args),
        Command::Recheck(args) => recheck::run(*args),
        Command::Servers {
            mcp_config,
            verbose,
            startup_timeout_s,
        } => servers::run(&mcp_config, verbose, startup_timeout_s),
        Command::Judge {
            paths,
            config,
            force,
            settings,
        } => judge::run(&paths, config, force, &settings),
        Command::Validate { paths, quiet } => validate::run(&paths, quiet),
        Command::WmEval(args) => wm_eval::run(*args),
        Command::Sweep(args) => sweep::run(*args),
        Command::Export(args) => export::run(args),
        Command::Import(args) => import::run(args),
        Command::Report {
            paths,
            group_by,
            format,
            baseline,
            power,
            per_run,
        } => report::run(
            &import::open_runs(&paths)?.paths,
            group_by,
            format,
            report::Options {
                baseline: baseline.as_deref(),
                power,
                per_run,
            },
        ),
    }
}
