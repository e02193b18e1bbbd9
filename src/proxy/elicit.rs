//! A server's request for input (MCP elicitation) during a call made through the proxy goes to
//! the client whose call it is: the client's person answers, as they would with the server
//! connected directly. The request and the answer are recorded with the call like a run's.
//!
//! MCP ties a server's request to no call of the client's over stdio, so the proxy knows whose
//! call it is only when exactly one call is in flight on that server; with more than one it
//! declines and says why rather than ask the wrong client.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::ElicitationMode;

use crate::mcp::elicitation::{ANSWER_WITHIN, Answer, Question};

/// Each upstream server's calls in flight: an id and the calling client.
type InFlight = HashMap<String, Vec<(u64, rmcp::Peer<RoleServer>)>>;

/// The clients with a call in flight, per upstream server.
#[derive(Default)]
pub struct Callers {
    in_flight: Mutex<InFlight>,
    next: AtomicU64,
}

/// A call in flight: dropping it says the call is over.
pub struct Calling<'a> {
    callers: &'a Callers,
    server: String,
    id: u64,
}

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.callers.lock();
        if let Some(calls) = in_flight.get_mut(&self.server) {
            calls.retain(|(id, _)| *id != self.id);
        }
    }
}

impl Callers {
    fn lock(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that `peer`'s client is calling `server` until the returned guard is dropped.
    pub fn calling(&self, server: &str, peer: rmcp::Peer<RoleServer>) -> Calling<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock()
            .entry(server.to_string())
            .or_default()
            .push((id, peer));
        Calling {
            callers: self,
            server: server.to_string(),
            id,
        }
    }

    /// The one client calling `server` now, or why there is not one.
    fn sole(&self, server: &str) -> Result<rmcp::Peer<RoleServer>, String> {
        let in_flight = self.lock();
        match in_flight.get(server).map(Vec::as_slice).unwrap_or_default() {
            [(_, peer)] => Ok(peer.clone()),
            [] => Err(format!("no client's call to {server} is in flight")),
            calls => Err(format!(
                "{} calls to {server} are in flight: the proxy cannot tell whose client to ask",
                calls.len()
            )),
        }
    }
}

/// Answers the questions of this process's upstream servers by asking their callers' clients,
/// from now until the process ends.
pub fn forward_to_clients(callers: std::sync::Arc<Callers>) {
    let (tx, rx) = std::sync::mpsc::channel::<Question>();
    crate::mcp::elicitation::ask_through(Some(tx));
    let runtime = tokio::runtime::Handle::current();
    std::thread::spawn(move || {
        for question in rx {
            runtime.spawn(ask_client(callers.clone(), question));
        }
    });
}

/// Puts `question` to the client of the one call in flight on its server.
async fn ask_client(callers: std::sync::Arc<Callers>, question: Question) {
    let peer = match callers.sole(&question.server) {
        Ok(peer) => peer,
        Err(why) => return question.decline(why),
    };
    let client = peer.peer_info().map_or_else(
        || "the client".to_string(),
        |i| format!("{} {}", i.client_info.name, i.client_info.version),
    );
    let mode = match question.request {
        ElicitRequestParams::UrlElicitationParams { .. } => ElicitationMode::Url,
        _ => ElicitationMode::Form,
    };
    if !peer.supported_elicitation_modes().contains(&mode) {
        return question.decline(format!(
            "the client ({client}) does not take requests for input"
        ));
    }
    let answer = match peer
        .create_elicitation_with_timeout(question.request.clone(), Some(ANSWER_WITHIN))
        .await
    {
        Ok(result) => Answer {
            action: result.action,
            content: result.content,
            reason: format!("answered by the client ({client})"),
        },
        Err(e) => Answer {
            action: ElicitationAction::Decline,
            content: None,
            reason: format!("asking the client ({client}): {e}"),
        },
    };
    let _ = question.answer.send(answer);
}
