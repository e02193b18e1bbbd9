//! Why a line of a trajectory is no event or no header: the trajectory crate's typed error at
//! its boundary (`reader::parse_*`, `ReportHeader::read`), shown in one line as the reader's
//! problems show it.

/// Why a line is no event, or no header: the trajectory crate's error at its boundary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not JSON, or cut off in the middle of a value (said how).
    #[error("{0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("line is JSON but not an object")]
    NotObject,
    /// An event without a `kind`.
    #[error("event has no \"kind\"")]
    NoKind,
    /// An event of an unknown kind without a numeric `seq`.
    #[error("event has no numeric \"seq\"")]
    NoSeq,
    /// An event of a known kind whose fields are not what the kind takes.
    #[error("bad {kind} event: {why}")]
    BadEvent {
        /// Its kind.
        kind: String,
        /// What is wrong, as the decoder said.
        why: String,
    },
    /// A header written by a newer mcp-cosmos, whose fields may mean other things.
    #[error(
        "written by a newer mcp-cosmos (format version {version}); this build reads versions up to {reads}: upgrade mcp-cosmos to open it"
    )]
    NewerVersion {
        /// The file's format version.
        version: u64,
        /// The newest this build reads.
        reads: u32,
    },
    /// A first line that is no header of ours (said why).
    #[error("{0}")]
    BadHeader(String),
}
