//! The trajectory: an append-only event log (docs/design.md, "One idea carries it").
//!
//! [`event`] is the schema, [`writer`] appends it, [`reader`] streams it back tolerantly,
//! [`listing`] summarises files from their first and last lines, [`run`] holds an opened
//! run with its indices, [`fold`] computes the state at any cursor, and [`tail`] follows a
//! file another process is still writing.
//!
//! # Reading at the speed of the disk
//!
//! **Reading at the speed of the disk.** A SPIRAL run is nearly all search lines, and a
//! prediction's text is most of their bytes, so decoding decides speed. The writer puts `seq`,
//! `t_ms`, `kind` first, and the reader decodes the rest of the line as that kind in one pass
//! (search kinds through plain-struct mirrors, checked against the full decoder by a test).
//! `report` reads the search kinds without their long strings, on every core. An opened run keeps
//! per event only what its indices, fold and metrics read (48 bytes for a search line) and where
//! the line lies; a view reads the events it shows back from the file. The explorer opens a big run
//! from its first part while a thread reads the rest; a view nobody moved ends as the whole open
//! would have shown it.

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

// Below the format: text made safe to show, the one parallel map, bounded file reads, the
// one way to write a file at a name.
pub mod out_file;
pub mod parallel;
pub mod sanitize;
pub mod small_file;
