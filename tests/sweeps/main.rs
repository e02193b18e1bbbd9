//! Sweeps: specs, cells, resuming, and an emitted array on a one-node Slurm cluster.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod engine_sweep;
mod slurm;
