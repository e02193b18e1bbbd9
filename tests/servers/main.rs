//! Real MCP servers: connections of both protocol eras, logins, the proxy, state sandboxes and the container.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/otlp_sink.rs"]
#[allow(dead_code)]
mod otlp_sink;
#[path = "../support/mod.rs"]
mod support;

mod container;
mod engine_mcp;
mod engine_oauth;
mod engine_proxy;
mod engine_state;
mod engine_stateful_tasks;
mod traces_world_model;
