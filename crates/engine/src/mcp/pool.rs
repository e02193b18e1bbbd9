//! Several servers at once, behind one namespaced tool catalogue (`server:tool`).
//!
//! Several servers started concurrently; the failures come back beside the pool, so a
//! run can go on without a server (the session records them as `error` events). Calls are routed
//! by the tool's exact name. Each server sits in a slot that `restart` can refill when it died:
//! `cosmos proxy` does, an agent's run never does. The agent sees the pool through its `ToolHost` port.
//! `connect_sharing` takes a sweep worker's shared servers instead of starting them, and its
//! `shutdown` leaves those running.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::mcp_json::ServerConfig;
use super::server::{CallOutcome, ClientRound, OnProgress, Server, ServerFailure};
use cosmos_trajectory::event::{ServerInfo, ToolInfo, own_tool_name};

pub use super::server::Timeouts;

/// The connected servers. A server is held in a slot so a long-lived client (`cosmos proxy`)
/// can start a dead one again ([`McpPool::restart`]); an agent's run never does (MCP-Bench's
/// servers stay down once they fail).
#[derive(Debug, Default)]
pub struct McpPool {
    servers: Vec<RwLock<Arc<Server>>>,
    configs: Vec<ServerConfig>,
    /// The servers taken from a worker's shared ones (not this pool's to stop).
    shared: Vec<String>,
    timeouts: Timeouts,
    /// One restart at a time, so two calls that find a server dead start it once.
    restarting: tokio::sync::Mutex<()>,
    /// One call at a time on a sandboxed server's state, so a change is its call's alone.
    watching: tokio::sync::Mutex<()>,
    /// The one client of `cosmos proxy` these connections were made for, when they were.
    for_client: Option<ForClient>,
}

/// Where the traffic of connections made for one client goes.
#[derive(Clone)]
struct ForClient(Arc<dyn super::unasked::Relay>);

impl std::fmt::Debug for ForClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ForClient")
    }
}

impl McpPool {
    /// Starts every server concurrently. Servers that fail are returned beside the pool;
    /// the run can go on without them.
    pub async fn connect(
        configs: &[ServerConfig],
        timeouts: Timeouts,
    ) -> (Self, Vec<ServerFailure>) {
        Self::connect_sharing(configs, timeouts, None).await
    }

    /// [`McpPool::connect`], taking the servers `shared` shares from it (started there once,
    /// used by one run after another) instead of starting them. Shutting the pool down
    /// leaves those running.
    pub async fn connect_sharing(
        configs: &[ServerConfig],
        timeouts: Timeouts,
        shared: Option<&super::shared::SharedServers>,
    ) -> (Self, Vec<ServerFailure>) {
        let attempts = futures::future::join_all(configs.iter().map(|c| async move {
            match shared.filter(|s| s.shares(c)) {
                Some(shared) => shared.get(c, timeouts).await,
                None => Server::connect(c, timeouts.startup, timeouts.elicitation)
                    .await
                    .map(Arc::new),
            }
        }))
        .await;
        Self::of(configs, timeouts, attempts, shared, None)
    }

    /// The servers of `configs` for one client of `cosmos proxy`, each in a session of its own
    /// in the handshake era (`Server::connect_for_client`), what they send unasked going to
    /// `relay`; started again, when dead, the same way.
    pub async fn connect_for_client(
        configs: &[ServerConfig],
        timeouts: Timeouts,
        relay: Arc<dyn super::unasked::Relay>,
    ) -> (Self, Vec<ServerFailure>) {
        let attempts = futures::future::join_all(configs.iter().map(|c| {
            let relay = relay.clone();
            async move {
                Server::connect_for_client(c, timeouts.startup, timeouts.elicitation, relay)
                    .await
                    .map(Arc::new)
            }
        }))
        .await;
        Self::of(configs, timeouts, attempts, None, Some(ForClient(relay)))
    }

    /// A pool of what was started.
    fn of(
        configs: &[ServerConfig],
        timeouts: Timeouts,
        attempts: Vec<Result<Arc<Server>, ServerFailure>>,
        shared: Option<&super::shared::SharedServers>,
        for_client: Option<ForClient>,
    ) -> (Self, Vec<ServerFailure>) {
        let mut pool = Self {
            servers: Vec::new(),
            configs: configs.to_vec(),
            shared: configs
                .iter()
                .filter(|c| shared.is_some_and(|s| s.shares(c)))
                .map(|c| c.name.clone())
                .collect(),
            timeouts,
            restarting: tokio::sync::Mutex::new(()),
            watching: tokio::sync::Mutex::new(()),
            for_client,
        };
        let mut failures = Vec::new();
        for attempt in attempts {
            match attempt {
                Ok(s) => pool.servers.push(RwLock::new(s)),
                Err(f) => failures.push(f),
            }
        }
        (pool, failures)
    }

    /// The server in a slot (a clone of its handle: no lock is held across an await).
    fn current(slot: &RwLock<Arc<Server>>) -> Arc<Server> {
        slot.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The servers, as recorded in a trajectory header.
    pub fn server_infos(&self) -> Vec<ServerInfo> {
        self.configs
            .iter()
            .map(|c| ServerInfo {
                name: c.name.clone(),
                transport: c.transport_name().into(),
                target: Some(c.target()),
                shared: self.shared.contains(&c.name),
                start_digest: None,
                start_state: None,
                seed_removed: Vec::new(),
                protocol: self
                    .servers()
                    .iter()
                    .find(|s| s.name == c.name)
                    .and_then(|s| s.protocol_version()),
            })
            .collect()
    }

    /// Every tool of every running server.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.servers
            .iter()
            .flat_map(|s| Self::current(s).tools.clone())
            .collect()
    }

    /// The connected servers.
    pub fn servers(&self) -> Vec<Arc<Server>> {
        self.servers.iter().map(Self::current).collect()
    }

    /// The server that offers `tool` (its exact namespaced name).
    pub fn server_of(&self, tool: &str) -> Option<Arc<Server>> {
        self.servers
            .iter()
            .map(Self::current)
            .find(|server| server.tools.iter().any(|t| t.name == tool))
    }

    /// Starts the server `name` again if it is dead (its process gone); a server another call
    /// restarted meanwhile is left alone. The old connection is stopped.
    pub async fn restart(&self, name: &str) -> Result<(), ServerFailure> {
        let _one = self.restarting.lock().await;
        let slot = self.servers.iter().find(|s| Self::current(s).name == name);
        let (Some(slot), Some(config)) = (slot, self.configs.iter().find(|c| c.name == name))
        else {
            return Err(ServerFailure {
                name: name.to_string(),
                message: "no such server in the pool".into(),
                stderr_tail: None,
            });
        };
        if Self::current(slot).failure().is_none() {
            return Ok(());
        }
        let (startup, elicitation) = (self.timeouts.startup, self.timeouts.elicitation);
        let fresh = Arc::new(match &self.for_client {
            Some(ForClient(relay)) => {
                Server::connect_for_client(config, startup, elicitation, relay.clone()).await?
            }
            None => Server::connect(config, startup, elicitation).await?,
        });
        let old = std::mem::replace(&mut *slot.write().unwrap_or_else(|p| p.into_inner()), fresh);
        if let Some(old) = Arc::into_inner(old) {
            old.shutdown().await;
        }
        Ok(())
    }

    /// Calls a namespaced tool, found by its exact name in the catalogue (a server's name may
    /// itself hold a `:`). An unknown tool is an error outcome, not a panic.
    pub async fn call(&self, tool: &str, arguments: &Value) -> (Option<String>, CallOutcome) {
        self.call_watching(tool, arguments, None).await
    }

    /// [`McpPool::call`], telling `on_progress` of the server's progress reports meanwhile.
    pub async fn call_watching(
        &self,
        tool: &str,
        arguments: &Value,
        on_progress: OnProgress<'_>,
    ) -> (Option<String>, CallOutcome) {
        self.call_for(tool, arguments, on_progress, None).await
    }

    /// [`McpPool::call_watching`] for a client of `cosmos proxy`, with what it sent beside the
    /// call (`Server::call_for`).
    pub async fn call_for(
        &self,
        tool: &str,
        arguments: &Value,
        on_progress: OnProgress<'_>,
        round: Option<&ClientRound>,
    ) -> (Option<String>, CallOutcome) {
        let found = self.servers.iter().map(Self::current).find_map(|server| {
            let own = own_tool_name(tool, &server.name)?.to_string();
            server
                .tools
                .iter()
                .any(|t| t.name == tool)
                .then_some((server, own))
        });
        let Some((server, own)) = found else {
            return (None, unknown_tool(tool));
        };
        let state = self
            .configs
            .iter()
            .find(|c| c.name == server.name)
            .and_then(|c| c.state_root.as_deref());
        let Some(state) = state else {
            let outcome = server
                .call_for(&own, arguments, self.timeouts.call, on_progress, round)
                .await;
            return (Some(server.name.clone()), outcome);
        };
        // One call at a time on watched state, so each change is its own call's.
        let _alone = self.watching.lock().await;
        let before = read_state(state).await;
        let mut outcome = server
            .call_for(&own, arguments, self.timeouts.call, on_progress, round)
            .await;
        match (before, read_state(state).await) {
            (Ok(before), Ok(after)) => {
                outcome.state_change = Some(Box::new(super::state_view::change(&before, &after)));
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(server = %server.name, "the state was not read around a call: {e:#}");
            }
        }
        (Some(server.name.clone()), outcome)
    }

    /// Stops every server (one still held by a call in flight is killed when that lets go).
    pub async fn shutdown(self) {
        let servers = self.servers.into_iter().filter_map(|slot| {
            Arc::into_inner(slot.into_inner().unwrap_or_else(|p| p.into_inner()))
        });
        futures::future::join_all(servers.map(Server::shutdown)).await;
    }
}

/// A sandboxed state read as fields off the async threads (a database or a folder of up to
/// `state_view::READ_BYTES` is file work).
async fn read_state(
    root: &std::path::Path,
) -> anyhow::Result<cosmos_trajectory::event::StateFields> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || super::state_view::read(&root))
        .await
        .unwrap_or_else(|e| Err(anyhow::anyhow!("reading the state stopped: {e}")))
}

/// The failed call of a tool no server offers: like MCP-Bench's executor, the call is
/// recorded as made and failed (it counts against the success rate, not only the name rate).
pub fn unknown_tool(tool: &str) -> CallOutcome {
    let message =
        format!("unknown tool \"{tool}\": no running server offers it (names are \"server:tool\")");
    CallOutcome::failure(message, Duration::ZERO)
}
