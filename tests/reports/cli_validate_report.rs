//! The `validate` and `report` commands, run as a user runs them: the real binary.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use cosmos_trajectory::synthetic::{self, Spec};

fn cosmos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join(format!("cosmos-test-{}.log", std::process::id())),
        )
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

fn write(dir: &Path, name: &str, seed: u64) -> String {
    let p = dir.join(name);
    synthetic::write(
        &p,
        &Spec {
            nodes: 30,
            seed,
            ..Spec::default()
        },
        cosmos_engine::metrics::run::RunAccumulator::tally,
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn validate_passes_good_files_and_fails_corrupt_ones_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.jsonl", 1);
    let out = cosmos(&["validate", &good]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("1 file(s) checked: 0 with errors"));

    let bad = write(dir.path(), "sub/bad.jsonl", 2);
    let mut lines: Vec<String> = fs::read_to_string(&bad)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.insert(3, "{oops".into());
    fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let out = cosmos(&["validate", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{bad}:4: error: not valid JSON")),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("2 file(s) checked: 1 with errors"));
}

/// `cosmos validate` of a generated run with `line` put in as its fifth line: it fails, saying
/// `said` of that line.
fn validate_fails_on_a_fifth_line(line: &str, said: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.jsonl", 3);
    let mut lines: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.insert(4, line.to_string());
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = cosmos(&["validate", &path]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(":5: error: {said}")),
        "{}",
        text(&out)
    );
}

#[test]
fn validate_finds_dangling_node_references() {
    validate_fails_on_a_fifth_line(
        r#"{"seq":4,"t_ms":9,"kind":"backpropagated","path":[0,4242],"value":0.5}"#,
        "backpropagated refers to node 4242",
    );
}

/// Hardening VI: a node that names itself as its parent (a loop, not a tree) is an error.
#[test]
fn validate_rejects_a_node_that_is_its_own_parent() {
    validate_fails_on_a_fifth_line(
        r#"{"seq":4,"t_ms":9,"kind":"node_added","node":7777,"parent":7777,"depth":1,"action":null}"#,
        "node 7777 is its own parent",
    );
}

#[test]
fn the_explorer_without_a_terminal_is_a_clear_error() {
    // `cosmos PATH` is `cosmos replay PATH`; here stdin and stdout are not terminals.
    for args in [&["sample_runs"][..], &["replay", "sample_runs"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains("cosmos: error: the explorer needs a terminal"),
            "{}",
            text(&out)
        );
    }
}

/// Truth III: `cosmos replay` of a path that is not there names it and exits non-zero (it
/// opened an empty browser saying "No runs here."), before anything needs a terminal.
#[test]
fn replay_of_a_missing_path_names_it() {
    for args in [&["/no/such/path"][..], &["replay", "/no/such/path"]] {
        let out = cosmos(args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains("/no/such/path: no such file or folder"),
            "{}",
            text(&out)
        );
    }
}

#[test]
fn validate_of_a_missing_path_is_a_clear_error() {
    let out = cosmos(&["validate", "/no/such/place"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("cosmos: error: no such file or folder: /no/such/place"),
        "{}",
        text(&out)
    );
}

#[test]
fn report_json_has_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    for seed in 1..=3 {
        write(dir.path(), &format!("r{seed}.jsonl"), seed);
    }
    let out = cosmos(&["report", dir.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["format"], "mcp-cosmos-report");
    assert_eq!(doc["runs"], 3);
    let row = &doc["groups"][0];
    assert_eq!(row["key"], "spiral / synthetic / synthetic");
    assert_eq!(row["runs"], 3);
    for key in [
        "tool_calls",
        "tool_call_success_rate",
        "execution_quality",
        "execution_quality_anchored",
        "tokens",
        "fidelity",
        "wall_time_s",
    ] {
        assert!(row[key]["mean"].is_number(), "{key}: {row}");
        assert_eq!(row[key]["n"], 3, "{key}");
        let [lo, hi] = [0, 1].map(|i| row[key]["ci"][i].as_f64().unwrap());
        let mean = row[key]["mean"].as_f64().unwrap();
        assert!(lo <= mean && mean <= hi, "{key}: {lo} {mean} {hi}");
        // Every interval stays in what the metric can be: rates and fidelity in [0, 1], EQ
        // in [0, 100], counts, tokens and time at or above 0; each names how it was made.
        let rate = ["tool_call_success_rate", "fidelity"].contains(&key);
        if rate {
            assert!(lo >= 0.0 && hi <= 1.0, "{key}");
        }
        if key.starts_with("execution_quality") {
            assert!(lo >= 0.0 && hi <= 100.0, "{key}");
        }
        assert!(lo >= 0.0, "{key}");
        assert!(row[key]["interval"].is_string(), "{key}");
    }
    // A cohort of one configuration: efficiency 1, so EQ = 100·(SR + 1)/2.
    let sr = row["tool_call_success_rate"]["mean"].as_f64().unwrap();
    let eq = row["execution_quality"]["mean"].as_f64().unwrap();
    assert!((eq - 100.0 * (sr + 1.0) / 2.0).abs() < 1e-9);
}

#[test]
fn report_formats_and_grouping() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.jsonl", 1);
    write(dir.path(), "b.jsonl", 2);
    let d = dir.path().to_str().unwrap();
    let table = cosmos(&["report", d]);
    assert!(
        text(&table).contains("calls/task")
            && text(&table).contains("spiral / synthetic / synthetic"),
        "{}",
        text(&table)
    );
    let md = cosmos(&["report", d, "--format", "markdown", "--group-by", "task"]);
    let md = text(&md);
    assert!(
        md.starts_with("**Table 1 · Tool use and Execution Quality**"),
        "{md}"
    );
    assert!(md.contains("| task "), "{md}");
    assert!(md.contains("synthetic_001") && md.contains("synthetic_002"));
    let csv = text(&cosmos(&[
        "report",
        d,
        "--format",
        "csv",
        "--group-by",
        "agent",
    ]));
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("group,runs,completed,calls_task_mean,calls_task_n,calls_task_ci95")
    );
    assert!(lines.next().unwrap().starts_with("spiral,2,2,"));
}

#[test]
fn help_lists_only_working_commands() {
    let out = text(&cosmos(&["--help"]));
    assert!(out.contains("validate") && out.contains("report"));
}

/// `cosmos ARGS` in a child that must end within 30 s (a hang is the bug).
fn cosmos_within(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join(format!("cosmos-test-{}.log", std::process::id())),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("cosmos {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn fifos_device_links_and_dangling_links_are_passed_over_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.jsonl", 1);
    let fifo = dir.path().join("pipe.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.jsonl")).unwrap();
    std::os::unix::fs::symlink("/nowhere/at/all", dir.path().join("dangling.jsonl")).unwrap();
    let d = dir.path().to_str().unwrap();
    let v = cosmos_within(&["validate", d]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v));
    assert!(
        text(&v).contains("pipe.jsonl: not a regular file"),
        "{}",
        text(&v)
    );
    assert!(
        text(&v).contains("zero.jsonl: not a regular file"),
        "{}",
        text(&v)
    );
    assert!(
        text(&v).contains("1 file(s) checked: 0 with errors, 3 warning(s)"),
        "{}",
        text(&v)
    );
    let r = cosmos_within(&["report", d, "--format", "json"]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(doc["runs"], 1);
    assert_eq!(doc["unreadable"].as_array().unwrap().len(), 3);
    let listed = cosmos_trajectory::listing::list_runs(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(listed.len(), 1);
    // Named directly, a pipe is refused before it is opened (opening it waits for a writer).
    for format in ["json", "markdown"] {
        let e = cosmos_within(&["export", format, fifo.to_str().unwrap()]);
        assert_eq!(e.status.code(), Some(1), "{}", text(&e));
        assert!(text(&e).contains("not a regular file"), "{}", text(&e));
    }
}

#[test]
fn report_json_stays_json_with_a_bidi_task_id_and_no_runs_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.jsonl", 7);
    // A task id with a right-to-left override, and a byte-order mark an editor left.
    let text_of = fs::read_to_string(&path).unwrap();
    let edited = text_of.replacen("synthetic_007", "abc\u{202e}txt.exe", 1);
    fs::write(&path, format!("\u{feff}{edited}")).unwrap();
    let r = cosmos(&[
        "report",
        dir.path().to_str().unwrap(),
        "--group-by",
        "task",
        "--format",
        "json",
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    let out = String::from_utf8(r.stdout.clone()).unwrap();
    assert!(
        !out.contains('\u{202e}'),
        "the override reached the terminal"
    );
    assert!(out.contains("abc\\u202etxt.exe"), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(doc["groups"][0]["key"], "abc\u{202e}txt.exe");

    let empty = tempfile::tempdir().unwrap();
    let r = cosmos(&["report", empty.path().to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    assert!(text(&r).contains("no runs to report"), "{}", text(&r));
}

/// A ReAct-shaped run of `task` by `agent` with `calls` real calls, the first `errors` of them
/// failed, written through the real writer.
fn hand_run(dir: &Path, agent: &str, task: &str, repeat: u32, calls: u32, errors: u32) {
    use cosmos_trajectory::event::{
        AgentInfo, AgentKind, EventBody, Header, ModelInfo, Observation, RunStatus, TaskInfo,
    };
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let kind = if agent == "react" {
        AgentKind::React
    } else {
        AgentKind::PlanExec
    };
    let header = Header::new(
        format!("{agent}-{task}-{repeat}"),
        TaskInfo {
            id: task.into(),
            request: "r".into(),
            reference_call_count: Some(2),
            ..Default::default()
        },
        AgentInfo {
            kind,
            settings: Default::default(),
        },
        ModelInfo {
            model: "planner".into(),
            base_url: None,
        },
    );
    let path = dir.join(format!("{agent}_{task}_{repeat}.jsonl"));
    let mut w = Writer::create(
        &path,
        &header,
        Redactor::new(),
        Some(cosmos_engine::metrics::run::RunAccumulator::tally(&header)),
    )
    .unwrap();
    for step in 0..calls {
        let failed = step < errors;
        w.write(
            u64::from(step) * 100 + 100,
            EventBody::ToolCalled {
                step: u64::from(step) + 1,
                tool: "time:now".into(),
                server: Some("time".into()),
                arguments: Box::new(serde_json::json!({})),
                result: Observation {
                    text: if failed { "bad" } else { "ok" }.into(),
                    is_error: failed,
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
    w.write(1_000, EventBody::Answer { text: "a".into() })
        .unwrap();
    w.write(
        2_000,
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
}

#[test]
fn report_baseline_numbers_checked_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    // react: task a 4 calls (1 failed), twice; task b 2 calls.
    hand_run(dir.path(), "react", "a", 1, 4, 1);
    hand_run(dir.path(), "react", "a", 2, 4, 1);
    hand_run(dir.path(), "react", "b", 1, 2, 0);
    // plan-exec: task a 2 calls; task b 3 calls (3 failed); task c unpaired.
    hand_run(dir.path(), "plan-exec", "a", 1, 2, 0);
    hand_run(dir.path(), "plan-exec", "b", 1, 3, 3);
    hand_run(dir.path(), "plan-exec", "c", 1, 9, 0);
    let d = dir.path().to_str().unwrap();
    let out = cosmos(&["report", d, "--baseline", "react", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["baseline"]["key"], "react / none / planner");
    let pair = |metric: &str| {
        doc["baseline"]["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["metric"] == metric)
            .unwrap_or_else(|| panic!("{metric}"))
            .clone()
    };
    // Calls: a 2 − 4 = −2, b 3 − 2 = +1 → mean −0.5; c is not paired.
    let calls = pair("tool_calls");
    assert_eq!(calls["n"], 2);
    assert_eq!(calls["mean_diff"], -0.5);
    assert_eq!(
        (calls["higher"].clone(), calls["lower"].clone()),
        (1.into(), 1.into())
    );
    // Success: a 1.0 − 0.75 = +0.25, b 0.0 − 1.0 = −1.0 → −0.375.
    assert_eq!(pair("tool_call_success_rate")["mean_diff"], -0.375);
    // EQ per task (cohort: both groups, one planner). a: calls 2..4; plan-exec
    // 100·(1 + 1)/2 = 100, react 100·(0.75 + 0)/2 = 37.5 → +62.5. b: calls 2..3; plan-exec
    // 100·(0 + 0)/2 = 0, react 100·(1 + 1)/2 = 100 → −100. Mean −18.75.
    assert_eq!(pair("execution_quality")["mean_diff"], -18.75);
    // EQ anchored on the reference 2: a plan-exec 100·(1 + 1)/2 = 100, react
    // 100·(0.75 + 0.5)/2 = 62.5 → +37.5; b plan-exec 100·(0 + 2/3)/2 = 33.3, react 100 →
    // −66.7. Mean −14.58.
    let anchored = pair("execution_quality_anchored")["mean_diff"]
        .as_f64()
        .unwrap();
    assert!(
        (anchored - (37.5 - 200.0 / 3.0) / 2.0).abs() < 1e-9,
        "{anchored}"
    );
    // Every run completed with an answer: no difference.
    assert_eq!(pair("completed")["mean_diff"], 0.0);
    // The markdown is the paper's tables with the differences in the cells.
    let md = text(&cosmos(&[
        "report",
        d,
        "--baseline",
        "react",
        "--format",
        "markdown",
    ]));
    // Two tasks are too few for a paired interval: the cell says so instead of claiming one.
    assert!(md.contains("(Δ -0.50, 2 tasks: too few)"), "{md}");
    assert!(md.contains("(baseline)"), "{md}");
    assert!(!md.contains("[-1.00, -1.00]"), "{md}");
}

#[test]
fn a_task_id_with_a_newline_or_a_bar_stays_in_its_row() {
    let dir = tempfile::tempdir().unwrap();
    hand_run(dir.path(), "react", "two\nlines | bar", 1, 2, 0);
    hand_run(dir.path(), "react", "plain", 1, 1, 0);
    let d = dir.path().to_str().unwrap();
    for format in ["table", "markdown"] {
        let out = cosmos(&["report", d, "--group-by", "task", "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let printed = text(&out);
        let row = printed
            .lines()
            .find(|l| l.contains("two⏎lines"))
            .unwrap_or_else(|| panic!("the task's row, on one line:\n{printed}"));
        if format == "markdown" {
            // Every row has as many cells as the header.
            let header = printed.lines().find(|l| l.starts_with("| task")).unwrap();
            let cells = |l: &str| l.matches(" | ").count();
            assert_eq!(cells(row), cells(header), "{row}\n{header}");
            assert!(row.contains("lines \\| bar"), "{row}");
        }
    }
}

#[test]
fn zero_steps_tokens_or_seconds_are_refused_by_name() {
    for (flag, value) in [
        ("--max-steps", "0"),
        ("--max-tokens", "0"),
        ("--max-time-s", "0"),
        ("--call-timeout-s", "0"),
        ("--startup-timeout-s", "0"),
    ] {
        let out = cosmos(&[
            "run",
            "--mcp-config",
            "x.json",
            "--task",
            "t.json",
            "--agent",
            "react",
            "--no-tui",
            flag,
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", text(&out));
        let said = text(&out);
        assert!(
            said.contains(flag) && said.contains("must be 1 or more"),
            "{said}"
        );
    }
}

#[test]
fn the_sample_sweeps_report_has_no_interval_outside_a_range_and_none_from_too_few_tasks() {
    let sweep = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/sweep");
    let out = cosmos(&[
        "report",
        sweep.to_str().unwrap(),
        "--baseline",
        "react",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ranges = [
        ("tool_call_success_rate", 0.0, 1.0),
        ("valid_tool_name_rate", 0.0, 1.0),
        ("input_schema_compliance", 0.0, 1.0),
        ("fidelity", 0.0, 1.0),
        ("execution_quality", 0.0, 100.0),
        ("execution_quality_anchored", 0.0, 100.0),
        ("tool_calls", 0.0, f64::INFINITY),
        ("tokens", 0.0, f64::INFINITY),
        ("wall_time_s", 0.0, f64::INFINITY),
    ];
    for group in doc["groups"].as_array().unwrap() {
        for (key, lo, hi) in ranges {
            let e = &group[key];
            if let Some([a, b]) = e["ci"]
                .as_array()
                .map(|c| [c[0].as_f64().unwrap(), c[1].as_f64().unwrap()])
            {
                assert!(a >= lo && b <= hi, "{key}: [{a}, {b}] outside [{lo}, {hi}]");
                assert!(b > a, "{key}: a zero-width interval");
            }
        }
    }
    // Two tasks per configuration: no paired interval at all, each saying why.
    for pair in doc["baseline"]["pairs"].as_array().unwrap() {
        if pair["n"].as_u64().unwrap() > 0 {
            assert!(pair["ci"].is_null(), "{pair}");
            assert_eq!(pair["interval"], "too_few", "{pair}");
        }
    }
}

#[test]
fn report_names_the_lines_it_skipped_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.jsonl", 3);
    // A line nested far deeper than any reader follows, in the middle of the run.
    let mut lines: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let deep = format!(
        r#"{{"seq":2,"t_ms":1,"kind":"answer","text":{}1{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    lines.insert(2, deep);
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let d = dir.path().to_str().unwrap();
    for format in ["table", "markdown", "csv", "json"] {
        let r = cosmos(&["report", d, "--format", format]);
        assert_eq!(r.status.code(), Some(0), "{}", text(&r));
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(stderr.contains("a.jsonl:3:"), "{format}: {stderr}");
        let stdout = String::from_utf8_lossy(&r.stdout);
        match format {
            "table" | "markdown" => assert!(
                stdout.contains("1 line(s) skipped") && stdout.contains("a.jsonl:3:"),
                "{format}: {stdout}"
            ),
            "json" => {
                let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
                let skipped = doc["skipped_lines"].as_array().unwrap();
                assert_eq!(skipped.len(), 1, "{doc}");
                assert!(skipped[0].as_str().unwrap().contains("a.jsonl:3:"));
            }
            _ => {}
        }
    }
}

/// The routing and calibration flags refuse what they cannot mean, by name, before anything
/// starts: a threshold outside [0, 1], routing for an agent that does not rehearse, and the
/// hybrid proxy's flags in another mode.
#[test]
fn routing_and_calibration_flags_refuse_what_they_cannot_mean() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = dir.path().join("mcp.json");
    fs::write(
        &mcp,
        r#"{"mcpServers": {"s": {"command": "does-not-start"}}}"#,
    )
    .unwrap();
    let task = dir.path().join("task.json");
    fs::write(&task, r#"{"id": "t", "request": "r"}"#).unwrap();
    let (mcp, task) = (mcp.to_str().unwrap(), task.to_str().unwrap());
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for (args, said) in [
        (
            vec![
                "wm-eval",
                "sample_runs",
                "--world-model",
                "memory",
                "--good-fidelity",
                "2",
                "--out",
                out,
            ],
            "--good-fidelity 2: must be from 0 to 1",
        ),
        (
            vec![
                "run",
                "--mcp-config",
                mcp,
                "--task",
                task,
                "--agent",
                "react",
                "--go-real-below",
                "0.5",
                "--no-tui",
                "--out",
                out,
            ],
            "--go-real-below routes a rehearsing agent's predictions",
        ),
        (
            vec![
                "run",
                "--mcp-config",
                mcp,
                "--task",
                task,
                "--agent",
                "spiral",
                "--go-real-below",
                "1.5",
                "--no-tui",
                "--out",
                out,
            ],
            "go_real_below = 1.5: must be from 0 to 1",
        ),
        (
            vec![
                "proxy",
                "--mcp-config",
                mcp,
                "--go-real-below",
                "0.5",
                "--out",
                out,
            ],
            "--go-real-below is for --mode hybrid",
        ),
        (
            vec![
                "proxy",
                "--mcp-config",
                mcp,
                "--mode",
                "shadow",
                "--world-model",
                "memory",
                "--simulate-writes",
                "--out",
                out,
            ],
            "--simulate-writes is for --mode hybrid",
        ),
    ] {
        let o = cosmos(&args);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(text(&o).contains(said), "{args:?}: {}", text(&o));
    }
    assert!(!Path::new(out).exists(), "nothing written");
}

/// A plain copy of a run (the same `run_id`) is the same run: `report` counts it once and says
/// which file it passed over, never counting it twice silently.
#[test]
fn a_copy_of_a_run_is_counted_once_and_said() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.jsonl", 1);
    write(dir.path(), "b.jsonl", 2);
    fs::copy(dir.path().join("a.jsonl"), dir.path().join("a-copy.jsonl")).unwrap();
    let out = cosmos(&["report", dir.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["runs"], 2, "{doc}");
    let said = doc["unreadable"].to_string();
    assert!(
        said.contains("a.jsonl")
            && said.contains("the same run as")
            && said.contains("counted once"),
        "{said}"
    );
    assert!(text(&out).contains("cosmos: skipped"), "{}", text(&out));
}
