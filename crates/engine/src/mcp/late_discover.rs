//! A handshake that survives a late answer to `server/discover`.
//!
//! rmcp opens a connection by asking `server/discover` and, when no answer comes within its own
//! 10 s (private, not ours to set), sends `initialize` on the same connection. A server slower
//! than that to start (it reads both requests once it is up), or one that answers the discover
//! only later, then answers the abandoned discover first; rmcp's handshake takes a reply with a
//! stale id as fatal ("uncorrelated error response"), and a server well within
//! `--startup-timeout-s` was never reached. [`SkipsLateDiscover`] remembers the ids of the
//! discover requests it sent; once `initialize` has gone out, a reply to one of them is dropped
//! (and logged), so the handshake reads its own answer.

use std::future::Future;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
use rmcp::transport::Transport;

/// A client transport that drops replies to a `server/discover` given up on.
pub struct SkipsLateDiscover<T> {
    inner: T,
    /// The ids of every `server/discover` sent.
    discovers: Vec<RequestId>,
    /// True once `initialize` was sent: a discover asked before it was given up on.
    abandoned: bool,
}

impl<T> SkipsLateDiscover<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Self {
            inner,
            discovers: Vec::new(),
            abandoned: false,
        }
    }

    /// True when `message` answers a discover that was given up on.
    fn late(&self, message: &ServerJsonRpcMessage) -> bool {
        let id = match message {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        self.abandoned && id.is_some_and(|id| self.discovers.contains(id))
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for SkipsLateDiscover<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(request) = &item {
            match &request.request {
                ClientRequest::DiscoverRequest(_) => self.discovers.push(request.id.clone()),
                ClientRequest::InitializeRequest(_) => self.abandoned = true,
                _ => {}
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let message = self.inner.receive().await?;
            if self.late(&message) {
                tracing::info!(
                    "a late answer to server/discover, given up on before the handshake, dropped"
                );
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
