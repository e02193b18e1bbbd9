//! Logs go to a file, never to the terminal the UI draws on, and every line is cleaned of the
//! secrets the run knows (API keys, server headers and env values) at every level: rmcp's
//! traces print tool arguments, results and requests as they are.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cosmos_trajectory::out_file::{Own, open_own};
use cosmos_trajectory::redact::redact_log_line;

/// The log file: `$COSMOS_LOG_FILE`, else `$XDG_STATE_HOME/mcp-cosmos/cosmos.log`
/// (`~/.local/state/...`), else `mcp-cosmos-UID/cosmos.log` in the system temp folder.
pub fn log_path() -> PathBuf {
    if let Some(p) = std::env::var_os("COSMOS_LOG_FILE") {
        return PathBuf::from(p);
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")));
    match state {
        Some(state) => state.join("mcp-cosmos").join("cosmos.log"),
        None => shared_fallback().join("cosmos.log"),
    }
}

/// The folder of the log when there is no home: in the temp folder every user writes to,
/// so named for this user and used only if it is this user's own folder, closed to others.
fn shared_fallback() -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("mcp-cosmos-{me}"))
}

/// True when `dir` is a real folder (not a link) of this user's that no one else may enter.
fn private_folder(dir: &Path) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == me && m.mode() & 0o077 == 0)
}

/// The log file at its default name opened to append to: never through a planted link, and
/// in the temp folder only inside this user's private folder.
fn open_log(path: &Path, shared: &Path) -> anyhow::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if dir == shared {
            let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
            if !private_folder(dir) {
                anyhow::bail!("{} is not this user's private folder", dir.display());
            }
        } else {
            let _ = std::fs::create_dir_all(dir);
        }
    }
    open_own(path, Own::Append)
}

/// Starts file logging at the level in `COSMOS_LOG` (default `info`). Failing to open the
/// log file is not fatal: the run goes on unlogged.
pub fn init() {
    // A file the person named is theirs, written where it leads, as `>>` would (a link, or
    // `/dev/stderr`); only the default names, which another user could plant, are guarded.
    let opened = match std::env::var_os("COSMOS_LOG_FILE") {
        Some(named) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(named)
            .map_err(anyhow::Error::from),
        None => open_log(&log_path(), &shared_fallback()),
    };
    let Ok(file) = opened else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Hardening VI: the log's folder in the shared temp folder is used only when it is this
    /// user's own and closed to others; a link or another's folder planted under its name is
    /// refused and nothing is written there.
    #[test]
    fn a_planted_log_folder_in_the_temp_folder_is_never_used() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("mcp-cosmos-me");
        let victim = tmp.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::os::unix::fs::symlink(&victim, &shared).unwrap();
        assert!(open_log(&shared.join("cosmos.log"), &shared).is_err());
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
        std::fs::remove_file(&shared).unwrap();
        // Open to others: someone else could read or plant in it.
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(open_log(&shared.join("cosmos.log"), &shared).is_err());
        std::fs::remove_dir(&shared).unwrap();
        // Made here: private, and the log is written.
        let mut log = open_log(&shared.join("cosmos.log"), &shared).unwrap();
        log.write_all(b"line\n").unwrap();
        assert!(private_folder(&shared));
    }
}
