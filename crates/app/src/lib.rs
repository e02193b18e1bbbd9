//! The mcp-cosmos terminal app: the command line (`cli`) and the explorer (`tui`) over the
//! engine and the trajectory crates. The `cosmos` binary is a thin `main` over [`cli::run`].

pub mod cli;
pub mod tui;
