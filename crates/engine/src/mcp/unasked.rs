//! What a server sends cosmos unasked, beyond progress and requests for input: requests for a
//! sampled message or for the client's roots, and notifications (log messages, resource
//! updates, list changes, anything else). An agent's run has nobody to pass them to, so cosmos
//! declares none of those capabilities to its servers and is sent none. `cosmos proxy` has
//! clients: it installs a [`Relay`] before its servers start, they are told that cosmos samples
//! and has roots, and what they send goes to the relay, which passes it to a client.
//!
//! One relay per process, as there is one proxy per process (`elicitation::ask_through` is the
//! same shape for requests for input); a connection made for one client of the proxy
//! (`Server::connect_for_client`) has a relay of its own, to that client alone.
//!
//! The port for what a server sends unasked beyond progress and elicitation
//! (sampling and roots requests, log messages, resource updates, list changes): the process's one
//! `Relay`, installed by `cosmos proxy` before its servers start (`relay_through`). With one the
//! `Listener` declares sampling, roots and URL elicitation and hands each over; without one (an
//! agent's run) it declares none and is sent none. Invariant: this layer never names the proxy.

// Sampling, roots and logging are deprecated by the 2026-07-28 protocol (SEP-2577); the
// servers and clients of earlier versions a proxy stands between still use them.
#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use super::elicitation::Question;
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ListRootsResult, ServerNotification,
};

/// A future a relay answers with.
pub type Answering<T> = Pin<Box<dyn Future<Output = Result<T, ErrorData>> + Send>>;

/// Where the servers' unasked traffic goes (implemented by `cosmos proxy`).
pub trait Relay: Send + Sync {
    /// `server` asks for a sampled message.
    fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Answering<CreateMessageResult>;
    /// `server` asks for the client's roots.
    fn list_roots(&self, server: &str) -> Answering<ListRootsResult>;
    /// `server` tells something. Called at once, in the order the connection hands them over,
    /// and must not wait (a relay queues what it sends).
    fn notify(&self, server: &str, notification: ServerNotification);
    /// `server` asks for input (`Question::answer` is where the answer goes); false when
    /// nobody can be asked. By default, whoever answers for the process
    /// (`elicitation::ask_through`).
    fn ask(&self, question: Question) -> bool {
        super::elicitation::ask(question)
    }
    /// The capabilities of the one client this relay speaks for, declared to the server in
    /// its stead (`None`: the process's relay, for every client, declares what it relays).
    fn client_capabilities(&self) -> Option<rmcp::model::ClientCapabilities> {
        None
    }
}

static RELAY: OnceLock<Arc<dyn Relay>> = OnceLock::new();

/// Relays the servers' traffic through `relay` from now on; the servers started after this see
/// a client that samples and has roots. A second call is refused (one proxy per process).
pub fn relay_through(relay: Arc<dyn Relay>) -> anyhow::Result<()> {
    RELAY
        .set(relay)
        .map_err(|_| anyhow::anyhow!("this process already relays its servers' traffic"))
}

/// Where one connection's unasked traffic goes: its own relay (a proxy's connection for one
/// client), else the process's.
pub(crate) fn relay_of(own: Option<&Arc<dyn Relay>>) -> Option<&Arc<dyn Relay>> {
    own.or_else(|| RELAY.get())
}
