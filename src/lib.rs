//! mcp-cosmos: world-model-augmented MCP agents, recorded as event logs and explored in
//! the terminal. See `ARCHITECTURE.md` for the code map.

pub mod cli;
pub mod metrics;
pub mod trajectory;
pub mod tui;
