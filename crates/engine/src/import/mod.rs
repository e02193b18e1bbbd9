//! Other programs' trajectories read as cosmos runs (`cosmos import`, and every command that
//! opens runs, through [`open`]): ATIF (`atif.rs`), Inspect AI logs (`inspect.rs`) and
//! OpenTelemetry traces in OTLP JSON (`otlp.rs`). Each
//! session or sample becomes one run, built by [`Draft`] and written by the one trajectory
//! writer, so an imported run is redacted, bounded and totalled as any other.
//!
//! Nothing is invented: what the source does not have stays absent, and the header's
//! [`Source`] lists what the run's values mean nothing for (`unrecorded`) and what was read but
//! has no place here (`skipped`). docs/import.md says what maps to what.
//!
//! Measured (`cargo bench --bench import`, synthetic, 2 cores): an Inspect `.json` of 1 GB at
//! 95 MB/s in 22 MB; its `.eval` at 89 MB/s in 23 MB; an ATIF file of 500 MB at ~60 MB/s in
//! ~690 MB. Python's `json.load` only parses them: 240 MB/s in 2150 MB, 297 MB/s in 1043 MB.

pub mod atif;
mod convert;
mod draft;
mod format;
pub mod inspect;
mod open;
pub mod otlp;

pub use convert::{Written, read, write};
pub use draft::{Call, Draft, Ended, Imported, Turn, content_text, mcp_tool_name, timestamp};
pub use format::{Detected, Format, KNOWN, Said, detect, detect_bytes};
pub use open::{Opened, open};
