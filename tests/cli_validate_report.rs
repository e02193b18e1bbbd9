//! The `validate` and `report` commands, run as a user runs them: the real binary.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use mcp_cosmos::trajectory::synthetic::{self, Spec};

fn cosmos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join("cosmos-test.log"),
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
        mcp_cosmos::metrics::run::RunAccumulator::tally,
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

#[test]
fn validate_finds_dangling_node_references() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.jsonl", 3);
    let mut lines: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.insert(
        4,
        r#"{"seq":4,"t_ms":9,"kind":"backpropagated","path":[0,4242],"value":0.5}"#.into(),
    );
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = cosmos(&["validate", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains(":5: error: backpropagated refers to node 4242"),
        "{}",
        text(&out)
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
        // Rates (and fidelity, a score in [0, 1]) get Wilson's interval, inside [0, 1] and
        // not symmetric, so no half-width; the rest mean ± t·s/√n.
        let rate = ["tool_call_success_rate", "fidelity"].contains(&key);
        assert_eq!(row[key]["ci95"].is_null(), rate, "{key}");
        if rate {
            assert!(lo >= 0.0 && hi <= 1.0, "{key}");
        }
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
    assert!(md.starts_with("| task"), "{md}");
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
            std::env::temp_dir().join("cosmos-test.log"),
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
    let listed = mcp_cosmos::trajectory::listing::list_runs(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(listed.len(), 1);
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
