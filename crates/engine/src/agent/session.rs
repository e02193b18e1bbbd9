//! One whole run: read the task and configs, start the servers, build the world model,
//! write the header, run the agent, write `run_finished` however it ended, stop the servers.
//!
//! One whole run. Reads the task and configs, starts servers, builds the world
//! model, roles and `Env` (refusing colliding function names before any file exists), the
//! header, creates the file, runs the agent, and always ends the file with `run_finished`
//! (completed, failed or interrupted; a panic is caught and ends it `failed`). Its task comes
//! from a file or, for a fork, from the original's header (`TaskSource`).
//! `stop_on_signals` turns SIGINT/SIGTERM/SIGHUP into the stop signal every agent checks, and
//! says whether a signal (not the UI) asked, so the live explorer closes too.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Sender;

use anyhow::{Context, Result};
use serde_json::json;
use tokio::sync::watch;

use super::fork::{ForkPlan, OnMiss, RecordedTools};
use super::ports::{EventSink, ToolHost};
use super::recorder::{Hook, Recorder};
use super::settings::Settings;
use super::{Budget, End, Env, Roles, plan_exec, react, spiral};
use crate::config::Config;
use crate::llm::client::LlmClient;
use crate::mcp::mcp_json::McpConfig;
use crate::mcp::pool::{McpPool, Timeouts};
use crate::mcp::server::ServerFailure;
use crate::metrics::run::RunAccumulator;
use crate::task::{self, Task};
use crate::world_model::WorldModel;
use crate::world_model::named::{self, BuiltInOptions};
use cosmos_trajectory::event::{
    AgentInfo, AgentKind, Event, EventBody, Header, Role, RunStatus, TaskInfo,
};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::writer::Writer;

/// Where a run's task comes from.
#[derive(Debug, Clone)]
pub enum TaskSource {
    /// A task file, and which task of it.
    File {
        /// The file.
        path: PathBuf,
        /// The task's id, needed when the file has several.
        id: Option<String>,
    },
    /// A recorded run's task (a fork's), as its header has it, with the servers it used.
    Recorded {
        /// The header's task.
        info: TaskInfo,
        /// The servers the run used, by name.
        servers: Vec<String>,
    },
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// MCP config file; a fork that reaches no server needs none.
    pub mcp_config: Option<PathBuf>,
    /// The task.
    pub task: TaskSource,
    /// When the run is a fork: of what, and how its calls are answered.
    pub fork: Option<ForkPlan>,
    /// Servers of the config to connect besides the task's own (MCP-Bench's distraction servers).
    pub extra_servers: Vec<String>,
    /// The agent.
    pub agent: AgentKind,
    /// The world model's name: built in (`none`, `llm`, `memory`, `command`) or a
    /// `[world_models.NAME]` of the config.
    pub world_model: String,
    /// What the built-in world models are made of (memory runs, command, caching).
    pub world_model_options: BuiltInOptions,
    /// `cosmos.toml`, read (the environment alone without one).
    pub config: Config,
    /// Record every LLM call's messages and reply, whatever `cosmos.toml` says.
    pub record_messages: bool,
    /// The configuration's name, for the header (tables group by it).
    pub label: Option<String>,
    /// Folder for the trajectory.
    pub out_dir: PathBuf,
    /// The trajectory's file name in `out_dir`; `None` for `<time>_<task>_<agent>_<wm>.jsonl`
    /// (a sweep names each cell's run after the cell).
    pub file_name: Option<String>,
    /// Limits.
    pub budget: Budget,
    /// Server timeouts.
    pub timeouts: Timeouts,
    /// SPIRAL-Exec's search settings.
    pub search: Settings,
    /// Routing by a file (`--routing`), in place of `search.go_real_below`.
    pub routing: Option<Arc<crate::metrics::routing_file::RoutingFile>>,
    /// A sweep worker's stateless servers, taken from there instead of started (`None`: the
    /// run starts every server it uses).
    pub shared: Option<Arc<crate::mcp::shared::SharedServers>>,
}

/// A run ready to start: servers up, header built, file created.
pub struct Prepared {
    env: Env,
    pool: Arc<McpPool>,
    recorder_writer: Writer,
    /// The header as written.
    pub header: Header,
    /// Servers that failed to start (recorded as `error` events when the run starts).
    pub failures: Vec<ServerFailure>,
    /// The trajectory file.
    pub path: PathBuf,
    search: Settings,
    /// Sees every event as written (an OpenTelemetry exporter); set by the caller.
    pub tap: Option<Box<dyn super::ports::Tap>>,
    /// The stateful servers' copies of their state for this run.
    sandboxes: Vec<crate::mcp::sandbox::Sandbox>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The trajectory file.
    pub path: PathBuf,
    /// Its status.
    pub status: RunStatus,
    /// Why, when not completed.
    pub error: Option<String>,
}

/// `<time>_<task>_<agent>_<world model>.jsonl`, safe and short (80 characters a part).
pub fn file_name(task: &str, agent: AgentKind, world_model: &str) -> String {
    let clean = |s: &str| cosmos_trajectory::writer::file_safe(s, 80);
    format!(
        "{}_{}_{}_{}.jsonl",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
        clean(task),
        agent.as_str(),
        clean(world_model)
    )
}

/// What a run's writer takes out of every line: the endpoints' keys, the MCP config's
/// `${VAR}` values and the environment's secrets.
pub fn redactor(config: &Config, mcp: &McpConfig) -> Redactor {
    Redactor::with_secrets(
        config
            .llm
            .secrets()
            .into_iter()
            .chain(mcp.secrets.iter().cloned())
            .chain(Redactor::environment_secrets()),
    )
}

/// The task of a run, and its header's section (a fork's is the original's, as recorded).
fn load_task(source: &TaskSource) -> Result<(Task, TaskInfo)> {
    match source {
        TaskSource::File { path, id } => {
            let task = task::select(task::load(path)?, id.as_deref(), path)?;
            let info = task.info();
            Ok((task, info))
        }
        TaskSource::Recorded { info, servers } => Ok((
            Task {
                id: info.id.clone(),
                request: info.request.clone(),
                reference: info.reference.clone(),
                reference_calls: None,
                dependency_analysis: info.dependency_analysis.clone(),
                servers: servers.clone(),
                source: info.source.clone().unwrap_or_default(),
                expected_state: info.expected_state.clone(),
            },
            info.clone(),
        )),
    }
}

/// Reads everything, starts the servers and creates the trajectory file. Everything that can
/// refuse the run is checked before a server starts or a file is made.
pub async fn prepare(spec: &RunSpec, stop: watch::Receiver<bool>) -> Result<Prepared> {
    let (task, task_info) = load_task(&spec.task)?;
    let offline = spec.fork.as_ref().and_then(|f| f.offline.as_ref());
    let mut mcp = match (&spec.mcp_config, offline) {
        (Some(path), _) => McpConfig::load(path)?,
        (None, Some(_)) => McpConfig::default(),
        (None, None) => anyhow::bail!("no MCP config: pass --mcp-config"),
    };
    let servers = servers_of(spec, &task, &mcp, offline.is_some())?;
    // A server that wants a login it does not have stops the run here, before any starts;
    // the tokens of those logged into are secrets of the run.
    if let Some(path) = &spec.mcp_config {
        let tokens = crate::mcp::oauth::check_logins(&servers, path).await?;
        mcp.secrets.extend(tokens);
    }
    let mut config = spec.config.clone();
    if spec.record_messages {
        config.llm.record_all_messages();
    }
    let world_model: Option<Arc<dyn WorldModel>> =
        named::resolve(&spec.world_model, &mut config, &spec.world_model_options)?
            .map(|n| n.build())
            .transpose()?
            .map(|built| built.model);
    let llm = &config.llm;
    check_roles(spec, llm, world_model.is_some())?;
    let client = |role| Arc::new(LlmClient::new(llm.endpoint(role).clone()));

    let (pool, failures, sandboxes) = start_servers(spec, servers, &task).await?;
    let planner = client(Role::Planner);
    let mut header = header_of(
        spec,
        task_info,
        settings_of(spec, planner.uses_tools()),
        planner.endpoint().info(),
        llm,
    );
    header.world_model = world_model.as_ref().map(|w| w.describe());
    header.servers = pool.server_infos();
    for info in &mut header.servers {
        if let Some(sandbox) = sandboxes.iter().find(|s| s.server == info.name) {
            info.start_digest = Some(sandbox.start_digest.clone());
            info.start_state = sandbox.start_state.clone().map(Box::new);
            info.seed_removed = sandbox.removed.clone();
        }
    }
    header.tools = pool.tools();
    if let Some((tools, servers)) = offline {
        header.tools = tools.clone();
        header.servers = servers.clone();
    }

    let redactor = redactor(&config, &mcp);
    let pool = Arc::new(pool);
    let roles = Roles {
        planner,
        critic: client(Role::Critic),
        summarizer: client(Role::Summarizer),
    };
    let host: Arc<dyn ToolHost> = match offline {
        Some((tools, _)) => Arc::new(RecordedTools(tools.clone())),
        None => pool.clone(),
    };
    // Checked before the file exists: a run that cannot start leaves nothing behind.
    let mut env = Env::new(task, host, roles, world_model, spec.budget, stop)?;
    env.fork = spec.fork.as_ref().map(ForkPlan::fork);
    env.go_real_below = spec.search.go_real_below;
    env.routing = spec.routing.clone();
    env.start_states = header
        .servers
        .iter()
        .filter_map(|s| Some((s.name.clone(), (**s.start_state.as_ref()?).clone())))
        .collect();
    let path = spec.out_dir.join(
        spec.file_name
            .clone()
            .unwrap_or_else(|| file_name(&env.task.id, spec.agent, header.world_model_name())),
    );
    let writer = Writer::create(
        &path,
        &header,
        redactor,
        Some(RunAccumulator::tally(&header)),
    )?;
    Ok(Prepared {
        env,
        pool,
        recorder_writer: writer,
        header,
        failures,
        path,
        search: spec.search,
        tap: None,
        sandboxes,
    })
}

/// Starts the run's servers, each stateful one on a fresh copy of its state; refuses a task
/// that checks a state no copy keeps, and a destructive tool on live state.
async fn start_servers(
    spec: &RunSpec,
    mut servers: Vec<crate::mcp::mcp_json::ServerConfig>,
    task: &Task,
) -> Result<(
    McpPool,
    Vec<crate::mcp::server::ServerFailure>,
    Vec<crate::mcp::sandbox::Sandbox>,
)> {
    // Each stateful server gets a fresh copy of its state, named in its entry: copying,
    // unpacking and hashing are blocking work, kept off the threads other runs' tasks use.
    let (servers, sandboxes) = tokio::task::spawn_blocking(move || {
        let sandboxes = crate::mcp::sandbox::prepare(&mut servers);
        (servers, sandboxes)
    })
    .await
    .context("preparing the servers' state")?;
    let sandboxes = sandboxes?;
    // A state the task checks must be a copy the run leaves, or nothing could be scored.
    if let Some(server) = task
        .expected_state
        .keys()
        .find(|s| !sandboxes.iter().any(|b| &b.server == *s))
    {
        anyhow::bail!(
            "task {} expects a final state of server \"{server}\", which runs on no copy of its \
             state: give its entry \"cosmos\": {{\"state\": {{\"seed\": PATH}}}}",
            task.id
        );
    }
    let (pool, failures) =
        McpPool::connect_sharing(&servers, spec.timeouts, spec.shared.as_deref()).await;
    // A tool its server marks destructive runs only in a sandbox, or knowingly on live state.
    if let Err(refused) = crate::mcp::sandbox::refuse_unguarded(&servers, &pool.tools()) {
        pool.shutdown().await;
        return Err(refused);
    }
    Ok((pool, failures, sandboxes))
}

/// A run's header before its servers are known: its id (the time, the task, the agent and a
/// random tail, so runs of one task started in the same millisecond by a sweep's workers or
/// shards are still runs of their own), task, agent and settings, and each role's endpoint.
fn header_of(
    spec: &RunSpec,
    task: TaskInfo,
    settings: std::collections::BTreeMap<String, serde_json::Value>,
    planner: cosmos_trajectory::event::ModelInfo,
    llm: &crate::llm::endpoints::LlmConfig,
) -> Header {
    let mut header = Header::new(
        format!(
            "{}-{}-{}-{:08x}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
            task.id,
            spec.agent.as_str(),
            fastrand::u32(..)
        ),
        task,
        AgentInfo {
            kind: spec.agent,
            settings,
        },
        planner,
    );
    for role in [Role::WorldModel, Role::Critic, Role::Summarizer] {
        header
            .roles
            .insert(role.as_str().to_string(), llm.endpoint(role).info());
    }
    header.label = spec.label.clone();
    header.fork_of = spec.fork.as_ref().map(|f| f.of.clone());
    header
}

/// The servers a run starts: the task's (every configured one when it names none), then the
/// extra servers asked for; none for a fork that reaches no server (`offline`).
fn servers_of(
    spec: &RunSpec,
    task: &Task,
    mcp: &McpConfig,
    offline: bool,
) -> Result<Vec<crate::mcp::mcp_json::ServerConfig>> {
    let mut servers = if offline {
        // A fork that reaches no server starts none.
        Vec::new()
    } else if task.servers.is_empty() {
        mcp.servers.clone()
    } else {
        task.servers
            .iter()
            .map(|name| mcp.get(name).cloned())
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("task {} needs servers", task.id))?
    };
    for name in &spec.extra_servers {
        let extra = mcp.get(name)?.clone();
        if !servers.iter().any(|s| s.name == extra.name) {
            servers.push(extra);
        }
    }
    Ok(servers)
}

/// Every role the run will ask has an address, a rehearsing agent has a world model (so has a
/// fork whose misses go to one), and a routing file was chosen for this world model: all
/// before anything starts.
fn check_roles(
    spec: &RunSpec,
    llm: &crate::llm::endpoints::LlmConfig,
    has_world_model: bool,
) -> Result<()> {
    let mut roles = vec![Role::Planner, Role::Summarizer];
    if spec.agent == AgentKind::Spiral && spec.search.alpha < 1.0 {
        roles.push(Role::Critic);
    }
    if spec.world_model == "llm" {
        roles.push(Role::WorldModel);
    }
    for role in roles {
        if let Some(why) = llm
            .endpoint(role)
            .missing(&format!("roles.{}", role.as_str()))
        {
            anyhow::bail!(why);
        }
    }
    if spec.agent != AgentKind::React && !has_world_model {
        anyhow::bail!(
            "agent {} rehearses in a world model: pass --world-model llm|memory|command|NAME",
            spec.agent.as_str()
        );
    }
    if let Some(OnMiss::WorldModel) = spec.fork.as_ref().and_then(|f| f.recorded)
        && !has_world_model
    {
        anyhow::bail!("--on-miss world-model needs a world model: pass --world-model NAME");
    }
    // Thresholds chosen for one world model say nothing of another's confidences.
    if let Some(routing) = &spec.routing
        && routing.world_model != spec.world_model
    {
        anyhow::bail!(
            "the routing file {} was chosen for the world model \"{}\"; this run's is \"{}\"",
            routing.path,
            routing.world_model,
            spec.world_model
        );
    }
    Ok(())
}

/// Every setting the run's agent uses, as its header records them; `tools`: the planner
/// decides by native tool calls.
fn settings_of(
    spec: &RunSpec,
    tools: bool,
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut settings = std::collections::BTreeMap::new();
    settings.insert("max_steps".to_string(), json!(spec.budget.max_steps));
    settings.insert("max_tokens".to_string(), json!(spec.budget.max_tokens));
    settings.insert(
        "max_wall_s".to_string(),
        json!(spec.budget.max_wall.as_secs()),
    );
    settings.insert(
        "server_startup_timeout_s".to_string(),
        json!(spec.timeouts.startup.as_secs()),
    );
    settings.insert(
        "tool_call_timeout_s".to_string(),
        json!(spec.timeouts.call.as_secs()),
    );
    settings.insert(
        "elicitation".to_string(),
        json!(spec.timeouts.elicitation.as_str()),
    );
    if spec.agent == AgentKind::Spiral {
        let s = &spec.search;
        for (k, v) in [
            ("iterations", json!(s.iterations)),
            ("max_depth", json!(s.max_depth)),
            ("c", json!(s.c)),
            ("k", json!(s.k)),
            ("alpha", json!(s.alpha)),
            ("plan_rule", json!(s.plan_rule.as_str())),
            ("concurrency", json!(s.concurrency)),
            ("execution_time_revision", json!(s.revisions > 0)),
            ("revisions", json!(s.revisions)),
            ("retries", json!(s.retries)),
            ("widen", json!(s.widen)),
            ("settled", json!(s.settled.as_str())),
        ] {
            settings.insert(k.to_string(), v);
        }
    }
    // Routing applies to every rehearsing agent, so it is recorded whichever it is.
    if let Some(x) = spec.search.go_real_below
        && matches!(spec.agent, AgentKind::Spiral | AgentKind::PlanExec)
    {
        settings.insert(AgentInfo::GO_REAL_BELOW.to_string(), json!(x));
    }
    if let Some(routing) = &spec.routing {
        settings.insert("routing".to_string(), routing.recorded());
    }
    if let Some(fork) = &spec.fork {
        for (k, v) in fork.settings() {
            settings.insert(k.to_string(), json!(v));
        }
    }
    // What constrains the planner's decisions (a refusal at run time is an `error` event).
    settings.insert(
        "decision_schema".to_string(),
        json!(if tools { "tools" } else { "per_tool" }),
    );
    settings
}

/// The error of a run none of whose servers started.
pub const NO_SERVER_STARTED: &str = "no MCP server could be started";

/// Runs a prepared run to its end. Events also go to `live` and `hook` as they are written.
pub async fn execute(
    prepared: Prepared,
    live: Option<Sender<Event>>,
    hook: Option<Hook>,
) -> Result<Outcome> {
    let Prepared {
        env,
        pool,
        recorder_writer,
        failures,
        path,
        header,
        search,
        tap,
        sandboxes,
    } = prepared;
    let mut rec = Recorder::new(recorder_writer, live, hook).with_tap(tap);
    let end = unless_panicking(run_agent(
        &env,
        &mut rec,
        &failures,
        header.agent.kind,
        &search,
    ))
    .await;
    drop(env);
    // The state as the run left it (read before its servers stop: each writes its state as
    // it changes it), kept beside the run.
    let (end_digest, state_match) = {
        let (path, expected) = (path.clone(), header.task.expected_state.clone());
        tokio::task::spawn_blocking(move || {
            let digests = crate::mcp::sandbox::finish(&sandboxes, &path);
            (digests, end_state_match(&sandboxes, &expected))
        })
        .await
        .unwrap_or_default()
    };
    // Whatever happened, the file ends with run_finished (unless the disk itself failed).
    let finish = rec.emit(EventBody::RunFinished {
        status: end.status,
        error: end.error.clone(),
        ending: end.ending,
        totals: Default::default(),
        end_digest,
        state_match,
    });
    // The agent's environment is gone, so the pool has one owner again.
    if let Ok(pool) = Arc::try_unwrap(pool) {
        pool.shutdown().await;
    }
    finish?;
    Ok(Outcome {
        path,
        status: end.status,
        error: end.error,
    })
}

/// How each sandbox's end state matches what the task expects of it.
fn end_state_match(
    sandboxes: &[crate::mcp::sandbox::Sandbox],
    expected: &std::collections::BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
) -> std::collections::BTreeMap<String, cosmos_trajectory::event::StateMatch> {
    use crate::metrics::state_match;
    expected
        .iter()
        .filter_map(|(server, fields)| {
            let sandbox = sandboxes.iter().find(|s| &s.server == server)?;
            let scored = match crate::mcp::state_view::read(&sandbox.root) {
                Ok(end) => state_match::score(fields, &end),
                Err(e) => state_match::unread(fields, format!("{e:#}")),
            };
            Some((server.clone(), scored))
        })
        .collect()
}

/// How the run ended: the agent's end, a failure for an error, and a failure with the panic's
/// message for a panic, so even a bug in an agent ends the file with `run_finished`.
async fn unless_panicking(agent: impl std::future::Future<Output = Result<End>>) -> End {
    use futures::FutureExt;
    // The agent's state is dropped after a panic; nothing observes it half-updated.
    match std::panic::AssertUnwindSafe(agent).catch_unwind().await {
        Ok(Ok(end)) => end,
        Ok(Err(e)) => End::failed(format!("{e:#}")),
        Err(panic) => End::failed(format!(
            "the agent panicked: {}",
            cosmos_trajectory::parallel::panic_message(panic.as_ref())
        )),
    }
}

async fn run_agent(
    env: &Env,
    rec: &mut dyn EventSink,
    failures: &[ServerFailure],
    agent: AgentKind,
    search: &Settings,
) -> Result<End> {
    for f in failures {
        rec.emit(f.event())?;
    }
    if !failures.is_empty() && env.tools.is_empty() {
        return Ok(End::failed(NO_SERVER_STARTED));
    }
    if let Some(fork) = &env.fork {
        fork.replay(rec)?;
    }
    match agent {
        AgentKind::React => react::run(env, rec).await,
        AgentKind::PlanExec => plan_exec::run(env, rec).await,
        AgentKind::Spiral => spiral::run(env, rec, search).await,
        AgentKind::WmEval => Ok(End::failed("wm_eval is not an agent (cosmos wm-eval)")),
        AgentKind::External => Ok(End::failed(
            "external runs are recorded by cosmos proxy, not run",
        )),
    }
}

/// The stop signal every agent checks: true on Ctrl-C, SIGTERM or SIGHUP (the terminal
/// closed), and on demand through `tx` (the UI's stop key).
pub struct StopSignal {
    /// Asks for a stop.
    pub tx: watch::Sender<bool>,
    /// What agents watch.
    pub rx: watch::Receiver<bool>,
    /// True once a signal (not the UI) asked for the stop: the explorer then closes too.
    pub signalled: watch::Receiver<bool>,
}

/// Starts listening for the signals that stop a run.
pub fn stop_on_signals() -> StopSignal {
    let (tx, rx) = watch::channel(false);
    let (signalled_tx, signalled) = watch::channel(false);
    let signal_tx = tx.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let received = |kind: SignalKind| {
                let mut stream = signal(kind).ok();
                async move {
                    match stream.as_mut() {
                        Some(s) => {
                            s.recv().await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = received(SignalKind::terminate()) => {}
                _ = received(SignalKind::hangup()) => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        let _ = signalled_tx.send(true);
        let _ = signal_tx.send(true);
    });
    StopSignal { tx, rx, signalled }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_the_agent_is_a_failed_end_with_its_message() {
        let end = unless_panicking(async {
            if std::hint::black_box(true) {
                panic!("index out of bounds: the len is 0 but the index is 0");
            }
            Ok(End::completed())
        })
        .await;
        assert_eq!(
            end,
            End::failed("the agent panicked: index out of bounds: the len is 0 but the index is 0")
        );
        let end = unless_panicking(async { Err(anyhow::anyhow!("disk full")) }).await;
        assert_eq!(end, End::failed("disk full"));
    }

    #[test]
    fn file_names_stay_short_and_plain_whatever_the_task_id() {
        let name = file_name(&"é/x".repeat(100), AgentKind::Spiral, "cached(llm)");
        assert!(name.len() < 140, "{} bytes", name.len());
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{name}"
        );
        assert!(name.ends_with("_spiral_cached-llm-.jsonl"), "{name}");
    }
}
