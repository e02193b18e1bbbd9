//! `cosmos wm-eval`: world models side by side on the same recorded calls (see `cosmos_engine::wm_eval`).

use crate::cli::output::{errln, out};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;

use super::report::ReportFormat;
use cosmos_engine::metrics::leaderboard::{Format, render};
use cosmos_engine::wm_eval::{EvalSpec, evaluate, recorded_calls};
use cosmos_engine::world_model::BuiltInOptions;
use cosmos_trajectory::sanitize::{inert, inert_json};

/// `cosmos wm-eval` options.
#[derive(Debug, Args)]
pub struct WmEvalArgs {
    /// Recorded runs (files or folders): their real tool calls are what is simulated.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// A world model to evaluate (repeatable): llm, memory, traces, command, or a
    /// [world_models.NAME] of --config. `memory` and `traces` never see the run a call comes
    /// from.
    #[arg(long = "world-model", value_name = "NAME", required = true)]
    pub world_models: Vec<String>,
    /// cosmos.toml: endpoints per role and [world_models.NAME] tables.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Runs for the built-in `memory` and `traces` (default: the runs evaluated, leave one run
    /// out) and examples for the built-in `llm`.
    #[arg(long)]
    pub memory_from: Vec<PathBuf>,
    /// Command line of the built-in `command` world model.
    #[arg(long)]
    pub world_model_command: Option<String>,
    /// Folder for the wm-eval trajectory.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Simulations at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Time one `command` simulation may take, seconds.
    #[arg(long, default_value_t = 60)]
    pub call_timeout_s: u64,
    /// Decision fidelity: also ask the planner role (of --config) for its next action after each
    /// call, given the real result and given each simulation, and count how often they agree.
    #[arg(long)]
    pub decision: bool,
    /// Calibration: the fidelity at or above which a prediction counts as good (for Brier,
    /// AUROC); recorded in the file's header.
    #[arg(long, default_value_t = cosmos_engine::metrics::calibration::GOOD_FIDELITY)]
    pub good_fidelity: f64,
    /// Output format; `json` is documented in docs/report-format.md.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
    /// Routing with a guarantee: per tool, the lowest confidence threshold at which the share of
    /// poor predictions (fidelity under --good-fidelity) among those trusted is at most this,
    /// with probability at least 1 - --delta (docs/world-models.md). Needs --routing-out and
    /// one --world-model.
    #[arg(long, requires = "routing_out")]
    pub target_error: Option<f64>,
    /// With --target-error: how often the bound may fail.
    #[arg(long, default_value_t = 0.1)]
    pub delta: f64,
    /// With --target-error: the routing file (TOML) to write: a threshold per tool, and each
    /// tool's confidence recalibrated (Platt, its ECE measured out of fold).
    #[arg(long, requires = "target_error")]
    pub routing_out: Option<PathBuf>,
}

/// Runs the evaluation and prints the leaderboard.
pub fn run(args: WmEvalArgs) -> Result<ExitCode> {
    if let Some(target) = args.target_error {
        let open_unit = |v: f64| v > 0.0 && v < 1.0;
        if !(open_unit(target) && open_unit(args.delta)) {
            anyhow::bail!(
                "--target-error {target} and --delta {}: each must be between 0 and 1",
                args.delta
            );
        }
        if args.world_models.len() != 1 {
            anyhow::bail!(
                "--target-error chooses thresholds for one world model: give one --world-model"
            );
        }
    }
    if args.concurrency == 0 || args.concurrency > 256 {
        anyhow::bail!("--concurrency {}: must be from 1 to 256", args.concurrency);
    }
    if !(0.0..=1.0).contains(&args.good_fidelity) {
        anyhow::bail!(
            "--good-fidelity {}: must be from 0 to 1",
            args.good_fidelity
        );
    }
    // Other programs' trajectories are evaluated on as the runs made of them.
    let opened = crate::cli::import::open_runs(&args.runs)?;
    let memory_opened = crate::cli::import::open_runs(&args.memory_from)?;
    // What the person gave is what the files record; the runs converted from them live in a
    // private folder removed at exit.
    let given = args.runs.clone();
    let args = WmEvalArgs {
        runs: opened.paths.clone(),
        memory_from: memory_opened.paths.clone(),
        ..args
    };
    let (calls, skipped) = recorded_calls(&args.runs)?;
    for s in &skipped {
        errln!("cosmos: skipped {}", inert(s));
    }
    let memory_from = if args.memory_from.is_empty() {
        args.runs.clone()
    } else {
        args.memory_from.clone()
    };
    let spec = EvalSpec {
        world_models: args.world_models.clone(),
        config: args.config.clone(),
        options: BuiltInOptions {
            memory_from,
            command: args.world_model_command.clone(),
            command_timeout: Duration::from_secs(args.call_timeout_s),
            cached: false,
            converted: Default::default(),
        },
        concurrency: args.concurrency,
        out_dir: args.out.clone(),
        runs: given.clone(),
        decision: args.decision,
        good_fidelity: args.good_fidelity,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    errln!(
        "cosmos: {} world model(s) simulating {} recorded call(s), {} at once",
        spec.world_models.len(),
        calls.len(),
        spec.concurrency
    );
    // Ctrl-C, SIGTERM or SIGHUP stop the simulations in flight; what is done stays written.
    let evaluation = runtime.block_on(async {
        let signals = cosmos_engine::agent::stop_on_signals();
        evaluate(&spec, &calls, signals.rx.clone()).await
    })?;
    if evaluation.reused > 0 {
        errln!(
            "cosmos: {} simulation(s) taken from earlier wm-eval files in {}",
            evaluation.reused,
            spec.out_dir.display()
        );
    }
    let format = match args.format {
        ReportFormat::Table => Format::Table,
        ReportFormat::Markdown => Format::Markdown,
        ReportFormat::Csv => Format::Csv,
        ReportFormat::Json => Format::Json,
    };
    let text = render(&evaluation.board, format);
    if format == Format::Json {
        out!("{}", inert_json(&text));
    } else {
        out!("{}", inert(&text));
    }
    errln!(
        "cosmos: simulations written to {}",
        evaluation.path.display()
    );
    if evaluation.interrupted {
        errln!(
            "cosmos: stopped before every simulation was done; the leaderboard holds the calls \
             every world model got to. Run the same command again to finish: what is written is \
             not simulated again."
        );
        return Ok(ExitCode::from(130));
    }
    // A world model that predicted nothing is no result to compare: said, and the exit says it.
    for (name, calls, why) in &evaluation.silent {
        errln!(
            "cosmos: world model \"{}\" made no prediction of any of its {calls} call(s); the first failure: {}",
            inert(name),
            inert(why)
        );
    }
    if !evaluation.silent.is_empty() {
        return Ok(ExitCode::FAILURE);
    }
    if let (Some(target), Some(file)) = (args.target_error, &args.routing_out) {
        write_routing(&evaluation.path, &args, target, file, &given)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the routing file of `--target-error` over the simulations in `evaluated`, and says
/// what each tool's recalibration and the thresholds came to.
fn write_routing(
    evaluated: &std::path::Path,
    args: &WmEvalArgs,
    target: f64,
    file: &std::path::Path,
    given: &[PathBuf],
) -> Result<()> {
    let routing = cosmos_engine::wm_eval::routing(
        evaluated,
        &args.world_models[0],
        target,
        args.delta,
        given,
    )?;
    let mut staged = cosmos_trajectory::out_file::Staged::create(file)?;
    std::io::Write::write_all(staged.writer(), routing.text.as_bytes())?;
    staged.finish()?;
    for (tool, fitted) in &routing.recalibrated {
        match fitted {
            Ok(f) => errln!(
                "cosmos: {}: confidence recalibrated, ECE {:.3} → {:.3} on calls the curve was not fitted on",
                inert(tool),
                f.ece_raw,
                f.ece_cross_fitted
            ),
            Err(why) => errln!("cosmos: {}: not recalibrated ({})", inert(tool), inert(why)),
        }
    }
    errln!(
        "cosmos: a threshold per tool (target error {target}, delta {}) written to {}; they trust {} of the {} predictions with a confidence ({})",
        args.delta,
        inert(&file.display().to_string()),
        routing.trusted,
        routing.judged,
        cosmos_engine::metrics::figure::percent(
            routing.trusted as f64 / routing.judged.max(1) as f64,
            1
        )
    );
    Ok(())
}
