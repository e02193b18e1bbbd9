//! What the upstream servers send unasked, passed to the proxy's clients (`mcp::unasked`): a
//! request for a sampled message or for roots goes to the client whose call is in flight on
//! that server (else the only client connected), and is declined, saying why, when that
//! client did not declare it can answer; a log message goes to the clients calling that server
//! (else every client, as they share its connection) at the level each asked for; a resource
//! update to the clients subscribed to it; a list change to every client.
//!
//! The proxy's side of `mcp::unasked`: an upstream's sampling and roots requests to the
//! client `whose` names (declined, saying why, when it did not declare the capability), log
//! messages to the clients calling that server at their levels, resource updates to their
//! subscribers, list changes to all; each sampling (`sampled`, declined ones too) and log
//! message (`server_log`, 16 KiB) recorded in the sessions it reached.

// Sampling, roots and logging are deprecated by the 2026-07-28 protocol (SEP-2577); clients
// and servers of earlier versions use them.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ListRootsResult, ServerNotification,
};

use super::clients::{Client, Clients};
use cosmos_engine::mcp::MAX_RESULT_BYTES;
use cosmos_engine::mcp::{Answering, Relay};
use cosmos_trajectory::event::{EventBody, Exchange};

/// Longest log message recorded (a server that logs a megabyte a line is cut, and says so).
const LOG_BYTES: usize = 16 << 10;

/// A log message as a run records it.
fn log_exchange(server: &str, log: &rmcp::model::LoggingMessageNotification) -> Exchange {
    let params = &log.params;
    let level = serde_json::to_value(params.level).unwrap_or_default();
    let mut exchange = Exchange {
        server: server.to_string(),
        asked: Box::new(serde_json::json!({"level": level, "logger": params.logger})),
        ..Default::default()
    };
    exchange.result.text = match &params.data {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    exchange.result.cap_text(LOG_BYTES);
    exchange
}

/// The proxy's relay: its clients, or one of them (for the upstream sessions made for it).
pub struct ToClients {
    clients: Arc<Clients>,
    only: Option<Arc<Client>>,
}

impl ToClients {
    /// Every client: what a shared connection sends goes to the one whose request is in
    /// flight there.
    pub fn all(clients: Arc<Clients>) -> Self {
        Self {
            clients,
            only: None,
        }
    }

    /// `client` alone: its own upstream sessions speak to nobody else.
    pub fn one(clients: Arc<Clients>, client: Arc<Client>) -> Self {
        Self {
            clients,
            only: Some(client),
        }
    }

    /// The client a request of `server` goes to, or the error that declines it.
    fn asked(&self, server: &str, what: &str) -> Result<Arc<Client>, ErrorData> {
        if let Some(only) = &self.only {
            return Ok(only.clone());
        }
        self.clients.whose(server).map_err(|why| {
            ErrorData::invalid_request(format!("cosmos proxy declined {what}: {why}"), None)
        })
    }

    /// The clients `server`'s log messages go to.
    fn audience(&self, server: &str) -> Vec<Arc<Client>> {
        match &self.only {
            Some(only) => vec![only.clone()],
            None => self.clients.audience(server),
        }
    }

    /// The clients told of what concerns them all (a resource update, a list change).
    fn open(&self) -> Vec<Arc<Client>> {
        match &self.only {
            Some(only) => vec![only.clone()],
            None => self.clients.open(),
        }
    }
}

/// Nothing when the client declared `capability` (`has`); else the error that declines the
/// server's request for it.
fn declared(client: &Client, capability: &str, has: bool) -> Result<(), ErrorData> {
    if has {
        return Ok(());
    }
    Err(ErrorData::invalid_request(
        format!(
            "cosmos proxy declined a request for {capability}: the client ({}) did not declare \
             {capability}",
            client.name()
        ),
        None,
    ))
}

/// A client's failure to answer, as the server is told it.
fn answer_failed(client: &Client, e: rmcp::ServiceError) -> ErrorData {
    match e {
        rmcp::ServiceError::McpError(e) => e,
        other => ErrorData::internal_error(
            format!("cosmos proxy: asking {}: {other}", client.name()),
            None,
        ),
    }
}

impl Relay for ToClients {
    fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Answering<CreateMessageResult> {
        let asked = self.asked(server, "a request for sampling");
        let server = server.to_string();
        Box::pin(async move {
            let client = asked?;
            let asked = serde_json::to_value(&params).unwrap_or_default();
            let sampling = client.capabilities().sampling.is_some();
            if let Err(declined) = declared(&client, "sampling", sampling) {
                client.record(EventBody::Sampled(Exchange {
                    server,
                    asked: Box::new(asked),
                    error: Some(declined.message.to_string()),
                    ..Default::default()
                }));
                return Err(declined);
            }
            let started = std::time::Instant::now();
            let answered = client
                .peer
                .create_message(params)
                .await
                .map_err(|e| answer_failed(&client, e));
            let mut exchange = Exchange {
                server,
                asked: Box::new(asked),
                latency_ms: started.elapsed().as_millis() as u64,
                ..Default::default()
            };
            match &answered {
                Ok(reply) => {
                    let whole = serde_json::to_value(reply).unwrap_or_default();
                    exchange.result.text = whole["content"]["text"]
                        .as_str()
                        .map_or_else(|| whole["content"].to_string(), String::from);
                    // The reply's text is the result; who made it, beside it (not its
                    // content again, which may be a large image).
                    exchange.result.structured = Some(Box::new(serde_json::json!({
                        "model": whole["model"],
                        "stopReason": whole["stopReason"],
                        "role": whole["role"],
                    })));
                    exchange.result.cap_text(MAX_RESULT_BYTES);
                }
                Err(e) => exchange.error = Some(e.message.to_string()),
            }
            client.record(EventBody::Sampled(exchange));
            answered
        })
    }

    fn list_roots(&self, server: &str) -> Answering<ListRootsResult> {
        let asked = self.asked(server, "a request for roots");
        Box::pin(async move {
            let client = asked?;
            declared(&client, "roots", client.capabilities().roots.is_some())?;
            client
                .peer
                .list_roots()
                .await
                .map_err(|e| answer_failed(&client, e))
        })
    }

    fn notify(&self, server: &str, notification: ServerNotification) {
        let to: Vec<Arc<Client>> = match &notification {
            ServerNotification::LoggingMessageNotification(log) => self
                .audience(server)
                .into_iter()
                .filter(|c| c.wants_log(log.params.level))
                .collect(),
            ServerNotification::ResourceUpdatedNotification(updated) => self
                .open()
                .into_iter()
                .filter(|c| c.subscribed_to(&updated.params.uri))
                .collect(),
            ServerNotification::ResourceListChangedNotification(_)
            | ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::PromptListChangedNotification(_) => self.open(),
            ServerNotification::CustomNotification(_) => self.audience(server),
            // Progress goes with its call (the handler's `Caller`); the rest are the
            // connection's own business.
            _ => Vec::new(),
        };
        let logged = match &notification {
            ServerNotification::LoggingMessageNotification(log) => Some(log_exchange(server, log)),
            _ => None,
        };
        for client in to {
            client.tell(notification.clone());
            if let Some(logged) = &logged {
                client.record(EventBody::ServerLog(logged.clone()));
            }
        }
    }

    fn client_capabilities(&self) -> Option<rmcp::model::ClientCapabilities> {
        self.only.as_ref().map(|only| only.capabilities())
    }

    fn ask(&self, question: cosmos_engine::mcp::Question) -> bool {
        match &self.only {
            Some(only) => {
                tokio::spawn(super::elicit::ask_one(only.clone(), question));
                true
            }
            None => cosmos_engine::mcp::ask(question),
        }
    }
}
