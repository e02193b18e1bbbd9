//! The protocol log of a client's session (`trajectory::wire`): [`Tapped`] wraps the client's
//! transport (stdio, or each streamable-HTTP session's, through [`TappedSessions`]) and notes
//! every JSON-RPC message that passes, both ways, with a reply's latency since its request.
//! What passes before the session's run is opened (`initialize`, listings) waits, bounded, and
//! is written first once it is; the handler finds its log by its HTTP session's id ([`Wires`]).
//!
//! The session's protocol log (`trajectory::wire`): `Tapped` wraps the client's
//! transport (stdio's; over HTTP each session's, made by `TappedSessions` around rmcp's session
//! manager, found by the handler through `Wires` by the session's id) and `Wire` notes every
//! message both ways, pairs a reply with its request for its latency, redacts, cuts to 4 KiB, and
//! holds what passes before the run opens (bounded). Invariant: taken under rmcp, so no part of the
//! proxy has to remember to note what it sends.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::sync::Weak;

use futures::Stream;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

use cosmos_trajectory::out_file::{Own, open_own};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::wire::{Direction, MESSAGE_CAP, WireMessage, wire_path};
use cosmos_trajectory::writer::fit;

/// Messages kept while no run is open (a client that only looks); past this they are dropped.
const PENDING: usize = 1_000;

/// Most bytes one protocol log is given (about 16,000 messages cut to 4 KiB, far more of the
/// usual small ones); past it the log stops, saying so in the proxy's log, and the run goes on.
const LOG_BYTES: u64 = 64 << 20;

/// One client's protocol log.
pub struct Wire {
    connected: Instant,
    redactor: Redactor,
    log: Mutex<Log>,
}

#[derive(Default)]
struct Log {
    pending: Vec<WireMessage>,
    dropped: u64,
    file: Option<(PathBuf, File)>,
    /// Bytes written to `file`, and the most it may take.
    written: u64,
    cap: u64,
    /// The log stopped (full, or unwritable) until the next run's.
    stopped: bool,
    /// Requests not yet answered, by direction and id: when each went, and its method.
    asked: HashMap<(Direction, String), (Instant, Option<String>)>,
}

/// Requests awaiting a reply that the log remembers (a client that never reads its replies
/// cannot grow it without bound): beyond this, the oldest are forgotten.
const ASKED: usize = 4_096;

impl Log {
    fn write(&mut self, message: &WireMessage) {
        if self.stopped {
            return;
        }
        let Some((path, file)) = &mut self.file else {
            if self.pending.len() < PENDING {
                self.pending.push(message.clone());
            } else {
                self.dropped += 1;
            }
            return;
        };
        let mut line = serde_json::to_vec(message).unwrap_or_default();
        line.push(b'\n');
        if self.written + line.len() as u64 > self.cap {
            tracing::warn!(
                "the protocol log {} reached {} bytes: later messages are not kept",
                path.display(),
                self.cap
            );
            self.stop();
            return;
        }
        self.written += line.len() as u64;
        // One write of the whole line, as the run's writer does.
        if let Err(e) = file.write_all(&line).and_then(|()| file.flush()) {
            tracing::error!(
                "cosmos proxy stopped writing the protocol log {}: {e}",
                path.display()
            );
            self.stop();
        }
    }

    fn stop(&mut self) {
        self.file = None;
        self.stopped = true;
        self.pending.clear();
    }
}

impl Wire {
    /// A log for a client that connected now, redacting as its runs are redacted.
    pub fn new(redactor: Redactor) -> Arc<Self> {
        Self::within(redactor, LOG_BYTES)
    }

    /// [`Wire::new`], each log given at most `cap` bytes.
    fn within(redactor: Redactor, cap: u64) -> Arc<Self> {
        Arc::new(Self {
            connected: Instant::now(),
            redactor,
            log: Mutex::new(Log {
                cap,
                ..Log::default()
            }),
        })
    }

    /// Notes one JSON-RPC message going `dir` (redacted, cut to [`MESSAGE_CAP`]): a request
    /// is remembered until its reply, which is noted with its method and latency.
    pub fn note(&self, dir: Direction, message: &impl serde::Serialize) {
        let mut message = serde_json::to_value(message).unwrap_or_default();
        let bytes = serde_json::to_vec(&message).map_or(0, |b| b.len());
        let id = message.get("id").cloned();
        let mut method = message["method"].as_str().map(String::from);
        let now = Instant::now();
        let mut latency = None;
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(id) = &id {
            let key = id.to_string();
            if method.is_some() {
                if log.asked.len() >= ASKED {
                    log.asked.clear();
                }
                log.asked.insert((dir, key), (now, method.clone()));
            } else {
                let asker = match dir {
                    Direction::In => Direction::Out,
                    Direction::Out => Direction::In,
                };
                if let Some((asked, asked_method)) = log.asked.remove(&(asker, key)) {
                    latency = Some(now - asked);
                    method = asked_method;
                }
            }
        }
        // A progress token names a call's reports, chosen by the client; a credential
        // recogniser reads `…Token` as a secret, so the protocol's own are kept aside.
        let tokens = progress_tokens(&mut message);
        self.redactor.redact(&mut message);
        for (at, token) in tokens {
            if let Some(slot) = message.pointer_mut(at) {
                *slot = token;
            }
        }
        let cut = bytes > MESSAGE_CAP;
        if cut {
            fit(&mut message, MESSAGE_CAP);
        }
        let noted = WireMessage {
            t_ms: self.connected.elapsed().as_millis() as u64,
            dir,
            id,
            method,
            bytes: bytes as u64,
            latency_ms: latency.map(|l: Duration| l.as_millis() as u64),
            message,
            cut,
        };
        log.write(&noted);
    }

    /// Stops writing beside the run at `run` (its session ended: the file is closed, not held
    /// while the client idles); what comes next waits for the next session's run.
    pub fn detach(&self, run: &Path) {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        if log.file.as_ref().is_some_and(|(p, _)| *p == wire_path(run)) {
            log.file = None;
        }
    }

    /// Writes the log beside the run at `run` from now on (what waited first); a session
    /// opened again after idling writes beside its new run.
    pub fn attach(&self, run: &Path) {
        let path = wire_path(run);
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        if log.file.as_ref().is_some_and(|(p, _)| *p == path) {
            return;
        }
        // Beside the run, at a name anyone who can write to the folder can guess.
        match open_own(&path, Own::Append) {
            Ok(file) => {
                log.written = file.metadata().map_or(0, |m| m.len());
                log.stopped = false;
                log.file = Some((path, file));
                for waiting in std::mem::take(&mut log.pending) {
                    log.write(&waiting);
                }
                if log.dropped > 0 {
                    tracing::warn!(
                        dropped = log.dropped,
                        "the protocol log lost messages sent before the session's run opened"
                    );
                }
            }
            Err(e) => tracing::error!(
                "cosmos proxy cannot write the protocol log {}: {e:#}",
                path.display()
            ),
        }
    }
}

/// Takes the progress tokens out of `message` (a request's `_meta`, a progress notification's
/// `params`), with where each was.
fn progress_tokens(message: &mut serde_json::Value) -> Vec<(&'static str, serde_json::Value)> {
    ["/params/_meta/progressToken", "/params/progressToken"]
        .into_iter()
        .filter_map(|at| Some((at, message.pointer_mut(at)?.take())))
        .collect()
}

/// A transport whose every message is noted in a [`Wire`].
pub struct Tapped<T> {
    inner: T,
    wire: Arc<Wire>,
}

impl<T> Tapped<T> {
    /// Taps `inner` into `wire`.
    pub fn new(inner: T, wire: Arc<Wire>) -> Self {
        Self { inner, wire }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Tapped<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.wire.note(Direction::Out, &item);
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.inner.receive().await?;
        self.wire.note(Direction::In, &message);
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The protocol logs of the HTTP sessions open, by session id, for their handlers to find.
#[derive(Default)]
pub struct Wires {
    by_session: Mutex<HashMap<String, Weak<Wire>>>,
}

impl Wires {
    /// The log of the HTTP session `id`, while it is open.
    pub fn of(&self, id: &str) -> Option<Arc<Wire>> {
        let mut by_session = self.by_session.lock().unwrap_or_else(|p| p.into_inner());
        by_session.retain(|_, w| w.strong_count() > 0);
        by_session.get(id).and_then(Weak::upgrade)
    }
}

/// rmcp's session manager, each session's transport tapped into a log of its own.
pub struct TappedSessions<M> {
    inner: Arc<M>,
    wires: Arc<Wires>,
    redactor: Redactor,
}

impl<M> TappedSessions<M> {
    /// Taps the sessions `inner` makes, each log redacted by `redactor` and listed in `wires`.
    pub fn new(inner: Arc<M>, wires: Arc<Wires>, redactor: Redactor) -> Self {
        Self {
            inner,
            wires,
            redactor,
        }
    }
}

impl<M: SessionManager> SessionManager for TappedSessions<M> {
    type Error = M::Error;
    type Transport = Tapped<M::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        let wire = Wire::new(self.redactor.clone());
        self.wires
            .by_session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), Arc::downgrade(&wire));
        Ok((id, Tapped::new(transport, wire)))
    }

    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<ServerJsonRpcMessage, Self::Error>> + Send {
        self.inner.initialize_session(id, message)
    }

    fn has_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        self.inner.has_session(id)
    }

    fn close_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close_session(id)
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.resume(id, last_event_id)
    }

    fn event_store(
        &self,
    ) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Hardening VI: secrets written inside a message's strings (a JSON pair, a header in a
    /// curl line, a webhook URL) reach no protocol log.
    #[test]
    fn secrets_inside_strings_reach_no_protocol_log() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("s.jsonl");
        let wire = Wire::new(Redactor::new());
        wire.attach(&run);
        wire.note(
            Direction::In,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "shell", "arguments": {"command":
                    "curl -H 'X-Api-Key: k-Q5d6e7f8' https://api.example.com/v1 -d '{\"password\": \"pw-Q1a2b3c4\"}'; \
                     post https://hooks.slack.com/services/T1/B2/Qwebhook99"}}}),
        );
        let text = std::fs::read_to_string(wire_path(&run)).unwrap();
        for secret in ["k-Q5d6e7f8", "pw-Q1a2b3c4", "Qwebhook99"] {
            assert!(!text.contains(secret), "{secret}: {text}");
        }
        assert!(text.contains("https://api.example.com/v1"), "{text}");
    }

    /// Hardening VI: the log's name beside a run is guessable; a link planted there is never
    /// written through (the log is then not written, and the error logged).
    #[test]
    fn a_planted_link_at_the_logs_name_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("s.jsonl");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        std::os::unix::fs::symlink(&victim, wire_path(&run)).unwrap();
        let wire = Wire::new(Redactor::new());
        wire.attach(&run);
        wire.note(
            Direction::In,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    }

    #[test]
    fn a_reply_is_paired_with_its_request_and_what_came_first_is_written_first() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("s.jsonl");
        let wire = Wire::new(Redactor::with_secrets(["sk-very-secret-1234"]));
        wire.note(
            Direction::In,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        );
        wire.note(
            Direction::Out,
            &json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        wire.attach(&run);
        wire.note(
            Direction::In,
            &json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {
                "name": "f", "arguments": {"api_key": "sk-very-secret-1234", "note": "x".repeat(9000)}}}),
        );
        // The proxy's own request to the client, answered: paired the other way round.
        wire.note(
            Direction::Out,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"}),
        );
        wire.note(
            Direction::In,
            &json!({"jsonrpc": "2.0", "id": 0, "result": {"roots": []}}),
        );
        wire.note(
            Direction::Out,
            &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "p-1", "progress": 1}}),
        );
        let text = std::fs::read_to_string(wire_path(&run)).unwrap();
        assert!(!text.contains("sk-very-secret-1234"), "{text}");
        let log = cosmos_trajectory::wire::read(&wire_path(&run)).unwrap();
        let methods: Vec<_> = log
            .messages
            .iter()
            .map(|m| {
                (
                    m.dir,
                    m.method.as_deref().unwrap_or("?"),
                    m.latency_ms.is_some(),
                )
            })
            .collect();
        assert_eq!(
            methods,
            [
                (Direction::In, "initialize", false),
                (Direction::Out, "initialize", true),
                (Direction::In, "tools/call", false),
                (Direction::Out, "roots/list", false),
                (Direction::In, "roots/list", true),
                (Direction::Out, "notifications/progress", false),
            ]
        );
        // The protocol's own token is no credential: kept.
        assert_eq!(log.messages[5].message["params"]["progressToken"], "p-1");
        let call = &log.messages[2];
        assert!(call.cut && call.bytes > 9000, "{call:?}");
        assert!(serde_json::to_vec(&call.message).unwrap().len() <= MESSAGE_CAP + 256);
    }

    #[test]
    fn a_full_log_stops_whole_lines_and_the_next_run_gets_a_log_again() {
        let dir = tempfile::tempdir().unwrap();
        let wire = Wire::within(Redactor::new(), 1_000);
        wire.attach(&dir.path().join("a.jsonl"));
        for id in 0..100 {
            wire.note(
                Direction::In,
                &json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
            );
        }
        let full = std::fs::read_to_string(dir.path().join("a.wire")).unwrap();
        assert!(
            full.len() <= 1_000 && full.ends_with('\n'),
            "{}",
            full.len()
        );
        let kept = cosmos_trajectory::wire::read(&dir.path().join("a.wire")).unwrap();
        assert!(!kept.messages.is_empty() && kept.problems.is_empty());
        wire.attach(&dir.path().join("b.jsonl"));
        wire.note(
            Direction::In,
            &json!({"jsonrpc": "2.0", "id": 100, "method": "ping"}),
        );
        let next = cosmos_trajectory::wire::read(&dir.path().join("b.wire")).unwrap();
        assert_eq!(next.messages.len(), 1);
    }
}
