//! Stateless servers shared by the cells of one sweep worker: started at the first cell that
//! needs one, handed to each later cell of that worker, and stopped when the worker is done.
//! A stdio server has one MCP session for its life, so its cells share that session; what a
//! cell keeps of its own (its progress tokens, its requests for input, its record) is cosmos's.
//!
//! Only servers declared stateless are shared (`"cosmos": {"shared": true}` in `mcp.json`, or
//! named in a sweep's `shared_servers`): a stateful server keeps one process per cell, so no
//! cell sees another's state. A shared server found dead (its process gone, or a call that saw
//! it die) is started again for the next cell; the cell that saw it die recorded the failure.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::config::ServerConfig;
use super::pool::Timeouts;
use super::server::{Server, ServerFailure};

/// One worker's shared servers.
#[derive(Debug, Default)]
pub struct SharedServers {
    /// Servers shared beside those their entry declares (a sweep's `shared_servers`).
    also: BTreeSet<String>,
    started: tokio::sync::Mutex<HashMap<String, Arc<Server>>>,
    /// How many times each was started (one, unless it died).
    starts: std::sync::Mutex<HashMap<String, usize>>,
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
            && matches!(config.transport, super::config::Transport::Stdio { .. })
    }

    /// The running shared server of `config`, started now when there is none or it died.
    pub async fn get(
        &self,
        config: &ServerConfig,
        timeouts: Timeouts,
    ) -> Result<Arc<Server>, ServerFailure> {
        let mut started = self.started.lock().await;
        if let Some(server) = started.get(&config.name)
            && server.is_alive()
        {
            return Ok(server.clone());
        }
        // A dead one is dropped (its process group stopped when the last cell lets go).
        if let Some(dead) = started.remove(&config.name) {
            tracing::info!(
                "shared server {} died in an earlier cell; starting it again",
                config.name
            );
            drop(dead);
        }
        let server =
            Arc::new(Server::connect(config, timeouts.startup, timeouts.elicitation).await?);
        *self
            .starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(config.name.clone())
            .or_default() += 1;
        started.insert(config.name.clone(), server.clone());
        Ok(server)
    }

    /// How many times `name` was started by this worker.
    pub fn starts(&self, name: &str) -> usize {
        self.starts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .copied()
            .unwrap_or(0)
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
