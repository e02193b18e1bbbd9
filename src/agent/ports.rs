//! The agent's edges besides the chat model (`llm::chat::ChatModel`): the tools it calls and
//! where its events go. The real adapters are the MCP pool and the recorder; tests plug in
//! scripted ones, so every agent can be driven in process.

use anyhow::Result;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::mcp::pool::McpPool;
use crate::mcp::server::CallOutcome;
use crate::trajectory::event::{EventBody, ToolInfo};

/// Lists and calls real tools.
pub trait ToolHost: Send + Sync {
    /// Every tool, namespaced `server:tool`.
    fn tools(&self) -> Vec<ToolInfo>;
    /// Calls a tool; the outcome names the server that answered, when one did.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Value,
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
    ) -> BoxFuture<'a, (Option<String>, CallOutcome)> {
        Box::pin(McpPool::call(self, tool, arguments))
    }
}

/// Where an agent's events go, in order.
pub trait EventSink: Send {
    /// Records one event (written and flushed before this returns, for the real sink).
    fn emit(&mut self, body: EventBody) -> Result<()>;
}

/// Events kept in memory, in order (the search's unit tests, and tests of whole agents).
impl EventSink for Vec<EventBody> {
    fn emit(&mut self, body: EventBody) -> Result<()> {
        self.push(body);
        Ok(())
    }
}
