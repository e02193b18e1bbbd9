//! The code's shape: layers, import cycles and file names per crate; the CLI reference held to the program; the limits that keep the docs and tests small.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

mod cli_doc;
mod layers;
mod newcomer;
