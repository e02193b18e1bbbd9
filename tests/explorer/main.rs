//! The explorer: views as TestBackend snapshots, update, fuzzing, view truth, and tmux end to end.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod explorer_e2e;
mod explorer_fuzz;
mod explorer_sweep;
mod explorer_update;
mod explorer_views;
mod run_live_e2e;
mod view_truth;
