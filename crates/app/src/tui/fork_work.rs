//! A fork started from the explorer (`b`): `cosmos fork` as a child process (one code path
//! with the command line), its file followed as it grows, then the end told. The child's
//! output goes to a private log file (a fresh random name, removed after), never to the
//! terminal the explorer draws on; the child shares
//! the explorer's process group, so a closed terminal stops both.
//!
//! Forks still running are kept in one table, so leaving the explorer can stop them (SIGTERM:
//! the fork ends `interrupted` with what it finished) or leave them running.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use super::action::{Action, LiveSource, RequestId};
use super::fork_spec::ForkWork;
use cosmos_trajectory::tail::Tail;

/// How long a fork may take to create its file (servers start first).
const START_WITHIN: Duration = Duration::from_secs(120);
/// How long leaving the explorer waits for the forks it stops to write their end.
pub const STOP_WITHIN: Duration = Duration::from_secs(10);
/// How often the log and the file are looked at.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// A running fork: its request, its process, and the view's stop key.
struct Running {
    id: RequestId,
    pid: u32,
    stop: Option<Receiver<()>>,
}

static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());

fn running() -> std::sync::MutexGuard<'static, Vec<Running>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The view of fork `id` stops it when `stop` hears from its stop key.
pub fn watch_stop(id: RequestId, stop: Receiver<()>) {
    if let Some(r) = running().iter_mut().find(|r| r.id == id) {
        r.stop = Some(stop);
    }
}

/// True while some fork started from the explorer is still running.
pub fn any_running() -> bool {
    !running().is_empty()
}

/// Asks every running fork to stop and waits (at most `within`) for them to end.
pub fn stop_all(within: Duration) {
    for r in running().iter() {
        terminate(r.pid);
    }
    let deadline = Instant::now() + within;
    while any_running() && Instant::now() < deadline {
        std::thread::sleep(POLL_EVERY);
    }
}

fn terminate(pid: u32) {
    // SAFETY: kill only sends a signal to the process we started (reaped only by its thread,
    // which removes it from the table first).
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

/// Runs `work` as request `id`, telling `send` of it: `Loaded` with the fork's run once its
/// file exists (or why it never came), its events as `LiveEvent`s, `FollowLost` if its file
/// goes, then `ForkEnded`.
pub fn run(id: RequestId, work: ForkWork, send: &mut dyn FnMut(Action)) {
    run_logging_in(id, work, &std::env::temp_dir(), send);
}

/// [`run`], the fork's log made in `folder`.
fn run_logging_in(id: RequestId, work: ForkWork, folder: &Path, send: &mut dyn FnMut(Action)) {
    // A fresh file of a random name, made with O_EXCL and readable by this user alone: never
    // one another user planted (a link at a predictable name would be truncated and written).
    let log = match tempfile::Builder::new()
        .prefix("cosmos-fork-")
        .suffix(".log")
        .tempfile_in(folder)
        .context("creating the fork's log file")
    {
        Ok(log) => log,
        Err(e) => {
            send(Action::Loaded(id, Box::new(Err(e))));
            return;
        }
    };
    let child = match spawn(&work, log.as_file()) {
        Ok(child) => child,
        Err(e) => {
            send(Action::Loaded(id, Box::new(Err(e))));
            return;
        }
    };
    running().push(Running {
        id,
        pid: child.id(),
        stop: None,
    });
    follow(id, child, &work.path, log.path(), send);
    running().retain(|r| r.id != id);
    send(Action::ForkEnded(id));
}

fn spawn(work: &ForkWork, out: &std::fs::File) -> Result<Child> {
    Command::new(&work.program)
        .args(&work.args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out.try_clone()?)
        .spawn()
        .with_context(|| format!("starting {}", work.program.display()))
}

fn follow(id: RequestId, mut child: Child, path: &Path, log: &Path, send: &mut dyn FnMut(Action)) {
    let started = Instant::now();
    // The fork's file can be opened once its servers are up and its header is written whole.
    let (run, mut tail) = loop {
        let opened = if path.exists() {
            Some(Tail::open(path))
        } else {
            None
        };
        if let Some(Ok(opened)) = opened {
            break opened;
        }
        let ended = child.try_wait().ok().flatten();
        if ended.is_some() || started.elapsed() > START_WITHIN {
            if ended.is_none() {
                terminate(child.id());
                let _ = child.wait();
            }
            let why = match opened {
                Some(Err(e)) => format!("{e:#}"),
                _ => last_lines(log),
            };
            send(Action::Loaded(
                id,
                Box::new(Err(anyhow!("the fork did not start: {why}"))),
            ));
            return;
        }
        std::thread::sleep(POLL_EVERY);
    };
    send(Action::Loaded(id, Box::new(Ok(run))));
    loop {
        let stop_asked = running()
            .iter()
            .find(|r| r.id == id)
            .and_then(|r| r.stop.as_ref())
            .is_some_and(|s| s.try_recv().is_ok());
        if stop_asked {
            terminate(child.id());
        }
        let exited = child.try_wait().ok().flatten().is_some();
        match tail.poll() {
            Ok(events) => events
                .into_iter()
                .for_each(|e| send(Action::LiveEvent(LiveSource::Fork(id), Box::new(e)))),
            Err(e) => {
                send(Action::FollowLost(LiveSource::Fork(id), format!("{e:#}")));
                break;
            }
        }
        if tail.finished() {
            break;
        }
        if exited {
            // One more look: its last lines may have come with its end.
            if let Ok(events) = tail.poll() {
                events
                    .into_iter()
                    .for_each(|e| send(Action::LiveEvent(LiveSource::Fork(id), Box::new(e))));
            }
            if !tail.finished() {
                send(Action::FollowLost(
                    LiveSource::Fork(id),
                    format!(
                        "the fork ended without finishing its run: {}",
                        last_lines(log)
                    ),
                ));
            }
            break;
        }
        std::thread::sleep(POLL_EVERY);
    }
    let _ = child.wait();
}

/// The last lines of the fork's output (of its last 16 KiB), for a message.
fn last_lines(log: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(log) {
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
        let mut bytes = Vec::new();
        let _ = file.take(16 * 1024).read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    said_cause(&text)
}

/// What a fork's output says went wrong: its error line (`cosmos: error: …`, the line `main`
/// prints a failure as) when it has one, else its last lines that are not warnings, else its
/// last lines. A warning printed before the failure is never given as its cause.
fn said_cause(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(error) = lines.iter().rev().find(|l| l.starts_with("cosmos: error:")) {
        return error.to_string();
    }
    let not_warnings: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.starts_with("cosmos: warning:"))
        .collect();
    let lines = if not_warnings.is_empty() {
        lines
    } else {
        not_warnings
    };
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        "it printed nothing".into()
    } else {
        tail.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fork's log is a fresh file of a random name: a link another user planted at any
    /// name of the old pattern (`cosmos-fork-PID-ID.log`) in the temporary folder is never
    /// followed, the child's output is still read back for the error, and the log is removed.
    #[test]
    fn the_forks_log_is_never_a_planted_file_and_is_removed_after() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        let planted = tmp.path().join("planted");
        std::fs::create_dir(&planted).unwrap();
        for id in 0..4u64 {
            let name = format!("cosmos-fork-{}-{id}.log", std::process::id());
            std::os::unix::fs::symlink(&victim, planted.join(name)).unwrap();
        }
        let work = ForkWork {
            program: "/bin/sh".into(),
            original: tmp.path().join("run.jsonl"),
            args: vec![
                "-c".into(),
                "echo 'cosmos: error: no such run' >&2; exit 3".into(),
            ],
            path: tmp.path().join("never.jsonl"),
        };
        let mut told = Vec::new();
        run_logging_in(2, work, &planted, &mut |a| told.push(a));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let Some(Action::Loaded(2, loaded)) = told.first() else {
            panic!("the end is told first: {told:?}");
        };
        let why = format!("{:#}", loaded.as_ref().as_ref().err().unwrap());
        assert!(why.contains("cosmos: error: no such run"), "{why}");
        assert!(matches!(told.last(), Some(Action::ForkEnded(2))));
        let left: Vec<_> = std::fs::read_dir(&planted).unwrap().collect();
        assert_eq!(
            left.len(),
            4,
            "only the planted links remain: the log is removed"
        );
    }

    #[test]
    fn the_cause_is_the_error_line_not_the_warning_before_it() {
        let printed = "cosmos: warning: the servers start fresh; these replayed steps may have \
                       left state behind\ncosmos: error: no server named \"memory\" in mcp.json\n";
        assert_eq!(
            said_cause(printed),
            "cosmos: error: no server named \"memory\" in mcp.json"
        );
        assert_eq!(
            said_cause("cosmos: warning: only this\n"),
            "cosmos: warning: only this"
        );
        assert_eq!(said_cause("a\nb\ncosmos: warning: w\nc\nd\n"), "b · c · d");
        assert_eq!(said_cause(""), "it printed nothing");
    }
}
