//! `cosmos fork` against real servers: a ReAct run recorded with `cosmos run`, forked at a step
//! with its calls answered from the recording (the server's own log shows which calls reached
//! it), a miss answered by the real server, by a world model, or ending the fork; and a
//! stateful server (the memory knowledge graph) whose replayed steps are not made again.

use crate::support;

use std::path::{Path, PathBuf};

use cosmos_app::tui::Action;
use cosmos_app::tui::App;
use cosmos_app::tui::RunView;
use cosmos_app::tui::Theme;
use cosmos_app::tui::{CallSource, CompareView};
use cosmos_app::tui::{Command as KeyCommand, Keymap};
use serde_json::{Value, json};
use support::*;

/// The fault-test server logging each call it gets into `calls`.
fn logging_server(dir: &Path, calls: &Path) -> PathBuf {
    let mut server = flaky_server();
    server["env"] = json!({"FLAKY_CALLS_FILE": calls.display().to_string()});
    let config_dir = dir.join("logging");
    std::fs::create_dir_all(&config_dir).unwrap();
    write_mcp_config(&config_dir, json!({"flaky": server}))
}

/// `cosmos fork RUN ARGS… --out OUT --no-tui` with the scripted planner `rules`.
fn fork(run: &Path, out: &Path, rules: Value, args: &[&str]) -> std::process::Output {
    let llm = ScriptedLlm::start(rules);
    let mut all = vec!["fork", run.to_str().unwrap()];
    all.extend(args);
    all.extend(["--out", out.to_str().unwrap(), "--no-tui"]);
    cosmos(&all, &llm, "sk-test")
}

fn kinds_with_origin(events: &[Value]) -> Vec<(String, u64, bool)> {
    events
        .iter()
        .filter(|e| e["kind"] == "tool_called" || e["kind"] == "call_simulated")
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["step"].as_u64().unwrap(),
                e.get("origin").is_some(),
            )
        })
        .collect()
}

/// The run's metrics as `report --per-run` gives them.
fn report_metrics(run: &Path) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "report",
            run.to_str().unwrap(),
            "--per-run",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    doc["per_run"][0]["metrics"].clone()
}

fn validates(run: &Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(["validate", run.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_fork_with_recorded_tools_replays_the_history_and_calls_the_server_only_on_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let original = forecast_then_ok_run(dir.path());
    let calls = dir.path().join("calls.txt");
    let mcp = logging_server(dir.path(), &calls);
    let out = dir.path().join("forks");
    // The new planner asks Lyon's forecast again (the recording answers), then says
    // something else than the original did (a miss: the server answers), then finishes.
    let forked = fork(
        &original,
        &out,
        json!([
            {"when": "3. flaky:ok", "content": finish("clear, said twice")},
            {"when": "2. flaky:forecast", "content": call("flaky:ok", json!({"text": "twice"}))},
            {"when": "1. flaky:forecast", "content": call("flaky:forecast", json!({"city": "Lyon"}))},
            {"content": "clear, said twice"}
        ]),
        &[
            "--at",
            "2",
            "--tools",
            "recorded",
            "--on-miss",
            "real",
            "--mcp-config",
            mcp.to_str().unwrap(),
        ],
    );
    assert!(forked.status.success(), "{}", text(&forked));
    let run = only_run(&out);
    let events = events(&run);
    let header = &events[0];
    let original_header = &support::events(&original)[0];
    assert_eq!(header["fork_of"]["run_id"], original_header["run_id"]);
    assert_eq!(header["fork_of"]["step"], 2);
    assert_eq!(header["fork_of"]["file"], original.display().to_string());
    assert_eq!(
        header["task"], original_header["task"],
        "the original's task"
    );
    assert_eq!(header["agent"]["settings"]["tools"], "recorded");
    assert_eq!(header["agent"]["settings"]["on_miss"], "real");
    // Step 1 replayed from the history, step 2 answered from the recording, step 3 real.
    assert_eq!(
        kinds_with_origin(&events),
        [
            ("tool_called".to_string(), 1, true),
            ("tool_called".to_string(), 2, true),
            ("tool_called".to_string(), 3, false),
        ]
    );
    let replayed = events.iter().find(|e| e["kind"] == "tool_called").unwrap();
    let first = support::events(&original)
        .into_iter()
        .find(|e| e["kind"] == "tool_called")
        .unwrap();
    assert_eq!(replayed["origin"]["seq"], first["seq"]);
    assert_eq!(replayed["result"], first["result"]);
    // The server's own log: the miss only, never the forecast the recording answered.
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), "ok\n");
    validates(&run);
    // Only the fork's own real call counts.
    let metrics = report_metrics(&run);
    assert_eq!(metrics["tool_calls"], 1, "{metrics}");
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "answer" && e["text"] == "clear, said twice")
    );
    // The explorer's about view names the original and what was copied.
    let opened = cosmos_trajectory::run::Run::open(&run).unwrap();
    assert_eq!(opened.steps().len(), 1, "the fork's own real call");
    let about = about_text(opened);
    assert!(
        about.contains(&format!("of {} (", original.display()))
            && about.contains("at step 2: steps 1 to 1 replayed"),
        "{about}"
    );
    assert!(
        about.contains("2 call(s) copied from the recording"),
        "{about}"
    );

    // Compared with the original, the fork opens where they part ways: step 1 is the same
    // call with the same result (a copy); the next row is not.
    let runs = [
        cosmos_trajectory::run::Run::open(&original).unwrap(),
        cosmos_trajectory::run::Run::open(&run).unwrap(),
    ];
    let compare = CompareView::new(&runs, (160, 40));
    assert_eq!(compare.first_divergence(), Some(1), "{:#?}", compare.rows());
    assert_eq!(compare.selection().selected, 1);
    let first = &compare.rows()[0];
    assert_eq!(first[0].as_ref().unwrap().source, CallSource::Real);
    assert_eq!(first[1].as_ref().unwrap().source, CallSource::Replayed);
    // The fork asked the forecast again where the original went on to `ok`: aligned by
    // tool, that second forecast is a row the original has no call on.
    let parted = &compare.rows()[1];
    assert!(parted[0].is_none(), "{parted:?}");
    assert_eq!(parted[1].as_ref().unwrap().tool, "flaky:forecast");
}

#[test]
fn a_miss_answered_by_the_world_model_is_a_simulation_and_no_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let original = forecast_then_ok_run(dir.path());
    let out = dir.path().join("forks");
    let forked = fork(
        &original,
        &out,
        json!([
            {"when": "You simulate an MCP server", "content": predicted("ok: simulated", false)},
            {"when": "2. flaky:ok", "content": finish("done")},
            {"when": "1. flaky:forecast", "content": call("flaky:ok", json!({"text": "never recorded"}))},
            {"content": "done"}
        ]),
        &[
            "--at",
            "2",
            "--tools",
            "recorded",
            "--on-miss",
            "world-model",
            "--world-model",
            "llm",
        ],
    );
    assert!(forked.status.success(), "{}", text(&forked));
    let run = only_run(&out);
    let events = events(&run);
    assert_eq!(
        kinds_with_origin(&events),
        [
            ("tool_called".to_string(), 1, true),
            ("call_simulated".to_string(), 2, false),
        ]
    );
    let simulated = events
        .iter()
        .find(|e| e["kind"] == "call_simulated")
        .unwrap();
    assert_eq!(simulated["tool"], "flaky:ok");
    assert_eq!(simulated["arguments"], json!({"text": "never recorded"}));
    assert_eq!(simulated["observation"]["text"], "ok: simulated");
    // No server was started: the header keeps the original's catalogue.
    assert_eq!(
        events[0]["tools"],
        support::events(&original)[0]["tools"],
        "the original's tools"
    );
    validates(&run);
    let metrics = report_metrics(&run);
    assert_eq!(metrics["tool_calls"], 0, "nothing real: {metrics}");
    // A step a world model answered is no history a fork of the fork can replay.
    let refused = fork(
        &run,
        &dir.path().join("again"),
        json!([{"content": "done"}]),
        &["--at", "3", "--tools", "recorded"],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused).contains("step 2 of")
            && text(&refused).contains("answered by a world model"),
        "{}",
        text(&refused)
    );
}

#[test]
fn a_miss_ends_the_fork_by_default_naming_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let original = forecast_then_ok_run(dir.path());
    let out = dir.path().join("forks");
    let forked = fork(
        &original,
        &out,
        json!([
            {"when": "1. flaky:forecast", "content": call("flaky:ok", json!({"text": "new"}))},
            {"content": "done"}
        ]),
        &["--at", "2", "--tools", "recorded"],
    );
    assert_eq!(forked.status.code(), Some(1), "{}", text(&forked));
    let run = only_run(&out);
    let events = events(&run);
    let error = events
        .iter()
        .find(|e| e["kind"] == "error" && e["source"] == "fork")
        .expect("the miss is an error");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("step 2 calls flaky:ok") && message.contains("never made"),
        "{message}"
    );
    assert_eq!(events.last().unwrap()["status"], "failed");
    validates(&run);
}

#[test]
fn a_fork_point_outside_the_run_and_a_misplaced_on_miss_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let original = forecast_then_ok_run(dir.path());
    let out = dir.path().join("forks");
    let rules = json!([{"content": "done"}]);
    let beyond = fork(
        &original,
        &out,
        rules.clone(),
        &["--at", "9", "--tools", "recorded"],
    );
    assert_eq!(beyond.status.code(), Some(1));
    assert!(
        text(&beyond).contains("has steps 1 to 2"),
        "{}",
        text(&beyond)
    );
    let misplaced = fork(
        &original,
        &out,
        rules.clone(),
        &["--at", "2", "--on-miss", "real"],
    );
    assert!(
        text(&misplaced).contains("--on-miss is for --tools recorded"),
        "{}",
        text(&misplaced)
    );
    let no_config = fork(&original, &out, rules, &["--at", "2"]);
    assert!(
        text(&no_config).contains("pass --mcp-config"),
        "{}",
        text(&no_config)
    );
    assert!(!out.exists(), "nothing written");
}

/// A run whose first call's line is torn: a fork that would replay it is refused naming the
/// step and the line, never run with that step silently missing; one that replays nothing
/// goes on and says the file lost a line.
#[test]
fn a_fork_of_a_run_with_a_torn_call_line_refuses_to_replay_the_lost_step() {
    let dir = tempfile::tempdir().unwrap();
    let original = forecast_then_ok_run(dir.path());
    let run = dir.path().join("torn.jsonl");
    with_torn_line(
        &original,
        &["\"kind\":\"tool_called\"", "\"step\":1,"],
        &run,
    );
    let out = dir.path().join("forks");
    let refused = fork(
        &run,
        &out,
        json!([{"content": "done"}]),
        &["--at", "2", "--tools", "recorded"],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let said = text(&refused);
    assert!(
        said.contains("step 1 of") && said.contains("is not in the file") && said.contains("line "),
        "{said}"
    );
    assert!(!out.exists(), "nothing written");
    let fresh = fork(
        &run,
        &out,
        json!([{"content": "done"}]),
        &["--at", "1", "--tools", "recorded", "--on-miss", "error"],
    );
    assert!(
        text(&fresh).contains("1 line(s) could not be read and were skipped"),
        "{}",
        text(&fresh)
    );
}

/// The memory knowledge-graph server (stateful): a run that creates an entity, then reads the
/// graph. Forked after the creation with real tools, the fresh server does not hold the entity
/// (the fork does not make replayed calls again, and says so); with the recording, the read is
/// the original's.
#[test]
fn a_stateful_servers_replayed_steps_are_not_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let memory_file = dir.path().join("graph.jsonl");
    // Its real state, knowingly (a file of this test's own): its destructive tools allowed.
    let memory = json!({
        "command": npm_bin("mcp-server-memory"),
        "env": {"MEMORY_FILE_PATH": memory_file.display().to_string()},
        "cosmos": {"live_state": true}
    });
    let mcp = write_mcp_config(dir.path(), json!({"memory": memory}));
    let entity =
        json!({"entities": [{"name": "Lyon", "entityType": "city", "observations": ["clear"]}]});
    let (_, original) = react_run(
        dir.path(),
        &mcp,
        json!({"id": "graph_1", "request": "Remember Lyon, then read it back."}),
        json!([
            {"when": "2. memory:read_graph", "content": finish("Lyon is clear")},
            {"when": "1. memory:create_entities", "content": call("memory:read_graph", json!({}))},
            {"when": "No tool has been called yet", "content": call("memory:create_entities", entity)},
            {"content": "Lyon is clear"}
        ]),
    );
    let read_back = |run: &Path| -> String {
        events(run)
            .iter()
            .filter(|e| e["kind"] == "tool_called" && e["tool"] == "memory:read_graph")
            .map(|e| e["result"]["text"].as_str().unwrap_or_default().to_string())
            .next_back()
            .unwrap()
    };
    assert!(read_back(&original).contains("Lyon"));

    // A fresh graph for the fork: the original's creation is not made again.
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    let fresh_memory = json!({
        "command": npm_bin("mcp-server-memory"),
        "env": {"MEMORY_FILE_PATH": fresh.join("graph.jsonl").display().to_string()},
        "cosmos": {"live_state": true}
    });
    let fresh_mcp = write_mcp_config(&fresh, json!({"memory": fresh_memory}));
    let rules = json!([
        {"when": "2. memory:read_graph", "content": finish("read")},
        {"when": "1. memory:create_entities", "content": call("memory:read_graph", json!({}))},
        {"content": "read"}
    ]);
    let out = dir.path().join("real");
    let forked = fork(
        &original,
        &out,
        rules.clone(),
        &["--at", "2", "--mcp-config", fresh_mcp.to_str().unwrap()],
    );
    assert!(forked.status.success(), "{}", text(&forked));
    assert!(
        text(&forked).contains("not made again: 1. memory:create_entities"),
        "said before the run: {}",
        text(&forked)
    );
    let real = only_run(&out);
    assert!(
        !read_back(&real).contains("Lyon"),
        "the fresh server never saw the replayed creation: {}",
        read_back(&real)
    );

    // From the recording, the read is the original's.
    let out = dir.path().join("recorded");
    let forked = fork(
        &original,
        &out,
        rules,
        &["--at", "2", "--tools", "recorded"],
    );
    assert!(forked.status.success(), "{}", text(&forked));
    assert_eq!(read_back(&only_run(&out)), read_back(&original));
}

/// `b` in the explorer: the form filled in with the run's settings, the fork started as
/// `cosmos fork` (the real binary), its run opened live in front, and compare opened on it and
/// the original at their first divergence once it ends.
#[test]
fn b_forks_from_the_explorer_and_compare_opens_where_the_runs_part() {
    use cosmos_app::tui::ForkForm;
    use cosmos_app::tui::Work;

    let dir = tempfile::tempdir().unwrap();
    let original = forecast_then_ok_run(dir.path());
    let calls = dir.path().join("calls.txt");
    let mcp = logging_server(dir.path(), &calls);
    let llm = ScriptedLlm::start(json!([
        {"when": "2. flaky:ok", "content": finish("noted otherwise")},
        {"when": "1. flaky:forecast", "content": call("flaky:ok", json!({"text": "otherwise"}))},
        {"content": "noted otherwise"}
    ]));
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        format!(
            "[default]\nbase_url = \"{}\"\nmodel = \"scripted-model\"\n",
            llm.base_url()
        ),
    )
    .unwrap();
    // The browser over the run's folder, the run opened from it.
    let roots = vec![dir.path().to_path_buf()];
    let listed = cosmos_trajectory::listing::list_runs(&roots).unwrap();
    assert_eq!(listed.len(), 1);
    let browser = cosmos_app::tui::Browser::new(roots.clone(), listed, 39);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (160, 40));
    app.probe = cosmos_engine::probe::ProbeSetup {
        config: Some(config),
        mcp_config: Some(mcp),
    };
    app.update(Action::Do(KeyCommand::Open));
    for (id, work) in app.take_work() {
        for action in cosmos_app::tui::perform(id, work) {
            app.update(action);
        }
    }
    assert!(app.top_is::<RunView>(), "the run opened from the browser");
    // The tree lists the steps of a ReAct run; the second is selected.
    app.update(Action::Do(KeyCommand::Down));
    app.update(Action::Do(KeyCommand::Branch));
    let form = app.top_as::<ForkForm>().expect("the fork form");
    let choice = form.choice();
    assert_eq!(
        (
            choice.at,
            choice.agent.as_str(),
            choice.world_model.as_str()
        ),
        (2, "react", "none"),
        "the selected step, the run's own agent and world model"
    );
    assert_eq!(
        choice.tools, "real",
        "real tools: the explorer has the servers"
    );
    app.update(Action::Input(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Enter,
    )));
    let mut work = app.take_work();
    assert_eq!(work.len(), 1, "{work:?}");
    let (id, Work::Fork(mut fork)) = work.remove(0) else {
        panic!("a fork");
    };
    // The test's binary is not cosmos: the fork runs the real one.
    fork.program = env!("CARGO_BIN_EXE_cosmos").into();
    assert!(
        app.message()
            .is_some_and(|m| m.starts_with("forking from step 2")),
        "{:?}",
        app.message()
    );
    let mut listed_while_running = None;
    for action in cosmos_app::tui::perform(id, Work::Fork(fork)) {
        let loaded = matches!(action, Action::Loaded(..));
        app.update(action);
        if loaded {
            // The browser lists the fork as soon as its file exists, and the "forking…"
            // message is over.
            let browser = app.find::<cosmos_app::tui::Browser>().unwrap();
            listed_while_running = Some(browser.runs().len());
            assert_eq!(app.message(), None);
        }
    }
    assert_eq!(listed_while_running, Some(2), "the fork listed at once");
    assert_eq!(
        app.message(),
        Some("the fork ended: compare opens it beside its original")
    );
    // The fork opened live, took its events, and asked for compare when it ended.
    let forked = app.find::<RunView>().expect("the fork's view");
    assert!(forked.finished(), "the fork's run was followed to its end");
    assert!(forked.run().header.fork_of.is_some());
    let mut work = app.take_work();
    assert_eq!(work.len(), 1, "{work:?}");
    let (id, compare) = work.remove(0);
    assert!(matches!(compare, Work::Compare(ref paths) if paths[0] == original));
    for action in cosmos_app::tui::perform(id, compare) {
        app.update(action);
    }
    let compare = app.top_as::<CompareView>().expect("compare opens");
    assert_eq!(compare.first_divergence(), Some(1));
    // Its columns say which run is the fork.
    assert!(
        compare.labels()[0].starts_with("original · "),
        "{:?}",
        compare.labels()
    );
    assert!(
        compare.labels()[1].starts_with("⑂@2 fork · "),
        "{:?}",
        compare.labels()
    );
    assert_eq!(compare.selection().selected, 1, "on the first divergence");
    // The real server got the fork's new call only; step 1 was replayed.
    assert_eq!(std::fs::read_to_string(&calls).unwrap(), "ok\n");

    // The browser links the two both ways (`b`), and marks them.
    let listed = cosmos_trajectory::listing::list_runs(&roots).unwrap();
    assert_eq!(listed.len(), 2);
    let browser = cosmos_app::tui::Browser::new(roots, listed, 30);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (200, 30));
    let selected = |app: &App| {
        app.top_as::<cosmos_app::tui::Browser>()
            .unwrap()
            .selected_run()
            .unwrap()
            .path
            .clone()
    };
    let first = selected(&app);
    app.update(Action::Do(KeyCommand::Branch));
    let second = selected(&app);
    assert_ne!(first, second, "b goes to the other run");
    app.update(Action::Do(KeyCommand::Branch));
    assert_eq!(selected(&app), first, "and b comes back");
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(200, 30)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let screen = terminal.backend().to_string();
    assert!(screen.contains("⑂@2") && screen.contains("⑂×1"), "{screen}");
}

/// The sample ReAct run forked at step 2 with its recording: step 1 is the sample's own call,
/// replayed; the new planner asks the same call again (the recording answers) and finishes.
/// No server is started at all (no MCP config is given), and the fork validates.
#[test]
fn the_sample_react_run_forks_at_step_2_from_its_recording_alone() {
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("sample_runs/20261202T025240.637Z_time_mcp_000_react_none.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("forks");
    let forked = fork(
        &sample,
        &out,
        json!([
            {"when": "2. Time MCP:get_current_time", "content": finish("15:00 UTC suits most")},
            {"when": "1. Time MCP:get_current_time", "content": call("Time MCP:get_current_time", json!({"timezone": "UTC"}))},
            {"content": "15:00 UTC suits most"}
        ]),
        &["--at", "2", "--tools", "recorded"],
    );
    assert!(forked.status.success(), "{}", text(&forked));
    let run = only_run(&out);
    let events = events(&run);
    assert_eq!(events[0]["fork_of"]["step"], 2);
    assert_eq!(events[0]["servers"], support::events(&sample)[0]["servers"]);
    assert_eq!(
        kinds_with_origin(&events),
        [
            ("tool_called".to_string(), 1, true),
            ("tool_called".to_string(), 2, true),
        ]
    );
    let first_of_sample = support::events(&sample)
        .into_iter()
        .find(|e| e["kind"] == "tool_called")
        .unwrap();
    for copy in events.iter().filter(|e| e["kind"] == "tool_called") {
        assert_eq!(
            copy["result"], first_of_sample["result"],
            "from the recording"
        );
    }
    validates(&run);
    assert_eq!(report_metrics(&run)["tool_calls"], 0);
}

/// An imported session (a Claude Code session in ATIF) forks like a run of cosmos's own: its
/// calls replayed, then a cosmos agent goes on against the real server of the same name.
#[test]
fn an_imported_atif_session_forks_against_the_real_server_of_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let imported = dir.path().join("imported");
    let atif = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/interchange/atif_claude_code_time.json");
    let done = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "import",
            atif.to_str().unwrap(),
            "--out",
            imported.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let session = only_run(&imported);
    let mcp = write_mcp_config(
        dir.path(),
        json!({"time": {"command": python(), "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}}),
    );
    let out = dir.path().join("forks");
    let forked = fork(
        &session,
        &out,
        json!([
            {"when": "3. time:get_current_time", "content": finish("It is the time the server said")},
            {"content": call("time:get_current_time", json!({"timezone": "Europe/Paris"}))}
        ]),
        &[
            "--at",
            "3",
            "--agent",
            "react",
            "--mcp-config",
            mcp.to_str().unwrap(),
        ],
    );
    assert!(forked.status.success(), "{}", text(&forked));
    let run = only_run(&out);
    let events = events(&run);
    assert_eq!(events[0]["fork_of"]["step"], 3);
    assert_eq!(
        kinds_with_origin(&events),
        [
            ("tool_called".to_string(), 1, true),
            ("tool_called".to_string(), 2, true),
            ("tool_called".to_string(), 3, false),
        ]
    );
    let fresh = events
        .iter()
        .find(|e| e["kind"] == "tool_called" && e["step"] == 3)
        .unwrap();
    // The real server answered the new call.
    let result: Value = serde_json::from_str(fresh["result"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["timezone"], "Europe/Paris");
    validates(&run);
}
