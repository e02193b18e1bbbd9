//! A server's request for input (MCP elicitation) during a call made through the proxy goes to
//! the client whose call it is: the client's person answers, as they would with the server
//! connected directly. The request and the answer are recorded with the call like a run's.
//!
//! MCP ties a server's request to no call of the client's over stdio, so the proxy knows whose
//! call it is only when exactly one call is in flight on that server; with more than one it
//! declines and says why rather than ask the wrong client.
//!
//! An upstream's request for input put to the client whose call is in flight on
//! that server (`Clients::sole_caller`, the asker the proxy registers); declined when the client
//! does not take requests of that mode, or when more than one call is in flight there.

use std::sync::Arc;

use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::ElicitationMode;

use super::clients::{Client, Clients};
use cosmos_engine::mcp::{ANSWER_WITHIN, Answer, Question};

/// Answers the questions of this process's upstream servers by asking their callers' clients,
/// from now until the process ends.
pub fn forward_to_clients(clients: Arc<Clients>) {
    let (tx, rx) = std::sync::mpsc::channel::<Question>();
    cosmos_engine::mcp::ask_through(Some(tx));
    let runtime = tokio::runtime::Handle::current();
    std::thread::spawn(move || {
        for question in rx {
            runtime.spawn(ask_client(clients.clone(), question));
        }
    });
}

/// Puts `question` to the client of the one call in flight on its server.
async fn ask_client(clients: Arc<Clients>, question: Question) {
    match clients.sole_caller(&question.server) {
        Ok(caller) => ask_one(caller, question).await,
        Err(why) => question.decline(why),
    }
}

/// Puts `question` to `caller`, declining it for a client that does not take its mode.
pub(crate) async fn ask_one(caller: Arc<Client>, question: Question) {
    let (peer, client) = (&caller.peer, caller.name());
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
