//! Logs go to a file, never to the terminal the UI draws on, and every line is cleaned of the
//! secrets the run knows (API keys, server headers and env values) at every level: rmcp's
//! traces print tool arguments, results and requests as they are.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use cosmos_trajectory::redact::redact_log_line;

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
    // rmcp's OAuth code logs token responses at debug: never below info, whatever COSMOS_LOG
    // asks, so no token reaches the log.
    let filter = match "rmcp::transport::auth=info".parse() {
        Ok(cap) => filter.add_directive(cap),
        Err(_) => filter,
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(Redacting(file)))
        .try_init();
}

/// The log file behind the redactor. tracing formats an event whole, then writes it in one
/// call, so each write is cleaned as a whole.
struct Redacting(File);

impl Write for Redacting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        match redact_log_line(&text) {
            Some(clean) => self.0.write_all(clean.as_bytes())?,
            None => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
