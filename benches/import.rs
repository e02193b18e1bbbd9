//! `cosmos import` of big foreign files: a 1 GB Inspect AI log (`.json`, streamed, and the same
//! samples as a `.eval` zip) and a 500 MB ATIF trajectory, all synthetic (their ids say so).
//! Prints MB/s and the importing process's peak memory, beside Python's `json` module reading
//! the same JSON files (`json.load`). `--quick` divides the sizes by ten.
//!
//!     cargo bench --bench import [-- --quick]

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

/// About this many bytes of tool results per sample (a sample is ~1 MB).
const RESULT_BYTES: usize = 10_000;
const CALLS_PER_SAMPLE: usize = 48;

/// One synthetic Inspect sample: a user input, then per call a model event choosing it and a
/// tool event with its result, then the answer.
fn inspect_sample(i: usize) -> serde_json::Value {
    let filler = "synthetic result text ".repeat(RESULT_BYTES / 22);
    let mut events = Vec::new();
    for c in 0..CALLS_PER_SAMPLE {
        let at = format!(
            "2026-12-05T03:{:02}:{:02}.000000+00:00",
            (c / 60) % 60,
            c % 60
        );
        events.push(json!({"event": "model", "timestamp": at, "model": "synthetic/model",
            "output": {"choices": [{"message": {"role": "assistant", "content": "calling",
                "tool_calls": [{"id": format!("c{c}"), "function": "lookup", "arguments": {"n": c}}]}}],
                "usage": {"input_tokens": 1000 + c, "output_tokens": 20}},
            "working_time": 0.5}));
        events.push(
            json!({"event": "tool", "timestamp": at, "id": format!("c{c}"),
            "function": "lookup", "arguments": {"n": c},
            "result": format!("{{\"n\": {c}, \"text\": \"{filler}\"}}"), "working_time": 0.01}),
        );
    }
    json!({"id": format!("synthetic-{i}"), "epoch": 1, "input": "synthetic task",
        "started_at": "2026-12-05T03:00:00+00:00", "completed_at": "2026-12-05T03:10:00+00:00",
        "events": events, "output": {"completion": "done"}})
}

/// A synthetic Inspect `.json` log of about `bytes`, and the same samples as an `.eval`.
fn inspect_logs(bytes: u64, dir: &Path) -> (PathBuf, PathBuf, usize) {
    let json_path = dir.join(format!("inspect-synthetic-{bytes}.json"));
    let eval_path = dir.join(format!("inspect-synthetic-{bytes}.eval"));
    let sample_bytes = serde_json::to_vec(&inspect_sample(0)).unwrap().len() as u64;
    let samples = (bytes / sample_bytes).max(1) as usize;
    if !json_path.exists() || !eval_path.exists() {
        let eval = json!({"task": "synthetic", "model": "synthetic/model"});
        let mut out = std::io::BufWriter::new(std::fs::File::create(&json_path).unwrap());
        write!(
            out,
            "{{\"version\": 2, \"status\": \"success\", \"eval\": {eval}, \"samples\": ["
        )
        .unwrap();
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&eval_path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Zstd)
            .large_file(true);
        zip.start_file("header.json", options).unwrap();
        zip.write_all(json!({"eval": eval}).to_string().as_bytes())
            .unwrap();
        for i in 0..samples {
            let sample = serde_json::to_vec(&inspect_sample(i)).unwrap();
            if i > 0 {
                out.write_all(b",").unwrap();
            }
            out.write_all(&sample).unwrap();
            zip.start_file(format!("samples/synthetic-{i}_epoch_1.json"), options)
                .unwrap();
            zip.write_all(&sample).unwrap();
        }
        out.write_all(b"]}").unwrap();
        out.flush().unwrap();
        zip.finish().unwrap();
    }
    (json_path, eval_path, samples)
}

/// A synthetic ATIF trajectory of about `bytes`: agent steps of one call each.
fn atif_file(bytes: u64, dir: &Path) -> PathBuf {
    let path = dir.join(format!("atif-synthetic-{bytes}.json"));
    if path.exists() {
        return path;
    }
    let filler = "synthetic result text ".repeat(RESULT_BYTES / 22);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(out, "{{\"schema_version\": \"ATIF-v1.7\", \"session_id\": \"synthetic\", \"agent\": {{\"name\": \"synthetic\", \"version\": \"0\"}}, \"steps\": [{{\"step_id\": 1, \"source\": \"user\", \"message\": \"synthetic task\"}}").unwrap();
    let mut written = 0u64;
    let mut step = 2;
    while written < bytes {
        let id = format!("c{step}");
        let text = serde_json::to_string(&json!({"step_id": step, "source": "agent", "message": "calling",
            "tool_calls": [{"tool_call_id": id, "function_name": "mcp__synthetic__lookup", "arguments": {"n": step}}],
            "observation": {"results": [{"source_call_id": id, "content": filler}]},
            "metrics": {"prompt_tokens": 1000, "completion_tokens": 20}}))
        .unwrap();
        write!(out, ",{text}").unwrap();
        written += text.len() as u64 + 1;
        step += 1;
    }
    write!(
        out,
        ",{{\"step_id\": {step}, \"source\": \"agent\", \"message\": \"done\"}}]}}"
    )
    .unwrap();
    out.flush().unwrap();
    path
}

/// Runs `command` to its end: its wall time and its peak resident memory (MB).
fn measured(command: &mut Command) -> (Duration, f64) {
    let started = Instant::now();
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: `usage` is plain data wait4 fills for the child just spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert!(waited > 0, "wait4 failed");
    // Reaped by wait4 already; this only lets go of the handle.
    let _ = child.try_wait();
    assert_eq!(status, 0, "{command:?} failed");
    (started.elapsed(), usage.ru_maxrss as f64 / 1024.0)
}

fn report(what: &str, bytes: u64, (took, peak_mb): (Duration, f64)) {
    println!(
        "{what:<44} {:>7.0} MB in {:>6.1} s: {:>6.1} MB/s, peak {:>6.0} MB",
        bytes as f64 / 1e6,
        took.as_secs_f64(),
        bytes as f64 / 1e6 / took.as_secs_f64(),
        peak_mb
    );
}

fn main() {
    let scale = common::scale() as u64;
    let dir = common::data_dir().join("import");
    std::fs::create_dir_all(&dir).unwrap();
    let (json_log, eval_log, samples) = inspect_logs(1_000_000_000 / scale, &dir);
    let atif = atif_file(500_000_000 / scale, &dir);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    println!(
        "synthetic inputs: an Inspect log of {samples} samples (~1 MB each) as .json and .eval, an ATIF trajectory of one-call steps"
    );
    println!(
        "the .eval holds the .json's samples in {:.0} MB (zstd); its MB/s count the samples' bytes",
        size(&eval_log) as f64 / 1e6
    );
    // The bytes of samples each import reads (an .eval's uncompressed, as the .json's).
    for (what, file, bytes) in [
        (
            "cosmos import, Inspect .json (streamed)",
            &json_log,
            size(&json_log),
        ),
        (
            "cosmos import, Inspect .eval (zstd zip)",
            &eval_log,
            size(&json_log),
        ),
        ("cosmos import, ATIF .json", &atif, size(&atif)),
    ] {
        let out = tempfile::tempdir_in(&dir).unwrap();
        common::warm(file);
        let figures = measured(
            Command::new(env!("CARGO_BIN_EXE_cosmos"))
                .arg("import")
                .arg(file)
                .arg("--out")
                .arg(out.path()),
        );
        report(what, bytes, figures);
    }
    for (what, file) in [
        ("python3 json.load, Inspect .json", &json_log),
        ("python3 json.load, ATIF .json", &atif),
    ] {
        let figures = measured(
            Command::new("python3")
                .args(["-c", "import json, sys; json.load(open(sys.argv[1]))"])
                .arg(file),
        );
        report(what, size(file), figures);
    }
}
