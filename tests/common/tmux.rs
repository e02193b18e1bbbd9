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
        // The program starts only once every byte it writes is being captured (the `go` file
        // appears after pipe-pane is set): a wait on a condition, not a guess at a delay.
        let go = dir.path().join("go");
        let command = format!(
            "while [ ! -e {} ]; do sleep 0.01; done; {extra}XDG_CONFIG_HOME={} COSMOS_LOG_FILE={} TERM=xterm-256color exec {} {}",
            go.display(),
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
        std::fs::write(&go, b"").unwrap();
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

    /// Sends keys, in order (the program reads them in order; tests wait for the screens
    /// they expect).
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "e2e", k]);
        }
    }

    /// Waits up to 15 s for the program's first frame: the alternate screen entered and
    /// something drawn.
    pub fn wait_for_frame(&self) {
        let start = Instant::now();
        let drawn = |t: &Self| {
            t.raw().windows(8).any(|w| w == b"\x1b[?1049h") && !t.screen().trim().is_empty()
        };
        while !drawn(self) {
            assert!(start.elapsed() < Duration::from_secs(15), "no first frame");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to 15 s for the program to end.
    pub fn wait_exit(&self) {
        let start = Instant::now();
        while self.alive() {
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "the program did not end"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "e2e"])
    }

    /// Waits up to 15 s for `text` on screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_for_all(&[text])
    }

    /// Waits up to 15 s for a screen that holds every one of `texts` (a frame is drawn in
    /// parts: one text on screen does not mean the others are yet).
    pub fn wait_for_all(&self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if texts.iter().all(|t| screen.contains(t)) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "timed out waiting for {texts:?}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits up to 15 s for a screen that `ok` accepts (`what` names it in the failure).
    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
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
