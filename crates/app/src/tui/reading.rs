//! Opening a run file in parts: the header and the first events at once, for the first screen;
//! the rest read on a thread of its own and handed to the run view as `Action::RunRead`, while
//! keys work on what is read (`RunView::reading`). A file that fits in the first part opens
//! whole, as before.
//!
//! Opening a finished run in parts (`open_in_parts`, for `cosmos replay FILE` and
//! `Work::OpenRun`): the first part at once, the rest as `Action::RunRead` to the run view
//! (`RunView::reading`: "reading … N%", keys on what is read, End or a jump past it waits for
//! that part; the charts grow as a live run's do (`chart_fold`, fed by the cursor's own fold while
//! the view follows the end), and a view at the end of what is read follows it; once read, an
//! untouched view keeps its cursor and charts, makes its tree again over the whole run and goes
//! where `RunView::opened` goes, so the final screen is the whole open's without a second fold
//! of the run). A wm-eval file is read whole.

use std::path::Path;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

use anyhow::{Result, anyhow};

use super::action::Action;
use cosmos_trajectory::event::AgentKind;
use cosmos_trajectory::run::{Part, Run, RunPart};

/// Events of the first part: a screen's worth many times over, parsed in a few milliseconds.
pub const FIRST_PART: usize = 5_000;
/// Events of each later part: a few a second reach the view, each cheap to add.
pub const LATER_PARTS: usize = 100_000;

/// A run opened in parts.
pub enum Opened {
    /// The whole file was read (it fitted in the first part, or its view reads it whole).
    Whole(Run),
    /// Its first part: `read` of `total` bytes; the rest comes through `rest`.
    Head {
        /// The run so far.
        run: Run,
        /// Bytes read.
        read: u64,
        /// The file's bytes.
        total: u64,
        /// The later parts, as actions for the view.
        rest: Receiver<Action>,
    },
}

/// Starts reading `path` and waits for its first part.
pub fn open_in_parts(path: &Path) -> Result<Opened> {
    let (tx, rx) = channel();
    let reading = path.to_path_buf();
    std::thread::spawn(move || {
        let read = Run::read_in_parts(&reading, FIRST_PART, LATER_PARTS, |part| {
            tx.send(Ok(part)).is_ok()
        });
        if let Err(e) = read {
            let _ = tx.send(Err(e));
        }
    });
    let gone = || anyhow!("reading {} stopped", path.display());
    let mut run = match rx.recv().map_err(|_| gone())?? {
        RunPart::Begun(run) => *run,
        RunPart::More(_) => return Err(gone()),
    };
    let RunPart::More(first) = rx.recv().map_err(|_| gone())?? else {
        return Err(gone());
    };
    let (read, total) = (first.read, first.total);
    if run.extend(first) {
        return Ok(Opened::Whole(run));
    }
    if run.header.agent.kind == AgentKind::WmEval {
        // The world-model view reads its run once, whole.
        for part in rx {
            if let RunPart::More(part) = part? {
                run.extend(part);
            }
        }
        return Ok(Opened::Whole(run));
    }
    let (rest_tx, rest) = channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        for part in rx {
            let part = match part {
                Ok(RunPart::More(part)) => part,
                Ok(RunPart::Begun(_)) => continue,
                // The file could not be read on: the view ends its reading saying why.
                Err(e) => Part::failed(&path, &format!("{e:#}")),
            };
            let action = Action::RunRead(path.clone(), Arc::new(Mutex::new(Some(part))));
            if rest_tx.send(action).is_err() {
                return;
            }
        }
    });
    Ok(Opened::Head {
        run,
        read,
        total,
        rest,
    })
}
