//! A cell's files in the sweep's folder: its run (`<cell file>.jsonl`), its claim while a
//! process runs it (`….jsonl.lock`, locked with an OS file lock, so a process killed with -9
//! leaves no stale claim), and runs that did not finish, set aside (`….jsonl.set-aside-<time>`).
//! Nothing here ever overwrites or deletes a run.

use std::fs::{File, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::spec::Cell;
use cosmos_engine::metrics::records::recount;
use cosmos_engine::metrics::run::METRICS_VERSION;
use cosmos_trajectory::event::{RunStatus, Totals};
use cosmos_trajectory::listing::RunSummary;
use cosmos_trajectory::out_file::{Own, open_own};

/// A cell's state on disk.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// A finished run (completed or failed: an agent's failure is a result), with its totals.
    Done(RunStatus, Totals),
    /// Claimed by a running process (what its claim says: pid and start).
    Running(String),
    /// A file without a usable end (torn, interrupted, unreadable): to set aside and run again.
    Incomplete(String),
    /// No file.
    Missing,
}

impl State {
    /// `done`, `failed`, `running (…)`, `incomplete (…)` or `missing`.
    pub fn label(&self) -> String {
        match self {
            State::Done(RunStatus::Completed, _) => "done".into(),
            State::Done(s, _) => s.as_str().into(),
            State::Running(who) => format!("running ({who})"),
            State::Incomplete(why) => format!("incomplete ({why})"),
            State::Missing => "missing".into(),
        }
    }

    /// True for a finished run: a rerun leaves the cell alone.
    pub fn is_done(&self) -> bool {
        matches!(self, State::Done(..))
    }
}

/// The run file of `cell` in `out`.
pub fn run_path(out: &Path, cell: &Cell) -> PathBuf {
    out.join(cell.file_name())
}

fn lock_path(out: &Path, cell: &Cell) -> PathBuf {
    out.join(format!("{}.lock", cell.file_name()))
}

/// Most of a claim file read: it names a process in a line.
const CLAIM_BYTES: u64 = 4 << 10;

/// The state of `cell` in `out`: a live claim first, then its run file.
pub fn state(out: &Path, cell: &Cell) -> State {
    if let Some(who) = claimed_by(out, cell) {
        return State::Running(who);
    }
    finished_state(&run_path(out, cell))
}

/// The state of a run file alone (claims aside).
pub fn finished_state(path: &Path) -> State {
    if !path.exists() {
        return State::Missing;
    }
    let mut summary = RunSummary::read(path);
    // Totals of an older metrics version are computed again, as the browser does.
    if summary
        .finished
        .as_ref()
        .is_some_and(|f| f.totals.metrics_version != METRICS_VERSION)
        && let Ok([fresh]) = recount(&[path.to_path_buf()]).as_deref()
    {
        summary.recounted(fresh);
    }
    match summary.finished {
        Some(f) if matches!(f.status, RunStatus::Completed | RunStatus::Failed) => {
            State::Done(f.status, f.totals)
        }
        _ => State::Incomplete(summary.status_label().to_string()),
    }
}

/// Who holds the cell's claim, if a live process does.
fn claimed_by(out: &Path, cell: &Cell) -> Option<String> {
    let path = lock_path(out, cell);
    let file = File::open(&path).ok()?;
    match file.try_lock_shared() {
        // Nobody holds it: a claim left by a process that ended (or was killed).
        Ok(()) => None,
        Err(TryLockError::WouldBlock) => Some(
            cosmos_trajectory::small_file::read_string_within(&path, CLAIM_BYTES)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "another process".into()),
        ),
        Err(TryLockError::Error(_)) => None,
    }
}

/// A cell claimed by this process until dropped (the OS lock goes with the process, however it
/// ends; a claim dropped normally also removes its file, a killed process leaves it unlocked).
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    _file: File,
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still locked; the lock goes when the file closes just after.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Claims `cell` for this process, or says who holds it. After the claim, the caller checks the
/// cell's state again: another process may have finished it just before.
pub fn claim(out: &Path, cell: &Cell) -> Result<std::result::Result<Claim, String>> {
    let path = lock_path(out, cell);
    // A lock's name is known to anyone who can write to the folder: a link or a second name
    // planted there is never written through (the claim truncates what it opens).
    let mut file = open_own(&path, Own::Lock)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let who = cosmos_trajectory::small_file::read_string_within(&path, CLAIM_BYTES)
                .unwrap_or_default();
            return Ok(Err(who.trim().to_string()));
        }
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()));
        }
    }
    file.set_len(0)?;
    writeln!(
        file,
        "pid {} since {}",
        std::process::id(),
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%SZ")
    )?;
    Ok(Ok(Claim { path, _file: file }))
}

/// Moves a cell's unfinished run out of the way (never overwritten, never read as a run);
/// returns (from, to) when there was one.
pub fn set_aside(path: &Path) -> Result<Option<(PathBuf, PathBuf)>> {
    if !path.exists() {
        return Ok(None);
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let aside = path.with_extension(format!("jsonl.set-aside-{stamp}"));
    std::fs::rename(path, &aside).with_context(|| format!("setting {} aside", path.display()))?;
    // Its kept end state goes with it: left in place, the rerun's state would be merged into it.
    let state = cosmos_engine::mcp::kept_state_path(path);
    if std::fs::symlink_metadata(&state).is_ok() {
        let state_aside = state.with_extension(format!("state.set-aside-{stamp}"));
        std::fs::rename(&state, &state_aside)
            .with_context(|| format!("setting {} aside", state.display()))?;
    }
    Ok(Some((path.to_path_buf(), aside)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hardening VI: a claim truncates what it opens, so a link (or a second name) planted at
    /// a cell's `.lock` is refused, its target untouched; a claim of a fresh cell works.
    #[test]
    fn a_planted_lock_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let cell = Cell {
            id: "c0ffee".into(),
            task_id: "t".into(),
            config: "c".into(),
            repeat: 1,
            args: Vec::new(),
            cost: 1.0,
        };
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        std::os::unix::fs::symlink(&victim, lock_path(dir.path(), &cell)).unwrap();
        let refused = claim(dir.path(), &cell).unwrap_err();
        assert!(
            format!("{refused:#}").contains("never followed"),
            "{refused:#}"
        );
        std::fs::remove_file(lock_path(dir.path(), &cell)).unwrap();
        std::fs::hard_link(&victim, lock_path(dir.path(), &cell)).unwrap();
        assert!(claim(dir.path(), &cell).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        std::fs::remove_file(lock_path(dir.path(), &cell)).unwrap();
        let claimed = claim(dir.path(), &cell).unwrap();
        assert!(claimed.is_ok(), "{claimed:?}");
    }

    /// A torn cell's run is set aside with its kept end state: the rerun's state is its own,
    /// never merged into the old one's folder.
    #[test]
    fn a_run_set_aside_takes_its_kept_state_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("cell.jsonl");
        std::fs::write(&run, "torn").unwrap();
        let kept = cosmos_engine::mcp::kept_state_path(&run);
        std::fs::create_dir_all(kept.join("memory")).unwrap();
        std::fs::write(kept.join("memory/old-only"), "old").unwrap();
        let (_, aside) = set_aside(&run).unwrap().unwrap();
        assert!(
            !run.exists() && !kept.exists(),
            "nothing left where the rerun writes"
        );
        let name = aside.file_name().unwrap().to_string_lossy().into_owned();
        let stamp = name.trim_start_matches("cell.jsonl.set-aside-");
        let kept_aside = kept.with_extension(format!("state.set-aside-{stamp}"));
        assert_eq!(
            std::fs::read_to_string(kept_aside.join("memory/old-only")).unwrap(),
            "old"
        );
    }

    #[test]
    fn a_finished_cell_shows_todays_totals_not_those_of_an_older_version() {
        // A sample run as a version before totals had a version would have written it: its
        // stored totals say version 0, and a count that today's metrics would not give.
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample_runs");
        let source = std::fs::read_dir(&samples)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains("_react_none"))
            .min()
            .expect("a sample ReAct run");
        let dir = tempfile::tempdir().unwrap();
        let sample = dir.path().join("old.jsonl");
        let text = std::fs::read_to_string(&source).unwrap();
        let (body, last) = text.trim_end().rsplit_once('\n').unwrap();
        let mut finished: serde_json::Value = serde_json::from_str(last).unwrap();
        finished["totals"]["metrics_version"] = 0.into();
        finished["totals"]["tool_calls"] = 999.into();
        std::fs::write(&sample, format!("{body}\n{finished}\n")).unwrap();
        let stored = RunSummary::read(&sample).finished.unwrap().totals;
        assert_eq!(stored.metrics_version, 0);
        let State::Done(_, shown) = finished_state(&sample) else {
            panic!("a finished cell");
        };
        let (records, _) = cosmos_engine::metrics::records::read_records(&[sample]).unwrap();
        let want = records[0].metrics.totals(stored.events);
        assert_eq!(shown, want);
        assert_eq!(shown.metrics_version, METRICS_VERSION);
    }

    fn cell() -> Cell {
        Cell {
            id: "abc".into(),
            task_id: "t".into(),
            config: "c".into(),
            repeat: 1,
            args: vec![],
            cost: 1.0,
        }
    }

    #[test]
    fn a_claim_is_exclusive_while_held_and_gone_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        assert_eq!(state(out, &cell()), State::Missing);
        let held = claim(out, &cell()).unwrap().expect("free");
        let who = claim(out, &cell()).unwrap().expect_err("held");
        assert!(
            who.starts_with(&format!("pid {}", std::process::id())),
            "{who}"
        );
        assert!(matches!(state(out, &cell()), State::Running(w) if w == who));
        drop(held);
        assert!(
            !lock_path(out, &cell()).exists(),
            "a released claim leaves nothing"
        );
        assert_eq!(state(out, &cell()), State::Missing);
        // A killed holder leaves its file, unlocked: nobody is running the cell.
        std::fs::write(lock_path(out, &cell()), "pid 1 since then\n").unwrap();
        assert_eq!(state(out, &cell()), State::Missing);
        claim(out, &cell()).unwrap().expect("free again");
    }
}
