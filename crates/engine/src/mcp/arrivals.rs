//! Which of a server's notifications have been handled: so a call's result waits for exactly
//! the notifications the server sent before it, not for a quiet spell.
//!
//! rmcp reads a connection's messages in order, but hands each notification to a task of its
//! own, which may run after a later result has reached its caller, or after a later
//! notification's task. [`Counted`] numbers each notification as the transport hands it to
//! rmcp (in order, before any later result), in the notification's extensions ([`Arrival`]);
//! the connection's handler takes its turn by that number ([`Arrivals::wait_turn`]) and counts
//! it once it has dealt with it ([`Arrivals::handled`]). Notifications are so handled in the
//! order the server sent them, and a result taken when `n` had arrived waits until `n` are
//! handled.
//!
//! Counts a connection's notifications as its transport hands them to rmcp
//! (`Counted`) and as its listener finishes with them (`Arrivals::handled`), so a call's result
//! waits for exactly those that came before it: no wait when none did. Invariant: `counted` names
//! every kind the listener handles, and only those.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage, ServerNotification};
use rmcp::transport::Transport;

/// A notification's place in its connection's order, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival(pub u64);

/// The longest a notification waits for those before it to be handled (a handler that never
/// ran: the connection closed under it).
const TURN_WAIT: Duration = Duration::from_millis(500);

/// One connection's notifications: how many arrived, how many were handled.
#[derive(Debug, Default)]
pub struct Arrivals {
    arrived: AtomicU64,
    handled: AtomicU64,
    changed: tokio::sync::Notify,
}

/// True for the notifications the connection's handler counts when it has dealt with them:
/// every kind it listens to (another kind would never be counted handled).
pub fn counted(notification: &ServerNotification) -> bool {
    matches!(
        notification,
        ServerNotification::ProgressNotification(_)
            | ServerNotification::LoggingMessageNotification(_)
            | ServerNotification::ResourceUpdatedNotification(_)
            | ServerNotification::ResourceListChangedNotification(_)
            | ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::PromptListChangedNotification(_)
            | ServerNotification::CustomNotification(_)
    )
}

impl Arrivals {
    /// Notifications arrived so far.
    pub fn arrived(&self) -> u64 {
        self.arrived.load(Ordering::Acquire)
    }

    /// Notes that the handler has dealt with one notification.
    pub fn handled(&self) {
        self.handled.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    /// Waits until every notification that arrived before the one whose `extensions` these
    /// are has been handled (at once for one that carries no [`Arrival`]).
    pub async fn wait_turn(&self, extensions: &rmcp::model::Extensions) {
        if let Some(Arrival(seq)) = extensions.get::<Arrival>() {
            self.all_handled(*seq, TURN_WAIT).await;
        }
    }

    /// Waits until `arrived` notifications have been handled, or `at_most` has passed (a
    /// handler that never ran: the connection closed under it).
    pub async fn all_handled(&self, arrived: u64, at_most: Duration) {
        let until = tokio::time::Instant::now() + at_most;
        loop {
            let changed = self.changed.notified();
            if self.handled.load(Ordering::Acquire) >= arrived {
                return;
            }
            if tokio::time::timeout_at(until, changed).await.is_err() {
                return;
            }
        }
    }
}

/// A client transport that counts the notifications it receives in [`Arrivals`].
pub struct Counted<T> {
    inner: T,
    arrivals: Arc<Arrivals>,
}

impl<T> Counted<T> {
    /// Counts what `inner` receives into `arrivals`.
    pub fn new(inner: T, arrivals: Arc<Arrivals>) -> Self {
        Self { inner, arrivals }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Counted<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let mut message = self.inner.receive().await?;
        if let ServerJsonRpcMessage::Notification(n) = &mut message
            && counted(&n.notification)
        {
            let seq = self.arrivals.arrived.fetch_add(1, Ordering::AcqRel);
            n.notification.extensions_mut().insert(Arrival(seq));
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_ends_when_what_had_arrived_is_handled_and_not_before() {
        let arrivals = Arc::new(Arrivals::default());
        arrivals.arrived.fetch_add(2, Ordering::AcqRel);
        let waiting = {
            let arrivals = arrivals.clone();
            tokio::spawn(async move {
                arrivals
                    .all_handled(arrivals.arrived(), Duration::from_secs(30))
                    .await
            })
        };
        arrivals.handled();
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one of two handled");
        arrivals.handled();
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the wait ends once both are handled")
            .unwrap();
        // The third waits its turn: it is handled after the first two.
        let mut third = rmcp::model::Extensions::new();
        third.insert(Arrival(2));
        tokio::time::timeout(Duration::from_millis(1), arrivals.wait_turn(&third))
            .await
            .expect("its turn, both before it handled");
        let mut fourth = rmcp::model::Extensions::new();
        fourth.insert(Arrival(3));
        assert!(
            tokio::time::timeout(Duration::from_millis(20), arrivals.wait_turn(&fourth))
                .await
                .is_err(),
            "the third is not handled yet"
        );
        // Nothing arrived: no wait at all.
        let idle = Arrivals::default();
        tokio::time::timeout(
            Duration::from_millis(1),
            idle.all_handled(0, Duration::from_secs(30)),
        )
        .await
        .expect("no wait");
    }
}
