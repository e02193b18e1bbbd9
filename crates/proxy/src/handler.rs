//! The MCP server a client talks to: rmcp's `ServerHandler` over the proxy's [`Setup`]. Each
//! handler is one client session (stdio has one; streamable HTTP makes one per session), and
//! opens its [`Session`] at the client's first call, named as its `initialize` named it.
//!
//! The rmcp `ServerHandler`: `list_tools`, `call_tool` by mode (shadow's prediction
//! spawned beside the real call; hybrid's awaited first, the answer when its confidence is at
//! least `--go-real-below` on a read-only tool, else the real call paired with it), results passed
//! through unchanged or built from a prediction; a cancelled call dropped (rmcp then cancels it
//! upstream) and recorded as cut off; everything else (prompts, resources, completion,
//! `setLevel`, roots changes) handed to `offer.rs`, a prompt get and a resource read recorded in
//! the client's session (`prompt_got`, `resource_read`, one `Exchange` shape). Invariant: every notification a server sends
//! before a call's result reaches the client first: `mcp::server` waits, once the result is in,
//! until every notification that had arrived is handled (`mcp::arrivals`), and the handler
//! flushes the client's outbox before it replies.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotification, ProgressNotificationParam,
    ProgressToken, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ResultType,
    ServerCapabilities, ServerConfig, ServerNotification, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
// Logging is deprecated by the 2026-07-28 protocol (SEP-2577); earlier clients use it.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use super::client_session::Session;
use super::clients::Client;
use super::offer::Asker;
use super::setup::{Arrival, ClientAddress};
use super::setup::{
    META_CONFIDENCE, META_MISS, META_SIMULATED, META_WENT_REAL, META_WORLD_MODEL, Mode, OnMiss,
    Setup,
};
use super::wire::{Wire, Wires};
use cosmos_engine::agent::PlannedCall;
use cosmos_engine::agent::Rehearsal;
use cosmos_engine::mcp::McpPool;
use cosmos_engine::mcp::{CallOutcome, ClientRound, Progress};
use cosmos_trajectory::event::{AnsweredBy, EventBody, Exchange, Observation};

/// Longest wait, once a call's result is in, for the notifications its server sent before it
/// (progress, log messages) to reach the client before the result does.
const PROGRESS_FLUSH: std::time::Duration = std::time::Duration::from_secs(2);

/// One client session's server.
pub struct ProxyHandler {
    setup: Arc<Setup>,
    /// The session being recorded; held while one is opened, so calls that come at once open
    /// one file.
    session: std::sync::Mutex<Option<Arc<Session>>>,
    /// The client, once it has said who it is (or made its first request).
    client: std::sync::OnceLock<Arc<Client>>,
    /// The session's protocol log, once known.
    wire: std::sync::OnceLock<Arc<Wire>>,
    /// Where an HTTP session's log is found by the session's id.
    wires: Option<Arc<Wires>>,
    /// This client's own sessions with the upstreams that take one (`Setup::own_sessions`),
    /// made at its first request that reaches an upstream; `None` for a client of the
    /// stateless era, or when there are none to make.
    own: tokio::sync::OnceCell<Option<OwnUpstreams>>,
}

/// A client's own upstream sessions, and its place among the [`Setup`]'s bounded number of
/// such clients.
struct OwnUpstreams {
    pool: Arc<McpPool>,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for ProxyHandler {
    /// The client's own upstream sessions end with its session (a stdio server's process
    /// stopped as at the proxy's end).
    fn drop(&mut self) {
        let own = self
            .own
            .take()
            .flatten()
            .and_then(|own| Arc::into_inner(own.pool));
        if let (Some(own), Ok(runtime)) = (own, tokio::runtime::Handle::try_current()) {
            runtime.spawn(own.shutdown());
        }
    }
}

impl ProxyHandler {
    /// A handler for a new client session.
    pub fn new(setup: Arc<Setup>) -> Self {
        Self {
            session: std::sync::Mutex::new(None),
            client: std::sync::OnceLock::new(),
            wire: std::sync::OnceLock::new(),
            wires: None,
            own: tokio::sync::OnceCell::new(),
            setup,
        }
    }

    /// This handler, its session's protocol written to `wire` (stdio's one client).
    pub fn with_wire(self, wire: Arc<Wire>) -> Self {
        let _ = self.wire.set(wire);
        self
    }

    /// This handler, its session's protocol log found in `wires` by its HTTP session's id.
    pub fn with_wires(mut self, wires: Arc<Wires>) -> Self {
        self.wires = Some(wires);
        self
    }

    /// The session's protocol log: the one it was given, or its HTTP session's.
    fn wire(&self, context: &RequestContext<RoleServer>) -> Option<Arc<Wire>> {
        if let Some(wire) = self.wire.get() {
            return Some(wire.clone());
        }
        let parts = context.extensions.get::<hyper::http::request::Parts>()?;
        let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
        let wire = self.wires.as_ref()?.of(id)?;
        Some(self.wire.get_or_init(|| wire).clone())
    }

    /// This session's client, noted among the proxy's clients the first time.
    fn client(&self, peer: &rmcp::Peer<RoleServer>) -> Arc<Client> {
        self.client
            .get_or_init(|| {
                let client = Client::new(peer.clone());
                self.setup.clients.connected(&client);
                client
            })
            .clone()
    }

    /// This client as the one asking an upstream (a prompt, a read, a completion, a
    /// subscription): the offer notes it at the server it asks, for as long as it asks.
    fn asker(&self, context: &RequestContext<RoleServer>) -> Asker<'_> {
        Asker {
            clients: &self.setup.clients,
            client: self.client(&context.peer),
            meta: Some(upstream_meta(context.meta.clone())),
        }
    }

    /// Notes that this client is asking every upstream something (a level, which each is
    /// told) until the guards drop: what a server says meanwhile is told to it, not to other
    /// clients.
    fn asking(&self, context: &RequestContext<RoleServer>) -> Vec<super::clients::Calling<'_>> {
        let client = self.client(&context.peer);
        let servers = self.setup.pool.as_deref().map(McpPool::servers);
        servers
            .unwrap_or_default()
            .iter()
            .map(|server| self.setup.clients.calling(&server.name, client.clone()))
            .collect()
    }

    /// The upstreams, or the error a client gets for what only they can answer (simulate mode
    /// with `--tools-from` runs none).
    fn upstreams(&self) -> Result<&cosmos_engine::mcp::McpPool, McpError> {
        self.setup.pool.as_deref().ok_or_else(|| {
            McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "cosmos proxy runs no upstream server here (simulate mode with --tools-from): \
                 it offers tools only",
                None,
            )
        })
    }

    /// This client's own upstream sessions (`Setup::own_sessions`), made now if they are not
    /// yet: only for a client of the handshake era, whose requests come over a session of its
    /// own, and for at most [`super::setup::MAX_OPEN_SESSIONS`] clients at once (each may hold a
    /// process per upstream). A server that cannot be reached so, or a client past the bound,
    /// reaches it over the shared connection instead, and the proxy's log says so.
    async fn own_upstreams(&self, context: &RequestContext<RoleServer>) -> Option<Arc<McpPool>> {
        if self.setup.own_sessions.is_empty() || !self.speaks_handshake(context) {
            return None;
        }
        let client = self.client(&context.peer);
        let own = self
            .own
            .get_or_init(|| async {
                let Ok(slot) = self.setup.own_session_slots.clone().try_acquire_owned() else {
                    tracing::warn!(
                        "{} shares the proxy's upstream connections: {} clients already have \
                         sessions of their own",
                        client.name(),
                        super::setup::MAX_OPEN_SESSIONS
                    );
                    return None;
                };
                let relay = Arc::new(super::relay::ToClients::one(
                    self.setup.clients.clone(),
                    client.clone(),
                ));
                let (pool, failures) = McpPool::connect_for_client(
                    &self.setup.own_sessions,
                    self.setup.timeouts,
                    relay,
                )
                .await;
                for failed in failures {
                    tracing::warn!(
                        "{}: no session of its own for {}, which shares the proxy's: {}",
                        failed.name,
                        client.name(),
                        failed.message
                    );
                }
                Some(OwnUpstreams {
                    pool: Arc::new(pool),
                    _slot: slot,
                })
            })
            .await;
        own.as_ref().map(|own| own.pool.clone())
    }

    /// The client's own upstream sessions, if they were made.
    fn own_pool(&self) -> Option<Arc<McpPool>> {
        self.own.get()?.as_ref().map(|own| own.pool.clone())
    }

    /// True when the request comes from a client of the handshake era (over a session of its
    /// own); a request of the stateless era says its version in its `_meta`.
    fn speaks_handshake(&self, context: &RequestContext<RoleServer>) -> bool {
        let version = context
            .meta
            .protocol_version()
            .or_else(|| context.peer.peer_info().map(|i| i.protocol_version.clone()));
        version.is_some_and(|v| v.has_initialize())
    }

    /// The upstream servers as this client reaches them: its own sessions where it has them,
    /// the shared ones otherwise.
    async fn servers(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Vec<Arc<cosmos_engine::mcp::Server>>, McpError> {
        let shared = self.upstreams()?.servers();
        let Some(own) = self.own_upstreams(context).await else {
            return Ok(shared);
        };
        let own = own.servers();
        Ok(shared
            .into_iter()
            .map(|s| own.iter().find(|o| o.name == s.name).cloned().unwrap_or(s))
            .collect())
    }

    /// The `_meta` a result the proxy makes carries for a client of the stateless era: the one
    /// upstream's `serverInfo`, as that server stamps each of its results (the handshake era
    /// said it once, at `initialize`).
    fn stamp(&self, context: &RequestContext<RoleServer>) -> Option<rmcp::model::MetaObject> {
        if self.speaks_handshake(context) {
            return None;
        }
        let info = serde_json::to_value(self.setup.offer.server_info()?).ok()?;
        let mut meta = rmcp::model::MetaObject::new();
        meta.insert("io.modelcontextprotocol/serverInfo".into(), info);
        Some(meta)
    }

    /// What the client sent beside its call, to go upstream with it: its `_meta` (for a
    /// client of the handshake era, the capabilities it declared at `initialize`, which a
    /// server of the stateless era reads there), its answers to the server's last requests for
    /// input, and whether it answers such requests itself (the stateless era) or the proxy
    /// puts them to it as the handshake era's requests.
    fn round(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> ClientRound {
        let mut meta = upstream_meta(context.meta.clone());
        if let Some(own) = &request.meta {
            meta.extend(upstream_meta(own.clone()));
        }
        let handshake = self.speaks_handshake(context);
        if handshake
            && meta.client_capabilities().is_none()
            && let Some(info) = context.peer.peer_info()
        {
            meta.set_client_capabilities(info.capabilities.clone());
        }
        ClientRound {
            meta: Some(meta),
            input_responses: request.input_responses.clone(),
            request_state: request.request_state.clone(),
            answers_input: !handshake,
        }
    }

    /// The session, opened at the first call (with the client its `initialize` named), and
    /// again at a call after the proxy closed it for idleness: the client's new stretch of
    /// work is a new run. A client with no session (the stateless era over HTTP, where each
    /// request comes alone) joins the run its earlier requests opened.
    fn session(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Session>, McpError> {
        let mut held = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(session) = held.as_ref().filter(|s| !s.is_closed()) {
            return Ok(session.clone());
        }
        let arrival = self.arrival(context);
        let opened = if arrival.sessionless.is_some() {
            self.setup.sessionless_session(&arrival)
        } else {
            self.setup.open_session(&arrival)
        }
        .map_err(|e| {
            McpError::internal_error(format!("cosmos proxy cannot record: {e:#}"), None)
        })?;
        if let Some(wire) = self.wire(context) {
            opened.keep_wire(&wire);
        }
        *held = Some(opened.clone());
        Ok(opened)
    }

    /// Who is asking: the client as its `initialize` named it, or (the stateless era) as the
    /// request's `_meta` does; over HTTP with no session, the key that joins its requests into
    /// one run (its name, version and address).
    fn arrival(&self, context: &RequestContext<RoleServer>) -> Arrival {
        // A request's own `_meta` first: over HTTP rmcp gives a sessionless request a peer
        // with a placeholder client.
        let peer = context.peer.peer_info();
        let client = context
            .meta
            .client_info()
            .or_else(|| peer.as_ref().map(|i| i.client_info.clone()));
        let protocol = context
            .meta
            .protocol_version()
            .or_else(|| peer.as_ref().map(|i| i.protocol_version.clone()));
        let sessionless = (self.wires.is_some()
            && protocol.as_ref().is_some_and(|p| !p.has_initialize()))
        .then(|| {
            let address = context
                .extensions
                .get::<hyper::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<ClientAddress>())
                .map(|a| a.0.to_string())
                .unwrap_or_default();
            // Cut as the run's header cuts them: a client's words take bounded room here.
            let short = |text: &str| {
                text.chars()
                    .take(super::setup::CLIENT_CHARS)
                    .collect::<String>()
            };
            let (name, version) = client
                .as_ref()
                .map(|c| (short(&c.name), short(&c.version)))
                .unwrap_or_default();
            format!("{name}\u{0}{version}\u{0}{address}")
        });
        let own_protocols = self
            .own_pool()
            .map(|own| {
                own.servers()
                    .iter()
                    .map(|s| (s.name.clone(), s.protocol_version()))
                    .collect()
            })
            .unwrap_or_default();
        Arrival {
            client,
            protocol: protocol.map(|p| p.to_string()),
            sessionless,
            own_protocols,
        }
    }

    /// Serves one `tools/call` as the proxy's mode says.
    async fn call(
        &self,
        name: &str,
        arguments: Value,
        session: Arc<Session>,
        caller: Caller,
    ) -> CallToolResult {
        let Some(tool) = self.setup.catalog.resolve(name) else {
            // Counted as MCP-Bench counts it: a call made, and failed.
            let outcome =
                CallOutcome::failure(self.setup.catalog.unknown(name), std::time::Duration::ZERO);
            let reply = reply_of(None, &outcome);
            let planned = PlannedCall {
                node: None,
                tool: name.to_string(),
                arguments,
            };
            self.recorded(session.real(None, planned, None, outcome));
            return reply;
        };
        let planned = PlannedCall {
            node: None,
            tool: tool.name.clone(),
            arguments,
        };
        match self.setup.mode {
            Mode::Record => self.real(&session, planned, caller).await,
            Mode::Shadow => self.shadowed(&session, planned, caller, "shadow").await,
            Mode::Hybrid => self.hybrid(&session, planned, caller).await,
            Mode::Simulate => self.simulate(&session, planned, caller).await,
        }
    }

    /// Calls the real server and records the call; the client gets the server's reply as it
    /// came, or a tool error naming the server.
    async fn real(
        &self,
        session: &Session,
        planned: PlannedCall,
        caller: Caller,
    ) -> CallToolResult {
        let Some(shared) = &self.setup.pool else {
            // Only simulate mode runs without upstreams, and it never asks for a real call
            // without one (`--on-miss real` needs them).
            return error_result("cosmos proxy: no upstream server is running", json!({}));
        };
        // Over the client's own session with the tool's server when it has one.
        let pool = match &caller.own {
            Some(own) if own.server_of(&planned.tool).is_some() => own,
            _ => shared,
        };
        self.revive(session, pool, &planned.tool).await;
        let ticket = session.sending(&planned);
        // The server's questions and log messages meanwhile go to this client.
        let server = pool.server_of(&planned.tool).map(|s| s.name.clone());
        let _calling = server
            .as_deref()
            .map(|server| self.setup.clients.calling(server, caller.client.clone()));
        // Progress is asked of the server only for a client that asked for it.
        let mut pass_on = caller.progress();
        let on_progress: cosmos_engine::mcp::OnProgress<'_> = match &mut pass_on {
            Some(tell) => Some(tell),
            None => None,
        };
        let started = std::time::Instant::now();
        // A client that cancels its call has the upstream's cancelled too (rmcp cancels a
        // request whose future is dropped); the call is recorded as cut off by the client.
        let called = pool.call_for(
            &planned.tool,
            &planned.arguments,
            on_progress,
            Some(&caller.round),
        );
        let (server, mut outcome) = tokio::select! {
            called = called => called,
            () = caller.cancelled.cancelled() => (
                server,
                CallOutcome::failure(CANCELLED_BY_CLIENT.into(), started.elapsed()),
            ),
        };
        // Everything the server sent before its result (progress, log messages) reaches the
        // client before it: the client's outbox is flushed first (a client too slow to take
        // them within PROGRESS_FLUSH does not hold the result back).
        let _ = tokio::time::timeout(PROGRESS_FLUSH, caller.client.flushed()).await;
        if let Some(asked) = outcome.input_required.as_deref() {
            match serde_json::from_value(asked.clone()) {
                Ok(asked) => {
                    let _ = caller.passed_on.set(PassedOn::AsksInput(asked));
                }
                Err(e) => tracing::warn!("an upstream's request for input did not read back: {e}"),
            }
        }
        if let Some(refused) = outcome.refused.as_deref() {
            let _ = caller.passed_on.set(PassedOn::Refused(refused.clone()));
        }
        let reply = match outcome.reply.take() {
            Some(reply) => *reply,
            None => reply_of(server.as_deref(), &outcome),
        };
        self.recorded(session.real(Some(ticket), planned, server, outcome));
        reply
    }

    /// Starts the server of `tool` again when an earlier call found it dead (a proxy outlives
    /// its servers' crashes), and records that it did, or why it could not: the call then says
    /// the server is not running.
    async fn revive(&self, session: &Session, pool: &McpPool, tool: &str) {
        let Some(server) = pool.server_of(tool).filter(|s| s.failure().is_some()) else {
            return;
        };
        let (message, stderr_tail) = match pool.restart(&server.name).await {
            Ok(()) => (
                "started again: it had stopped (whatever state it held is gone)".to_string(),
                None,
            ),
            Err(f) => (
                format!("could not be started again: {}", f.message),
                f.stderr_tail,
            ),
        };
        self.recorded(session.record(EventBody::Error {
            source: cosmos_trajectory::event::ErrorSource::Server,
            name: Some(server.name.clone()),
            message,
            stderr_tail,
            step: None,
        }));
    }

    /// Simulate mode: the world model answers; when it cannot, `--on-miss` says what the
    /// client gets.
    async fn simulate(
        &self,
        session: &Session,
        mut planned: PlannedCall,
        caller: Caller,
    ) -> CallToolResult {
        let (node, rehearsal) = match self.predicted_first(session, &mut planned).await {
            Ok(predicted) => predicted,
            Err(refused) => return refused,
        };
        self.recorded(session.rehearsed(node, &planned, &rehearsal, true));
        let world_model = self.setup.world_model_name();
        let confidence = rehearsal.confidence();
        if let Some(predicted) = rehearsal.prediction() {
            self.recorded(session.routed(node, AnsweredBy::WorldModel, None, confidence, None));
            let schema = self
                .setup
                .catalog
                .tools()
                .iter()
                .find(|t| t.name == planned.tool)
                .and_then(|t| t.output_schema.as_deref());
            return simulated_result(predicted, &world_model, schema);
        }
        let why = failure_of(&rehearsal);
        match self.setup.on_miss {
            OnMiss::Error => error_result(
                &format!(
                    "cosmos proxy (simulate): the world model {world_model} could not predict \
                     this call, and no real server is called on a miss (--on-miss error): {why}"
                ),
                json!({META_SIMULATED: false, META_MISS: "error"}),
            ),
            OnMiss::Real => {
                self.recorded(session.routed(
                    node,
                    AnsweredBy::Real,
                    Some("no_prediction"),
                    confidence,
                    None,
                ));
                let mut reply = self.real(session, planned, caller).await;
                let meta = reply.meta.get_or_insert_with(Default::default);
                meta.0.insert(META_SIMULATED.into(), json!(false));
                meta.0.insert(META_MISS.into(), json!("real"));
                reply
            }
        }
    }

    /// Adds the call's node and has the world model rehearse it, before anything answers the
    /// client (simulate and hybrid modes): the node and the rehearsal, not yet recorded; the
    /// client's error result when the session cannot record.
    async fn predicted_first(
        &self,
        session: &Session,
        planned: &mut PlannedCall,
    ) -> Result<(cosmos_trajectory::event::NodeId, Rehearsal), CallToolResult> {
        let (node, depth) = session
            .add_node(&planned.tool, &planned.arguments)
            .map_err(|e| error_result(&format!("cosmos proxy cannot record: {e:#}"), json!({})))?;
        planned.node = Some(node);
        let history = session.history();
        let rehearsal = self.setup.rehearse(planned, &history, (node, depth)).await;
        Ok((node, rehearsal))
    }

    /// The real server answers while the world model predicts the call beside it (the client
    /// waits only for the real result; the prediction is recorded when it comes).
    async fn shadowed(
        &self,
        session: &Arc<Session>,
        mut planned: PlannedCall,
        caller: Caller,
        why: &str,
    ) -> CallToolResult {
        match session.add_node(&planned.tool, &planned.arguments) {
            Ok((node, depth)) => {
                planned.node = Some(node);
                self.recorded(session.routed(node, AnsweredBy::Real, Some(why), None, None));
                let (setup, session, call) = (self.setup.clone(), session.clone(), planned.clone());
                let history = session.history();
                tokio::spawn(async move {
                    let rehearsal = setup.rehearse(&call, &history, (node, depth)).await;
                    if let Err(e) = session.rehearsed(node, &call, &rehearsal, false) {
                        tracing::warn!("recording a prediction: {e:#}");
                    }
                });
            }
            Err(e) => tracing::warn!("recording a shadowed call: {e:#}"),
        }
        self.real(session, planned, caller).await
    }

    /// Hybrid mode: the world model answers a read-only tool's call when its confidence is at
    /// least `--go-real-below`; otherwise (unsure, no confidence, no prediction) the real server
    /// does, and its result is paired with the prediction as a shadowed call's is. A tool not
    /// annotated read-only goes real, shadowed, unless `--simulate-writes`.
    async fn hybrid(
        &self,
        session: &Arc<Session>,
        mut planned: PlannedCall,
        caller: Caller,
    ) -> CallToolResult {
        let tool = self
            .setup
            .catalog
            .tools()
            .iter()
            .find(|t| t.name == planned.tool);
        let read_only = tool.is_some_and(cosmos_trajectory::event::ToolInfo::read_only);
        if !read_only && !self.setup.simulate_writes {
            let mut reply = self
                .shadowed(session, planned, caller, "not_read_only")
                .await;
            let meta = reply.meta.get_or_insert_with(Default::default);
            meta.0.insert(META_SIMULATED.into(), json!(false));
            meta.0.insert(META_WENT_REAL.into(), json!("not_read_only"));
            return reply;
        }
        let (node, rehearsal) = match self.predicted_first(session, &mut planned).await {
            Ok(predicted) => predicted,
            Err(refused) => return refused,
        };
        let confidence = rehearsal.confidence();
        // The tool's own threshold when routed by a file (none: never trusted), else one for all.
        let (sure, threshold) = match &self.setup.routing {
            Some(routing) => (
                routing.trusts(&planned.tool, confidence),
                routing.threshold(&planned.tool),
            ),
            None => (
                confidence.is_some_and(|c| c >= self.setup.go_real_below),
                Some(self.setup.go_real_below),
            ),
        };
        let given = rehearsal.prediction().filter(|_| sure);
        self.recorded(session.rehearsed(node, &planned, &rehearsal, given.is_some()));
        if let Some(predicted) = given {
            self.recorded(session.routed(
                node,
                AnsweredBy::WorldModel,
                None,
                confidence,
                threshold,
            ));
            let schema = tool.and_then(|t| t.output_schema.as_deref());
            let mut reply = simulated_result(predicted, &self.setup.world_model_name(), schema);
            let meta = reply.meta.get_or_insert_with(Default::default);
            meta.0.insert(META_CONFIDENCE.into(), json!(confidence));
            return reply;
        }
        let why = if rehearsal.prediction().is_none() {
            "no_prediction"
        } else {
            "unsure"
        };
        self.recorded(session.routed(node, AnsweredBy::Real, Some(why), confidence, threshold));
        let mut reply = self.real(session, planned, caller).await;
        let meta = reply.meta.get_or_insert_with(Default::default);
        meta.0.insert(META_SIMULATED.into(), json!(false));
        meta.0.insert(META_WENT_REAL.into(), json!(why));
        if let Some(c) = confidence {
            meta.0.insert(META_CONFIDENCE.into(), json!(c));
        }
        reply
    }

    /// Records a prompt get or resource read in the session (opened now if it is not yet: the
    /// client has done something worth a run), which from now on records what passes to the
    /// client beside its calls.
    fn recorded_exchange(
        &self,
        context: &RequestContext<RoleServer>,
        body: EventBody,
    ) -> Result<(), McpError> {
        let session = self.session(context)?;
        self.client(&context.peer).attach(&session);
        self.recorded(session.record(body));
        Ok(())
    }

    /// A recording that failed is logged: the client's result is real whatever the disk did.
    fn recorded(&self, result: anyhow::Result<()>) {
        if let Err(e) = result {
            tracing::error!("cosmos proxy could not record a call: {e:#}");
        }
    }
}

// Logging, subscriptions and roots are deprecated by the 2026-07-28 protocol (SEP-2577); the
// clients and servers of earlier versions a proxy stands between use them.
#[allow(deprecated)]
impl ServerHandler for ProxyHandler {
    /// The upstreams' capabilities and instructions (`Offer`), and the one upstream's
    /// `serverInfo` when there is one; without upstreams (simulate mode with `--tools-from`),
    /// tools and a line saying what the proxy stands for.
    fn get_info(&self) -> ServerConfig {
        let mut info = InitializeResult::new(self.setup.offer.capabilities());
        info.server_info = self
            .setup
            .offer
            .server_info()
            .unwrap_or_else(|| Implementation::new("cosmos-proxy", env!("CARGO_PKG_VERSION")));
        info.instructions = self.setup.offer.instructions();
        if self.setup.pool.is_none() {
            info.capabilities = ServerCapabilities::builder().enable_tools().build();
            info.instructions = Some(format!(
                "cosmos proxy ({}) standing in for: {}",
                self.setup.mode.as_str(),
                self.setup
                    .servers
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        info
    }

    /// Both eras: the handshake versions, where one client session is one trajectory, and the
    /// stateless 2026-07-28, where a run is one client's stretch of work (`Setup::sessionless_session`
    /// by client identity; docs/trajectory-format.md, "Proxy sessions").
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // The session is recorded from its first call: a client that only looks (lists
        // tools, as desktop clients do at every start) leaves no empty run behind.
        context.peer.set_peer_info(request.clone());
        let roots = request.capabilities.roots.is_some();
        self.client(&context.peer);
        // A server that asked for roots before any client had any asks again.
        if roots && let Some(pool) = self.setup.pool.clone() {
            tokio::spawn(async move {
                for server in pool.servers() {
                    let _ = server.peer().notify_roots_list_changed().await;
                }
            });
        }
        let mut result = self.negotiate_initialize(&request)?;
        if self.setup.pool.is_some() {
            result.capabilities = self.setup.offer.handshake_capabilities();
        }
        Ok(result)
    }

    async fn on_roots_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        if let Some(pool) = &self.setup.pool {
            for server in pool.servers() {
                let _ = server.peer().notify_roots_list_changed().await;
            }
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = self
            .setup
            .offer
            .list_prompts(&self.servers(&context).await?)
            .await?;
        let mut listed = ListPromptsResult::with_all_items(prompts);
        listed.meta = self.stamp(&context);
        Ok(listed)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let asked = json!({"name": request.name, "arguments": request.arguments});
        let started = std::time::Instant::now();
        let (server, got) = self
            .setup
            .offer
            .get_prompt(
                &self.servers(&context).await?,
                request,
                &self.asker(&context),
            )
            .await;
        let text = got.as_ref().map(|g| match g {
            GetPromptResponse::Complete(r) => messages_text(&r.messages),
            _ => "[the server asks for input first]".to_string(),
        });
        let exchange = exchange(server, asked, started, text);
        self.recorded_exchange(&context, EventBody::PromptGot(exchange))?;
        got.map(|got| match got {
            GetPromptResponse::Complete(mut r) => {
                r.result_type.get_or_insert(ResultType::COMPLETE);
                GetPromptResponse::Complete(r)
            }
            other => other,
        })
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resources = self
            .setup
            .offer
            .list_resources(&self.servers(&context).await?)
            .await?;
        let mut listed = ListResourcesResult::with_all_items(resources);
        listed.meta = self.stamp(&context);
        Ok(listed)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates = self
            .setup
            .offer
            .list_resource_templates(&self.servers(&context).await?)
            .await?;
        let mut listed = ListResourceTemplatesResult::with_all_items(templates);
        listed.meta = self.stamp(&context);
        Ok(listed)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let asked = json!({"uri": request.uri});
        let started = std::time::Instant::now();
        let (server, read) = self
            .setup
            .offer
            .read_resource(
                &self.servers(&context).await?,
                request,
                &self.asker(&context),
            )
            .await;
        let text = read.as_ref().map(|r| match r {
            ReadResourceResponse::Complete(r) => contents_text(&r.contents),
            _ => "[the server asks for input first]".to_string(),
        });
        let exchange = exchange(server, asked, started, text);
        self.recorded_exchange(&context, EventBody::ResourceRead(exchange))?;
        read.map(|read| match read {
            ReadResourceResponse::Complete(mut r) => {
                r.result_type.get_or_insert(ResultType::COMPLETE);
                ReadResourceResponse::Complete(r)
            }
            other => other,
        })
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let servers = self.servers(&context).await?;
        self.setup
            .offer
            .subscribe(&servers, &request.uri, true, &self.asker(&context))
            .await?;
        self.client(&context.peer).subscribe(&request.uri, true);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.client(&context.peer).subscribe(&request.uri, false);
        // Another client may still want its updates from a shared connection: the upstream
        // is left subscribed then. A session of this client's own is its alone.
        let servers = self.servers(&context).await?;
        let own = match self.own_pool() {
            Some(own) => {
                let holder = self
                    .setup
                    .offer
                    .resource_server(&servers, &request.uri)
                    .await;
                holder.is_ok_and(|h| own.servers().iter().any(|o| Arc::ptr_eq(o, &h)))
            }
            None => false,
        };
        let others = self
            .setup
            .clients
            .open()
            .iter()
            .any(|c| c.subscribed_to(&request.uri));
        if own || !others {
            self.setup
                .offer
                .subscribe(&servers, &request.uri, false, &self.asker(&context))
                .await?;
        }
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let mut completed = self
            .setup
            .offer
            .complete(
                &self.servers(&context).await?,
                request,
                &self.asker(&context),
            )
            .await?;
        completed.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(completed)
    }

    /// The client gets log messages from `level` up; each upstream is asked for the most
    /// detail any client connected wants (they share its connection).
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let _asking = self.asking(&context);
        self.client(&context.peer).set_level(request.level);
        let most_detail = self
            .setup
            .clients
            .open()
            .iter()
            .filter_map(|c| c.level())
            .min_by_key(|l| super::clients::severity(*l))
            .unwrap_or(request.level);
        // Its own sessions are told its level; the shared ones the most detail any wants.
        let servers = self.servers(&context).await?;
        let own = self.own_pool().map(|o| o.servers());
        let (own, shared): (Vec<_>, Vec<_>) = servers.into_iter().partition(|s| {
            own.as_ref()
                .is_some_and(|o| o.iter().any(|mine| Arc::ptr_eq(mine, s)))
        });
        self.setup.offer.set_level(&own, request.level).await?;
        self.setup.offer.set_level(&shared, most_detail).await
    }

    /// `subscriptions/listen` is relayed whenever there are upstreams (rmcp keeps of the
    /// filter what the proxy advertises, which is what they offer).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        self.setup.pool.as_ref().map(|_| requested.clone())
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        let servers = self.servers(context.request_context()).await?;
        self.setup.offer.listen(&servers, context).await
    }

    /// An offered tool by its offered name: rmcp's HTTP service checks a 2026-07-28 call's
    /// `Mcp-Param-*` headers against the `x-mcp-header` annotations of its schema (400 and
    /// -32020 on a mismatch), as the upstream would.
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.setup
            .catalog
            .offered()
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut listed = ListToolsResult::with_all_items(self.setup.catalog.offered().to_vec());
        listed.meta = self.stamp(&context);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // Its own upstream sessions first: the run's header says what era each spoke.
        let own = self.own_upstreams(&context).await;
        let session = self.session(&context)?;
        self.client(&context.peer).attach(&session);
        let _serving = session.serving();
        let round = self.round(&request, &context);
        let arguments = request.arguments.map(Value::Object).unwrap_or(json!({}));
        // A client that asked for progress gets the server's, under its own token.
        // rmcp hands the request's `_meta` to the context.
        let progress = context
            .meta
            .get_progress_token()
            .or_else(|| request.meta.as_ref().and_then(|m| m.get_progress_token()));
        let passed_on = Arc::new(std::sync::OnceLock::new());
        let caller = Caller {
            client: self.client(&context.peer),
            progress,
            cancelled: context.ct.clone(),
            own,
            round,
            passed_on: passed_on.clone(),
        };
        let mut result = self.call(&request.name, arguments, session, caller).await;
        // The server asked the client for input first, or refused the call: that goes to the
        // client as it came.
        match Arc::into_inner(passed_on).and_then(std::sync::OnceLock::into_inner) {
            Some(PassedOn::AsksInput(asked)) => return Ok(CallToolResponse::InputRequired(asked)),
            Some(PassedOn::Refused(refused)) => return Err(refused),
            None => {}
        }
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result.into())
    }
}

/// A client's request `_meta` as it goes upstream: less its progress token (the proxy's
/// connection asks with its own) and its protocol version (the connection speaks its own).
fn upstream_meta(mut meta: rmcp::model::RequestMetaObject) -> rmcp::model::RequestMetaObject {
    meta.remove("progressToken");
    meta.remove("io.modelcontextprotocol/protocolVersion");
    meta
}

/// What the client is told of a call it cancelled (and the upstream's call is cancelled).
const CANCELLED_BY_CLIENT: &str = "cancelled by the client";

/// The client making a call: asked when the server asks for input, told the call's progress
/// under its token when it asked for it, and able to cancel it.
struct Caller {
    client: Arc<Client>,
    progress: Option<ProgressToken>,
    cancelled: tokio_util::sync::CancellationToken,
    /// The client's own upstream sessions, when it has them.
    own: Option<Arc<McpPool>>,
    /// What the client sent beside the call, passed upstream as it came.
    round: ClientRound,
    /// Set when the server's answer is no result: the client gets that instead.
    passed_on: Arc<std::sync::OnceLock<PassedOn>>,
}

/// A server's answer to a call that is no result, passed to the client as it came.
enum PassedOn {
    /// It asks the client for input first (the stateless era).
    AsksInput(rmcp::model::InputRequiredResult),
    /// It refused the call with a protocol error.
    Refused(McpError),
}

impl Caller {
    /// A teller that queues each report in the client's outbox, in order with everything else
    /// the client is told. `None` when the client did not ask for progress.
    fn progress(&self) -> Option<impl FnMut(Progress) + Send + use<>> {
        let token = self.progress.clone()?;
        let client = self.client.clone();
        Some(move |p: Progress| {
            let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
            param.total = p.total;
            param.message = p.message;
            client.tell(ServerNotification::ProgressNotification(
                ProgressNotification::new(param),
            ));
        })
    }
}

/// A prompt get or resource read as a run records it: `text`, capped as a tool's result, or
/// the error the client got.
fn exchange(
    server: Option<String>,
    asked: Value,
    started: std::time::Instant,
    text: Result<String, &McpError>,
) -> Exchange {
    let mut exchange = Exchange {
        server: server.unwrap_or_default(),
        asked: Box::new(asked),
        latency_ms: started.elapsed().as_millis() as u64,
        ..Default::default()
    };
    match text {
        Ok(text) => {
            exchange.result.text = text;
            exchange
                .result
                .cap_text(cosmos_engine::mcp::MAX_RESULT_BYTES);
        }
        Err(e) => exchange.error = Some(e.message.to_string()),
    }
    exchange
}

/// A prompt's messages as text: each its role and its text (other content by its kind).
fn messages_text(messages: &[rmcp::model::PromptMessage]) -> String {
    messages
        .iter()
        .map(|m| {
            let wire = serde_json::to_value(m).unwrap_or_default();
            let said = wire["content"]["text"].as_str().map_or_else(
                || {
                    format!(
                        "[{}]",
                        wire["content"]["type"].as_str().unwrap_or("content")
                    )
                },
                String::from,
            );
            format!("{}: {said}", wire["role"].as_str().unwrap_or("?"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A resource's contents as text (a blob as its type and size).
fn contents_text(contents: &[rmcp::model::ResourceContents]) -> String {
    contents
        .iter()
        .map(|c| {
            let wire = serde_json::to_value(c).unwrap_or_default();
            match (wire["text"].as_str(), wire["blob"].as_str()) {
                (Some(text), _) => text.to_string(),
                (None, Some(blob)) => format!(
                    "[{}, {} bytes base64]",
                    wire["mimeType"].as_str().unwrap_or("blob"),
                    blob.len()
                ),
                _ => "[contents]".to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the client is told of a call that got no reply from its server: a tool error that
/// names the server (the session goes on).
fn reply_of(server: Option<&str>, outcome: &CallOutcome) -> CallToolResult {
    let message = outcome.error.as_deref().unwrap_or(&outcome.result.text);
    let text = match server {
        Some(server) => format!("server {server}: {message}"),
        None => message.to_string(),
    };
    error_result(&text, json!({}))
}

/// A tool error with `meta` as its `_meta`.
fn error_result(text: &str, meta: Value) -> CallToolResult {
    let mut wire = json!({"content": [{"type": "text", "text": text}], "isError": true});
    if meta.as_object().is_some_and(|m| !m.is_empty()) {
        wire["_meta"] = meta;
    }
    result_from(wire)
}

/// A prediction as the client gets it: its text and structured content, its error flag, and
/// `_meta` saying it is simulated and by which world model. A tool with an output schema must
/// answer with structured content (clients check): a prediction without any gets it from its
/// text ([`structured_from_text`]).
fn simulated_result(
    predicted: &Observation,
    world_model: &str,
    output_schema: Option<&Value>,
) -> CallToolResult {
    let mut wire = json!({
        "content": [{"type": "text", "text": predicted.text}],
        "isError": predicted.is_error,
        "_meta": {META_SIMULATED: true, META_WORLD_MODEL: world_model},
    });
    let structured = match (&predicted.structured, output_schema) {
        (Some(structured), _) => Some(structured.as_ref().clone()),
        (None, Some(schema)) if !predicted.is_error => {
            structured_from_text(&predicted.text, schema)
        }
        _ => None,
    };
    if let Some(structured) = structured {
        wire["structuredContent"] = structured;
    }
    result_from(wire)
}

/// Structured content for a tool whose output schema is `schema`, from a predicted text: the
/// text itself when it is a JSON object; else, for a schema of one property (how SDKs wrap a
/// plain return value, `{"result": …}`), the text under it (as JSON when it parses).
fn structured_from_text(text: &str, schema: &Value) -> Option<Value> {
    let parsed: Option<Value> = serde_json::from_str(text.trim()).ok();
    if let Some(object @ Value::Object(_)) = &parsed {
        return Some(object.clone());
    }
    let properties = schema.get("properties")?.as_object()?;
    let (name, property) = properties.iter().next().filter(|_| properties.len() == 1)?;
    let value = match (property.get("type").and_then(Value::as_str), parsed) {
        (Some("string"), _) | (_, None) => Value::String(text.to_string()),
        (_, Some(parsed)) => parsed,
    };
    Some(json!({ name: value }))
}

/// A result built from its wire form (rmcp's types are non-exhaustive).
fn result_from(wire: Value) -> CallToolResult {
    serde_json::from_value(wire).unwrap_or_else(|e| {
        // Only a bug here could make our own wire form unreadable: say so to the client.
        serde_json::from_value(json!({
            "content": [{"type": "text", "text": format!("cosmos proxy: {e}")}],
            "isError": true
        }))
        .expect("a text error result")
    })
}

/// Why a rehearsal has no prediction, from the `error` it recorded.
fn failure_of(rehearsal: &Rehearsal) -> String {
    rehearsal
        .events
        .iter()
        .find_map(|e| match e {
            EventBody::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "no prediction".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prediction_without_structure_gets_it_from_its_text_when_the_tool_declares_one() {
        let wrapped = json!({"type": "object", "properties": {"result": {"type": "string"}}});
        assert_eq!(
            structured_from_text("ok: hi", &wrapped),
            Some(json!({"result": "ok: hi"}))
        );
        let number = json!({"properties": {"result": {"type": "integer"}}});
        assert_eq!(
            structured_from_text(" 42 ", &number),
            Some(json!({"result": 42}))
        );
        let object = json!({"properties": {"city": {}, "sky": {}}});
        assert_eq!(
            structured_from_text(r#"{"city": "Lyon"}"#, &object),
            Some(json!({"city": "Lyon"}))
        );
        assert_eq!(structured_from_text("clear skies", &object), None);
        let given = simulated_result(
            &Observation {
                text: "ok: hi".into(),
                ..Default::default()
            },
            "llm",
            Some(&wrapped),
        );
        assert_eq!(given.structured_content, Some(json!({"result": "ok: hi"})));
    }
}
