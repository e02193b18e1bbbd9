//! The `traces` world model on sessions recorded through `cosmos proxy` from a real server
//! (the PyPI Unit Converter): 30 client sessions of 12 random conversions each, values never
//! repeated. `traces` must predict what the recordings determine (mean fidelity ≥ 0.9, where
//! `memory`, which recalls only repeated calls, cannot), and the guarantee must trust the
//! tool whose results are an affine function of the value.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::support::*;

/// `sessions` × `calls` conversions (tests/support/unit_sessions.py, the generator the
/// measuring script uses too), no value used twice.
fn conversions(sessions: usize, calls: usize) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/unit_sessions.py");
    let out = Command::new(python())
        .arg(script)
        .args([sessions.to_string(), calls.to_string(), "75".into()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Records the sessions through one `cosmos proxy --http` over the Unit Converter into
/// `dir/sessions`.
fn record_sessions(dir: &Path) -> PathBuf {
    let mcp = write_mcp_config(
        dir,
        json!({"Unit Converter": bench_servers()["Unit Converter"].clone()}),
    );
    let out = dir.join("sessions");
    let mut proxy = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["proxy", "--mcp-config"])
        .arg(&mcp)
        .arg("--out")
        .arg(&out)
        .args(["--http", "127.0.0.1:0"])
        .env("COSMOS_LOG_FILE", dir.join("proxy.log"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = listening_url(&mut proxy);
    let sessions = conversions(30, 12);
    let answer = run_client(
        &python(),
        "mcp_client.py",
        json!({"transport": "http", "url": url, "sessions": sessions}),
    );
    for session in answer["sessions"].as_array().unwrap() {
        for result in session["results"].as_array().unwrap() {
            assert_eq!(result["isError"], false, "{result}");
        }
    }
    stop(&mut proxy);
    out
}

#[test]
fn traces_predicts_held_out_conversions_and_the_guarantee_trusts_temperature() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = record_sessions(dir.path());
    let runs = runs_in(&sessions);
    assert_eq!(runs.len(), 30, "one run per client session");

    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .arg("wm-eval")
        .arg(&sessions)
        .args(["--world-model", "memory", "--world-model", "traces"])
        .args(["--format", "json", "--out"])
        .arg(dir.path().join("eval"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mean = |i: usize| doc["world_models"][i]["fidelity"]["mean"].as_f64().unwrap();
    assert_eq!(doc["world_models"][0]["name"], "memory");
    assert_eq!(doc["world_models"][1]["name"], "traces");
    assert_eq!(doc["world_models"][1]["n"], 360, "{doc}");
    eprintln!("mean fidelity: memory {}, traces {}", mean(0), mean(1));
    assert!(mean(1) >= 0.9, "traces: {}", mean(1));
    assert!(
        mean(0) < mean(1),
        "memory {} against traces {}",
        mean(0),
        mean(1)
    );

    let routing = dir.path().join("routing.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .arg("wm-eval")
        .arg(&sessions)
        .args(["--world-model", "traces", "--target-error", "0.1"])
        .arg("--routing-out")
        .arg(&routing)
        .arg("--out")
        .arg(dir.path().join("eval"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // It says how much the thresholds trust: here every tool, so every prediction.
    assert!(
        text(&out).contains("they trust 360 of the 360 predictions with a confidence (100.0%)"),
        "{}",
        text(&out)
    );
    let file: toml::Table = std::fs::read_to_string(&routing).unwrap().parse().unwrap();
    // Trusted: a threshold, under a bound within the target (an untrusted tool has
    // `trust = false` and no threshold).
    let temperature = file
        .get("tools")
        .and_then(|t| t.get("Unit Converter:convert_temperature"))
        .unwrap_or_else(|| panic!("{file}"));
    assert!(temperature.get("go_real_below").is_some(), "{file}");
    assert!(temperature["bound"].as_float().unwrap() <= 0.1, "{file}");

    // A client served from the recordings: a hybrid proxy answers conversions it never saw
    // from the traces where the routing file trusts them, right; simulate mode answers all.
    let new_calls = json!([
        {"name": "convert_temperature", "arguments": {"value": 1234.5, "from_unit": "celsius", "to_unit": "fahrenheit"}},
        {"name": "convert_temperature", "arguments": {"value": 300.25, "from_unit": "kelvin", "to_unit": "celsius"}},
        {"name": "convert_mass", "arguments": {"value": 3.0, "from_unit": "kilogram", "to_unit": "pound"}},
    ]);
    let hybrid = [
        "--mode",
        "hybrid",
        "--simulate-writes",
        "--routing",
        routing.to_str().unwrap(),
    ];
    let simulate = ["--mode", "simulate"];
    for (mode, extra) in [("hybrid", &hybrid[..]), ("simulate", &simulate[..])] {
        let answer = served_from_traces(dir.path(), &sessions, mode, extra, new_calls.clone());
        let results = answer["results"].as_array().unwrap();
        let converted = |i: usize| results[i]["structuredContent"]["converted_value"].as_f64();
        let want = [
            1234.5 * 9.0 / 5.0 + 32.0,
            300.25 - 273.15,
            3.0 * 2.204_622_621_8,
        ];
        for (i, want) in want.into_iter().enumerate() {
            let got = converted(i).unwrap_or_else(|| panic!("{mode}: {}", results[i]));
            assert!(
                (got - want).abs() <= 0.01 * want.abs(),
                "{mode}: {got} for {want}"
            );
        }
        let simulated = |i: usize| results[i]["_meta"]["io.github.mcp-cosmos/simulated"] == true;
        assert!(simulated(0), "{mode}: {}", results[0]);
        assert!(simulated(2), "{mode}: {}", results[2]);
    }
}

/// `cosmos proxy --mode MODE --world-model traces --memory-from SESSIONS EXTRA…` over stdio to
/// the Unit Converter, driven by the SDK client making `calls`: its answer.
fn served_from_traces(
    dir: &Path,
    sessions: &Path,
    mode: &str,
    extra: &[&str],
    calls: Value,
) -> Value {
    let mcp = dir.join("mcp.json");
    let mut args = vec![
        "proxy".to_string(),
        "--mcp-config".into(),
        mcp.display().to_string(),
        "--out".into(),
        dir.join(format!("served-{mode}")).display().to_string(),
        "--world-model".into(),
        "traces".into(),
        "--memory-from".into(),
        sessions.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    run_client(
        &python(),
        "mcp_client.py",
        json!({
            "transport": "stdio",
            "command": env!("CARGO_BIN_EXE_cosmos"),
            "args": args,
            "env": {"COSMOS_LOG_FILE": dir.join(format!("{mode}.log")).display().to_string(), "PATH": std::env::var("PATH").unwrap_or_default()},
            "calls": calls,
        }),
    )
}

/// Stops the proxy as Ctrl-C would and waits for it (its sessions' files are finished).
fn stop(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    child.wait().unwrap();
}

/// `--memory-from` of `run` and `proxy` is read as wm-eval reads it: a FIFO (which would block
/// a reader for ever) and a file of no known format are clear errors before anything starts.
#[test]
fn memory_from_that_is_no_run_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), json!({}));
    let fifo = dir.path().join("fifo.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let garbage = dir.path().join("garbage.jsonl");
    std::fs::write(&garbage, "not json\n").unwrap();
    for (given, says) in [
        (&fifo, "not a regular file"),
        (&garbage, "not a format cosmos reads"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["proxy", "--mcp-config"])
            .arg(&mcp)
            .args([
                "--mode",
                "simulate",
                "--world-model",
                "traces",
                "--memory-from",
            ])
            .arg(given)
            .arg("--out")
            .arg(dir.path().join("out"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(says), "{}", text(&out));
    }
}
