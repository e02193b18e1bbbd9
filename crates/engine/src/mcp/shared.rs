//! Stateless servers shared by the cells of one sweep worker: started at the first cell that
//! needs one, handed to each later cell of that worker, and stopped when the worker is done.
//! A stdio server has one MCP session for its life, so its cells share that session; what a
//! cell keeps of its own (its progress tokens, its requests for input, its record) is cosmos's.
//!
//! Only servers declared stateless are shared (`"cosmos": {"shared": true}` in `mcp.json`, or
//! named in a sweep's `shared_servers`): a stateful server keeps one process per cell, so no
//! cell sees another's state. A shared server found dead (its process gone, or a call that saw
//! it die) is started again for the next cell; the cell that saw it die recorded the failure.
//!
//! `SharedServers`, one sweep worker's stateless servers (`"cosmos": {"shared":
//! true}` in `mcp.json`, or the spec's `shared_servers`): started at the first cell that needs
//! one, handed to the next cells (`RunSpec::shared`), one process per elicitation policy (a
//! server answers by the policy it started with), started again when found dead, stopped when
//! the worker ends. Invariant: a stateful server is never shared.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::mcp_json::ServerConfig;
use super::server::Timeouts;
use super::server::{Server, ServerFailure};

/// One worker's shared servers.
#[derive(Debug, Default)]
pub struct SharedServers {
    /// Servers shared beside those their entry declares (a sweep's `shared_servers`).
    also: BTreeSet<String>,
    /// By server name and elicitation policy.
    started: tokio::sync::Mutex<HashMap<String, Arc<Server>>>,
}

impl SharedServers {
    /// A worker's cache, sharing the declared servers and those named in `also`.
    pub fn new(also: impl IntoIterator<Item = String>) -> Self {
        Self {
            also: also.into_iter().collect(),
            ..Self::default()
        }
    }

    /// True when `config`'s server is shared.
    pub fn shares(&self, config: &ServerConfig) -> bool {
        (config.shared || self.also.contains(&config.name))
            && matches!(config.transport, super::mcp_json::Transport::Stdio { .. })
    }

    /// The running shared server of `config`, started now when there is none or it died. A
    /// server answers requests for input by the policy it was started with, so cells with
    /// another `--elicitation` get a process of their own.
    pub async fn get(
        &self,
        config: &ServerConfig,
        timeouts: Timeouts,
    ) -> Result<Arc<Server>, ServerFailure> {
        let key = format!("{}\u{0}{}", config.name, timeouts.elicitation.as_str());
        let mut started = self.started.lock().await;
        if let Some(server) = started.get(&key)
            && server.is_alive()
        {
            return Ok(server.clone());
        }
        // A dead one is dropped (its process group stopped when the last cell lets go).
        if let Some(dead) = started.remove(&key) {
            tracing::info!(
                "shared server {} died in an earlier cell; starting it again",
                config.name
            );
            drop(dead);
        }
        let server =
            Arc::new(Server::connect(config, timeouts.startup, timeouts.elicitation).await?);
        started.insert(key, server.clone());
        Ok(server)
    }

    /// Stops every shared server (the worker has no cell left).
    pub async fn shutdown(self) {
        let servers = self
            .started
            .into_inner()
            .into_values()
            .filter_map(Arc::into_inner);
        futures::future::join_all(servers.map(Server::shutdown)).await;
    }
}
