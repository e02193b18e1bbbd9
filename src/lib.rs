//! mcp-cosmos: world-model-augmented MCP agents, recorded as event logs and explored in
//! the terminal. See `ARCHITECTURE.md` for the code map.

pub mod agent;
pub mod cli;
pub mod config;
pub mod export;
pub mod fork;
pub mod judge;
pub mod llm;
pub mod mcp;
pub mod metrics;
pub mod parallel;
pub mod probe;
pub mod proxy;
pub mod recheck;
pub mod sanitize;
pub mod small_file;
pub mod task;
pub mod trajectory;
pub mod tui;
pub mod wm_eval;
pub mod world_model;
