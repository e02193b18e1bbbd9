//! The README's examples work as written from the repository root: `examples/mcp.json` starts
//! every server it names, `examples/tasks.json` runs against it, the memory server can write,
//! and every reference call of the example tasks validates against the real tool's schema.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn the_example_task_runs_against_the_example_servers_from_the_repository_root() {
    servers(); // installed by scripts/install-test-servers.sh
    let out = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(json!([
        {"when": "1. memory:create_entities", "content": finish("Tokyo 18:00, New York 04:00.")},
        {"when": "No tool has been called yet", "content": call("memory:create_entities",
            json!({"entities": [{"name": "standup", "entityType": "meeting", "observations": ["09:00 UTC"]}]}))}
    ]));
    let o = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .current_dir(ROOT)
        .args([
            "run",
            "--mcp-config",
            "examples/mcp.json",
            "--task",
            "examples/tasks.json",
            "--task-id",
            "tokyo_standup",
            "--extra-server",
            "memory",
            "--agent",
            "react",
            "--out",
            out.path().to_str().unwrap(),
            "--no-tui",
        ])
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("COSMOS_LOG_FILE", out.path().join("log"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let ev = events(&only_run(out.path()));
    let header = &ev[0];
    assert_eq!(header["task"]["source"], "examples/tasks.json");
    let call = ev.iter().find(|e| e["kind"] == "tool_called").unwrap();
    assert_eq!(
        call["result"]["is_error"], false,
        "the memory server wrote: {call}"
    );
    assert!(
        !ev.iter()
            .any(|e| e["kind"] == "error" && e["source"] == "server")
    );
}

#[test]
fn every_reference_call_of_the_example_tasks_fits_the_real_tools_schema() {
    servers();
    // The catalogue as the servers give it, through the code `run` uses; the config's relative
    // commands are resolved against the repository root, as `cosmos` run from there does.
    let mut config: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("examples/mcp.json")).unwrap(),
    )
    .unwrap();
    for server in config["mcpServers"].as_object_mut().unwrap().values_mut() {
        let command = server["command"].as_str().unwrap();
        server["command"] = json!(Path::new(ROOT).join(command).display().to_string());
        // A state's seed is found beside the config that names it.
        if let Some(seed) = server.pointer_mut("/cosmos/state/seed") {
            let beside = Path::new(ROOT)
                .join("examples")
                .join(seed.as_str().unwrap());
            assert!(beside.exists(), "{beside:?}");
            *seed = json!(beside.display().to_string());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let absolute = dir.path().join("mcp.json");
    std::fs::write(&absolute, config.to_string()).unwrap();
    let tools = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut config = cosmos_engine::mcp::McpConfig::load(&absolute).unwrap();
        let _sandboxes = cosmos_engine::mcp::prepare_sandboxes(&mut config.servers).unwrap();
        let (pool, failures) =
            cosmos_engine::mcp::McpPool::connect(&config.servers, Default::default()).await;
        assert!(failures.is_empty(), "{failures:?}");
        let tools = pool.tools();
        pool.shutdown().await;
        tools
    });
    let catalog = cosmos_trajectory::catalog::ToolCatalog::new(&tools);
    let tasks: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("examples/tasks.json")).unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    for task in tasks["tasks"].as_array().unwrap() {
        for call in task["reference_calls"].as_array().unwrap() {
            let tool = call["tool"].as_str().unwrap();
            let check = catalog.check(tool, &call["arguments"]);
            assert!(
                check.valid_name && check.schema_ok,
                "{} {tool}: {:?}",
                task["id"],
                catalog.explain(tool, &call["arguments"])
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

#[test]
fn the_paper_sweep_spec_makes_its_cells_from_the_repository_root() {
    let o = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .current_dir(ROOT)
        .args(["sweep", "examples/paper.toml", "--status", "--out"])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    // Four MCP-Bench tasks × seven configurations, every cell's flags checked.
    assert!(out.contains("28 cell(s) here of 28: 28 missing"), "{out}");
    for config in [
        "react",
        "plan-exec-llm",
        "plan-exec-memory",
        "spiral-llm",
        "spiral-llm-no-critic",
        "spiral-memory",
        "spiral-memory-no-critic",
    ] {
        assert!(out.contains(&format!(" {config} ")), "{config}: {out}");
    }
    assert!(!out.contains("left out"), "{out}");
}
