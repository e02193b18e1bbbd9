//! The code's shape: layers and import cycles per crate, and the CLI reference held to the program.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

mod cli_doc;
mod layers;
