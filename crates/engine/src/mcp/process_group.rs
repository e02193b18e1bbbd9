//! A stdio server's process group: the server and everything it started (`npx` wrappers,
//! `sh -c`, a node or python child). Stopping it escalates: the caller first closes stdin
//! (MCP's own shutdown), then [`ProcessGroup::terminate`] sends SIGTERM to the whole group and,
//! after a grace period, SIGKILL. Dropping a group that is still alive kills it at once, so no
//! ending (an error, a panic) leaves a server behind; a watchdog process kills the group if
//! cosmos itself is killed (`kill -9`).
//!
//! It owns the process group of every child cosmos starts with `process_group(0)`, stdio
//! servers and command world models alike (the explorer's fork, a cosmos that stops its own
//! servers, is sent SIGTERM by `tui/fork_work.rs`): stopped in order (stdin closed, SIGTERM,
//! SIGKILL, 0.5 s apart), killed at once if dropped alive, and watched by a small `sh` (given
//! PATH and nothing else of cosmos's environment) that kills the group if cosmos dies without
//! stopping it (`kill -9`). Guarded against id reuse: a group seen empty is never signalled
//! again, and its watchdog stops watching it. `terminate` reaps the leader it is given as soon
//! as it exits: an unreaped child still counts as a member, and the group would look alive
//! through every grace period.

use std::time::{Duration, Instant};

/// A process group led by a child we started with `process_group(0)`: its owner, for MCP
/// servers and command world models alike.
///
/// Guarded against id reuse: a group id stays reserved while any process of the group lives;
/// once the group is seen empty it is marked gone and never signalled again (its number may
/// then belong to someone else), and the watchdog stops watching a group that is gone.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: libc::pid_t,
    /// Seen empty: never signalled again.
    gone: std::sync::atomic::AtomicBool,
    /// Kills the group if cosmos itself is killed (SIGKILL leaves cosmos no chance to).
    watchdog: Option<std::process::Child>,
}

/// How often the watchdog looks whether cosmos is still alive.
const WATCH_EVERY_S: u32 = 1;

impl ProcessGroup {
    /// The group led by process `pid`, watched over: if cosmos dies without stopping it (a
    /// `kill -9`), a small `sh` in a group of its own notices within a second and kills the
    /// whole group, the server's children included. (A descendant that leaves the group with
    /// `setsid` is beyond it: only a cgroup would reach that.)
    pub fn led_by(pid: u32) -> Option<Self> {
        let pgid = libc::pid_t::try_from(pid).ok().filter(|p| *p > 1)?;
        Some(Self {
            pgid,
            gone: std::sync::atomic::AtomicBool::new(false),
            watchdog: watchdog(pgid),
        })
    }

    /// True while any process of the group is alive; once false, false for good.
    pub fn alive(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if self.gone.load(Relaxed) {
            return false;
        }
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        let alive = unsafe { libc::killpg(self.pgid, 0) == 0 };
        if !alive {
            self.gone.store(true, Relaxed);
        }
        alive
    }

    fn signal(&self, signal: libc::c_int) {
        // Only a group still alive: a number seen free may have been given to another.
        if self.alive() {
            // SAFETY: killpg only sends a signal, to the group this child leads.
            unsafe {
                libc::killpg(self.pgid, signal);
            }
        }
    }

    /// Kills the whole group at once (SIGKILL), if it is still alive.
    pub fn kill(&self) {
        self.signal(libc::SIGKILL);
    }

    /// Waits up to `grace` for the group to end by itself, then SIGTERM, then after `grace`
    /// again SIGKILL. Returns when the group is gone (or SIGKILL was sent). `leader` is the
    /// group's first process when this process started it: it is reaped as soon as it exits,
    /// since an exited child not yet reaped still counts as a member and would keep the group
    /// "alive" through every grace period.
    pub async fn terminate(&self, grace: Duration, mut leader: Option<&mut tokio::process::Child>) {
        let mut alive = || {
            if let Some(child) = leader.as_deref_mut() {
                let _ = child.try_wait();
            }
            self.alive()
        };
        for signal in [None, Some(libc::SIGTERM), Some(libc::SIGKILL)] {
            if let Some(s) = signal {
                self.signal(s);
            }
            let start = Instant::now();
            while alive() && start.elapsed() < grace {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            if !self.alive() {
                return;
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
        if let Some(mut dog) = self.watchdog.take() {
            let _ = dog.kill();
            let _ = dog.wait();
        }
    }
}

/// Starts the watchdog of group `pgid`: it polls cosmos's pid and, once cosmos is gone, kills
/// the group.
fn watchdog(pgid: libc::pid_t) -> Option<std::process::Child> {
    use std::os::unix::process::CommandExt;
    let me = std::process::id();
    // It stops watching a group that is gone, so its number, if given to another group
    // later, is never signalled.
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do kill -0 -{pgid} 2>/dev/null || exit 0; \
         sleep {WATCH_EVERY_S}; done; kill -9 -{pgid} 2>/dev/null"
    );
    let mut sh = std::process::Command::new("sh");
    // It needs nothing of cosmos's environment (which holds API keys): PATH to find `sleep`.
    sh.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        sh.env("PATH", path);
    }
    sh.args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // Its own group: the terminal's Ctrl-C (cosmos handles that itself) does not end it.
        .process_group(0)
        .spawn()
        .map_err(|e| tracing::warn!("no watchdog for process group {pgid}: {e}"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A leader that exits by itself is reaped, so the group is seen gone at once instead of
    /// being waited out, signalled and waited out again as if its zombie were still working.
    #[tokio::test]
    async fn a_leader_that_exits_is_reaped_and_not_waited_out() {
        let mut child = tokio::process::Command::new("cat")
            .process_group(0)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let group = ProcessGroup::led_by(child.id().unwrap()).unwrap();
        drop(child.stdin.take()); // cat ends at the end of its input
        let grace = Duration::from_secs(5);
        let started = Instant::now();
        group.terminate(grace, Some(&mut child)).await;
        assert!(!group.alive());
        let status = child.try_wait().unwrap().expect("reaped");
        assert!(
            status.success(),
            "it ended by itself, not by a signal: {status}"
        );
        // Far inside one grace period: a group kept "alive" by its zombie takes three.
        assert!(started.elapsed() < grace, "{:?}", started.elapsed());
    }
}
