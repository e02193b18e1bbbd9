//! Other programs' trajectories: `cosmos import` of real Inspect AI logs and ATIF files, the
//! same files opened directly by `report`, `wm-eval` and `export`, `cosmos export atif`
//! checked by ATIF's own models (the `atif` package) and read back, and hostile input.
//!
//! The Inspect fixtures were made by the real `inspect-ai` (scripts/make-inspect-logs.py);
//! `fresh_inspect_logs_import` makes new ones with it. The ATIF fixtures are made by hand
//! (tests/fixtures/README.md says so).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/interchange").join(name)
}

fn cosmos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `cosmos import FILES --out DIR`, which must succeed; the runs it printed, each read whole.
fn import(files: &[&Path], out: &Path) -> Vec<Vec<Value>> {
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let done = cosmos(&args);
    assert!(done.status.success(), "{}", text(&done.stderr));
    text(&done.stdout)
        .lines()
        .map(|line| read_run(Path::new(line.split("  (").next().unwrap())))
        .collect()
}

fn read_run(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_kind<'a>(run: &'a [Value], kind: &str) -> Vec<&'a Value> {
    run.iter().filter(|e| e["kind"] == kind).collect()
}

/// The Python that has `atif` and `inspect_ai` (scripts/install-test-servers.sh).
fn interchange_python() -> PathBuf {
    let python = root().join(".cache/interchange/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-servers.sh",
        python.display()
    );
    python
}

/// Checks a document with ATIF's own pydantic models; returns its step and tool call counts.
fn atif_validate(document: &Path) -> (usize, usize) {
    let check = Command::new(interchange_python())
        .args([
            "-c",
            "import json, sys, atif\n\
             t = atif.Trajectory.model_validate(json.load(open(sys.argv[1])))\n\
             print(len(t.steps), sum(len(s.tool_calls or []) for s in t.steps))",
        ])
        .arg(document)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "not valid ATIF: {}",
        text(&check.stderr)
    );
    let out = text(&check.stdout);
    let mut n = out.split_whitespace().map(|n| n.parse().unwrap());
    (n.next().unwrap(), n.next().unwrap())
}

#[test]
fn inspect_logs_make_one_run_per_sample_with_real_results() {
    let out = tempfile::tempdir().unwrap();
    let eval = fixture("inspect_time_mcp.eval");
    let json_log = fixture("inspect_time_mcp.json");
    let runs = import(&[&eval, &json_log], out.path());
    assert_eq!(runs.len(), 4, "two samples in each log");
    for run in &runs {
        let header = &run[0];
        assert_eq!(header["version"], 2);
        assert_eq!(header["source"]["format"], "inspect");
        assert_eq!(header["planner"]["model"], "mockllm/model");
        assert_eq!(header["agent"]["kind"], "external");
        assert!(
            header["source"]["agent"]
                .as_str()
                .unwrap()
                .starts_with("inspect-ai")
        );
        let calls = of_kind(run, "tool_called");
        assert_eq!(calls.len(), 1);
        let call = calls[0];
        // The real mcp-server-time answered: its JSON names the zone asked for.
        let result: Value = serde_json::from_str(call["result"]["text"].as_str().unwrap()).unwrap();
        let request = header["task"]["request"].as_str().unwrap();
        match call["tool"].as_str().unwrap() {
            "get_current_time" => {
                assert_eq!(request, "What time is it in Tokyo?");
                assert_eq!(call["arguments"], json!({"timezone": "Asia/Tokyo"}));
                assert_eq!(result["timezone"], "Asia/Tokyo");
            }
            "convert_time" => {
                assert_eq!(request, "Convert 16:30 London time to Tokyo time.");
                assert_eq!(result["target"]["timezone"], "Asia/Tokyo");
            }
            other => panic!("unexpected tool {other}"),
        }
        assert!(
            call["latency_ms"].as_u64().unwrap() > 0,
            "Inspect times its calls"
        );
        assert_eq!(
            of_kind(run, "llm_call").len(),
            2,
            "a turn to call, a turn to answer"
        );
        assert!(
            of_kind(run, "llm_call")[0]["prompt_tokens"]
                .as_u64()
                .unwrap()
                > 0
        );
        assert_eq!(of_kind(run, "answer").len(), 1);
        let finished = of_kind(run, "run_finished")[0];
        assert_eq!(finished["status"], "completed");
        assert_eq!(finished["ending"], "source_ended");
        // The catalogue is the model's tools.
        let tools: Vec<&str> = header["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["get_current_time", "convert_time"]);
    }

    let validate = cosmos(&["validate", out.path().to_str().unwrap()]);
    assert!(validate.status.success(), "{}", text(&validate.stdout));
    let report: Value = serde_json::from_str(&common::cosmos_stdout(&[
        "report",
        out.path().to_str().unwrap(),
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(report["runs"], 4);
    let group = &report["groups"][0];
    assert_eq!(group["tool_call_success_rate"]["mean"], 1.0);
}

#[test]
fn wm_eval_evaluates_a_world_model_on_imported_calls() {
    let out = tempfile::tempdir().unwrap();
    // Opened directly, as the runs made of them: no import step first.
    let done = cosmos(&[
        "wm-eval",
        "--world-model",
        "memory",
        fixture("inspect_time_mcp.eval").to_str().unwrap(),
        fixture("inspect_time_mcp.json").to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let written: Vec<PathBuf> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(written.len(), 1);
    let run = read_run(&written[0]);
    // Each of the four recorded calls simulated by memory (leave one run out: the same call
    // of the other log is what it recalls).
    assert_eq!(of_kind(&run, "tool_called").len(), 4);
    let simulated = of_kind(&run, "call_simulated");
    assert_eq!(simulated.len(), 4);
    assert!(simulated.iter().all(|s| s["world_model"] == "memory"));
    assert!(
        text(&done.stdout).contains("memory"),
        "{}",
        text(&done.stdout)
    );
    // Hardening VI: the file records the files the person gave, never the private folder
    // they were converted into (removed when cosmos ends).
    let whole = serde_json::to_string(&run).unwrap();
    assert!(!whole.contains("cosmos-state-"), "{whole}");
    assert!(
        run[0]["agent"]["settings"]["runs"]
            .to_string()
            .contains("inspect_time_mcp.eval"),
        "{}",
        run[0]["agent"]["settings"]
    );
    for copy in of_kind(&run, "tool_called") {
        let origin = copy["origin"]["run"].as_str().unwrap();
        assert!(
            origin.contains("inspect_time_mcp.") && origin.contains("(converted from inspect)"),
            "{origin}"
        );
    }
}

#[test]
fn atif_mcp_names_become_server_tool_and_everything_said_is_kept() {
    let out = tempfile::tempdir().unwrap();
    let runs = import(&[&fixture("atif_claude_code_time.json")], out.path());
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let header = &run[0];
    assert_eq!(header["source"]["format"], "atif");
    assert_eq!(header["source"]["id"], "cc-session-7f3a");
    assert_eq!(header["source"]["agent"], "claude-code 2.0.14");
    assert_eq!(header["planner"]["model"], "claude-sonnet-4-5");
    assert_eq!(header["started_at"], "2026-12-05T03:14:30Z");
    // ATIF has no call latencies: said, not made up.
    assert_eq!(header["source"]["unrecorded"], json!(["latency_ms"]));
    let calls = of_kind(run, "tool_called");
    let named: Vec<(&str, Option<&str>)> = calls
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["server"].as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("time:get_current_time", Some("time")),
            ("time:convert_time", Some("time")),
            ("Read", None)
        ]
    );
    assert!(
        calls[1]["result"]["text"]
            .as_str()
            .unwrap()
            .contains("+9.0h")
    );
    assert_eq!(calls[2]["result"]["is_error"], true);
    assert_eq!(
        of_kind(run, "answer")[0]["text"],
        "It is 12:14 in Tokyo now; 16:30 in London is 01:30 the next day in Tokyo."
    );
    let turns = of_kind(run, "llm_call");
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0]["prompt_tokens"], 1520);
    assert_eq!(turns[1]["t_ms"], 6000);
    let notes = of_kind(run, "annotation");
    assert_eq!(notes[0]["text"], "You are Claude Code.");
    let tools: Vec<&str> = header["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["time:get_current_time", "time:convert_time", "Read"]
    );
}

#[test]
fn a_cut_off_session_keeps_its_last_call_without_a_result_and_nothing_raw_is_printed() {
    let out = tempfile::tempdir().unwrap();
    let done = cosmos(&[
        "import",
        fixture("atif_cut_off.json").to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    for stream in [&done.stdout, &done.stderr] {
        assert!(
            !stream.iter().any(|&b| b == 0x1b || b == 0x07),
            "{}",
            text(stream)
        );
    }
    let path = text(&done.stdout).split("  (").next().unwrap().to_string();
    let run = read_run(Path::new(&path));
    let header = &run[0];
    assert!(
        header.get("started_at").is_none(),
        "the source has no times"
    );
    assert!(header.get("planner").is_none(), "the source names no model");
    assert_eq!(
        header["source"]["unrecorded"],
        json!(["t_ms", "latency_ms", "tokens", "tools"])
    );
    let calls = of_kind(&run, "tool_called");
    assert_eq!(calls.len(), 2);
    assert!(calls[0]["error"].is_null());
    assert_eq!(
        calls[1]["error"],
        cosmos_trajectory::event::NO_RESULT,
        "the cut-off call is kept and said, never given a result"
    );
    assert_eq!(calls[1]["result"]["text"], "");
    assert_eq!(
        of_kind(&run, "annotation")[0]["text"],
        "Also London, please."
    );
    let finished = of_kind(&run, "run_finished")[0];
    assert_eq!(finished["status"], "failed");
    assert_eq!(finished["error"], "the source ends without an answer");

    // Its views: the Markdown account and the report say `—` where the source said nothing,
    // and carry no escape sequence of the source's.
    let account = cosmos(&["export", "markdown", &path]);
    assert!(account.status.success(), "{}", text(&account.stderr));
    assert!(!account.stdout.contains(&0x1b));
    assert!(
        text(&account.stdout).contains("started —"),
        "{}",
        text(&account.stdout)
    );
    let table = common::cosmos_stdout(&["report", out.path().to_str().unwrap()]);
    assert!(!table.contains('\u{1b}'));
    let row = table.lines().find(|l| l.starts_with("external")).unwrap();
    assert!(row.contains('—'), "{row}");
}

#[test]
fn export_atif_is_valid_atif_and_imports_back_to_the_same_run() {
    let runs = std::fs::read_dir(root().join("sample_runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"));
    let exported = tempfile::tempdir().unwrap();
    let back = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for original in runs {
        let atif = exported
            .path()
            .join(original.file_stem().unwrap())
            .with_extension("json");
        let done = cosmos(&[
            "export",
            "atif",
            original.to_str().unwrap(),
            "--out",
            atif.to_str().unwrap(),
        ]);
        assert!(done.status.success(), "{}", text(&done.stderr));
        let (_, tool_calls) = atif_validate(&atif);
        let events = read_run(&original);
        let calls = of_kind(&events, "tool_called").len();
        assert_eq!(
            tool_calls,
            calls,
            "one tool call per real call: {}",
            original.display()
        );

        let again = import(&[&atif], back.path());
        assert_eq!(again.len(), 1);
        let again = &again[0];
        assert_eq!(again[0]["source"]["format"], "atif");
        let mut header = again[0].clone();
        header.as_object_mut().unwrap().remove("source");
        header["version"] = events[0]["version"].clone();
        assert_eq!(header, events[0], "the header: {}", original.display());
        // Every event back, in its place; only `run_finished`'s totals are counted afresh.
        let unseq = |e: &Value| {
            let mut e = e.clone();
            if e["kind"] == "run_finished" {
                e.as_object_mut().unwrap().remove("totals");
            }
            e
        };
        assert_eq!(again.len(), events.len(), "{}", original.display());
        for (a, b) in again.iter().zip(&events).skip(1) {
            assert_eq!(unseq(a), unseq(b), "{}", original.display());
        }
        checked += 1;
    }
    assert!(checked >= 10, "the sample runs are there");
}

#[test]
fn foreign_files_open_where_runs_are_taken() {
    let eval = fixture("inspect_time_mcp.eval");
    let atif = fixture("atif_claude_code_time.json");
    let report: Value = serde_json::from_str(&common::cosmos_stdout(&[
        "report",
        eval.to_str().unwrap(),
        atif.to_str().unwrap(),
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(report["runs"], 3);

    // A folder of runs with foreign files beside them: both counted, a config passed over.
    let folder = tempfile::tempdir().unwrap();
    let sample = std::fs::read_dir(root().join("sample_runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains("react"))
        .unwrap();
    std::fs::copy(&sample, folder.path().join("run.jsonl")).unwrap();
    std::fs::copy(&eval, folder.path().join("log.eval")).unwrap();
    std::fs::write(folder.path().join("mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    let report: Value = serde_json::from_str(&common::cosmos_stdout(&[
        "report",
        folder.path().to_str().unwrap(),
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(report["runs"], 3, "{report}");

    // One run's account from an ATIF file, as from a run.
    let account = common::cosmos_stdout(&["export", "markdown", atif.to_str().unwrap()]);
    assert!(account.contains("time:convert_time"), "{account}");
    // A log of two samples is not one run: said.
    let two = cosmos(&["export", "markdown", eval.to_str().unwrap()]);
    assert!(!two.status.success());
    assert!(
        text(&two.stderr).contains("2 sessions or samples"),
        "{}",
        text(&two.stderr)
    );
}

#[test]
fn an_unknown_format_names_the_formats_known() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd.json");
    std::fs::write(&odd, r#"{"hello": "world"}"#).unwrap();
    let binary = dir.path().join("blob.eval");
    std::fs::write(&binary, [0u8, 159, 146, 150, 27, 91, 50, 74]).unwrap();
    for file in [&odd, &binary] {
        let done = cosmos(&[
            "import",
            file.to_str().unwrap(),
            "--out",
            dir.path().to_str().unwrap(),
        ]);
        assert_eq!(done.status.code(), Some(1));
        let err = text(&done.stderr);
        assert!(err.contains("ATIF") && err.contains("Inspect"), "{err}");
        assert!(!done.stderr.contains(&0x1b));
        let replay = cosmos(&["report", file.to_str().unwrap()]);
        assert!(!replay.status.success());
        assert!(text(&replay.stderr).contains("not a format cosmos reads"));
    }
}

#[test]
fn a_torn_eval_zip_keeps_the_samples_before_the_tear() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture("inspect_time_mcp.eval")).unwrap();
    // Cut inside the second sample's entry: the directory at the end is gone.
    let torn = dir.path().join("torn.eval");
    let second = find(&whole, b"samples/london_to_tokyo").unwrap();
    std::fs::write(&torn, &whole[..second + 200]).unwrap();
    let out = dir.path().join("out");
    let done = cosmos(&[
        "import",
        torn.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(done.status.code(), Some(1), "a tear is no success");
    let err = text(&done.stderr);
    assert!(
        err.contains("torn zip") && err.contains("1 sample(s) read"),
        "{err}"
    );
    let runs: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert_eq!(runs.len(), 1, "the whole sample before the tear is kept");
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn a_truncated_inspect_json_keeps_its_whole_samples() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture("inspect_time_mcp.json")).unwrap();
    let samples = find(&whole, b"\"samples\"").unwrap();
    let second = samples + find(&whole[samples..], b"\"id\": \"tokyo_now\"").unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &whole[..second + 40]).unwrap();
    let out = dir.path().join("out");
    let done = cosmos(&[
        "import",
        cut.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(done.status.code(), Some(1));
    assert!(
        text(&done.stderr).contains("breaks off"),
        "{}",
        text(&done.stderr)
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
}

#[test]
fn a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let started = Instant::now();
    for args in [
        vec![
            "import",
            fifo.to_str().unwrap(),
            "--out",
            dir.path().to_str().unwrap(),
        ],
        vec!["report", fifo.to_str().unwrap()],
    ] {
        let done = cosmos(&args);
        assert!(!done.status.success());
        assert!(
            text(&done.stderr).contains("not a regular file"),
            "{}",
            text(&done.stderr)
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "nothing waited on the pipe"
    );
}

#[test]
fn a_100_mb_tool_result_is_recorded_capped() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    let result = "x".repeat(100 << 20);
    let trajectory = json!({
        "schema_version": "ATIF-v1.7",
        "session_id": "big",
        "agent": {"name": "made-by-the-test", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "read it"},
            {"step_id": 2, "source": "agent", "message": "",
             "tool_calls": [{"tool_call_id": "a", "function_name": "mcp__fs__read", "arguments": {}}],
             "observation": {"results": [{"source_call_id": "a", "content": result}]}},
        ]
    });
    std::fs::write(&big, serde_json::to_vec(&trajectory).unwrap()).unwrap();
    let out = dir.path().join("out");
    let runs = import(&[&big], &out);
    let call = of_kind(&runs[0], "tool_called")[0].clone();
    let kept = call["result"]["text"].as_str().unwrap().len() as u64;
    let cut = call["result"]["truncated_bytes"].as_u64().unwrap();
    assert_eq!(kept + cut, 100 << 20, "what was cut is counted");
    assert!(kept <= 1 << 20);
    let size: u64 = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(size < 4 << 20, "the run file stays small: {size}");
}

#[test]
fn fresh_inspect_logs_import() {
    // The real Inspect AI, its mockllm model scripted to call the real mcp-server-time.
    let logs = tempfile::tempdir().unwrap();
    let server_python = root().join(".cache/servers/venv/bin/python");
    let made = Command::new(interchange_python())
        .arg(root().join("scripts/make-inspect-logs.py"))
        .arg(logs.path())
        .arg(&server_python)
        .env("INSPECT_LOG_LEVEL", "warning")
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let files: Vec<PathBuf> = std::fs::read_dir(logs.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 2, "an .eval and a .json log");
    let out = tempfile::tempdir().unwrap();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let runs = import(&refs, out.path());
    assert_eq!(runs.len(), 4);
    for run in &runs {
        let call = of_kind(run, "tool_called")[0];
        assert!(call["error"].is_null(), "{call}");
        assert!(
            call["result"]["text"]
                .as_str()
                .unwrap()
                .contains("Asia/Tokyo")
        );
    }
}

#[test]
fn otlp_json_of_other_instrumentations_imports_one_run_per_trace() {
    let out = tempfile::tempdir().unwrap();
    let runs = import(&[&fixture("otlp_hand_made.json")], out.path());
    assert_eq!(runs.len(), 2, "two traces");
    // OpenInference (a LangChain agent): the root's input and output are the task and answer.
    let oi = &runs[0];
    assert_eq!(oi[0]["source"]["format"], "otlp");
    assert_eq!(oi[0]["source"]["agent"], "my-langgraph-agent");
    assert_eq!(oi[0]["task"]["request"], "What time is it in Tokyo?");
    assert_eq!(oi[0]["planner"]["model"], "gpt-4o-mini");
    let turn = of_kind(oi, "llm_call")[0];
    assert_eq!(
        (turn["prompt_tokens"].clone(), turn["latency_ms"].clone()),
        (json!(812), json!(1200))
    );
    let calls = of_kind(oi, "tool_called");
    assert_eq!(calls[0]["arguments"], json!({"timezone": "Asia/Tokyo"}));
    assert!(
        calls[0]["result"]["text"]
            .as_str()
            .unwrap()
            .contains("Asia/Tokyo")
    );
    assert_eq!(calls[0]["latency_ms"], 80);
    assert_eq!(calls[1]["error"], "Invalid timezone: Mars/Olympus");
    assert_eq!(of_kind(oi, "answer")[0]["text"], "It is 12:14 in Tokyo.");
    // GenAI conventions: an MCP tool under Claude Code's name, no answer recorded.
    let genai = &runs[1];
    assert_eq!(genai[0]["source"]["agent"], "weather");
    let call = of_kind(genai, "tool_called")[0];
    assert_eq!(
        (call["tool"].as_str(), call["server"].as_str()),
        (Some("time:convert_time"), Some("time"))
    );
    let finished = of_kind(genai, "run_finished")[0];
    assert_eq!(finished["status"], "failed");
    assert_eq!(finished["t_ms"], 3000, "as long as its root span");
}

#[test]
fn export_otel_to_a_file_imports_back_the_real_calls() {
    let dir = tempfile::tempdir().unwrap();
    let otlp = dir.path().join("traces.json");
    let samples: Vec<PathBuf> = std::fs::read_dir(root().join("sample_runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl") && !p.to_str().unwrap().contains("wm-eval")
        })
        .collect();
    assert!(samples.len() >= 10, "the sample runs are there");
    let mut args = vec!["export".to_string(), "otel".to_string()];
    args.extend(samples.iter().map(|p| p.display().to_string()));
    args.extend([
        "--out".into(),
        otlp.display().to_string(),
        "--content".into(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let done = cosmos(&args);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let back = import(&[&otlp], &dir.path().join("back"));
    assert_eq!(back.len(), samples.len(), "a run per trace");
    let by_task_and_start =
        |run: &[Value]| (run[0]["task"]["id"].clone(), run[0]["started_at"].clone());
    for sample in &samples {
        let original = read_run(sample);
        let again = back
            .iter()
            .find(|r| by_task_and_start(r) == by_task_and_start(&original))
            .unwrap_or_else(|| panic!("{} came back", sample.display()));
        let calls = |run: &[Value]| -> Vec<(Value, Value, Value, bool)> {
            of_kind(run, "tool_called")
                .into_iter()
                .filter(|c| c["origin"].is_null())
                .map(|c| {
                    (
                        c["tool"].clone(),
                        c["arguments"].clone(),
                        c["result"]["text"].clone(),
                        !c["error"].is_null() || c["result"]["is_error"] == true,
                    )
                })
                .collect()
        };
        assert_eq!(calls(again), calls(&original), "{}", sample.display());
        let planner_tokens = |run: &[Value]| -> Vec<Value> {
            of_kind(run, "llm_call")
                .into_iter()
                .filter(|c| c["role"] == "planner")
                .map(|c| c["prompt_tokens"].clone())
                .collect()
        };
        assert_eq!(
            planner_tokens(again),
            planner_tokens(&original),
            "{}",
            sample.display()
        );
        let answer = |run: &[Value]| of_kind(run, "answer").first().map(|a| a["text"].clone());
        assert_eq!(answer(again), answer(&original), "{}", sample.display());
    }
}

#[test]
fn the_explorer_shows_an_imported_run_with_dashes_where_its_source_said_nothing() {
    let out = tempfile::tempdir().unwrap();
    let runs = import(&[&fixture("atif_cut_off.json")], out.path());
    assert_eq!(runs.len(), 1);
    let path = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let run = cosmos_trajectory::run::Run::open(&path).unwrap();
    let mut app = common::run_app(run, (160, 48));
    let screen = common::render(&mut app);
    assert!(
        !screen.contains('\u{1b}') && !screen.contains('\u{7}'),
        "{screen}"
    );
    assert!(
        screen.contains("— (the source recorded no times)"),
        "{screen}"
    );
    assert!(!screen.contains(" 0 ms"), "no made-up latency: {screen}");
    assert!(!screen.contains("0:00.0"), "no made-up time: {screen}");
    assert!(
        screen.contains("— (the source counted no tokens)"),
        "{screen}"
    );
    assert!(
        screen.contains("names —  schema —"),
        "no catalogue to check names against: {screen}"
    );
    // Truth IV: the about view says where the run came from, never that cosmos proxy
    // recorded it, and reads "—" for the tools and servers the source never listed.
    app.update(cosmos_app::tui::Action::Do(cosmos_app::tui::Command::About));
    let about = common::render(&mut app);
    assert!(about.contains("imported from atif"), "{about}");
    assert!(!about.contains("cosmos proxy"), "{about}");
    assert!(
        about.contains("tools (—: the source listed none)"),
        "{about}"
    );
    assert!(
        !about.contains("tools (0)") && !about.contains("servers (0)"),
        "{about}"
    );
    // Its Markdown account likewise: no made-up 0 for what the source never recorded.
    let markdown = cosmos(&["export", "markdown", path.to_str().unwrap()]);
    assert!(markdown.status.success(), "{}", text(&markdown.stderr));
    let markdown = text(&markdown.stdout);
    assert!(
        markdown.contains("| made | imported from atif "),
        "{markdown}"
    );
    for made_up in ["| tools | 0 |", "| wall time | 0.0 s |", "| tokens | 0 |"] {
        assert!(!markdown.contains(made_up), "{made_up} in {markdown}");
    }
    assert!(markdown.contains("| wall time | — |"), "{markdown}");
}

/// Truth IV: Inspect logs name no server, so `report` counts none: the servers and
/// cross-server coordination of its samples are unknown ("—", `null`), never two servers made
/// of two tool names; each run's JSON says it was imported, and from what.
#[test]
fn report_makes_up_no_servers_for_inspect_samples() {
    let done = cosmos(&[
        "report",
        fixture("inspect_time_mcp.eval").to_str().unwrap(),
        "--format",
        "json",
        "--per-run",
    ]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let report: Value = serde_json::from_slice(&done.stdout).unwrap();
    let group = &report["groups"][0];
    assert_eq!(group["server_count"], Value::Null, "{group}");
    assert_eq!(group["cross_server_coordination"], Value::Null, "{group}");
    for run in report["per_run"].as_array().unwrap() {
        let made = run["made_by"].as_str().unwrap();
        assert!(made.starts_with("imported from inspect "), "{made}");
        assert!(made.contains("inspect_time_mcp.eval, sample "), "{made}");
    }
}

#[test]
fn an_import_again_leaves_the_runs_there_and_a_stopped_one_leaves_no_half_run() {
    let out = tempfile::tempdir().unwrap();
    let eval = fixture("inspect_time_mcp.eval");
    let first = import(&[&eval], out.path());
    assert_eq!(first.len(), 2);
    // What a stopped import leaves: a part of the next run, never a half run under its name.
    let stale = out.path().join(".import-inspect-stale.jsonl.part");
    std::fs::write(&stale, "{\"torn").unwrap();
    let again = cosmos(&[
        "import",
        eval.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(
        text(&again.stderr)
            .matches("imported before: left as it is")
            .count(),
        2
    );
    let validate = cosmos(&["validate", out.path().to_str().unwrap()]);
    assert!(validate.status.success(), "{}", text(&validate.stdout));
    let report: Value = serde_json::from_str(&common::cosmos_stdout(&[
        "report",
        out.path().to_str().unwrap(),
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(report["runs"], 2);
}

#[test]
fn an_import_stopped_by_a_signal_exits_non_zero_and_the_next_one_finishes_it() {
    // A big log, so the import is still reading when it is stopped.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.json");
    let mut text_log = String::from(
        "{\"version\": 2, \"eval\": {\"task\": \"t\", \"model\": \"m\"}, \"samples\": [",
    );
    let result = "r".repeat(200_000);
    for i in 0..400 {
        if i > 0 {
            text_log.push(',');
        }
        text_log.push_str(
            &json!({"id": format!("s{i}"), "input": "task", "events": [
            {"event": "tool", "function": "f", "arguments": {}, "result": result}
        ], "output": {"completion": "done"}})
            .to_string(),
        );
    }
    text_log.push_str("]}");
    std::fs::write(&log, text_log).unwrap();
    let out = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "import",
            log.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Stopped once it has written its first run.
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.contains(".jsonl"), "{first}");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "a stopped import is no success");
    let whole: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert!(!whole.is_empty() && whole.len() < 400, "{}", whole.len());
    let validate = cosmos(&["validate", out.to_str().unwrap()]);
    assert!(
        validate.status.success(),
        "every run there is whole: {}",
        text(&validate.stdout)
    );
    // The next import writes the rest.
    let done = cosmos(&[
        "import",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let all = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|e| e == "jsonl")
        })
        .count();
    assert_eq!(all, 400);
}

#[test]
fn a_closed_output_pipe_ends_printing_quietly() {
    let sample = std::fs::read_dir(root().join("sample_runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_str().unwrap().contains("spiral"))
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    for args in [
        vec!["export", "atif", sample.to_str().unwrap()],
        vec![
            "import",
            "tests/fixtures/interchange/inspect_time_mcp.json",
            "--out",
            out.path().to_str().unwrap(),
        ],
    ] {
        // The reader is gone before anything is written.
        let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(&args)
            .current_dir(root())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let done = child.wait_with_output().unwrap();
        assert!(done.status.success(), "{args:?}: {}", text(&done.stderr));
        assert!(
            !text(&done.stderr).contains("panicked"),
            "{}",
            text(&done.stderr)
        );
    }
}

/// A big Inspect log, so a command reading it is still at work when it is stopped.
fn big_inspect_log(path: &Path, samples: usize) {
    let result = "r".repeat(200_000);
    let mut log = String::from(
        "{\"version\": 2, \"eval\": {\"task\": \"t\", \"model\": \"m\"}, \"samples\": [",
    );
    for i in 0..samples {
        if i > 0 {
            log.push(',');
        }
        log.push_str(
            &json!({"id": format!("s{i}"), "input": "task", "events": [
                {"event": "tool", "function": "f", "arguments": {}, "result": result}
            ], "output": {"completion": "done"}})
            .to_string(),
        );
    }
    log.push_str("]}");
    std::fs::write(path, log).unwrap();
}

/// The private folders cosmos made in `tmp`.
fn homes_in(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("cosmos-state-")
        })
        .collect()
}

#[test]
fn a_command_killed_while_converting_leaves_a_folder_the_next_cosmos_removes() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let log = dir.path().join("big.json");
    big_inspect_log(&log, 400);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["report", log.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its private folder holds a converted run.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let converting = homes_in(&tmp)
            .iter()
            .any(|h| std::fs::read_dir(h.join("given")).is_ok_and(|mut d| d.next().is_some()));
        if converting {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the report never started converting"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the report ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(homes_in(&tmp).len(), 1, "a SIGKILL leaves its folder");
    // The next cosmos that converts removes it, and its own when it ends.
    let done = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "report",
            fixture("atif_claude_code_time.json").to_str().unwrap(),
        ])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(homes_in(&tmp), Vec::<PathBuf>::new(), "nothing left behind");
}

#[test]
fn links_in_and_out_are_taken_as_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    // In: a link given by name is the file it names.
    let link = dir.path().join("session.json");
    std::os::unix::fs::symlink(fixture("atif_claude_code_time.json"), &link).unwrap();
    let out = dir.path().join("out");
    let runs = import(&[&link], &out);
    assert_eq!(runs.len(), 1);
    // In a folder, a link to a foreign file is passed over (a folder's links could lead
    // anywhere); the run beside it is read.
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    std::os::unix::fs::symlink(fixture("inspect_time_mcp.eval"), folder.join("log.eval")).unwrap();
    std::fs::copy(
        std::fs::read_dir(&out)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
        folder.join("run.jsonl"),
    )
    .unwrap();
    let report: Value = serde_json::from_str(&common::cosmos_stdout(&[
        "report",
        folder.to_str().unwrap(),
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(report["runs"], 1);
    // Out: a link planted under the name the next run takes is not written through.
    let planted = tempfile::tempdir().unwrap();
    let target = planted.path().join("victim");
    let session = fixture("atif_claude_code_time.json");
    let learned = dir.path().join("learned");
    import(&[&session], &learned);
    let name = std::fs::read_dir(&learned)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let out2 = dir.path().join("out2");
    std::fs::create_dir(&out2).unwrap();
    std::os::unix::fs::symlink(&target, out2.join(&name)).unwrap();
    let done = cosmos(&[
        "import",
        fixture("atif_claude_code_time.json").to_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert!(!target.exists(), "nothing written through the link");
    assert!(
        !done.status.success(),
        "a name taken by a link is no run written"
    );
    assert_eq!(
        std::fs::read_dir(&out2).unwrap().count(),
        1,
        "no part left beside the link"
    );
    assert!(
        text(&done.stderr).contains(&*name.to_string_lossy()),
        "{}",
        text(&done.stderr)
    );
}

/// Writes the two hostile `.eval` logs of Hardening VI with Python's zipfile: one whose 1 MiB
/// attachment is named 600 times (about 1.5 KB deflated), one whose sample inflates to 50
/// million numbers (about 150 KB deflated).
fn hostile_eval_logs(dir: &Path) -> (PathBuf, PathBuf) {
    let attachments = dir.join("attachments.eval");
    let numbers = dir.join("numbers.eval");
    let script = r#"
import json, sys, zipfile
attachments, numbers = sys.argv[1], sys.argv[2]
header = json.dumps({"eval": {"task": "hostile", "model": "m"}})
with zipfile.ZipFile(attachments, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("header.json", header)
    events = [{"event": "tool", "function": "f", "arguments": {"n": i}, "result": "attachment://a"}
              for i in range(600)]
    z.writestr("samples/s1_epoch_1.json", json.dumps({
        "id": "s1", "epoch": 1, "input": "task", "events": events,
        "attachments": {"a": "x" * (1 << 20)}, "output": {"completion": "done"}}))
with zipfile.ZipFile(numbers, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("header.json", header)
    with z.open("samples/s2_epoch_1.json", "w") as f:
        f.write(b'{"id": "s2", "epoch": 1, "input": "task", "events": [')
        chunk = b"0," * 1_000_000
        for _ in range(50):
            f.write(chunk)
        f.write(b'0]}')
"#;
    let made = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&attachments)
        .arg(&numbers)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    (attachments, numbers)
}

/// `cosmos ARGS` with its address space limited to 1.5 GB (`ulimit -v`): an unbounded read
/// aborts with "memory allocation failed" instead of passing.
fn cosmos_within_1_5_gb(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1500000 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Hardening VI: a 1.5 KB log whose attachment is named 600 times, and a 150 KB one whose
/// sample inflates to 50 million numbers, are read within 1.5 GB of address space by both
/// `import` and `report`: each ends with an exit code and a message, never an abort, and no
/// half-written run is left. The attachment's copies stop at the budget, and the run says so.
#[test]
fn hostile_inspect_logs_are_read_within_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (attachments, numbers) = hostile_eval_logs(dir.path());
    for (log, readable) in [(&attachments, true), (&numbers, false)] {
        let out = dir.path().join(format!(
            "runs-{}",
            log.file_stem().unwrap().to_string_lossy()
        ));
        let log = log.to_str().unwrap();
        let imported = cosmos_within_1_5_gb(&["import", log, "--out", out.to_str().unwrap()]);
        let said = text(&imported.stderr);
        assert!(
            matches!(imported.status.code(), Some(0 | 1)),
            "{log}: {:?} {said}",
            imported.status
        );
        assert!(!said.contains("memory allocation"), "{said}");
        let left: Vec<String> = std::fs::read_dir(&out)
            .map(|d| {
                d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            left.iter().all(|n| !n.ends_with(".part")),
            "{log}: {left:?}"
        );
        if readable {
            assert_eq!(imported.status.code(), Some(0), "{said}");
            let [run] = left.as_slice() else {
                panic!("one run: {left:?}")
            };
            let run = read_run(&out.join(run));
            assert_eq!(of_kind(&run, "tool_called").len(), 600);
            let skipped = run[0]["source"]["skipped"].to_string();
            assert!(
                skipped.contains("attachment reference(s) not copied"),
                "{skipped}"
            );
        } else {
            assert_eq!(imported.status.code(), Some(1), "{said}");
            assert!(
                said.contains("samples/s2_epoch_1.json") && said.contains("MiB of memory"),
                "{said}"
            );
        }
        let reported = cosmos_within_1_5_gb(&["report", log]);
        let said = text(&reported.stderr);
        assert!(
            matches!(reported.status.code(), Some(0 | 1)),
            "{log}: {:?} {said}",
            reported.status
        );
        assert!(!said.contains("memory allocation"), "{said}");
    }
}

/// Hardening VI: a file imported by two spellings of its path (`./f.json`, an absolute path)
/// is one run, imported once; and two files that make the same run (two copies of one export)
/// are read once by `report`, which says so.
#[test]
fn one_file_is_one_run_however_named_and_a_second_copy_is_said() {
    let out = tempfile::tempdir().unwrap();
    let relative = "./tests/fixtures/interchange/atif_claude_code_time.json";
    let absolute = fixture("atif_claude_code_time.json");
    for path in [relative, absolute.to_str().unwrap()] {
        let done = cosmos(&["import", path, "--out", out.path().to_str().unwrap()]);
        assert!(done.status.success(), "{}", text(&done.stderr));
    }
    let runs: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    // Two copies of one export: the same embedded run.
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_dir(root().join("sample_runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("_react_"))
        .min()
        .unwrap();
    let first = dir.path().join("first.json");
    let exported = cosmos(&[
        "export",
        "atif",
        sample.to_str().unwrap(),
        "-o",
        first.to_str().unwrap(),
    ]);
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let second = dir.path().join("second.json");
    std::fs::copy(&first, &second).unwrap();
    let reported = cosmos(&[
        "report",
        first.to_str().unwrap(),
        second.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(reported.status.success(), "{}", text(&reported.stderr));
    let said = text(&reported.stderr);
    assert!(
        said.contains("second.json") && said.contains("counted once"),
        "{said}"
    );
    let report: Value = serde_json::from_slice(&reported.stdout).unwrap();
    assert_eq!(report["runs"], json!(1), "{report}");
}

/// Hardening VI: a `.eval` whose zip names a sample's entry twice (the directory keeps one of
/// each name) is read, and the import says a sample may be missing.
#[test]
fn a_zip_naming_an_entry_twice_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("twice.eval");
    let script = r#"
import json, sys, warnings, zipfile
warnings.simplefilter("ignore")
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
    for answer in ["first", "second"]:
        z.writestr("samples/s1_epoch_1.json", json.dumps({
            "id": "s1", "epoch": 1, "input": "task", "events": [],
            "output": {"completion": answer}}))
"#;
    let made = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&log)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let out = dir.path().join("runs");
    let done = cosmos(&[
        "import",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    // What was read is written; the exit says something may be missing, as for any import
    // that had something to say.
    assert_eq!(done.status.code(), Some(1), "{}", text(&done.stderr));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    assert!(
        text(&done.stderr).contains("names some entries more than once"),
        "{}",
        text(&done.stderr)
    );
}

/// Truth IV: errors a newcomer meets. An import of a file that is not there creates nothing
/// (no empty output folder); `wm-eval` given a wm-eval file says what it is and what to give.
#[test]
fn a_newcomers_mistakes_are_said_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let missing = dir.path().join("no-such.json");
    let done = cosmos(&[
        "import",
        missing.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!done.status.success());
    assert!(!out.exists(), "an import of nothing made {}", out.display());
    let evaluation = std::fs::read_dir(root().join("sample_runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("wm-eval"))
        .min()
        .unwrap();
    let done = cosmos(&[
        "wm-eval",
        evaluation.to_str().unwrap(),
        "--world-model",
        "memory",
        "--out",
        dir.path().join("eval").to_str().unwrap(),
    ]);
    assert!(!done.status.success());
    let said = text(&done.stderr);
    assert!(
        said.contains("a wm-eval file") && said.contains("give those runs"),
        "{said}"
    );
}

/// Truth IV: `export atif` files each call where it happened: a plan's executed calls each get
/// a step of their own in time order, naming the node they execute and the step of the turn
/// that proposed it, never all under the last planner turn; the export still imports back to
/// the same events.
#[test]
fn export_atif_gives_each_executed_plan_call_a_step_of_its_own() {
    let sample = std::fs::read_dir(root().join("sample_runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("_plan_exec_"))
        .min()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("plan.json");
    let done = cosmos(&[
        "export",
        "atif",
        sample.to_str().unwrap(),
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let atif: Value = serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    let steps = atif["steps"].as_array().unwrap();
    let mut executed = 0;
    for step in steps {
        let calls = step["tool_calls"].as_array().map_or(0, Vec::len);
        let executes = &step["extra"]["cosmos"]["executes"];
        if executes.is_object() {
            executed += 1;
            assert_eq!(calls, 1, "one executed call per step: {step}");
            assert_eq!(step["llm_call_count"], json!(0), "{step}");
            let by = executes["proposed_by_step"].as_u64().unwrap();
            let turn = &steps[by as usize - 1];
            assert!(
                turn["extra"]["cosmos"]["event"]["kind"] == "llm_call",
                "step {by} is a planner turn: {turn}"
            );
        } else {
            assert_eq!(
                calls, 0,
                "a planner turn of a plan runs no call itself: {step}"
            );
        }
    }
    let real_calls = read_run(&sample)
        .iter()
        .filter(|e| e["kind"] == "tool_called")
        .count();
    assert!(
        executed > 1 && executed == real_calls,
        "{executed} of {real_calls}"
    );
    // Read back, the same events in the same order.
    let out = tempfile::tempdir().unwrap();
    let runs = import(&[&exported], out.path());
    let kinds = |run: &[Value]| -> Vec<String> {
        run.iter()
            .skip(1)
            .map(|e| e["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(&runs[0]), kinds(&read_run(&sample)));
}

/// Truth IV: an Inspect sample's score is the source's verdict, an event of the run
/// (`source_scored`) kept as said: a sample scored incorrect (`includes`: `I`) is no clean
/// finish (its totals count the failing score), its Markdown account shows the verdict, and
/// `report` gives the share of samples their source passed in a column of its own.
#[test]
fn an_inspect_score_is_the_sources_verdict_and_an_incorrect_sample_no_clean_finish() {
    let dir = tempfile::tempdir().unwrap();
    let mut log: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("inspect_time_mcp.json")).unwrap())
            .unwrap();
    // The first sample scored incorrect, in its score event and its scores alike.
    let first = &mut log["samples"][0];
    first["scores"]["includes"]["value"] = json!("I");
    // A scorer's answer is untrusted text: an escape sequence in it reaches no screen.
    first["scores"]["includes"]["answer"] = json!("\u{1b}[31mred\u{7}");
    for event in first["events"].as_array_mut().unwrap() {
        if event["event"] == "score" {
            event["score"]["value"] = json!("I");
            event["score"]["answer"] = json!("\u{1b}[31mred\u{7}");
        }
    }
    let scored = dir.path().join("scored.json");
    std::fs::write(&scored, log.to_string()).unwrap();
    let out = dir.path().join("runs");
    let runs = import(&[&scored], &out);
    assert_eq!(runs.len(), 2);
    let verdicts: Vec<(Value, Value)> = runs
        .iter()
        .map(|run| {
            let [score] = of_kind(run, "source_scored")[..] else {
                panic!("one score per sample: {run:?}")
            };
            assert_eq!(score["scorer"], "includes", "{score}");
            assert!(score["target"].is_string(), "{score}");
            let totals = &run.last().unwrap()["totals"];
            (score["value"].clone(), totals["source_failed"].clone())
        })
        .collect();
    assert!(verdicts.contains(&(json!("I"), json!(1))), "{verdicts:?}");
    assert!(
        verdicts.contains(&(json!("C"), Value::Null)),
        "{verdicts:?}"
    );
    // The incorrect one's account shows the source's verdict.
    let incorrect = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .contains("\"value\":\"I\"")
        })
        .unwrap();
    let markdown = cosmos(&["export", "markdown", incorrect.to_str().unwrap()]);
    let markdown = text(&markdown.stdout);
    assert!(markdown.contains("## The source's verdict"), "{markdown}");
    assert!(markdown.contains("| includes | I: failed |"), "{markdown}");
    assert!(
        !markdown.contains('\u{1b}') && !markdown.contains('\u{7}'),
        "{markdown}"
    );
    // The about view: the verdict under a heading of its own, after the agent's settings.
    let mut app = common::run_app(
        cosmos_trajectory::run::Run::open(&incorrect).unwrap(),
        (160, 60),
    );
    app.update(cosmos_app::tui::Action::Do(cosmos_app::tui::Command::About));
    let about = common::render(&mut app);
    assert!(
        !about.contains('\u{1b}') && !about.contains('\u{7}'),
        "{about}"
    );
    let at = |text: &str| {
        about
            .find(text)
            .unwrap_or_else(|| panic!("no {text:?}:\n{about}"))
    };
    assert!(
        at("imported_from =") < at("the source's verdict"),
        "{about}"
    );
    assert!(
        at("the source's verdict") < at("includes: I: failed"),
        "{about}"
    );
    // report: one of two samples passed by its source.
    let done = cosmos(&["report", out.to_str().unwrap(), "--format", "json"]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let report: Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(
        report["groups"][0]["source_passed"]["mean"],
        json!(0.5),
        "{report}"
    );
    let table = cosmos(&["report", out.to_str().unwrap()]);
    assert!(
        text(&table.stdout).contains("source pass %"),
        "{}",
        text(&table.stdout)
    );
    // Exported back: in Inspect's shape for any reader (valid ATIF), and whole for cosmos.
    let exported = dir.path().join("incorrect.atif.json");
    let done = cosmos(&[
        "export",
        "atif",
        incorrect.to_str().unwrap(),
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert!(done.status.success(), "{}", text(&done.stderr));
    let atif: Value = serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    assert_eq!(
        atif["extra"]["scores"]["includes"]["value"], "I",
        "{}",
        atif["extra"]
    );
    atif_validate(&exported);
    let back = tempfile::tempdir().unwrap();
    let again = import(&[&exported], back.path());
    let [score] = of_kind(&again[0], "source_scored")[..] else {
        panic!("the verdict comes back: {:?}", again[0])
    };
    assert_eq!(score["passed"], false);
}

/// Truth IV: an ATIF trajectory's own verdict (a reward or `resolved` in its
/// `final_metrics.extra`) is the source's word too: an event of the run, a failing one no
/// clean finish.
#[test]
fn an_atif_verdict_in_its_final_metrics_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut session: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("atif_claude_code_time.json")).unwrap(),
    )
    .unwrap();
    session["final_metrics"]["extra"] = json!({"reward": 0.0, "resolved": false, "note": "x"});
    let file = dir.path().join("rewarded.json");
    std::fs::write(&file, session.to_string()).unwrap();
    let runs = import(&[&file], &dir.path().join("runs"));
    let scores = of_kind(&runs[0], "source_scored");
    let scorers: Vec<&str> = scores
        .iter()
        .map(|s| s["scorer"].as_str().unwrap())
        .collect();
    assert_eq!(
        scorers,
        ["final_metrics.extra.reward", "final_metrics.extra.resolved"],
        "{scores:?}"
    );
    assert!(scores.iter().all(|s| s["passed"] == false), "{scores:?}");
    assert_eq!(runs[0].last().unwrap()["totals"]["source_failed"], 2);
}
