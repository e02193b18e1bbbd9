//! Following a trajectory another process is still writing (`cosmos replay FILE` of a run
//! started with `--no-tui` elsewhere): complete lines are read as they appear; a line still
//! being written waits for its newline instead of counting as torn. The same line checks as
//! a whole-file read ([`super::reader::LineChecks`]).
//!
//! A file another process is still writing: complete lines as they appear (a line
//! without its newline yet waits instead of counting as torn); a file that shrinks, or whose path
//! no longer names it (renamed, replaced), is an error the explorer shows (`Action::FollowLost`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::event::Event;
use super::reader::{LineChecks, MAX_LINE_BYTES, Problem, Severity, parse_header};
use super::run::Run;

/// Bytes read per poll at most, so one poll of a huge file does not hold the caller long.
const CHUNK: usize = 8 << 20;

/// A reader at the end of a growing trajectory file.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    file: File,
    /// Bytes read so far.
    offset: u64,
    /// Bytes of a line whose newline has not been written yet.
    pending: Vec<u8>,
    /// Skipping a line longer than the limit until its newline.
    skipping: Option<u64>,
    line_no: u64,
    checks: LineChecks,
}

impl Tail {
    /// Reads what `path` holds now (its complete lines) into a run, and a tail to read the
    /// rest as it comes.
    pub fn open(path: &Path) -> Result<(Run, Self)> {
        let file = super::reader::open_regular(path)?;
        let mut tail = Self {
            path: path.to_path_buf(),
            file,
            offset: 0,
            pending: Vec::new(),
            skipping: None,
            line_no: 0,
            checks: LineChecks::new(path),
        };
        let mut lines = Vec::new();
        tail.read_lines(&mut lines, usize::MAX)?;
        let mut lines = lines.into_iter();
        let header = match lines.next() {
            Some((_, bytes)) => parse_header(&bytes)
                .map_err(|reason| anyhow::anyhow!("{}:1: {reason}", path.display()))?,
            None => bail!(
                "{}: no complete header line yet (is the run starting?)",
                path.display()
            ),
        };
        let mut run = Run::new(path.to_path_buf(), header);
        for (line_no, bytes) in lines {
            if let Some(event) = tail.checks.event(line_no, &bytes, true) {
                run.push(event);
            }
        }
        run.problems = tail.checks.take_problems();
        Ok((run, tail))
    }

    /// True once the run has written its end: nothing more is coming but judgements.
    pub fn finished(&self) -> bool {
        self.checks.saw_finish()
    }

    /// The events completed since the last poll.
    pub fn poll(&mut self) -> Result<Vec<Event>> {
        let len = self
            .file
            .metadata()
            .with_context(|| format!("reading {}", self.path.display()))?
            .len();
        if len < self.offset {
            bail!(
                "{} shrank from {} to {len} bytes while followed (rewritten?); following stopped",
                self.path.display(),
                self.offset
            );
        }
        // The path no longer names the file being read: renamed, deleted or replaced.
        {
            use std::os::unix::fs::MetadataExt;
            let open = self.file.metadata()?;
            let named = std::fs::metadata(&self.path);
            let same = named
                .as_ref()
                .is_ok_and(|m| m.dev() == open.dev() && m.ino() == open.ino());
            if !same {
                bail!(
                    "{} was {} while followed; following stopped",
                    self.path.display(),
                    if named.is_ok() {
                        "replaced by another file"
                    } else {
                        "renamed or deleted"
                    }
                );
            }
        }
        let mut lines = Vec::new();
        self.read_lines(&mut lines, CHUNK)?;
        Ok(lines
            .into_iter()
            .filter_map(|(line_no, bytes)| self.checks.event(line_no, &bytes, true))
            .collect())
    }

    /// Problems met since the last call (bad lines are skipped, as in a whole-file read).
    pub fn take_problems(&mut self) -> Vec<Problem> {
        self.checks.take_problems()
    }

    /// Reads up to `limit` new bytes and returns the complete lines among them, numbered.
    fn read_lines(&mut self, out: &mut Vec<(u64, Vec<u8>)>, limit: usize) -> Result<()> {
        self.file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = Vec::new();
        let read = (&mut self.file)
            .take(limit as u64)
            .read_to_end(&mut chunk)
            .with_context(|| format!("reading {}", self.path.display()))?;
        self.offset += read as u64;
        let mut rest = chunk.as_slice();
        while let Some(i) = memchr::memchr(b'\n', rest) {
            let (line, tail) = (&rest[..i], &rest[i + 1..]);
            rest = tail;
            self.line_no += 1;
            if let Some(skipped) = self.skipping.take() {
                let n = skipped + line.len() as u64;
                self.checks.skip(
                    self.line_no,
                    Severity::Error,
                    format!(
                        "line of {n} bytes is longer than the {MAX_LINE_BYTES}-byte limit; skipped"
                    ),
                );
                continue;
            }
            let mut bytes = std::mem::take(&mut self.pending);
            bytes.extend_from_slice(line);
            if bytes.last() == Some(&b'\r') {
                bytes.pop();
            }
            out.push((self.line_no, bytes));
        }
        match &mut self.skipping {
            Some(n) => *n += rest.len() as u64,
            None if self.pending.len() + rest.len() > MAX_LINE_BYTES => {
                self.skipping = Some((self.pending.len() + rest.len()) as u64);
                self.pending.clear();
            }
            None => self.pending.extend_from_slice(rest),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::event::{EventBody, RunStatus};
    use crate::synthetic::{self, Spec};

    fn lines() -> (String, Vec<String>) {
        let spec = Spec {
            nodes: 5,
            ..Spec::default()
        };
        let header = serde_json::to_string(&synthetic::header(&spec)).unwrap();
        let finished = EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: None,
            totals: Default::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        };
        let events = synthetic::events(&spec)
            .into_iter()
            .chain([(1_000_000, finished)])
            .enumerate()
            .map(|(i, (t_ms, body))| {
                serde_json::to_string(&Event {
                    seq: i as u64 + 1,
                    t_ms,
                    body,
                })
                .unwrap()
            })
            .collect();
        (header, events)
    }

    #[test]
    fn reads_complete_lines_as_they_are_written() {
        let (header, events) = lines();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("growing.jsonl");
        let mut file = File::create(&path).unwrap();
        writeln!(file, "{header}").unwrap();
        writeln!(file, "{}", events[0]).unwrap();
        // Half of the second event: not an event yet, and not a torn line either.
        let (first_half, second_half) = events[1].split_at(events[1].len() / 2);
        write!(file, "{first_half}").unwrap();
        file.flush().unwrap();

        let (run, mut tail) = Tail::open(&path).unwrap();
        assert_eq!(run.len(), 1);
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        assert!(tail.poll().unwrap().is_empty());

        writeln!(file, "{second_half}").unwrap();
        writeln!(file, "not json").unwrap();
        for e in &events[2..] {
            writeln!(file, "{e}").unwrap();
        }
        file.flush().unwrap();
        let more = tail.poll().unwrap();
        assert_eq!(more.len(), events.len() - 1, "every event after the first");
        assert_eq!(more[0].seq, 2);
        let problems = tail.take_problems();
        assert_eq!(problems.len(), 1);
        assert_eq!(
            problems[0].line, 4,
            "the bad line is named: {}",
            problems[0]
        );
        assert!(tail.finished());
        assert!(matches!(
            more.last().unwrap().body,
            EventBody::RunFinished { .. }
        ));
    }

    #[test]
    fn a_file_that_shrinks_is_an_error() {
        let (header, events) = lines();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinks.jsonl");
        std::fs::write(&path, format!("{header}\n{}\n", events[0])).unwrap();
        let (_, mut tail) = Tail::open(&path).unwrap();
        std::fs::write(&path, format!("{header}\n")).unwrap();
        let err = tail.poll().unwrap_err().to_string();
        assert!(err.contains("shrank"), "{err}");
    }

    #[test]
    fn a_file_renamed_or_replaced_while_followed_is_an_error() {
        let (header, events) = lines();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moves.jsonl");
        std::fs::write(&path, format!("{header}\n{}\n", events[0])).unwrap();
        let (_, mut tail) = Tail::open(&path).unwrap();
        assert!(tail.poll().is_ok(), "unchanged: fine");
        std::fs::rename(&path, dir.path().join("moved.jsonl")).unwrap();
        let err = tail.poll().unwrap_err().to_string();
        assert!(err.contains("renamed or deleted"), "{err}");
        // Another file under the same name (a rerun writing a new file there).
        std::fs::write(&path, format!("{header}\n{}\n", events[0])).unwrap();
        let err = tail.poll().unwrap_err().to_string();
        assert!(err.contains("replaced by another file"), "{err}");
    }

    #[test]
    fn no_header_yet_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.jsonl");
        std::fs::write(&path, "{\"format\":").unwrap();
        let err = Tail::open(&path).unwrap_err().to_string();
        assert!(err.contains("no complete header line yet"), "{err}");
    }
}
