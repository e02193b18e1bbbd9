//! The agents end to end: runs, searches, forks, rechecks and world models, against real servers and a scripted endpoint.
//!
//! One test binary per area (a link of each is costly); a module per file.

#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/otlp_sink.rs"]
#[allow(dead_code)]
mod otlp_sink;
#[path = "../support/mod.rs"]
mod support;

mod compare_memory;
mod credentials;
mod decision_schema;
mod engine_fork;
mod engine_llm;
mod engine_pipeline;
mod engine_progress;
mod engine_recheck;
mod engine_run;
mod engine_spiral;
mod routing_guarantee;
mod world_model_command;
