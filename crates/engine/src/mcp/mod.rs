//! MCP servers (docs/design.md, "MCP servers"): configuration, connections with rmcp over stdio and
//! streamable HTTP, and the namespaced tool catalogue.

pub(crate) mod arrivals;
pub(crate) mod client_assertion;
pub(crate) mod elicitation;
pub(crate) mod git;
pub(crate) mod late_discover;
pub(crate) mod mcp_json;
pub(crate) mod oauth;
pub(crate) mod oversized;
pub(crate) mod pool;
pub(crate) mod process_group;
pub(crate) mod sandbox;
pub(crate) mod sandbox_home;
pub(crate) mod seed;
pub(crate) mod seed_git;
pub(crate) mod server;
pub(crate) mod shared;
pub(crate) mod state_tree;
pub(crate) mod state_view;
pub(crate) mod unasked;

pub use elicitation::{ANSWER_WITHIN, Answer, Elicitation, Question, Reply, ask, ask_through};
pub use mcp_json::{Grant, INHERITED_ENV, McpConfig, OAuthClient, ServerConfig, Transport};
pub use oauth::{TokenStore, login};
pub use pool::McpPool;
pub use sandbox::{
    Sandbox, finish as finish_sandboxes, kept_path as kept_state_path, prepare as prepare_sandboxes,
};
pub use sandbox_home::shown_location;
pub use server::{
    CallOutcome, ClientRound, MAX_RESULT_BYTES, OnProgress, Progress, Server, ServerFailure,
    Timeouts,
};
pub use shared::SharedServers;
pub use state_view::{
    StateAround, around_call, change as state_change, read as read_state, start_and_end,
};
pub use unasked::{Answering, Relay, relay_through};

/// rustls's crypto provider (ring), chosen once per process before an HTTP connection; the
/// `llm` layer beside this one does the same for its endpoints. A second install is a no-op.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
