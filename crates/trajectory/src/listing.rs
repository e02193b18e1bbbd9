//! Listing a folder of runs from each file's first and last lines alone, so hundreds of
//! large runs list in milliseconds; the events in between are parsed only when a run is
//! opened.
//!
//! Summarises a file from its first line (header) and last line (`run_finished`
//! totals) only, files on every core (`parallel::map`), in the files' order: this
//! is how a folder of hundreds of runs lists fast.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::event::{AgentKind, Event, EventBody, Header, RunStatus, Totals};
use super::reader::{LineReader, RawLine, is_judgement, parse_event, parse_header};

/// First tail chunk read when looking for the last line; grown until a line fits. Small: on
/// a cold cache a listing's time is the pages it reads.
const TAIL_CHUNK: u64 = 8 << 10;
/// Largest tail read before giving up on finding the last line.
const MAX_TAIL: u64 = 64 << 20;

/// One row of the run browser.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The file.
    pub path: PathBuf,
    /// File size in bytes.
    pub bytes: u64,
    /// The header, or why it could not be read.
    pub header: Result<Header, String>,
    /// The `run_finished` line's content, when the last line is one.
    pub finished: Option<Finished>,
}

/// What `run_finished` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// How the run ended.
    pub status: RunStatus,
    /// Its error.
    pub error: Option<String>,
    /// Its totals (with what brought it to its end, `totals.ending`).
    pub totals: Totals,
}

/// A run's totals computed again from its events, for a listing whose stored totals are of
/// an older metrics version.
#[derive(Debug, Clone, PartialEq)]
pub struct Recount {
    /// The file.
    pub path: PathBuf,
    /// Its totals by today's metrics.
    pub totals: Totals,
}

impl RunSummary {
    /// The agent as the browser lists it (`external: <client>` for a proxy session); empty
    /// when the header could not be read.
    pub fn agent_label(&self) -> String {
        self.header
            .as_ref()
            .map(Header::agent_label)
            .unwrap_or_default()
    }

    /// Takes in a recount of this run (the event count stays the file's).
    pub fn recounted(&mut self, recount: &Recount) {
        if let Some(f) = self.finished.as_mut() {
            f.totals = Totals {
                events: f.totals.events,
                ..recount.totals.clone()
            };
        }
    }

    /// Reads the first and last lines of `path`.
    pub fn read(path: &Path) -> Self {
        let file = super::reader::open_regular(path);
        let bytes = file
            .as_ref()
            .ok()
            .and_then(|f| f.metadata().ok())
            .map_or(0, |m| m.len());
        let header = match &file {
            Ok(f) => read_header(f),
            Err(e) => Err(format!("cannot open: {e}")),
        };
        let finished = match (&header, &file) {
            (Ok(_), Ok(f)) => read_finish(f, bytes).and_then(|e| match e.body {
                EventBody::RunFinished {
                    status,
                    error,
                    totals,
                    ..
                } => Some(Finished {
                    status,
                    error,
                    totals,
                }),
                _ => None,
            }),
            _ => None,
        };
        Self {
            path: path.to_path_buf(),
            bytes,
            header,
            finished,
        }
    }

    /// The status to show: the recorded one, or `incomplete` for a run without `run_finished`.
    /// The status with what went wrong on the way: the ending's mark (`⊣steps` for a step
    /// limit…), `✗N` for failed real calls, `?N` for planner replies that were no usable
    /// decision (`completed ⊣steps ✗2`). A run that completed with
    /// failures is not a success, and the marks say so without colour.
    pub fn outcome(&self) -> String {
        if let Some(evaluation) = self.evaluation() {
            return evaluation;
        }
        let mut s = self.status_label().to_string();
        if let Some(marks) = self
            .finished
            .as_ref()
            .map(|f| f.totals.marks())
            .filter(|m| !m.is_empty())
        {
            s.push(' ');
            s.push_str(&marks);
        }
        s
    }

    /// True when the run completed with no failed call, no malformed reply, and with a clean
    /// ending ([`Ending::clean`](crate::event::Ending::clean): not by a limit, a search cut short or with no finished path,
    /// nor a plan without a call).
    pub fn clean(&self) -> bool {
        // An evaluation is no agent's run: its real calls' failures are its data.
        if self.is_evaluation() {
            return self.status_label() == "completed";
        }
        self.finished
            .as_ref()
            .is_some_and(|f| f.totals.clean(f.status))
    }

    /// True for a `cosmos wm-eval` file.
    pub fn is_evaluation(&self) -> bool {
        self.header
            .as_ref()
            .is_ok_and(|h| h.agent.kind == AgentKind::WmEval)
    }

    /// A wm-eval file's outcome: an evaluation, and the head of its leaderboard.
    fn evaluation(&self) -> Option<String> {
        if !self.is_evaluation() {
            return None;
        }
        let mut s = match self.status_label() {
            "completed" => "evaluation".to_string(),
            other => format!("evaluation {other}"),
        };
        if let Some(l) = self
            .finished
            .as_ref()
            .and_then(|f| f.totals.leader.as_ref())
        {
            s.push_str(&format!(
                " ★ {} {:.2} of {}",
                crate::sanitize::one_line(&l.world_model, 24),
                l.fidelity,
                l.of
            ));
        }
        Some(s)
    }

    /// The status from `run_finished`: completed, failed, interrupted; else incomplete or
    /// unreadable.
    pub fn status_label(&self) -> &'static str {
        match (&self.header, &self.finished) {
            (Err(_), _) => "unreadable",
            (Ok(_), Some(f)) => f.status.as_str(),
            (Ok(_), None) => "incomplete",
        }
    }
}

fn read_header(file: &File) -> Result<Header, String> {
    // The reader grows past this for a longer header (tool schemas).
    let mut lines = LineReader::with_capacity(8 << 10, file);
    match lines.next_line().map_err(|e| format!("cannot read: {e}"))? {
        None => Err("empty file".to_string()),
        Some(RawLine::TooLong(n)) => Err(format!("header line of {n} bytes is too long")),
        Some(RawLine::Line { bytes, .. }) => parse_header(bytes).map_err(|e| e.to_string()),
    }
}

/// The `run_finished` line near the end of the file: the last event, or the last before
/// what `cosmos judge` appends (its phase, call and scores). Read from the end only.
fn read_finish(mut file: &File, size: u64) -> Option<Event> {
    let mut chunk = TAIL_CHUNK;
    loop {
        let start = size.saturating_sub(chunk);
        file.seek(SeekFrom::Start(start)).ok()?;
        let mut tail = Vec::with_capacity((size - start) as usize);
        file.take(size - start).read_to_end(&mut tail).ok()?;
        // Lines of the tail, last first; the first piece may be cut unless we read from 0.
        let mut pieces: Vec<&[u8]> = tail.split(|&b| b == b'\n').collect();
        if start > 0 {
            pieces.remove(0);
        }
        for piece in pieces.iter().rev() {
            if piece.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // The header and a torn last line do not parse as events and are passed over.
            if let Ok(event) = parse_event(piece) {
                match event.body {
                    EventBody::RunFinished { .. } => return Some(event),
                    ref body if is_judgement(body) => continue,
                    // Any other event last: the run has not finished.
                    _ => return None,
                }
            }
        }
        if start == 0 || chunk >= MAX_TAIL {
            return None;
        }
        chunk *= 4;
    }
}

/// Summaries of every run under `paths`, in path order.
pub fn list_runs(paths: &[PathBuf]) -> anyhow::Result<Vec<RunSummary>> {
    let found = super::reader::collect_files(paths)?;
    for skipped in &found.skipped {
        tracing::warn!(%skipped, "listing: skipping");
    }
    Ok(crate::parallel::map(&found.files, |p| RunSummary::read(p)))
}
