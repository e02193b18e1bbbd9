//! `cosmos export`: the markdown and JSON accounts of a run, and transition datasets, checked
//! on the repository's sample runs; the `llm` world model's real requests (to the scripted
//! endpoint, over HTTP) are the examples' inputs.

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::*;

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs")
}

/// A sample run of `agent`, copied into `dir` (so notes can be appended to it).
fn sample_copy(dir: &Path, agent: &str) -> PathBuf {
    let source = std::fs::read_dir(samples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(&format!("_{agent}_")))
        .min()
        .expect("a sample run of the agent");
    let copy = dir.join(source.file_name().unwrap());
    std::fs::copy(&source, &copy).unwrap();
    copy
}

fn export(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .arg("export")
        .args(args)
        .env(
            "COSMOS_LOG_FILE",
            std::env::temp_dir().join(format!("cosmos-test-{}.log", std::process::id())),
        )
        .output()
        .unwrap()
}

#[test]
fn the_markdown_account_tells_the_plan_the_steps_side_by_side_and_the_notes() {
    let dir = tempfile::tempdir().unwrap();
    let run = sample_copy(dir.path(), "spiral");
    let note = cosmos_trajectory::event::EventBody::Annotation {
        node: Some(1),
        event: None,
        text: "this is where it went wrong".into(),
        who: "tester".into(),
    };
    let setup = cosmos_engine::probe::ProbeSetup::default();
    cosmos_engine::probe::annotate(&run, note, 1, &setup).unwrap();
    let o = export(&["markdown", run.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let md = String::from_utf8(o.stdout).unwrap();
    for section in [
        "## Task",
        "## Settings",
        "## Plan",
        "## Steps",
        "## Answer",
        "## Metrics",
        "## Notes",
    ] {
        assert!(md.contains(section), "{section} missing:\n{md}");
    }
    assert!(md.contains("Rule `best_mean`"), "{md}");
    assert!(md.contains("Simulated") && md.contains("Real"), "{md}");
    assert!(
        md.contains("note on #1 by tester: this is where it went wrong"),
        "{md}"
    );
    // The metrics are the run's one value, as the report gives it.
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "report",
            run.to_str().unwrap(),
            "--format",
            "json",
            "--per-run",
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&report.stdout).unwrap();
    let calls = doc["per_run"][0]["metrics"]["tool_calls"].as_u64().unwrap();
    assert!(md.contains(&format!("| tool calls | {calls} |")), "{md}");
}

#[test]
fn the_json_account_is_the_whole_run_in_one_document() {
    let dir = tempfile::tempdir().unwrap();
    let run = sample_copy(dir.path(), "react");
    let out = dir.path().join("run.json");
    let o = export(&[
        "json",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["format"], "mcp-cosmos-run");
    assert_eq!(doc["version"], 2);
    assert_eq!(doc["skipped_lines"], json!([]));
    let lines = std::fs::read_to_string(&run).unwrap();
    let lines: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(doc["header"]["run_id"], lines[0]["run_id"]);
    let events = doc["events"].as_array().unwrap();
    assert_eq!(events.len(), lines.len() - 1);
    assert_eq!(events.last().unwrap()["kind"], "run_finished");
    assert_eq!(
        doc["metrics"]["tool_calls"],
        lines.iter().filter(|e| e["kind"] == "tool_called").count()
    );
}

#[test]
fn transitions_are_one_example_per_real_call_split_by_task_and_the_llm_world_models_own_input() {
    let dir = tempfile::tempdir().unwrap();
    // The runs: every top-level sample run of ReAct (their real calls).
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    for entry in std::fs::read_dir(samples()).unwrap() {
        let p = entry.unwrap().path();
        if p.to_string_lossy().contains("_react_") {
            std::fs::copy(&p, runs.join(p.file_name().unwrap())).unwrap();
        }
    }
    let real_calls: usize = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| {
            std::fs::read_to_string(e.unwrap().path())
                .unwrap()
                .lines()
                .filter(|l| l.contains("\"kind\":\"tool_called\""))
                .count()
        })
        .sum();
    let out = dir.path().join("data");
    let o = export(&[
        "transitions",
        runs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--split",
        "0.5",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let read = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(out.join(name))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (train, test) = (read("train.jsonl"), read("test.jsonl"));
    let datasheet = std::fs::read_to_string(out.join("datasheet.md")).unwrap();
    assert!(
        datasheet.contains(&format!("from {real_calls} real calls")),
        "{datasheet}"
    );
    // One example per distinct real call: as many as real calls less the duplicates dropped.
    let all: Vec<&Value> = train.iter().chain(&test).collect();
    let inputs: BTreeSet<String> = all
        .iter()
        .map(|e| Value::from(e["messages"].as_array().unwrap()[..2].to_vec()).to_string())
        .collect();
    assert_eq!(inputs.len(), all.len(), "no input twice");
    assert!(!all.is_empty() && all.len() <= real_calls);
    // Never a task on both sides.
    let tasks = |side: &[Value]| -> BTreeSet<String> {
        side.iter()
            .map(|e| e["meta"]["task"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(tasks(&train).is_disjoint(&tasks(&test)));
    // Each example is system, user, then the real result as the world model's reply.
    for e in &all {
        let m = e["messages"].as_array().unwrap();
        assert_eq!(
            [&m[0]["role"], &m[1]["role"], &m[2]["role"]],
            ["system", "user", "assistant"]
        );
        let reply: Value = serde_json::from_str(m[2]["content"].as_str().unwrap()).unwrap();
        assert!(reply["is_error"].is_boolean() && reply["content"].is_string());
    }

    // The llm world model, asked to simulate the same calls (wm-eval against the scripted
    // endpoint), sends exactly the examples' inputs.
    let llm = ScriptedLlm::start(json!([
        {"when": "You simulate an MCP server", "content": predicted("{}", false)}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[world_models.scripted]\nkind = \"llm\"\nbase_url = \"{}\"\nmodel = \"wm\"\n",
            llm.base_url()
        ),
    )
    .unwrap();
    let eval = cosmos(
        &[
            "wm-eval",
            runs.to_str().unwrap(),
            "--world-model",
            "scripted",
            "--config",
            config.to_str().unwrap(),
            "--out",
            dir.path().join("eval").to_str().unwrap(),
        ],
        &llm,
        "x",
    );
    assert_eq!(eval.status.code(), Some(0), "{}", text(&eval));
    let sent: BTreeSet<String> = llm
        .requests()
        .iter()
        .map(|r| r["body"]["messages"].to_string())
        .collect();
    assert!(!sent.is_empty());
    assert_eq!(
        sent, inputs,
        "the world model's requests are the examples' inputs"
    );

    // Exported again without a split into the same folder: the earlier test set goes (the new
    // datasheet says there is none), and no `.partial` file is left.
    let again = export(&[
        "transitions",
        runs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["datasheet.md", "train.jsonl"]);
    assert_eq!(read("train.jsonl").len(), all.len());
}

/// A line written twice and a torn line: each account says it skipped them (the JSON in
/// `skipped_lines`, the Markdown under "Lines skipped", both on stderr), as `report` does.
#[test]
fn an_account_says_which_lines_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let run = sample_copy(dir.path(), "react");
    let text_of = std::fs::read_to_string(&run).unwrap();
    let mut lines: Vec<String> = text_of.lines().map(String::from).collect();
    let repeated = lines[2].clone();
    lines.insert(3, repeated);
    lines.insert(5, "{\"seq\":99,\"t_ms\":1,\"kind\":\"tool_ca".into());
    std::fs::write(&run, lines.join("\n") + "\n").unwrap();
    let reported: Value = serde_json::from_slice(
        &std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["report", run.to_str().unwrap(), "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let skipped = reported["skipped_lines"].as_array().unwrap().clone();
    assert_eq!(skipped.len(), 2, "{reported}");
    let json_out = export(&["json", run.to_str().unwrap()]);
    assert_eq!(json_out.status.code(), Some(0), "{}", text(&json_out));
    let doc: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(doc["skipped_lines"], Value::Array(skipped.clone()));
    let markdown = export(&["markdown", run.to_str().unwrap()]);
    let md = String::from_utf8_lossy(&markdown.stdout);
    assert!(md.contains("## Lines skipped"), "{md}");
    for (o, what) in [(&json_out, "json"), (&markdown, "markdown")] {
        let said = String::from_utf8_lossy(&o.stderr);
        for line in &skipped {
            let line = line.as_str().unwrap();
            assert!(md.contains(line), "{line} not in the account");
            assert!(said.contains(line), "{what} did not say {line}: {said}");
        }
    }
}

#[test]
fn no_escape_sequence_from_a_run_reaches_the_terminal_or_a_file() {
    // A model echoed terminal escapes into a tool's arguments and result: OSC 0 retitles the
    // terminal, CSI 2J clears it, U+009B is a one-character CSI, U+202E reverses text.
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}gnp.exe";
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("evil.jsonl");
    let header = json!({"format":"mcp-cosmos-trajectory","version":1,"kind":"run_started",
        "run_id":"evil","started_at":"2026-12-02T00:00:00Z","tool_version":"0.1.0",
        "task":{"id":"evil","request":format!("do {evil}")},
        "agent":{"kind":"react","settings":{}},"planner":{"base_url":"x","model":"m"},
        "servers":[],"tools":[]});
    let lines = [
        header.to_string(),
        json!({"seq":1,"t_ms":1,"kind":"tool_called","step":1,"tool":"s:t",
            "arguments":{"text": evil},"result":{"text": evil,"is_error":false},"latency_ms":1})
        .to_string(),
        json!({"seq":2,"t_ms":2,"kind":"answer","text": evil}).to_string(),
        json!({"seq":3,"t_ms":3,"kind":"run_finished","status":"completed",
            "totals":{"events":3,"tool_calls":1,"tool_errors":0,"nodes":0,"llm_calls":0,"tokens":0,"wall_ms":3}})
        .to_string(),
    ];
    std::fs::write(&run, lines.join("\n") + "\n").unwrap();
    let raw = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        text.chars()
            .filter(|c| {
                (c.is_control() && !matches!(c, '\n' | '\t'))
                    || matches!(c, '\u{202a}'..='\u{202e}')
            })
            .count()
    };
    let markdown = export(&["markdown", run.to_str().unwrap()]);
    assert_eq!(markdown.status.code(), Some(0), "{}", text(&markdown));
    assert_eq!(
        raw(&markdown.stdout),
        0,
        "{}",
        String::from_utf8_lossy(&markdown.stdout)
    );
    assert!(String::from_utf8_lossy(&markdown.stdout).contains("\\u{1b}]0;pwned"));
    let json_out = export(&["json", run.to_str().unwrap()]);
    assert_eq!(json_out.status.code(), Some(0), "{}", text(&json_out));
    assert_eq!(raw(&json_out.stdout), 0);
    // Still the same document: the escapes are JSON escapes.
    let doc: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert!(doc.to_string().contains("pwned"));
    let events = doc["events"].as_array().unwrap();
    assert_eq!(events[0]["arguments"]["text"], evil);
    // A file gets the same inert text.
    let file = dir.path().join("evil.md");
    let to_file = export(&[
        "markdown",
        run.to_str().unwrap(),
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(to_file.status.code(), Some(0), "{}", text(&to_file));
    assert_eq!(raw(&std::fs::read(&file).unwrap()), 0);
}

#[test]
fn a_key_from_any_credential_variable_is_cut_from_an_export() {
    // Pasted into a run's answer, a key that only the environment names (as a role's
    // `api_key_env` would): the export knows it by its variable's name.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("pasted.jsonl");
    let secret = "zz-planted-9876-secret-value";
    let header = json!({"format":"mcp-cosmos-trajectory","version":1,"kind":"run_started",
        "run_id":"p","started_at":"2026-12-02T00:00:00Z","tool_version":"0.1.0",
        "task":{"id":"p","request":"r"},"agent":{"kind":"react","settings":{}},
        "planner":{"base_url":"x","model":"m"},"servers":[],"tools":[]});
    let lines = [
        header.to_string(),
        json!({"seq":1,"t_ms":1,"kind":"answer","text": format!("the key is {secret}")}).to_string(),
        json!({"seq":2,"t_ms":2,"kind":"run_finished","status":"completed",
            "totals":{"events":2,"tool_calls":0,"tool_errors":0,"nodes":0,"llm_calls":0,"tokens":0,"wall_ms":2}})
        .to_string(),
    ];
    std::fs::write(&run, lines.join("\n") + "\n").unwrap();
    for format in ["markdown", "json"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["export", format, run.to_str().unwrap()])
            .env("MY_WORLD_MODEL_KEY", secret)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(!printed.contains(secret), "{format}: {printed}");
        assert!(printed.contains("the key is"), "{format}: {printed}");
    }
}

/// The files in `dir` whose names end in `.partial`, but for `planted`.
fn partials_in(dir: &Path, planted: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial") && !planted.contains(&n.as_str()))
        .collect()
}

/// Hardening VI: no export writes through a link planted at a name it could use (the old
/// `OUT.partial`, or a guess at its random name), a link the user names is written through to
/// its target and stays a link, a pipe is written as a stream, a folder or a full device is an
/// error that leaves nothing, and a closed stdout is an error, not a silent success.
#[test]
fn no_export_writes_through_a_planted_link_and_a_named_link_or_pipe_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let run = sample_copy(dir.path(), "react");
    let run = run.to_str().unwrap();
    let victim = dir.path().join("bashrc");
    std::fs::write(&victim, "mine").unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mut planted = Vec::new();
    for (format, flag, name) in [
        ("markdown", "-o", "account.md"),
        ("json", "-o", "account.json"),
        ("atif", "-o", "run.atif.json"),
        ("otel", "--out", "spans.json"),
    ] {
        for p in [format!("{name}.partial"), format!(".{name}.partial")] {
            std::os::unix::fs::symlink(&victim, out.join(&p)).unwrap();
            planted.push(p);
        }
        let target = out.join(name);
        let done = export(&[format, run, flag, target.to_str().unwrap()]);
        assert!(done.status.success(), "{format}: {done:?}");
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "mine",
            "{format}"
        );
        assert!(std::fs::metadata(&target).unwrap().len() > 0, "{format}");
        let planted: Vec<&str> = planted.iter().map(String::as_str).collect();
        assert_eq!(
            partials_in(&out, &planted),
            Vec::<String>::new(),
            "{format}"
        );
    }
    // A dataset's files likewise.
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::os::unix::fs::symlink(&victim, data.join("train.jsonl.partial")).unwrap();
    let done = export(&["transitions", run, "--out", data.to_str().unwrap()]);
    assert!(done.status.success(), "{done:?}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    assert!(
        std::fs::metadata(data.join("train.jsonl"))
            .unwrap()
            .is_file()
    );
    // A link the user names: written through, and still a link.
    let real = dir.path().join("real.md");
    std::fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let done = export(&["markdown", run, "-o", link.to_str().unwrap()]);
    assert!(done.status.success(), "{done:?}");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert!(std::fs::read_to_string(&real).unwrap().starts_with("# "));
    // A link to a stream: standard output (a pipe here) gets the account, the link stays.
    let to_stdout = dir.path().join("to-stdout.md");
    std::os::unix::fs::symlink("/dev/stdout", &to_stdout).unwrap();
    let done = export(&["markdown", run, "-o", to_stdout.to_str().unwrap()]);
    assert!(done.status.success(), "{done:?}");
    assert!(String::from_utf8_lossy(&done.stdout).starts_with("# "));
    assert!(std::fs::symlink_metadata(&to_stdout).unwrap().is_symlink());
    // A folder is refused before anything is made; a full device is an error.
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    let done = export(&["json", run, "-o", folder.to_str().unwrap()]);
    assert!(!done.status.success());
    assert!(
        String::from_utf8_lossy(&done.stderr).contains("is a folder"),
        "{done:?}"
    );
    assert_eq!(partials_in(dir.path(), &[]), Vec::<String>::new());
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    let done = export(&["json", run, "-o", "/dev/full"]);
    assert!(!done.status.success(), "{done:?}");
    // A closed standard output: nothing was written, and the export says so.
    let closed = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" export atif '{run}' >&-"))
        .arg(env!("CARGO_BIN_EXE_cosmos"))
        .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
        .output()
        .unwrap();
    assert!(!closed.status.success(), "{closed:?}");
    assert!(
        String::from_utf8_lossy(&closed.stderr).contains("standard output is closed"),
        "{closed:?}"
    );
    // The log opened after it never took the closed output's place.
    let log = std::fs::read_to_string(dir.path().join("cosmos.log")).unwrap_or_default();
    assert!(
        !log.contains("\"steps\""),
        "the account went into the log: {log}"
    );
}
