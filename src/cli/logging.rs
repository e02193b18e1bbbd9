//! Logs go to a file, never to the terminal the UI draws on.

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::sync::Mutex;

/// The log file: `$COSMOS_LOG_FILE`, else `$XDG_STATE_HOME/mcp-cosmos/cosmos.log`
/// (`~/.local/state/...`), else the system temp folder.
pub fn log_path() -> PathBuf {
    if let Some(p) = std::env::var_os("COSMOS_LOG_FILE") {
        return PathBuf::from(p);
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    state.join("mcp-cosmos").join("cosmos.log")
}

/// Starts file logging at the level in `COSMOS_LOG` (default `info`). Failing to open the
/// log file is not fatal: the run goes on unlogged.
pub fn init() {
    let path = log_path();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let Ok(file) = OpenOptions::new().create(true).append(true).open(&path) else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("COSMOS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init();
}
