//! One credential recogniser, held end to end: a key of every shape the recogniser knows,
//! planted in a server's arguments, environment and URL, in the planner's arguments and
//! answer and in a tool's result, is found in no file cosmos writes (the run with its
//! messages, the exports, the transitions, the log), in no OTLP payload a receiver captures,
//! and in no line any command prints.

use crate::otlp_sink;
use crate::support;

use std::path::Path;

use proptest::prelude::*;
use serde_json::json;
use support::*;

/// The endpoint's own key (a shape of its own).
const LLM_KEY: &str = "sk-test-DO-NOT-LEAK-0123456789abcdef";

/// A key prefix of every kind the recogniser knows (`trajectory::redact`), in mixed case.
const SHAPES: [&str; 12] = [
    "sk-",
    "sk_live_",
    "pk_test_",
    "ghp_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "AKIA",
    "AIza",
    "hf_",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.",
    "SK-",
];

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Plants `keys` (one of each shape) everywhere at once, runs and exports, and looks for them.
fn plant_and_search(keys: &[String]) {
    let key = &keys.join(" ");
    let dir = tempfile::tempdir().unwrap();
    let dead = dead_port();
    // The server's arguments, environment and a second server's URL carry the key.
    let mut flaky = flaky_server();
    for (i, k) in keys.iter().enumerate() {
        flaky["args"]
            .as_array_mut()
            .unwrap()
            .extend([json!("--token"), json!(k)]);
        flaky["env"][format!("FLAKY_TOKEN_{i}")] = json!(k);
    }
    let mcp = write_mcp_config(
        dir.path(),
        json!({
            "flaky": flaky,
            "remote": {"url": format!("http://127.0.0.1:{}/mcp?api_key={}", dead.port, keys[0])}
        }),
    );
    let tasks = dir.path().join("tasks.json");
    std::fs::write(
        &tasks,
        json!({"id": "echo", "request": "Echo the word.", "servers": ["flaky", "remote"]})
            .to_string(),
    )
    .unwrap();
    // The planner puts the key in its arguments and its answer; the tool echoes it back.
    let llm = ScriptedLlm::start(json!([
        {"when": "1. flaky:ok", "content": finish(&format!("the word was {key}"))},
        {"when": "No tool has been called yet", "content": call("flaky:ok", json!({"text": format!("use {key} now")}))}
    ]));
    let out = dir.path().join("out");
    let log = dir.path().join("cosmos.log");
    let (port, captured) = otlp_sink::start(true);
    let command = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(args)
            .env("OPENAI_BASE_URL", llm.base_url())
            .env("OPENAI_API_KEY", LLM_KEY)
            .env("COSMOS_MODEL", "scripted-model")
            .env("COSMOS_LOG_FILE", &log)
            .output()
            .unwrap()
    };
    let ran = command(&[
        "run",
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--task",
        tasks.to_str().unwrap(),
        "--agent",
        "react",
        "--out",
        out.to_str().unwrap(),
        "--no-tui",
        "--record-messages",
        "--otel-endpoint",
        &format!("http://127.0.0.1:{port}"),
    ]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let run = only_run(&out);
    let run_path = run.to_str().unwrap();
    // The planted key did reach the run: the tool echoed it, the planner answered with it.
    let events = std::fs::read_to_string(&run).unwrap();
    assert!(events.contains("ok: use [REDACTED]"), "{events}");
    let exports = dir.path().join("exports");
    let mut printed = vec![ran];
    printed.push(command(&["export", "markdown", run_path]));
    printed.push(command(&["export", "json", run_path]));
    printed.push(command(&[
        "export",
        "transitions",
        "--out",
        exports.to_str().unwrap(),
        run_path,
    ]));
    printed.push(command(&[
        "export",
        "otel",
        "--endpoint",
        &format!("http://127.0.0.1:{port}"),
        run_path,
    ]));
    printed.push(command(&["report", out.to_str().unwrap()]));
    printed.push(command(&["servers", "--mcp-config", mcp.to_str().unwrap()]));
    printed.push(command(&["validate", run_path]));
    // The distinctive end of each key: a prefix alone is not a leak.
    for secret in keys.iter().map(String::as_str).chain([LLM_KEY]) {
        let tail = &secret[secret.len() - 12..];
        for file in files_under(dir.path()) {
            if file == mcp || file == tasks {
                continue; // the user's own configuration
            }
            let bytes = std::fs::read(&file).unwrap();
            assert!(!holds(&bytes, tail), "{tail} in {}", file.display());
        }
        for output in &printed {
            assert!(
                !holds(&output.stdout, tail),
                "{tail} printed: {}",
                text(output)
            );
            assert!(
                !holds(&output.stderr, tail),
                "{tail} printed: {}",
                text(output)
            );
        }
        assert!(
            !holds(&captured.lock().unwrap(), tail),
            "{tail} in an OTLP payload"
        );
    }
    assert!(
        !captured.lock().unwrap().is_empty(),
        "the receiver got the traces"
    );
}

proptest! {
    // Every shape is planted in every case (a case is a whole run and its exports).
    #![proptest_config(ProptestConfig { cases: 2, ..ProptestConfig::default() })]

    #[test]
    fn a_key_of_any_shape_planted_anywhere_is_written_and_printed_nowhere(
        tails in prop::collection::vec("[A-Za-z0-9]{20,28}", SHAPES.len()),
    ) {
        let keys: Vec<String> = SHAPES.iter().zip(&tails).map(|(s, t)| format!("{s}{t}")).collect();
        plant_and_search(&keys);
    }
}
