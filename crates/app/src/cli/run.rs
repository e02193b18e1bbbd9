//! `cosmos run`: one task, one agent, real servers, recorded. With `--no-tui` it prints a
//! line per step; otherwise the explorer shows the run live.

use crate::cli::output::{errln, outln};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use cosmos_export::otel;
use tokio::sync::watch;

use cosmos_engine::agent::Budget;
use cosmos_engine::agent::{self, Outcome, RunSpec, TaskSource};
use cosmos_engine::agent::{PlanRule, Settings, Settled};
use cosmos_engine::config::Config;
use cosmos_engine::mcp::Timeouts;
use cosmos_engine::world_model::BuiltInOptions;
use cosmos_trajectory::describe::{Latencies, summary};
use cosmos_trajectory::event::{AgentKind, Event, EventBody, RunStatus};
use cosmos_trajectory::sanitize::inert;

/// Agents on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentArg {
    /// ReAct: real calls only, no world model.
    React,
    /// ReAct-Plan-Exec: plan against the world model, then execute.
    PlanExec,
    /// SPIRAL-Exec: Monte Carlo tree search over the world model, then execute the best plan.
    Spiral,
}

/// Plan rules on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanRuleArg {
    /// The terminal node with the best mean value (SPIRAL).
    BestMean,
    /// The terminal node visited most.
    MostVisited,
}

impl From<PlanRuleArg> for PlanRule {
    fn from(arg: PlanRuleArg) -> Self {
        match arg {
            PlanRuleArg::BestMean => PlanRule::BestMean,
            PlanRuleArg::MostVisited => PlanRule::MostVisited,
        }
    }
}

/// A number flag that must be 1 or more (0 steps, tokens or seconds would end every run at
/// once, or time every call out): clap refuses 0 naming the flag.
fn at_least_one<T: TryFrom<u64>>(text: &str) -> Result<T, String> {
    let n: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("expected a whole number, got \"{text}\""))?;
    if n == 0 {
        return Err("must be 1 or more".into());
    }
    T::try_from(n).map_err(|_| format!("{n} is too large"))
}

/// The world model a command uses (`run`, `proxy`), by name, and what the built-in ones are
/// made of.
#[derive(Debug, Clone, Args)]
pub struct WorldModelArgs {
    /// The world model: none; llm (an LLM acting as the server, the world_model role's
    /// endpoint); memory (recorded real calls recalled, --memory-from); traces (results
    /// predicted field by field by rules the recorded calls support, --memory-from); command
    /// (an external process, --world-model-command); or the NAME of a [world_models.NAME]
    /// table in --config.
    #[arg(long = "world-model", value_name = "NAME", default_value = "none")]
    pub name: String,
    /// Command line of a `command` world model (run with sh -c); see docs/world-models.md.
    #[arg(long)]
    pub world_model_command: Option<String>,
    /// Folders or files of recorded runs for the `memory` and `traces` world models (and
    /// examples for `llm`).
    #[arg(long)]
    pub memory_from: Vec<PathBuf>,
    /// Simulate the same call in the same context only once.
    #[arg(long)]
    pub cache_world_model: bool,
}

impl WorldModelArgs {
    /// What the built-in world models are made of (other programs' files among
    /// `--memory-from` converted to runs, as wm-eval reads them); a `command` simulation may
    /// take `command_timeout`.
    pub fn options(&self, command_timeout: Duration) -> anyhow::Result<BuiltInOptions> {
        let opened = crate::cli::import::open_runs(&self.memory_from)?;
        Ok(BuiltInOptions {
            memory_from: opened.paths.clone(),
            command: self.world_model_command.clone(),
            command_timeout,
            cached: self.cache_world_model,
            converted: cosmos_engine::world_model::KeepAlive::new(opened),
        })
    }
}

/// `cosmos run` options.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// MCP servers, in the usual {"mcpServers": {...}} form.
    #[arg(long)]
    pub mcp_config: PathBuf,
    /// Task file: the project's own format or MCP-Bench's runner format.
    #[arg(long)]
    pub task: PathBuf,
    /// Which task of the file (needed when it has several).
    #[arg(long)]
    pub task_id: Option<String>,
    /// Also connect this server of the MCP config (repeatable), as MCP-Bench adds distraction servers.
    #[arg(long)]
    pub extra_server: Vec<String>,
    /// The agent.
    #[arg(long, value_enum)]
    pub agent: AgentArg,
    /// Everything else about how the agent runs (`cosmos fork` takes the same options).
    #[command(flatten)]
    pub options: RunOptions,
}

/// How a run runs, besides its servers, task and agent: the world model, endpoints, budgets,
/// timeouts, SPIRAL's settings, where it is written and shown. `run` and `fork` share them.
#[derive(Debug, Args)]
pub struct RunOptions {
    /// The world model and what it is made of.
    #[command(flatten)]
    pub world_model: WorldModelArgs,
    /// Record each LLM call's messages and reply in the trajectory (large; secrets are still
    /// redacted). Per role: `record_messages = true` in cosmos.toml.
    #[arg(long)]
    pub record_messages: bool,
    /// A name for this run's configuration, recorded in its header; `report` groups runs by it
    /// (a sweep labels each run with its configuration's name).
    #[arg(long)]
    pub label: Option<String>,
    /// Endpoints per role (see cosmos.example.toml); defaults from OPENAI_BASE_URL / OPENAI_API_KEY.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Folder for the trajectory.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Print a line per step instead of opening the explorer.
    #[arg(long)]
    pub no_tui: bool,
    /// Where the run is sent as it runs, if anywhere.
    #[command(flatten)]
    pub otel: OtelArgs,
    /// Most planning steps.
    #[arg(long, default_value_t = 12, value_parser = at_least_one::<usize>)]
    pub max_steps: usize,
    /// Most tokens over all roles.
    #[arg(long, default_value_t = 400_000, value_parser = at_least_one::<u64>)]
    pub max_tokens: u64,
    /// Most wall time, seconds.
    #[arg(long, default_value_t = 3_600, value_parser = at_least_one::<u64>)]
    pub max_time_s: u64,
    /// Time a server may take to start and list its tools, seconds.
    #[arg(long, default_value_t = 60, value_parser = at_least_one::<u64>)]
    pub startup_timeout_s: u64,
    /// Time one tool call may take, seconds.
    #[arg(long, default_value_t = 60, value_parser = at_least_one::<u64>)]
    pub call_timeout_s: u64,
    /// How a server's request for input (elicitation) is answered: asked in the live explorer
    /// (the default with it), declined (the default with --no-tui), or accepted with the
    /// form's defaults. Every request and answer is recorded.
    #[arg(long, value_enum)]
    pub elicitation: Option<cosmos_engine::mcp::Elicitation>,
    /// SPIRAL: search iterations [default: 50, or [agent] iterations in cosmos.toml].
    #[arg(long, help_heading = "SPIRAL-Exec")]
    pub iterations: Option<usize>,
    /// SPIRAL: deepest node [default: 8].
    #[arg(long, help_heading = "SPIRAL-Exec")]
    pub max_depth: Option<u32>,
    /// SPIRAL: UCT exploration constant c [default: 1.0].
    #[arg(long, help_heading = "SPIRAL-Exec")]
    pub exploration: Option<f64>,
    /// SPIRAL: candidates the planner proposes per expansion, K [default: 3].
    #[arg(long, help_heading = "SPIRAL-Exec")]
    pub candidates: Option<usize>,
    /// SPIRAL: weight of the base reward, alpha·base + (1−alpha)·critic [default: 0.5; 1 skips the critic].
    #[arg(long, help_heading = "SPIRAL-Exec")]
    pub alpha: Option<f64>,
    /// SPIRAL: how the final plan is chosen [default: best-mean].
    #[arg(long, value_enum, help_heading = "SPIRAL-Exec")]
    pub plan_rule: Option<PlanRuleArg>,
    /// SPIRAL: simulations and critic calls of one expansion run at once (default K).
    #[arg(long, help_heading = "SPIRAL-Exec")]
    pub concurrency: Option<usize>,
    /// SPIRAL: execution-time revision — up to N times, a failed real call starts a new search
    /// from the real steps taken [default: 0 = off, as in the paper; or [agent] revisions].
    #[arg(long, value_name = "N", help_heading = "SPIRAL-Exec")]
    pub revisions: Option<usize>,

    /// SPIRAL: times an expansion with no usable candidate asks the planner again, told what
    /// went wrong [default: 2].
    #[arg(long, value_name = "N", help_heading = "SPIRAL-Exec")]
    pub retries: Option<usize>,

    /// SPIRAL: times a node whose children are all dead ends is expanded again, the planner
    /// shown them, instead of revisiting them; 0 is the paper's search [default: 1].
    #[arg(long, value_name = "N", help_heading = "SPIRAL-Exec")]
    pub widen: Option<u32>,

    /// SPIRAL: spend no iteration on settled paths (finished, or dead ends all the way down);
    /// the search ends once every path is settled. Off (the paper's): revisit them.
    #[arg(long, help_heading = "SPIRAL-Exec")]
    pub skip_settled: bool,

    /// SPIRAL and ReAct-Plan-Exec: during planning, a prediction less sure than X (or with no
    /// confidence) of a tool its server annotates read-only is replaced by the real call; of
    /// any other tool it makes the plan risky (never called while planning); SPIRAL imagines
    /// no path past where its confidences' product falls below X, and searches again from the
    /// real result [or [agent] go_real_below; default: trust every prediction].
    #[arg(long, value_name = "X", help_heading = "SPIRAL-Exec")]
    pub go_real_below: Option<f64>,

    /// SPIRAL and ReAct-Plan-Exec: route by a file of per-tool thresholds (`cosmos wm-eval
    /// --routing-out`) instead of one --go-real-below: each tool's predictions held to its own
    /// threshold, a tool the file does not trust (or does not name) never trusted.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "SPIRAL-Exec",
        conflicts_with = "go_real_below"
    )]
    pub routing: Option<PathBuf>,
}

impl RunOptions {
    /// Search settings: flags, else `[agent]` in cosmos.toml, else SPIRAL's defaults.
    fn search_settings(&self, config: &Config) -> Result<Settings> {
        let from_file = Settings::from_config(config)?;
        let k = self.candidates.unwrap_or(from_file.k);
        let settings = Settings {
            iterations: self.iterations.unwrap_or(from_file.iterations),
            max_depth: self.max_depth.unwrap_or(from_file.max_depth),
            c: self.exploration.unwrap_or(from_file.c),
            k,
            alpha: self.alpha.unwrap_or(from_file.alpha),
            plan_rule: self.plan_rule.map_or(from_file.plan_rule, PlanRule::from),
            concurrency: self
                .concurrency
                .or((from_file.concurrency != Settings::default().concurrency)
                    .then_some(from_file.concurrency))
                .unwrap_or(k),
            revisions: self.revisions.unwrap_or(from_file.revisions),
            retries: self.retries.unwrap_or(from_file.retries),
            widen: self.widen.unwrap_or(from_file.widen),
            settled: if self.skip_settled {
                Settled::Skip
            } else {
                from_file.settled
            },
            go_real_below: self.go_real_below.or(from_file.go_real_below),
        };
        settings
            .check()
            .context("SPIRAL settings (flags, or [agent] in cosmos.toml)")?;
        Ok(settings)
    }

    /// What to run with `agent`, `mcp_config` and `task` (a task file, or a recorded task), as
    /// the session takes it.
    pub fn spec(
        &self,
        agent: AgentKind,
        mcp_config: Option<PathBuf>,
        task: TaskSource,
    ) -> Result<RunSpec> {
        // Read once: the search settings and the session take their sections from it.
        let config = Config::load(self.config.as_deref())?;
        let mut search = self.search_settings(&config)?;
        if self.routing.is_some() {
            // The file's thresholds replace cosmos.toml's one number.
            search.go_real_below = None;
        }
        let routed_by = match (self.go_real_below, &self.routing) {
            (_, Some(_)) => Some("--routing"),
            (Some(_), None) => Some("--go-real-below"),
            (None, None) => None,
        };
        if let Some(flag) = routed_by
            && agent == AgentKind::React
        {
            anyhow::bail!(
                "{flag} routes a rehearsing agent's predictions: ReAct makes only real calls \
                 (use --agent plan-exec or spiral)"
            );
        }
        let routing = match &self.routing {
            Some(path) => Some(std::sync::Arc::new(
                cosmos_engine::metrics::routing_file::RoutingFile::load(path)?,
            )),
            None => None,
        };
        Ok(RunSpec {
            mcp_config,
            task,
            extra_servers: Vec::new(),
            agent,
            fork: None,
            world_model: self.world_model.name.clone(),
            world_model_options: self
                .world_model
                .options(Duration::from_secs(self.call_timeout_s))?,
            config,
            record_messages: self.record_messages,
            label: self.label.clone(),
            out_dir: self.out.clone(),
            file_name: None,
            budget: Budget {
                max_steps: self.max_steps,
                max_tokens: self.max_tokens,
                max_wall: Duration::from_secs(self.max_time_s),
            },
            timeouts: Timeouts {
                startup: Duration::from_secs(self.startup_timeout_s),
                call: Duration::from_secs(self.call_timeout_s),
                elicitation: self.elicitation.unwrap_or(if self.no_tui {
                    cosmos_engine::mcp::Elicitation::Decline
                } else {
                    cosmos_engine::mcp::Elicitation::Ask
                }),
            },
            search,
            routing,
            shared: None,
        })
    }
}

impl From<AgentArg> for AgentKind {
    fn from(arg: AgentArg) -> Self {
        match arg {
            AgentArg::React => AgentKind::React,
            AgentArg::PlanExec => AgentKind::PlanExec,
            AgentArg::Spiral => AgentKind::Spiral,
        }
    }
}

impl RunArgs {
    /// What to run, as the session takes it.
    pub fn spec(&self) -> Result<RunSpec> {
        let task = TaskSource::File {
            path: self.task.clone(),
            id: self.task_id.clone(),
        };
        let mut spec = self
            .options
            .spec(self.agent.into(), Some(self.mcp_config.clone()), task)?;
        spec.extra_servers = self.extra_server.clone();
        Ok(spec)
    }
}

/// Sending runs to an OpenTelemetry receiver as they run (`run` and `sweep`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OtelArgs {
    /// Send the run to an OpenTelemetry receiver as it runs (OTLP/HTTP: a base URL such as
    /// `http://localhost:6006`, or the full traces URL). A receiver that is down is an `error`
    /// event and a warning, never a failed run.
    #[arg(long, value_name = "URL", help_heading = "OpenTelemetry")]
    pub otel_endpoint: Option<String>,
    /// An HTTP header for the receiver, `NAME=VALUE` (repeatable). The command line is visible
    /// to every user of the machine: give a key through `OTEL_EXPORTER_OTLP_HEADERS` instead.
    #[arg(
        long = "otel-header",
        value_name = "NAME=VALUE",
        help_heading = "OpenTelemetry"
    )]
    pub otel_headers: Vec<String>,
    /// Also send prompts, arguments, results and the answer (redacted).
    #[arg(long, help_heading = "OpenTelemetry")]
    pub otel_content: bool,
}

impl OtelArgs {
    /// The receiver, checked before anything starts.
    pub fn target(&self) -> Result<Option<otel::Target>> {
        self.otel_endpoint
            .as_deref()
            .map(|url| otel::Target::new(url, &self.otel_headers, self.otel_content))
            .transpose()
    }

    /// The same options as `cosmos run` arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(url) = &self.otel_endpoint {
            args.extend(["--otel-endpoint".to_string(), url.clone()]);
        }
        for h in &self.otel_headers {
            args.extend(["--otel-header".to_string(), h.clone()]);
        }
        if self.otel_content {
            args.push("--otel-content".to_string());
        }
        args
    }
}

/// Runs a task.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let spec = args.spec()?;
    run_spec(spec, &args.options)
}

/// Runs what `spec` says, shown as `options` ask (the explorer, or a line per step): `run`
/// and `fork` end here.
pub fn run_spec(spec: RunSpec, options: &RunOptions) -> Result<ExitCode> {
    let otel = options.otel.target()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = if options.no_tui {
        runtime.block_on(run_plain(spec, otel))?
    } else {
        run_live(&runtime, spec, otel)?
    };
    let Some(outcome) = outcome else {
        errln!("cosmos: stopped while starting the servers; no run was written");
        return Ok(ExitCode::from(130));
    };
    let code = match outcome.status {
        RunStatus::Completed => 0,
        RunStatus::Failed => 1,
        RunStatus::Interrupted => 130,
    };
    errln!(
        "cosmos: run {}{}: {}",
        outcome.status.as_str(),
        outcome
            .error
            .as_ref()
            .map_or(String::new(), |e| format!(" ({})", inert(e))),
        outcome.path.display()
    );
    Ok(ExitCode::from(code))
}

/// Prepares a run unless a stop comes first (then `None`: the servers started so far are
/// stopped as their futures are dropped, and no file was created).
pub(super) async fn prepare_or_stop(
    spec: &RunSpec,
    stop: watch::Receiver<bool>,
) -> Result<Option<agent::Prepared>> {
    let mut stopped = stop.clone();
    tokio::select! {
        biased;
        Ok(_) = stopped.wait_for(|s| *s) => Ok(None),
        prepared = agent::prepare_run(spec, stop) => prepared.map(Some),
    }
}

async fn run_plain(spec: RunSpec, otel: Option<otel::Target>) -> Result<Option<Outcome>> {
    let signals = agent::stop_on_signals();
    let Some(mut prepared) = prepare_or_stop(&spec, signals.rx).await? else {
        return Ok(None);
    };
    let exporting = export_live(&mut prepared, otel).await?;
    outln!(
        "{}",
        inert(&format!(
            "run {} · task {} · writing {}",
            prepared.header.agent.kind.as_str(),
            prepared.header.task.id,
            prepared.path.display()
        ))
    );
    let outcome = agent::execute_run(prepared, None, Some(Box::new(progress_line))).await;
    finish_export(exporting);
    outcome.map(Some)
}

/// Starts sending the run to an OpenTelemetry receiver, when one is given: its tap goes to
/// the run's recorder.
pub(super) async fn export_live(
    prepared: &mut agent::Prepared,
    target: Option<otel::Target>,
) -> Result<Option<otel::Live>> {
    let Some(target) = target else {
        return Ok(None);
    };
    let checked = otel::reachable(&target).await;
    let (live, tap) =
        otel::Live::start(&prepared.header, target, cosmos_export::redactor(), checked)?;
    prepared.tap = Some(Box::new(tap));
    Ok(Some(live))
}

/// Waits for the last spans; what did not arrive is a warning, never a failed run.
pub(super) fn finish_export(exporting: Option<otel::Live>) {
    if let Some(problem) = exporting.and_then(otel::Live::finish) {
        errln!("cosmos: warning: OpenTelemetry export: {}", inert(&problem));
    }
}

/// One line per step, for `--no-tui`.
fn progress_line(event: &Event) {
    let show = match &event.body {
        EventBody::LlmCall { error, .. } => error.is_some(),
        EventBody::Backpropagated { .. } | EventBody::NodeEvaluated { .. } => false,
        EventBody::NodeAdded { action: None, .. } => false,
        _ => true,
    };
    if show {
        let t = event.t_ms as f64 / 1000.0;
        let line = cosmos_trajectory::sanitize::one_line(
            &format!(
                "[{t:>7.1}s] {:<14} {}",
                event.body.kind(),
                summary(event, Latencies::Measured)
            ),
            200,
        );
        outln!("{line}");
    }
    if let EventBody::RunFinished { status, totals, .. } = &event.body {
        outln!(
            "{}",
            inert(&format!(
                "done: {} · {} tool call(s), {} failed · {} LLM call(s), {} tokens · {:.1}s{}",
                status.as_str(),
                totals.tool_calls,
                totals.tool_errors,
                totals.llm_calls,
                totals.tokens,
                totals.wall_ms as f64 / 1000.0,
                totals
                    .fidelity
                    .map_or(String::new(), |f| format!(" · fidelity {f:.2}"))
            ))
        );
    }
}

fn run_live(
    runtime: &tokio::runtime::Runtime,
    spec: RunSpec,
    otel: Option<otel::Target>,
) -> Result<Option<Outcome>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::tui::app::App;
    use crate::tui::views::run_view::RunView;
    use cosmos_trajectory::run::Run;

    // What the explorer needs is checked before any server starts or any file is written.
    crate::tui::terminal::require_terminal()?;
    let keymap = crate::tui::load_keymap()?;
    let signals = runtime.block_on(async { agent::stop_on_signals() });
    let Some(mut prepared) = runtime.block_on(prepare_or_stop(&spec, signals.rx.clone()))? else {
        return Ok(None);
    };
    let exporting = runtime.block_on(export_live(&mut prepared, otel))?;
    let run = Run::new(prepared.path.clone(), prepared.header.clone());
    let (event_tx, event_rx) = std::sync::mpsc::channel::<Event>();
    let (ui_tx, ui_rx) = std::sync::mpsc::channel();
    let (ui_stop_tx, ui_stop_rx) = std::sync::mpsc::channel::<()>();
    // A server's request for input reaches the person through the explorer while it is open.
    let (ask_tx, ask_rx) = std::sync::mpsc::channel();
    cosmos_engine::mcp::ask_through(Some(ask_tx));
    {
        let ui_tx = ui_tx.clone();
        std::thread::spawn(move || {
            for question in ask_rx {
                // The explorer gone, the question is dropped: the call's answer is a decline.
                let _ = ui_tx.send(crate::tui::action::Action::Elicit(Box::new(question)));
            }
        });
    }
    let agent = runtime.spawn(agent::execute_run(prepared, Some(event_tx), None));
    // Events go to the explorer until the person leaves it with the run still going; from
    // then on they become progress lines, as with --no-tui.
    let headless = Arc::new(AtomicBool::new(false));
    let printer = {
        let headless = Arc::clone(&headless);
        std::thread::spawn(move || {
            for event in event_rx {
                if headless.load(Ordering::Acquire) {
                    progress_line(&event);
                } else if ui_tx
                    .send(crate::tui::action::Action::LiveEvent(
                        crate::tui::action::LiveSource::Followed,
                        Box::new(event),
                    ))
                    .is_err()
                {
                    // The explorer is gone (it panicked, or left): print from here on.
                    headless.store(true, Ordering::Release);
                }
            }
        })
    };
    let size = crossterm::terminal::size().unwrap_or((80, 24));
    let view = RunView::live(
        run,
        ratatui::layout::Rect::new(0, 0, size.0, size.1.saturating_sub(1)),
        Some(ui_stop_tx),
    );
    let app = App::new(view, keymap, crate::tui::theme::Theme::from_env(), size);
    let ui = super::live::explore_while_running(
        runtime,
        &signals,
        app,
        ui_rx,
        ui_stop_rx,
        ("run", "explorer"),
        || headless.store(true, Ordering::Release),
    );
    let outcome = runtime.block_on(agent).context("the agent task panicked");
    cosmos_engine::mcp::ask_through(None);
    let outcome = outcome?;
    let _ = printer.join();
    finish_export(exporting);
    ui?;
    outcome.map(Some)
}
