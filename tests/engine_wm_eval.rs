//! `cosmos wm-eval` end to end: the real binary over the committed sample runs, the `memory`
//! world model and an `llm` world model named in cosmos.toml on the scripted endpoint over HTTP.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::*;

#[test]
fn wm_eval_prints_the_leaderboard_shape_and_writes_a_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    // A world model that answers every call with a plausible time conversion, and fails the
    // calls that ask for a zone it does not know.
    let llm = ScriptedLlm::start(json!([
        {"when": ["You simulate an MCP server", "Mars"], "content": predicted("Invalid timezone", true)},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"timezone":"UTC","datetime":"2026-11-30T09:00:00+00:00","day_of_week":"Monday","is_dst":false}"#, false)}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[world_models.scripted]\nkind = \"llm\"\nbase_url = \"{}\"\nmodel = \"wm-model\"\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let out = dir.path().join("out");
    let args = [
        "wm-eval",
        samples.to_str().unwrap(),
        "--world-model",
        "memory",
        "--world-model",
        "scripted",
        "--config",
        config.to_str().unwrap(),
        "--format",
        "json",
        "--concurrency",
        "8",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = cosmos(&args, &llm, "sk-test-wm-eval-0123456789");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("stdout is the JSON document");
    let models = doc["world_models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(models[0]["name"], "memory");
    assert_eq!(models[1]["name"], "scripted");
    for m in models {
        assert!(m["n"].as_u64().unwrap() > 0, "{m}");
        assert!(m["fidelity"]["mean"].is_number(), "{m}");
        assert!(m["fidelity"]["ci"].is_array(), "{m}");
        let e = &m["error_prediction"];
        assert!(e.get("precision").is_some() && e.get("recall").is_some() && e.get("f1").is_some());
        assert!(!m["by_tool"].as_array().unwrap().is_empty());
    }
    // The sample runs hold failed calls: both world models are measured on foreseeing them.
    assert!(models[0]["error_prediction"]["recall"].is_number());
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1);
    let p = &pairs[0];
    assert_eq!(
        (p["a"].as_str(), p["b"].as_str()),
        (Some("memory"), Some("scripted"))
    );
    assert!(p["n"].as_u64().unwrap() > 0);
    assert_eq!(
        p["wins"].as_u64().unwrap() + p["ties"].as_u64().unwrap() + p["losses"].as_u64().unwrap(),
        p["n"].as_u64().unwrap()
    );
    assert!(p["ci"].is_array());
    // Every simulation went to the named world model's own model.
    assert!(
        llm.requests()
            .iter()
            .all(|r| r["body"]["model"] == "wm-model")
    );

    // The simulations are a trajectory the other commands read.
    let file = only_run(&out);
    let validate = cosmos(&["validate", file.to_str().unwrap()], &llm, "x");
    assert_eq!(validate.status.code(), Some(0), "{}", text(&validate));
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["agent"]["kind"], "wm_eval");
    let calls = lines.iter().filter(|e| e["kind"] == "tool_called").count();
    let sims = lines
        .iter()
        .filter(|e| e["kind"] == "call_simulated")
        .count();
    let failures = lines
        .iter()
        .filter(|e| e["kind"] == "error" && e["source"] == "world_model")
        .count();
    assert_eq!(
        sims + failures,
        2 * calls,
        "every call, every world model: a prediction or an error"
    );
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("sk-test-wm-eval"),
        "no key in the file"
    );
}

#[test]
fn decision_fidelity_asks_the_planner_given_the_real_result_and_each_simulation() {
    let dir = tempfile::tempdir().unwrap();
    // The world model's simulations carry a marker; a planner that sees it finishes, one that
    // sees a real result (or memory's recorded one) calls the clock.
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "content": predicted(r#"{"note":"SIMULATED-BY-SCRIPT"}"#, false)},
        {"when": ["next action", "SIMULATED-BY-SCRIPT"], "content": finish("done")},
        {"when": "next action", "content": call("Time MCP:get_current_time", json!({"timezone": "UTC"}))}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[default]\nbase_url = \"{}\"\nmodel = \"planner-model\"\n[world_models.scripted]\nkind = \"llm\"\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let out = dir.path().join("out");
    let output = cosmos(
        &[
            "wm-eval",
            samples.to_str().unwrap(),
            "--world-model",
            "memory",
            "--world-model",
            "scripted",
            "--config",
            config.to_str().unwrap(),
            "--decision",
            "--format",
            "json",
            "--out",
            out.to_str().unwrap(),
        ],
        &llm,
        "sk-test-decisions-0123456789",
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let memory = &doc["world_models"][0]["decision"];
    let scripted = &doc["world_models"][1]["decision"];
    assert!(memory["n"].as_u64().unwrap() > 0, "{doc}");
    assert_eq!(
        memory["same"], memory["n"],
        "recorded results lead to the real decision"
    );
    assert_eq!(
        scripted["same"], 0,
        "the marked simulations lead elsewhere: {scripted}"
    );
    assert!(scripted["rate"]["ci"].is_array());
    // The decisions are in the file, the real one first after each call.
    let file = only_run(&out);
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decided: Vec<&Value> = lines
        .iter()
        .filter(|e| e["kind"] == "planner_decided")
        .collect();
    assert!(decided.iter().any(|e| {
        e["given"] == "real"
            && e["decision"]
                .as_str()
                .unwrap()
                .starts_with("call Time MCP:get_current_time")
    }));
    assert!(
        decided
            .iter()
            .any(|e| e["given"] == "scripted" && e["decision"] == "finish")
    );
    assert!(
        lines
            .iter()
            .any(|e| e["kind"] == "llm_call" && e["role"] == "planner")
    );
}
