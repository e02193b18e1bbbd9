//! The agent pipeline end to end against the real `mcp-server-time` and a scripted endpoint
//! over real HTTP: native tool calling as a conversation, SPIRAL-Exec against a tools-only
//! endpoint, and a world model whose endpoint is down.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use support::*;

const KEY: &str = "sk-test-pipeline-0123456789";

fn utc_to(target: &str) -> Value {
    json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": target})
}

/// A `cosmos.toml` with these role tables, in `dir`.
fn config(dir: &Path, roles: &str) -> String {
    let path = dir.join("cosmos.toml");
    std::fs::write(&path, roles).unwrap();
    path.display().to_string()
}

fn run(dir: &Path, llm: &ScriptedLlm, agent: &str, extra: &[&str]) -> (Vec<Value>, String) {
    run_ending(dir, llm, agent, extra, 0)
}

/// [`run`], for a run that ends with exit code `code` (1: the run failed).
fn run_ending(
    dir: &Path,
    llm: &ScriptedLlm,
    agent: &str,
    extra: &[&str],
    code: i32,
) -> (Vec<Value>, String) {
    let mcp = write_mcp_config(dir, bench_servers());
    let out = dir.join("out");
    let o = cosmos(
        &cosmos_run_args(&mcp, &out, "time_mcp_000", agent, extra),
        llm,
        KEY,
    );
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
    let file = only_run(&out);
    let v = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(v.status.code(), Some(0), "validate: {}", text(&v));
    (events(&file), out.display().to_string())
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

#[test]
fn a_function_calling_model_sees_its_calls_and_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    // Like any function-calling model: the next tool its conversation has not called yet,
    // then an answer in text. A planner that saw no conversation would repeat the first.
    let llm = ScriptedLlm::start(json!([
        {"when": "\"tools\"", "next_uncalled": [
            {"name": "Time_MCP_get_current_time", "arguments": {"timezone": "UTC"}},
            {"name": "Time_MCP_convert_time", "arguments": utc_to("Asia/Tokyo")}
        ], "content": "09:00 UTC is 18:00 in Tokyo."}
    ]));
    let cfg = config(dir.path(), "[roles.planner]\noutput = \"tools\"\n");
    let (ev, _) = run(
        dir.path(),
        &llm,
        "react",
        &["--config", &cfg, "--max-steps", "6"],
    );
    let tools: Vec<&str> = of_kind(&ev, "tool_called")
        .iter()
        .map(|e| e["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["Time MCP:get_current_time", "Time MCP:convert_time"]
    );
    assert!(
        of_kind(&ev, "tool_called")
            .iter()
            .all(|e| e["result"]["is_error"] == false)
    );
    assert_eq!(ev.last().unwrap()["status"], "completed");
    assert_eq!(
        of_kind(&ev, "answer")[0]["text"],
        "09:00 UTC is 18:00 in Tokyo."
    );
    // The third request carried both calls as assistant tool_calls, each answered by a
    // `tool` message holding the server's real result.
    let third = &llm.requests()[2]["body"];
    let messages = third["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "tool"]
    );
    assert_eq!(
        messages[3]["tool_call_id"],
        messages[2]["tool_calls"][0]["id"]
    );
    assert!(
        messages[5]["content"]
            .as_str()
            .unwrap()
            .contains("Asia/Tokyo")
    );
}

#[test]
fn spiral_plans_and_critiques_through_a_tools_only_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "Tokyo: 18:00."},
        {"when": "\"name\":\"critique\"", "tool_calls": [{"name": "critique", "arguments": {"score": 0.7, "reason": "converts the right zone"}}]},
        {"when": "\"name\":\"tool_result\"", "tool_calls": [{"name": "tool_result", "arguments": {"is_error": false, "content": "{\"target\": {\"timezone\": \"Asia/Tokyo\", \"datetime\": \"18:00\"}}"}}]},
        {"when": "\"tools\"", "next_uncalled": [
            {"name": "Time_MCP_convert_time", "arguments": utc_to("Asia/Tokyo")}
        ], "content": "done"}
    ]));
    let cfg = config(
        dir.path(),
        "[default]\noutput = \"tools\"\n[roles.summarizer]\noutput = \"json\"\n",
    );
    let (ev, _) = run(
        dir.path(),
        &llm,
        "spiral",
        &[
            "--config",
            &cfg,
            "--world-model",
            "llm",
            "--iterations",
            "3",
            "--candidates",
            "2",
            "--max-depth",
            "3",
        ],
    );
    // Every request offered functions (no JSON response_format ladder) but the summarizer's.
    for r in llm.requests() {
        let body = &r["body"];
        if !body.to_string().contains("You write the final answer") {
            assert!(
                body["tools"].is_array() && body.get("response_format").is_none(),
                "{body}"
            );
        }
    }
    let evaluated = of_kind(&ev, "node_evaluated");
    assert!(
        evaluated
            .iter()
            .any(|e| e["critic_reason"] == "converts the right zone")
    );
    assert!(
        of_kind(&ev, "node_simulated")
            .iter()
            .all(|e| e["world_model"] == "llm")
    );
    let calls = of_kind(&ev, "tool_called");
    assert_eq!(calls.len(), 1, "the plan ran for real");
    assert_eq!(calls[0]["tool"], "Time MCP:convert_time");
    assert_eq!(calls[0]["result"]["is_error"], false);
    assert_eq!(ev.last().unwrap()["status"], "completed");
}

#[test]
fn with_the_world_models_endpoint_down_spiral_records_errors_not_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let dead = dead_port();
    let dead_url = format!("http://127.0.0.1:{}/v1", dead.port);
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "Nothing could be predicted."},
        {"when": "Propose up to", "content": {"candidates": [
            {"action": "call", "tool": "Time MCP:convert_time", "arguments": utc_to("Asia/Tokyo")},
            {"action": "call", "tool": "Time MCP:convert_time", "arguments": utc_to("Europe/London")}
        ]}}
    ]));
    let cfg = config(
        dir.path(),
        &format!(
            "[roles.world_model]\nbase_url = \"{dead_url}\"\nmax_retries = 0\ntimeout_s = 5\n\
             [roles.critic]\nbase_url = \"{dead_url}\"\nmax_retries = 0\ntimeout_s = 5\n"
        ),
    );
    let (ev, out) = run_ending(
        dir.path(),
        &llm,
        "spiral",
        &[
            "--config",
            &cfg,
            "--world-model",
            "llm",
            "--iterations",
            "2",
            "--candidates",
            "2",
        ],
        1,
    );
    let wm_errors = of_kind(&ev, "error")
        .into_iter()
        .filter(|e| e["source"] == "world_model")
        .count();
    assert_eq!(wm_errors, 2, "one error per failed simulation");
    assert!(
        of_kind(&ev, "node_simulated").is_empty(),
        "no prediction carries the endpoint's failure"
    );
    assert!(
        of_kind(&ev, "node_evaluated")
            .iter()
            .all(|e| e["verdict"] == "not_simulated")
    );
    assert!(
        of_kind(&ev, "tool_called").is_empty(),
        "nothing unsimulated is executed"
    );
    // The first expansion simulated nothing: the search stopped there, with no plan.
    assert_eq!(
        of_kind(&ev, "search_finished")[0]["stopped"],
        "world_model_failed"
    );
    let finished = ev.last().unwrap();
    assert_eq!(finished["status"], "failed");
    assert!(finished["totals"].get("fidelity").is_none(), "{finished}");
    let r = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["report", &out, "--format", "json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert!(
        doc["groups"][0]["fidelity"].is_null(),
        "no fidelity from a failure"
    );
}

#[test]
fn a_world_model_reply_that_is_not_json_still_counts_its_tokens() {
    let dir = tempfile::tempdir().unwrap();
    // The world model answers in prose (with usage, as llama.cpp reports it): no prediction,
    // an error, and the tokens it generated on the llm_call all the same.
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "Nothing could be predicted."},
        {"when": "You simulate an MCP server", "content": "The converted time is 18:00 in Tokyo, which is a fine hour."},
        {"when": "Propose up to", "content": {"candidates": [
            {"action": "call", "tool": "Time MCP:convert_time", "arguments": utc_to("Asia/Tokyo")}
        ]}}
    ]));
    // Nothing could be simulated, so there is no plan: the run fails, saying so.
    let (ev, _) = run_ending(
        dir.path(),
        &llm,
        "spiral",
        &[
            "--world-model",
            "llm",
            "--iterations",
            "1",
            "--candidates",
            "2",
        ],
        1,
    );
    let last = ev.last().unwrap();
    assert_eq!(last["status"], "failed");
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .contains("world model could not simulate")
    );
    let wm_calls: Vec<&Value> = of_kind(&ev, "llm_call")
        .into_iter()
        .filter(|e| e["role"] == "world_model")
        .collect();
    assert!(!wm_calls.is_empty(), "the world model was asked");
    for call in &wm_calls {
        assert!(
            call["error"]
                .as_str()
                .unwrap_or_default()
                .contains("not JSON"),
            "{call}"
        );
        assert!(call["prompt_tokens"].as_u64().unwrap() > 0, "{call}");
        assert!(call["completion_tokens"].as_u64().unwrap() > 0, "{call}");
    }
    assert!(of_kind(&ev, "node_simulated").is_empty(), "no prediction");
}
