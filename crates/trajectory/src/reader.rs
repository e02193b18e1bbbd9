//! Reading trajectories: streaming, tolerant of torn and corrupt lines, with line numbers.
//!
//! Nothing here holds more than one line in memory; [`super::run::Run`] is what keeps a
//! whole run, and only when a person opens it.
//!
//! Streams a file line by line with a length cap (`LineReader`: lines are slices of
//! its own buffer, copied only when one straddles a read; over a file it looks ahead on a line
//! past 4 MiB, so one over the cap is read past in a few megabytes), parses the header (version check,
//! upgrade hook) and events (`EventStream<H>`, its header read as `H`: the whole `Header`, or
//! the `ReportHeader` a totals pass keeps; `next_event` whole, `next_brief` lean with
//! where its line lies (totals), `read_all` for opening a whole file: lines decoded lean in batches by
//! `parallel::stream` on up to four threads (beyond four the in-order check is the
//! bottleneck; on one core, in line on the caller's thread, where threads would only take
//! turns), checked in
//! order on the caller's thread, so its events, spans and problems are `next_brief`'s). Bad lines become `Problem`s
//! (`FILE:LINE: reason`, warning or error) and are skipped; unknown kinds are kept.
//! Holds one line in memory at a time. The per-line rules live in `LineChecks`, which
//! `tail.rs` shares.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

pub use super::event::is_judgement;
use super::event::{Event, EventBody, Header, KNOWN_KINDS};
pub use super::header::ReadHeader;
use super::header::parse_header_str;
use super::lean::{Brief, LeanEvent};

/// Longest line read whole; a longer one is skipped and reported (it would not be a
/// trajectory line a writer of ours made: results are cut long before this).
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Loaded anyway, or expected after a crash (a torn last line, no `run_finished`).
    Warning,
    /// Data was lost or the file is not a trajectory.
    Error,
}

/// A problem found while reading, reported as `FILE:LINE: reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number; 0 when it concerns the whole file.
    pub line: u64,
    /// How bad.
    pub severity: Severity,
    /// What is wrong, in one line.
    pub reason: String,
    /// The line was read past: nothing counts what it held.
    pub skipped: bool,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(
            f,
            "{}:{}: {level}: {}",
            self.path.display(),
            self.line,
            self.reason
        )
    }
}

/// Reads lines with a length cap, counting them, and tells whether the last one was torn.
/// Lines are handed out as slices of its own buffer, copied only when one straddles the
/// end of what was read.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// `buf[start..end]` is read and not yet handed out.
    start: usize,
    end: usize,
    /// `buf[start..scanned]` is known to hold no newline.
    scanned: usize,
    eof: bool,
    line_no: u64,
    /// Byte offset in the input of `buf[start]`.
    offset: u64,
    /// Byte offset of the line last returned.
    line_start: u64,
    /// Longer lines are skipped ([`MAX_LINE_BYTES`] but in tests).
    max_line: usize,
    /// The input's file, when it is one, read ahead (without moving its offset) to learn
    /// whether a long line fits before it is kept: an over-long line is then read past in a
    /// buffer of a few megabytes, not one of the cap's size.
    look_ahead: Option<std::fs::File>,
    /// The line start (`offset`) last looked ahead from.
    looked_from: Option<u64>,
}

/// A line this long is looked ahead on ([`LineReader::looking_ahead`]) before more is kept.
const LOOK_AHEAD_AFTER: usize = 4 << 20;

/// True when the line at `at` in `file` ends (a newline, or the end of the file) within
/// `max` bytes; a read error says true, and the line is read as it would be without looking.
fn line_fits(file: &std::fs::File, at: u64, max: usize) -> bool {
    use std::os::unix::fs::FileExt;
    let mut chunk = vec![0u8; 1 << 20];
    let mut seen = 0usize;
    while seen <= max {
        match file.read_at(&mut chunk, at + seen as u64) {
            Ok(0) | Err(_) => return true,
            Ok(n) => match memchr::memchr(b'\n', &chunk[..n]) {
                Some(i) => return seen + i <= max,
                None => seen += n,
            },
        }
    }
    false
}

/// One raw line.
pub enum RawLine<'a> {
    /// A complete line (without its newline), or a final line without a newline.
    Line {
        /// The bytes.
        bytes: &'a [u8],
        /// False when the file ended before the newline.
        terminated: bool,
    },
    /// A line longer than [`MAX_LINE_BYTES`], skipped.
    TooLong(u64),
}

impl<R: Read> LineReader<R> {
    /// Reads `inner` in pieces of about `capacity` bytes (the buffer grows for longer lines).
    pub fn with_capacity(capacity: usize, inner: R) -> Self {
        Self::over(vec![0; capacity.max(1)], 0, false, inner)
    }

    /// A reader over `buf`, whose first `end` bytes are read (to the end of `inner` when
    /// `eof`).
    fn over(buf: Vec<u8>, end: usize, eof: bool, inner: R) -> Self {
        Self {
            inner,
            buf,
            start: 0,
            end,
            scanned: 0,
            eof,
            line_no: 0,
            offset: 0,
            line_start: 0,
            max_line: MAX_LINE_BYTES,
            look_ahead: None,
            looked_from: None,
        }
    }

    /// This reader, whose input is `file` read from its start: a long line is looked ahead on
    /// in `file` before it is kept, so one over the cap costs a few megabytes to read past.
    pub fn looking_ahead(mut self, file: std::fs::File) -> Self {
        self.look_ahead = Some(file);
        self
    }

    /// This reader, taking lines of at most `max` bytes (longer ones are skipped as
    /// [`RawLine::TooLong`]); [`MAX_LINE_BYTES`] unless set.
    pub fn with_max_line(mut self, max: usize) -> Self {
        self.max_line = max;
        self
    }

    /// The buffer's size now (the memory it holds).
    pub fn buffer_bytes(&self) -> usize {
        self.buf.len()
    }

    /// A reader whose first bytes, `read`, were read from `inner` already (to the end of it
    /// when `at_end`); it goes on with buffers of about `capacity` bytes.
    pub fn starting_with(mut read: Vec<u8>, at_end: bool, capacity: usize, inner: R) -> Self {
        let end = read.len();
        // Room to read on: only what lies past the read bytes is zeroed.
        read.resize(capacity.max(end + 1), 0);
        Self::over(read, end, at_end, inner)
    }

    /// The number of the line last returned.
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// The byte offset in the input where the line last returned begins.
    pub fn line_start(&self) -> u64 {
        self.line_start
    }

    /// The next line, or `None` at the end.
    pub fn next_line(&mut self) -> std::io::Result<Option<RawLine<'_>>> {
        let mut skipped: u64 = 0;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scanned..self.end]) {
                let newline = self.scanned + i;
                let line = self.start..newline;
                self.line_start = self.offset - skipped;
                self.offset += (newline + 1 - self.start) as u64;
                self.start = newline + 1;
                self.scanned = self.start;
                self.line_no += 1;
                if skipped > 0 {
                    return Ok(Some(RawLine::TooLong(skipped + line.len() as u64)));
                }
                let bytes = &self.buf[line];
                return Ok(Some(RawLine::Line {
                    bytes: bytes.strip_suffix(b"\r").unwrap_or(bytes),
                    terminated: true,
                }));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start == self.end && skipped == 0 {
                    return Ok(None);
                }
                self.line_no += 1;
                let line = self.start..self.end;
                self.line_start = self.offset - skipped;
                self.offset += line.len() as u64;
                self.start = self.end;
                return Ok(Some(if skipped > 0 {
                    RawLine::TooLong(skipped + line.len() as u64)
                } else {
                    RawLine::Line {
                        bytes: &self.buf[line],
                        terminated: false,
                    }
                }));
            }
            let pending = self.end - self.start;
            let known_too_long = skipped == 0
                && pending > LOOK_AHEAD_AFTER
                && self.looked_from != Some(self.offset)
                && self.look_ahead.as_ref().is_some_and(|file| {
                    self.looked_from = Some(self.offset);
                    !line_fits(file, self.offset, self.max_line)
                });
            if skipped > 0 || pending > self.max_line || known_too_long {
                // Too long to keep: count it and read on to its end.
                skipped += (self.end - self.start) as u64;
                self.offset += (self.end - self.start) as u64;
                self.start = self.end;
            }
            self.make_room();
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Moves the unfinished line to the front, and doubles the buffer (up to a little over
    /// the line cap) when that line fills more than half of it.
    fn make_room(&mut self) {
        let pending = self.end - self.start;
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.scanned -= self.start;
            self.start = 0;
            self.end = pending;
        }
        if pending * 2 > self.buf.len() {
            // Past the cap the line is skipped, so the buffer never needs more.
            let len = (self.buf.len() * 2).min(self.max_line + (1 << 16));
            self.buf.resize(len.max(self.buf.len()), 0);
        }
    }
}

/// `bytes` as text when they are UTF-8. Every line is checked once, so the check is the SIMD
/// one (`simdutf8`, chosen at run time for the CPU): std's is a few percent of a `report`.
fn utf8(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

pub use super::line_error::LineError;

/// Parses and checks a header line.
pub fn parse_header(bytes: &[u8]) -> std::result::Result<Header, LineError> {
    // Invalid UTF-8 is replaced with U+FFFD, as in an event line (the reader warns).
    match utf8(bytes) {
        Some(text) => parse_header_str(text),
        None => parse_header_str(&String::from_utf8_lossy(bytes)),
    }
}

/// The position fields of an event line, decoded on their own.
#[derive(serde::Deserialize)]
struct Position {
    seq: u64,
    #[serde(default)]
    t_ms: u64,
}

/// Parses one event line (invalid UTF-8 replaced); an unknown `kind` becomes
/// [`EventBody::Unknown`].
pub fn parse_event(bytes: &[u8]) -> std::result::Result<Event, LineError> {
    match utf8(bytes) {
        Some(text) => parse_event_str(text),
        None => parse_event_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Parses one event line already checked as UTF-8 (so the JSON parser does not check its
/// strings again); an unknown `kind` becomes [`EventBody::Unknown`].
///
/// Our own writer's lines go in one pass (`envelope.rs`). Others are decoded as position and
/// body separately from the same text (decoding `Event` directly goes through
/// `#[serde(flatten)]` over an internally tagged enum, which buffers the line twice).
pub fn parse_event_str(text: &str) -> std::result::Result<Event, LineError> {
    match super::envelope::parse_envelope_first(text) {
        Some(event) => Ok(event),
        None => parse_event_general(text),
    }
}

/// The kinds [`parse_event_str`] decodes in one pass when the envelope comes first (the others
/// are buffered by `EventBody`'s internally tagged deserializer first).
pub use super::mirror::MIRRORED;

/// Any event line, in any key order: position and body decoded apart, and the precise
/// problem when the line is bad.
pub fn parse_event_general(text: &str) -> std::result::Result<Event, LineError> {
    let typed = serde_json::from_str::<Position>(text).and_then(|p| {
        serde_json::from_str::<EventBody>(text).map(|body| Event {
            seq: p.seq,
            t_ms: p.t_ms,
            body,
        })
    });
    match typed {
        Ok(event) => Ok(event),
        Err(typed_err) => {
            let value: Value = serde_json::from_str(text)
                .map_err(|e| LineError::NotJson(describe_json_error(&e)))?;
            let Some(obj) = value.as_object() else {
                return Err(LineError::NotObject);
            };
            let kind = obj
                .get("kind")
                .and_then(Value::as_str)
                .ok_or(LineError::NoKind)?;
            if KNOWN_KINDS.contains(&kind) {
                return Err(LineError::BadEvent {
                    kind: kind.to_string(),
                    why: typed_err.to_string(),
                });
            }
            let seq = obj
                .get("seq")
                .and_then(Value::as_u64)
                .ok_or(LineError::NoSeq)?;
            let t_ms = obj.get("t_ms").and_then(Value::as_u64).unwrap_or(0);
            Ok(Event {
                seq,
                t_ms,
                body: EventBody::Unknown {
                    kind: kind.to_string(),
                    raw: value,
                },
            })
        }
    }
}

fn describe_json_error(e: &serde_json::Error) -> String {
    if e.is_eof() {
        "line ends in the middle of a JSON value".to_string()
    } else {
        format!("not valid JSON: {e}")
    }
}

/// One line parsed, before the checks that need the lines before it.
#[allow(clippy::large_enum_variant)] // one per line in flight: boxing would allocate per line
pub enum ParsedLine {
    /// Only whitespace: no event, no problem.
    Blank,
    /// An event or why the line is bad.
    Line {
        /// The event or the reason.
        parsed: std::result::Result<Event, String>,
        /// Invalid UTF-8 was replaced.
        lossy: bool,
        /// Confidences outside [0, 1] read as none: how many, and the first.
        dropped_confidences: Option<(u32, f64)>,
    },
}

impl ParsedLine {
    /// Parses one line; depends on nothing else, so lines can be parsed on any thread.
    pub fn of(bytes: &[u8]) -> Self {
        // (A blank line is UTF-8: `of_text` tells it.)
        match utf8(bytes) {
            Some(text) => Self::of_text(text),
            None => {
                crate::event::take_dropped_confidences();
                ParsedLine::Line {
                    parsed: parse_event_str(&String::from_utf8_lossy(bytes))
                        .map_err(|e| e.to_string()),
                    lossy: true,
                    dropped_confidences: crate::event::take_dropped_confidences(),
                }
            }
        }
    }

    /// [`ParsedLine::of`] a line already known to be UTF-8.
    fn of_text(text: &str) -> Self {
        if text.bytes().all(|b| b.is_ascii_whitespace()) {
            return ParsedLine::Blank;
        }
        crate::event::take_dropped_confidences();
        ParsedLine::Line {
            parsed: parse_event_str(text).map_err(|e| e.to_string()),
            lossy: false,
            dropped_confidences: crate::event::take_dropped_confidences(),
        }
    }
}

/// One line decoded apart, lean when the lean decoder takes it (see [`super::lean`]).
pub enum LeanLine {
    /// Read lean.
    Lean(LeanEvent),
    /// Read in full, or why it is bad. Boxed: nearly every line of a big run is lean, and a
    /// batch of decoded lines in flight between threads is a vector of these.
    Other(Box<ParsedLine>),
}

impl LeanLine {
    /// Decodes one line; depends on nothing else, so lines can be decoded on any thread.
    pub fn of(bytes: &[u8]) -> Self {
        let Some(text) = utf8(bytes) else {
            return LeanLine::Other(Box::new(ParsedLine::of(bytes)));
        };
        match super::lean::parse(text) {
            Some(event) => LeanLine::Lean(event),
            None => LeanLine::Other(Box::new(ParsedLine::of_text(text))),
        }
    }
}

/// What every reader checks of an event line, and the problems it found: one set of rules
/// for a whole file ([`EventStream`]) and a growing one (`super::tail::Tail`).
#[derive(Debug, Default)]
pub struct LineChecks {
    path: PathBuf,
    problems: Vec<Problem>,
    /// The highest `seq` read so far.
    last_seq: Option<u64>,
    saw_finish: bool,
}

impl LineChecks {
    /// Checks for lines of `path`.
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            ..Self::default()
        }
    }

    /// True once a `run_finished` line was read.
    pub fn saw_finish(&self) -> bool {
        self.saw_finish
    }

    /// Takes the problems found so far.
    pub fn take_problems(&mut self) -> Vec<Problem> {
        std::mem::take(&mut self.problems)
    }

    /// The event on line `line_no`, or `None` (with a problem recorded) when it is bad.
    /// `terminated` is false for a last line without its newline.
    pub fn event(&mut self, line_no: u64, bytes: &[u8], terminated: bool) -> Option<Event> {
        self.check(line_no, ParsedLine::of(bytes), terminated)
    }

    /// The event of a line parsed apart (perhaps on another thread), with the checks that
    /// need the lines before it; lines must come in order.
    pub fn check(&mut self, line_no: u64, line: ParsedLine, terminated: bool) -> Option<Event> {
        let ParsedLine::Line {
            parsed,
            lossy,
            dropped_confidences,
        } = line
        else {
            return None;
        };
        match parsed {
            Ok(event) => {
                if let Some((n, first)) = dropped_confidences {
                    let more = if n > 1 {
                        format!(" (and {} more)", n - 1)
                    } else {
                        String::new()
                    };
                    // As JSON writes it (`1e308`, not 309 digits).
                    let first = serde_json::Number::from_f64(first)
                        .map_or_else(|| first.to_string(), |n| n.to_string());
                    self.problem(
                        line_no,
                        Severity::Warning,
                        format!("confidence {first} is not a number in [0, 1]{more}: read as none"),
                    );
                }
                if lossy {
                    self.problem(
                        line_no,
                        Severity::Warning,
                        "invalid UTF-8 replaced with U+FFFD".into(),
                    );
                }
                if let EventBody::Unknown { kind, .. } = &event.body {
                    let reason = format!(
                        "unknown event kind \"{kind}\" (from a newer mcp-cosmos?); kept as unknown"
                    );
                    self.problem(line_no, Severity::Warning, reason);
                }
                if !self.in_sequence(line_no, event.seq, is_judgement(&event.body)) {
                    return None;
                }
                self.saw_finish |= matches!(event.body, EventBody::RunFinished { .. });
                Some(event)
            }
            Err(reason) if !terminated => {
                let reason =
                    format!("torn last line (the run stopped while writing it): {reason}; skipped");
                self.skip(line_no, Severity::Warning, reason);
                None
            }
            Err(reason) => {
                self.skip(line_no, Severity::Error, format!("{reason}; skipped"));
                None
            }
        }
    }

    /// The lean event on line `line_no` (see [`super::lean`]), or `None` (with a problem
    /// recorded) when it is bad. A line the lean decoder is unsure of is read in full.
    pub fn lean(&mut self, line_no: u64, bytes: &[u8], terminated: bool) -> Option<LeanEvent> {
        self.check_lean(line_no, LeanLine::of(bytes), terminated)
    }

    /// The lean event of a line decoded apart (perhaps on another thread), with the checks
    /// that need the lines before it; lines must come in order.
    pub fn check_lean(
        &mut self,
        line_no: u64,
        line: LeanLine,
        terminated: bool,
    ) -> Option<LeanEvent> {
        match line {
            LeanLine::Lean(event) => {
                // The lean kinds are known and none is `run_finished`.
                self.in_sequence(line_no, event.seq, event.is_judgement())
                    .then_some(event)
            }
            LeanLine::Other(line) => self.check(line_no, *line, terminated).map(LeanEvent::of),
        }
    }

    /// The order rules: `seq` increases, and only judgement follows `run_finished`. False for
    /// an event whose `seq` does not increase: a line written twice (or spliced in) is skipped,
    /// so nothing is counted twice.
    fn in_sequence(&mut self, line_no: u64, seq: u64, judgement: bool) -> bool {
        if let Some(last) = self.last_seq.filter(|&last| seq <= last) {
            let reason = format!(
                "seq {seq} does not increase (previous {last}); skipped, so it is not counted twice"
            );
            self.skip(line_no, Severity::Warning, reason);
            return false;
        }
        if self.saw_finish && !judgement {
            self.problem(
                line_no,
                Severity::Warning,
                "event after run_finished".into(),
            );
        }
        self.last_seq = Some(self.last_seq.map_or(seq, |last| last.max(seq)));
        true
    }

    /// Records a line longer than [`MAX_LINE_BYTES`], skipped.
    pub fn too_long(&mut self, line_no: u64, bytes: u64) {
        let reason = format!(
            "line of {bytes} bytes is longer than the {MAX_LINE_BYTES}-byte limit; skipped"
        );
        self.skip(line_no, Severity::Error, reason);
    }

    /// Records a problem on line `line`.
    pub fn problem(&mut self, line: u64, severity: Severity, reason: String) {
        self.problems.push(Problem {
            path: self.path.clone(),
            line,
            severity,
            reason,
            skipped: false,
        });
    }

    /// Records that line `line` was skipped, and why.
    pub fn skip(&mut self, line: u64, severity: Severity, reason: String) {
        self.problem(line, severity, reason);
        if let Some(last) = self.problems.last_mut() {
            last.skipped = true;
        }
    }
}

/// A streaming pass over one trajectory file: the header, then events one at a time.
/// Problems are collected as it goes; bad lines are skipped. The header is read as `H`: whole,
/// or only what a totals pass keeps of it (`ReportHeader`).
pub struct EventStream<H = Header> {
    path: PathBuf,
    lines: LineReader<Box<dyn Read + Send>>,
    header: Option<H>,
    checks: LineChecks,
    done: bool,
}

/// Opens a run file for reading, refusing anything but a regular file: a FIFO named
/// `x.jsonl` would block until a writer came, a device would never end.
pub fn open_regular(path: &Path) -> Result<File> {
    open_regular_sized(path).map(|(file, _)| file)
}

/// [`open_regular`], with the file's length. One `fstat` of the open file both refuses what is
/// not a regular file and sizes it (a folder of thousands of small runs pays for every call).
pub fn open_regular_sized(path: &Path) -> Result<(File, u64)> {
    let opening = || format!("opening {}", path.display());
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Non-blocking, so that opening a FIFO returns at once (to be refused below); a regular
    // file reads the same either way.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).with_context(opening)?;
    let meta = file.metadata().with_context(opening)?;
    if !meta.is_file() {
        anyhow::bail!(
            "{} is not a regular file (a pipe, a device or a folder): not read",
            path.display()
        );
    }
    Ok((file, meta.len()))
}

/// The read buffer of a stream (it grows for a longer line).
const READ_BUFFER: usize = 1 << 18;

impl EventStream {
    /// Opens `path` and reads its header. A file without a valid header is an error.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_as(path)
    }

    /// Reads a trajectory from any byte source; `path` is used in problem reports.
    pub fn from_reader(path: &Path, reader: Box<dyn Read + Send>) -> Result<Self> {
        Self::with_lines(path, LineReader::with_capacity(READ_BUFFER, reader))
    }

    /// Reads the trajectory in `file` from its start, looking ahead on long lines
    /// ([`LineReader::looking_ahead`]); `path` is used in problem reports.
    pub fn from_file(path: &Path, file: std::fs::File) -> Result<Self> {
        let mut lines = LineReader::with_capacity(
            READ_BUFFER,
            Box::new(
                file.try_clone()
                    .with_context(|| format!("opening {}", path.display()))?,
            ) as Box<dyn Read + Send>,
        );
        lines = lines.looking_ahead(file);
        Self::with_lines(path, lines)
    }
}

impl<H: ReadHeader> EventStream<H> {
    /// Opens `path` and reads its header as `H`. A file without a valid header is an error.
    pub fn open_as(path: &Path) -> Result<Self> {
        let (file, size) = open_regular_sized(path)?;
        // A small file gets a buffer its size: a folder of thousands of small runs would
        // otherwise zero a quarter-megabyte buffer for each.
        let capacity =
            usize::try_from(size + 1).map_or(READ_BUFFER, |s| s.clamp(4096, READ_BUFFER));
        // The first buffer is read by `read_to_end`, which fills spare capacity without zeroing
        // it first and stops at the end of a small file with the read that finds it.
        let mut first = Vec::with_capacity(capacity);
        let read = (&file)
            .take(capacity as u64)
            .read_to_end(&mut first)
            .with_context(|| format!("reading {}", path.display()))?;
        let at_end = read < capacity;
        let look_ahead = file.try_clone().ok();
        let mut lines = LineReader::starting_with(first, at_end, capacity, Box::new(file) as _);
        if let Some(handle) = look_ahead {
            lines = lines.looking_ahead(handle);
        }
        Self::with_lines(path, lines)
    }

    fn with_lines(path: &Path, lines: LineReader<Box<dyn Read + Send>>) -> Result<Self> {
        let mut stream = Self {
            path: path.to_path_buf(),
            lines,
            header: None,
            checks: LineChecks::new(path),
            done: false,
        };
        let first = stream
            .lines
            .next_line()
            .with_context(|| format!("reading {}", path.display()))?;
        let header = match first {
            None => Err("empty file: no header line".to_string()),
            Some(RawLine::TooLong(n)) => Err(format!(
                "header line is {n} bytes, longer than the {MAX_LINE_BYTES}-byte limit"
            )),
            Some(RawLine::Line { bytes, .. }) => match utf8(bytes) {
                Some(text) => H::read(text).map_err(|e| e.to_string()),
                None => {
                    stream.checks.problem(
                        1,
                        Severity::Warning,
                        "invalid UTF-8 in the header replaced with U+FFFD".into(),
                    );
                    H::read(&String::from_utf8_lossy(bytes)).map_err(|e| e.to_string())
                }
            },
        };
        match header {
            Ok(h) => stream.header = Some(h),
            Err(reason) => anyhow::bail!("{}:1: {reason}", path.display()),
        }
        Ok(stream)
    }

    /// The header.
    pub fn header(&self) -> &H {
        self.header.as_ref().expect("open() guarantees a header")
    }

    /// The line number of the event last returned.
    pub fn line_no(&self) -> u64 {
        self.lines.line_no()
    }

    /// Problems found so far.
    pub fn problems(&self) -> &[Problem] {
        &self.checks.problems
    }

    /// Takes the problems found so far.
    pub fn take_problems(&mut self) -> Vec<Problem> {
        self.checks.take_problems()
    }

    /// The next good event, skipping and reporting bad lines. At the end, reports a run
    /// that never finished.
    pub fn next_event(&mut self) -> Result<Option<Event>> {
        Ok(self.next_with(LineChecks::event)?.map(|(event, _)| event))
    }

    /// The next good event as a totals pass or an opened run needs it (see
    /// [`super::lean`]; a kind not read lean is whole, as [`Self::next_event`] reads it),
    /// with where its line lies in the file, to read it back from.
    pub fn next_brief(&mut self) -> Result<Option<(Brief, LineSpan)>> {
        self.next_with(LineChecks::lean)
    }

    fn next_with<T>(
        &mut self,
        decode: impl Fn(&mut LineChecks, u64, &[u8], bool) -> Option<T>,
    ) -> Result<Option<(T, LineSpan)>> {
        if self.done {
            return Ok(None);
        }
        loop {
            let last_line = self.lines.line_no();
            let raw = self
                .lines
                .next_line()
                .with_context(|| format!("reading {}", self.path.display()))?;
            let line_no = last_line + u64::from(raw.is_some());
            let (bytes, terminated) = match raw {
                None => {
                    self.ended(line_no);
                    return Ok(None);
                }
                Some(RawLine::TooLong(n)) => {
                    self.checks.too_long(line_no, n);
                    continue;
                }
                Some(RawLine::Line { bytes, terminated }) => (bytes, terminated),
            };
            let len = bytes.len() as u32;
            if let Some(event) = decode(&mut self.checks, line_no, bytes, terminated) {
                let start = self.lines.line_start();
                return Ok(Some((event, LineSpan { start, len })));
            }
        }
    }

    /// The end of the file after line `line_no`: a run without `run_finished` is reported.
    fn ended(&mut self, line_no: u64) {
        self.done = true;
        if !self.checks.saw_finish {
            self.checks.problem(
                line_no,
                Severity::Warning,
                "run did not finish: no run_finished line (still running, or crashed)".into(),
            );
        }
    }

    /// Every remaining event, lean, in order, handed to `take` with where its line lies in
    /// the file: the same events and problems as [`Self::next_brief`] until the end, but lines
    /// are decoded in batches by up to four threads (`crate::parallel::stream`) while the next
    /// batches are read, and checked in order on this thread (for opening a whole big file).
    /// Memory in flight is a few batches. With one core (the pool has one worker, as under
    /// `taskset -c 0` or in a one-CPU container) each line is decoded here, as it is read.
    pub fn read_all(&mut self, mut take: impl FnMut(Brief, LineSpan)) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let workers = crate::parallel::workers();
        if workers == 1 {
            // One core: threads would only take turns, and each line would be copied once
            // more into a batch. Read, decode and check it here instead.
            while let Some((event, span)) = self.next_with(LineChecks::lean)? {
                take(event, span);
            }
            return Ok(());
        }
        let (lines, checks) = (&mut self.lines, &mut self.checks);
        // Beyond four decoders the in-order check on this thread is the bottleneck.
        let last_line = crate::parallel::stream(
            workers.min(4),
            |emit| Batch::read_all(lines, emit),
            Batch::parse,
            |parsed| {
                for line in parsed {
                    match line {
                        Parsed::Line(line_no, span, line, terminated) => {
                            if let Some(event) = checks.check_lean(line_no, line, terminated) {
                                take(event, span);
                            }
                        }
                        Parsed::TooLong(line_no, n) => checks.too_long(line_no, n),
                    }
                }
            },
        )
        .with_context(|| format!("reading {}", self.path.display()))?;
        self.ended(last_line);
        Ok(())
    }
}

/// Where a line lies in its file: its first byte and its length without the line end (a
/// line is shorter than [`MAX_LINE_BYTES`], so its length fits in 32 bits). Packed to 12
/// bytes, not 16: an opened run keeps one per event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct LineSpan {
    /// Byte offset of the line's first byte.
    pub start: u64,
    /// Its length in bytes, without `\n` or `\r\n`.
    pub len: u32,
}

impl LineSpan {
    /// The line's bytes, read again from `file`.
    pub fn read_from(self, file: &File) -> std::io::Result<Vec<u8>> {
        let mut bytes = vec![0; self.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, self.start)?;
        Ok(bytes)
    }
}

/// Lines read for a parsing thread: their bytes end to end, and where each one is.
struct Batch {
    text: Vec<u8>,
    lines: Vec<BatchLine>,
}

enum BatchLine {
    Line(u64, LineSpan, std::ops::Range<usize>, bool),
    TooLong(u64, u64),
}

/// A batch's lines decoded, in order.
enum Parsed {
    Line(u64, LineSpan, LeanLine, bool),
    TooLong(u64, u64),
}

/// Bytes of lines per batch.
const BATCH_BYTES: usize = 1 << 20;

impl Batch {
    /// Reads every remaining line into batches handed to `emit` (until it says no one
    /// listens); the number of the last line.
    fn read_all<R: Read>(
        lines: &mut LineReader<R>,
        emit: &mut dyn FnMut(Batch) -> bool,
    ) -> std::io::Result<u64> {
        // Each batch is given its room at once: grown by doubling, a megabyte leaves its
        // smaller copies for the allocator to give back later, over and over in a big file.
        let fresh = || Batch {
            text: Vec::with_capacity(BATCH_BYTES + BATCH_BYTES / 4),
            lines: Vec::with_capacity(BATCH_BYTES / 128),
        };
        let mut batch = fresh();
        loop {
            let line_no = lines.line_no() + 1;
            match lines.next_line()? {
                None => break,
                Some(RawLine::TooLong(n)) => batch.lines.push(BatchLine::TooLong(line_no, n)),
                Some(RawLine::Line { bytes, terminated }) => {
                    let start = batch.text.len();
                    batch.text.extend_from_slice(bytes);
                    let range = start..batch.text.len();
                    let span = LineSpan {
                        start: lines.line_start(),
                        len: range.len() as u32,
                    };
                    batch
                        .lines
                        .push(BatchLine::Line(line_no, span, range, terminated));
                }
            }
            if batch.text.len() >= BATCH_BYTES && !emit(std::mem::replace(&mut batch, fresh())) {
                break;
            }
        }
        if !batch.lines.is_empty() {
            emit(batch);
        }
        Ok(lines.line_no())
    }

    fn parse(self) -> Vec<Parsed> {
        self.lines
            .into_iter()
            .map(|line| match line {
                BatchLine::Line(no, span, range, terminated) => {
                    Parsed::Line(no, span, LeanLine::of(&self.text[range]), terminated)
                }
                BatchLine::TooLong(no, n) => Parsed::TooLong(no, n),
            })
            .collect()
    }
}

/// The runs found under some paths, and what was passed over on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    /// Every regular `*.jsonl` file, sorted.
    pub files: Vec<PathBuf>,
    /// `PATH: why` for each folder that could not be read and each `*.jsonl` that is not a
    /// regular file (a FIFO or a link to a device would block a reader forever).
    pub skipped: Vec<String>,
    /// Regular `*.json` and `*.eval` files in the folders walked: other programs' trajectories,
    /// perhaps, for the engine's importer to look into (sorted).
    pub foreign: Vec<PathBuf>,
}

/// Paths as a message lists them: `a, b`.
pub fn path_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every `*.jsonl` file under `paths` (files as given, folders recursively), sorted. Only a
/// path that does not exist is an error; an unreadable folder or a file that is not a regular
/// file is passed over and named in [`Found::skipped`].
pub fn collect_files(paths: &[PathBuf]) -> Result<Found> {
    let mut found = Found::default();
    // A file can be reached twice only through a link or through overlapping paths given.
    let mut followed_links = paths.len() > 1;
    for path in paths {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("no such file or folder: {}", path.display()))?;
        if meta.is_dir() {
            followed_links |= walk(path, &mut found);
        } else if meta.is_file() {
            found.files.push(path.clone());
        } else {
            found
                .skipped
                .push(format!("{}: not a regular file", path.display()));
        }
    }
    found.files.sort();
    found.files.dedup();
    found.foreign.sort();
    found.foreign.dedup();
    if followed_links {
        once_each(&mut found);
    }
    Ok(found)
}

/// Keeps each file once, however many paths reach it (a link beside the run it names, a folder
/// given with a file in it): a run counted twice would weigh twice in every table, and be
/// rechecked or appended to twice. The first path in order stays; the others are said.
fn once_each(found: &mut Found) {
    use std::os::unix::fs::MetadataExt;
    let mut seen: std::collections::HashMap<(u64, u64), PathBuf> = Default::default();
    let mut skipped = Vec::new();
    found.files.retain(|path| {
        let Ok(meta) = std::fs::metadata(path) else {
            return true;
        };
        match seen.entry((meta.dev(), meta.ino())) {
            std::collections::hash_map::Entry::Occupied(first) => {
                skipped.push(format!(
                    "{}: the same file as {}, counted once",
                    path.display(),
                    first.get().display()
                ));
                false
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(path.clone());
                true
            }
        }
    });
    found.skipped.extend(skipped);
}

/// The `*.jsonl` files under `dir`, in path order. Each folder's entries are sorted by name
/// before they are visited, so the files come out sorted and `collect_files`'s sort only checks
/// them: sorting thousands of whole paths (component by component) cost more than reading a
/// folder.
/// True when a link to a file was followed (the same file may then be listed twice).
fn walk(dir: &Path, found: &mut Found) -> bool {
    let mut followed = false;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            found.skipped.push(format!("{}: {e}", dir.display()));
            return false;
        }
    };
    let mut named = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else {
            found
                .skipped
                .push(format!("{}: unreadable entry", dir.display()));
            continue;
        };
        named.push((entry.file_name(), entry));
    }
    // One component's order is its name's bytes, as in `Path`'s own order.
    named.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (_, entry) in named {
        let path = entry.path();
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            // A run's kept end state (`STEM.state`, `mcp::sandbox`) holds the server's files,
            // which may well be `*.jsonl` of another kind.
            if path.extension().is_none_or(|e| e != "state") {
                followed |= walk(&path, found);
            }
        } else if file_type.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
            // The entry's own type (no `stat`): thousands of runs are listed at the cost of
            // reading the folder.
            found.files.push(path);
        } else if file_type.is_file()
            && path.extension().is_some_and(|e| e == "json" || e == "eval")
        {
            found.foreign.push(path);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            // Follow links: what matters is what a reader would open.
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => {
                    followed = true;
                    found.files.push(path)
                }
                Ok(_) => found
                    .skipped
                    .push(format!("{}: not a regular file", path.display())),
                Err(e) => found.skipped.push(format!("{}: {e}", path.display())),
            }
        }
    }
    followed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_line_says_what_kind_of_bad_as_a_value() {
        assert_eq!(
            parse_event(br#"{"seq":1,"t_ms":0,"kind":"answer"}"#).unwrap_err(),
            LineError::BadEvent {
                kind: "answer".into(),
                why: "missing field `text`".into()
            }
        );
        assert_eq!(parse_event(b"[1]").unwrap_err(), LineError::NotObject);
        assert_eq!(parse_event(br#"{"seq":1}"#).unwrap_err(), LineError::NoKind);
        assert!(matches!(
            parse_event(b"{\"seq\":").unwrap_err(),
            LineError::NotJson(why) if why.contains("middle of a JSON value")
        ));
        let newer =
            parse_header(br#"{"format":"mcp-cosmos-trajectory","version":99}"#).unwrap_err();
        assert!(
            matches!(newer, LineError::NewerVersion { version: 99, .. }),
            "{newer}"
        );
        assert!(newer.to_string().contains("upgrade mcp-cosmos"));
    }

    /// A line over the cap in a file is read past in a buffer of a few megabytes (looked ahead
    /// on), where it took a buffer of the cap's size, and the lines around it still read.
    #[test]
    fn a_line_over_the_cap_in_a_file_is_read_past_in_a_few_megabytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.jsonl");
        let max_line = 48 << 20;
        let mut text = b"first\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', max_line + (8 << 20)));
        text.extend(b"\nlast\n");
        std::fs::write(&path, &text).unwrap();
        let read = |look: bool| {
            let file = std::fs::File::open(&path).unwrap();
            let mut reader = LineReader::with_capacity(1 << 18, file.try_clone().unwrap());
            reader.max_line = max_line;
            if look {
                reader = reader.looking_ahead(file);
            }
            let mut seen = Vec::new();
            while let Some(line) = reader.next_line().unwrap() {
                seen.push(match line {
                    RawLine::Line { bytes, .. } => String::from_utf8_lossy(bytes).into_owned(),
                    RawLine::TooLong(n) => format!("too long: {n}"),
                });
            }
            (seen, reader.buffer_bytes())
        };
        let (seen, looked) = read(true);
        let too_long = format!("too long: {}", max_line + (8 << 20));
        assert_eq!(seen, ["first", too_long.as_str(), "last"]);
        assert!(looked <= 2 * LOOK_AHEAD_AFTER + (1 << 18), "{looked} bytes");
        let (seen, unlooked) = read(false);
        assert_eq!(seen, ["first", too_long.as_str(), "last"]);
        assert!(
            unlooked > max_line,
            "{unlooked} bytes without looking ahead"
        );
    }

    /// Every line of `input` as the reader gives it, with a buffer of `capacity` bytes, lines
    /// longer than `max_line` skipped, and reads of at most 3 bytes (so lines straddle reads).
    fn lines(input: &[u8], capacity: usize, max_line: usize) -> Vec<String> {
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let n = out.len().min(3).min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut reader = LineReader::with_capacity(capacity, Trickle(input));
        reader.max_line = max_line;
        let mut out = Vec::new();
        loop {
            let no = reader.line_no() + 1;
            let Some(line) = reader.next_line().unwrap() else {
                break;
            };
            let line = match line {
                RawLine::Line { bytes, terminated } => format!(
                    "{no}:{}{}",
                    String::from_utf8_lossy(bytes),
                    if terminated { "" } else { " (torn)" }
                ),
                RawLine::TooLong(n) => format!("{no}:too long {n}"),
            };
            // Where the reader says a line starts must be where it starts in the input.
            let start = reader.line_start() as usize;
            assert!(
                start == 0 || input[start - 1] == b'\n',
                "line {no} starts at {start}, not after a newline"
            );
            assert_eq!(
                input[..start].iter().filter(|&&b| b == b'\n').count() as u64,
                no - 1,
                "line {no} starts at {start}"
            );
            out.push(line);
        }
        out
    }

    #[test]
    fn lines_come_whole_across_reads_and_buffer_sizes() {
        let input = b"first\r\n\nsecond line, longer than the buffer\nthird";
        let want = [
            "1:first",
            "2:",
            "3:second line, longer than the buffer",
            "4:third (torn)",
        ];
        for capacity in [1, 2, 4, 7, 64, 1 << 16] {
            assert_eq!(lines(input, capacity, 1000), want, "capacity {capacity}");
        }
        assert!(lines(b"", 4, 1000).is_empty());
        assert_eq!(lines(b"a\n", 4, 1000), ["1:a"]);
    }

    #[test]
    fn a_line_over_the_cap_is_counted_and_skipped_and_the_next_is_read() {
        let input = b"ok\n0123456789abcdef\nnext\n0123456789";
        for capacity in [1, 4, 64] {
            assert_eq!(
                lines(input, capacity, 8),
                ["1:ok", "2:too long 16", "3:next", "4:too long 10"],
                "capacity {capacity}"
            );
        }
    }

    #[test]
    fn files_under_a_folder_come_in_path_order() {
        let root = tempfile::tempdir().unwrap();
        // Names whose byte order and whose path order differ ('-' and '.' sort before '/').
        for name in [
            "b.jsonl",
            "a-b/z.jsonl",
            "a/y.jsonl",
            "a/x/w.jsonl",
            "a.b/v.jsonl",
            "A.jsonl",
            "a/notes.txt",
        ] {
            let path = root.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
        }
        // The walk alone: `collect_files`'s sort must find nothing to do.
        let mut found = Found::default();
        walk(root.path(), &mut found);
        let mut want = found.files.clone();
        want.sort_by(|a, b| a.components().cmp(b.components()));
        assert_eq!(found.files, want);
        let names: Vec<_> = found
            .files
            .iter()
            .map(|p| p.strip_prefix(root.path()).unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "A.jsonl",
                "a/x/w.jsonl",
                "a/y.jsonl",
                "a-b/z.jsonl",
                "a.b/v.jsonl",
                "b.jsonl"
            ]
        );
    }
}
