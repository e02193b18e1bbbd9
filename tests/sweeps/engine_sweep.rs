//! `cosmos sweep` end to end: the real binary, real servers, the scripted endpoint; cells named
//! after their content, resumed, set aside when torn, and sharded without overlap.

use crate::support;

use std::collections::BTreeSet;

use serde_json::{Value, json};
use support::*;

fn utc_to(target: &str) -> Value {
    json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": target})
}

fn runs_in(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

#[test]
fn a_sweep_runs_its_cells_resumes_sets_aside_and_shards() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    let tasks = dir.path().join("tasks.json");
    std::fs::copy(bench_tasks(), &tasks).unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo.")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let spec = dir.path().join("sweep.toml");
    std::fs::write(
        &spec,
        format!(
            "mcp_config = \"{}\"\nrepeats = 1\n[[tasks]]\nfile = \"tasks.json\"\nids = [\"time_mcp_000\", \"time_mcp_001\"]\n\
             [[configs]]\nname = \"react-1\"\nagent = \"react\"\nmax_steps = 1\n\
             [[configs]]\nname = \"react-2\"\nagent = \"react\"\nmax_steps = 2\n",
            mcp.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let sweep = |extra: &[&str]| {
        let mut args = vec![
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        cosmos(&args, &llm, "sk-test-sweep-0123456789")
    };

    // Each cell's run also goes to an OpenTelemetry receiver, here one that is down: every
    // run says so in an `error` event and the sweep goes on.
    let dead = dead_port();
    let down = format!("http://127.0.0.1:{}", dead.port);
    let first = sweep(&["--jobs", "2", "--no-tui", "--otel-endpoint", &down]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let files = runs_in(&out);
    assert_eq!(files.len(), 4, "{files:?}");
    for f in &files {
        assert!(
            events(f)
                .iter()
                .any(|e| e["kind"] == "error" && e["source"] == "otel"),
            "{}",
            f.display()
        );
    }
    assert!(text(&first).contains("[4/4]"), "{}", text(&first));
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            name.contains("_time_mcp_00") && name.ends_with("_r1.jsonl"),
            "{name}"
        );
    }

    // The same spec again: nothing to run.
    let again = sweep(&["--no-tui"]);
    assert!(
        text(&again).contains("4 done already, 0 to run"),
        "{}",
        text(&again)
    );
    assert_eq!(runs_in(&out), files, "the same files, not new ones");

    // A torn run is set aside, not overwritten, and run again.
    let torn = &files[0];
    let content = std::fs::read_to_string(torn).unwrap();
    let cut: Vec<&str> = content.lines().collect();
    std::fs::write(torn, cut[..cut.len() - 1].join("\n") + "\n").unwrap();
    let status = sweep(&["--status"]);
    assert!(text(&status).contains("incomplete"), "{}", text(&status));
    let resumed = sweep(&["--no-tui"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert!(
        text(&resumed).contains("3 done already, 1 to run"),
        "{}",
        text(&resumed)
    );
    assert!(text(&resumed).contains("set aside"), "{}", text(&resumed));
    assert_eq!(runs_in(&out).len(), 4);
    let aside = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".set-aside-")
        })
        .count();
    assert_eq!(aside, 1, "the torn run is kept beside");

    // Two shards take every cell once.
    let ids = |o: &std::process::Output| -> BTreeSet<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.contains(" r1 "))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    let a = ids(&sweep(&["--status", "--shard", "1/2"]));
    let b = ids(&sweep(&["--status", "--shard", "2/2"]));
    assert_eq!(a.len() + b.len(), 4, "{a:?} {b:?}");
    assert!(a.is_disjoint(&b));
    assert!(!a.is_empty() && !b.is_empty());
    let bad = sweep(&["--status", "--shard", "3/2"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad).contains("I runs from 1 to N"), "{}", text(&bad));
}

#[test]
fn emitted_cluster_jobs_parse_and_auto_shards_match_their_index() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(dir.path(), bench_servers());
    std::fs::copy(bench_tasks(), dir.path().join("tasks.json")).unwrap();
    let spec = dir.path().join("paper.toml");
    std::fs::write(
        &spec,
        format!(
            "mcp_config = \"{}\"\nrepeats = 2\n[[tasks]]\nfile = \"tasks.json\"\nids = [\"time_mcp_000\", \"time_mcp_001\"]\n\
             [[configs]]\nname = \"react\"\nagent = \"react\"\nmax_steps = 2\n\
             [[configs]]\nname = \"plan-exec\"\nagent = \"plan-exec\"\nworld_model = \"llm\"\n\
             [[configs]]\nname = \"spiral\"\nagent = \"spiral\"\nworld_model = \"llm\"\niterations = 3\n",
            mcp.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let cosmos_env = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"));
        cmd.args(args)
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("SLURM_ARRAY_TASK_COUNT");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let spec_s = spec.to_str().unwrap();
    let k8s = cosmos_env(&["sweep", spec_s, "--emit", "k8s", "--shards", "3"], &[]);
    assert_eq!(k8s.status.code(), Some(0), "{}", text(&k8s));
    let manifest: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(&k8s.stdout).expect("the manifest is YAML");
    assert_eq!(manifest["kind"], "Job");
    assert_eq!(manifest["spec"]["completionMode"], "Indexed");
    assert_eq!(manifest["spec"]["completions"], 3);
    let command = &manifest["spec"]["template"]["spec"]["containers"][0]["command"];
    assert_eq!(command[0], "cosmos");
    assert!(command.as_sequence().unwrap().iter().any(|a| a == "auto"));
    let slurm = cosmos_env(&["sweep", spec_s, "--emit", "slurm", "--shards", "3"], &[]);
    assert!(String::from_utf8_lossy(&slurm.stdout).contains("#SBATCH --array=0-2"));
    // Trace options are not written into a job (a header may hold a key); the user is told.
    let traced = cosmos_env(
        &[
            "sweep",
            spec_s,
            "--emit",
            "slurm",
            "--shards",
            "3",
            "--otel-endpoint",
            "http://127.0.0.1:9/",
            "--otel-header",
            "authorization=Bearer sk-job-0123456789",
        ],
        &[],
    );
    assert_eq!(traced.status.code(), Some(0), "{}", text(&traced));
    assert!(!String::from_utf8_lossy(&traced.stdout).contains("sk-job"));
    assert!(
        String::from_utf8_lossy(&traced.stderr).contains("not copied into the job"),
        "{}",
        text(&traced)
    );

    let ids = |o: &std::process::Output| -> BTreeSet<String> {
        assert_eq!(o.status.code(), Some(0), "{}", text(o));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.contains(" r1 ") || l.contains(" r2 "))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    let mut all = BTreeSet::new();
    for i in 1..=3 {
        let by_flag = ids(&cosmos_env(
            &["sweep", spec_s, "--status", "--shard", &format!("{i}/3")],
            &[],
        ));
        let index = (i - 1).to_string();
        let k8s = ids(&cosmos_env(
            &[
                "sweep", spec_s, "--status", "--shard", "auto", "--shards", "3",
            ],
            &[("JOB_COMPLETION_INDEX", &index)],
        ));
        let slurm = ids(&cosmos_env(
            &["sweep", spec_s, "--status", "--shard", "auto"],
            &[
                ("SLURM_ARRAY_TASK_ID", &index),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ],
        ));
        assert_eq!(by_flag, k8s, "shard {i}");
        assert_eq!(by_flag, slurm, "shard {i}");
        assert!(all.is_disjoint(&by_flag));
        all.extend(by_flag);
    }
    assert_eq!(
        all.len(),
        12,
        "2 tasks × 3 configurations × 2 repeats, each in one shard"
    );
}

#[test]
fn a_cell_whose_servers_never_start_is_retried_then_left_to_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"Time MCP": {"command": "/nonexistent/time-server"}}),
    );
    std::fs::copy(bench_tasks(), dir.path().join("tasks.json")).unwrap();
    let spec = dir.path().join("broken.toml");
    std::fs::write(
        &spec,
        format!(
            "mcp_config = \"{}\"\n[[tasks]]\nfile = \"tasks.json\"\nids = [\"time_mcp_000\"]\n\
             [[configs]]\nname = \"react\"\nagent = \"react\"\nmax_steps = 1\n",
            mcp.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([]));
    let args = [
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-tui",
    ];
    let first = cosmos(&args, &llm, "sk-test-sweep-0123456789");
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    assert!(text(&first).contains("could not run"), "{}", text(&first));
    assert!(
        text(&first).contains("no MCP server could be started"),
        "{}",
        text(&first)
    );
    assert!(
        runs_in(&out).is_empty(),
        "a failure of the machinery is not a result"
    );
    let status = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--status",
        ],
        &llm,
        "x",
    );
    assert!(text(&status).contains("missing"), "{}", text(&status));
}

/// A spec of the two time tasks × `configs` (name, max_steps) × `repeats`, ReAct each, over the
/// fixture's servers; returns its path.
/// An endpoint whose ReAct planner makes one real call, then holds its next reply until
/// `release` exists: a cell is mid-way for as long as a test needs.
fn held_after_one_call(release: &std::path::Path) -> ScriptedLlm {
    ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo."),
         "hold_until_file": release.to_str().unwrap()},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]))
}

fn react_spec(dir: &std::path::Path, configs: &[(&str, u32)], repeats: u32) -> std::path::PathBuf {
    let mcp = write_mcp_config(dir, bench_servers());
    std::fs::copy(bench_tasks(), dir.join("tasks.json")).unwrap();
    let mut text = format!(
        "mcp_config = \"{}\"\nrepeats = {repeats}\n[[tasks]]\nfile = \"tasks.json\"\nids = [\"time_mcp_000\", \"time_mcp_001\"]\n",
        mcp.file_name().unwrap().to_str().unwrap()
    );
    for (name, steps) in configs {
        text.push_str(&format!(
            "[[configs]]\nname = \"{name}\"\nagent = \"react\"\nmax_steps = {steps}\n"
        ));
    }
    let spec = dir.join("sweep.toml");
    std::fs::write(&spec, text).unwrap();
    spec
}

#[test]
fn three_shards_run_into_one_folder_each_cell_once() {
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo.")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let spec = react_spec(dir.path(), &[("one", 1), ("two", 2), ("three", 3)], 2);
    let out = dir.path().join("shared");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // Three shards at once, as three processes on one shared folder.
    let shards: Vec<_> = (1..=3)
        .map(|i| {
            let a = args(&["--shard", &format!("{i}/3"), "--jobs", "2", "--no-tui"]);
            let llm_url = llm.base_url();
            std::thread::spawn(move || {
                std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
                    .args(&a)
                    .env("OPENAI_BASE_URL", llm_url)
                    .env("OPENAI_API_KEY", "sk-test-shards-0123456789")
                    .env("COSMOS_MODEL", "scripted-model")
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for shard in shards {
        let o = shard.join().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    let files = runs_in(&out);
    assert_eq!(files.len(), 12, "2 tasks × 3 configurations × 2 repeats");
    let status = cosmos(&args(&["--status"]), &llm, "sk-x");
    assert!(
        text(&status).contains("12 cell(s) here of 12: 12 done"),
        "{}",
        text(&status)
    );
    let again = cosmos(&args(&["--no-tui"]), &llm, "sk-x");
    assert!(
        text(&again).contains("12 done already, 0 to run"),
        "{}",
        text(&again)
    );
    assert_eq!(runs_in(&out), files, "nothing run twice");
    // Every planner request came from one of the 12 runs: 12 first calls, no more.
    let first_calls = llm
        .requests()
        .iter()
        .filter(|r| {
            r["body"]
                .to_string()
                .contains("No tool has been called yet")
        })
        .count();
    assert_eq!(first_calls, 12);
    // The report's groups are the sweep's configurations, by name.
    let report = cosmos(
        &["report", out.to_str().unwrap(), "--format", "json"],
        &llm,
        "sk-x",
    );
    let doc: Value = serde_json::from_slice(&report.stdout).expect("JSON report");
    let keys: BTreeSet<&str> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, BTreeSet::from(["one", "two", "three"]));
    assert!(
        doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["runs"] == 4)
    );
}

#[test]
fn a_sweep_killed_mid_cell_resumes_with_only_its_unfinished_cells_and_every_file_validates() {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    let llm = held_after_one_call(&release);
    let spec = react_spec(dir.path(), &[("short", 2), ("long", 3)], 1);
    let out = dir.path().join("out");
    let base = [
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let mut sweep = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(base)
        .args(["--no-tui", "--jobs", "1"])
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-kill-0123456789")
        .env("COSMOS_MODEL", "scripted-model")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The first cell has made its real call and waits on its planner: mid-cell.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let mid = out.exists()
            && runs_in(&out).iter().any(|f| {
                std::fs::read_to_string(f)
                    .unwrap_or_default()
                    .contains("\"tool_called\"")
            });
        if mid {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no cell got going");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let status = cosmos(&[&base[..], &["--status"]].concat(), &llm, "sk-x");
    let pid = format!("running (pid {}", sweep.id());
    assert!(text(&status).contains(&pid), "{}", text(&status));
    assert!(
        text(&status).contains("1 running, 3 missing"),
        "{}",
        text(&status)
    );

    sweep.kill().unwrap(); // SIGKILL: no chance to end anything
    sweep.wait().unwrap();
    let status = cosmos(&[&base[..], &["--status"]].concat(), &llm, "sk-x");
    assert!(
        text(&status).contains("1 incomplete, 3 missing"),
        "a dead process holds no claim: {}",
        text(&status)
    );

    std::fs::write(&release, "").unwrap();
    let resumed = cosmos(&[&base[..], &["--no-tui"]].concat(), &llm, "sk-x");
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    assert!(
        text(&resumed).contains("0 done already, 4 to run"),
        "{}",
        text(&resumed)
    );
    assert!(text(&resumed).contains("set aside"), "{}", text(&resumed));
    assert_eq!(runs_in(&out).len(), 4);
    let validate = cosmos(&["validate", out.to_str().unwrap()], &llm, "sk-x");
    assert_eq!(validate.status.code(), Some(0), "{}", text(&validate));
    let status = cosmos(&[&base[..], &["--status"]].concat(), &llm, "sk-x");
    assert!(text(&status).contains("4 done"), "{}", text(&status));
}

use crate::common::tmux;

/// `cosmos sweep` with its matrix in a real terminal, two cells, one at a time, each held at
/// its second planner call until `release` exists.
fn held_sweep(
    dir: &std::path::Path,
) -> (
    tmux::Tmux,
    ScriptedLlm,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let release = dir.join("release");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo."),
         "hold_until_file": release.to_str().unwrap()},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let spec = react_spec(dir, &[("react", 2)], 1);
    let out = dir.join("out");
    let base = llm.base_url();
    let t = tmux::Tmux::start_with_env(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[
            ("OPENAI_BASE_URL", &base),
            ("OPENAI_API_KEY", "sk-test-matrix-0123456789"),
            ("COSMOS_MODEL", "scripted-model"),
        ],
        140,
        30,
    );
    // The first cell has made its real call; its planner is held.
    t.wait_for_all(&["Sweep", "▶ 1 call", "queued"]);
    (t, llm, release, out)
}

#[test]
fn the_matrix_follows_a_running_cell_into_its_run_and_shows_the_sweep_end() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _llm, release, out) = held_sweep(dir.path());
    t.keys(&["Enter"]);
    t.wait_for_all(&["LIVE", "tool_called"]);
    std::fs::write(&release, "").unwrap();
    t.wait_for("finished (completed)");
    t.keys(&["Escape"]);
    t.wait_for_all(&["2 completed", "sweep over"]);
    t.keys(&["q"]);
    t.wait_exit();
    assert_eq!(runs_in(&out).len(), 2);
}

#[test]
fn leaving_a_running_sweeps_matrix_asks_and_can_leave_it_to_finish_printing_progress() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _llm, release, out) = held_sweep(dir.path());
    t.keys(&["q"]);
    t.wait_for("Leave the sweep?");
    t.keys(&["Escape"]);
    t.wait_until("the question closed", |s| !s.contains("Leave the sweep?"));
    t.keys(&["q"]);
    t.wait_for("Leave the sweep?");
    t.keys(&["l"]);
    t.wait_for("the sweep goes on without the view");
    std::fs::write(&release, "").unwrap();
    t.wait_exit();
    let raw = String::from_utf8_lossy(&t.raw()).to_string();
    assert!(
        raw.contains("[2/2]"),
        "progress lines after leaving:\n{raw}"
    );
    assert_eq!(runs_in(&out).len(), 2);
    for f in runs_in(&out) {
        let ev = events(&f);
        assert_eq!(ev.last().unwrap()["status"], "completed", "{}", f.display());
    }
}

#[test]
fn a_task_set_without_ids_takes_the_tasks_whose_servers_are_configured_and_lists_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // Only the time server: the unit converter's tasks are left out, and said so.
    let mcp = write_mcp_config(
        dir.path(),
        json!({"Time MCP": bench_servers()["Time MCP"].clone()}),
    );
    std::fs::copy(bench_tasks(), dir.path().join("tasks.json")).unwrap();
    let spec = dir.path().join("all.toml");
    std::fs::write(
        &spec,
        format!(
            "mcp_config = \"{}\"\n[[tasks]]\nfile = \"tasks.json\"\n[[configs]]\nname = \"react\"\nagent = \"react\"\n",
            mcp.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let llm = ScriptedLlm::start(json!([]));
    let status = cosmos(&["sweep", spec.to_str().unwrap(), "--status"], &llm, "sk-x");
    let out = text(&status);
    assert_eq!(status.status.code(), Some(0), "{out}");
    assert!(out.contains("2 cell(s) here of 2"), "{out}");
    assert!(
        out.contains("time_mcp_000") && out.contains("time_mcp_001"),
        "{out}"
    );
    assert!(
        out.contains("2 task(s) left out")
            && out.contains("unit_converter_000 (needs Unit Converter"),
        "{out}"
    );
}

#[test]
fn a_cell_whose_model_endpoint_never_answers_is_retried_then_runs_once_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    // An endpoint that hangs up on every request (its port held for the whole test).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    let config = dir.path().join("cosmos.toml");
    let endpoint = |port: u16| {
        format!(
            "[default]\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"scripted-model\"\nmax_retries = 0\n"
        )
    };
    std::fs::write(&config, endpoint(dead)).unwrap();
    let spec = react_spec(dir.path(), &[("react", 2)], 1);
    let text_of_spec = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("config = \"cosmos.toml\"\n{text_of_spec}")).unwrap();
    let out = dir.path().join("out");
    let llm = ScriptedLlm::start(json!([
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo.")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let args = [
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-tui",
        "--jobs",
        "2",
    ];
    let down = cosmos(&args, &llm, "sk-test-down-0123456789");
    let said = text(&down);
    assert_eq!(down.status.code(), Some(1), "{said}");
    assert!(
        said.contains("could not run: the model endpoint never answered"),
        "{said}"
    );
    assert!(runs_in(&out).is_empty(), "not a result: {said}");
    // The endpoint is back: the same sweep runs both cells.
    std::fs::write(&config, endpoint(llm.port())).unwrap();
    let up = cosmos(&args, &llm, "sk-test-down-0123456789");
    assert_eq!(up.status.code(), Some(0), "{}", text(&up));
    assert!(
        text(&up).contains("0 done already, 2 to run"),
        "{}",
        text(&up)
    );
    assert_eq!(runs_in(&out).len(), 2);
}

#[test]
fn a_shard_stopped_by_sigterm_exits_non_zero_as_its_job_contract_needs() {
    // Kubernetes sends SIGTERM on eviction and counts an Indexed Job's index as done when its
    // pod exits 0: the shard must exit non-zero while cells are left, and the next run resumes.
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    let llm = held_after_one_call(&release);
    let spec = react_spec(dir.path(), &[("short", 2)], 1);
    let out = dir.path().join("out");
    // The command the emitted Job runs, as it is written there.
    let k8s = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--emit",
            "k8s",
            "--shards",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &llm,
        "sk-x",
    );
    let manifest: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&k8s.stdout).unwrap();
    let container = &manifest["spec"]["template"]["spec"]["containers"][0];
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    // The runs volume is mounted at `mount` in the pod; here it is `out`.
    let command: Vec<String> = container["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .map(|a| if a == mount { out.to_str().unwrap() } else { a }.to_string())
        .collect();
    assert_eq!(command[0], "cosmos");
    assert_eq!(
        manifest["spec"]["backoffLimitPerIndex"], 2,
        "a failed index is retried"
    );
    let mut shard = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(&command[1..])
        .env("JOB_COMPLETION_INDEX", "0")
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-term-0123456789")
        .env("COSMOS_MODEL", "scripted-model")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while !(out.exists()
        && runs_in(&out).iter().any(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .contains("\"tool_called\"")
        }))
    {
        if std::time::Instant::now() > deadline {
            let _ = shard.kill();
            let o = shard.wait_with_output().unwrap();
            panic!("no cell got going: {command:?}\n{}", text(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: a signal to the child this test started.
    unsafe {
        libc::kill(shard.id() as libc::pid_t, libc::SIGTERM);
    }
    let ended = shard.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&ended.stderr).to_string();
    assert_eq!(ended.status.code(), Some(130), "{said}");
    assert!(said.contains("rerun the same command to resume"), "{said}");
    // The retried index resumes and, with every cell done, succeeds.
    std::fs::write(&release, "").unwrap();
    let retried = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(&command[1..])
        .env("JOB_COMPLETION_INDEX", "0")
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test-term-0123456789")
        .env("COSMOS_MODEL", "scripted-model")
        .output()
        .unwrap();
    assert_eq!(retried.status.code(), Some(0), "{}", text(&retried));
}

#[test]
fn a_sweep_with_judge_judges_every_finished_cell_with_its_configs_trials_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = react_spec(dir.path(), &[("react", 2)], 1);
    // judge = true with a config whose [judge] asks for two trials from seed 7.
    let text_of = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        format!("judge = true\nconfig = \"cosmos.toml\"\n{text_of}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("cosmos.toml"),
        "[judge]\ntrials = 2\nseed = 7\n",
    )
    .unwrap();
    let mut scores = json!({});
    for d in cosmos_engine::judge::DIMENSIONS {
        scores[format!("{d}_reasoning")] = json!("half of it");
        scores[d] = json!(5);
    }
    let llm = ScriptedLlm::start(json!([
        {"when": "You grade how", "content": scores},
        {"when": "1. Time MCP:convert_time", "content": finish("09:00 UTC is 18:00 in Tokyo.")},
        {"when": "No tool has been called yet", "content": call("Time MCP:convert_time", utc_to("Asia/Tokyo"))}
    ]));
    let out = cosmos(&["sweep", spec.to_str().unwrap(), "--no-tui"], &llm, "sk-x");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let files = runs_in(&dir.path().join("runs/sweep"));
    assert_eq!(files.len(), 2);
    for f in &files {
        let last = events(f).pop().unwrap();
        assert_eq!(last["kind"], "judge_scored", "{}", f.display());
        assert_eq!(last["judging"]["seed"], 7);
        assert_eq!(last["judging"]["trials"].as_array().unwrap().len(), 2);
    }
    let judge_requests = |llm: &ScriptedLlm| {
        llm.requests()
            .iter()
            .filter(|r| r["body"].to_string().contains("You grade how"))
            .count()
    };
    assert_eq!(judge_requests(&llm), 4, "two cells, two trials each");
    // Run again: every cell is done and judged, so nothing is asked or appended.
    let sizes: Vec<u64> = files.iter().map(|f| f.metadata().unwrap().len()).collect();
    let again = cosmos(&["sweep", spec.to_str().unwrap(), "--no-tui"], &llm, "sk-x");
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(judge_requests(&llm), 4);
    assert!(
        !text(&again).contains("already judged"),
        "a sweep passes its judged cells quietly: {}",
        text(&again)
    );
    let after: Vec<u64> = files.iter().map(|f| f.metadata().unwrap().len()).collect();
    assert_eq!(sizes, after);
}

/// A sweep of `tasks` (id, request) × one ReAct configuration on the fault-test server, whose
/// starts are counted in `dir/starts.txt`; `shared` declares it stateless in `mcp.json`.
fn flaky_sweep(dir: &std::path::Path, tasks: &[(&str, &str)], shared: bool) -> std::path::PathBuf {
    let mut server = flaky_server();
    server["env"] = json!({"FLAKY_STARTS_FILE": dir.join("starts.txt").display().to_string()});
    server["cosmos"] = json!({"shared": shared});
    write_mcp_config(dir, json!({"flaky": server}));
    let tasks: Vec<Value> = tasks
        .iter()
        .map(|(id, request)| json!({"id": id, "request": request}))
        .collect();
    std::fs::write(dir.join("tasks.json"), json!({"tasks": tasks}).to_string()).unwrap();
    react_sweep_spec(dir, (2, 3))
}

fn starts(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("starts.txt"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// A server declared stateless is started once per worker and used by its cells one after
/// another; the sweep's results are those of a sweep that starts it for every cell.
#[test]
fn a_shared_stateless_server_starts_once_per_worker_with_the_same_results() {
    let llm = ScriptedLlm::start(json!([
        {"when": "1. flaky:ok", "content": finish("said")},
        {"when": "No tool has been called yet", "content": call("flaky:ok", json!({"text": "hi"}))}
    ]));
    let mut reports = Vec::new();
    for (shared, expected) in [(false, 4), (true, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let spec = flaky_sweep(
            dir.path(),
            &[("say_1", "Say hi."), ("say_2", "Say hi again.")],
            shared,
        );
        let out = dir.path().join("runs");
        sweep_of(&spec, &out, 2, &llm);
        assert_eq!(
            starts(dir.path()),
            expected,
            "shared: {shared} (2 workers, 4 cells)"
        );
        for run in runs_in(&out) {
            let ev = events(&run);
            assert_eq!(
                ev[0]["servers"][0]["shared"].as_bool().unwrap_or(false),
                shared
            );
            let called = ev.iter().find(|e| e["kind"] == "tool_called").unwrap();
            assert_eq!(called["result"]["text"], "ok: hi");
        }
        let report = cosmos(
            &["report", out.to_str().unwrap(), "--format", "json"],
            &llm,
            "sk-x",
        );
        let mut doc: Value = serde_json::from_slice(&report.stdout).expect("JSON report");
        let groups = doc["groups"].take();
        let counts: Vec<(Value, Value, Value)> = groups
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["key"].clone(),
                    g["tool_call_success_rate"]["mean"].clone(),
                    g["tokens"]["mean"].clone(),
                )
            })
            .collect();
        reports.push(counts);
    }
    assert_eq!(reports[0], reports[1], "sharing changes no result");
}

/// A shared server that dies in one cell is started again for the next; the cell that saw it
/// die records it as any run does.
#[test]
fn a_shared_server_that_died_is_started_again_for_the_next_cell() {
    let llm = ScriptedLlm::start(json!([
        {"when": "1. flaky:", "content": finish("done")},
        {"when": "Please die", "content": call("flaky:die", json!({"text": "bye"}))},
        {"when": "No tool has been called yet", "content": call("flaky:ok", json!({"text": "hi"}))}
    ]));
    let dir = tempfile::tempdir().unwrap();
    let spec = flaky_sweep(
        dir.path(),
        &[("die_1", "Please die."), ("say_1", "Say hi.")],
        true,
    );
    // One configuration, so the dying cell comes first: `one` only.
    let text_spec = std::fs::read_to_string(&spec).unwrap();
    let one_config = &text_spec[..text_spec.find("[[configs]]\nname = \"two\"").unwrap()];
    std::fs::write(&spec, one_config).unwrap();
    let out = dir.path().join("runs");
    sweep_of(&spec, &out, 1, &llm);
    assert_eq!(starts(dir.path()), 2, "started, died, started again");
    let runs = runs_in(&out);
    let by_task = |task: &str| {
        runs.iter()
            .map(|r| events(r))
            .find(|ev| ev[0]["task"]["id"] == task)
            .unwrap_or_else(|| panic!("no run of {task}"))
    };
    let died = by_task("die_1");
    assert!(
        died.iter()
            .any(|e| e.to_string().contains("server stopped")),
        "the cell that saw it die says so"
    );
    let after = by_task("say_1");
    let called = after.iter().find(|e| e["kind"] == "tool_called").unwrap();
    assert_eq!(called["result"]["text"], "ok: hi", "{called}");
}

/// A shared server answers requests for input by the policy it started with: configurations
/// with different `--elicitation` get a process each, and each cell its own policy's answer.
#[test]
fn a_shared_server_is_one_per_elicitation_policy() {
    let llm = ScriptedLlm::start(json!([
        {"when": "1. flaky:ask", "content": finish("asked")},
        {"when": "No tool has been called yet", "content": call("flaky:ask", json!({}))}
    ]));
    let dir = tempfile::tempdir().unwrap();
    let spec = flaky_sweep(dir.path(), &[("ask_1", "Ask me.")], true);
    std::fs::write(
        &spec,
        "mcp_config = \"mcp.json\"\n[[tasks]]\nfile = \"tasks.json\"\n\
         [[configs]]\nname = \"declining\"\nagent = \"react\"\nelicitation = \"decline\"\n\
         [[configs]]\nname = \"defaults\"\nagent = \"react\"\nelicitation = \"accept-defaults\"\n",
    )
    .unwrap();
    let out = dir.path().join("runs");
    sweep_of(&spec, &out, 1, &llm);
    assert_eq!(starts(dir.path()), 2, "one process per policy");
    let mut answers: Vec<String> = runs_in(&out)
        .iter()
        .map(|r| {
            let ev = events(r);
            let called = ev.iter().find(|e| e["kind"] == "tool_called").unwrap();
            format!(
                "{}: {}",
                ev[0]["label"].as_str().unwrap_or_default(),
                called["result"]["text"].as_str().unwrap_or_default()
            )
        })
        .collect();
    answers.sort();
    assert_eq!(
        answers,
        ["declining: decline", "defaults: accepted: Lyon in metric"]
    );
}

/// A configuration's `routing` key is `cosmos run --routing`, its path relative to the spec:
/// a file chosen for another world model stops that cell, saying why.
#[test]
fn a_configs_routing_file_is_the_cells_own_found_beside_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    write_mcp_config(dir.path(), bench_servers());
    std::fs::copy(bench_tasks(), dir.path().join("tasks.json")).unwrap();
    std::fs::write(
        dir.path().join("routing.toml"),
        "world_model = \"memory\"\n[tools.\"Time MCP:convert_time\"]\ngo_real_below = 0.5\n",
    )
    .unwrap();
    let spec = dir.path().join("sweep.toml");
    std::fs::write(
        &spec,
        "mcp_config = \"mcp.json\"\n[[tasks]]\nfile = \"tasks.json\"\nids = [\"time_mcp_000\"]\n\
         [[configs]]\nname = \"routed\"\nagent = \"spiral\"\nworld_model = \"llm\"\nrouting = \"routing.toml\"\n",
    )
    .unwrap();
    let llm = ScriptedLlm::start(json!([]));
    let ran = cosmos(
        &[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            dir.path().join("runs").to_str().unwrap(),
            "--no-tui",
        ],
        &llm,
        "sk-test",
    );
    let said = text(&ran);
    assert!(
        said.contains(&format!(
            "the routing file {} was chosen for the world model \"memory\"; this run's is \"llm\"",
            dir.path().join("routing.toml").display()
        )),
        "{said}"
    );
}
