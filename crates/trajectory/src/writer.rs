//! The trajectory writer: one JSON line per event, flushed as written, secrets redacted.
//!
//! appends one line per event, one `write` + flush each, after `redact.rs` has taken
//! secrets out (the event it returns is decoded from what was written only when redaction or
//! the line limit changed it). Refuses to overwrite a file. `Writer::append` (judge, probes) takes the file's
//! OS lock for each event and numbers it after the file's last line, so concurrent appenders
//! (threads or processes) never repeat a `seq` (`tests/trajectory/appending.rs`). Given a `Tally` (the `metrics` accumulator
//! implements it), it fills `run_finished` totals itself (the tally sees the `run_finished` first,
//! so its status and ending count), so listings always agree with files. Invariant: no line it
//! writes is longer than the reader takes: an event that would be is cut to fit (`fit`: longest
//! strings first, then the dominant free-form value), each cut saying so
//! (`tests/trajectory/writer_limits.rs`).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::event::{Event, EventBody, Header, Totals};
use super::redact::Redactor;

/// Appends a run to a `.jsonl` file. Every line reaches the operating system before
/// `write` returns, so a crash of this process loses at most the line being written.
///
/// Given a [`Tally`], it fills in the totals of `run_finished` itself, so the totals a
/// listing reads always agree with the file.
/// Keeps a run's totals while its events are written. The trajectory knows their shape, not
/// their formulas: `metrics::run::RunAccumulator` implements it.
pub trait Tally: Send {
    /// Takes one written event into account.
    fn push(&mut self, event: &Event);
    /// The totals so far, for a `run_finished` that is event number `events` at `t_ms`.
    fn totals(&self, events: u64, t_ms: u64) -> Totals;
}

/// A run's file being written: each event appended as one JSON line, redacted first.
pub struct Writer {
    file: File,
    path: PathBuf,
    redactor: Redactor,
    next_seq: u64,
    line: Vec<u8>,
    tally: Option<Box<dyn Tally>>,
    /// Longest line written (the reader's limit, less room to spare); a longer event is cut.
    max_line: usize,
    /// Appending to a finished run: every write takes the file's lock and numbers its event
    /// after the file's last line, so writers in other threads or processes (a probe, `cosmos
    /// judge`) never write the same `seq`.
    appending: bool,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("path", &self.path)
            .field("next_seq", &self.next_seq)
            .finish()
    }
}

impl Writer {
    /// Creates `path` (refusing to overwrite) and writes the header line. With a `tally`,
    /// `run_finished` gets its totals from it.
    pub fn create(
        path: &Path,
        header: &Header,
        redactor: Redactor,
        tally: Option<Box<dyn Tally>>,
    ) -> Result<Self> {
        Self::create_with_max_line(path, header, redactor, tally, DEFAULT_MAX_LINE)
    }

    /// [`Writer::create`] with another longest line (tests use a small one; the default is the
    /// reader's limit less 64 KiB). A longer event, the header included, is cut to fit.
    pub fn create_with_max_line(
        path: &Path,
        header: &Header,
        redactor: Redactor,
        tally: Option<Box<dyn Tally>>,
        max_line: usize,
    ) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("creating trajectory {}", path.display()))?;
        let mut writer = Self {
            file,
            path: path.to_path_buf(),
            redactor,
            next_seq: 1,
            line: Vec::new(),
            tally,
            max_line,
            appending: false,
        };
        writer.write_line(header)?;
        Ok(writer)
    }

    /// Opens a finished run to append to it (`cosmos judge`, probes, annotations). Each
    /// write then holds an exclusive lock on the file (an OS lock, so other processes too),
    /// refuses a file whose last line is torn (appending would bury the tear) and numbers its
    /// event after the last line there, whoever wrote it. What follows `run_finished` never
    /// changes its totals, so there is no tally.
    pub fn append(path: &Path, redactor: Redactor) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening {} to append", path.display()))?;
        let mut writer = Self {
            file,
            path: path.to_path_buf(),
            redactor,
            next_seq: 1,
            line: Vec::new(),
            tally: None,
            max_line: DEFAULT_MAX_LINE,
            appending: true,
        };
        // Refuse a torn file now, before the caller does any work for it.
        writer.file.lock_shared()?;
        let checked = last_seq(&writer.file, &writer.path);
        writer.file.unlock()?;
        writer.next_seq = checked? + 1;
        Ok(writer)
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one event, numbering it, and returns the event as written (redacted). With a
    /// tally, the totals of `run_finished` are its own, whatever the caller passed.
    pub fn write(&mut self, t_ms: u64, mut body: EventBody) -> Result<Event> {
        let finishing = matches!(body, EventBody::RunFinished { .. });
        if let (true, Some(tally)) = (finishing, &mut self.tally) {
            // The tally sees how the run ended (status, ending, time) before it totals it.
            tally.push(&Event {
                seq: self.next_seq,
                t_ms,
                body: body.clone(),
            });
            if let EventBody::RunFinished { totals, .. } = &mut body {
                // The tally counts events; a leaderboard's head is the evaluation's to give.
                let leader = totals.leader.take();
                *totals = tally.totals(self.next_seq, t_ms);
                totals.leader = leader;
            }
        }
        if self.appending {
            self.file
                .lock()
                .with_context(|| format!("locking {}", self.path.display()))?;
            let written = last_seq(&self.file, &self.path).and_then(|last| {
                self.next_seq = last + 1;
                self.write_numbered(t_ms, body)
            });
            let unlocked = self.file.unlock();
            let event = written?;
            unlocked.with_context(|| format!("unlocking {}", self.path.display()))?;
            return Ok(event);
        }
        self.write_numbered(t_ms, body)
    }

    /// Writes `body` as event `next_seq`.
    fn write_numbered(&mut self, t_ms: u64, body: EventBody) -> Result<Event> {
        let event = Event {
            seq: self.next_seq,
            t_ms,
            body,
        };
        let written = self.write_line(&event)?;
        self.next_seq += 1;
        // The event as written: decoded again only when redaction or the line limit changed it.
        // When what was written no longer decodes as its kind (a secret stood where a typed
        // value was), it goes on as the written line kept whole, never as the event before
        // redaction: the live view, the hook and the tap see only what the file holds.
        let event = match written {
            Some(changed) => match serde_json::from_value::<Event>(changed.clone()) {
                Ok(decoded) => decoded,
                Err(_) => Event {
                    body: EventBody::Unknown {
                        kind: event.body.kind().to_string(),
                        raw: changed,
                    },
                    ..event
                },
            },
            None => event,
        };
        if let Some(tally) = &mut self.tally
            && !matches!(event.body, EventBody::RunFinished { .. })
        {
            tally.push(&event);
        }
        Ok(event)
    }

    /// Writes `item` as one line, redacted and within the line limit; the value written when
    /// that differs from `item`.
    fn write_line<T: Serialize>(&mut self, item: &T) -> Result<Option<serde_json::Value>> {
        let mut value = serde_json::to_value(item).context("encoding event")?;
        let mut changed = self.redactor.redact(&mut value);
        // Never a line too deep for the reader (a server's or a foreign file's value).
        changed |= cut_deep(&mut value, MAX_DEPTH);
        self.line.clear();
        serde_json::to_writer(&mut self.line, &value).context("encoding event")?;
        if self.line.len() > self.max_line {
            // Never a line the reader would refuse: the event is kept, its largest values cut.
            let before = self.line.len();
            fit(&mut value, self.max_line);
            changed = true;
            self.line.clear();
            serde_json::to_writer(&mut self.line, &value).context("encoding event")?;
            tracing::warn!(
                before,
                after = self.line.len(),
                "an event over the line limit was cut to fit"
            );
        }
        self.line.push(b'\n');
        // One write of the whole line, then flush: a reader never sees half of a line
        // unless this process dies inside the call.
        self.file
            .write_all(&self.line)
            .and_then(|()| self.file.flush())
            .with_context(|| format!("writing {}", self.path.display()))?;
        Ok(changed.then_some(value))
    }
}

/// Longest line a writer writes by default: under the reader's limit, so every line written is
/// read.
pub const DEFAULT_MAX_LINE: usize = crate::reader::MAX_LINE_BYTES - (64 << 10);

/// Deepest nesting a line keeps, the event itself level 1: the reader (serde_json) refuses a
/// line nested past 128 levels, and the fast decoders read a line inside more.
pub const MAX_DEPTH: usize = 96;

/// Replaces every array or object nested deeper than `levels` below `value` by a note; true
/// when anything was replaced.
fn cut_deep(value: &mut serde_json::Value, levels: usize) -> bool {
    match value {
        serde_json::Value::Array(_) | serde_json::Value::Object(_) if levels == 0 => {
            *value = serde_json::Value::String(format!(
                "[a value nested deeper than {MAX_DEPTH} levels: not recorded]"
            ));
            true
        }
        serde_json::Value::Array(items) => items
            .iter_mut()
            .fold(false, |cut, v| cut_deep(v, levels - 1) | cut),
        serde_json::Value::Object(map) => map
            .values_mut()
            .fold(false, |cut, v| cut_deep(v, levels - 1) | cut),
        _ => false,
    }
}

/// Shrinks `value` until it serializes within `max` bytes: its longest strings are cut first
/// (to halving lengths, each ending in a note of what was cut), then its largest arrays and
/// objects below the top level are replaced by a note. The envelope's short fields stay.
pub fn fit(value: &mut serde_json::Value, max: usize) {
    let size = |v: &serde_json::Value| serde_json::to_vec(v).map_or(usize::MAX, |b| b.len());
    let mut cap = max / 2;
    while size(value) > max && cap >= 64 {
        cut_strings(value, cap);
        cap /= 2;
    }
    while size(value) > max {
        let Some(largest) = largest_container(value) else {
            break;
        };
        let bytes = size(largest);
        *largest = serde_json::Value::String(format!(
            "[a value of {bytes} bytes not recorded: the line would have been over the limit]"
        ));
    }
}

fn cut_strings(value: &mut serde_json::Value, cap: usize) {
    match value {
        serde_json::Value::String(s) if s.len() > cap => {
            let cut = s.len() - cap;
            let mut end = cap;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            s.push_str(&format!("…[{cut} bytes cut: over the line limit]"));
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| cut_strings(v, cap)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| cut_strings(v, cap)),
        _ => {}
    }
}

/// The array or object to replace: down from the top, into the largest child container while
/// it holds most of its parent, so what is replaced is the free-form value that is large
/// (`structured`, `arguments`, an array inside them), not a typed field around it.
fn largest_container(value: &mut serde_json::Value) -> Option<&mut serde_json::Value> {
    let size = |v: &serde_json::Value| serde_json::to_vec(v).map_or(0, |b| b.len());
    // Found by reading (a JSON pointer), then taken mutably.
    let mut pointer = String::new();
    let mut at: &serde_json::Value = value;
    loop {
        let parent = size(at);
        let children: Vec<(String, &serde_json::Value)> = match at {
            serde_json::Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v))
                .collect(),
            _ => break,
        };
        let largest = children
            .into_iter()
            .filter(|(_, c)| c.is_array() || c.is_object())
            .max_by_key(|(_, c)| size(c));
        match largest {
            Some((key, child)) if size(child) * 2 > parent => {
                pointer.push('/');
                pointer.push_str(&key);
                at = child;
            }
            _ => break,
        }
    }
    // The top level itself is never replaced.
    if pointer.is_empty() {
        None
    } else {
        value.pointer_mut(&pointer)
    }
}

/// The `seq` of the file's last line (0 when it is the header), read from the end; an error
/// when the last line is torn (no newline after it) or does not say its `seq`.
fn last_seq(file: &File, path: &Path) -> Result<u64> {
    use std::os::unix::fs::FileExt;
    let size = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if size == 0 {
        anyhow::bail!("{} is empty: no header to append after", path.display());
    }
    let mut chunk: u64 = 16 << 10;
    loop {
        let start = size.saturating_sub(chunk);
        let mut tail = vec![0u8; (size - start) as usize];
        file.read_exact_at(&mut tail, start)
            .with_context(|| format!("reading {}", path.display()))?;
        if tail.last() != Some(&b'\n') {
            anyhow::bail!(
                "{} ends in a torn line; refusing to append after it",
                path.display()
            );
        }
        let body = &tail[..tail.len() - 1];
        match body.iter().rposition(|&b| b == b'\n') {
            Some(i) => return seq_of(&body[i + 1..], path),
            None if start == 0 => return Ok(0), // only the header
            None if chunk >= crate::reader::MAX_LINE_BYTES as u64 + 2 => {
                anyhow::bail!("{}: the last line is too long to read", path.display())
            }
            None => chunk *= 4,
        }
    }
}

fn seq_of(line: &[u8], path: &Path) -> Result<u64> {
    #[derive(serde::Deserialize)]
    struct Numbered {
        seq: u64,
    }
    serde_json::from_slice::<Numbered>(line)
        .map(|n| n.seq)
        .with_context(|| format!("{}: the last line has no seq to follow", path.display()))
}

/// A piece of a trajectory's file name: `[A-Za-z0-9_-]` kept, anything else `-`, at most
/// `max_chars`, so no task id or world-model name makes a name over the 255 bytes a file system
/// allows (a 300-character task id did).
pub fn file_safe(text: &str, max_chars: usize) -> String {
    text.chars()
        .take(max_chars)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}
