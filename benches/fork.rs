//! Fork benchmark: prints figures, asserts nothing. `cargo bench --bench fork` (`-- --quick`
//! for a tenth).
//!
//! Two runs of 10^5 events are forked at their last step with `--tools recorded`: a SPIRAL-like
//! run (nearly every event the search's, a plan's calls at the end) and the worst case, a run
//! whose every event is a real call (a long ReAct run). Printed: the time from reading the
//! original to the agent's first new step, in its parts: reading the file once
//! (`fork::Original::read`), checking the fork point and building the recording (`plan`,
//! `fork`), writing the history into the fork through the real recorder (`Fork::replay`), and
//! the agent's history (`Env::prior_steps`). The history is built once, never per step.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;

use std::path::Path;
use std::time::Instant;

use common::scale;
use cosmos_engine::agent::OnMiss;
use cosmos_engine::agent::Recorder;
use cosmos_engine::fork_source::{Original, Tools};
use cosmos_engine::metrics::run::RunAccumulator;
use cosmos_trajectory::event::{EventBody, Observation, RunStatus};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::synthetic::{self, Spec};
use cosmos_trajectory::writer::Writer;
use serde_json::json;

/// A run of `events` real calls and its end, written through the real writer.
fn all_calls(path: &Path, events: u64) {
    let header = synthetic::header(&Spec::default());
    let mut writer = Writer::create(path, &header, Redactor::new(), None).unwrap();
    for step in 1..=events {
        let arguments =
            json!({"time": format!("{:02}:{:02}", step / 60 % 24, step % 60), "n": step});
        writer
            .write(
                step,
                EventBody::ToolCalled {
                    step,
                    tool: "time:convert_time".into(),
                    server: Some("time".into()),
                    arguments: Box::new(arguments),
                    result: Observation {
                        text: format!("{{\"converted\": {step}, \"zone\": \"Asia/Tokyo\"}}"),
                        ..Default::default()
                    },
                    latency_ms: 12,
                    node: None,
                    error: None,
                    origin: None,
                    state_change: None,
                },
            )
            .unwrap();
    }
    let end = EventBody::RunFinished {
        status: RunStatus::Completed,
        error: None,
        ending: None,
        totals: Default::default(),
        end_digest: Default::default(),
        state_match: Default::default(),
    };
    writer.write(events + 1, end).unwrap();
}

/// Forks `original` at its last step and prints how long each part took.
fn measure(what: &str, original: &Path, out: &Path) {
    let events = std::fs::read_to_string(original).unwrap().lines().count();
    let bytes = std::fs::metadata(original).unwrap().len();
    let started = Instant::now();
    let read = Original::read(original).unwrap();
    let t_read = started.elapsed();
    let at = read.last_step();
    let plan = read.plan(at, Tools::Recorded(OnMiss::Error)).unwrap();
    let fork = plan.fork();
    let t_plan = started.elapsed();
    let header = synthetic::header(&Spec::default());
    let writer = Writer::create(out, &header, Redactor::new(), None).unwrap();
    let mut recorder = Recorder::new(writer, None, None);
    fork.replay(&mut recorder).unwrap();
    let t_replay = started.elapsed();
    let history = fork.history_steps().len();
    let t_first = started.elapsed();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!(
        "{what}: {events} events ({:.1} MB), forked at step {at}: {history} replayed calls",
        bytes as f64 / 1e6
    );
    println!("  read the original        {:>8.1} ms", ms(t_read));
    println!("  fork point, recording    {:>8.1} ms", ms(t_plan - t_read));
    println!(
        "  history written          {:>8.1} ms",
        ms(t_replay - t_plan)
    );
    println!(
        "  agent's history          {:>8.1} ms",
        ms(t_first - t_replay)
    );
    println!(
        "  first new step at        {:>8.1} ms (target: under 1000)",
        ms(t_first)
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    // About seven events a node.
    let spiral = dir.path().join("spiral.jsonl");
    let spec = Spec {
        nodes: 17_000 / scale(),
        ..Spec::default()
    };
    synthetic::write(&spiral, &spec, RunAccumulator::tally).unwrap();
    measure("SPIRAL-like run", &spiral, &dir.path().join("fork-1.jsonl"));
    let calls = dir.path().join("calls.jsonl");
    all_calls(&calls, 100_000 / scale() as u64);
    measure(
        "every event a real call",
        &calls,
        &dir.path().join("fork-2.jsonl"),
    );
}
