//! The real binary in a real terminal: a private tmux server, keys in, screen and raw
//! output bytes out.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server of our own (private socket), killed on drop.
pub struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// Starts the binary with `args` in a `width`×`height` terminal.
    pub fn start(args: &[&str], width: u16, height: u16) -> Self {
        Self::start_with_env(args, &[], width, height)
    }

    /// Starts the binary with extra environment variables.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)], width: u16, height: u16) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let bin = env!("CARGO_BIN_EXE_cosmos");
        let config = dir.path().join("config");
        let log = dir.path().join("cosmos.log");
        let extra: String = env.iter().map(|(k, v)| format!("{k}='{v}' ")).collect();
        let command = format!(
            "sleep 0.3; {extra}XDG_CONFIG_HOME={} COSMOS_LOG_FILE={} TERM=xterm-256color exec {} {}",
            config.display(),
            log.display(),
            bin,
            args.iter()
                .map(|a| format!("'{a}'"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let raw = dir.path().join("raw.bin");
        let t = Self { socket, _dir: dir };
        t.tmux(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            &command,
        ]);
        // Capture every byte the program writes to its terminal, from before it starts.
        t.tmux(&[
            "pipe-pane",
            "-o",
            "-t",
            "e2e",
            &format!("cat >> {}", raw.display()),
        ]);
        t
    }

    /// Runs a tmux command on our server.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is installed (scripts/test.sh installs it)");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Sends keys, one at a time.
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "e2e", k]);
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "e2e"])
    }

    /// Waits up to 15 s for `text` on screen.
    pub fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "timed out waiting for {text:?}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every byte the program wrote to its terminal.
    pub fn raw(&self) -> Vec<u8> {
        std::fs::read(self._dir.path().join("raw.bin")).unwrap_or_default()
    }

    /// True while the program runs.
    pub fn alive(&self) -> bool {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["has-session", "-t", "e2e"])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stderr(std::process::Stdio::null())
            .status();
    }
}
