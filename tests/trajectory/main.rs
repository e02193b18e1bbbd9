//! The event log: reading, writing, folding and the format's own document.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod appending;
mod fold_properties;
mod format_doc;
mod lean_reading;
mod parsers_fuzz;
mod trajectory_reader;
mod writer_limits;
