//! MCP servers (docs/design.md, "MCP servers"): configuration, connections with rmcp over stdio and
//! streamable HTTP, and the namespaced tool catalogue.

pub(crate) mod arrivals;
pub(crate) mod client_assertion;
pub mod elicitation;
pub(crate) mod git;
pub mod mcp_json;
pub mod oauth;
pub(crate) mod oversized;
pub mod pool;
pub(crate) mod process_group;
pub mod sandbox;
pub(crate) mod sandbox_home;
pub(crate) mod seed;
pub(crate) mod seed_git;
pub mod server;
pub mod shared;
pub(crate) mod state_tree;
pub mod state_view;
pub mod unasked;

/// rustls's crypto provider (ring), chosen once per process before an HTTP connection; the
/// `llm` layer beside this one does the same for its endpoints. A second install is a no-op.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
