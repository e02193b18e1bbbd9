//! Export benchmark: prints figures, asserts nothing. `cargo bench --bench export` (`-- --quick`
//! for a tenth of the data). A run of about 10^6 events (`target/bench-data/`), exported as
//! JSON, as Markdown, as transitions and as OpenTelemetry spans to a local OTLP sink (an HTTP
//! server on this machine that takes each request and answers 200): events per second and
//! peak memory of each, beside opening the run as the explorer and `report` read it; and what
//! a live export costs the agent per event. A word after `--` runs only the phases named by it
//! (`open`, `json`, `markdown`, `transitions`, `otel`, `live`), for a profiler.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;
#[path = "../tests/support/otlp_sink.rs"]
mod otlp_sink;

use std::io::sink;

use common::{big_run_file, ms, peak_mb, reset_peak, scale, time, warm};
use cosmos_engine::agent::Tap;
use cosmos_export::{account, otel, transitions};
use cosmos_trajectory::run::Run;

fn main() {
    let scale = scale();
    let big = big_run_file(scale);
    warm(&big);
    let only = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_default();
    let phase = |name: &str| name.contains(only.as_str());

    if phase("open json markdown") {
        accounts(&big);
    }
    if phase("transitions") {
        transitions_phase(&big);
    }
    if phase("otel") {
        otel_phase(&big);
    }
    if phase("live") {
        live_phase(&big);
    }
}

fn accounts(big: &std::path::Path) {
    reset_peak();
    let (run, t_open) = time(|| Run::open(big).unwrap());
    let events = run.len();
    println!(
        "open the run ({events} events): {:.0} ms = {:.0} k events/s   peak RSS {:.0} MB",
        ms(t_open),
        events as f64 / t_open.as_secs_f64() / 1e3,
        peak_mb()
    );

    for (name, write) in [
        (
            "json",
            account::json as fn(&Run, &mut dyn std::io::Write) -> anyhow::Result<()>,
        ),
        ("markdown", account::markdown),
    ] {
        reset_peak();
        let ((), t) = time(|| write(&run, &mut sink()).unwrap());
        println!(
            "export {name} of the open run: {:.0} ms = {:.0} k events/s   peak RSS {:.0} MB (the open run included)",
            ms(t),
            events as f64 / t.as_secs_f64() / 1e3,
            peak_mb()
        );
    }
}

fn transitions_phase(big: &std::path::Path) {
    let events = events_in(big);
    reset_peak();
    let out = tempfile::tempdir().unwrap();
    let spec = transitions::Spec {
        paths: vec![big.to_path_buf()],
        out: out.path().to_path_buf(),
        format: transitions::Format::Chat,
        split: 0.0,
    };
    let (written, t) = time(|| transitions::export(&spec, &cosmos_export::redactor()).unwrap());
    println!(
        "export transitions ({} real calls, {} examples): {:.0} ms = {:.0} k events/s   peak RSS {:.0} MB",
        written.calls,
        written.train,
        ms(t),
        events as f64 / t.as_secs_f64() / 1e3,
        peak_mb()
    );
}

/// The number of events in the run at `path`.
fn events_in(path: &std::path::Path) -> usize {
    Run::open(path).unwrap().len()
}

fn otel_phase(big: &std::path::Path) {
    let events = events_in(big);
    // OpenTelemetry, streamed from the file to a sink on this machine.
    let sink_url = otlp_sink();
    let target = otel::Target::new(&sink_url, &[], false).unwrap();
    reset_peak();
    let ((delivery, _), t) =
        time(|| otel::export_file(big, &target, &cosmos_export::redactor()).unwrap());
    println!(
        "export otel ({} spans, {} failed): {:.0} ms = {:.0} k events/s   peak RSS {:.0} MB",
        delivery.spans,
        delivery.failed,
        ms(t),
        events as f64 / t.as_secs_f64() / 1e3,
        peak_mb()
    );
}

/// Live: what handing each event to the exporter costs the agent's thread.
fn live_phase(big: &std::path::Path) {
    let mut stream = cosmos_trajectory::reader::EventStream::open(big).unwrap();
    let header = stream.header().clone();
    let mut sample = Vec::new();
    while let Some(e) = stream.next_event().unwrap() {
        sample.push(e);
        if sample.len() == 100_000 {
            break;
        }
    }
    // Each event written as the recorder writes it (one write and flush), without and with
    // the live export's tap: the tap's cost per event against the writer's.
    let write_all = |tap: Option<&mut otel::LiveTap>| {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = cosmos_trajectory::writer::Writer::create(
            &dir.path().join("run.jsonl"),
            &header,
            cosmos_trajectory::redact::Redactor::new(),
            None,
        )
        .unwrap();
        let mut tap = tap;
        time(|| {
            for e in &sample {
                let written = writer.write(e.t_ms, e.body.clone()).unwrap();
                if let Some(tap) = tap.as_deref_mut() {
                    tap.see(&written);
                }
            }
        })
        .1
    };
    let alone = write_all(None);
    let target = otel::Target::new(&otlp_sink(), &[], false).unwrap();
    let (live, mut tap) =
        otel::Live::start(&header, target, cosmos_export::redactor(), Ok(())).unwrap();
    let with_tap = write_all(Some(&mut tap));
    drop(tap);
    let lost = live.finish();
    let per = |t: std::time::Duration| t.as_secs_f64() * 1e6 / sample.len() as f64;
    println!(
        "live export: writing {} events {:.2} µs/event alone, {:.2} µs/event with the tap (+{:.1}%; {})",
        sample.len(),
        per(alone),
        per(with_tap),
        (with_tap.as_secs_f64() / alone.as_secs_f64() - 1.0) * 100.0,
        lost.as_deref().unwrap_or("nothing lost")
    );
}

/// An OTLP/HTTP receiver that reads each request whole and answers 200, on a free port.
fn otlp_sink() -> String {
    let (port, _) = otlp_sink::start(false);
    format!("http://127.0.0.1:{port}")
}
