//! The trajectory: an append-only event log (docs/design.md, "One idea carries it").
//!
//! [`event`] is the schema, [`writer`] appends it, [`reader`] streams it back tolerantly,
//! [`listing`] summarises files from their first and last lines, [`run`] holds an opened
//! run with its indices, and [`fold`] computes the state at any cursor.

pub mod catalog;
pub mod describe;
pub mod event;
pub mod fold;
pub mod listing;
pub mod reader;
pub mod redact;
pub mod run;
pub mod synthetic;
pub mod writer;
