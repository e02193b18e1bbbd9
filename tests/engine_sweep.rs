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
