//! One connected MCP server: started (stdio) or reached (HTTP) with rmcp, its tools listed,
//! calls made with a timeout. The last lines a stdio server wrote to stderr are kept, so a
//! server that fails can say why.
//!
//! One rmcp connection (stdio child with a stderr tail ring, read as bytes until
//! the pipe's end, never stopped by text that is not UTF-8, each line capped while it is read, so
//! a progress bar that never writes a newline takes no memory; drained before a failure is
//! reported; or streamable HTTP),
//! tools listed across pages and namespaced `server:tool`, calls with a timeout (each call's
//! progress token is the one rmcp gives the request, read from its handle: rmcp replaces any
//! token in `_meta`; the connection's `Listener` hears `notifications/progress` and
//! `call_watching` tells the caller of its call's reports; a call given up on is cancelled at the
//! server, `Abandoned`), rmcp's typed
//! `CallToolResult` reduced to `Observation` and capped at 1 MiB. A call that finds the transport
//! closed (`ServiceError::TransportClosed`, or the transport's state) marks the server dead.
//! A stdio server is spawned here (its `tokio` child reaped, killed on drop) and spoken to
//! through rmcp's `AsyncRwTransport` over its pipes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ResourceContents,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::Value;

use super::arrivals::{Arrivals, Counted};
use super::late_discover::SkipsLateDiscover;
use super::mcp_json::{INHERITED_ENV, ServerConfig, Transport};
use super::oversized::{Oversized, Watched};
use super::process_group::ProcessGroup;
use cosmos_trajectory::event::{Observation, ToolInfo};

/// Lines of stderr kept per server.
const STDERR_LINES: usize = 40;
/// Longest stderr line kept.
const STDERR_LINE_CHARS: usize = 400;
/// Bytes of one stderr line kept while it is read (its characters are cut to
/// [`STDERR_LINE_CHARS`] after decoding).
const STDERR_LINE_BYTES: usize = 4 * STDERR_LINE_CHARS;
/// How long a stopping stdio server gets at each step (stdin closed, SIGTERM) before the next:
/// short, so a server that ignores SIGTERM holds cosmos's exit by about 1.5 s, not 6 (servers
/// stop concurrently).
const STOP_GRACE: Duration = Duration::from_millis(500);
/// Longest wait for a failed server's stderr to be read to its end.
const STDERR_DRAIN: Duration = Duration::from_secs(1);
/// Largest tool result text recorded; the rest is counted in `truncated_bytes`.
pub const MAX_RESULT_BYTES: usize = 1 << 20;

/// Why a server is unusable, with what it said on stderr.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerFailure {
    /// The server.
    pub name: String,
    /// What went wrong.
    pub message: String,
    /// Its last stderr lines, if any.
    pub stderr_tail: Option<String>,
}

impl ServerFailure {
    /// The `error` event that records it (source `server`).
    pub fn event(&self) -> cosmos_trajectory::event::EventBody {
        cosmos_trajectory::event::EventBody::Error {
            source: cosmos_trajectory::event::ErrorSource::Server,
            name: Some(self.name.clone()),
            message: self.message.clone(),
            stderr_tail: self.stderr_tail.clone(),
            step: None,
        }
    }
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The result (an empty error observation when the call itself failed).
    pub result: Observation,
    /// A failure outside the tool: timeout, server gone, protocol error.
    pub error: Option<String>,
    /// Wall time of the call.
    pub latency: Duration,
    /// Set when this call found the server dead.
    pub server_died: Option<ServerFailure>,
    /// The server's requests for input while the call ran, with the answers given.
    pub elicited: Vec<super::elicitation::Elicited>,
    /// The server's reply as it came (uncapped), for `cosmos proxy` to pass on unchanged;
    /// `None` when the call itself failed.
    pub reply: Option<Box<CallToolResult>>,
    /// How the call changed its server's sandboxed state, when the pool watched it
    /// (`mcp::state_view`).
    pub state_change: Option<Box<cosmos_trajectory::event::StateChange>>,
    /// The server asks for input before it answers (SEP-2322), and the call was made for a
    /// client that answers that itself ([`ClientRound::answers_input`]): its
    /// `InputRequiredResult`, as it came, for `cosmos proxy` to pass on.
    pub input_required: Option<Box<Value>>,
    /// The server refused the call with a protocol error (JSON-RPC's, not the tool's): the
    /// error as it came, for `cosmos proxy` to pass on.
    pub refused: Option<Box<rmcp::ErrorData>>,
}

/// What a client of `cosmos proxy` sent with its call, passed upstream as it came: its
/// `_meta` and its answers to an earlier round's requests for input.
#[derive(Debug, Clone, Default)]
pub struct ClientRound {
    /// The request's `_meta`: the client's capabilities, log level, extensions.
    pub meta: Option<rmcp::model::RequestMetaObject>,
    /// Its answers to the server's last requests for input.
    pub input_responses: Option<rmcp::model::InputResponses>,
    /// The state the server asked to be given back.
    pub request_state: Option<String>,
    /// The client answers the server's requests for input itself (the stateless era): a
    /// call that asks for some ends there, its request passed to the client.
    pub answers_input: bool,
}

/// What a call came back with: a result, or (for a client that answers them) requests for
/// input.
enum Called {
    Complete(CallToolResult),
    AsksInput(rmcp::model::InputRequiredResult),
}

/// What a server says of a call while it runs (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far (it only grows).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// What it is doing, in words.
    pub message: Option<String>,
}

/// The longest a call's result waits for the notifications its server sent before it to be
/// handled (`Arrivals`: only a connection closing under them makes the wait this long).
const PROGRESS_GRACE: Duration = Duration::from_millis(500);

/// Told of each progress report while a call runs.
pub type OnProgress<'a> = Option<&'a mut (dyn FnMut(Progress) + Send)>;

/// Progress reports still waiting to be read, per server; older ones are dropped first.
const PROGRESS_BACKLOG: usize = 64;

/// A progress report a connection heard from its server, with the token of the call it is for.
#[derive(Debug, Clone)]
enum Heard {
    Progress(ProgressToken, Progress),
}

/// The client side of one connection: it hears the server's progress reports, and hands
/// what else the server sends to the process's relay, if it has one (`cosmos proxy`).
#[derive(Clone)]
struct Listener {
    progress: tokio::sync::broadcast::Sender<Heard>,
    /// How a server's request for input is answered, and where each exchange is told.
    elicitation: super::elicitation::Elicitation,
    elicited: tokio::sync::broadcast::Sender<super::elicitation::Elicited>,
    /// The server's name, for whoever answers its questions.
    server: String,
    /// The tools whose calls are in flight on this connection: a request for input names
    /// the call it came during when only one is.
    in_flight: InFlight,
    /// The notifications arrived and handled, so a result waits for those before it.
    arrivals: Arc<Arrivals>,
    /// The relay of a connection made for one client (`Server::connect_for_client`); the
    /// process's otherwise.
    own_relay: Option<Arc<dyn super::unasked::Relay>>,
}

impl Listener {
    /// Where what the server sends unasked goes, if anywhere.
    fn relay(&self) -> Option<&Arc<dyn super::unasked::Relay>> {
        super::unasked::relay_of(self.own_relay.as_ref())
    }
}

/// A part of a listed tool as the server sent it (absent when it sent none).
fn as_listed<T: serde::Serialize>(part: &Option<T>) -> Option<Box<Value>> {
    part.as_ref()
        .and_then(|p| serde_json::to_value(p).ok())
        .map(Box::new)
}

/// rmcp's words without the transport's type name it puts in them
/// (`Transport [cosmos_engine::…<…>] error: `), which says nothing to a person.
fn plainly(said: &str) -> String {
    let Some(from) = said.find("Transport [") else {
        return said.to_string();
    };
    // The type name nests brackets of its own: find its closing one.
    let mut depth = 0;
    for (i, c) in said[from + "Transport ".len()..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    let rest = &said[from + "Transport ".len() + i + 1..];
                    return format!(
                        "{}{}",
                        &said[..from],
                        rest.trim_start().trim_start_matches("error: ")
                    );
                }
            }
            _ => {}
        }
    }
    said.to_string()
}

/// Most "input required" rounds one call may take before it fails, saying so.
const INPUT_ROUNDS: usize = 8;

/// How cosmos opens a connection: it asks `server/discover` first (the stateless 2026-07-28
/// era, with the protocol version in every request's `_meta` and HTTP headers) and falls back
/// to the `initialize` handshake of 2025-11-25 and before when the server answers as a server
/// of that era (an error to the unknown method) or not at all within rmcp's 10 s (its answer,
/// should it come later, is dropped: [`SkipsLateDiscover`]).
fn both_eras() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// `server/discover` answered with another method's result (an empty one, say): the server
/// is of the handshake era and answers what it does not know leniently.
#[derive(Debug)]
struct DiscoverMisread(String);

impl DiscoverMisread {
    /// The error, when `e` is that answer.
    fn of(e: &rmcp::service::ClientInitializeError) -> Option<anyhow::Error> {
        matches!(
            e,
            rmcp::service::ClientInitializeError::ExpectedInitResult(_)
        )
        .then(|| anyhow::Error::new(Self(e.to_string())))
    }
}

impl std::fmt::Display for DiscoverMisread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "server/discover was answered as another request: {}",
            self.0
        )
    }
}

impl std::error::Error for DiscoverMisread {}

/// The tools of the calls in flight on one connection.
type InFlight = Arc<Mutex<Vec<String>>>;

/// A call's place in [`InFlight`], given back when the call ends or is dropped.
struct Flying<'a>(&'a InFlight, String);

impl<'a> Flying<'a> {
    fn start(in_flight: &'a InFlight, tool: &str) -> Self {
        in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tool.to_string());
        Self(in_flight, tool.to_string())
    }
}

impl Drop for Flying<'_> {
    fn drop(&mut self) {
        let mut tools = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = tools.iter().position(|t| *t == self.1) {
            tools.swap_remove(i);
        }
    }
}

// Sampling, roots and logging are deprecated by the 2026-07-28 protocol (SEP-2577); servers of
// earlier versions still use them, and a proxy relays them.
#[allow(deprecated)]
impl rmcp::ClientHandler for Listener {
    /// Servers (and `cosmos proxy` sessions) see mcp-cosmos by name.
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        // What an `initialize` offers: the newest version that has the handshake (the
        // stateless era is reached by `server/discover`, never offered here).
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info.client_info =
            rmcp::model::Implementation::new("mcp-cosmos", env!("CARGO_PKG_VERSION"));
        // Servers may ask for input (forms); each request is answered by the connection's
        // policy and recorded with the call it came during.
        let mut elicitation = rmcp::model::ElicitationCapability::new();
        elicitation.form = Some(rmcp::model::FormElicitationCapability::new());
        // A relay has clients to sample, to ask for roots and to open a page for; they are
        // declined by the relay, saying why, when the client at hand cannot.
        if self.relay().is_some() {
            elicitation.url = Some(rmcp::model::UrlElicitationCapability::default());
            info.capabilities.sampling = Some(Default::default());
            let mut roots = rmcp::model::RootsCapabilities::default();
            roots.list_changed = Some(true);
            info.capabilities.roots = Some(roots);
        }
        info.capabilities.elicitation = Some(elicitation);
        // A session made for one client declares what that client declared, no more.
        if let Some(client) = self.relay().and_then(|r| r.client_capabilities()) {
            info.capabilities = client;
        }
        info
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        match self.relay() {
            Some(relay) => relay.create_message(&self.server, params).await,
            None => Err(rmcp::ErrorData::method_not_found::<
                rmcp::model::CreateMessageRequestMethod,
            >()),
        }
    }

    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        match self.relay() {
            Some(relay) => relay.list_roots(&self.server).await,
            None => Ok(Default::default()),
        }
    }

    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.relayed(
            &context,
            rmcp::model::ServerNotification::LoggingMessageNotification(
                rmcp::model::LoggingMessageNotification::new(params),
            ),
        )
        .await;
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        self.relayed(
            &context,
            rmcp::model::ServerNotification::ResourceUpdatedNotification(
                rmcp::model::ResourceUpdatedNotification::new(params),
            ),
        )
        .await;
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relayed(
            &context,
            rmcp::model::ServerNotification::ResourceListChangedNotification(Default::default()),
        )
        .await;
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relayed(
            &context,
            rmcp::model::ServerNotification::ToolListChangedNotification(Default::default()),
        )
        .await;
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.relayed(
            &context,
            rmcp::model::ServerNotification::PromptListChangedNotification(Default::default()),
        )
        .await;
    }

    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        context: NotificationContext<RoleClient>,
    ) {
        // e.g. `notifications/elicitation/complete` after a page the client opened.
        self.relayed(
            &context,
            rmcp::model::ServerNotification::CustomNotification(notification),
        )
        .await;
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        // The call it came during, when only one is in flight (MCP does not say whose it is).
        let tool = {
            let tools = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            match tools.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            }
        };
        let (result, elicited) = super::elicitation::respond(
            self.elicitation,
            |question| match self.relay() {
                Some(relay) => relay.ask(question),
                None => super::elicitation::ask(question),
            },
            &self.server,
            tool,
            &request,
        )
        .await;
        // Nobody listening (no call in flight) is not an error.
        let _ = self.elicited.send(elicited);
        Ok(result)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let progress = Progress {
            progress: params.progress,
            total: params.total,
            message: params.message,
        };
        // In the order the server sent them (rmcp hands each to a task of its own).
        self.arrivals.wait_turn(&context.extensions).await;
        // Nobody waiting (the call has ended) is not an error.
        let _ = self
            .progress
            .send(Heard::Progress(params.progress_token, progress));
        self.arrivals.handled();
    }
}

impl Listener {
    /// Hands `notification` to the relay, and tells a call waiting for its result's last
    /// traffic that some came.
    async fn relayed(
        &self,
        context: &NotificationContext<RoleClient>,
        notification: rmcp::model::ServerNotification,
    ) {
        self.arrivals.wait_turn(&context.extensions).await;
        if let Some(relay) = self.relay() {
            relay.notify(&self.server, notification);
        }
        self.arrivals.handled();
    }
}

/// A running connection.
pub struct Server {
    /// The configured name.
    pub name: String,
    /// Its tools, namespaced `name:tool`.
    pub tools: Vec<ToolInfo>,
    client: RunningService<RoleClient, Listener>,
    /// Each call's progress reports, by its token.
    progress: tokio::sync::broadcast::Sender<Heard>,
    /// The server's requests for input, as answered.
    elicited: tokio::sync::broadcast::Sender<super::elicitation::Elicited>,
    /// The tools of the calls in flight, shared with the connection's listener.
    in_flight: InFlight,
    stderr: StderrTail,
    dead: Mutex<Option<ServerFailure>>,
    /// A stdio server's process group (killed on drop if still alive).
    group: Option<ProcessGroup>,
    /// Cleans what is said about the server of its configuration's secrets.
    redactor: cosmos_trajectory::redact::Redactor,
    /// A remote server's URL and OAuth client, for stepping its token up to more scopes.
    login: Option<(String, super::oauth::OAuthClient)>,
    /// Told when a stdio server writes a line too long for rmcp to read.
    oversized: Arc<Oversized>,
    /// The server's notifications arrived and handled.
    arrivals: Arc<Arrivals>,
    /// A stdio server's process, reaped when it ends (killed on drop if still alive).
    _child: Option<tokio::process::Child>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl Server {
    /// Starts or reaches the server, initialises MCP and lists every tool (all pages),
    /// all within `startup_timeout`; the server's requests for input are answered by
    /// `elicitation`.
    pub async fn connect(
        config: &ServerConfig,
        startup_timeout: Duration,
        elicitation: super::elicitation::Elicitation,
    ) -> Result<Self, ServerFailure> {
        Self::connect_with(config, startup_timeout, elicitation, None).await
    }

    /// [`Server::connect`] for one client of `cosmos proxy` that speaks the handshake era: a
    /// session of its own in that era (a stdio server is a process of its own), so the server
    /// has a channel back to that client; what it sends unasked goes to `relay` alone.
    pub async fn connect_for_client(
        config: &ServerConfig,
        startup_timeout: Duration,
        elicitation: super::elicitation::Elicitation,
        relay: Arc<dyn super::unasked::Relay>,
    ) -> Result<Self, ServerFailure> {
        Self::connect_with(config, startup_timeout, elicitation, Some(relay)).await
    }

    async fn connect_with(
        config: &ServerConfig,
        startup_timeout: Duration,
        elicitation: super::elicitation::Elicitation,
        own_relay: Option<Arc<dyn super::unasked::Relay>>,
    ) -> Result<Self, ServerFailure> {
        // A client's own session is of the handshake era; a shared one asks for the newest.
        let lifecycle = if own_relay.is_some() {
            ClientLifecycleMode::Initialize
        } else {
            both_eras()
        };
        let stderr = StderrTail::default();
        let redactor = config.redactor();
        // An error may quote the server's URL whole (reqwest's does): its secrets are cut.
        let fail = |message: String, stderr: &StderrTail| ServerFailure {
            name: config.name.clone(),
            message: redactor.redact_str(&message).unwrap_or(message),
            stderr_tail: stderr.text().map(|t| redactor.redact_str(&t).unwrap_or(t)),
        };
        if let Some(problem) = &config.problem {
            return Err(fail(format!("not started: {problem}"), &stderr));
        }
        if config.state_seed.is_some() && super::sandbox::unfilled(config) {
            return Err(fail(
                "not started: its state was given no folder (`mcp::sandbox::prepare`)".into(),
                &stderr,
            ));
        }
        let group = Arc::new(Mutex::new(None));
        let oversized = Arc::new(Oversized::default());
        let child = Arc::new(Mutex::new(None));
        let listener = Listener {
            progress: tokio::sync::broadcast::Sender::new(PROGRESS_BACKLOG),
            elicitation,
            elicited: tokio::sync::broadcast::Sender::new(PROGRESS_BACKLOG),
            server: config.name.clone(),
            in_flight: InFlight::default(),
            arrivals: Arc::default(),
            own_relay,
        };
        let arrivals = listener.arrivals.clone();
        let progress = listener.progress.clone();
        let in_flight = listener.in_flight.clone();
        let elicited = listener.elicited.clone();
        let start = |lifecycle| {
            Self::start(
                config,
                listener.clone(),
                stderr.clone(),
                group.clone(),
                oversized.clone(),
                child.clone(),
                lifecycle,
            )
        };
        let started = tokio::time::timeout(startup_timeout, async {
            match start(lifecycle).await {
                // A server that answers `server/discover` with some other result is of the
                // handshake era (one of 2026-07-28 answers it as asked): the handshake alone,
                // on a new connection (a stdio server started again).
                Err(e) if e.is::<DiscoverMisread>() => {
                    tracing::info!("{}: {e}; connecting again with the handshake", config.name);
                    if let Some(group) = group.lock().unwrap_or_else(|p| p.into_inner()).take() {
                        group.kill();
                    }
                    drop(child.lock().unwrap_or_else(|p| p.into_inner()).take());
                    start(ClientLifecycleMode::Initialize).await
                }
                other => other,
            }
        })
        .await;
        let child = child.lock().unwrap_or_else(|p| p.into_inner()).take();
        // The group is ours whatever happened: a server that did not start is killed with it.
        let group = group.lock().unwrap_or_else(|p| p.into_inner()).take();
        let client = match started {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                // The process's last words are still on their way through the pipe.
                stderr.drained().await;
                return Err(fail(with_last_words(&e, &stderr), &stderr));
            }
            Err(_) => {
                return Err(fail(
                    format!("did not start within {}s", startup_timeout.as_secs()),
                    &stderr,
                ));
            }
        };
        let listed = tokio::time::timeout(startup_timeout, client.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => return Err(fail(listing_failed(&e, &config.name), &stderr)),
            Err(_) => {
                return Err(fail(
                    format!(
                        "listing tools took longer than {}s",
                        startup_timeout.as_secs()
                    ),
                    &stderr,
                ));
            }
        };
        let tools = tools.iter().map(|t| tool_info(&config.name, t)).collect();
        Ok(Self {
            name: config.name.clone(),
            tools,
            client,
            progress,
            elicited,
            in_flight,
            stderr,
            dead: Mutex::new(None),
            group,
            oversized,
            arrivals,
            _child: child,
            redactor,
            login: login_of(config),
        })
    }

    async fn start(
        config: &ServerConfig,
        listener: Listener,
        stderr: StderrTail,
        group: Arc<Mutex<Option<ProcessGroup>>>,
        oversized: Arc<Oversized>,
        child: Arc<Mutex<Option<tokio::process::Child>>>,
        lifecycle: ClientLifecycleMode,
    ) -> Result<RunningService<RoleClient, Listener>> {
        match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = server_command(command, args, env, cwd.as_deref());
                let mut process = cmd
                    .spawn()
                    .with_context(|| format!("starting `{}`", config.target()))?;
                *group.lock().unwrap_or_else(|p| p.into_inner()) =
                    process.id().and_then(ProcessGroup::led_by);
                if let Some(err) = process.stderr.take() {
                    stderr.read_from(err);
                }
                let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take())
                else {
                    anyhow::bail!("`{}` started without its pipes", config.target());
                };
                *child.lock().unwrap_or_else(|p| p.into_inner()) = Some(process);
                // Its stdout is measured on the way to rmcp, which drops a line too long to
                // read: the call waiting for it is told at once instead of timing out.
                let transport = AsyncRwTransport::<RoleClient, _, _>::new(
                    Watched::new(stdout, oversized),
                    stdin,
                );
                let counted =
                    Counted::new(SkipsLateDiscover::new(transport), listener.arrivals.clone());
                listener
                    .serve_with_lifecycle(counted, lifecycle)
                    .await
                    .map_err(|e| {
                        DiscoverMisread::of(&e)
                            .unwrap_or_else(|| anyhow!("MCP initialisation failed: {e}"))
                    })
            }
            Transport::Http {
                url,
                headers,
                oauth,
            } => {
                super::install_tls_provider();
                let cfg = http_config(url, headers)?;
                // The target, not the URL: its userinfo and query are credentials.
                let failed = |e| connect_failed(e, config);
                // A server logged into (`cosmos login`) gets its token, refreshed as needed.
                let arrivals = listener.arrivals.clone();
                match super::oauth::authorized_client(url, oauth).await? {
                    Some(client) => listener
                        .serve_with_lifecycle(
                            Counted::new(
                                SkipsLateDiscover::new(StreamableHttpClientTransport::with_client(
                                    client, cfg,
                                )),
                                arrivals,
                            ),
                            lifecycle.clone(),
                        )
                        .await
                        .map_err(failed),
                    None => listener
                        .serve_with_lifecycle(
                            Counted::new(
                                SkipsLateDiscover::new(StreamableHttpClientTransport::from_config(
                                    cfg,
                                )),
                                arrivals,
                            ),
                            lifecycle.clone(),
                        )
                        .await
                        .map_err(failed),
                }
            }
        }
    }

    /// What the server said of itself at `initialize`: its capabilities and instructions.
    pub fn introduction(&self) -> Option<Arc<rmcp::model::ServerPeerInfo>> {
        self.client.peer_info()
    }

    /// The protocol version the connection speaks (`2026-07-28` when the server answered
    /// `server/discover`; a handshake version otherwise).
    pub fn protocol_version(&self) -> Option<String> {
        self.client
            .peer_info()
            .map(|info| info.protocol_version.to_string())
    }

    /// The connection, for requests passed on as they came (`cosmos proxy`'s prompts,
    /// resources, completion and logging).
    pub fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.client.peer()
    }

    /// Sends a request that is no tool call (a resource read, a prompt, a completion, a list)
    /// with `meta` in its `_meta` (a proxy's client's, passed on) and waits at most `timeout`
    /// for its answer (then it is cancelled at the server); a stdio
    /// reply too long to be read fails at once, saying why, as a tool call's does.
    pub async fn ask(
        &self,
        request: rmcp::model::ClientRequest,
        timeout: Duration,
        meta: Option<rmcp::model::RequestMetaObject>,
    ) -> Result<rmcp::model::ServerResult, ServiceError> {
        let mut options = rmcp::service::PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        options.meta = meta;
        let asking = async {
            self.client
                .send_request_with_option(request, options)
                .await?
                .await_response()
                .await
        };
        // The send itself may wait on a full transport: bounded too.
        let bounded = tokio::time::timeout(timeout + Duration::from_secs(1), asking);
        tokio::select! {
            answered = bounded => answered.unwrap_or(Err(ServiceError::Timeout { timeout })),
            (size, whole) = self.oversized.next() => Err(ServiceError::McpError(
                rmcp::model::ErrorData::internal_error(Oversized::message(size, whole), None),
            )),
        }
    }

    /// The answers to a server's requests for input that came in an "input required" result
    /// (SEP-2322), made by this connection's handler as the same requests during a call are
    /// (and recorded with the call), and the state the server asked to be given back.
    async fn answer_input(
        &self,
        asked: rmcp::model::InputRequiredResult,
    ) -> Result<(Option<rmcp::model::InputResponses>, Option<String>), ServiceError> {
        use rmcp::model::{ClientResult, InputRequest, ServerRequest};
        use rmcp::service::Service;
        let mut responses = rmcp::model::InputResponses::new();
        for (key, request) in asked.input_requests.unwrap_or_default() {
            let request = match request {
                InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
                InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
                InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
                // A kind of request this rmcp does not know: nothing to answer it with.
                _ => return Err(ServiceError::UnexpectedResponse),
            };
            let context = rmcp::service::RequestContext::new(
                rmcp::model::NumberOrString::String(key.clone().into()),
                self.client.peer().clone(),
            );
            let answer = match self.client.service().handle_request(request, context).await {
                Ok(ClientResult::CreateMessageResult(r)) => serde_json::to_value(r),
                Ok(ClientResult::ElicitResult(r)) => serde_json::to_value(r),
                Ok(ClientResult::ListRootsResult(r)) => serde_json::to_value(r),
                Ok(_) => return Err(ServiceError::UnexpectedResponse),
                Err(e) => return Err(ServiceError::McpError(e)),
            };
            responses.insert(key, answer.map_err(|_| ServiceError::UnexpectedResponse)?);
        }
        Ok((
            (!responses.is_empty()).then_some(responses),
            asked.request_state,
        ))
    }

    /// The server's last stderr lines.
    pub fn stderr_tail(&self) -> Option<String> {
        self.stderr.text()
    }

    /// Why the server is dead, if it is.
    pub fn failure(&self) -> Option<ServerFailure> {
        self.dead.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// True while no call has seen it die and its connection is open.
    pub fn is_alive(&self) -> bool {
        self.failure().is_none() && !self.client.is_transport_closed()
    }

    /// Calls `tool` (its own name, without the server prefix).
    pub async fn call(&self, tool: &str, arguments: &Value, timeout: Duration) -> CallOutcome {
        self.call_watching(tool, arguments, timeout, None).await
    }

    /// [`Server::call`], telling `on_progress` of each progress report the server sends while
    /// the call runs (the call asks for them with a progress token of its own). A remote
    /// server that refuses the call for want of a scope is stepped up to it
    /// (`oauth::step_up`) and, when that got a new token, called once more.
    pub async fn call_watching(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
        on_progress: OnProgress<'_>,
    ) -> CallOutcome {
        self.call_for(tool, arguments, timeout, on_progress, None)
            .await
    }

    /// [`Server::call_watching`] for a client of `cosmos proxy`, with what it sent beside the
    /// call (`round`).
    pub async fn call_for(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
        mut on_progress: OnProgress<'_>,
        round: Option<&ClientRound>,
    ) -> CallOutcome {
        let mut needs = None;
        let outcome = self
            .call_once(
                tool,
                arguments,
                timeout,
                &mut on_progress,
                &mut needs,
                round,
            )
            .await;
        let (Some(required), Some((url, client))) = (needs, &self.login) else {
            return outcome;
        };
        match super::oauth::step_up(url, client, &self.name, &required).await {
            Ok(()) => {
                let mut again = self
                    .call_once(tool, arguments, timeout, &mut on_progress, &mut None, round)
                    .await;
                again.latency += outcome.latency;
                again
            }
            Err(why) => {
                let said = outcome.error.as_deref().unwrap_or(&outcome.result.text);
                let message = format!("{said}: {why:#}");
                let message = self.redactor.redact_str(&message).unwrap_or(message);
                CallOutcome {
                    elicited: outcome.elicited,
                    ..CallOutcome::failure(message, outcome.latency)
                }
            }
        }
    }

    /// One call; `needs` is set to the scopes a remote server asked for when it refused the
    /// call for want of them (403 `insufficient_scope`).
    async fn call_once(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
        on_progress: &mut OnProgress<'_>,
        needs: &mut Option<String>,
        round: Option<&ClientRound>,
    ) -> CallOutcome {
        let start = Instant::now();
        if let Some(f) = self.failure() {
            return failed(
                start,
                format!("server {} is not running: {}", self.name, f.message),
                None,
            );
        }
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match arguments {
            Value::Object(map) => Some(map.clone()),
            Value::Null => None,
            other => {
                return failed(
                    start,
                    format!("arguments must be a JSON object, got {other}"),
                    None,
                );
            }
        };
        let mut meta = None;
        if let Some(round) = round {
            params.input_responses = round.input_responses.clone();
            params.request_state = round.request_state.clone();
            meta = round.meta.clone();
        }
        let options = || {
            let mut options = rmcp::service::PeerRequestOptions::no_options();
            options.meta = meta.clone();
            options
        };
        let answers_input = round.is_some_and(|r| r.answers_input);
        let mut reports = self.progress.subscribe();
        let mut asked = self.elicited.subscribe();
        let _flying = Flying::start(&self.in_flight, tool);
        // rmcp gives every request a progress token of its own (replacing any in `_meta`): the
        // call's reports are told by the token its handle names.
        let mut token = None;
        let mut abandoned: Option<Abandoned> = None;
        let mut rounds = 0;
        // A server of the stateless era may answer "input required" (SEP-2322): its requests
        // are answered as a server's requests during a call are, and the call is made again
        // with the answers, at most `INPUT_ROUNDS` times.
        let called = 'call: loop {
            let remaining = timeout.saturating_sub(start.elapsed());
            let sent = tokio::time::timeout(
                remaining,
                self.client.send_request_with_option(
                    rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(
                        params.clone(),
                    )),
                    options(),
                ),
            )
            .await;
            let handle = match sent {
                Ok(Ok(handle)) => handle,
                Ok(Err(e)) => break 'call Ok(Err(e)),
                Err(elapsed) => break 'call Err(elapsed),
            };
            token = Some(handle.progress_token.clone());
            // A call given up on (its future dropped: a timeout, a client that cancelled) is
            // cancelled at the server too.
            abandoned = Some(Abandoned::new(
                self.client.peer().clone(),
                handle.id.clone(),
            ));
            let calling = tokio::time::timeout(timeout.saturating_sub(start.elapsed()), async {
                match handle.await_response().await? {
                    rmcp::model::ServerResult::CallToolResult(result) => Ok(Ok(result)),
                    rmcp::model::ServerResult::InputRequiredResult(asked) => Ok(Err(asked)),
                    _ => Err(ServiceError::UnexpectedResponse),
                }
            });
            tokio::pin!(calling);
            let answered = loop {
                tokio::select! {
                    called = &mut calling => break called,
                    (size, whole) = self.oversized.next() => {
                        return failed(start, Oversized::message(size, whole), None);
                    }
                    report = reports.recv(), if on_progress.is_some() => match report {
                        Ok(Heard::Progress(of, progress)) if token.as_ref() == Some(&of) => {
                            if let Some(tell) = on_progress.as_mut() {
                                tell(progress);
                            }
                        }
                        // Another call's, or reports dropped while we were slow: keep waiting.
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => *on_progress = None,
                    },
                }
            };
            match answered {
                Ok(Ok(Ok(result))) => break 'call Ok(Ok(Called::Complete(result))),
                Ok(Ok(Err(asked))) if answers_input => {
                    break 'call Ok(Ok(Called::AsksInput(asked)));
                }
                Ok(Ok(Err(asked))) if rounds < INPUT_ROUNDS => {
                    rounds += 1;
                    if let Some(answered) = abandoned.take() {
                        answered.disarm();
                    }
                    // Answering is part of the call: within what is left of its time.
                    let left = timeout.saturating_sub(start.elapsed());
                    match tokio::time::timeout(left, self.answer_input(asked)).await {
                        Ok(Ok((responses, state))) => {
                            params.input_responses = responses;
                            params.request_state = state;
                        }
                        Ok(Err(e)) => break 'call Ok(Err(e)),
                        Err(elapsed) => break 'call Err(elapsed),
                    }
                }
                Ok(Ok(Err(_))) => {
                    break 'call Ok(Err(ServiceError::InputRequiredRoundsExceeded {
                        max_rounds: INPUT_ROUNDS,
                    }));
                }
                Ok(Err(e)) => break 'call Ok(Err(e)),
                Err(elapsed) => break 'call Err(elapsed),
            }
        };
        // A call that ended, however it ended, is not one to cancel (a timeout is: rmcp's own
        // calls say so to the server).
        if let (Some(abandoned), Ok(_)) = (abandoned, &called) {
            abandoned.disarm();
        }
        // The notifications the server sent before its result may not be handled yet: rmcp
        // hands each to a task of its own, which can run after the result is delivered. Every
        // one that had arrived by now is waited for (`Arrivals`), so its progress reports are
        // told, and what a relay passes on is passed, before the result is.
        if on_progress.is_some() || self.client.service().relay().is_some() {
            self.tell_late_progress(&mut reports, token.as_ref(), on_progress)
                .await;
        }
        // Requests for input come and are answered while the call runs: all are in by now.
        let mut elicited = Vec::new();
        while let Ok(e) = asked.try_recv() {
            elicited.push(e);
        }
        let mut outcome = self.outcome(called, start, timeout, needs).await;
        outcome.elicited = elicited;
        outcome
    }

    /// Waits for the notifications that had arrived when the call ended to be handled, then
    /// tells the call's progress reports among them.
    async fn tell_late_progress(
        &self,
        reports: &mut tokio::sync::broadcast::Receiver<Heard>,
        token: Option<&rmcp::model::ProgressToken>,
        on_progress: &mut OnProgress<'_>,
    ) {
        self.arrivals
            .all_handled(self.arrivals.arrived(), PROGRESS_GRACE)
            .await;
        loop {
            match reports.try_recv() {
                Ok(Heard::Progress(of, progress)) if token == Some(&of) => {
                    if let Some(tell) = on_progress.as_mut() {
                        tell(progress);
                    }
                }
                Ok(_) | Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => {}
                Err(_) => break,
            }
        }
    }

    /// What a call's end means: its result, or its failure (a transport that closed marks the
    /// server dead, with its last words; a missing scope is put in `needs`), or its timeout.
    async fn outcome(
        &self,
        called: Result<Result<Called, ServiceError>, tokio::time::error::Elapsed>,
        start: Instant,
        timeout: Duration,
        needs: &mut Option<String>,
    ) -> CallOutcome {
        match called {
            Ok(Ok(Called::Complete(result))) => CallOutcome {
                result: observation(&result),
                error: None,
                latency: start.elapsed(),
                server_died: None,
                reply: Some(Box::new(result)),
                elicited: Vec::new(),
                state_change: None,
                input_required: None,
                refused: None,
            },
            Ok(Ok(Called::AsksInput(asked))) => CallOutcome {
                result: Observation {
                    text: asks_input(&asked),
                    ..Default::default()
                },
                input_required: serde_json::to_value(&asked).ok().map(Box::new),
                error: None,
                ..CallOutcome::failure(String::new(), start.elapsed())
            },
            Ok(Err(e)) => {
                *needs = insufficient_scope(&e);
                let message = plainly(&e.to_string());
                let message = self.redactor.redact_str(&message).unwrap_or(message);
                // A closed transport means the process is gone: no later call can succeed.
                let gone =
                    matches!(e, ServiceError::TransportClosed) || self.client.is_transport_closed();
                let died = if gone {
                    // Its last words may still be in the pipe when the transport closes.
                    self.stderr.drained().await;
                    let f = ServerFailure {
                        name: self.name.clone(),
                        message: format!("server stopped: {message}"),
                        stderr_tail: self.stderr_tail(),
                    };
                    *self.dead.lock().unwrap_or_else(|p| p.into_inner()) = Some(f.clone());
                    Some(f)
                } else {
                    None
                };
                let refused = match e {
                    ServiceError::McpError(e) => Some(Box::new(e)),
                    _ => None,
                };
                CallOutcome {
                    refused,
                    ..failed(start, message, died)
                }
            }
            Err(_) => failed(
                start,
                format!("timed out after {:.0}s", timeout.as_secs_f64()),
                None,
            ),
        }
    }

    /// Closes the connection; a stdio server then gets `STOP_GRACE` to exit on its own, then
    /// SIGTERM for its whole process group, then SIGKILL.
    pub async fn shutdown(self) {
        let Self {
            client,
            group,
            _child: mut child,
            ..
        } = self;
        let _ = tokio::time::timeout(STOP_GRACE, client.cancel()).await;
        if let Some(group) = group {
            group.terminate(STOP_GRACE, child.as_mut()).await;
        }
    }
}

/// A call in flight at a server: dropped before [`Abandoned::disarm`], it tells the server
/// the call is cancelled (as rmcp's own calls do).
struct Abandoned {
    peer: Option<rmcp::Peer<RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Abandoned {
    fn new(peer: rmcp::Peer<RoleClient>, id: rmcp::model::RequestId) -> Self {
        Self {
            peer: Some(peer),
            id,
        }
    }

    /// The call has its answer: nothing to cancel.
    fn disarm(mut self) {
        self.peer = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else {
            return;
        };
        let params = rmcp::model::CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("the caller gave up on the call".into()),
        );
        let cancelled = rmcp::model::ClientNotification::CancelledNotification(
            rmcp::model::CancelledNotification::new(params),
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = peer.send_notification(cancelled).await;
            });
        }
    }
}

/// The scopes a remote server asked for when it refused a request for want of them.
fn insufficient_scope(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = source {
        if let Some(refused) =
            error.downcast_ref::<rmcp::transport::streamable_http_client::InsufficientScopeError>()
        {
            return refused.get_required_scope().map(String::from);
        }
        source = error.source();
    }
    None
}

/// The command that starts a stdio server, piped, in a process group of its own, with an
/// environment of its own.
fn server_command(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&std::path::Path>,
) -> tokio::process::Command {
    // A relative path to the program (`.cache/servers/…`) is where cosmos runs,
    // as a user reads it, not inside the server's own `cwd`.
    let program = std::path::Path::new(command);
    let program = match std::env::current_dir() {
        Ok(here) if cwd.is_some() && program.is_relative() && program.components().count() > 1 => {
            here.join(program)
        }
        _ => program.to_path_buf(),
    };
    let mut cmd = tokio::process::Command::new(program);
    // Only the short inherited list and the server's own env: a third-party
    // server never sees the keys cosmos holds.
    cmd.env_clear();
    for key in INHERITED_ENV {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.args(args).envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // Its own process group: stopping it reaches what it started too, and the
    // terminal's Ctrl-C reaches cosmos, which stops it in order.
    cmd.process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The streamable HTTP client's configuration: a bearer `Authorization` header as its auth
/// header, every other header sent as given.
fn http_config(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig> {
    let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    let mut custom = HashMap::new();
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("authorization") && v.starts_with("Bearer ") {
            cfg = cfg.auth_header(v.trim_start_matches("Bearer ").to_string());
        } else {
            // Said by the header's name, never its value (a credential), and in words no
            // redaction takes for a `Name: value` pair.
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| anyhow!("the header name {k:?} is not a valid HTTP header name"))?;
            let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| {
                anyhow!(
                    "the value of the header {k} is not a valid HTTP header value \
                     (a line break or another control character in it)"
                )
            })?;
            custom.insert(name, value);
        }
    }
    Ok(cfg.custom_headers(custom))
}

/// Why connecting to an HTTP server failed, named by its target (its URL's userinfo and query
/// are credentials); a server behind OAuth that has no login here, or refuses the login's
/// scopes, says so in rmcp's words, and the command that mends it is named.
fn connect_failed(e: rmcp::service::ClientInitializeError, config: &ServerConfig) -> anyhow::Error {
    if let Some(misread) = DiscoverMisread::of(&e) {
        return misread;
    }
    let said = plainly(&e.to_string());
    // A server behind OAuth that has no login here, or refuses the login's
    // scopes, says so in rmcp's words: the command that mends it is named.
    let refused_for = match &e {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            insufficient_scope(error)
        }
        other => insufficient_scope(other),
    };
    let hint = if let Some(scope) = refused_for {
        format!(
            " (it asks for scope \"{scope}\", which this login lacks: run \
             `cosmos login {} --mcp-config FILE --scope {}`)",
            config.name,
            scope
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" --scope ")
        )
    } else if said.contains("Auth required") {
        format!(
            " (it needs a login: run `cosmos login {} --mcp-config FILE`)",
            config.name
        )
    } else {
        String::new()
    };
    anyhow!("connecting to {}: {said}{hint}", config.target())
}

/// Why a server did not start: the error, with the process's last line on stderr, which says
/// why far better than the transport does ("connection closed: initialize response" for a
/// server that exited on `No module named …`).
fn with_last_words(e: &anyhow::Error, stderr: &StderrTail) -> String {
    let said = stderr.text().and_then(|t| {
        t.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    });
    match said {
        Some(line) => format!("{e:#}; its last words: {line}"),
        None => format!("{e:#}"),
    }
}

/// Why listing a server's tools failed; a login that no longer holds (expired, or the server
/// moved to another authorization server) names the command that mends it.
fn listing_failed(e: &ServiceError, server: &str) -> String {
    let said = plainly(&e.to_string());
    let hint = if said.contains("Auth required") {
        format!(" (its login no longer holds: run `cosmos login {server} --mcp-config FILE`)")
    } else {
        String::new()
    };
    format!("listing tools failed: {said}{hint}")
}

/// A listed tool as the run records it, named `SERVER:TOOL`.
fn tool_info(server: &str, t: &rmcp::model::Tool) -> ToolInfo {
    ToolInfo {
        name: format!("{server}:{}", t.name),
        description: t.description.as_deref().unwrap_or_default().to_string(),
        input_schema: cosmos_trajectory::event::ToolSchema::new(Value::Object(
            t.input_schema.as_ref().clone(),
        )),
        output_schema: t
            .output_schema
            .as_ref()
            .map(|s| Box::new(Value::Object(s.as_ref().clone()))),
        annotations: t
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok())
            .map(Box::new),
        title: t.title.clone(),
        icons: as_listed(&t.icons),
        meta: as_listed(&t.meta),
    }
}

/// Where to log into an HTTP server, when it is ours to: a server given its own Authorization
/// header is not.
fn login_of(config: &ServerConfig) -> Option<(String, super::mcp_json::OAuthClient)> {
    match &config.transport {
        Transport::Http {
            url,
            oauth,
            headers,
        } if !headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization")) =>
        {
            Some((url.clone(), (**oauth).clone()))
        }
        _ => None,
    }
}

/// A round that asks for input, as a run records it: what it asks for, by key and kind (the
/// client's answers come in its next call).
fn asks_input(asked: &rmcp::model::InputRequiredResult) -> String {
    let requests: Vec<String> = asked
        .input_requests
        .iter()
        .flatten()
        .map(|(key, request)| {
            let kind = match request {
                rmcp::model::InputRequest::CreateMessage(_) => "a sampled message",
                rmcp::model::InputRequest::Elicitation(_) => "a form",
                rmcp::model::InputRequest::ListRoots(_) => "the roots",
                _ => "input",
            };
            format!("{key} ({kind})")
        })
        .collect();
    format!(
        "[the server asks the client for input first: {}]",
        if requests.is_empty() {
            "nothing named".to_string()
        } else {
            requests.join(", ")
        }
    )
}

fn failed(start: Instant, message: String, server_died: Option<ServerFailure>) -> CallOutcome {
    CallOutcome {
        server_died,
        ..CallOutcome::failure(message, start.elapsed())
    }
}

impl CallOutcome {
    /// A call that failed outside the tool (`message`: timed out, cut off, unknown tool, no
    /// server) after `latency`: the one shape of such a failure, whoever met it.
    pub fn failure(message: String, latency: Duration) -> Self {
        Self {
            result: Observation {
                text: message.clone(),
                is_error: true,
                ..Default::default()
            },
            error: Some(message),
            latency,
            server_died: None,
            reply: None,
            elicited: Vec::new(),
            state_change: None,
            input_required: None,
            refused: None,
        }
    }
}

/// A stdio server's last stderr lines, filled by a reader task until the pipe closes.
#[derive(Clone)]
struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// True while nothing is reading (no stderr, or the pipe has closed).
    closed: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Default for StderrTail {
    fn default() -> Self {
        Self {
            lines: Arc::default(),
            closed: Arc::new(tokio::sync::watch::Sender::new(true)),
        }
    }
}

impl StderrTail {
    /// Reads `pipe` into the ring until it closes: bytes, not text, so no line that is not
    /// UTF-8 ends the reading (a pipe nobody reads makes the server's next write fail); a line
    /// ends at `\n` or `\r` (a progress bar's redraw) and keeps its first
    /// [`STDERR_LINE_BYTES`] bytes, decoded lossily, so a line that never ends takes no more.
    fn read_from(&self, mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static) {
        use tokio::io::AsyncReadExt;
        self.closed.send_replace(false);
        let tail = self.clone();
        tokio::spawn(async move {
            let mut chunk = vec![0u8; 8 << 10];
            let mut line: Vec<u8> = Vec::new();
            while let Ok(n) = pipe.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                for &b in &chunk[..n] {
                    if b == b'\n' || b == b'\r' {
                        tail.push_line(&line);
                        line.clear();
                    } else if line.len() < STDERR_LINE_BYTES {
                        line.push(b);
                    }
                }
            }
            tail.push_line(&line);
            tail.closed.send_replace(true);
        });
    }

    /// Keeps a line (not an empty one), dropping the oldest beyond [`STDERR_LINES`].
    fn push_line(&self, line: &[u8]) {
        if line.is_empty() {
            return;
        }
        let text: String = String::from_utf8_lossy(line)
            .chars()
            .take(STDERR_LINE_CHARS)
            .collect();
        let mut buf = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if buf.len() == STDERR_LINES {
            buf.pop_front();
        }
        buf.push_back(text);
    }

    /// Waits until the pipe has closed, so a process that has exited has had its last lines
    /// read, but no longer than [`STDERR_DRAIN`] (a child it left behind may hold the pipe).
    async fn drained(&self) {
        let mut closed = self.closed.subscribe();
        let _ = tokio::time::timeout(STDERR_DRAIN, closed.wait_for(|c| *c)).await;
    }

    /// The lines, joined; `None` when there are none.
    fn text(&self) -> Option<String> {
        let buf = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        (!buf.is_empty()).then(|| buf.iter().cloned().collect::<Vec<_>>().join("\n"))
    }
}

/// An MCP `CallToolResult` reduced to an [`Observation`]: text items joined, other content
/// as placeholders, capped at [`MAX_RESULT_BYTES`].
pub fn observation(result: &CallToolResult) -> Observation {
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => format!("[{}, {} bytes base64]", i.mime_type, i.data.len()),
            ContentBlock::Audio(a) => format!("[{}, {} bytes base64]", a.mime_type, a.data.len()),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                ResourceContents::BlobResourceContents { uri, .. } => format!("[resource {uri}]"),
                _ => "[resource]".to_string(),
            },
            ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
            // Kinds newer than this build: say so rather than drop them.
            _ => "[content of a kind this build does not know]".to_string(),
        })
        .collect();
    let mut capped = Observation {
        text: parts.join("\n"),
        ..Default::default()
    };
    capped.cap_text(MAX_RESULT_BYTES);
    let (mut text, mut truncated_bytes) = (capped.text, capped.truncated_bytes);
    // A huge structured result would defeat the cap: it is dropped, and the text says so.
    let mut structured = result
        .structured_content
        .as_ref()
        .filter(|v| !v.is_null())
        .cloned();
    if let Some(size) = structured
        .as_ref()
        .map(|v| v.to_string().len())
        .filter(|&n| n > MAX_RESULT_BYTES)
    {
        structured = None;
        truncated_bytes += size as u64;
        text.push_str(&format!(
            "\n[structuredContent of {size} bytes not recorded: over {} MiB]",
            MAX_RESULT_BYTES >> 20
        ));
    }
    Observation {
        text,
        structured: structured.map(Box::new),
        is_error: result.is_error.unwrap_or(false),
        truncated_bytes,
    }
}

/// Timeouts for servers, and how their requests for input are answered.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Start, initialise and list tools. Some Python servers take 10 s; the default allows 60.
    pub startup: Duration,
    /// One tool call.
    pub call: Duration,
    /// A server's elicitation (default: declined).
    pub elicitation: super::elicitation::Elicitation,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            startup: Duration::from_secs(60),
            call: Duration::from_secs(60),
            elicitation: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Hardening VI: a header cosmos cannot send is named by its name, never its value, in
    /// words no redaction mistakes for a `Name: value` pair.
    #[test]
    fn a_bad_header_is_named_and_its_value_never_said() {
        let headers = [("X-Api-Key".to_string(), "k3y\nsecret-v4lue".to_string())].into();
        let said = format!(
            "{:#}",
            http_config("http://127.0.0.1:1/mcp", &headers).unwrap_err()
        );
        assert!(
            said.contains("X-Api-Key") && !said.contains("secret-v4lue"),
            "{said}"
        );
        let redacted = cosmos_trajectory::redact::Redactor::new().redact_str(&said);
        assert_eq!(redacted, None, "{said}");
        let headers = [("Bad Name".to_string(), "v".to_string())].into();
        let said = format!(
            "{:#}",
            http_config("http://127.0.0.1:1/mcp", &headers).unwrap_err()
        );
        assert!(said.contains("\"Bad Name\""), "{said}");
    }

    #[test]
    fn rmcps_transport_type_name_is_left_out_of_what_a_person_reads() {
        let said = "Transport send error: Transport [cosmos_engine::mcp::arrivals::Counted<rmcp::transport::worker::WorkerTransport<X<Y>>>] error: Auth required";
        assert_eq!(plainly(said), "Transport send error: Auth required");
        assert_eq!(plainly("connection closed"), "connection closed");
    }

    /// A result as a server sends it on the wire.
    fn wire(value: Value) -> CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn results_become_observations() {
        let o = observation(&wire(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}], "isError": true, "structuredContent": {"x": 1}}),
        ));
        assert_eq!(o.text, "a\n[image/png, 4 bytes base64]");
        assert!(o.is_error);
        assert_eq!(o.structured, Some(Box::new(json!({"x": 1}))));
    }

    #[test]
    fn a_huge_structured_result_is_dropped_with_a_marker() {
        let big = "x".repeat(MAX_RESULT_BYTES + 10);
        let o = observation(&wire(
            json!({"content": [{"type": "text", "text": "head"}], "structuredContent": {"blob": big}}),
        ));
        assert_eq!(o.structured, None);
        assert!(
            o.text
                .starts_with("head\n[structuredContent of 1048597 bytes not recorded"),
            "{}",
            o.text
        );
        assert_eq!(o.truncated_bytes, 1_048_597);
    }

    #[test]
    fn huge_results_are_capped() {
        let big = "é".repeat(MAX_RESULT_BYTES);
        let o = observation(&wire(json!({"content": [{"type": "text", "text": big}]})));
        assert!(o.text.len() <= MAX_RESULT_BYTES);
        assert_eq!(
            o.text.len() as u64 + o.truncated_bytes,
            (MAX_RESULT_BYTES * 2) as u64
        );
    }
}
