//! MCP servers (docs/design.md, "MCP servers"): configuration, connections with rmcp over stdio and
//! streamable HTTP, and the namespaced tool catalogue.

pub mod config;
pub mod oversized;
pub mod pool;
pub mod process_group;
pub mod server;
