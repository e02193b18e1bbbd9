//! `cosmos sweep` end to end: the real binary, real servers, the scripted endpoint; cells named
//! after their content, resumed, set aside when torn, and sharded without overlap.

mod support;

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

    let first = sweep(&["--jobs", "2", "--no-tui"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let files = runs_in(&out);
    assert_eq!(files.len(), 4, "{files:?}");
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
