//! Runs in and out: import of Inspect, ATIF and OpenTelemetry; export to ATIF, transitions and OTLP.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod export;
mod export_otel;
mod import;
