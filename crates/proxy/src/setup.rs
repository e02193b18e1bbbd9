//! What every session of one proxy shares ([`Setup`]): the mode, the offered catalogue, the
//! upstreams, the world model and where sessions are recorded; and the sessions open now.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::catalog::Catalog;
use super::client_session::{Session, Start};
use super::{clients, elicit, offer, relay};
use cosmos_engine::agent::PlannedCall;
use cosmos_engine::agent::{self, Prediction, Rehearsal};
use cosmos_engine::agent::{Answer, Critique, Proposal, SearchEnv, Stopped};
use cosmos_engine::config::Config;
use cosmos_engine::mcp::McpConfig;
use cosmos_engine::mcp::ServerFailure;
use cosmos_engine::mcp::{McpPool, Timeouts};
use cosmos_engine::world_model::{self, BuiltInOptions};
use cosmos_engine::world_model::{HistoryStep, WorldModel};
use cosmos_trajectory::event::{
    Action, AgentInfo, AgentKind, Ending, Header, ModelInfo, Observation, Role, RunStatus,
    ServerInfo, TaskInfo, ToolInfo, own_tool_name,
};
use cosmos_trajectory::reader::EventStream;
use cosmos_trajectory::redact::Redactor;

/// The client's name when its `initialize` gave none (or never came).
const UNKNOWN_CLIENT: &str = "unknown client";
/// Longest client name or version kept.
pub(crate) const CLIENT_CHARS: usize = 120;

/// Sessions open at once, at most: each holds its run's file open, and a flood of clients (or
/// of names a stateless client makes up) must not take the file descriptors the open runs
/// need to be written and finished.
pub const MAX_OPEN_SESSIONS: usize = 256;

/// `_meta` key of a result: `true` when the world model made it, `false` when a real server
/// did in simulate mode (`--on-miss real`).
pub const META_SIMULATED: &str = "io.github.mcp-cosmos/simulated";
/// `_meta` key of a simulated result: the world model that made it.
pub const META_WORLD_MODEL: &str = "io.github.mcp-cosmos/world_model";
/// `_meta` key of a simulate-mode result the world model could not make: what `--on-miss`
/// did (`error`, or `real`).
pub const META_MISS: &str = "io.github.mcp-cosmos/miss";
/// `_meta` key of a hybrid-mode result: the world model's confidence in its prediction (absent
/// when it gave none).
pub const META_CONFIDENCE: &str = "io.github.mcp-cosmos/confidence";
/// `_meta` key of a hybrid-mode result the real server answered: why (`unsure`, `no_prediction`,
/// `not_read_only`).
pub const META_WENT_REAL: &str = "io.github.mcp-cosmos/went_real";
/// The task id of a session whose user named none (`--task-id`).
pub const DEFAULT_TASK_ID: &str = "external";

/// What the proxy does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Real servers answer; every call is recorded.
    Record,
    /// Real servers answer; the world model predicts each call beside it.
    Shadow,
    /// The world model answers; no real server is called.
    Simulate,
    /// The world model answers when it is sure enough (`--go-real-below`) of a read-only
    /// tool's result; otherwise the real server does.
    Hybrid,
}

impl Mode {
    /// Its name in headers and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Record => "record",
            Mode::Shadow => "shadow",
            Mode::Simulate => "simulate",
            Mode::Hybrid => "hybrid",
        }
    }
}

/// Simulate mode, when the world model cannot answer a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMiss {
    /// The client gets a tool error saying so (the default: no real server is reached
    /// silently).
    Error,
    /// The real server answers, and the result says so in `_meta`.
    Real,
}

impl OnMiss {
    /// Its name in headers.
    pub fn as_str(self) -> &'static str {
        match self {
            OnMiss::Error => "error",
            OnMiss::Real => "real",
        }
    }
}

/// What `cosmos proxy` was asked for.
#[derive(Debug, Clone)]
pub struct ProxySpec {
    /// The MCP config.
    pub mcp_config: PathBuf,
    /// Its servers to offer (all when empty).
    pub servers: Vec<String>,
    /// The mode.
    pub mode: Mode,
    /// The world model's name (`none` in record mode).
    pub world_model: String,
    /// What the built-in world models are made of.
    pub world_model_options: BuiltInOptions,
    /// Simulate mode: the tool list of a recorded run instead of the upstreams'.
    pub tools_from: Option<PathBuf>,
    /// Simulate mode: what a call the world model cannot answer gets.
    pub on_miss: OnMiss,
    /// Hybrid mode: the confidence below which the real server answers.
    pub go_real_below: f64,
    /// Hybrid mode: per-tool thresholds from a routing file, in place of `go_real_below`.
    pub routing: Option<Arc<cosmos_metrics::routing_file::RoutingFile>>,
    /// Hybrid mode: let the world model answer tools not annotated read-only.
    pub simulate_writes: bool,
    /// `cosmos.toml`, read.
    pub config: Config,
    /// Where sessions are recorded.
    pub out_dir: PathBuf,
    /// The task the client's agent is solving, when the user knows it.
    pub task_request: Option<String>,
    /// The task's id, for grouping sessions in reports.
    pub task_id: Option<String>,
    /// The configuration's name, for the header.
    pub label: Option<String>,
    /// Server timeouts.
    pub timeouts: Timeouts,
    /// How the client reaches the proxy (`stdio` or `http`), recorded.
    pub transport: &'static str,
    /// Secrets beyond the configs' (the HTTP bearer token).
    pub secrets: Vec<String>,
    /// HTTP: a session that does nothing this long is closed (`idle_expired`); `None` keeps
    /// sessions open until the client ends them (stdio, where the pipe says it).
    pub session_idle: Option<Duration>,
}

/// Everything every session of one proxy shares.
pub struct Setup {
    /// The mode.
    pub mode: Mode,
    /// Simulate mode's answer to a miss.
    pub on_miss: OnMiss,
    /// Hybrid mode: a prediction less sure than this (or with no confidence) goes real.
    pub go_real_below: f64,
    /// Hybrid mode: per-tool thresholds (`--routing`); a tool the file does not trust goes real.
    pub routing: Option<Arc<cosmos_metrics::routing_file::RoutingFile>>,
    /// Hybrid mode: tools not annotated read-only may be answered by the world model too.
    pub simulate_writes: bool,
    /// The offered tools.
    pub catalog: Catalog,
    /// The running upstreams (`None` in simulate mode with `--tools-from` and no `--on-miss
    /// real`: nothing is started).
    pub pool: Option<Arc<McpPool>>,
    /// Upstreams that did not start (recorded in every session).
    pub failures: Vec<ServerFailure>,
    /// The upstreams a client of the handshake era gets a session of its own with
    /// (`own_sessions_of`: the stateless-era upstreams without a state seed).
    pub own_sessions: Vec<cosmos_engine::mcp::ServerConfig>,
    /// Server timeouts (a client's own upstream sessions are started with them too).
    pub timeouts: Timeouts,
    /// Places for clients with upstream sessions of their own, [`MAX_OPEN_SESSIONS`] at most.
    pub own_session_slots: Arc<tokio::sync::Semaphore>,
    /// The world model (shadow and simulate).
    pub world_model: Option<Arc<dyn WorldModel>>,
    /// The upstreams as headers record them.
    pub servers: Vec<ServerInfo>,
    /// The task as headers record it.
    pub task: TaskInfo,
    /// The configuration's name.
    pub label: Option<String>,
    /// Where sessions are recorded.
    pub out_dir: PathBuf,
    /// Takes secrets out of every line.
    pub redactor: Redactor,
    /// The proxy's settings, recorded in each header beside the client.
    pub settings: BTreeMap<String, Value>,
    /// The roles whose endpoints the proxy uses (the `llm` world model's), for headers.
    pub roles: BTreeMap<String, ModelInfo>,
    /// The connected clients, and whose call is in flight on which server: asked when their
    /// call's server asks for input or a sampled message, told its log messages.
    pub clients: Arc<clients::Clients>,
    /// What the proxy offers beyond tools, from its upstreams.
    pub offer: offer::Offer,
    /// The stateful upstreams' copies of their state, for as long as the proxy runs: one copy
    /// each, shared by every session (each records where it found the state and left it).
    sandboxes: Arc<Vec<cosmos_engine::mcp::Sandbox>>,
    /// Sessions open now, so a stop can end each one; `None` once the proxy is stopping
    /// (no session opens then: it would be left a file with nothing in it).
    sessions: Mutex<Option<Vec<Weak<Session>>>>,
    /// A session that does nothing this long is closed ([`ProxySpec::session_idle`]).
    session_idle: Option<Duration>,
    /// The runs of clients of the stateless era over HTTP, by [`Arrival::sessionless`]: each
    /// request of theirs comes alone, so it joins the run its client's last one opened. Held
    /// here (no connection holds them): they end idle, or when the proxy stops.
    sessionless: Mutex<HashMap<String, Arc<Session>>>,
    /// Told whenever a session ends.
    session_closed: Arc<tokio::sync::Notify>,
}

/// The address an HTTP request came from, put in its extensions by the listener (a
/// sessionless client's runs are told apart by it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddress(pub std::net::IpAddr);

/// Who opens a run: the client as it named itself (at `initialize`, or in each request's
/// `_meta` in the stateless era), the protocol version it speaks, and for a client with no
/// session (the stateless era over HTTP) the key its requests are joined by.
#[derive(Debug, Default)]
pub(crate) struct Arrival {
    pub client: Option<rmcp::model::Implementation>,
    pub protocol: Option<String>,
    /// Its name, version and address: one client's stretch of work (docs/trajectory-format.md).
    pub sessionless: Option<String>,
    /// The protocol version of each upstream session made for this client alone, by server.
    pub own_protocols: Vec<(String, Option<String>)>,
}

/// The upstreams that take a session of their own for each client of the handshake era: those
/// the shared connection reached in the stateless era (2026-07-28), where a server has no
/// channel back for a call's requests, log messages and resource updates; over a handshake
/// session of its own it has one, to that client alone. A server with a state seed is not
/// among them: its sessions share the one copy of its state, and a second process on it would
/// race the first (its handshake clients get input requests as the stateless era asks them).
fn own_sessions_of(
    pool: Option<&McpPool>,
    configs: &[cosmos_engine::mcp::ServerConfig],
) -> Vec<cosmos_engine::mcp::ServerConfig> {
    let Some(pool) = pool else {
        return Vec::new();
    };
    let stateless: Vec<String> = pool
        .servers()
        .iter()
        .filter(|s| s.protocol_version().is_some_and(|v| !speaks_handshake(&v)))
        .map(|s| s.name.clone())
        .collect();
    configs
        .iter()
        .filter(|c| c.state_seed.is_none() && stateless.contains(&c.name))
        .cloned()
        .collect()
}

/// What the proxy offers, from `pool`, and from what the upstreams a handshake client gets a
/// session of its own with say in that era: asked once now, over a session closed straight
/// after.
async fn offer_of(
    pool: Option<&McpPool>,
    own_sessions: &[cosmos_engine::mcp::ServerConfig],
    timeouts: Timeouts,
    clients: &Arc<clients::Clients>,
) -> Result<offer::Offer> {
    let probe = match own_sessions.is_empty() {
        true => None,
        false => {
            let relay = Arc::new(relay::ToClients::all(clients.clone()));
            Some(
                McpPool::connect_for_client(own_sessions, timeouts, relay)
                    .await
                    .0,
            )
        }
    };
    let offer = offer::Offer::of(pool, probe.as_ref(), timeouts.call).await;
    if let Some(probe) = probe {
        probe.shutdown().await;
    }
    offer
}

/// True for a protocol version of the handshake era (`initialize`).
pub(crate) fn speaks_handshake(version: &str) -> bool {
    serde_json::from_value::<rmcp::model::ProtocolVersion>(Value::String(version.to_string()))
        .is_ok_and(|v| v.has_initialize())
}

/// Refuses, before anything is built, a flag used where it means nothing.
fn refuse_meaningless(spec: &ProxySpec) -> Result<()> {
    if let Some(routing) = &spec.routing
        && routing.world_model != spec.world_model
    {
        bail!(
            "the routing file {} was chosen for the world model \"{}\"; this proxy's is \"{}\"",
            routing.path,
            routing.world_model,
            spec.world_model
        );
    }
    if spec.mode == Mode::Hybrid && !(0.0..=1.0).contains(&spec.go_real_below) {
        bail!(
            "--go-real-below {}: a confidence, from 0 to 1",
            spec.go_real_below
        );
    }
    if spec.simulate_writes && spec.mode != Mode::Hybrid {
        bail!("--simulate-writes is for --mode hybrid");
    }
    if spec.tools_from.is_some() && spec.mode != Mode::Simulate {
        bail!("--tools-from is for simulate mode (the other modes list the real servers' tools)");
    }
    Ok(())
}

/// The world model of `spec`'s mode: none to record; built, with its endpoint checked, to
/// shadow, simulate or route.
fn world_model_of(spec: &ProxySpec, config: &mut Config) -> Result<Option<Arc<dyn WorldModel>>> {
    let world_model = match spec.mode {
        Mode::Record => {
            if spec.world_model != "none" {
                bail!(
                    "--world-model predicts calls in shadow and simulate modes; record mode \
                     calls only the real servers (pass --mode shadow or --mode simulate)"
                );
            }
            None
        }
        Mode::Shadow | Mode::Simulate | Mode::Hybrid => {
            let built = world_model::resolve(&spec.world_model, config, &spec.world_model_options)?
                .map(|n| n.build())
                .transpose()?
                .map(|b| b.model);
            let Some(model) = built else {
                bail!(
                    "--mode {} needs a world model: pass --world-model llm|memory|command|NAME",
                    spec.mode.as_str()
                );
            };
            if spec.world_model == "llm"
                && let Some(why) = config
                    .llm
                    .endpoint(Role::WorldModel)
                    .missing("roles.world_model")
            {
                bail!(why);
            }
            Some(model)
        }
    };
    Ok(world_model)
}

/// The settings every session's header records: the mode and what it was given.
fn recorded_settings(spec: &ProxySpec) -> BTreeMap<String, Value> {
    let mut settings = BTreeMap::new();
    settings.insert("mode".into(), json!(spec.mode.as_str()));
    settings.insert("transport".into(), json!(spec.transport));
    // (Not `session_…`: the redactor takes a setting of that name for a session token.)
    if let Some(idle) = spec.session_idle {
        settings.insert("close_idle_after_s".into(), json!(idle.as_secs()));
    }
    settings.insert(
        "server_startup_timeout_s".into(),
        json!(spec.timeouts.startup.as_secs()),
    );
    settings.insert(
        "tool_call_timeout_s".into(),
        json!(spec.timeouts.call.as_secs()),
    );
    settings.insert("elicitation".into(), json!("client"));
    if spec.mode == Mode::Simulate {
        settings.insert("on_miss".into(), json!(spec.on_miss.as_str()));
    }
    if spec.mode == Mode::Hybrid {
        match &spec.routing {
            Some(routing) => {
                settings.insert("routing".into(), routing.recorded());
            }
            None => {
                settings.insert("go_real_below".into(), json!(spec.go_real_below));
            }
        }
        settings.insert("simulate_writes".into(), json!(spec.simulate_writes));
    }
    if let Some(run) = &spec.tools_from {
        settings.insert("tools_from".into(), json!(run.display().to_string()));
    }
    settings
}

impl Setup {
    /// Reads the configs, starts the upstreams (unless simulate mode needs none) and builds
    /// the world model. Refuses what cannot work before any client connects.
    pub async fn start(spec: ProxySpec) -> Result<Self> {
        refuse_meaningless(&spec)?;
        let mut config = spec.config.clone();
        let world_model = world_model_of(&spec, &mut config)?;
        // Sessions are recorded there: a folder that cannot be made fails now, not at a
        // client's first call.
        std::fs::create_dir_all(&spec.out_dir)
            .with_context(|| format!("creating {}", spec.out_dir.display()))?;
        let mcp = McpConfig::load(&spec.mcp_config)?;
        let chosen = if spec.servers.is_empty() {
            mcp.servers.clone()
        } else {
            spec.servers
                .iter()
                .map(|name| mcp.get(name).cloned())
                .collect::<Result<Vec<_>>>()?
        };
        if chosen.is_empty() {
            bail!("{} names no server", spec.mcp_config.display());
        }
        let needs_upstream = spec.tools_from.is_none() || spec.on_miss == OnMiss::Real;
        // A server's request for input, for a sampled message or for roots goes to the client
        // whose call it came during; its notifications to the clients they are for.
        let clients = Arc::new(clients::Clients::default());
        elicit::forward_to_clients(clients.clone());
        cosmos_engine::mcp::relay_through(Arc::new(relay::ToClients::all(clients.clone())))?;
        // A stateful upstream works on a copy of its state for as long as the proxy runs
        // (its client decides what it may change: no refusal here).
        let mut chosen = chosen;
        let sandboxes = cosmos_engine::mcp::prepare_sandboxes(&mut chosen)?;
        let (pool, failures) = if needs_upstream {
            let (pool, failures) = McpPool::connect(&chosen, spec.timeouts).await;
            (Some(Arc::new(pool)), failures)
        } else {
            (None, Vec::new())
        };
        let (tools, servers) = match &spec.tools_from {
            Some(run) => recorded_tools(
                run,
                &chosen.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            )?,
            None => {
                let pool = pool.as_ref().expect("upstreams were started");
                if pool.servers().is_empty() {
                    let why: Vec<String> = failures
                        .iter()
                        .map(|f| format!("{}: {}", f.name, f.message))
                        .collect();
                    bail!(
                        "{}: {}",
                        cosmos_engine::agent::NO_SERVER_STARTED,
                        why.join("; ")
                    );
                }
                (pool.tools(), pool.server_infos())
            }
        };
        let own_sessions = own_sessions_of(pool.as_deref(), &chosen);
        let server_names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
        let catalog = Catalog::new(tools, &server_names)?;
        let offer = offer_of(pool.as_deref(), &own_sessions, spec.timeouts, &clients).await?;
        let mut redactor = cosmos_engine::agent::run_redactor(&config, &mcp);
        for secret in &spec.secrets {
            redactor.add_secret(secret.clone());
        }
        let settings = recorded_settings(&spec);
        let mut roles = BTreeMap::new();
        if spec.world_model == "llm" {
            roles.insert(
                Role::WorldModel.as_str().to_string(),
                config.llm.endpoint(Role::WorldModel).info(),
            );
        }
        Ok(Self {
            mode: spec.mode,
            on_miss: spec.on_miss,
            go_real_below: spec.go_real_below,
            routing: spec.routing.clone(),
            simulate_writes: spec.simulate_writes,
            catalog,
            pool,
            failures,
            own_sessions,
            timeouts: spec.timeouts,
            own_session_slots: Arc::new(tokio::sync::Semaphore::new(MAX_OPEN_SESSIONS)),
            world_model,
            servers,
            task: TaskInfo {
                id: spec.task_id.unwrap_or_else(|| DEFAULT_TASK_ID.into()),
                request: spec.task_request.unwrap_or_default(),
                source: Some("cosmos proxy".into()),
                ..Default::default()
            },
            label: spec.label,
            out_dir: spec.out_dir,
            redactor,
            settings,
            roles,
            clients,
            offer,
            sandboxes: Arc::new(sandboxes),
            sessions: Mutex::new(Some(Vec::new())),
            session_idle: spec.session_idle,
            sessionless: Mutex::new(HashMap::new()),
            session_closed: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// The world model's name (`none` without one).
    pub fn world_model_name(&self) -> String {
        self.world_model
            .as_ref()
            .map_or_else(|| "none".into(), |w| w.name())
    }

    /// Rehearses a call in the world model as every agent does (`agent::rehearse`), after
    /// `history`, as `node` at `depth` in the session's chain.
    pub async fn rehearse(
        &self,
        call: &PlannedCall,
        history: &[HistoryStep],
        at: (cosmos_trajectory::event::NodeId, u32),
    ) -> Rehearsal {
        let Some(world_model) = &self.world_model else {
            unreachable!("only shadow and simulate rehearse, and both have a world model");
        };
        let env = Predicting {
            world_model: world_model.as_ref(),
            tools: self.catalog.tools(),
            request: &self.task.request,
        };
        agent::rehearse(
            &env,
            &cosmos_engine::agent::Settings::chain(),
            history,
            &call.action(),
            at,
        )
        .await
    }

    /// The run a request of a client with no session belongs to: the one its client's earlier
    /// requests opened, while it is open (the idle bound closes it: then a new one).
    pub(crate) fn sessionless_session(&self, arrival: &Arrival) -> Result<Arc<Session>> {
        let key = arrival.sessionless.clone().unwrap_or_default();
        let mut runs = self.sessionless.lock().unwrap_or_else(|p| p.into_inner());
        runs.retain(|_, run| !run.is_closed());
        if let Some(open) = runs.get(&key) {
            return Ok(open.clone());
        }
        let opened = self.open_session(arrival)?;
        runs.insert(key, opened.clone());
        Ok(opened)
    }

    /// Opens a client's session (its file), within reach of [`Setup::close_all`]; refused once
    /// the proxy is stopping.
    pub(crate) fn open_session(&self, arrival: &Arrival) -> Result<Arc<Session>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let Some(sessions) = sessions.as_mut() else {
            bail!("the proxy is stopping");
        };
        sessions.retain(|s| s.strong_count() > 0);
        let open = sessions
            .iter()
            .filter(|s| s.upgrade().is_some_and(|s| !s.is_closed()))
            .count();
        if open >= MAX_OPEN_SESSIONS {
            bail!(
                "{open} sessions are open, the most one proxy records at once: a new one is \
                 refused until one ends{}",
                self.session_idle.map_or(String::new(), |idle| format!(
                    " (a session idle for {}s is ended)",
                    idle.as_secs()
                ))
            );
        }
        let (header, client_name) = self.header_for(arrival);
        let client_name = client_name.as_str();
        let file = cosmos_engine::agent::run_file_name(
            if self.task.id == DEFAULT_TASK_ID {
                client_name
            } else {
                &self.task.id
            },
            AgentKind::External,
            header.world_model_name(),
        );
        let base = self.out_dir.join(file);
        let session = Arc::new(Session::create(Start {
            header,
            base,
            redactor: self.redactor.clone(),
            failures: &self.failures,
            predicts: self.world_model.is_some(),
            closed: self.session_closed.clone(),
            sandboxes: self.sandboxes.clone(),
        })?);
        sessions.push(Arc::downgrade(&session));
        if let Some(bound) = self.session_idle {
            tokio::spawn(Session::close_when_idle(Arc::downgrade(&session), bound));
        }
        Ok(session)
    }

    /// The header of a new session's run: the client as it named itself (kept short, whatever
    /// it sent) as the planner, the proxy's settings, servers (a shared sandbox's state as it is
    /// now) and tools; with the client's short name.
    fn header_for(&self, arrival: &Arrival) -> (Header, String) {
        let client = arrival.client.as_ref();
        // The client names itself: kept short, whatever it sent.
        let short = |text: &str| text.trim().chars().take(CLIENT_CHARS).collect::<String>();
        let client_name = client
            .map(|c| short(&c.name))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| UNKNOWN_CLIENT.to_string());
        let client_version = client.map(|c| short(&c.version)).unwrap_or_default();
        let mut settings = self.settings.clone();
        settings.insert(
            "client".into(),
            json!({"name": client_name, "version": client.map(|_| client_version.as_str())}),
        );
        if let Some(protocol) = &arrival.protocol {
            settings.insert("protocol".into(), json!(protocol));
        }
        if arrival.sessionless.is_some() {
            settings.insert("sessionless".into(), json!(true));
        }
        let started = chrono::Utc::now();
        let mut header = Header::new(
            format!(
                "{}-{}-external-{:08x}",
                started.format("%Y%m%dT%H%M%S%.3fZ"),
                cosmos_trajectory::writer::file_safe(&client_name, 40),
                fastrand::u32(..)
            ),
            self.task.clone(),
            AgentInfo {
                kind: AgentKind::External,
                settings,
            },
            // The planner is the client's own agent: all cosmos knows of it is its name.
            ModelInfo {
                model: if client_version.is_empty() {
                    client_name.to_string()
                } else {
                    format!("{client_name} {client_version}")
                },
                base_url: None,
            },
        );
        header.world_model = self.world_model.as_ref().map(|w| w.describe());
        header.roles = self.roles.clone();
        header.servers = self.servers.clone();
        // The era each upstream spoke to this client: its own session's, where it has one.
        for (server, protocol) in &arrival.own_protocols {
            if let Some(info) = header.servers.iter_mut().find(|i| &i.name == server) {
                info.protocol = protocol.clone();
            }
        }
        // A stateful upstream's copy is the proxy's, shared by its sessions: each starts from
        // what the sessions before it left, said by `shared` and its own start digest.
        for info in &mut header.servers {
            if let Some(sandbox) = self.sandboxes.iter().find(|b| b.server == info.name) {
                let (digest, state) = sandbox.now();
                info.shared = true;
                info.start_digest = digest;
                info.start_state = state.map(Box::new);
                info.seed_removed = sandbox.removed.clone();
            }
        }
        header.tools = self.catalog.tools().to_vec();
        header.label = self.label.clone();
        (header, client_name)
    }

    /// Sessions still open (not yet ended in their file).
    pub fn open_sessions(&self) -> Vec<Arc<Session>> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions
            .iter()
            .flatten()
            .filter_map(Weak::upgrade)
            .filter(|s| !s.is_closed())
            .collect()
    }

    /// Waits until every session has ended in its file.
    pub(super) async fn all_closed(&self) {
        loop {
            let closed = self.session_closed.notified();
            tokio::pin!(closed);
            // Registered before looking, so an end between the look and the wait is seen.
            closed.as_mut().enable();
            if self.open_sessions().is_empty() {
                return;
            }
            closed.await;
        }
    }

    /// Ends every open session with `status` and `ending`.
    pub fn close_all(&self, status: RunStatus, ending: Ending) {
        for session in self.open_sessions() {
            session.close(status, ending);
        }
    }

    /// A stop: every open session ends as interrupted, and none opens after it (a client's
    /// call still arriving would leave a file with nothing in it).
    pub fn stop(&self) {
        let open = self.open_sessions();
        *self.sessions.lock().unwrap_or_else(|p| p.into_inner()) = None;
        for session in open {
            session.close(RunStatus::Interrupted, Ending::Interrupted);
        }
    }
}

/// A recorded run's catalogue and servers, those of `servers` only.
fn recorded_tools(run: &Path, servers: &[String]) -> Result<(Vec<ToolInfo>, Vec<ServerInfo>)> {
    let stream =
        EventStream::open(run).with_context(|| format!("--tools-from {}", run.display()))?;
    let header = stream.header();
    let recorded: Vec<ServerInfo> = header
        .servers
        .iter()
        .filter(|s| servers.contains(&s.name))
        .cloned()
        .collect();
    let tools: Vec<ToolInfo> = header
        .tools
        .iter()
        .filter(|t| {
            recorded
                .iter()
                .any(|s| own_tool_name(&t.name, &s.name).is_some())
        })
        .cloned()
        .collect();
    if tools.is_empty() {
        bail!(
            "--tools-from {}: the run has no tools of {} (its servers: {})",
            run.display(),
            servers.join(", "),
            header
                .servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok((tools, recorded))
}

/// The rehearsal's environment: the world model and the catalogue; nobody plans or criticises.
struct Predicting<'a> {
    world_model: &'a dyn WorldModel,
    tools: &'a [ToolInfo],
    request: &'a str,
}

impl SearchEnv for Predicting<'_> {
    fn propose<'a>(
        &'a self,
        _history: &'a [HistoryStep],
        _k: usize,
        _feedback: Option<&'a str>,
    ) -> Answer<'a, Result<Proposal, String>> {
        Box::pin(async {
            (
                Err("the proxy's client plans, not cosmos".into()),
                Vec::new(),
            )
        })
    }

    /// The real server judges the client's calls: none is refused here.
    fn invalid(&self, _tool: &str, _arguments: &Value) -> Option<String> {
        None
    }

    fn simulate<'a>(
        &'a self,
        history: &'a [HistoryStep],
        tool: &'a str,
        arguments: &'a Value,
    ) -> Answer<'a, Result<Prediction, String>> {
        Box::pin(async move {
            let predicted = agent::predict(
                self.world_model,
                self.tools,
                self.request,
                history,
                tool,
                arguments,
                &Default::default(),
            )
            .await;
            (predicted.answer, predicted.events)
        })
    }

    fn critique<'a>(
        &'a self,
        _history: &'a [HistoryStep],
        _action: &'a Action,
        _observation: Option<&'a Observation>,
    ) -> Answer<'a, Option<Critique>> {
        Box::pin(async { (None, Vec::new()) })
    }

    fn should_stop(&self) -> Option<Stopped> {
        None
    }

    fn world_model_name(&self) -> String {
        self.world_model.name()
    }
}

/// How a proxy ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Its client closed the session (stdio).
    ClientClosed,
    /// A signal stopped it.
    Signalled,
}
