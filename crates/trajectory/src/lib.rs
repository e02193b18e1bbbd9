//! The trajectory: an append-only event log (docs/design.md, "One idea carries it").
//!
//! [`event`] is the schema, [`writer`] appends it, [`reader`] streams it back tolerantly,
//! [`listing`] summarises files from their first and last lines, [`run`] holds an opened
//! run with its indices, [`fold`] computes the state at any cursor, and [`tail`] follows a
//! file another process is still writing.

pub mod canonical;
pub mod catalog;
mod checked;
pub mod describe;
mod envelope;
pub mod event;
pub mod fnv;
pub mod fold;
mod header;
pub mod lean;
pub mod line_error;
pub mod listing;
mod mirror;
pub mod plan_why;
pub mod reader;
pub mod recorded_call;
pub mod redact;
pub mod report_header;
pub mod run;
pub mod synthetic;
pub mod tail;
pub mod tool_schema;
pub mod wire;
pub mod writer;

// Below the format: text made safe to show, the one parallel map, bounded file reads.
pub mod parallel;
pub mod sanitize;
pub mod small_file;
