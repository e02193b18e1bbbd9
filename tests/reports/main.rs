//! Numbers: report, validate, wm-eval, interval coverage, one number per metric, the sample runs and the examples.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod cli_validate_report;
mod engine_wm_eval;
mod examples;
mod interval_coverage;
mod one_number;
mod sample_runs;
