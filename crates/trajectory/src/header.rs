//! A trajectory's first line read as its header: checked for the format and version, upgraded
//! from older versions, and decoded whole or (through [`ReadHeader`]) as any view of it.

use super::line_error::LineError;
use serde_json::Value;

use super::event::{FORMAT_NAME, FORMAT_VERSION, Header};

/// The header of a line already known to be UTF-8 (`reader::parse_header` takes bytes).
pub(crate) fn parse_header_str(text: &str) -> std::result::Result<Header, LineError> {
    parse_header_text(text).map_err(|e| match e {
        Refused::Newer(version) => LineError::NewerVersion {
            version,
            reads: FORMAT_VERSION,
        },
        Refused::Said(why) => LineError::BadHeader(why),
    })
}

/// Why a header line was refused, before it is a [`LineError`].
enum Refused {
    Newer(u64),
    Said(String),
}

impl From<String> for Refused {
    fn from(why: String) -> Self {
        Refused::Said(why)
    }
}

impl From<&str> for Refused {
    fn from(why: &str) -> Self {
        Refused::Said(why.to_string())
    }
}

fn parse_header_text(text: &str) -> std::result::Result<Header, Refused> {
    // Some editors save a UTF-8 byte-order mark first: it is not part of the JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bytes = text.as_bytes();
    // A current header is decoded straight into `Header` (the tool schemas make headers big,
    // and a folder of small runs is mostly headers); anything else goes through a `Value` for
    // the precise refusal or the upgrade.
    // Version 2 only made fields optional: a version 1 header is read as it is.
    if let Ok(header) = serde_json::from_str::<Header>(text)
        && header.format == FORMAT_NAME
        && (1..=FORMAT_VERSION).contains(&header.version)
    {
        return Ok(header);
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("header is not JSON: {e}"))?;
    let format = value.get("format").and_then(Value::as_str);
    if format != Some(FORMAT_NAME) {
        return Err(Refused::Said(format!(
            "not an mcp-cosmos trajectory: the first line has format {} (expected \"{FORMAT_NAME}\")",
            format.map_or("missing".to_string(), |f| format!("\"{f}\""))
        )));
    }
    let version = value
        .get("version")
        .and_then(Value::as_u64)
        .ok_or("header has no numeric version")?;
    if version > u64::from(FORMAT_VERSION) {
        return Err(Refused::Newer(version));
    }
    serde_json::from_value(upgrade_header(value, version))
        .map_err(|e| Refused::Said(format!("bad header: {e}")))
}

/// Brings an older header up to the current version. Version 2 only made fields optional,
/// so a version 1 header needs nothing; a later version that renames a field maps it here.
fn upgrade_header(value: Value, _version: u64) -> Value {
    value
}

/// How a stream reads its header line.
pub trait ReadHeader: Sized {
    /// The header of a line already known to be UTF-8, or why it is not one.
    fn read(text: &str) -> std::result::Result<Self, LineError>;
}

impl ReadHeader for Header {
    fn read(text: &str) -> std::result::Result<Self, LineError> {
        parse_header_str(text)
    }
}
