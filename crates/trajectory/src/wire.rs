//! A proxy session's protocol log: each JSON-RPC message between the client and `cosmos proxy`,
//! in order, with its direction, size and (for a reply) latency, kept beside the session's run
//! as `STEM.wire` (JSON lines; not `.jsonl`, so that run listings pass it by). The run holds
//! what happened; this file holds how it was said, for the explorer's protocol view (`W`).
//!
//! Messages are written as rmcp decoded them (encoded again: key order and spacing may differ
//! from the bytes on the wire), redacted as a run is, each cut to [`MESSAGE_CAP`] bytes.
//!
//! A proxy session's protocol log beside its run (`STEM.wire`, not `.jsonl`, so
//! listings pass it by): `WireMessage`, `wire_path`, and `read`, bounded (20,000 messages, 64 KiB
//! a line; a torn or foreign line is a problem noted).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::reader::{LineReader, RawLine, open_regular};

/// Most bytes of one message kept in the file (`bytes` gives its whole size; `cut` says so).
pub const MESSAGE_CAP: usize = 4 << 10;

/// Most messages the explorer reads from one log (the rest are counted, not kept).
pub const READ_AT_MOST: usize = 20_000;

/// Longest line the reader takes: a line longer than any a writer writes is not one of ours.
const LINE_CAP: usize = 64 << 10;

/// Which way a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the client to the proxy.
    In,
    /// From the proxy to the client.
    Out,
}

/// One JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireMessage {
    /// When, in ms since the client connected.
    pub t_ms: u64,
    /// Which way.
    pub dir: Direction,
    /// The request's id (a request and its reply share it; a request the proxy sends is
    /// numbered by rmcp and shown without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The method (a reply names its request's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The message's whole size, encoded.
    pub bytes: u64,
    /// For a reply: how long after its request it went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// The message, redacted.
    pub message: Value,
    /// True when the message was cut to [`MESSAGE_CAP`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// Where the protocol log of the run at `run` is kept.
pub fn wire_path(run: &Path) -> PathBuf {
    run.with_extension("wire")
}

/// A protocol log as the explorer reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireLog {
    /// The messages read, in order (at most [`READ_AT_MOST`]).
    pub messages: Vec<WireMessage>,
    /// Messages past [`READ_AT_MOST`], counted, not kept.
    pub more: u64,
    /// Lines that were not messages (torn, too long, or not ours), as `line N: why`.
    pub problems: Vec<String>,
}

/// Reads the protocol log at `path` (see [`wire_path`]), within [`READ_AT_MOST`] messages and
/// `LINE_CAP` bytes a line: a torn or foreign line is a problem noted, not an error.
pub fn read(path: &Path) -> Result<WireLog> {
    let file = open_regular(path).with_context(|| {
        format!(
            "no protocol log beside this run ({}): only `cosmos proxy` sessions keep one",
            path.display()
        )
    })?;
    read_from(Box::new(file))
}

fn read_from(input: Box<dyn Read + Send>) -> Result<WireLog> {
    let mut lines = LineReader::with_capacity(64 << 10, input).with_max_line(LINE_CAP);
    let mut log = WireLog::default();
    let mut line_no = 0;
    while let Some(line) = lines.next_line().context("reading the protocol log")? {
        line_no += 1;
        match line {
            RawLine::TooLong(n) => log.problems.push(format!(
                "line {line_no}: {n} bytes, longer than any message"
            )),
            RawLine::Line { bytes: [], .. } => {}
            // The line reader may hand back a line a little past its cap, from its buffer.
            RawLine::Line { bytes, .. } if bytes.len() > LINE_CAP => log.problems.push(format!(
                "line {line_no}: {} bytes, longer than any message",
                bytes.len()
            )),
            RawLine::Line { bytes, terminated } => {
                match serde_json::from_slice::<WireMessage>(bytes) {
                    Ok(_) if log.messages.len() >= READ_AT_MOST => log.more += 1,
                    Ok(message) => log.messages.push(message),
                    Err(_) if !terminated => {
                        log.problems.push(format!("line {line_no}: torn (cut off)"))
                    }
                    Err(e) => log.problems.push(format!("line {line_no}: {e}")),
                }
            }
        }
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_and_foreign_lines_are_problems_and_the_rest_is_read() {
        let good = serde_json::to_string(&WireMessage {
            t_ms: 3,
            dir: Direction::In,
            id: Some(Value::from(1)),
            method: Some("tools/list".into()),
            bytes: 40,
            latency_ms: None,
            message: serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            cut: false,
        })
        .unwrap();
        let text = format!(
            "{good}\nnot json\n{}\n{good}\n{}",
            "x".repeat(LINE_CAP + 10),
            &good[..20]
        );
        let log = read_from(Box::new(std::io::Cursor::new(text.into_bytes()))).unwrap();
        assert_eq!(log.messages.len(), 2);
        assert_eq!(log.messages[0].method.as_deref(), Some("tools/list"));
        assert_eq!(log.problems.len(), 3, "{:?}", log.problems);
        assert!(log.problems[0].starts_with("line 2:"), "{:?}", log.problems);
        assert!(log.problems[1].contains("longer than any message"));
        assert!(log.problems[2].contains("torn"));
    }

    #[test]
    fn a_log_beyond_the_limit_is_counted_not_kept() {
        let one = r#"{"t_ms":0,"dir":"out","bytes":2,"message":{}}"#;
        let text = format!("{one}\n").repeat(READ_AT_MOST + 5);
        let log = read_from(Box::new(std::io::Cursor::new(text.into_bytes()))).unwrap();
        assert_eq!((log.messages.len(), log.more), (READ_AT_MOST, 5));
    }

    #[test]
    fn the_log_sits_beside_its_run_and_is_no_run() {
        let path = wire_path(Path::new("runs/20261204T0101_c_external_none.jsonl"));
        assert_eq!(path, Path::new("runs/20261204T0101_c_external_none.wire"));
        assert_ne!(path.extension().unwrap(), "jsonl");
    }
}
