//! `cosmos run` end to end: real MCP servers, the scripted LLM endpoint over HTTP, the
//! trajectory validated and reported; and runs that meet faults.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

const KEY: &str = "sk-test-DO-NOT-LEAK-0123456789abcdef";

fn utc_to(target: &str) -> Value {
    json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": target})
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .skip(1)
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

fn finished(events: &[Value]) -> &Value {
    let last = events.last().unwrap();
    assert_eq!(last["kind"], "run_finished", "{last}");
    last
}

fn assert_valid(path: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "validate: {}", text(&out));
}

fn assert_no_key_anywhere(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() {
            let bytes = std::fs::read(&p).unwrap();
            assert!(
                !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
                "API key found in {}",
                p.display()
            );
        }
    }
}

fn run_args(mcp: &str, out: &str, agent: &str, extra: &[&str]) -> Vec<String> {
    cosmos_run_args(Path::new(mcp), Path::new(out), "time_mcp_000", agent, extra)
}

#[test]
fn react_then_plan_exec_with_llm_and_memory_world_models() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let mcp = mcp.to_str().unwrap();

    // ReAct: two real calls, then the planner's answer.
    let react_out = dir.path().join("react");
    let llm = ScriptedLlm::start(json!([
        {"when": "2. Time MCP:convert_time", "content": finish("09:00 UTC is 04:00 in New York and 18:00 in Tokyo.")},
        {"when": "1. Time MCP:convert_time", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("America/New_York"))}
    ]));
    let out = cosmos(
        &run_args(mcp, react_out.to_str().unwrap(), "react", &[]),
        &llm,
        KEY,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("tool_called") && text(&out).contains("done: completed"),
        "{}",
        text(&out)
    );
    let react_file = only_run(&react_out);
    let ev = events(&react_file);
    assert_eq!(ev[0]["task"]["id"], "time_mcp_000");
    assert!(
        ev[0]["task"]["request"]
            .as_str()
            .unwrap()
            .starts_with("Hey, I’m trying to schedule")
    );
    assert_eq!(ev[0]["planner"]["model"], "scripted-model");
    assert_eq!(ev[0]["world_model"], Value::Null);
    let tools: Vec<&str> = ev[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        !tools.contains(&"Unit Converter:convert_time"),
        "only the task's servers: {tools:?}"
    );
    let calls: Vec<&Value> = ev.iter().filter(|e| e["kind"] == "tool_called").collect();
    assert_eq!(calls.len(), 2);
    assert!(
        calls[0]["result"]["text"]
            .as_str()
            .unwrap()
            .contains("America/New_York")
    );
    assert_eq!(finished(&ev)["status"], "completed");
    assert_eq!(finished(&ev)["totals"]["tool_calls"], 2);
    assert!(
        llm.requests()
            .iter()
            .all(|r| r["headers"]["authorization"] == format!("Bearer {KEY}"))
    );
    assert_valid(&react_file);

    // ReAct-Plan-Exec with the llm world model: the second planned call fails for real.
    let pe_out = dir.path().join("plan-exec");
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "New York: 04:00. Tokyo could not be converted."},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"source":{"timezone":"UTC","datetime":"2026-11-29T09:00:00+00:00"},"target":{"timezone":"America/New_York","datetime":"2026-11-29T04:00:00-05:00"}}"#, false)},
        {"when": "2. Time MCP:convert_time", "content": finish("")},
        {"when": "1. Time MCP:convert_time", "content": call("Time MCP:convert_time", utc_to("Asia/Tokio"))},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("America/New_York"))}
    ]));
    let out = cosmos(
        &run_args(
            mcp,
            pe_out.to_str().unwrap(),
            "plan-exec",
            &["--world-model", "llm"],
        ),
        &llm,
        KEY,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let pe_file = only_run(&pe_out);
    let ev = events(&pe_file);
    assert_eq!(ev[0]["world_model"]["name"], "llm");
    let k = kinds(&ev);
    let plan_at = k.iter().position(|x| x == "plan_selected").unwrap();
    assert!(
        k[..plan_at]
            .iter()
            .filter(|x| *x == "node_simulated")
            .count()
            == 2,
        "{k:?}"
    );
    assert!(
        k[..plan_at].iter().all(|x| x != "tool_called"),
        "no real call while planning: {k:?}"
    );
    let calls: Vec<&Value> = ev.iter().filter(|e| e["kind"] == "tool_called").collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["node"], 1);
    assert_eq!(calls[1]["node"], 2);
    assert_eq!(
        calls[1]["result"]["is_error"], true,
        "Asia/Tokio is not a timezone: {}",
        calls[1]
    );
    let roles: Vec<&str> = ev
        .iter()
        .filter(|e| e["kind"] == "llm_call")
        .map(|e| e["role"].as_str().unwrap())
        .collect();
    assert!(
        roles.contains(&"planner")
            && roles.contains(&"world_model")
            && roles.contains(&"summarizer"),
        "{roles:?}"
    );
    assert!(ev.iter().any(|e| {
        e["kind"] == "answer"
            && e["text"]
                .as_str()
                .unwrap()
                .contains("could not be converted")
    }));
    assert!(finished(&ev)["totals"]["fidelity"].is_number());
    assert_valid(&pe_file);

    // ReAct-Plan-Exec with the memory world model built from the ReAct run's real calls.
    let mem_out = dir.path().join("memory");
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "New York is at 04:00."},
        {"when": "1. Time MCP:convert_time", "content": finish("")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("America/New_York"))}
    ]));
    let out = cosmos(
        &run_args(
            mcp,
            mem_out.to_str().unwrap(),
            "plan-exec",
            &[
                "--world-model",
                "memory",
                "--memory-from",
                react_out.to_str().unwrap(),
            ],
        ),
        &llm,
        KEY,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mem_file = only_run(&mem_out);
    let ev = events(&mem_file);
    assert_eq!(ev[0]["world_model"]["name"], "memory");
    assert_eq!(ev[0]["world_model"]["transitions"], 2);
    // The exact call was recorded, so the prediction is the real result: fidelity on error and structure is 1.
    let sim = ev.iter().find(|e| e["kind"] == "node_simulated").unwrap();
    let real = ev.iter().find(|e| e["kind"] == "tool_called").unwrap();
    let sim_json: Value =
        serde_json::from_str(sim["observation"]["text"].as_str().unwrap()).unwrap();
    let real_json: Value = serde_json::from_str(real["result"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        sim_json["target"]["timezone"],
        real_json["target"]["timezone"]
    );
    assert_valid(&mem_file);

    // Report over all three: one row per configuration, with fidelity where there was a world model.
    let all = [
        react_out.to_str().unwrap(),
        pe_out.to_str().unwrap(),
        mem_out.to_str().unwrap(),
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .arg("report")
        .args(all)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let keys: Vec<&str> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        vec![
            "plan_exec / llm / scripted-model",
            "plan_exec / memory / scripted-model",
            "react / none / scripted-model"
        ]
    );
    assert_eq!(doc["groups"][0]["tool_call_success_rate"]["mean"], 0.5);
    assert!(doc["groups"][0]["fidelity"]["mean"].is_number());
    assert_eq!(doc["groups"][2]["fidelity"], Value::Null);

    for d in [&react_out, &pe_out, &mem_out] {
        assert_no_key_anywhere(d);
    }
}

#[test]
fn command_world_model_from_the_docs() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/world-models.md"))
        .unwrap();
    let code = doc
        .split("```python\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a python example");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("wm.py");
    std::fs::write(&script, code).unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out_dir = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "done"},
        {"when": "1. Time MCP:get_current_time", "content": finish("")},
        {"when": "No tool has been called yet", "content": call("Time MCP:get_current_time", json!({"timezone": "Europe/Paris"}))}
    ]));
    let cmd = format!("python3 {}", script.display());
    let out = cosmos(
        &run_args(
            mcp.to_str().unwrap(),
            out_dir.to_str().unwrap(),
            "plan-exec",
            &[
                "--world-model",
                "command",
                "--world-model-command",
                &cmd,
                "--cache-world-model",
            ],
        ),
        &llm,
        KEY,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = events(&only_run(&out_dir));
    assert_eq!(ev[0]["world_model"]["name"], "cached(command)");
    let sim = ev.iter().find(|e| e["kind"] == "node_simulated").unwrap();
    assert_eq!(sim["world_model"], "cached(command)");
    assert!(
        sim["observation"]["text"]
            .as_str()
            .unwrap()
            .contains("\"echo\": {\"timezone\": \"Europe/Paris\"}"),
        "{sim}"
    );
}

#[test]
fn kill_9_of_cosmos_leaves_no_process_of_a_command_world_model() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("wm.pid");
    // A world model that says who it is, then never answers.
    let script = dir.path().join("wm.py");
    std::fs::write(
        &script,
        format!(
            "import os, sys, time\nopen({:?}, 'w').write(str(os.getpid()))\nsys.stdin.readline()\ntime.sleep(3600)\n",
            pid_file.display().to_string()
        ),
    )
    .unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out_dir = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([
        {"when": "No tool has been called yet", "content": call("Time MCP:get_current_time", json!({"timezone": "UTC"}))}
    ]));
    let cmd = format!("python3 {}", script.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(run_args(
            mcp.to_str().unwrap(),
            out_dir.to_str().unwrap(),
            "plan-exec",
            &["--world-model", "command", "--world-model-command", &cmd],
        ))
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let wm_pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the world model never started");
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap(); // SIGKILL: cosmos gets no chance to stop anything itself.
    child.wait().unwrap();
    // Gone, or a zombie nobody reaps (its parent `sh` was killed with it).
    assert!(
        ends_within(&wm_pid.to_string(), Duration::from_secs(5)),
        "the world model {wm_pid} outlived cosmos"
    );
}

#[test]
fn a_server_that_dies_or_hangs_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let (args, out_dir) = flaky_run(dir.path(), json!({}), "react", &["--call-timeout-s", "2"]);
    let llm = ScriptedLlm::start(json!([
        {"when": "3. flaky:", "content": finish("the server died")},
        {"when": "2. flaky:hang", "content": call("flaky:die", json!({"text": "x"}))},
        {"when": "1. flaky:ok", "content": call("flaky:hang", json!({"text": "x"}))},
        {"when": "No tool has been called yet", "content": call("flaky:ok", json!({"text": "x"}))}
    ]));
    let out = cosmos(&args, &llm, KEY);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let file = only_run(&out_dir);
    let ev = events(&file);
    let calls: Vec<&Value> = ev.iter().filter(|e| e["kind"] == "tool_called").collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0]["result"]["text"], "ok: x");
    assert!(
        calls[1]["error"]
            .as_str()
            .unwrap()
            .contains("timed out after 2s")
    );
    assert!(calls[2]["error"].is_string());
    let died = ev
        .iter()
        .find(|e| e["kind"] == "error" && e["source"] == "server")
        .expect("an error event for the dead server");
    assert!(
        died["stderr_tail"]
            .as_str()
            .unwrap()
            .contains("dying on purpose"),
        "{died}"
    );
    assert_eq!(finished(&ev)["status"], "completed");
    assert_eq!(finished(&ev)["totals"]["tool_errors"], 2);
    assert_valid(&file);
}

#[test]
fn an_endpoint_that_always_fails_ends_the_run_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let cfg = dir.path().join("cosmos.toml");
    std::fs::write(&cfg, "[default]\nmax_retries = 1\ntimeout_s = 5\n").unwrap();
    let out_dir = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([{"status": 500, "raw": "model crashed"}]));
    let out = cosmos(
        &run_args(
            mcp.to_str().unwrap(),
            out_dir.to_str().unwrap(),
            "react",
            &["--config", cfg.to_str().unwrap()],
        ),
        &llm,
        KEY,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("run failed (planner failed:") && text(&out).contains("HTTP 500"),
        "{}",
        text(&out)
    );
    let file = only_run(&out_dir);
    let ev = events(&file);
    let llm_call = ev.iter().find(|e| e["kind"] == "llm_call").unwrap();
    assert!(
        llm_call["error"]
            .as_str()
            .unwrap()
            .contains("after 2 attempts")
    );
    assert_eq!(finished(&ev)["status"], "failed");
    assert_valid(&file);
}

/// Sends `signal` while the planner's request is in flight; the run must end as interrupted,
/// quickly. Returns the stop latency (signal to exit).
fn interrupt_with(signal: &str, agent: &str) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out_dir = dir.path().join("out");
    // The planner takes 30 s to answer: the signal arrives while the run waits on it.
    let llm = ScriptedLlm::start(json!([{"delay_s": 30, "content": finish("late")}]));
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(run_args(
            mcp.to_str().unwrap(),
            out_dir.to_str().unwrap(),
            agent,
            if agent == "spiral" {
                &["--world-model", "llm"]
            } else {
                &[]
            },
        ))
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join(format!("cosmos-test-{}.log", std::process::id())),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // Wait until the planner's request is in flight.
    while llm.requests().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run never asked the planner"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, latency) = signal_and_wait(&mut child, signal, Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    let file = only_run(&out_dir);
    let ev = events(&file);
    assert_eq!(finished(&ev)["status"], "interrupted");
    assert_eq!(finished(&ev)["ending"], "interrupted");
    assert_valid(&file);
    if agent == "spiral" {
        // The search was cut mid-way, and still says how it ended.
        let searches: Vec<&Value> = ev
            .iter()
            .filter(|e| e["kind"] == "search_finished")
            .collect();
        assert_eq!(searches.len(), 1, "{ev:?}");
        assert_eq!(searches[0]["stopped"], "interrupted");
        assert!(!ev.iter().any(|e| e["kind"] == "plan_selected"));
        // And the report counts the run as interrupted, not as a search that used its
        // iterations.
        let report = Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["report", out_dir.to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&report.stdout).unwrap();
        assert_eq!(
            doc["groups"][0]["endings"],
            json!({"interrupted": 1}),
            "{doc}"
        );
    }
    // The request in flight was cancelled, and no new one started after the stop.
    let asked = llm.requests().len();
    assert_eq!(asked, 1, "{agent}: {asked} LLM requests");
    // A generous bound; the figure is printed for the record.
    eprintln!("{agent} stopped {latency:?} after {signal}");
    assert!(
        latency < Duration::from_secs(5),
        "{agent}: {latency:?} to stop on {signal}"
    );
    latency
}

#[test]
fn sighup_and_a_stop_during_spirals_llm_call_end_the_run_quickly() {
    interrupt_with("-HUP", "react");
    interrupt_with("-INT", "spiral");
}

#[test]
fn sigint_ends_the_run_as_interrupted() {
    interrupt_with("-INT", "react");
}

#[test]
fn sigterm_ends_the_run_as_interrupted() {
    interrupt_with("-TERM", "react");
}

#[test]
fn a_task_naming_a_server_the_config_lacks_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), json!({"time": {"command": "true"}}));
    let llm = ScriptedLlm::start(json!([]));
    let out = cosmos(
        &run_args(
            mcp.to_str().unwrap(),
            dir.path().to_str().unwrap(),
            "react",
            &[],
        ),
        &llm,
        KEY,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("no server named \"Time MCP\" in the MCP config; it has: \"time\""),
        "{}",
        text(&out)
    );
}

#[test]
fn the_example_config_parses() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/cosmos.example.toml"));
    let config = cosmos_engine::config::Config::load(Some(path)).unwrap();
    let search = cosmos_engine::agent::Settings::from_config(&config).unwrap();
    assert_eq!(
        config.judge.trials,
        Some(1),
        "the example shows the judge's default"
    );
    assert_eq!(
        search,
        cosmos_engine::agent::Settings::default(),
        "the example shows the defaults"
    );
}

/// The judge's reply in the shape the rubric asks for: six reasonings, then six scores.
fn judge_reply(scores: [f64; 6]) -> Value {
    let mut reply = json!({});
    for d in cosmos_engine::judge::DIMENSIONS {
        reply[format!("{d}_reasoning")] = json!(format!("{d}: counted the defects"));
    }
    for (d, s) in cosmos_engine::judge::DIMENSIONS.iter().zip(scores) {
        reply[*d] = json!(s);
    }
    reply
}

/// A finished ReAct run of `time_mcp_000` (one call, then an answer) under `dir`/out, with an
/// endpoint that also answers the judge with `judge_rules` (tried first).
fn judged_later(dir: &Path, judge_rules: Vec<Value>) -> (ScriptedLlm, PathBuf) {
    let mcp = write_mcp_config(dir, bench_servers());
    let out_dir = dir.join("out");
    let mut rules = judge_rules;
    rules.push(
        json!({"when": "1. Time MCP:convert_time", "content": finish("It is 04:00 in New York.")}),
    );
    rules.push(json!({"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("America/New_York"))}));
    let llm = ScriptedLlm::start(Value::Array(rules));
    let out = cosmos(
        &run_args(
            mcp.to_str().unwrap(),
            out_dir.to_str().unwrap(),
            "react",
            &[],
        ),
        &llm,
        KEY,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let file = only_run(&out_dir);
    (llm, file)
}

/// The judge's requests the scripted endpoint received, in order, as their user message.
fn judge_requests(llm: &ScriptedLlm) -> Vec<String> {
    llm.requests()
        .into_iter()
        .filter(|r| r["body"].to_string().contains("You grade how"))
        .map(|r| {
            r["body"]["messages"][1]["content"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn judge_appends_scores_that_report_and_listing_read() {
    let dir = tempfile::tempdir().unwrap();
    let (llm, file) = judged_later(
        dir.path(),
        vec![
            json!({"when": "You grade how", "content": judge_reply([8.0, 6.0, 9.0, 7.0, 4.0, 2.0])}),
        ],
    );
    let out_dir = dir.path().join("out");
    let report = || {
        let r = Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["report", out_dir.to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&r.stdout).unwrap()["groups"][0].clone()
    };
    let before = report();
    assert!(before["tokens"]["mean"].as_f64().unwrap() > 0.0);
    assert!(before["judge_tokens"].is_null());

    let judged = cosmos(&["judge", file.to_str().unwrap()], &llm, KEY);
    assert_eq!(judged.status.code(), Some(0), "{}", text(&judged));
    assert!(
        text(&judged).contains(
            "task completion 7.0, tool selection 8.0, planning 3.0, overall 6.0 (1 of 1 trial)"
        ),
        "{}",
        text(&judged)
    );
    // MCP-Bench's evidence: the vague task the agent saw, the concrete one, the dependency
    // analysis, every available tool, the execution summary, the rounds and the answer.
    let sent = &judge_requests(&llm)[0];
    let header = &events(&file)[0];
    for needle in [
        "Hey, I’m trying to schedule a one-hour global strategy call",
        "A global strategy team needs to decide",
        "## Dependency analysis (for judging only)",
        "Time MCP:get_current_time must run first for each timezone",
        "Rounds: 1; calls: 1; succeeded: 1; failed: 0",
        "Round 1: `Time MCP:convert_time` on Time MCP with arguments",
        "## Total rounds\n1\n",
        "It is 04:00 in New York.",
    ] {
        assert!(
            sent.contains(needle),
            "the judge is shown {needle:?}:\n{sent}"
        );
    }
    let tools = header["tools"].as_array().unwrap();
    assert!(tools.len() >= 2);
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(sent.contains(&format!("  - {name}: ")), "{name} is listed");
    }
    assert_eq!(
        header["task"]["dependency_analysis"]
            .as_str()
            .map(|d| d.starts_with("Inherent dependencies")),
        Some(true),
        "the header keeps the task's dependency analysis"
    );

    // Appended after run_finished, without warnings; the listing still finds the totals.
    let ev = events(&file);
    let k = kinds(&ev);
    assert_eq!(
        &k[k.len() - 4..],
        ["run_finished", "phase", "llm_call", "judge_scored"]
    );
    let judging = &ev.last().unwrap()["judging"];
    assert_eq!(judging["rubric"], cosmos_engine::judge::RUBRIC);
    assert_eq!(
        judging["evidence"],
        json!({"concrete_task": true, "dependency_analysis": true, "tools": tools.len(), "rounds": 1})
    );
    assert_eq!(
        ev.last().unwrap()["scores"]["grounding"]["reason"],
        "grounding: counted the defects"
    );
    let v = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        text(&v).contains("0 with errors, 0 warning(s)"),
        "{}",
        text(&v)
    );
    let listed = cosmos_trajectory::listing::RunSummary::read(&file);
    assert_eq!(listed.status_label(), "completed");
    assert_eq!(listed.finished.unwrap().totals.tool_calls, 1);

    let g = &report();
    // The judge evaluates the run: its tokens are reported apart, the run's stay put.
    assert_eq!(g["tokens"], before["tokens"]);
    assert!(g["judge_tokens"]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(g["task_completion"]["mean"], 7.0);
    assert_eq!(g["overall"]["mean"], 6.0);
    // New Overall adds Execution Quality/10: a cohort of one, SR 1 → EQ 100 → (7+8+3+10)/4 = 7.
    assert_eq!(g["new_overall"]["mean"], 7.0);
    assert_eq!(g["judge_spread"]["judges"][0]["trials_max"], 1);

    // Judging again is skipped unless forced; forced, the run's tokens still stay put.
    let again = cosmos(&["judge", file.to_str().unwrap()], &llm, KEY);
    assert!(text(&again).contains("already judged"));
    let forced = cosmos(&["judge", "--force", file.to_str().unwrap()], &llm, KEY);
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    assert_eq!(report()["tokens"], before["tokens"]);
    assert_no_key_anywhere(&out_dir);
}

#[test]
fn judge_trials_shuffle_the_rubric_average_per_dimension_and_repeat_with_a_seed() {
    let dir = tempfile::tempdir().unwrap();
    // Five trials, each answering once; then any further request gets the last scores.
    let trials = [
        [4.0, 6.0, 7.0, 5.0, 3.0, 2.0],
        [5.0, 6.0, 7.0, 5.0, 3.0, 2.0],
        [6.0, 6.0, 8.0, 5.0, 4.0, 2.0],
        [5.0, 6.0, 8.0, 5.0, 4.0, 2.0],
        [5.0, 6.0, 5.0, 5.0, 1.0, 2.0],
    ];
    let mut rules: Vec<Value> = trials
        .iter()
        .map(|t| json!({"when": "You grade how", "times": 1, "content": judge_reply(*t)}))
        .collect();
    rules.push(json!({"when": "You grade how", "content": judge_reply(trials[4])}));
    let (llm, file) = judged_later(dir.path(), rules);
    let copy = dir.path().join("copy.jsonl");
    std::fs::copy(&file, &copy).unwrap();

    let judged = cosmos(
        &[
            "judge",
            "--trials",
            "5",
            "--seed",
            "42",
            file.to_str().unwrap(),
        ],
        &llm,
        KEY,
    );
    assert_eq!(judged.status.code(), Some(0), "{}", text(&judged));
    assert!(
        text(&judged).contains("(5 of 5 trials)"),
        "{}",
        text(&judged)
    );
    let prompts = judge_requests(&llm);
    assert_eq!(prompts.len(), 5, "five requests");
    let ev = events(&file);
    assert_eq!(
        ev.iter()
            .filter(|e| e["kind"] == "llm_call" && e["role"] == "judge")
            .count(),
        5,
        "an llm_call per trial"
    );
    let judging = &ev.last().unwrap()["judging"];
    assert_eq!(judging["seed"], 42);
    let recorded = judging["trials"].as_array().unwrap();
    assert_eq!(recorded.len(), 5);
    let orders: std::collections::BTreeSet<String> =
        recorded.iter().map(|t| t["order"].to_string()).collect();
    assert_eq!(
        orders.len(),
        5,
        "each trial shows the rubric in its own order"
    );
    for (trial, prompt) in recorded.iter().zip(&prompts) {
        // The recorded order is the order the request showed.
        let shown: Vec<&str> = trial["order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap().split(':').next().unwrap())
            .collect();
        let mut by_place = shown.clone();
        by_place.sort_by_key(|d| prompt.find(&format!("({d})")).unwrap());
        assert_eq!(shown, by_place, "{prompt}");
    }
    // Hand-worked: the means are 5, 6, 7, 5, 3, 2; task completion (5+6)/2 = 5.5, tool
    // selection (7+5)/2 = 6, planning (3+2)/2 = 2.5, overall 14/3.
    let scores = &ev.last().unwrap()["scores"];
    let means: Vec<f64> = cosmos_engine::judge::DIMENSIONS
        .iter()
        .map(|d| scores[d]["score"].as_f64().unwrap())
        .collect();
    assert_eq!(means, [5.0, 6.0, 7.0, 5.0, 3.0, 2.0]);
    let spread = &judging["spread"];
    assert!((spread["task_fulfillment"].as_f64().unwrap() - 0.5f64.sqrt()).abs() < 1e-9);
    assert!((spread["tool_appropriateness"].as_f64().unwrap() - 1.5f64.sqrt()).abs() < 1e-9);
    assert_eq!(spread["grounding"], 0.0);
    let report = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "report",
            file.to_str().unwrap(),
            "--per-run",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let j = &report["per_run"][0]["metrics"]["judge"];
    assert_eq!(j["trials"], 5);
    assert_eq!(j["task_completion"], 5.5);
    assert_eq!(j["tool_selection"], 6.0);
    assert_eq!(j["planning_effectiveness"], 2.5);
    assert!((j["overall"].as_f64().unwrap() - 14.0 / 3.0).abs() < 1e-12);
    // The judge's own variance of task completion over the trials: per-trial values
    // 5, 5.5, 6, 5.5, 5.5 → sample variance 0.125.
    assert!((j["trial_variance"]["task_completion"].as_f64().unwrap() - 0.125).abs() < 1e-12);
    let table = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["report", file.to_str().unwrap(), "--format", "markdown"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("judge: scripted-model, 5 trials"), "{table}");
    assert!(table.contains("**Judge spread**"), "{table}");

    // The same seed gives the same five requests.
    let again = cosmos(
        &[
            "judge",
            "--trials",
            "5",
            "--seed",
            "42",
            copy.to_str().unwrap(),
        ],
        &llm,
        KEY,
    );
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let all = judge_requests(&llm);
    assert_eq!(all[5..], all[..5], "a fixed seed repeats the prompts");
    // --mcp-bench asks for MCP-Bench's five; --print-prompts shows them without sending.
    let shown = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "judge",
            "--mcp-bench",
            "--seed",
            "42",
            "--print-prompts",
            copy.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let lines: Vec<Value> = String::from_utf8_lossy(&shown.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["messages"][1]["content"].as_str().unwrap(), all[0]);
    assert_eq!(judge_requests(&llm).len(), 10, "printing sends nothing");
}

#[test]
fn a_history_too_long_for_the_judge_is_compressed_and_the_judgement_says_so() {
    use cosmos_trajectory::event::{
        AgentInfo, AgentKind, EventBody, Header, ModelInfo, Observation, RunStatus, TaskInfo,
    };
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    // Twelve calls whose results are long: each is cut to 4,000 characters, and the history
    // is still about 12,000 tokens, more than the 10,000 a compressed one aims at.
    let write = |name: &str| {
        let path = dir.path().join(name);
        let header = Header::new(
            "long",
            TaskInfo {
                id: "t".into(),
                request: "Convert twelve times.".into(),
                ..Default::default()
            },
            AgentInfo {
                kind: AgentKind::React,
                settings: Default::default(),
            },
            ModelInfo {
                model: "m".into(),
                base_url: None,
            },
        );
        let mut w = Writer::create(&path, &header, Redactor::new(), None).unwrap();
        for step in 1..=12u64 {
            w.write(
                step,
                EventBody::ToolCalled {
                    step,
                    tool: "time:convert_time".into(),
                    server: Some("time".into()),
                    arguments: Box::new(json!({"time": format!("{step:02}:00")})),
                    result: Observation {
                        text: format!("result {step} ").repeat(500),
                        ..Default::default()
                    },
                    latency_ms: 1,
                    node: None,
                    error: None,
                    origin: None,
                    state_change: None,
                },
            )
            .unwrap();
        }
        w.write(
            13,
            EventBody::Answer {
                text: "done".into(),
            },
        )
        .unwrap();
        w.write(
            14,
            EventBody::RunFinished {
                status: RunStatus::Completed,
                error: None,
                ending: None,
                totals: Default::default(),
                end_digest: Default::default(),
                state_match: Default::default(),
            },
        )
        .unwrap();
        path
    };
    let overflow = json!({"when": ["You grade how", "(cut from about"], "times": 1, "status": 400,
        "raw": "{\"error\": {\"message\": \"This model's maximum context length is 8192 tokens\"}}"});
    let scores = json!({"when": "You grade how", "content": judge_reply([5.0; 6])});

    // The judge's model shortens the history; the trial is asked again with it.
    let llm = ScriptedLlm::start(json!([
        overflow,
        {"when": "Shorten this execution history", "content": "ROUNDS 1-12: twelve conversions, all succeeded."},
        scores
    ]));
    let file = write("llm.jsonl");
    let out = cosmos(&["judge", file.to_str().unwrap()], &llm, KEY);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("compressed to fit"), "{}", text(&out));
    let ev = events(&file);
    let k = kinds(&ev);
    assert_eq!(
        &k[k.len() - 5..],
        ["phase", "llm_call", "llm_call", "llm_call", "judge_scored"]
    );
    assert!(
        ev[ev.len() - 4]["error"]
            .as_str()
            .unwrap()
            .contains("maximum context length")
    );
    let compressed = &ev.last().unwrap()["judging"]["evidence"]["compressed"];
    assert_eq!(compressed["by"], "llm");
    assert!(
        compressed["from_tokens"].as_u64().unwrap() > 10_000,
        "{compressed}"
    );
    assert!(
        compressed["to_tokens"].as_u64().unwrap() < 100,
        "{compressed}"
    );
    let prompts = judge_requests(&llm);
    assert!(
        prompts[1].contains("ROUNDS 1-12") && !prompts[1].contains("(cut from about"),
        "{} requests; the second: {}",
        prompts.len(),
        &prompts[1][..prompts[1].len().min(3000)]
    );

    // When the model cannot shorten it either, the history is cut to fit and says so.
    let llm = ScriptedLlm::start(json!([
        overflow,
        {"when": "Shorten this execution history", "status": 400, "raw": "{\"error\": {\"message\": \"bad request\"}}"},
        scores
    ]));
    let file = write("cut.jsonl");
    let out = cosmos(&["judge", file.to_str().unwrap()], &llm, KEY);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let ev = events(&file);
    let compressed = &ev.last().unwrap()["judging"]["evidence"]["compressed"];
    assert_eq!(compressed["by"], "truncated");
    assert!(judge_requests(&llm)[1].contains("[cut to fit the judge's context]"));
}

#[test]
fn a_judge_that_answers_garbage_is_recorded_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (llm, file) = judged_later(
        dir.path(),
        vec![json!({"when": "You grade how", "content": {"task_fulfillment": {"score": 42}}})],
    );
    let judged = cosmos(&["judge", file.to_str().unwrap()], &llm, KEY);
    assert_eq!(judged.status.code(), Some(1));
    assert!(text(&judged).contains("outside 0–10"), "{}", text(&judged));
    let ev = events(&file);
    assert_eq!(ev.last().unwrap()["kind"], "error");
    assert_valid(&file);
}

#[test]
fn record_messages_keeps_prompts_and_replies_with_secrets_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let mcp = mcp.to_str().unwrap();
    // The model echoes the key in its answer: the recorded reply must not keep it.
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish(&format!("04:00 in New York (key {KEY})"))},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("America/New_York"))}
    ]));
    let recorded = |out: &Path, extra: &[&str]| {
        let o = cosmos(
            &run_args(mcp, out.to_str().unwrap(), "react", extra),
            &llm,
            KEY,
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let ev = events(&only_run(out));
        ev.into_iter()
            .filter(|e| e["kind"] == "llm_call")
            .map(|e| e["messages"].clone())
            .collect::<Vec<Value>>()
    };

    let off = recorded(&dir.path().join("off"), &[]);
    assert!(!off.is_empty() && off.iter().all(Value::is_null), "{off:?}");

    let on_dir = dir.path().join("on");
    let on = recorded(&on_dir, &["--record-messages"]);
    assert_eq!(on.len(), 2);
    let first = on[0].as_array().expect("messages recorded");
    assert_eq!(first[0]["role"], "system");
    assert!(
        first[1]["content"]
            .as_str()
            .unwrap()
            .contains("No tool has been called yet")
    );
    let reply = first.last().unwrap();
    assert_eq!(reply["role"], "assistant");
    assert!(
        reply["content"]
            .as_str()
            .unwrap()
            .contains("America/New_York")
    );
    let second = on[1].as_array().unwrap();
    assert!(
        second.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("04:00 in New York")
    );
    assert_no_key_anywhere(&on_dir);
    assert_valid(&only_run(&on_dir));
}

#[test]
fn record_messages_covers_the_llm_world_model_too() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "New York: 04:00."},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"target":{"timezone":"America/New_York"}}"#, false)},
        {"when": "1. Time MCP:convert_time", "content": finish("")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("America/New_York"))}
    ]));
    let args = run_args(
        mcp.to_str().unwrap(),
        out.to_str().unwrap(),
        "plan-exec",
        &["--world-model", "llm", "--record-messages"],
    );
    let o = cosmos(&args, &llm, KEY);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let ev = events(&only_run(&out));
    let world_model_calls: Vec<&Value> = ev
        .iter()
        .filter(|e| e["kind"] == "llm_call" && e["role"] == "world_model")
        .collect();
    assert!(!world_model_calls.is_empty());
    for call in world_model_calls {
        let messages = call["messages"]
            .as_array()
            .expect("world model messages recorded");
        assert!(messages.iter().any(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .contains("You simulate an MCP server")
        }));
        let reply = messages.last().unwrap();
        assert_eq!(reply["role"], "assistant");
        assert!(
            reply["content"]
                .as_str()
                .unwrap()
                .contains("America/New_York")
        );
    }
}

#[test]
fn settings_out_of_range_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([]));
    for (flag, value, says) in [
        ("--alpha", "2", "alpha = 2.0: must be from 0 to 1"),
        ("--alpha", "NaN", "alpha = NaN"),
        ("--exploration", "inf", "c (--exploration) = inf"),
        ("--candidates", "0", "k (--candidates) = 0"),
        ("--concurrency", "0", "concurrency = 0"),
    ] {
        let args = run_args(
            "missing-mcp.json",
            out.to_str().unwrap(),
            "spiral",
            &["--world-model", "llm", flag, value],
        );
        let o = cosmos(&args, &llm, KEY);
        assert_eq!(o.status.code(), Some(1), "{flag} {value}: {}", text(&o));
        assert!(text(&o).contains(says), "{flag} {value}: {}", text(&o));
        assert!(!out.exists(), "no trajectory for a run that never started");
    }
    assert!(llm.requests().is_empty());
}

/// `cosmos run` against the flaky server with a 4 s budget; the wall time it took.
fn run_with_budget(
    dir: &Path,
    agent: &str,
    llm: &ScriptedLlm,
    extra: &[&str],
) -> (Vec<Value>, Duration) {
    let mut all = vec!["--max-time-s", "4", "--call-timeout-s", "60"];
    all.extend(extra);
    let (args, out_dir) = flaky_run(dir, json!({}), agent, &all);
    let start = Instant::now();
    let out = cosmos(&args, llm, KEY);
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let file = only_run(&out_dir);
    assert_valid(&file);
    (events(&file), took)
}

#[test]
fn a_time_budget_is_a_deadline_inside_a_hanging_call_and_a_slow_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    // Server start-up (1–2 s) is outside the budget; the budget is 4 s; 10 s of slack.
    let bound = Duration::from_secs(16);
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "content": predicted("ok", false)},
        {"when": "1. flaky:hang", "content": finish("")},
        {"when": "No tool has been called yet", "content": call("flaky:hang", json!({"text": "x"}))}
    ]));
    for agent in ["react", "plan-exec"] {
        let extra: &[&str] = if agent == "plan-exec" {
            &["--world-model", "llm"]
        } else {
            &[]
        };
        let (ev, took) = run_with_budget(dir.path(), agent, &llm, extra);
        assert!(took < bound, "{agent} took {took:?} with a 4 s budget");
        let cut = ev
            .iter()
            .find(|e| e["kind"] == "tool_called")
            .expect("the hanging call is recorded");
        assert!(
            cut["error"]
                .as_str()
                .unwrap()
                .contains("time budget of 4s spent"),
            "{cut}"
        );
        let end = finished(&ev);
        assert_eq!(end["status"], "failed", "{end}");
        assert!(
            end["error"]
                .as_str()
                .unwrap()
                .contains("during a tool call"),
            "{end}"
        );
        assert!(
            !kinds(&ev).contains(&"answer".to_string()),
            "no summarizer after the budget"
        );
    }
    // An endpoint that takes 30 s to answer.
    let slow = ScriptedLlm::start(json!([{"delay_s": 30, "content": finish("late")}]));
    let (ev, took) = run_with_budget(dir.path(), "react", &slow, &["--max-steps", "3"]);
    assert!(
        took < bound,
        "took {took:?} with a 4 s budget and a 30 s endpoint"
    );
    let end = finished(&ev);
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("while the planner was deciding"),
        "{end}"
    );
    // The call the deadline cut off is recorded: the run made one, whatever it cost.
    let cut: Vec<&Value> = ev
        .iter()
        .filter(|e| e["kind"] == "llm_call" && e["role"] == "planner")
        .collect();
    assert_eq!(cut.len(), 1, "{ev:?}");
    assert!(
        cut[0]["error"].as_str().unwrap().contains("cut off after"),
        "{}",
        cut[0]
    );
    assert_eq!(end["totals"]["llm_calls"], 1, "{end}");

    // SPIRAL's search (its planner) and ReAct-Plan-Exec's rehearsal (its world model) record
    // the call a deadline cut off as ReAct does.
    let slow_wm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "delay_s": 30, "content": predicted("ok", false)},
        {"when": "No tool has been called yet", "content": call("flaky:hang", json!({"text": "x"}))}
    ]));
    for (agent, llm, role) in [
        ("spiral", &slow, "planner"),
        ("plan-exec", &slow_wm, "world_model"),
    ] {
        let apart = tempfile::tempdir().unwrap();
        let (ev, took) = run_with_budget(apart.path(), agent, llm, &["--world-model", "llm"]);
        assert!(took < bound, "{agent} took {took:?} with a 4 s budget");
        let cut: Vec<&Value> = ev
            .iter()
            .filter(|e| {
                e["kind"] == "llm_call"
                    && e["error"]
                        .as_str()
                        .is_some_and(|m| m.contains("cut off after"))
            })
            .collect();
        assert_eq!(cut.len(), 1, "{agent}: {ev:?}");
        assert_eq!(cut[0]["role"], role, "{agent}: {}", cut[0]);
        assert_eq!(cut[0]["tokens_estimated"], true, "{}", cut[0]);
        assert_eq!(finished(&ev)["status"], "failed", "{agent}");
    }
}

/// A call grounded while planning (routing an unsure prediction of a read-only tool) takes the
/// path a step's call takes: the time budget cuts it off too, and it is recorded with what cut it.
#[test]
fn a_grounded_call_is_cut_off_by_the_time_budget_like_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server",
         "content": {"is_error": false, "content": "ok", "confidence": 0.2}},
        {"when": "No tool has been called yet",
         "content": {"candidates": [call("flaky:hang", json!({"text": "x"}))]}}
    ]));
    let (args, out_dir) = flaky_run(
        dir.path(),
        json!({"FLAKY_HANG_READ_ONLY": "1"}),
        "spiral",
        &[
            "--world-model",
            "llm",
            "--go-real-below",
            "0.5",
            "--max-time-s",
            "4",
            "--call-timeout-s",
            "60",
        ],
    );
    let start = Instant::now();
    let out = cosmos(&args, &llm, KEY);
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        took < Duration::from_secs(16),
        "took {took:?} with a 4 s budget"
    );
    let file = only_run(&out_dir);
    assert_valid(&file);
    let ev = events(&file);
    let grounded = ev
        .iter()
        .find(|e| e["kind"] == "node_grounded")
        .unwrap_or_else(|| panic!("the grounded call is recorded: {ev:?}"));
    assert_eq!(grounded["tool"], "flaky:hang", "{grounded}");
    let error = grounded["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("cut off after") && error.contains("time budget of 4s spent"),
        "{grounded}"
    );
    assert!(
        !kinds(&ev).contains(&"tool_called".to_string()),
        "a grounded call is never a step"
    );
    // The rehearsal the budget cut off keeps what it did before: the world model's answer
    // and its prediction (routed: grounded).
    assert!(
        ev.iter()
            .any(|e| e["kind"] == "llm_call" && e["role"] == "world_model" && e["error"].is_null()),
        "{ev:?}"
    );
    let predicted = ev
        .iter()
        .find(|e| e["kind"] == "node_simulated")
        .expect("the prediction is recorded");
    assert_eq!(predicted["node"], grounded["node"]);
    assert_eq!(predicted["route"], "grounded");
    assert_eq!(finished(&ev)["status"], "failed");
}

#[test]
fn secrets_stay_out_of_trajectory_and_trace_log_and_a_broken_entry_spoils_only_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let literal = "literal-service-token-0123456789";
    let mcp = write_mcp_config(
        dir.path(),
        json!({
            "everything": {"command": npm_bin("mcp-server-everything"),
                           "env": {"SERVICE_TOKEN": literal, "TZ": "Europe/Paris"}},
            "broken": {"command": npm_bin("mcp-server-everything"),
                       "env": {"X": "${COSMOS_TEST_SURELY_UNSET}"}}
        }),
    );
    let tasks = dir.path().join("task.json");
    std::fs::write(
        &tasks,
        json!({"id": "env_1", "request": "show the env", "servers": ["everything", "broken"]})
            .to_string(),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let log = dir.path().join("trace.log");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. everything:get-env", "content": finish("done")},
        {"when": "No tool has been called yet", "content": call("everything:get-env", json!({}))}
    ]));
    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "run",
            "--mcp-config",
            mcp.to_str().unwrap(),
            "--task",
            tasks.to_str().unwrap(),
            "--agent",
            "react",
            "--out",
            out_dir.to_str().unwrap(),
            "--no-tui",
        ])
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("COSMOS_LOG", "trace")
        .env("COSMOS_LOG_FILE", &log)
        .env_remove("COSMOS_TEST_SURELY_UNSET")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let file = only_run(&out_dir);
    let ev = events(&file);
    // The broken entry is that server's failure, named with its variable; the run went on.
    let broken = ev
        .iter()
        .find(|e| e["kind"] == "error" && e["name"] == "broken")
        .expect("the broken server's error");
    assert!(
        broken["message"]
            .as_str()
            .unwrap()
            .contains("COSMOS_TEST_SURELY_UNSET"),
        "{broken}"
    );
    let env_call = ev.iter().find(|e| e["kind"] == "tool_called").unwrap();
    let result = env_call["result"]["text"].as_str().unwrap();
    assert!(
        result.contains("SERVICE_TOKEN") && result.contains("[REDACTED]"),
        "{result}"
    );
    assert!(result.contains("Europe/Paris"), "ordinary values are kept");
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(log_text.len() > 1_000, "the trace log was written");
    for secret in [literal, KEY] {
        assert!(!log_text.contains(secret), "{secret} in the trace log");
        assert!(
            !std::fs::read_to_string(&file).unwrap().contains(secret),
            "{secret} in the run"
        );
    }
}

#[test]
fn a_server_that_ignores_sigterm_and_its_children_are_gone_when_cosmos_exits() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("stubborn.pid");
    let env = json!({"FLAKY_STUBBORN_PID_FILE": pid_file.to_str().unwrap()});
    let (args, out_dir) = flaky_run(dir.path(), env, "react", &[]);
    let llm = ScriptedLlm::start(json!([
        {"when": "1. flaky:ok", "content": finish("done")},
        {"when": "No tool has been called yet", "content": call("flaky:ok", json!({"text": "x"}))}
    ]));
    let mut child = cosmos_spawn(&args, &llm, KEY, &dir.path().join("log"));
    // From the moment the file is finished, the process must be gone promptly: the stubborn
    // server gets 0.5 s after stdin closes, 0.5 s after SIGTERM, then SIGKILL.
    let deadline = Instant::now() + Duration::from_secs(60);
    let finished_at = loop {
        let done = out_dir.exists()
            && std::fs::read_dir(&out_dir).unwrap().any(|e| {
                std::fs::read_to_string(e.unwrap().path())
                    .unwrap_or_default()
                    .contains("\"run_finished\"")
            });
        if done {
            break Instant::now();
        }
        assert!(Instant::now() < deadline, "the run never finished");
        std::thread::sleep(Duration::from_millis(10));
    };
    let status = child.wait().unwrap();
    let took = finished_at.elapsed();
    assert_eq!(status.code(), Some(0));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The grandchild is in the server's group; cosmos has exited, so it must be gone.
    assert!(gone(pid), "the server's child {pid} outlived cosmos");
    assert!(
        took < Duration::from_secs(3),
        "exiting after the run's end took {took:?}"
    );
}

#[test]
fn sigterm_during_server_start_up_stops_at_once_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started.pid");
    let env = json!({"FLAKY_SLOW_START_FILE": started.to_str().unwrap()});
    let (args, out_dir) = flaky_run(dir.path(), env, "react", &[]);
    let llm = ScriptedLlm::start(json!([]));
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(&args)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("COSMOS_LOG_FILE", dir.path().join("log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::fs::read_to_string(&started).map_or(true, |s| s.is_empty()) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the server never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let server_pid: u32 = std::fs::read_to_string(&started)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (status, latency) = signal_and_wait(&mut child, "-TERM", Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    assert!(latency < Duration::from_secs(5), "{latency:?}");
    assert!(
        !out_dir.exists(),
        "no trajectory for a run that never started"
    );
    assert!(gone(server_pid), "the half-started server is gone");
}

#[test]
fn the_live_explorer_without_a_terminal_fails_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([]));
    let mut args = run_args(mcp.to_str().unwrap(), out.to_str().unwrap(), "react", &[]);
    args.retain(|a| a != "--no-tui");
    let o = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(&args)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("COSMOS_LOG_FILE", dir.path().join("log"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("the explorer needs a terminal"),
        "{}",
        text(&o)
    );
    assert!(!out.exists(), "no 'interrupted' run left behind");
}

/// True once process `pid` has ended (a zombie waiting for init to reap it has ended), checked
/// for up to 3 s.
fn gone(pid: u32) -> bool {
    let start = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        if stat.as_ref().map_or(true, |s| s.contains(") Z ")) {
            return true;
        }
        if start.elapsed() > Duration::from_secs(3) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run against the flaky server (with `env` for its modes) on a one-line task: the
/// `cosmos run --no-tui` arguments (`extra` last) and the output folder.
fn flaky_run(dir: &Path, env: Value, agent: &str, extra: &[&str]) -> (Vec<String>, PathBuf) {
    let mut server = flaky_server();
    server["env"] = env;
    let mcp = write_mcp_config(dir, json!({"flaky": server}));
    let tasks = dir.join("task.json");
    std::fs::write(
        &tasks,
        json!({"id": "flaky_1", "request": "poke the flaky server"}).to_string(),
    )
    .unwrap();
    let out_dir = dir.join(format!("out-{agent}-{}", extra.len()));
    let mut args: Vec<String> = [
        "run",
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--task",
        tasks.to_str().unwrap(),
        "--agent",
        agent,
        "--out",
        out_dir.to_str().unwrap(),
        "--no-tui",
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    (args, out_dir)
}

/// Sends `signal` to `child` and waits for it to exit (at most `limit`): its status and how
/// long it took.
fn signal_and_wait(
    child: &mut std::process::Child,
    signal: &str,
    limit: Duration,
) -> (std::process::ExitStatus, Duration) {
    Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    let signalled = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, signalled.elapsed());
        }
        assert!(
            signalled.elapsed() < limit,
            "no exit {limit:?} after {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

use crate::common::tmux;

/// `cosmos run` with the explorer in a real terminal, on a ReAct run whose second planner
/// call waits until the test lets it go: the run is held mid-way, live.
fn held_live_run(dir: &Path) -> (tmux::Tmux, ScriptedLlm, PathBuf, PathBuf) {
    let mcp = write_mcp_config(dir, bench_servers());
    let release = dir.join("release");
    let out = dir.join("runs");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo."),
         "hold_until_file": release.to_str().unwrap()},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let mut args = run_args(mcp.to_str().unwrap(), out.to_str().unwrap(), "react", &[]);
    args.retain(|a| a != "--no-tui");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let base = llm.base_url();
    let t = tmux::Tmux::start_with_env(
        &args,
        &[
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", KEY),
            ("COSMOS_MODEL", "scripted-model"),
        ],
        140,
        40,
    );
    // The first real call is on screen; the planner's next call is held.
    t.wait_for_all(&["LIVE", "tool_called"]);
    (t, llm, release, out)
}

#[test]
fn the_live_explorer_asks_before_leaving_and_can_leave_the_run_to_finish_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _llm, release, out) = held_live_run(dir.path());
    t.keys(&["q"]);
    t.wait_for("Leave the run?");
    t.keys(&["Escape"]);
    t.wait_until("the question closed, the run still live", |s| {
        !s.contains("Leave the run?") && s.contains("LIVE")
    });
    // Esc goes back, never out: at the bottom of the stack it only says how to leave.
    t.keys(&["Escape"]);
    t.wait_for("q quits");
    t.keys(&["q"]);
    t.wait_for("Leave the run?");
    t.keys(&["l"]);
    t.wait_for("the run goes on without the explorer");
    std::fs::write(&release, "").unwrap();
    t.wait_exit();
    let raw = String::from_utf8_lossy(&t.raw()).to_string();
    assert!(
        raw.contains("done: completed"),
        "progress lines after leaving:\n{raw}"
    );
    let ev = events(&only_run(&out));
    assert_eq!(
        finished(&ev)["status"],
        "completed",
        "the run was not stopped"
    );
    assert_eq!(finished(&ev)["totals"]["tool_calls"], 1);
}

#[test]
fn stopping_from_the_live_explorers_question_ends_the_run_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _llm, _release, out) = held_live_run(dir.path());
    t.keys(&["q"]);
    t.wait_for("Leave the run?");
    t.keys(&["s"]);
    // The held planner call is abandoned: the run ends without the test releasing it.
    t.wait_exit();
    let ev = events(&only_run(&out));
    assert_eq!(finished(&ev)["status"], "interrupted");
    assert_valid(&only_run(&out));
}

#[test]
fn a_named_world_model_from_cosmos_toml_runs_and_is_recorded_by_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out = dir.path().join("runs");
    let llm = ScriptedLlm::start(json!([
        {"when": "You write the final answer", "content": "New York: 04:00."},
        {"when": "You simulate an MCP server", "content": predicted(r#"{"source":{"timezone":"UTC"},"target":{"timezone":"America/New_York"}}"#, false)},
        {"when": "1. Time MCP:convert_time", "content": finish("")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("America/New_York"))}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[world_models.scripted-wm]\nkind = \"llm\"\nbase_url = \"{}\"\nmodel = \"wm-model\"\ncached = true\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let args = run_args(
        mcp.to_str().unwrap(),
        out.to_str().unwrap(),
        "plan-exec",
        &[
            "--world-model",
            "scripted-wm",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let output = cosmos(&args, &llm, KEY);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let file = only_run(&out);
    assert!(
        file.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("_plan_exec_cached-scripted-wm-.jsonl"),
        "{}",
        file.display()
    );
    let ev = events(&file);
    let wm = &ev[0]["world_model"];
    assert_eq!(wm["name"], "cached(scripted-wm)", "{wm}");
    let simulated: Vec<&Value> = ev
        .iter()
        .filter(|e| e["kind"] == "node_simulated")
        .collect();
    assert!(!simulated.is_empty());
    // The world model's requests went to its own model name.
    assert!(
        llm.requests()
            .iter()
            .any(|r| r["body"]["model"] == "wm-model"
                && r["body"].to_string().contains("You simulate an MCP server"))
    );
    assert_valid(&file);

    // A name nobody defined is a clear error, before anything starts.
    let args = run_args(
        mcp.to_str().unwrap(),
        out.to_str().unwrap(),
        "plan-exec",
        &[
            "--world-model",
            "oracle",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    let output = cosmos(&args, &llm, KEY);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("no world model named \"oracle\"")
            && text(&output).contains("scripted-wm"),
        "{}",
        text(&output)
    );
}

#[test]
fn a_nodes_call_made_for_real_after_the_run_is_appended() {
    use cosmos_trajectory::event::{
        Action, AgentInfo, AgentKind, EventBody, Header, ModelInfo, RunStatus, TaskInfo,
    };
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let path = dir.path().join("run.jsonl");
    let header = Header::new(
        "probe-test",
        TaskInfo {
            id: "t".into(),
            request: "What time is it in UTC?".into(),
            ..Default::default()
        },
        AgentInfo {
            kind: AgentKind::PlanExec,
            settings: Default::default(),
        },
        ModelInfo {
            model: "m".into(),
            base_url: None,
        },
    );
    let mut w = Writer::create(&path, &header, Redactor::new(), None).unwrap();
    for body in [
        EventBody::root(),
        EventBody::NodeAdded {
            node: 1,
            parent: Some(0),
            depth: 1,
            action: Some(Action::ToolCall {
                tool: "Time MCP:get_current_time".into(),
                arguments: json!({"timezone": "UTC"}),
            }),
            prior: None,
        },
        EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: None,
            totals: Default::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        },
    ] {
        w.write(1, body).unwrap();
    }
    drop(w);
    let setup = cosmos_engine::probe::ProbeSetup {
        config: None,
        mcp_config: Some(mcp),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let event = runtime
        .block_on(cosmos_engine::probe::call_for_real(&path, 1, &setup))
        .unwrap();
    match &event.body {
        EventBody::ProbeCalled {
            node: 1,
            server,
            result,
            error: None,
            ..
        } => {
            assert_eq!(server.as_deref(), Some("Time MCP"));
            assert!(
                result.text.contains("\"timezone\": \"UTC\""),
                "{}",
                result.text
            );
        }
        other => panic!("{other:?}"),
    }
    // After run_finished, and the file is still valid.
    let ev = events(&path);
    assert_eq!(ev.last().unwrap()["kind"], "probe_called");
    assert_valid(&path);
}

#[test]
fn credentials_in_server_targets_never_reach_a_file_or_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let secrets = [
        "tok-SECRET-arg-98765",
        "key-SECRET-eq-45678",
        "pw-SECRET-url-111",
        "qs-SECRET-222",
        "ghp_SECRETshape0123456789",
    ];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/flaky_server.py");
    // Nothing answers there, and nothing else can take the port meanwhile.
    let dead = dead_port();
    let port = dead.port;
    let mut servers = bench_servers();
    servers["flaky"] = json!({"command": python(), "args": [
        script.display().to_string(), "--token", secrets[0], &format!("--api-key={}", secrets[1]),
        secrets[4]
    ]});
    servers["web"] = json!({"url": format!(
        "http://someone:{}@127.0.0.1:{port}/mcp?api_key={}&mode=plain", secrets[2], secrets[3]
    )});
    let mcp = write_mcp_config(dir.path(), servers);
    let out = dir.path().join("out");
    let log = dir.path().join("cosmos.log");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("done")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let mut args = cosmos_run_args(&mcp, &out, "time_mcp_000", "react", &[]);
    args.extend(["--extra-server", "flaky", "--extra-server", "web"].map(String::from));
    let o = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(&args)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("COSMOS_MODEL", "scripted-model")
        .env("COSMOS_LOG_FILE", &log)
        .env("COSMOS_LOG", "trace")
        .output()
        .unwrap();
    let file = only_run(&out);
    let header = &events(&file)[0];
    let targets: Vec<String> = header["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["target"].as_str().unwrap_or_default().to_string())
        .collect();
    let flaky = targets.iter().find(|t| t.contains("flaky_server")).unwrap();
    assert!(
        flaky.ends_with("--token *** --api-key=*** ***"),
        "{flaky}\n{}",
        text(&o)
    );
    let web = targets.iter().find(|t| t.contains("/mcp")).unwrap();
    assert_eq!(
        web,
        &format!("http://***@127.0.0.1:{port}/mcp?api_key=***&mode=***")
    );
    // wm-eval copies the run's calls and header facts into a file of its own.
    let evaluated = dir.path().join("wm-eval");
    let e = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "wm-eval",
            out.to_str().unwrap(),
            "--world-model",
            "memory",
            "--out",
        ])
        .arg(&evaluated)
        .env("COSMOS_LOG_FILE", &log)
        .env("COSMOS_LOG", "trace")
        .output()
        .unwrap();
    // One run: memory, never predicting a call from its own run, has nothing to recall, and
    // says so (exit 1); its file is written all the same.
    assert_eq!(e.status.code(), Some(1), "{}", text(&e));
    assert!(text(&e).contains("made no prediction"), "{}", text(&e));
    let wm_file = only_run(&evaluated);
    for path in [file.as_path(), log.as_path(), wm_file.as_path()] {
        let bytes = std::fs::read(path).unwrap();
        for secret in secrets.iter().chain([&KEY]) {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret} found in {}",
                path.display()
            );
        }
    }
    assert!(
        std::fs::metadata(&log).unwrap().len() > 0,
        "the log was written"
    );
    let stdout_and_err = text(&o);
    for secret in secrets {
        assert!(!stdout_and_err.contains(secret), "{secret} printed");
    }
}

#[test]
fn kill_9_of_cosmos_leaves_no_server_or_child_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("stubborn.pid");
    let never = dir.path().join("never-released");
    let env = json!({"FLAKY_STUBBORN_PID_FILE": pid_file.to_str().unwrap()});
    let (args, _) = flaky_run(dir.path(), env, "react", &[]);
    // The planner holds its reply: the run is mid-way when cosmos is killed.
    let llm = ScriptedLlm::start(json!([
        {"when": "No tool has been called yet", "content": finish("done"),
         "hold_until_file": never.to_str().unwrap()}
    ]));
    let mut child = cosmos_spawn(&args, &llm, KEY, &dir.path().join("log"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let grandchild: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL: cosmos stops nothing itself
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(grandchild) {
        assert!(
            Instant::now() < deadline,
            "the server's child {grandchild} outlived a killed cosmos"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_role_with_no_endpoint_is_an_error_naming_the_setting_never_a_public_default() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let out = dir.path().join("out");
    let started = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(cosmos_run_args(&mcp, &out, "time_mcp_000", "react", &[]))
        .env_remove("OPENAI_BASE_URL")
        .env("OPENAI_API_KEY", KEY)
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join(format!("cosmos-test-{}.log", std::process::id())),
        )
        .output()
        .unwrap();
    let said = text(&o);
    assert_ne!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains("no endpoint for roles.planner") && said.contains("OPENAI_BASE_URL"),
        "{said}"
    );
    assert!(!said.contains("api.openai.com"), "{said}");
    // Refused before any server started or any file was made.
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// A server that asks for input in the middle of a call: unattended, the request is declined
/// by default and accepted with its form's defaults under `--elicitation accept-defaults`;
/// either way the request and the answer are recorded before the call's result.
#[test]
fn a_servers_request_for_input_is_answered_by_the_policy_and_recorded() {
    for (policy, action, result) in [
        ("decline", "decline", "decline"),
        ("accept-defaults", "accept", "accepted: Lyon in metric"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mcp = write_mcp_config(dir.path(), json!({"flaky": flaky_server()}));
        let task = dir.path().join("task.json");
        std::fs::write(
            &task,
            json!({"id": "ask_1", "request": "Ask me."}).to_string(),
        )
        .unwrap();
        let llm = ScriptedLlm::start(json!([
            {"when": "1. flaky:ask", "content": finish("asked")},
            {"when": "No tool has been called yet", "content": call("flaky:ask", json!({}))},
            {"content": "asked"}
        ]));
        let out = dir.path().join("runs");
        let ran = cosmos(
            &[
                "run",
                "--mcp-config",
                mcp.to_str().unwrap(),
                "--task",
                task.to_str().unwrap(),
                "--agent",
                "react",
                "--elicitation",
                policy,
                "--out",
                out.to_str().unwrap(),
                "--no-tui",
            ],
            &llm,
            "sk-test",
        );
        assert!(ran.status.success(), "{}", text(&ran));
        let said = text(&ran);
        assert!(said.contains("asked for input"), "{said}");
        let events = events(&only_run(&out));
        assert_eq!(events[0]["agent"]["settings"]["elicitation"], policy);
        let asked = events
            .iter()
            .position(|e| e["kind"] == "elicitation")
            .expect("the request is recorded");
        let called = events
            .iter()
            .position(|e| e["kind"] == "tool_called")
            .unwrap();
        assert!(asked < called, "the request comes before the result");
        let request = &events[asked];
        assert_eq!(request["step"], 1);
        assert_eq!(request["tool"], "flaky:ask");
        assert_eq!(request["message"], "Which city, and which units?");
        assert_eq!(request["action"], action, "{request}");
        assert_eq!(
            request["requested"]["properties"]["city"]["default"],
            "Lyon"
        );
        assert_eq!(events[called]["result"]["text"], result);
        if action == "accept" {
            assert_eq!(
                request["content"],
                json!({"city": "Lyon", "units": "metric"})
            );
        }
    }
}

/// In the live explorer (a real terminal), a server's request for input is a form: the person
/// edits the default and accepts, the waiting call gets the answer, and the run records it.
#[test]
fn the_live_explorer_puts_a_servers_question_to_the_person() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), json!({"flaky": flaky_server()}));
    let task = dir.path().join("task.json");
    std::fs::write(
        &task,
        json!({"id": "ask_1", "request": "Ask me."}).to_string(),
    )
    .unwrap();
    let out = dir.path().join("runs");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. flaky:ask", "content": finish("asked")},
        {"when": "No tool has been called yet", "content": call("flaky:ask", json!({}))},
        {"content": "asked"}
    ]));
    let base = llm.base_url();
    let (mcp, task, out_dir) = (
        mcp.display().to_string(),
        task.display().to_string(),
        out.display().to_string(),
    );
    let t = tmux::Tmux::start_with_env(
        &[
            "run",
            "--mcp-config",
            &mcp,
            "--task",
            &task,
            "--agent",
            "react",
            "--out",
            &out_dir,
        ],
        &[
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", KEY),
            ("COSMOS_MODEL", "scripted-model"),
        ],
        120,
        40,
    );
    t.wait_for_all(&[
        "flaky (its call of ask) asks for input",
        "Which city, and which units?",
        "Lyon",
    ]);
    // The person takes a while to answer: that time is theirs, not the agent's planning.
    let thinking = Duration::from_millis(1500);
    std::thread::sleep(thinking);
    t.keys(&[
        "BSpace", "BSpace", "BSpace", "BSpace", "P", "a", "r", "i", "s",
    ]);
    t.wait_for("Paris");
    t.keys(&["Enter"]);
    t.wait_until("the run has finished", |s| {
        !s.contains("flaky (its call of ask) asks for input") && s.contains("run_finished")
    });
    t.keys(&["q"]);
    t.wait_exit();
    let ev = events(&only_run(&out));
    let asked = ev.iter().find(|e| e["kind"] == "elicitation").unwrap();
    assert_eq!(asked["action"], "accept");
    assert_eq!(
        asked["content"],
        json!({"city": "Paris", "units": "metric"})
    );
    assert_eq!(asked["reason"], "answered in the explorer");
    let called = ev.iter().find(|e| e["kind"] == "tool_called").unwrap();
    assert_eq!(called["result"]["text"], "accepted: Paris in metric");
    assert_eq!(ev[0]["agent"]["settings"]["elicitation"], "ask");
    let waited = asked["waited_ms"].as_u64().expect("the wait is recorded");
    assert!(waited >= thinking.as_millis() as u64, "{asked}");
    // The report leaves the wait out of every phase and gives it on its own.
    let report = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["report", &out_dir, "--format", "json", "--per-run"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&report.stdout).unwrap();
    let m = &doc["per_run"][0]["metrics"];
    assert_eq!(m["waiting_ms"], waited, "{m}");
    let phases: u64 = m["phase_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .sum();
    let wall = m["wall_ms"].as_u64().unwrap();
    assert!(phases + waited <= wall, "{m}");
}

/// Routing (`--go-real-below`): a plan-exec run whose world model is unsure (0.3) of every
/// prediction, against a server with one read-only tool (`forecast`) and one not annotated
/// (`ok`). While planning, the read-only call is made for real and recorded as grounded beside
/// its prediction; `ok` is never called while planning (the server's own log) and the plan
/// marks it risky. Then the plan runs for real.
#[test]
fn plan_exec_goes_real_for_unsure_read_only_calls_and_marks_the_rest_risky() {
    let dir = tempfile::tempdir().unwrap();
    let calls_file = dir.path().join("calls.txt");
    let mut server = flaky_server();
    server["env"] = json!({"FLAKY_CALLS_FILE": calls_file.display().to_string()});
    let mcp = write_mcp_config(dir.path(), json!({"flaky": server}));
    let task = dir.path().join("task.json");
    std::fs::write(
        &task,
        json!({"id": "route_1", "request": "Forecast for Lyon, then say ok."}).to_string(),
    )
    .unwrap();
    let out = dir.path().join("runs");
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "content": {"is_error": false, "content": "guessed", "confidence": 0.3}},
        {"when": "You write the final answer", "content": "Lyon is dry."},
        {"when": "2. flaky:ok", "content": finish("done")},
        {"when": "1. flaky:forecast", "content": call("flaky:ok", json!({"text": "hello"}))},
        {"when": "No tool has been called yet", "content": call("flaky:forecast", json!({"city": "Lyon"}))}
    ]));
    let args = [
        "run",
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--task",
        task.to_str().unwrap(),
        "--agent",
        "plan-exec",
        "--world-model",
        "llm",
        "--go-real-below",
        "0.99",
        "--out",
        out.to_str().unwrap(),
        "--no-tui",
    ];
    let ran = cosmos(&args, &llm, KEY);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let ev = events(&only_run(&out));
    assert_eq!(ev[0]["agent"]["settings"]["go_real_below"], 0.99);
    let grounded: Vec<&Value> = ev.iter().filter(|e| e["kind"] == "node_grounded").collect();
    assert_eq!(grounded.len(), 1, "{ev:?}");
    assert_eq!(grounded[0]["tool"], "flaky:forecast");
    assert_eq!(grounded[0]["confidence"], 0.3);
    assert_eq!(grounded[0]["observation"]["structured"]["city"], "Lyon");
    // The prediction stays the node's, beside the real result.
    let node = &grounded[0]["node"];
    let predicted = ev
        .iter()
        .find(|e| e["kind"] == "node_simulated" && &e["node"] == node)
        .unwrap();
    assert_eq!(predicted["observation"]["text"], "guessed");
    let plan = ev.iter().find(|e| e["kind"] == "plan_selected").unwrap();
    let ok_node = ev
        .iter()
        .find(|e| e["kind"] == "node_added" && e["action"]["tool"] == "flaky:ok")
        .unwrap()["node"]
        .clone();
    assert_eq!(plan["risky"], json!([ok_node]), "{plan}");
    // The risky node's inspector says how its reward was made: scaled by the confidence.
    let recorded = cosmos_trajectory::run::Run::open(&only_run(&out)).unwrap();
    let slot = recorded
        .nodes()
        .iter()
        .position(|n| json!(n.id) == ok_node)
        .unwrap() as u32;
    let state = cosmos_trajectory::fold::TreeState::fold(&recorded, recorded.len());
    let rows = cosmos_app::tui::Inspector::node(&recorded, &state, slot, (160, 60))
        .rows()
        .join("\n");
    let evaluated = ev
        .iter()
        .find(|e| e["kind"] == "node_evaluated" && e["node"] == ok_node)
        .unwrap();
    let reward = evaluated["reward"].as_f64().unwrap();
    assert!(
        rows.contains(&format!("× confidence 0.300 = {reward:.3}")) && rows.contains("risky"),
        "{rows}"
    );
    // The server's own log: forecast while planning, then the plan's two calls. `ok` was
    // never called before the plan ran.
    assert_eq!(
        std::fs::read_to_string(&calls_file).unwrap(),
        "forecast\nforecast\nok\n"
    );
    assert_eq!(ev.iter().filter(|e| e["kind"] == "tool_called").count(), 2);
    assert_valid(&only_run(&out));
    // A fork routes as the original did, unless told otherwise.
    let forks = dir.path().join("forks");
    let original = only_run(&out);
    let forked = cosmos(
        &[
            "fork",
            original.to_str().unwrap(),
            "--at",
            "1",
            "--tools",
            "recorded",
            "--world-model",
            "llm",
            "--out",
            forks.to_str().unwrap(),
            "--no-tui",
        ],
        &llm,
        KEY,
    );
    assert_eq!(forked.status.code(), Some(0), "{}", text(&forked));
    let fork_events = events(&only_run(&forks));
    assert_eq!(fork_events[0]["agent"]["settings"]["go_real_below"], 0.99);
    // The fork started no server: its unsure read-only call is grounded in the recording, as
    // its real calls are, and says where the answer came from.
    let grounded = fork_events
        .iter()
        .find(|e| e["kind"] == "node_grounded")
        .unwrap_or_else(|| panic!("no grounded call: {fork_events:?}"));
    assert_eq!(grounded["error"], Value::Null, "{grounded}");
    assert_eq!(
        grounded["observation"]["structured"]["city"], "Lyon",
        "{grounded}"
    );
    assert_eq!(
        grounded["origin"]["run"],
        original.display().to_string(),
        "{grounded}"
    );
    // The grounded call is counted apart from the run's steps, by report and the run view.
    let report = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "report",
            original.to_str().unwrap(),
            "--format",
            "json",
            "--per-run",
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&report.stdout).unwrap();
    let m = &doc["per_run"][0]["metrics"];
    assert_eq!(
        (&m["tool_calls"], &m["grounded_calls"]),
        (&json!(2), &json!(1)),
        "{m}"
    );
    let run = cosmos_trajectory::run::Run::open(&original).unwrap();
    let view = cosmos_app::tui::RunView::new(run, ratatui::layout::Rect::new(0, 0, 160, 49));
    let mut app = cosmos_app::tui::App::new(
        view,
        cosmos_app::tui::Keymap::default(),
        cosmos_app::tui::Theme::new(true),
        (160, 50),
    );
    app.settle();
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 50)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let screen = terminal.backend().to_string();
    assert!(
        screen.contains("grounded  1 real call(s) while planning"),
        "{screen}"
    );
    // The tree marks the grounded call ⊕ and the risky one ◌ (the legend says which is which).
    let row = |tool: &str| {
        screen
            .lines()
            .find(|l| l.contains(tool) && l.contains('#') && l.contains("N="))
            .unwrap_or_else(|| panic!("no tree row of {tool}:\n{screen}"))
            .to_string()
    };
    assert!(row("forecast").contains('⊕'), "{screen}");
    assert!(row("ok(").contains('◌'), "{screen}");
}

/// Hardening V: a reader that stops early (`| head -1`) closes the output pipe. A command whose
/// job is printing ends quietly; a live run stops printing and goes on to its own end, its file
/// whole. (The pipe is closed before anything is written: the harshest reader.)
#[test]
fn a_closed_output_pipe_ends_printing_quietly_and_a_run_goes_on_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let closed = |args: &[&str], llm: &ScriptedLlm| -> std::process::Output {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(args)
            .env("OPENAI_BASE_URL", llm.base_url())
            .env("OPENAI_API_KEY", KEY)
            .env("COSMOS_MODEL", "scripted-model")
            .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    };
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("It is 18:00 in Tokyo.")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let listed = closed(
        &["servers", "--mcp-config", mcp.to_str().unwrap(), "-v"],
        &llm,
    );
    let said = String::from_utf8_lossy(&listed.stderr);
    assert_eq!(listed.status.code(), Some(0), "{said}");
    assert!(
        !said.contains("panicked") && !said.contains("Broken pipe"),
        "{said}"
    );

    let out = dir.path().join("runs");
    let ran = closed(
        &run_args(mcp.to_str().unwrap(), out.to_str().unwrap(), "react", &[])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &llm,
    );
    let said = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    let events = events(&only_run(&out));
    let finished = events.last().unwrap();
    assert_eq!(finished["kind"], "run_finished", "{finished}");
    assert_eq!(finished["status"], "completed", "{finished}");
}

/// A server of the stateless era that answers "input required" (SEP-2322): its request for
/// input is answered as one during a call is (declined, unattended) and recorded with the
/// call, and the call made again with the answer; one that asks forever fails after 8 rounds,
/// saying so, and the run goes on.
#[test]
fn an_input_required_answer_is_answered_and_the_call_made_again_but_not_forever() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), json!({"m": modern_server()}));
    let (_, run) = react_run(
        dir.path(),
        &mcp,
        json!({"id": "mrtr", "request": "Confirm, then ask forever."}),
        json!([
            {"when": "", "times": 1, "content": call("m:confirm_with_input", json!({}))},
            {"when": "", "times": 1, "content": call("m:input_forever", json!({}))},
            {"when": "", "content": finish("done")},
        ]),
    );
    let events = events(&run);
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "tool_called")
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let answered = calls[0]["result"]["text"].as_str().unwrap();
    assert_eq!(calls[0]["error"], Value::Null, "{}", calls[0]);
    assert!(answered.starts_with("answered: "), "{answered}");
    assert!(answered.contains("\"decline\""), "{answered}");
    // The request for input is recorded with the call it came during.
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "elicitation")
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["message"], "Confirm?");
    let forever = calls[1]["error"].as_str().unwrap_or_default();
    assert!(
        forever.contains("input_required did not complete within 8 MRTR rounds"),
        "{}",
        calls[1]
    );
}
