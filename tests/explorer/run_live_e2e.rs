//! `cosmos run` with the explorer: the live view in a real terminal (tmux), fed by a
//! running agent against a real MCP server and the scripted endpoint.

use crate::common;
use crate::support;

use std::time::{Duration, Instant};

use common::tmux::Tmux;
use serde_json::json;
use support::*;

fn start_live(
    dir: &std::path::Path,
    llm: &ScriptedLlm,
    agent: &str,
    extra: &[&str],
) -> (Tmux, std::path::PathBuf) {
    let mcp = write_mcp_config(dir, bench_servers());
    let out = dir.join("out");
    let tasks = bench_tasks();
    let base = llm.base_url();
    let mut args = vec![
        "run",
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--task",
        tasks.to_str().unwrap(),
        "--task-id",
        "time_mcp_000",
        "--agent",
        agent,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let t = Tmux::start_with_env(
        &args,
        &[
            ("OPENAI_BASE_URL", base.as_str()),
            ("OPENAI_API_KEY", "sk-live-test-0123456789"),
        ],
        160,
        45,
    );
    (t, out)
}

/// Waits up to 20 s until the run has sent the endpoint a request.
fn wait_until_asked(llm: &ScriptedLlm) {
    let start = Instant::now();
    while llm.requests().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the planner was never asked"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_live_view_follows_a_run_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "delay_s": 1, "content": finish("04:00 in New York")},
        {"when": "No tool has been called yet", "delay_s": 1, "content": call("Time MCP:convert_time", json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "America/New_York"}))}
    ]));
    // Sent live to an OpenTelemetry receiver that is down: the run, explorer and all, goes on
    // and says so.
    let dead = dead_port();
    let down = format!("http://127.0.0.1:{}", dead.port);
    let (t, out) = start_live(dir.path(), &llm, "react", &["--otel-endpoint", &down]);
    t.wait_for("LIVE");
    t.wait_for_all(&["status    completed", "Steps · react", "calls     1"]);
    t.keys(&["q"]);
    t.wait_exit();
    let ev = events(&only_run(&out));
    assert_eq!(ev.last().unwrap()["status"], "completed");
    assert!(
        ev.iter()
            .any(|e| e["kind"] == "error" && e["source"] == "otel"),
        "{ev:?}"
    );
}

#[test]
fn the_stop_key_ends_the_run_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([{"delay_s": 30, "content": finish("late")}]));
    let (t, out) = start_live(dir.path(), &llm, "react", &[]);
    t.wait_for("LIVE");
    wait_until_asked(&llm);
    t.keys(&["x"]);
    t.wait_for("status    interrupted");
    t.keys(&["q"]);
    t.wait_exit();
    let ev = events(&only_run(&out));
    assert_eq!(ev.last().unwrap()["status"], "interrupted");
}

#[test]
fn sigterm_with_the_explorer_open_ends_the_run_and_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([{"delay_s": 30, "content": finish("late")}]));
    let (t, out) = start_live(dir.path(), &llm, "react", &[]);
    t.wait_for("LIVE");
    wait_until_asked(&llm);
    let pid = t.tmux(&["display-message", "-p", "-t", "e2e", "#{pane_pid}"]);
    std::process::Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .unwrap();
    t.wait_exit();
    let ev = events(&only_run(&out));
    assert_eq!(ev.last().unwrap()["status"], "interrupted");
}

#[test]
fn ctrl_c_stops_a_live_search_at_once_no_request_or_call_after_it() {
    let dir = tempfile::tempdir().unwrap();
    // A slow model: every reply takes 3 s, so a search left going would ask again within
    // seconds of the press (and make real calls after it).
    let llm = ScriptedLlm::start(json!([{
        "delay_s": 3,
        "content": call("Time MCP:get_current_time", json!({"timezone": "UTC"}))
    }]));
    let (t, out) = start_live(
        dir.path(),
        &llm,
        "spiral",
        &[
            "--world-model",
            "llm",
            "--iterations",
            "20",
            "--candidates",
            "2",
        ],
    );
    t.wait_for("LIVE");
    wait_until_asked(&llm);
    let asked = llm.requests().len();
    let pressed = Instant::now();
    t.keys(&["C-c"]);
    t.wait_exit();
    let stopped_in = pressed.elapsed();
    assert_eq!(llm.requests().len(), asked, "no model request after Ctrl-C");
    // The replies in flight were 3 s away: the program ended before any came.
    assert!(stopped_in < Duration::from_secs(3), "{stopped_in:?}");
    let ev = events(&only_run(&out));
    assert_eq!(ev.last().unwrap()["status"], "interrupted");
    assert!(
        !ev.iter().any(|e| e["kind"] == "tool_called"),
        "no real call after Ctrl-C: {ev:?}"
    );
}
