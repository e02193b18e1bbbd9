//! A long call's progress reports, from a real server (server-everything's long-running
//! operation), recorded while the call runs and printed by `--no-tui`.

use crate::support;

use serde_json::json;
use support::*;

#[test]
fn a_long_calls_progress_is_recorded_and_shown_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"everything": {"command": npm_bin("mcp-server-everything")}}),
    );
    let long = "everything:trigger-long-running-operation";
    let (ran, run) = react_run(
        dir.path(),
        &mcp,
        json!({"id": "slow_1", "request": "run the slow operation"}),
        json!([
            {"when": "1. everything:trigger", "content": finish("done")},
            {"when": "No tool has been called yet", "content": call(long, json!({"duration": 2, "steps": 4}))},
            {"content": "done"}
        ]),
    );
    let events = events(&run);
    let progress: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["kind"] == "call_progress")
        .collect();
    // Four reports 0.5 s apart: each recorded (one per 250 ms at most), before the result.
    assert!(progress.len() >= 3, "{progress:?}");
    assert!(
        progress
            .iter()
            .all(|p| p["step"] == 1 && p["tool"] == long && p["total"] == 4.0)
    );
    let called = events
        .iter()
        .position(|e| e["kind"] == "tool_called")
        .unwrap();
    let last_report = events
        .iter()
        .rposition(|e| e["kind"] == "call_progress")
        .unwrap();
    assert!(last_report < called, "progress comes while the call runs");
    let printed = text(&ran);
    assert!(
        printed.contains("call_progress") && printed.contains("▰"),
        "{printed}"
    );
}
