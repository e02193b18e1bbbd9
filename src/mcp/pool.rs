//! Several servers at once, behind one namespaced tool catalogue (`server:tool`).

use std::time::Duration;

use serde_json::Value;

use super::config::ServerConfig;
use super::server::{CallOutcome, Server, ServerFailure};
use crate::trajectory::event::{Observation, ServerInfo, ToolInfo};

/// Timeouts for servers.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Start, initialise and list tools. Some Python servers take 10 s; the default allows 60.
    pub startup: Duration,
    /// One tool call.
    pub call: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            startup: Duration::from_secs(60),
            call: Duration::from_secs(60),
        }
    }
}

/// The connected servers.
#[derive(Debug, Default)]
pub struct McpPool {
    servers: Vec<Server>,
    configs: Vec<ServerConfig>,
    timeouts: Timeouts,
}

impl McpPool {
    /// Starts every server concurrently. Servers that fail are returned beside the pool;
    /// the run can go on without them.
    pub async fn connect(
        configs: &[ServerConfig],
        timeouts: Timeouts,
    ) -> (Self, Vec<ServerFailure>) {
        let attempts =
            futures::future::join_all(configs.iter().map(|c| Server::connect(c, timeouts.startup)))
                .await;
        let mut pool = Self {
            servers: Vec::new(),
            configs: configs.to_vec(),
            timeouts,
        };
        let mut failures = Vec::new();
        for attempt in attempts {
            match attempt {
                Ok(s) => pool.servers.push(s),
                Err(f) => failures.push(f),
            }
        }
        (pool, failures)
    }

    /// The servers, as recorded in a trajectory header.
    pub fn server_infos(&self) -> Vec<ServerInfo> {
        self.configs
            .iter()
            .map(|c| ServerInfo {
                name: c.name.clone(),
                transport: c.transport_name().into(),
                target: Some(c.target()),
            })
            .collect()
    }

    /// Every tool of every running server.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.servers
            .iter()
            .flat_map(|s| s.tools.iter().cloned())
            .collect()
    }

    /// The connected servers.
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// Calls a namespaced tool, found by its exact name in the catalogue (a server's name may
    /// itself hold a `:`). An unknown tool is an error outcome, not a panic.
    pub async fn call(&self, tool: &str, arguments: &Value) -> (Option<String>, CallOutcome) {
        let found = self.servers.iter().find_map(|server| {
            let own = tool
                .strip_prefix(server.name.as_str())
                .and_then(|rest| rest.strip_prefix(':'))?;
            server
                .tools
                .iter()
                .any(|t| t.name == tool)
                .then_some((server, own))
        });
        match found {
            Some((server, own)) => (
                Some(server.name.clone()),
                server.call(own, arguments, self.timeouts.call).await,
            ),
            None => (None, unknown_tool(tool)),
        }
    }

    /// Stops every server.
    pub async fn shutdown(self) {
        futures::future::join_all(self.servers.into_iter().map(Server::shutdown)).await;
    }
}

/// The failed call of a tool no server offers: like MCP-Bench's executor, the call is
/// recorded as made and failed (it counts against the success rate, not only the name rate).
pub fn unknown_tool(tool: &str) -> CallOutcome {
    let message =
        format!("unknown tool \"{tool}\": no running server offers it (names are \"server:tool\")");
    CallOutcome {
        result: Observation {
            text: message.clone(),
            is_error: true,
            ..Default::default()
        },
        error: Some(message),
        latency: Duration::ZERO,
        server_died: None,
        reply: None,
    }
}
