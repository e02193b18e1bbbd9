//! Servers that keep state, with the real memory server (npm `@modelcontextprotocol/server-memory`,
//! a knowledge graph in a file): each run gets a fresh copy of the state's seed, two runs start
//! from identical state, the end state is kept beside the run, the seed is never touched; a
//! server that marks a tool destructive runs only in a sandbox or knowingly on live state.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::*;

/// The memory server on a copy of `seed` (relative to the config's folder).
fn sandboxed_memory(seed: &str) -> Value {
    json!({
        "command": npm_bin("mcp-server-memory"),
        "env": {"MEMORY_FILE_PATH": "${COSMOS_STATE_DIR}/graph.jsonl"},
        "cosmos": {"state": {"seed": seed}}
    })
}

fn remember_lyon() -> Value {
    let entity =
        json!({"entities": [{"name": "Lyon", "entityType": "city", "observations": ["clear"]}]});
    json!([
        {"when": "2. memory:read_graph", "content": finish("Lyon and Paris")},
        {"when": "1. memory:create_entities", "content": call("memory:read_graph", json!({}))},
        {"when": "No tool has been called yet", "content": call("memory:create_entities", entity)},
        {"content": "Lyon and Paris"}
    ])
}

fn task() -> Value {
    json!({"id": "graph_1", "request": "Remember Lyon, then read the graph back."})
}

#[test]
fn two_runs_start_from_identical_state_keep_their_end_state_and_leave_the_seed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let seed_line =
        r#"{"type":"entity","name":"Paris","entityType":"city","observations":["seeded"]}"#;
    std::fs::create_dir_all(dir.path().join("seed")).unwrap();
    std::fs::write(
        dir.path().join("seed/graph.jsonl"),
        format!("{seed_line}\n"),
    )
    .unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"memory": sandboxed_memory("seed/graph.jsonl")}),
    );
    let mut runs = Vec::new();
    for name in ["a", "b"] {
        let at = dir.path().join(name);
        std::fs::create_dir_all(&at).unwrap();
        let (_, run) = react_run(&at, &mcp, task(), remember_lyon());
        runs.push(run);
    }
    let digests = |run: &Path| -> (String, String) {
        let events = events(run);
        let start = events[0]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "memory")
            .unwrap()["start_digest"]
            .as_str()
            .unwrap_or_else(|| panic!("no start_digest: {}", events[0]))
            .to_string();
        let finished = events.last().unwrap();
        assert_eq!(finished["kind"], "run_finished");
        let end = finished["end_digest"]["memory"]
            .as_str()
            .unwrap_or_else(|| panic!("no end_digest: {finished}"))
            .to_string();
        (start, end)
    };
    let (start_a, end_a) = digests(&runs[0]);
    let (start_b, end_b) = digests(&runs[1]);
    assert!(start_a.starts_with("sha256:"), "{start_a}");
    assert_eq!(start_a, start_b, "both runs start from the seed's copy");
    assert_ne!(start_a, end_a, "the run changed the state");
    assert_eq!(end_a, end_b, "the same calls leave the same state");
    // The run read the seeded entity and its own.
    let read = events(&runs[0])
        .into_iter()
        .find(|e| e["kind"] == "tool_called" && e["tool"] == "memory:read_graph")
        .unwrap();
    assert_eq!(
        read["state_change"],
        json!({"fields_changed": 0}),
        "a read changes nothing"
    );
    let read = read["result"]["text"].as_str().unwrap().to_string();
    assert!(read.contains("Paris") && read.contains("Lyon"), "{read}");
    // The write is recorded with the one field it made, as the memory server keeps it.
    let write = events(&runs[0])
        .into_iter()
        .find(|e| e["kind"] == "tool_called" && e["tool"] == "memory:create_entities")
        .unwrap();
    let change = &write["state_change"];
    assert_eq!(change["fields_changed"], 1, "{write}");
    let made = &change["fields"]["entity/Lyon"];
    assert!(made.get("before").is_none(), "{made}");
    assert_eq!(made["after"]["observations"], json!(["clear"]), "{made}");
    // The state the run started from, as fields, in the header.
    let header = &events(&runs[0])[0];
    let start = &header["servers"][0]["start_state"];
    assert_eq!(
        start["entity/Paris"]["observations"],
        json!(["seeded"]),
        "{header}"
    );
    // The end state beside each run; the seed as it was.
    for run in &runs {
        let kept = run.with_extension("state").join("memory/graph.jsonl");
        let kept = std::fs::read_to_string(&kept).unwrap_or_else(|e| panic!("{kept:?}: {e}"));
        assert!(kept.contains("Lyon") && kept.contains("Paris"), "{kept}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("seed/graph.jsonl")).unwrap(),
        format!("{seed_line}\n")
    );
    // The kept state is no run: a listing of the folder finds the run alone.
    let listed = cosmos_trajectory::listing::list_runs(&[dir.path().join("a")]).unwrap();
    assert_eq!(listed.len(), 1);
    // The about view says the run started on a fresh copy and changed it.
    let about = about_screen(&runs[0]);
    assert!(
        about.contains(&format!("on a fresh copy of its state: {}", &start_a[..23])),
        "{about}"
    );
    assert!(
        about.contains(&format!("memory's state at the end: {}", &end_a[..23]))
            && about.contains("(changed: 1 field(s))"),
        "{about}"
    );
}

/// The run's about view (`a`), scrolled to its end, in a tall terminal.
fn about_screen(run: &Path) -> String {
    use cosmos_app::tui::App;
    use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    let size = (140, 80);
    let view = cosmos_app::tui::RunView::new(
        cosmos_trajectory::run::Run::open(run).unwrap(),
        ratatui::layout::Rect::new(0, 0, size.0, size.1 - 1),
    );
    let mut app = App::new(
        view,
        cosmos_app::tui::Keymap::default(),
        cosmos_app::tui::Theme::new(true),
        size,
    );
    app.settle();
    for code in [KeyCode::Char('a'), KeyCode::End] {
        if let Some(action) = app.map_input(Event::Key(KeyEvent::new(code, KeyModifiers::NONE))) {
            app.update(action);
        }
        app.settle();
    }
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(size.0, size.1)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn a_destructive_tool_without_a_sandbox_refuses_the_run_naming_both_settings() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("graph.jsonl");
    let live = |extra: Value| {
        let mut entry = json!({
            "command": npm_bin("mcp-server-memory"),
            "env": {"MEMORY_FILE_PATH": graph.display().to_string()},
        });
        if !extra.is_null() {
            entry["cosmos"] = extra;
        }
        write_mcp_config(dir.path(), json!({"memory": entry}))
    };
    let task_file = dir.path().join("task.json");
    std::fs::write(&task_file, task().to_string()).unwrap();
    let llm = ScriptedLlm::start(remember_lyon());
    let out = dir.path().join("runs");
    let run = |mcp: &Path| react_command(mcp, &task_file, &out, &llm);
    let refused = run(&live(Value::Null));
    assert!(!refused.status.success());
    let said = text(&refused);
    // Every destructive tool the server offers is named (the memory server has three).
    for tool in [
        "memory:delete_entities",
        "memory:delete_observations",
        "memory:delete_relations",
    ] {
        assert!(said.contains(tool), "{tool}: {said}");
    }
    assert!(
        said.contains("which it marks destructive")
            && said.contains("\"state\"")
            && said.contains("\"live_state\": true"),
        "{said}"
    );
    assert!(runs_in(&out).is_empty(), "a refused run leaves no file");
    assert!(!graph.exists(), "nothing was changed");
    // Knowingly on live state, it runs.
    let ran = run(&live(json!({"live_state": true})));
    assert!(ran.status.success(), "{}", text(&ran));
    assert!(std::fs::read_to_string(&graph).unwrap().contains("Lyon"));
    // Making every call of that run again, on the unguarded server, is refused the same way.
    let run = only_run(&out);
    let before = std::fs::read_to_string(&run).unwrap();
    let rechecked = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["recheck", run.to_str().unwrap(), "--all", "--mcp-config"])
        .arg(live(Value::Null))
        .output()
        .unwrap();
    assert!(!rechecked.status.success());
    assert!(
        text(&rechecked).contains("which it marks destructive"),
        "{}",
        text(&rechecked)
    );
    assert_eq!(
        std::fs::read_to_string(&run).unwrap(),
        before,
        "nothing appended"
    );
}

/// A sweep over a stateful server is repeatable: every cell starts from the seed's copy (the
/// cells of two workers never see each other's entities), and the same sweep twice leaves the
/// same end states and gives the same report.
#[test]
fn a_sweep_over_a_stateful_server_is_repeatable() {
    let llm = ScriptedLlm::start(remember_lyon());
    let mut sweeps = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("seed")).unwrap();
        std::fs::write(dir.path().join("seed/graph.jsonl"), "").unwrap();
        write_mcp_config(
            dir.path(),
            json!({"memory": sandboxed_memory("seed/graph.jsonl")}),
        );
        let tasks = json!({"tasks": [
            {"id": "graph_1", "request": "Remember Lyon, then read the graph back."},
            {"id": "graph_2", "request": "Remember Lyon once more, then read the graph back."},
        ]});
        std::fs::write(dir.path().join("tasks.json"), tasks.to_string()).unwrap();
        let spec = react_sweep_spec(dir.path(), (3, 4));
        let out = dir.path().join("runs");
        sweep_of(&spec, &out, 2, &llm);
        let runs = runs_in_tree(&out);
        assert_eq!(runs.len(), 4, "{runs:?}");
        let mut cells: Vec<(String, String, String)> = runs
            .iter()
            .map(|run| {
                let ev = events(run);
                let start = ev[0]["servers"][0]["start_digest"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let end = ev.last().unwrap()["end_digest"]["memory"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let label = format!("{}/{}", ev[0]["label"], ev[0]["task"]["id"]);
                (label, start, end)
            })
            .collect();
        cells.sort();
        // Every cell from the same (empty) seed, each ending with Lyon alone.
        assert!(cells.iter().all(|c| c.1 == cells[0].1), "{cells:?}");
        assert!(cells.iter().all(|c| c.2 == cells[0].2), "{cells:?}");
        let report = cosmos(
            &["report", out.to_str().unwrap(), "--format", "json"],
            &llm,
            "sk-x",
        );
        let mut doc: Value = serde_json::from_slice(&report.stdout).expect("JSON report");
        let mut groups = doc["groups"].take();
        // Every figure but the time the runs took.
        for group in groups.as_array_mut().unwrap() {
            group.as_object_mut().unwrap().remove("wall_time_s");
        }
        sweeps.push((cells, groups));
    }
    assert_eq!(
        sweeps[0], sweeps[1],
        "the same sweep twice, the same states and report"
    );
}

/// Every run under `dir`, in path order (a sweep writes into folders of its own).
fn runs_in_tree(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut runs = cosmos_trajectory::reader::collect_files(&[dir.to_path_buf()])
        .unwrap()
        .files;
    runs.sort();
    runs
}

/// A shell script at `path` that, when anything runs it, leaves a file named `name` in `ran`.
#[cfg(unix)]
fn tripwire(path: &Path, ran: &Path, name: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(
        path,
        format!("#!/bin/sh\ntouch '{}/{name}'\nexit 0\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A git repository as a shared seed might be: every hook git or GitPython runs, an fsmonitor,
/// a hooks path, a pager, an alias, a filter on every file and a remote whose transport is a
/// command, each a tripwire; then packed as `DIR/seed/notes-repo.tar`. The repository has one
/// commit and an untracked `todo.md`.
#[cfg(unix)]
fn booby_trapped_seed(dir: &Path, ran: &Path) -> PathBuf {
    let git = |repo: &Path, args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    let src = dir.join("src");
    let repo = src.join("notes-repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "seed"]);
    git(&repo, &["config", "user.email", "seed@example.invalid"]);
    std::fs::write(repo.join("notes.md"), "# Notes\n").unwrap();
    std::fs::write(repo.join("todo.md"), "- ship\n").unwrap();
    git(&repo, &["add", "notes.md"]);
    git(&repo, &["commit", "-q", "-m", "Start"]);
    let hooks = repo.join(".git/hooks");
    for hook in [
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "pre-merge-commit",
        "post-checkout",
        "post-merge",
        "reference-transaction",
        "post-index-change",
        "pre-auto-gc",
        "post-rewrite",
        "fsmonitor-watchman",
    ] {
        tripwire(&hooks.join(hook), ran, &format!("hook-{hook}"));
    }
    let elsewhere = dir.join("elsewhere-hooks");
    std::fs::create_dir_all(&elsewhere).unwrap();
    tripwire(&elsewhere.join("pre-commit"), ran, "hookspath-pre-commit");
    tripwire(&dir.join("fsmonitor"), ran, "fsmonitor");
    tripwire(&dir.join("program"), ran, "program");
    let program = dir.join("program").display().to_string();
    for (key, value) in [
        (
            "core.fsmonitor",
            dir.join("fsmonitor").display().to_string(),
        ),
        ("core.hooksPath", elsewhere.display().to_string()),
        ("core.pager", program.clone()),
        ("core.editor", program.clone()),
        ("alias.st", format!("!{program}")),
        ("filter.trap.clean", program.clone()),
        ("filter.trap.smudge", program.clone()),
        ("filter.trap.required", "true".into()),
        ("diff.external", program.clone()),
        ("remote.origin.url", format!("ext::{program}")),
        ("credential.helper", format!("!{program}")),
    ] {
        git(&repo, &["config", key, &value]);
    }
    std::fs::write(repo.join(".git/info/attributes"), "* filter=trap\n").unwrap();
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    let tar = std::process::Command::new("tar")
        .arg("-cf")
        .arg(seed.join("notes-repo.tar"))
        .arg("-C")
        .arg(&src)
        .arg("notes-repo")
        .output()
        .unwrap();
    assert!(tar.status.success(), "{tar:?}");
    seed
}

/// Hardening V: nothing a seed names ever runs, through a run that adds and commits with the
/// real git server (GitPython runs a repository's commit hooks); the sandbox is made where no
/// one can plant it, a folder planted under its name pattern with a link to a victim is left
/// alone, and nothing of the run is left behind.
#[cfg(unix)]
#[test]
fn nothing_a_git_seed_names_runs_and_a_planted_sandbox_is_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    std::fs::create_dir_all(&ran).unwrap();
    booby_trapped_seed(dir.path(), &ran);
    // Another user's plants in the temporary folder cosmos uses: folders and links named like
    // sandboxes, one holding a link to the victim, one a lock of its own.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let victim = dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious"), "mine").unwrap();
    std::os::unix::fs::symlink(&victim, tmp.join("cosmos-state-1-0-notes")).unwrap();
    std::fs::create_dir_all(tmp.join("cosmos-state-planted")).unwrap();
    std::os::unix::fs::symlink(&victim, tmp.join("cosmos-state-planted/notes-repo")).unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"notes": {
            "command": servers().join("venv/bin/mcp-server-git"),
            "args": ["--repository", "${COSMOS_STATE_DIR}/notes-repo"],
            "cwd": "${COSMOS_STATE_DIR}/notes-repo",
            "cosmos": {"state": {"seed": "seed/notes-repo.tar"}}
        }}),
    );
    let rules = json!([
        {"when": "3. notes:git_log", "content": finish("committed")},
        {"when": "2. notes:git_commit", "content": call("notes:git_log", json!({"repo_path": "."}))},
        {"when": "1. notes:git_add",
         "content": call("notes:git_commit", json!({"repo_path": ".", "message": "Add the todo list"}))},
        {"when": "No tool has been called yet",
         "content": call("notes:git_add", json!({"repo_path": ".", "files": ["todo.md"]}))},
        {"content": "committed"}
    ]);
    let task_file = dir.path().join("task.json");
    std::fs::write(
        &task_file,
        json!({"id": "commit_todo", "request": "Commit todo.md."}).to_string(),
    )
    .unwrap();
    let llm = ScriptedLlm::start(rules);
    let out = dir.path().join("runs");
    let ran_cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["run", "--mcp-config"])
        .arg(&mcp)
        .arg("--task")
        .arg(&task_file)
        .args(["--agent", "react", "--out"])
        .arg(&out)
        .arg("--no-tui")
        .env("TMPDIR", &tmp)
        .env("OPENAI_BASE_URL", llm.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .env("COSMOS_MODEL", "scripted-model")
        .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
        .output()
        .unwrap();
    assert!(ran_cmd.status.success(), "{}", text(&ran_cmd));
    let run = only_run(&out);
    let events = events(&run);
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "tool_called")
        .collect();
    assert_eq!(calls.len(), 3, "{events:?}");
    for call in &calls {
        assert_eq!(call["result"]["is_error"], false, "{call}");
    }
    // The commit was made, by the server, on the copy.
    let log = &events.last().unwrap();
    assert_eq!(log["kind"], "run_finished", "{log}");
    let kept = cosmos_engine::mcp::kept_state_path(&run).join("notes/notes-repo");
    let state = cosmos_engine::mcp::read_state(&kept).unwrap();
    assert_eq!(
        state[".git/log"],
        json!(["Add the todo list", "Start"]),
        "{state:?}"
    );
    // Not one tripwire went off, and the header says what was taken out.
    let tripped: Vec<_> = std::fs::read_dir(&ran)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(tripped.is_empty(), "ran: {tripped:?}");
    let removed = events[0]["servers"][0]["seed_removed"]
        .as_array()
        .unwrap_or_else(|| panic!("no seed_removed: {}", events[0]["servers"]));
    let removed: Vec<&str> = removed.iter().map(|r| r.as_str().unwrap()).collect();
    for what in [
        "hooks/pre-commit",
        "hooks/commit-msg",
        "core.fsmonitor",
        "core.hookspath",
        "alias.st",
        "filter.trap.clean",
        "remote.origin.url",
        "credential.helper",
    ] {
        assert!(
            removed.iter().any(|r| r.contains(what)),
            "{what} not said in {removed:?}"
        );
    }
    // The plants are as they were, the victim untouched, and the run left nothing behind.
    assert_eq!(
        std::fs::read_to_string(victim.join("precious")).unwrap(),
        "mine"
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 1);
    let mut left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["cosmos-state-1-0-notes", "cosmos-state-planted"]);
}

/// Truth III: the about view compares a state by its fields, not its bytes alone: an end state
/// whose bytes differ from the start's but whose every field is as it was (a trailing newline)
/// is said unchanged, as the calls' `state_change` says; one with a field changed says how many.
#[test]
fn the_about_view_says_a_state_changed_only_when_a_field_did() {
    use cosmos_trajectory::event::{
        AgentInfo, AgentKind, Event, EventBody, FieldChange, Header, ModelInfo, Observation,
        RunStatus, ServerInfo, StateChange, TaskInfo,
    };
    let about = |change: StateChange| -> String {
        let mut header = Header::new(
            "about-state",
            TaskInfo {
                id: "t".into(),
                request: "r".into(),
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
        header.servers = vec![ServerInfo {
            name: "memory".into(),
            transport: "stdio".into(),
            target: None,
            shared: false,
            start_digest: Some("sha256:aaaa".into()),
            start_state: Some(Box::new(json!({"entity/Paris": {"entityType": "city"}}))),
            seed_removed: Vec::new(),
            protocol: None,
        }];
        let mut run = cosmos_trajectory::run::Run::new("runs/about.jsonl".into(), header);
        for (seq, body) in [
            EventBody::ToolCalled {
                step: 1,
                tool: "memory:read_graph".into(),
                server: Some("memory".into()),
                arguments: Box::new(json!({})),
                result: Observation::of_text("Paris", false),
                latency_ms: 3,
                node: None,
                error: None,
                origin: None,
                state_change: Some(Box::new(change)),
            },
            EventBody::RunFinished {
                status: RunStatus::Completed,
                error: None,
                ending: None,
                totals: Default::default(),
                end_digest: [("memory".to_string(), "sha256:bbbb".to_string())].into(),
                state_match: Default::default(),
            },
        ]
        .into_iter()
        .enumerate()
        {
            run.push(Event {
                seq: seq as u64 + 1,
                t_ms: 10,
                body,
            });
        }
        about_text(run)
    };
    let same = about(StateChange::default());
    assert!(
        same.contains("unchanged field by field; its bytes differ"),
        "{same}"
    );
    let changed = about(StateChange {
        fields_changed: 1,
        fields: [(
            "entity/Lyon".to_string(),
            FieldChange {
                before: None,
                after: Some(json!({"entityType": "city"})),
            },
        )]
        .into(),
        ..Default::default()
    });
    assert!(changed.contains("changed: 1 field(s)"), "{changed}");
}

/// Hardening V: a run over a sandboxed server stopped mid-way leaves nothing in the temporary
/// folder: SIGTERM ends it with its copy removed; after SIGKILL (no chance to clean) the next
/// cosmos that makes a sandbox removes the leftover, its owner's lock being free.
#[cfg(unix)]
#[test]
fn a_run_stopped_mid_way_leaves_no_sandbox_behind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("seed")).unwrap();
    std::fs::write(dir.path().join("seed/graph.jsonl"), "").unwrap();
    let mcp = write_mcp_config(
        dir.path(),
        json!({"memory": sandboxed_memory("seed/graph.jsonl")}),
    );
    let task_file = dir.path().join("task.json");
    std::fs::write(&task_file, task().to_string()).unwrap();
    // The planner takes its time: the run is caught with its sandbox made.
    let llm = ScriptedLlm::start(json!([{"delay_s": 60, "content": "later"}]));
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let homes = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains("cosmos-state-"))
            .collect()
    };
    let start = |out: &str| {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .args(["run", "--mcp-config"])
            .arg(&mcp)
            .arg("--task")
            .arg(&task_file)
            .args(["--agent", "react", "--no-tui", "--out"])
            .arg(dir.path().join(out))
            .env("TMPDIR", &tmp)
            .env("OPENAI_BASE_URL", llm.base_url())
            .env("OPENAI_API_KEY", "sk-test")
            .env("COSMOS_MODEL", "scripted-model")
            .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let made = std::time::Instant::now();
        while homes().is_empty() {
            assert!(
                made.elapsed() < std::time::Duration::from_secs(30),
                "no sandbox made"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child
    };
    let signal = |child: &std::process::Child, sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .unwrap();
    };
    let mut termed = start("a");
    signal(&termed, "-TERM");
    assert!(
        !termed.wait().unwrap().success(),
        "a stopped run exits non-zero"
    );
    assert!(homes().is_empty(), "SIGTERM left {:?}", homes());
    let mut killed = start("b");
    signal(&killed, "-KILL");
    killed.wait().unwrap();
    assert_eq!(
        homes().len(),
        1,
        "SIGKILL leaves its copy: nothing could clean it"
    );
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["servers", "--mcp-config"])
        .arg(&mcp)
        .env("TMPDIR", &tmp)
        .env("COSMOS_LOG_FILE", dir.path().join("cosmos.log"))
        .output()
        .unwrap();
    assert!(listed.status.success(), "{}", text(&listed));
    assert!(
        homes().is_empty(),
        "the leftover was not removed: {:?}",
        homes()
    );
}
