//! The formats cosmos reads besides its own, told apart by content.
//!
//! Tells a file by its first 64 KiB, never its name: each format's mark (the cosmos
//! header's format name, `"ATIF-v`, Inspect's `"eval"` with `"samples"`/`"status"`,
//! `"resourceSpans"`), the one met first winning, because an ATIF export of a cosmos run quotes a
//! cosmos header and a cosmos run may quote anything in a tool result.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use cosmos_trajectory::event::FORMAT_NAME;

/// The formats cosmos reads besides its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Harbor's Agent Trajectory Interchange Format (JSON), v1.0–v1.8.
    Atif,
    /// An Inspect AI log: `.eval` (a zip of samples) or `.json`.
    Inspect,
    /// OpenTelemetry traces as OTLP JSON (GenAI conventions or OpenInference).
    Otlp,
}

impl Format {
    /// Its name in a header's `source.format` and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Atif => "atif",
            Format::Inspect => "inspect",
            Format::Otlp => "otlp",
        }
    }
}

/// What a file is, by its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    /// A cosmos trajectory: read as it is.
    Cosmos,
    /// A file to convert.
    Foreign(Format),
}

/// The formats named when a file is none of them.
pub const KNOWN: &str = "a cosmos run (.jsonl), an ATIF trajectory (.json), an Inspect AI log (.eval or .json), OpenTelemetry traces as OTLP JSON (.json)";

/// How much of a file's start detection looks at.
const SNIFF: usize = 64 << 10;

/// Tells what `path` holds from its first bytes (never from its name).
pub fn detect(path: &Path) -> Result<Detected> {
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .with_context(|| format!("opening {}", path.display()))?
        .take(SNIFF as u64)
        .read_to_end(&mut head)
        .with_context(|| format!("reading {}", path.display()))?;
    detect_bytes(&head).with_context(|| format!("{}", path.display()))
}

/// [`detect`] on a file's first bytes.
pub fn detect_bytes(head: &[u8]) -> Result<Detected> {
    if head.starts_with(b"PK\x03\x04") {
        return Ok(Detected::Foreign(Format::Inspect));
    }
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    if !text.starts_with('{') {
        bail!("not a format cosmos reads; it reads {KNOWN}");
    }
    // Each format's mark, and where it first stands: one format's file may quote another's
    // (an ATIF export of a cosmos run holds a cosmos header), and the mark met first is the
    // document's own, its writer putting it near the top.
    let at = |mark: &str| text.find(mark);
    let inspect = at("\"eval\"").filter(|_| at("\"samples\"").or(at("\"status\"")).is_some());
    let marks = [
        (at(&format!("\"{FORMAT_NAME}\"")), Detected::Cosmos),
        (at("\"ATIF-v"), Detected::Foreign(Format::Atif)),
        (inspect, Detected::Foreign(Format::Inspect)),
        (at("\"resourceSpans\""), Detected::Foreign(Format::Otlp)),
    ];
    if let Some((_, detected)) = marks
        .iter()
        .filter_map(|(at, d)| Some((at.as_ref()?, d)))
        .min_by_key(|(at, _)| **at)
    {
        return Ok(*detected);
    }
    bail!("not a format cosmos reads; it reads {KNOWN}")
}

/// What an import said beside the runs it made: a line per sample or session skipped, or a
/// tear that ended the reading early.
#[derive(Debug, Default)]
pub struct Said {
    /// One line each, made inert by whoever prints it.
    pub lines: Vec<String>,
}
