//! The agent's edges besides the chat model (`llm::chat::ChatModel`): the tools it calls and
//! where its events go. The real adapters are the MCP pool and the recorder; tests plug in
//! scripted ones, so every agent can be driven in process.
//!
//! `ToolHost` (implemented for `McpPool`) and `EventSink` (implemented by the
//! recorder, and by `Vec<EventBody>` for tests).

use anyhow::Result;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::mcp::pool::McpPool;
use crate::mcp::server::{CallOutcome, OnProgress};
use cosmos_trajectory::event::{EventBody, ToolInfo};

/// Lists and calls real tools.
pub trait ToolHost: Send + Sync {
    /// Every tool, namespaced `server:tool`.
    fn tools(&self) -> Vec<ToolInfo>;
    /// Calls a tool, telling `on_progress` of the server's progress reports while it runs;
    /// the outcome names the server that answered, when one did.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Value,
        on_progress: OnProgress<'a>,
    ) -> BoxFuture<'a, (Option<String>, CallOutcome)>;
}

impl ToolHost for McpPool {
    fn tools(&self) -> Vec<ToolInfo> {
        McpPool::tools(self)
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Value,
        on_progress: OnProgress<'a>,
    ) -> BoxFuture<'a, (Option<String>, CallOutcome)> {
        Box::pin(McpPool::call_watching(self, tool, arguments, on_progress))
    }
}

/// Where an agent's events go, in order.
pub trait EventSink: Send {
    /// Records one event (written and flushed before this returns, for the real sink).
    fn emit(&mut self, body: EventBody) -> Result<()>;
}

/// Something that watches a run's events as they are written (an exporter to a trace
/// receiver) and may run into trouble. Its trouble is recorded as `error` events from
/// `source`; it never fails or slows the run.
pub trait Tap: Send {
    /// Where its trouble comes from, as `error` events name it (`otel`).
    fn source(&self) -> cosmos_trajectory::event::ErrorSource;
    /// Sees one event as written; must not block.
    fn see(&mut self, event: &cosmos_trajectory::event::Event);
    /// Trouble since the last call, in words.
    fn trouble(&mut self) -> Vec<String>;
}

/// Events kept in memory, in order (the search's unit tests, and tests of whole agents).
impl EventSink for Vec<EventBody> {
    fn emit(&mut self, body: EventBody) -> Result<()> {
        self.push(body);
        Ok(())
    }
}
