//! The project's stateful task set (`examples/stateful/`) against the real servers it names:
//! the memory server (a graph in a file), the filesystem server (a folder), the SQLite server
//! (a database) and the git server (a repository, unpacked from a tar seed), each run on a
//! fresh copy of its seed. A planner that makes each task's
//! reference calls reaches every expected field (state match 100%), a planner that does nothing
//! does not, and `report` prints the figure.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::*;

fn stateful() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/stateful")
}

fn tasks() -> Vec<Value> {
    let text = std::fs::read_to_string(stateful().join("tasks.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["tasks"]
        .as_array()
        .unwrap()
        .clone()
}

/// Planner rules that make each task's reference calls in order, then finish. A rule names
/// the task by the end of its request and the step by the history line of the call before it;
/// later steps come first, since an earlier step's history line is still there.
fn reference_planner(tasks: &[Value]) -> Value {
    // The `llm` world model of wm-eval first (its prompt quotes the request and the history
    // too): given a state, it predicts an empty one.
    let mut rules = vec![
        json!({"when": ["You simulate an MCP server", "predicted_state"],
               "content": {"is_error": false, "content": "done", "predicted_state": {}}}),
        json!({"when": "You simulate an MCP server",
               "content": {"is_error": false, "content": "done"}}),
    ];
    // Each task by the end of its request (the beginnings repeat), which holds no quote the
    // request body would escape.
    let tail = |task: &Value| -> String {
        let request: Vec<char> = task["request"].as_str().unwrap().chars().collect();
        request[request.len().saturating_sub(36)..].iter().collect()
    };
    let tails: std::collections::BTreeSet<String> = tasks.iter().map(tail).collect();
    assert_eq!(tails.len(), tasks.len(), "each task's tail names it alone");
    for task in tasks {
        let request = tail(task);
        assert!(!request.contains(['"', '\\']), "{request}");
        let calls = task["reference_calls"].as_array().unwrap();
        let marker = |k: usize| match k {
            0 => "No tool has been called yet".to_string(),
            k => format!("{k}. {}", calls[k - 1]["tool"].as_str().unwrap()),
        };
        rules.push(json!({"when": [&request, marker(calls.len())], "content": finish("done")}));
        for k in (0..calls.len()).rev() {
            let c = &calls[k];
            rules.push(json!({
                "when": [&request, marker(k)],
                "content": call(c["tool"].as_str().unwrap(), c["arguments"].clone()),
            }));
        }
    }
    Value::Array(rules)
}

fn sweep_spec(dir: &Path) -> PathBuf {
    let spec = dir.join("sweep.toml");
    std::fs::write(
        &spec,
        format!(
            "mcp_config = {:?}\n[[tasks]]\nfile = {:?}\n\
             [[configs]]\nname = \"reference\"\nagent = \"react\"\nmax_steps = 6\n",
            stateful().join("mcp.json"),
            stateful().join("tasks.json"),
        ),
    )
    .unwrap();
    spec
}

#[test]
fn the_reference_solutions_reach_every_expected_state_and_report_says_so() {
    let tasks = tasks();
    assert!(tasks.len() >= 10, "a set of ten or more");
    let dir = tempfile::tempdir().unwrap();
    let llm = ScriptedLlm::start(reference_planner(&tasks));
    let out = dir.path().join("runs");
    sweep_of(&sweep_spec(dir.path()), &out, 2, &llm);
    let runs = cosmos_trajectory::reader::collect_files(std::slice::from_ref(&out))
        .unwrap()
        .files;
    assert_eq!(runs.len(), tasks.len());
    let mut servers_changed = std::collections::BTreeSet::new();
    for run in &runs {
        let events = events(run);
        let id = events[0]["task"]["id"].as_str().unwrap().to_string();
        let finished = events.last().unwrap();
        let matched = finished["state_match"].as_object().unwrap_or_else(|| {
            panic!("{id}: no state_match in {finished}");
        });
        for (server, m) in matched {
            assert!(
                m["checked"].as_u64().unwrap() > 0 && m["matched"] == m["checked"],
                "{id} on {server}: {m}"
            );
        }
        // Each reference call was made, and the writes are recorded as changes.
        for e in events.iter().filter(|e| e["kind"] == "tool_called") {
            assert_eq!(e["result"]["is_error"], false, "{id}: {e}");
            let changed = e["state_change"]["fields_changed"].as_u64().unwrap();
            if changed > 0 {
                servers_changed.insert(e["server"].as_str().unwrap().to_string());
            }
        }
    }
    assert_eq!(
        servers_changed.into_iter().collect::<Vec<_>>(),
        ["files", "memory", "notes", "shop"],
        "each server's state was changed and watched"
    );
    let report = cosmos(
        &["report", out.to_str().unwrap(), "--format", "json"],
        &llm,
        "sk-x",
    );
    let doc: Value = serde_json::from_slice(&report.stdout).expect("JSON report");
    assert_eq!(doc["groups"][0]["state_match"]["mean"], 1.0, "{doc}");
    let table = cosmos(&["report", out.to_str().unwrap()], &llm, "sk-x");
    assert!(text(&table).contains("state match %"), "{}", text(&table));

    // wm-eval scores the calls that changed state apart from those that did not, by fields
    // changed, and the predicted states against the real ones.
    let evaluated = cosmos(
        &[
            "wm-eval",
            out.to_str().unwrap(),
            "--world-model",
            "memory",
            "--world-model",
            "llm",
            "--format",
            "json",
            "--out",
            dir.path().join("wm-eval").to_str().unwrap(),
        ],
        &llm,
        "sk-x",
    );
    let board: Value = serde_json::from_slice(&evaluated.stdout)
        .unwrap_or_else(|_| panic!("{}", text(&evaluated)));
    let [memory, predicted] = [&board["world_models"][0], &board["world_models"][1]];
    // The reference solutions make 19 writes (three change two fields: a move, a delete that
    // takes a relation with its entity, a commit that empties the staged list and adds to the
    // log) and 13 reads.
    assert_eq!(predicted["n"], 32, "{predicted}");
    let n = |v: &Value| v["n"].as_u64().unwrap();
    let split = &predicted["by_state_change"];
    assert_eq!(
        (n(&split["changed"]), n(&split["unchanged"])),
        (19, 13),
        "{split}"
    );
    assert!(
        split.get("unknown").is_none(),
        "every call was watched: {split}"
    );
    let bins = &predicted["by_fields_changed"];
    assert_eq!(
        (n(&bins["0"]), n(&bins["1"]), n(&bins["2-4"])),
        (13, 16, 3),
        "{bins}"
    );
    assert!(
        predicted["risk_weighted_fidelity"].is_number(),
        "{predicted}"
    );
    // Memory, on the calls it could recall: each in one split.
    let split = &memory["by_state_change"];
    assert_eq!(
        n(&split["changed"]) + n(&split["unchanged"]),
        n(memory),
        "{memory}"
    );
    // The LLM was given each call's state and predicted an empty one: no field agrees.
    assert_eq!(
        predicted["state_fidelity"]["fidelity"]["mean"], 0.0,
        "{predicted}"
    );
    assert_eq!(
        predicted["state_fidelity"]["n"], predicted["n"],
        "every call's state was known"
    );
    // Memory replays a read it saw in another run: the state it predicts is the real one.
    assert_eq!(
        memory["state_fidelity"]["fidelity"]["mean"], 1.0,
        "{memory}"
    );
    // Every world-model prompt with the state section, whichever came first (four
    // simulations run at once): each server's state reached the prompts of its calls.
    let asked: Vec<String> = llm
        .requests()
        .into_iter()
        .map(|r| r["body"].to_string())
        .filter(|body| body.contains("The server's state before this call"))
        .collect();
    assert!(
        !asked.is_empty(),
        "no world-model prompt with the state section"
    );
    for field in ["entity/Ada", "item/a1", "notes/todo.txt"] {
        assert!(
            asked.iter().any(|body| body.contains(field)),
            "no prompt shows {field} in its state"
        );
    }
}

#[test]
fn a_planner_that_changes_nothing_misses_the_expected_state() {
    let dir = tempfile::tempdir().unwrap();
    let task = tasks()
        .into_iter()
        .find(|t| t["id"] == "db_restock")
        .unwrap();
    let mcp = stateful().join("mcp.json");
    let (_, run) = react_run(
        dir.path(),
        &mcp,
        task,
        json!([{"content": finish("nothing to do")}]),
    );
    let finished = events(&run).pop().unwrap();
    let shop = &finished["state_match"]["shop"];
    assert_eq!(shop["checked"], 2, "{finished}");
    assert_eq!(shop["matched"], 1, "a1 is as it was: {finished}");
    assert_eq!(shop["missed"], json!(["item/b2"]), "{finished}");
}

#[test]
fn a_task_that_checks_a_server_without_a_sandbox_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"memory": {"command": npm_bin("mcp-server-memory"), "cosmos": {"live_state": true}}}),
    );
    let task = json!({"id": "t", "request": "r", "expected_state": {"memory": {"entity/A": {}}}});
    std::fs::write(dir.path().join("task.json"), task.to_string()).unwrap();
    let llm = ScriptedLlm::start(json!([{"content": finish("x")}]));
    let ran = react_command(
        &mcp,
        &dir.path().join("task.json"),
        &dir.path().join("runs"),
        &llm,
    );
    assert!(!ran.status.success());
    assert!(
        text(&ran).contains("expects a final state of server \"memory\""),
        "{}",
        text(&ran)
    );
}
