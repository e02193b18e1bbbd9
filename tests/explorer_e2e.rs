//! The real binary in a real terminal (tmux): keys in, screen out; and the raw bytes the
//! explorer writes, checked for escape sequences planted in a trajectory.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use mcp_cosmos::trajectory::event::{EventBody, Observation};
use mcp_cosmos::trajectory::redact::Redactor;
use mcp_cosmos::trajectory::run::Run;
use mcp_cosmos::trajectory::writer::Writer;

/// A tmux server of our own (private socket), killed on drop.
struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    fn start(args: &[&str], width: u16, height: u16) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let bin = env!("CARGO_BIN_EXE_cosmos");
        let config = dir.path().join("config");
        let log = dir.path().join("cosmos.log");
        let command = format!(
            "sleep 0.3; XDG_CONFIG_HOME={} COSMOS_LOG_FILE={} TERM=xterm-256color exec {} {}",
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

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is installed (scripts/test.sh installs it)");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", "e2e", k]);
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "e2e"])
    }

    fn wait_for(&self, text: &str) -> String {
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

    fn raw(&self) -> Vec<u8> {
        std::fs::read(self._dir.path().join("raw.bin")).unwrap_or_default()
    }

    fn alive(&self) -> bool {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["has-session", "-t", "e2e"])
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
            .status();
    }
}

fn write_run(run: &Run, path: &Path) {
    let mut w = Writer::create(path, &run.header, Redactor::new()).unwrap();
    for e in &run.events {
        w.write(e.t_ms, e.body.clone()).unwrap();
    }
}

#[test]
fn browse_open_step_and_quit_with_keys() {
    let dir = tempfile::tempdir().unwrap();
    for run in common::three_runs() {
        write_run(&run, &dir.path().join(run.path.file_name().unwrap()));
    }
    let t = Tmux::start(&["replay", dir.path().to_str().unwrap()], 140, 40);
    let screen = t.wait_for("3 of 3 runs");
    assert!(
        screen.contains("plan_exec") && screen.contains("react"),
        "{screen}"
    );
    t.keys(&["/", "r", "e", "a", "c", "t", "Enter"]);
    t.wait_for("1 of 3 runs");
    t.keys(&["Enter"]);
    let screen = t.wait_for("Steps · react");
    assert!(screen.contains("event 6/6"), "{screen}");
    t.keys(&["Home"]);
    t.wait_for("event 0/6");
    t.keys(&["t"]);
    let screen = t.wait_for("event 2/6");
    assert!(screen.contains("calls     1"), "{screen}");
    t.keys(&["?"]);
    t.wait_for("Keys · ? or Esc closes");
    t.keys(&["Escape", "Escape"]);
    // Back in the browser, the filter is still in force.
    t.wait_for("1 of 3 runs");
    t.keys(&["q"]);
    let start = Instant::now();
    while t.alive() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!t.alive(), "q quits and the session ends");
}

#[test]
fn planted_escape_sequences_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "EVIL\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}]0;PWNED\u{7}\u{1b}[31;1mRED\u{9b}2J";
    let mut run = common::plan_fails_run();
    let mut bodies: Vec<EventBody> = run.events.drain(..).map(|e| e.body).collect();
    for body in &mut bodies {
        match body {
            EventBody::ToolCalled { result, .. } => {
                *result = Observation {
                    text: evil.into(),
                    is_error: false,
                    ..Default::default()
                }
            }
            EventBody::Answer { text } => *text = evil.into(),
            _ => {}
        }
    }
    let mut header = run.header.clone();
    header.task.id = format!("task{evil}");
    let run = common::run_of("x", header, bodies);
    let path = dir.path().join("evil.jsonl");
    write_run(&run, &path);

    let t = Tmux::start(&["replay", dir.path().to_str().unwrap()], 160, 45);
    t.wait_for("1 of 1 runs");
    t.keys(&["Enter"]);
    t.wait_for("Tree · 4 nodes");
    // Show the step whose real result is the planted text.
    t.keys(&["Home", "t"]);
    let screen = t.wait_for("event 15/20");
    assert!(
        screen.contains("\\u{1b}]52;c;"),
        "escapes are shown escaped:\n{screen}"
    );
    t.keys(&["q"]);
    std::thread::sleep(Duration::from_millis(500));
    let raw = t.raw();
    assert!(
        raw.len() > 1000,
        "captured the program's output ({} bytes)",
        raw.len()
    );
    for planted in [
        &b"\x1b]52;"[..],
        b"\x1b]0;PWNED",
        b"\x1b[31;1mRED",
        "\u{9b}2J".as_bytes(),
    ] {
        assert!(
            !raw.windows(planted.len()).any(|w| w == planted),
            "planted {:?} reached the terminal",
            String::from_utf8_lossy(planted)
        );
    }
}
