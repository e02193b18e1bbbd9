//! The mcp-cosmos engine: everything between a trajectory and a terminal. It talks to MCP
//! servers and LLM endpoints, runs world models and agents, scores runs, and serves the proxy.
//! See `ARCHITECTURE.md` for the code map and the layers inside this crate.

pub mod agent;
pub mod config;
pub mod fork_source;
pub mod import;
pub mod judge;
pub mod llm;
pub mod mcp;
/// Every number from trajectories, a crate of its own (`cosmos-metrics`), re-exported so the
/// engine and its users still name it `metrics`.
pub use cosmos_metrics as metrics;
pub mod probe;
pub mod recheck;
pub mod task;
pub mod wm_eval;
pub mod world_model;
