//! A stdio server's process group: the server and everything it started (`npx` wrappers,
//! `sh -c`, a node or python child). Stopping it escalates: the caller first closes stdin
//! (MCP's own shutdown), then [`ProcessGroup::terminate`] sends SIGTERM to the whole group and,
//! after a grace period, SIGKILL. Dropping a group that is still alive kills it at once, so no
//! ending (an error, a panic) leaves a server behind.

use std::time::{Duration, Instant};

/// A process group led by a child we started with `process_group(0)`.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: libc::pid_t,
}

impl ProcessGroup {
    /// The group led by process `pid`.
    pub fn led_by(pid: u32) -> Option<Self> {
        libc::pid_t::try_from(pid)
            .ok()
            .filter(|p| *p > 1)
            .map(|pgid| Self { pgid })
    }

    /// True while any process of the group is alive.
    pub fn alive(&self) -> bool {
        // SAFETY: signal 0 only checks that the group exists and may be signalled.
        unsafe { libc::killpg(self.pgid, 0) == 0 }
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: killpg only sends a signal, to the group this child leads.
        unsafe {
            libc::killpg(self.pgid, signal);
        }
    }

    /// Waits up to `grace` for the group to end by itself, then SIGTERM, then after `grace`
    /// again SIGKILL. Returns when the group is gone (or SIGKILL was sent).
    pub async fn terminate(&self, grace: Duration) {
        for signal in [None, Some(libc::SIGTERM), Some(libc::SIGKILL)] {
            if let Some(s) = signal {
                self.signal(s);
            }
            let start = Instant::now();
            while self.alive() && start.elapsed() < grace {
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
        if self.alive() {
            self.signal(libc::SIGKILL);
        }
    }
}
