//! Routing benchmark: prints figures, asserts nothing. `cargo bench --bench routing`.
//!
//! SPIRAL-Exec on the two MCP-Bench time tasks of the tests' fixture, against the real Time MCP
//! server (its tools annotated read-only; installed by scripts/install-test-servers.sh) and the
//! tests' scripted endpoint, whose world model is 0.4 sure of every prediction. Each task is
//! run without routing and with `--go-real-below 0.5`: per task, the real calls (the run's
//! steps, and the calls made while planning in place of unsure predictions), the tokens and the
//! wall time, as `cosmos report --per-run --format json` gives them.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::{
    ScriptedLlm, bench_servers, call, cosmos_run_args, finish, predicted, write_mcp_config,
};

/// Planner, critic, world model and summarizer replies for a two-step conversion.
fn script() -> Value {
    let tokyo = json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"});
    let london =
        json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Europe/London"});
    let mut guess = predicted(
        r#"{"source":{"timezone":"UTC"},"target":{"timezone":"Asia/Tokyo","datetime":"2026-11-29T18:00:00+09:00"}}"#,
        false,
    );
    guess["confidence"] = json!(0.4);
    json!([
        {"when": "You write the final answer", "content": "09:00 UTC is 18:00 in Tokyo."},
        {"when": "Next step: finish with the answer", "content": {"score": 0.9, "reason": "answers"}},
        {"when": "You are a strict critic", "content": {"score": 0.5, "reason": "useful"}},
        {"when": "You simulate an MCP server", "content": guess},
        {"when": "2. Time MCP:", "content": {"candidates": [finish("")]}},
        {"when": "1. Time MCP:", "content": {"candidates": [finish(""), call("Time MCP:convert_time", london.clone())]}},
        {"when": "No tool has been called yet", "content": {"candidates": [
            call("Time MCP:convert_time", tokyo),
            call("Time MCP:convert_time", london)
        ]}}
    ])
}

fn main() {
    support::servers(); // installed by scripts/install-test-servers.sh
    let llm = ScriptedLlm::start(script());
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    println!("SPIRAL-Exec, 8 iterations, K = 2; world model 0.4 sure of every prediction");
    println!(
        "{:<14} {:<22} {:>6} {:>9} {:>10} {:>8} {:>7}",
        "task", "routing", "steps", "grounded", "real calls", "tokens", "wall s"
    );
    for task in ["time_mcp_000", "time_mcp_001"] {
        for (label, extra) in [
            ("none", vec![]),
            ("--go-real-below 0.5", vec!["--go-real-below", "0.5"]),
        ] {
            let out = dir.path().join(format!("{task}-{}", extra.len()));
            let mut args = cosmos_run_args(&mcp, &out, task, "spiral", &[]);
            args.extend(
                [
                    "--world-model",
                    "llm",
                    "--iterations",
                    "8",
                    "--candidates",
                    "2",
                    "--max-depth",
                    "4",
                ]
                .map(String::from),
            );
            args.extend(extra.iter().map(|s| s.to_string()));
            let ran = support::cosmos(&args, &llm, "sk-bench-routing-0123456789");
            assert!(ran.status.success(), "{}", support::text(&ran));
            let report = Command::new(env!("CARGO_BIN_EXE_cosmos"))
                .arg("report")
                .arg(&out)
                .args(["--per-run", "--format", "json"])
                .output()
                .unwrap();
            let doc: Value = serde_json::from_slice(&report.stdout).unwrap();
            let run = &doc["per_run"][0];
            let m = &run["metrics"];
            let (steps, grounded) = (
                m["tool_calls"].as_u64().unwrap(),
                m["grounded_calls"].as_u64().unwrap(),
            );
            println!(
                "{:<14} {:<22} {:>6} {:>9} {:>10} {:>8} {:>7.1}",
                task,
                label,
                steps,
                grounded,
                steps + grounded,
                run["tokens"],
                m["wall_ms"].as_f64().unwrap() / 1000.0
            );
        }
    }
}
