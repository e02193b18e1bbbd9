//! The proxy's clients: each connected one (its connection, the log level it asked for, the
//! resources it subscribed to, and an outbox that sends it notifications in order), and which
//! of them has a call in flight on which upstream server, so that what a server sends during a
//! call (a request for input or for a sampled message, a log message) goes to that call's
//! client.
//!
//! MCP ties a server's request to no call over stdio, so the proxy knows whose call it is only
//! when exactly one is in flight on that server; with several it declines rather than ask the
//! wrong client.
//!
//! The connected clients (`Client`: its outbox, which sends notifications in
//! order; its log level; its subscriptions) and whose call is in flight on which server
//! (`Clients::calling`, `sole_caller`, `whose`), and the session it is attached to, where
//! `Client::record` writes what passed beside tool calls (nothing while no session is open).

// Logging and roots are deprecated by the 2026-07-28 protocol (SEP-2577); clients of earlier
// versions use them.
#![allow(deprecated)]

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, ServerNotification};

use super::client_session::Session;
use cosmos_trajectory::event::EventBody;

/// Notifications waiting to be sent to one client; beyond this a slow client's are dropped
/// (an upstream is never held back by a client that does not read).
const OUTBOX: usize = 256;

/// What a client's outbox sends, in order.
enum Outgoing {
    Tell(Box<ServerNotification>),
    /// Answered once everything queued before it has been sent.
    Flushed(tokio::sync::oneshot::Sender<()>),
}

/// One connected client.
pub struct Client {
    /// Its connection.
    pub peer: rmcp::Peer<RoleServer>,
    outbox: tokio::sync::mpsc::Sender<Outgoing>,
    /// The least severe log level it wants (`logging/setLevel`); all until it says.
    level: Mutex<Option<LoggingLevel>>,
    /// The resource URIs it subscribed to.
    subscribed: Mutex<BTreeSet<String>>,
    /// Its session's run, once one is open: where what passes to it beside calls is recorded.
    session: Mutex<Weak<Session>>,
    /// Its outbox is full and notifications are being dropped.
    dropping: std::sync::atomic::AtomicBool,
}

impl Client {
    /// A client on `peer`, with its outbox's sender running.
    pub fn new(peer: rmcp::Peer<RoleServer>) -> Arc<Self> {
        let (outbox, mut queued) = tokio::sync::mpsc::channel(OUTBOX);
        let sending = peer.clone();
        tokio::spawn(async move {
            while let Some(next) = queued.recv().await {
                match next {
                    // A client gone is nobody's failure: the rest are dropped with it. One
                    // notification refused is only that one.
                    Outgoing::Tell(n) => {
                        if let Err(e) = sending.send_notification(*n).await {
                            if sending.is_transport_closed() {
                                break;
                            }
                            tracing::warn!("a notification for the client was refused: {e}");
                        }
                    }
                    Outgoing::Flushed(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Arc::new(Self {
            peer,
            outbox,
            level: Mutex::new(None),
            subscribed: Mutex::new(BTreeSet::new()),
            session: Mutex::new(Weak::new()),
            dropping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Records what passes to this client from now on in `session`.
    pub fn attach(&self, session: &Arc<Session>) {
        *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Arc::downgrade(session);
    }

    /// Records `body` in the client's session, when one is open (a client that only looks
    /// leaves no run behind, so a log message alone opens none).
    pub fn record(&self, body: EventBody) {
        let session = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .upgrade();
        if let Some(session) = session.filter(|s| !s.is_closed())
            && let Err(e) = session.record(body)
        {
            tracing::error!("cosmos proxy could not record an exchange: {e:#}");
        }
    }

    /// Queues `notification` after every one queued before it; one that finds the outbox full
    /// (a client that does not read) is dropped, and the first of each such run said.
    pub fn tell(&self, notification: ServerNotification) {
        match self.outbox.try_send(Outgoing::Tell(Box::new(notification))) {
            Ok(()) => self.dropping.store(false, Ordering::Relaxed),
            Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                if !self.dropping.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "{} reads its notifications too slowly: {OUTBOX} are waiting, later ones \
                         are dropped until it catches up",
                        self.name()
                    );
                }
            }
            // The client is gone.
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// Done once everything queued so far has been sent (or the client is gone).
    pub async fn flushed(&self) {
        let (done, sent) = tokio::sync::oneshot::channel();
        if self.outbox.send(Outgoing::Flushed(done)).await.is_ok() {
            let _ = sent.await;
        }
    }

    /// The client's name and version, as its `initialize` gave them.
    pub fn name(&self) -> String {
        self.peer.peer_info().map_or_else(
            || "the client".to_string(),
            |i| format!("{} {}", i.client_info.name, i.client_info.version),
        )
    }

    /// What the client declared it can do.
    pub fn capabilities(&self) -> rmcp::model::ClientCapabilities {
        self.peer
            .peer_info()
            .map(|i| i.capabilities.clone())
            .unwrap_or_default()
    }

    /// Sets the least severe log level the client wants.
    pub fn set_level(&self, level: LoggingLevel) {
        *self.level.lock().unwrap_or_else(|p| p.into_inner()) = Some(level);
    }

    /// The level it asked for, if it did.
    pub fn level(&self) -> Option<LoggingLevel> {
        *self.level.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True when a log message of `level` is one it wants.
    pub fn wants_log(&self, level: LoggingLevel) -> bool {
        self.level()
            .is_none_or(|least| severity(level) >= severity(least))
    }

    /// Notes a subscription to `uri` (`false`: an unsubscription).
    pub fn subscribe(&self, uri: &str, on: bool) {
        let mut subscribed = self.subscribed.lock().unwrap_or_else(|p| p.into_inner());
        if on {
            subscribed.insert(uri.to_string());
        } else {
            subscribed.remove(uri);
        }
    }

    /// True when it subscribed to `uri`.
    pub fn subscribed_to(&self, uri: &str) -> bool {
        self.subscribed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(uri)
    }
}

/// A log level's rank, least severe first (RFC 5424's order, which MCP's levels follow).
pub fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Each upstream server's calls in flight: an id and the calling client.
type InFlight = HashMap<String, Vec<(u64, Arc<Client>)>>;

/// The connected clients, and which has a call in flight on which server.
#[derive(Default)]
pub struct Clients {
    open: Mutex<Vec<Weak<Client>>>,
    in_flight: Mutex<InFlight>,
    next: AtomicU64,
}

/// A call in flight: dropping it says the call is over.
pub struct Calling<'a> {
    clients: &'a Clients,
    server: String,
    id: u64,
}

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.clients.in_flight();
        if let Some(calls) = in_flight.get_mut(&self.server) {
            calls.retain(|(id, _)| *id != self.id);
        }
    }
}

impl Clients {
    fn in_flight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a newly connected client (held weakly: it is gone when its session is).
    pub fn connected(&self, client: &Arc<Client>) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|c| c.strong_count() > 0);
        open.push(Arc::downgrade(client));
    }

    /// The clients connected now.
    pub fn open(&self) -> Vec<Arc<Client>> {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|c| !c.peer.is_transport_closed())
            .collect()
    }

    /// Notes that `client` is calling `server` (or asking it something else) until the
    /// returned guard is dropped.
    pub fn calling(&self, server: &str, client: Arc<Client>) -> Calling<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.in_flight()
            .entry(server.to_string())
            .or_default()
            .push((id, client));
        Calling {
            clients: self,
            server: server.to_string(),
            id,
        }
    }

    /// The clients with a call in flight on `server` (each once, however many calls it has
    /// there).
    pub fn calling_now(&self, server: &str) -> Vec<Arc<Client>> {
        let mut clients: Vec<Arc<Client>> = Vec::new();
        for (_, client) in self.in_flight().get(server).into_iter().flatten() {
            if !clients.iter().any(|c| Arc::ptr_eq(c, client)) {
                clients.push(client.clone());
            }
        }
        clients
    }

    /// The one client calling `server` now (by one call: with two in flight, MCP does not
    /// say which call a request belongs to), or why there is not one.
    pub fn sole_caller(&self, server: &str) -> Result<Arc<Client>, String> {
        let in_flight = self.in_flight();
        match in_flight.get(server).map(Vec::as_slice).unwrap_or_default() {
            [(_, client)] => Ok(client.clone()),
            [] => Err(format!("no client's call to {server} is in flight")),
            calls => Err(format!(
                "{} calls to {server} are in flight: the proxy cannot tell whose client to ask",
                calls.len()
            )),
        }
    }

    /// The client a request of `server` that is tied to no call is for: the one calling it
    /// now, else the only client connected; or why there is none.
    pub fn whose(&self, server: &str) -> Result<Arc<Client>, String> {
        self.sole_caller(server).or_else(|why| {
            if !self.calling_now(server).is_empty() {
                return Err(why);
            }
            match self.open().as_slice() {
                [only] => Ok(only.clone()),
                [] => Err("no client is connected".into()),
                many => Err(format!(
                    "{} clients are connected and none is calling {server}: the proxy cannot \
                     tell which to ask",
                    many.len()
                )),
            }
        })
    }

    /// The clients a notification of `server` that names no resource goes to: those with a
    /// request in flight there (a call, or a prompt, read, level or subscription passed on:
    /// what the server says meanwhile is theirs), else the only client connected, else the
    /// clients that asked for log messages (`logging/setLevel`) — never a client that did
    /// not ask and whose request did not cause it.
    pub fn audience(&self, server: &str) -> Vec<Arc<Client>> {
        let calling = self.calling_now(server);
        if !calling.is_empty() {
            return calling;
        }
        let open = self.open();
        if open.len() == 1 {
            return open;
        }
        open.into_iter().filter(|c| c.level().is_some()).collect()
    }
}
