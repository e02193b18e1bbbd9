//! Nothing on screen is false: views drawn with ratatui's TestBackend, the figures they show
//! parsed back from the screen and held to the record that holds them, read here without the
//! program's own readers (the file's lines as JSON, `cosmos report --format json`).

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cosmos_app::tui::Action;
use cosmos_app::tui::App;
use cosmos_app::tui::Theme;
use cosmos_app::tui::WmEvalView;
use cosmos_app::tui::open_run;
use cosmos_app::tui::{Command, Keymap};
use cosmos_trajectory::event::{AgentKind, EventBody, Observation, Origin, PredictionRecord};
use cosmos_trajectory::run::Run;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use serde_json::Value;

use common::{cosmos_stdout as cosmos, render};

fn opened(run: Run, size: (u16, u16)) -> App {
    let area = Rect::new(0, 0, size.0, size.1 - 1);
    App::on(
        open_run(run, area),
        Keymap::default(),
        Theme::new(true),
        size,
    )
}

/// The sample wm-eval file.
fn sample_wm_eval() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("_wm-eval_"))
        .expect("a wm-eval file in sample_runs/")
}

/// What a wm-eval file's own lines say, counted without the program's reader: calls copied,
/// and per world model the simulations and failures, and the leader `run_finished` records.
struct FileCounts {
    calls: usize,
    simulated: HashMap<String, usize>,
    failed: HashMap<String, usize>,
    leader: Option<(String, f64)>,
}

fn count_file(path: &Path) -> FileCounts {
    let mut counts = FileCounts {
        calls: 0,
        simulated: HashMap::new(),
        failed: HashMap::new(),
        leader: None,
    };
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        match e["kind"].as_str().unwrap() {
            "tool_called" => counts.calls += 1,
            "call_simulated" => {
                *counts
                    .simulated
                    .entry(e["world_model"].as_str().unwrap().to_string())
                    .or_default() += 1
            }
            "error" if e["source"] == "world_model" => {
                *counts
                    .failed
                    .entry(e["name"].as_str().unwrap().to_string())
                    .or_default() += 1
            }
            "run_finished" => {
                let l = &e["totals"]["leader"];
                counts.leader = Some((
                    l["world_model"].as_str().unwrap().to_string(),
                    l["fidelity"].as_f64().unwrap(),
                ));
            }
            _ => {}
        }
    }
    counts
}

/// A leaderboard row as drawn: `name  sim/calls  fail  no-pred  fidelity …`.
fn board_row<'a>(screen: &'a str, name: &str) -> Vec<&'a str> {
    let line = screen
        .lines()
        .find(|l| {
            l.trim_start_matches(['"', '│', ' '])
                .starts_with(&format!("{name} "))
        })
        .unwrap_or_else(|| panic!("no leaderboard row for {name}:\n{screen}"));
    line.trim_matches(['"', '│', ' '])
        .split_whitespace()
        .collect()
}

#[test]
fn the_sample_wm_eval_leaderboard_counts_what_the_file_holds() {
    let path = sample_wm_eval();
    let file = count_file(&path);
    for size in [(200, 50), (80, 24)] {
        let mut app = opened(Run::open(&path).unwrap(), size);
        let screen = render(&mut app);
        for (name, simulated) in &file.simulated {
            let failed = file.failed.get(name).copied().unwrap_or(0);
            let row = board_row(&screen, name);
            assert_eq!(
                row[1],
                format!("{simulated}/{}", file.calls),
                "{name}: simulated of calls, as the file holds them\n{screen}"
            );
            assert_eq!(row[2], failed.to_string(), "{name}: failures\n{screen}");
        }
        // The figure of the star is the leader the file recorded.
        let (leader, fidelity) = file.leader.clone().unwrap();
        let row = board_row(&screen, &leader);
        assert_eq!(row[4], format!("{fidelity:.2}"), "{screen}");
        assert!(row.iter().any(|w| w.starts_with('★')), "{screen}");
    }
    // The figures: 52 calls, one failure each, the leader memory at 0.83.
    assert_eq!(file.calls, 52);
    assert!(file.failed.values().all(|&n| n == 1));
}

#[test]
fn every_failure_of_the_sample_wm_eval_is_shown_on_its_own_call() {
    let path = sample_wm_eval();
    let app = opened(Run::open(&path).unwrap(), (200, 50));
    let view = app.top_as::<WmEvalView>().unwrap();
    // Each failure's message names its step; the view shows it on that call's row.
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["kind"] != "error" || e["source"] != "world_model" {
            continue;
        }
        let message = e["message"].as_str().unwrap();
        let step: u64 = message
            .strip_prefix("step ")
            .and_then(|m| m.split(':').next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        let w = view
            .names()
            .iter()
            .position(|n| n == e["name"].as_str().unwrap())
            .unwrap();
        let row = view.rows().iter().find(|r| r.step == step).unwrap();
        assert!(
            matches!(&row.verdicts[w], cosmos_engine::wm_eval::Verdict::Failed(m) if m == message),
            "step {step}: {:?}",
            row.verdicts[w]
        );
    }
}

fn called(step: u64, result: &str, is_error: bool) -> EventBody {
    EventBody::ToolCalled {
        step,
        tool: "Time MCP:get_current_time".into(),
        server: Some("Time MCP".into()),
        arguments: Box::new(serde_json::json!({"timezone": format!("Zone/{step}")})),
        result: Observation {
            text: result.into(),
            is_error,
            ..Default::default()
        },
        latency_ms: 0,
        node: None,
        error: None,
        origin: Some(Box::new(Origin {
            run: "runs/a.jsonl".into(),
            seq: step,
        })),
        state_change: None,
    }
}

fn simulated(step: u64, wm: &str, text: &str) -> EventBody {
    EventBody::CallSimulated {
        step,
        tool: None,
        arguments: None,
        prediction: PredictionRecord {
            world_model: wm.into(),
            observation: Observation {
                text: text.into(),
                ..Default::default()
            },
            latency_ms: 1,
            tokens: None,
            confidence: None,
            confidence_source: None,
            members: Vec::new(),
            predicted_state: None,
        },
    }
}

fn failed(step: Option<u64>, wm: &str, message: &str) -> EventBody {
    EventBody::Error {
        source: cosmos_trajectory::event::ErrorSource::WorldModel,
        name: Some(wm.into()),
        message: message.into(),
        stderr_tail: None,
        step,
    }
}

/// A wm-eval file whose world models finished out of order, as `cosmos wm-eval` writes them:
/// b's failure of call 1 comes after call 2 was copied, and a's failure of call 3 names its
/// step only in its message (an older file).
fn out_of_order() -> Run {
    let mut header = common::header("wm-eval", AgentKind::WmEval, None);
    header
        .agent
        .settings
        .insert("names".into(), serde_json::json!(["a", "b"]));
    common::run_of(
        "runs/wm-eval.jsonl",
        header,
        vec![
            called(1, "one", false),
            simulated(1, "a", "one"),
            called(2, "two", false),
            simulated(2, "a", "two"),
            failed(Some(1), "b", "step 1: b could not"),
            simulated(2, "b", "zzz"),
            called(3, "three", false),
            simulated(3, "b", "three"),
            failed(None, "a", "step 3: a could not"),
        ],
    )
}

#[test]
fn a_failure_is_the_call_of_its_step_not_the_last_call_copied() {
    let mut app = opened(out_of_order(), (200, 40));
    let screen = render(&mut app);
    let view = app.top_as::<WmEvalView>().unwrap();
    let board = &view.board().world_models;
    // Three calls, each world model simulated two and failed one.
    for w in board {
        assert_eq!((w.n, w.calls, w.failed), (2, 3, 1), "{}: {screen}", w.name);
    }
    let failed_on = |w: usize| -> Vec<u64> {
        view.rows()
            .iter()
            .filter(|r| matches!(r.verdicts[w], cosmos_engine::wm_eval::Verdict::Failed(_)))
            .map(|r| r.step)
            .collect()
    };
    assert_eq!(failed_on(0), [3]);
    assert_eq!(failed_on(1), [1]);
    assert!(screen.contains("✗ step 1: b could not"), "{screen}");
    assert!(!screen.contains("not reached"), "{screen}");
}

#[test]
fn sorted_nobody_right_first_puts_the_calls_no_world_model_got_right_first() {
    let mut header = common::header("wm-eval", AgentKind::WmEval, None);
    header
        .agent
        .settings
        .insert("names".into(), serde_json::json!(["a", "b"]));
    let run = common::run_of(
        "runs/wm-eval.jsonl",
        header,
        vec![
            // a right, b wrong: the widest disagreement, but a got it.
            called(1, "one", false),
            simulated(1, "a", "one"),
            simulated(1, "b", "zzz"),
            // Nobody right.
            called(2, "two", false),
            simulated(2, "a", "zzz"),
            simulated(2, "b", "qqq"),
            // Both half right.
            called(3, "alpha beta", false),
            simulated(3, "a", "alpha gamma"),
            simulated(3, "b", "alpha gamma"),
        ],
    );
    let mut app = opened(run, (200, 40));
    app.update(Action::Do(Command::SortNext));
    let view = app.top_as::<WmEvalView>().unwrap();
    let order: Vec<u64> = view.shown().map(|r| r.step).collect();
    assert_eq!(order, [2, 3, 1], "the call nobody got right first");
    assert_eq!(view.selected().map(|r| r.step), Some(2));
}

/// A ReAct run of 2,000 real calls of which the 1,000th failed, written through the real
/// writer.
fn one_failure_in_2000(dir: &Path) -> PathBuf {
    let header = common::header("many", AgentKind::React, None);
    let mut bodies = Vec::new();
    for step in 1..=2000u64 {
        bodies.push(EventBody::ToolCalled {
            step,
            tool: "time:convert_time".into(),
            server: Some("time".into()),
            arguments: Box::new(serde_json::json!({
                "source_timezone": "UTC", "time": "09:00", "target_timezone": "UTC"
            })),
            result: Observation {
                text: if step == 1000 { "boom" } else { "ok" }.into(),
                is_error: step == 1000,
                ..Default::default()
            },
            latency_ms: 1,
            node: None,
            error: None,
            origin: None,
            state_change: None,
        });
    }
    bodies.push(EventBody::Answer {
        text: "done".into(),
    });
    bodies.push(common::completed());
    let run = common::run_of("many.jsonl", header, bodies);
    let path = dir.join("many.jsonl");
    common::write_run(&run, &path);
    path
}

#[test]
fn one_failed_call_in_2000_never_reads_as_100_percent_success() {
    use cosmos_app::tui::Browser;
    use cosmos_app::tui::CompareView;
    use cosmos_trajectory::listing::RunSummary;
    let dir = tempfile::tempdir().unwrap();
    let path = one_failure_in_2000(dir.path());
    let dir_arg = dir.path().to_str().unwrap();
    // The record: report's JSON.
    let json: Value = serde_json::from_str(&cosmos(&[
        "report",
        dir_arg,
        "--format",
        "json",
        "--per-run",
    ]))
    .unwrap();
    let rate = json["per_run"][0]["metrics"]["tool_call_success_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("{json:#}"));
    assert_eq!(rate, 1999.0 / 2000.0);
    // report's table: 99.95 in the success column, never 100.0.
    let text = cosmos(&["report", dir_arg]);
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let at = header.find("success %").unwrap();
    let row = lines.nth(1).unwrap();
    let cell = row[at..].split_whitespace().next().unwrap();
    assert_eq!(cell, "99.95", "{text}");
    for size in [(200, 50), (80, 24)] {
        // The browser.
        let listed = vec![RunSummary::read(&path)];
        let browser = Browser::new(vec![dir.path().to_path_buf()], listed, size.1 - 1);
        let mut app = App::new(browser, Keymap::default(), Theme::new(true), size);
        let screen = render(&mut app);
        assert!(screen.contains("99.95%"), "{screen}");
        assert!(!screen.contains("100%"), "{screen}");
        // The run view at its end, and two runs compared.
        let run = Run::open(&path).unwrap();
        // A run view opens at the run's end.
        let mut app = common::run_app(run, size);
        let screen = render(&mut app);
        assert!(screen.contains("success 99.95%"), "{screen}");
        let runs = vec![Run::open(&path).unwrap(), Run::open(&path).unwrap()];
        let compare = CompareView::new(&runs, (size.0, size.1 - 1));
        let mut app = App::new(compare, Keymap::default(), Theme::new(true), size);
        let screen = render(&mut app);
        let success = screen
            .lines()
            .find(|l| l.trim_start_matches(['"', '│', ' ']).starts_with("success"))
            .unwrap_or_else(|| panic!("{screen}"));
        assert_eq!(success.matches("99.95%").count(), 2, "{screen}");
    }
}

#[test]
fn a_search_that_found_no_finished_path_is_marked_not_green_and_f_stops_at_it() {
    use cosmos_app::tui::Browser;
    use cosmos_trajectory::event::{Ending, RunStatus, Totals};
    use cosmos_trajectory::listing::RunSummary;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, ending: Ending| {
        let header = common::header(name, AgentKind::Spiral, Some("memory"));
        let run = common::run_of(
            &format!("{name}.jsonl"),
            header,
            vec![
                EventBody::Answer {
                    text: "done".into(),
                },
                EventBody::RunFinished {
                    status: RunStatus::Completed,
                    error: None,
                    ending: Some(ending),
                    totals: Totals::default(),
                    end_digest: Default::default(),
                    state_match: Default::default(),
                },
            ],
        );
        let path = dir.path().join(format!("{name}.jsonl"));
        common::write_run(&run, &path);
        RunSummary::read(&path)
    };
    let listed = vec![
        write("clean", Ending::PlannerFinished),
        write("exhausted", Ending::SearchExhausted),
    ];
    let size = (200, 20);
    let browser = Browser::new(vec![dir.path().to_path_buf()], listed, size.1 - 1);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), size);
    let screen = render(&mut app);
    let row = screen.lines().find(|l| l.contains("exhausted")).unwrap();
    assert!(row.contains("completed ⊣no finish"), "{screen}");
    // Green is only for the clean finish: the two status cells differ in colour.
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let colour_of = |word: &str| {
        let y = (0..size.1)
            .find(|&y| {
                (0..size.0)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .contains(word)
            })
            .unwrap();
        let line: String = (0..size.0)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        let x = line
            .find("completed")
            .map(|b| line[..b].chars().count())
            .unwrap() as u16;
        buffer[(x, y)].fg
    };
    assert_ne!(colour_of("clean"), colour_of("exhausted"));
    // f goes to the run with no finished path, whatever row it starts from.
    app.update(Action::Do(Command::NextFailure));
    let screen = render(&mut app);
    let selected = app
        .top_as::<Browser>()
        .and_then(|b| b.selected_run())
        .map(|r| r.path.clone())
        .unwrap();
    assert!(selected.ends_with("exhausted.jsonl"), "{screen}");
}

#[test]
fn a_line_that_could_not_be_read_is_said_on_the_status_line_and_in_the_about_view() {
    use cosmos_app::tui::Inspector;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    // A line in the middle replaced by garbage, as a crash or a hand edit leaves one.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let events_in_file = lines.len() - 1;
    lines[3] = "{\"seq\":3,\"t_ms\":5,\"kind\":";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let run = Run::open(&path).unwrap();
    assert_eq!(run.problems.iter().filter(|p| p.skipped).count(), 1);
    for size in [(200, 50), (80, 24)] {
        let mut app = common::run_app(Run::open(&path).unwrap(), size);
        let screen = render(&mut app);
        let status = screen.lines().last().unwrap();
        // The counter counts the events read; beside it, the line that was not.
        assert!(
            status.contains(&format!("event {0}/{0}", events_in_file - 1)),
            "{status}"
        );
        assert!(status.contains("1 line(s) skipped"), "{status}");
        app.update(Action::Do(Command::About));
        let about = app.top_as::<Inspector>().unwrap().lines().join("\n");
        assert!(about.contains("1 line(s) skipped"), "{about}");
        assert!(about.contains("line 4: "), "{about}");
    }
}

#[test]
fn a_run_with_no_node_and_no_call_says_so_instead_of_asking_to_step_forward() {
    // A ReAct run whose only server never started: an error, no call, the end.
    let run = common::run_of(
        "no-server.jsonl",
        common::header("none", AgentKind::React, None),
        vec![
            EventBody::Error {
                source: cosmos_trajectory::event::ErrorSource::Server,
                name: Some("time".into()),
                message: "connection closed: initialize response".into(),
                stderr_tail: Some("No module named mcp_server_time".into()),
                step: None,
            },
            EventBody::RunFinished {
                status: cosmos_trajectory::event::RunStatus::Failed,
                error: Some("no MCP server could be started".into()),
                ending: None,
                totals: Default::default(),
                end_digest: Default::default(),
                state_match: Default::default(),
            },
        ],
    );
    let mut app = common::run_app(run, (120, 30));
    let screen = render(&mut app);
    assert!(
        screen.contains("this run has no search node and no real call"),
        "{screen}"
    );
    assert!(!screen.contains("step forward"), "{screen}");
    // The metrics pane says why the run failed, as its run_finished does.
    assert!(
        screen.contains("failed · no MCP server could be started"),
        "{screen}"
    );
    assert!(!screen.contains("ending not recorded"), "{screen}");
}

#[test]
fn stepping_with_the_tree_focused_moves_the_observation_pane_with_the_cursor() {
    use cosmos_app::tui::Pane;
    use cosmos_app::tui::RunView;
    let mut app = common::run_app(common::plan_fails_run(), (200, 50));
    app.update(Action::JumpTo(0));
    // Step through the run; the tree keeps the focus (the default).
    let mut selected = Vec::new();
    for _ in 0..40 {
        app.update(Action::Do(Command::StepForward));
        let view = app.top_as::<RunView>().unwrap();
        assert_eq!(view.focus(), Pane::Tree);
        selected.push(format!("{:?}", view.tree().selected_item()));
    }
    selected.dedup();
    assert!(
        selected.len() > 2,
        "the selection (and the observation pane, which shows it) followed the steps: {selected:?}"
    );
}

#[test]
fn a_proxy_session_shows_no_planner_and_no_search_figures_on_calls_no_search_made() {
    use cosmos_app::tui::Browser;
    use cosmos_app::tui::Inspector;
    use cosmos_trajectory::listing::RunSummary;
    // A client's session through cosmos proxy: its calls rehearsed as a chain of nodes (each
    // evaluated with the rehearsal's base reward), as the proxy records them.
    let mut header = common::header("session", AgentKind::External, Some("memory"));
    header.planner.model = "mcp 0.1.0".into();
    header.agent.settings.insert(
        "client".into(),
        serde_json::json!({"name": "mcp", "version": "0.1.0"}),
    );
    let mut bodies = common::plan_fails_bodies("memory", "Mars/Olympus");
    // The rehearsal's verdict on the first call, right after its prediction.
    let verdict = cosmos_trajectory::event::Verdict::Valid;
    let at = bodies
        .iter()
        .position(|b| matches!(b, EventBody::NodeSimulated { .. }))
        .unwrap();
    bodies.insert(
        at + 1,
        EventBody::NodeEvaluated {
            node: 1,
            verdict,
            base_reward: cosmos_engine::agent::base_reward(verdict),
            critic_reward: None,
            critic_reason: None,
            reward: cosmos_engine::agent::base_reward(verdict),
            terminal: false,
            horizon: None,
        },
    );
    let run = common::run_of("session.jsonl", header, bodies);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    common::write_run(&run, &path);
    let browser = Browser::new(
        vec![dir.path().to_path_buf()],
        vec![RunSummary::read(&path)],
        29,
    );
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (200, 30));
    let screen = render(&mut app);
    let row = screen.lines().find(|l| l.contains("session")).unwrap();
    assert!(row.contains("external: mcp"), "{screen}");
    assert!(
        !row.contains("mcp 0.1.0"),
        "the client is no planner: {screen}"
    );
    // The tree: no visits, values or rewards on the session's calls.
    let mut app = common::run_app(Run::open(&path).unwrap(), (200, 50));
    let screen = render(&mut app);
    assert!(
        !screen.contains(" r=") && !screen.contains(" N="),
        "{screen}"
    );
    // The first call's node (the root is above it).
    app.update(Action::Do(Command::Down));
    app.update(Action::Do(Command::Inspect));
    let node = app.top_as::<Inspector>().unwrap().lines().join("\n");
    assert!(node.contains("no search used it"), "{node}");
    assert!(!node.contains("mean value Q="), "{node}");
}

/// Every run of `sample_runs/` (its sweep's too) with `cosmos report --per-run`'s record of it.
fn sample_runs_reported() -> Vec<(PathBuf, Value)> {
    common::reported_per_run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs"))
}

/// The cell under `column` in a drawn table's row: the text from the heading's start to the
/// next gap of two spaces (a cell's own text has one space at most).
fn cell_under<'a>(header: &str, row: &'a str, column: &str) -> Option<&'a str> {
    let at = header.find(column)?;
    let chars_before = header[..at].chars().count();
    let start = row.char_indices().nth(chars_before)?.0;
    let rest = &row[start..];
    let end = rest.find("  ").unwrap_or(rest.len());
    Some(rest[..end].trim_end_matches('│').trim())
}

#[test]
fn browser_run_view_compare_and_about_show_reports_figures_for_every_sample_run() {
    let reported = sample_runs_reported();
    assert!(reported.len() >= 15, "{}", reported.len());
    for (path, r) in &reported {
        shows_reports_figures(path, r);
    }
}

/// Truth IV: the imported runs (ATIF, Inspect and OTLP fixtures, each imported) show in the
/// browser, the run view, compare and the about view what `report` says of them, as cosmos's
/// own runs do; and at 80x24 the browser keeps every run's status, the marks whole.
#[test]
fn every_view_shows_reports_figures_for_imported_runs_too() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/interchange");
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let file = entry.unwrap().path();
        let done = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
            .arg("import")
            .arg(&file)
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&done.stdout).is_empty(),
            "{} made no run: {done:?}",
            file.display()
        );
    }
    let reported = common::reported_per_run(dir.path());
    assert!(reported.len() >= 6, "{}", reported.len());
    for (path, r) in &reported {
        shows_reports_figures(path, r);
    }
    // The source's verdicts in the run view are report's.
    for (path, r) in &reported {
        let m = &r["metrics"];
        let scored = m["source_scored"].as_u64().unwrap_or(0);
        let mut app = common::run_app(Run::open(path).unwrap(), (220, 60));
        let screen = render(&mut app);
        if scored > 0 {
            let line = format!(
                "source    {} of {scored} score(s) passed, {} failed",
                m["source_passed"].as_u64().unwrap_or(0),
                m["source_failed"].as_u64().unwrap_or(0)
            );
            assert!(screen.contains(&line), "{line:?}:\n{screen}");
        } else {
            assert!(!screen.contains("source    "), "{screen}");
        }
    }
    assert!(
        reported
            .iter()
            .any(|(_, r)| r["metrics"]["source_scored"].as_u64().unwrap_or(0) > 0),
        "some fixture has a score"
    );
    // At 80x24 and 200x50, each run's view and about view say where it came from, and never
    // that cosmos proxy recorded it.
    for (path, _) in &reported {
        for size in [(80, 24), (200, 50)] {
            let mut app = common::run_app(Run::open(path).unwrap(), size);
            let screen = render(&mut app);
            assert!(!screen.contains("cosmos proxy"), "{size:?}:\n{screen}");
            app.update(Action::Do(Command::About));
            let about = render(&mut app);
            assert!(
                about.contains("imported from"),
                "{size:?} {}:\n{about}",
                path.display()
            );
            assert!(!about.contains("cosmos proxy"), "{size:?}:\n{about}");
        }
    }
    // At 80x24, every listed run's status is on screen.
    use cosmos_app::tui::Browser;
    use cosmos_trajectory::listing::RunSummary;
    let summaries: Vec<RunSummary> = reported.iter().map(|(p, _)| RunSummary::read(p)).collect();
    let statuses: Vec<String> = summaries.iter().map(RunSummary::outcome).collect();
    let browser = Browser::new(vec![dir.path().to_path_buf()], summaries, 29);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (80, 24));
    for (id, work) in app.take_work() {
        for action in cosmos_app::tui::perform(id, work) {
            app.update(action);
        }
    }
    let screen = render(&mut app);
    assert!(
        screen.lines().nth(1).unwrap().contains("status"),
        "{screen}"
    );
    for status in statuses {
        assert!(
            screen.contains(&status),
            "{status:?} not shown at 80x24:\n{screen}"
        );
    }
}

/// The browser over `path` alone, the run view's metrics pane at its end, compare (the run
/// beside itself) and its about view
/// show what `cosmos report --per-run` says of it (`r`).
fn shows_reports_figures(path: &Path, r: &Value) {
    use cosmos_app::tui::Browser;
    use cosmos_engine::metrics::figure;
    use cosmos_trajectory::listing::RunSummary;
    let m = &r["metrics"];
    // A proxy session's calls the world model answered are counted apart: `4+1◆` in the
    // browser, in words in the run view.
    let answered = m["simulated_answers"].as_u64().unwrap();
    let (calls, calls_in_words) = match answered {
        0 => (m["tool_calls"].to_string(), m["tool_calls"].to_string()),
        n => (
            format!("{}+{n}◆", m["tool_calls"]),
            format!("{} real + {n} answered by the world model", m["tool_calls"]),
        ),
    };
    let success = m["tool_call_success_rate"]
        .as_f64()
        .map_or("—".to_string(), |v| figure::percent(v, 0));
    let fidelity = m["fidelity"]["score"]
        .as_f64()
        .map_or("—".to_string(), |v| figure::fraction(v, 2));
    let w2r = m["w2r"]
        .as_f64()
        .map_or("—".to_string(), |v| figure::fraction(v, 2));
    // A source that counted no tokens: `null` in the report, "—" on screen.
    let tokens = r["tokens"]
        .as_u64()
        .map_or("—".to_string(), |t| t.to_string());
    // The browser over this run alone, its totals recounted when an older version wrote
    // them, as the explorer does.
    let browser = Browser::new(
        vec![path.parent().unwrap().to_path_buf()],
        vec![RunSummary::read(path)],
        29,
    );
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (220, 30));
    for (id, work) in app.take_work() {
        for action in cosmos_app::tui::perform(id, work) {
            app.update(action);
        }
    }
    let screen = render(&mut app);
    let lines: Vec<&str> = screen.lines().collect();
    let (header, row) = (lines[1], lines[2]);
    // The browser lists a run from its `run_finished` totals: one that never finished reads
    // `incomplete` with no figures (it is counted when opened), never a figure of its own.
    let finished = std::fs::read_to_string(path)
        .unwrap()
        .contains("\"kind\":\"run_finished\"");
    if !finished {
        assert_eq!(cell_under(header, row, "status"), Some("incomplete"));
    }
    for (column, want) in [
        ("calls", &calls),
        ("success", &success),
        ("fidelity", &fidelity),
        ("tokens", &tokens),
    ] {
        let want = if finished { want.as_str() } else { "—" };
        assert_eq!(
            cell_under(header, row, column),
            Some(want),
            "browser's {column} of {}:\n{screen}",
            path.display()
        );
    }
    // The run view's metrics pane at the run's end.
    let mut app = common::run_app(Run::open(path).unwrap(), (220, 60));
    let screen = render(&mut app);
    let calls_line = format!("calls     {calls_in_words}  success {success}  ");
    assert!(
        screen.contains(&calls_line),
        "run view of {}: {calls_line:?}\n{screen}",
        path.display()
    );
    if fidelity != "—" {
        assert!(
            screen.contains(&format!("fidelity  {fidelity} over ")),
            "run view's fidelity of {}:\n{screen}",
            path.display()
        );
    }
    // World to real, for a planner's run: the report's share, and where the plan went
    // otherwise; no line for a run without one.
    if w2r == "—" {
        assert!(!screen.contains("w2r       "), "{screen}");
    } else {
        let at = m["w2r_divergence"]
            .as_u64()
            .map_or("every call went as simulated".to_string(), |step| {
                format!("calls went as simulated until call {step}")
            });
        let line = format!("w2r       {w2r} ({at})");
        assert!(
            screen.contains(&line),
            "run view's w2r of {}: {line:?}\n{screen}",
            path.display()
        );
    }
    let time_line = time_line_of(m);
    assert!(
        screen.contains(&time_line),
        "run view's time of {}: {time_line:?}\n{screen}",
        path.display()
    );
    // What routing did, when the report has it; no routing line when it has not.
    match (
        m["trusted_predictions"].as_u64(),
        m["real_calls_saved"].as_u64(),
    ) {
        (Some(trusted), Some(saved)) => {
            let poor = m["trusted_poor"].as_u64().map_or(String::new(), |p| {
                format!(", {p} found poor by the real call")
            });
            let line = format!(
                "routing   {trusted} prediction(s) trusted{poor}; {saved} real call(s) saved"
            );
            assert!(
                screen.contains(&line),
                "run view's routing of {}: {line:?}\n{screen}",
                path.display()
            );
        }
        _ => assert!(!screen.contains("routing   "), "{screen}"),
    }
    // Compare, the run beside itself: each figure row reads report's figure in both columns.
    let runs = vec![Run::open(path).unwrap(), Run::open(path).unwrap()];
    let size = (220, 60);
    let compare = cosmos_app::tui::CompareView::new(&runs, (size.0, size.1 - 1));
    let mut app = App::new(compare, Keymap::default(), Theme::new(true), size);
    let screen = render(&mut app);
    let wall = if m["times_unrecorded"] == true {
        "—".to_string()
    } else {
        format!("{:.1}", m["wall_ms"].as_f64().unwrap() / 1000.0)
    };
    // The world model's answers have a row only where a run has some.
    assert_eq!(
        screen.contains("◆ wm answered"),
        answered > 0,
        "compare of {}:\n{screen}",
        path.display()
    );
    let answered_row = answered.to_string();
    let rows = [
        ("tool calls", &m["tool_calls"].to_string()),
        ("◆ wm answered", &answered_row),
        ("success", &success),
        ("fidelity", &fidelity),
        ("w2r", &w2r),
        ("tokens", &tokens),
        ("time s", &wall),
    ];
    for (row, want) in rows
        .into_iter()
        .filter(|(row, _)| answered > 0 || *row != "◆ wm answered")
    {
        let line = screen
            .lines()
            .map(|l| l.trim_start_matches(['"', '│', ' ']))
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("compare of {} has no {row}:\n{screen}", path.display()));
        let cells: Vec<&str> = line[row.len()..]
            .split("  ")
            .map(|c| c.trim_matches(['│', '"', ' ']))
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            &cells[..2],
            [want.as_str(), want.as_str()],
            "compare's {row} of {}:\n{screen}",
            path.display()
        );
    }
    // The about view: the ending report gives, the header's servers and tools, and each
    // search's accounting as its `search_finished` line holds it.
    let mut app = common::run_app(Run::open(path).unwrap(), (220, 300));
    app.update(Action::Do(Command::About));
    let screen = render(&mut app);
    let ending = m["ending"]
        .as_str()
        .unwrap_or("not recorded (an older file)");
    if finished {
        assert!(
            screen.contains(&format!("  ending: {ending} ")),
            "about {}: ending {ending}\n{screen}",
            path.display()
        );
    } else {
        // No ending is made up for a run that never recorded one.
        assert!(!screen.contains("how it ended"), "{screen}");
        assert!(screen.contains("run did not finish"), "{screen}");
    }
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let header = &lines[0];
    for (heading, list) in [("servers", "servers"), ("tools", "tools")] {
        let n = header[list].as_array().map_or(0, Vec::len);
        // What an imported run's source never listed is unknown, never "(0)".
        let unlisted = header["source"].is_object()
            && match list {
                "servers" => n == 0,
                _ => header["source"]["unrecorded"]
                    .as_array()
                    .is_some_and(|u| u.iter().any(|x| x == "tools")),
            };
        let said = if unlisted {
            format!("{heading} (—: the source listed none)")
        } else {
            format!("{heading} ({n})")
        };
        assert!(
            screen.contains(&said),
            "about {}: {said}\n{screen}",
            path.display()
        );
    }
    for search in lines.iter().filter(|e| e["kind"] == "search_finished") {
        let said = format!(
            "{} iterations: {} expanded, {} revisited",
            search["iterations"], search["expanded"], search["revisited"]
        );
        assert!(
            screen.contains(&said),
            "about {}: {said}\n{screen}",
            path.display()
        );
        assert!(screen.contains(&format!("stopped: {}", search["stopped"].as_str().unwrap())));
    }
}

/// The metrics pane's time line as report's JSON metrics `m` make it: wall time, each phase
/// that took any, then the time spent answering servers.
fn time_line_of(m: &Value) -> String {
    if m["times_unrecorded"] == true {
        return "time      — (the source recorded no times)".to_string();
    }
    let secs = |ms: u64| format!("{:.1}s", ms as f64 / 1000.0);
    let mut parts = vec![secs(m["wall_ms"].as_u64().unwrap())];
    for (name, ms) in ["plan", "execute", "answer", "judge"]
        .iter()
        .zip(m["phase_ms"].as_array().unwrap())
    {
        let ms = ms.as_u64().unwrap();
        if ms > 0 {
            parts.push(format!("{name} {}", secs(ms)));
        }
    }
    let waiting = m["waiting_ms"].as_u64().unwrap();
    if waiting > 0 {
        parts.push(format!("answering {}", secs(waiting)));
    }
    format!("time      {}", parts.join("  "))
}

#[test]
fn time_spent_answering_a_server_is_shown_apart_from_the_phases() {
    use cosmos_trajectory::event::{Event, Phase};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("asked.jsonl");
    let header = common::header("asked", AgentKind::React, None);
    let mut run = Run::new(path.clone(), header);
    let asked = EventBody::Elicitation {
        step: 1,
        tool: "flaky:ask".into(),
        message: "Which city?".into(),
        requested: Box::new(serde_json::json!({"type": "object"})),
        action: "accept".into(),
        content: Some(Box::new(serde_json::json!({"city": "Paris"}))),
        reason: "answered in the explorer".into(),
        waited_ms: Some(4_000),
    };
    for (t_ms, body) in [
        (0, EventBody::Phase { phase: Phase::Plan }),
        (5_000, asked),
        (5_100, called(1, "accepted: Paris", false)),
        (
            6_000,
            EventBody::Phase {
                phase: Phase::Answer,
            },
        ),
        (
            6_500,
            EventBody::Answer {
                text: "Paris".into(),
            },
        ),
    ] {
        let seq = run.len() as u64 + 1;
        run.push(Event { seq, t_ms, body });
    }
    common::write_run(&run, &path);
    let reported = common::reported_per_run(dir.path());
    let m = &reported[0].1["metrics"];
    // The file's own record: planning took 6 s of which 4 s was a person answering.
    assert_eq!(m["waiting_ms"], 4_000, "{m}");
    assert_eq!(m["phase_ms"][0], 2_000, "{m}");
    let mut app = common::run_app(Run::open(&path).unwrap(), (160, 50));
    let screen = render(&mut app);
    assert!(
        screen.contains("time      6.5s  plan 2.0s  answer 0.5s  answering 4.0s"),
        "{screen}"
    );
    assert!(screen.contains(&time_line_of(m)), "{screen}");
}

#[test]
fn a_live_run_with_nothing_yet_is_not_said_to_have_nothing() {
    // The run has started (no run_finished yet): nothing is in the tree, but more may come.
    let run = common::run_of(
        "live.jsonl",
        common::header("live", AgentKind::React, None),
        vec![EventBody::Phase {
            phase: cosmos_trajectory::event::Phase::Plan,
        }],
    );
    let mut app = common::run_app(run, (120, 30));
    let screen = render(&mut app);
    assert!(
        screen.contains("no search node or real call yet"),
        "{screen}"
    );
    assert!(!screen.contains("this run has no search node"), "{screen}");
}

#[test]
fn runs_that_cannot_be_read_for_compare_say_why_and_open_nothing() {
    use cosmos_app::tui::Browser;
    use cosmos_app::tui::Work;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    let other = dir.path().join("b.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    common::write_run(&common::plan_fails_run(), &other);
    let browser = Browser::new(
        vec![dir.path().to_path_buf()],
        vec![
            cosmos_trajectory::listing::RunSummary::read(&path),
            cosmos_trajectory::listing::RunSummary::read(&other),
        ],
        29,
    );
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (120, 30));
    // The same work the browser's `c` starts, for a run and a file gone since it was listed.
    let gone = dir.path().join("gone.jsonl");
    for action in cosmos_app::tui::perform(1, Work::Compare(vec![path.clone(), gone.clone()])) {
        app.update(action);
    }
    // Nothing was asked for under that id: the answer is dropped, nothing opens.
    assert!(app.top_is::<Browser>());
    // Asked for through the app, the answer says why.
    app.update(Action::Do(Command::Mark));
    app.update(Action::Do(Command::Mark));
    std::fs::remove_file(&path).unwrap();
    app.update(Action::Do(Command::Compare));
    let work = app.take_work();
    assert!(
        matches!(work.as_slice(), [(_, Work::Compare(_))]),
        "{work:?}"
    );
    for (id, work) in work {
        for action in cosmos_app::tui::perform(id, work) {
            app.update(action);
        }
    }
    assert!(app.top_is::<Browser>());
    let said = app.message().unwrap_or_default().to_string();
    assert!(said.starts_with("cannot compare: "), "{said}");
}

/// The sweep matrix over the sample sweep's files, as `cosmos sweep` shows it before running
/// anything: every cell's label and detail line hold report's figures for its run.
#[test]
fn the_sweep_view_shows_reports_figures_for_every_sample_sweep_cell() {
    use cosmos_app::tui::{GridCell, SweepView};
    use cosmos_engine::metrics::figure;
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/sweep");
    let reported: HashMap<PathBuf, Value> = common::reported_per_run(&folder)
        .into_iter()
        .map(|(p, r)| (p.canonicalize().unwrap(), r))
        .collect();
    assert_eq!(reported.len(), 6);
    let mut cells: Vec<GridCell> = reported
        .keys()
        .map(|path| {
            let name = path.file_stem().unwrap().to_str().unwrap();
            let (id, rest) = name.split_once('_').unwrap();
            let task = Run::open(path).unwrap().header.task.id;
            let config = rest[task.len() + 1..].trim_end_matches("_r1").to_string();
            GridCell {
                id: id.into(),
                task,
                config,
                repeat: 1,
                path: path.clone(),
                state: cosmos_app::cli::finished_cell(path),
            }
        })
        .collect();
    cells.sort_by(|a, b| (&a.task, &a.config).cmp(&(&b.task, &b.config)));
    let size = (220, 20);
    let view = SweepView::new(
        "sample_runs/sweep.toml".into(),
        cells,
        None,
        Rect::new(0, 0, size.0, size.1 - 1),
    );
    let mut app = App::new(view, Keymap::default(), Theme::new(true), size);
    let mut seen = 0;
    for row in 0..2 {
        for column in 0..3 {
            app.update(Action::Do(Command::Top));
            for _ in 0..row {
                app.update(Action::Do(Command::Down));
            }
            for _ in 0..3 {
                app.update(Action::Do(Command::StepBack));
            }
            for _ in 0..column {
                app.update(Action::Do(Command::StepForward));
            }
            let screen = render(&mut app);
            let selected = app.find::<SweepView>().unwrap().selected().unwrap();
            let r = &reported[&selected.path];
            let m = &r["metrics"];
            let calls = m["tool_calls"].as_u64().unwrap();
            let errors = r["tool_errors"].as_u64().unwrap();
            let llm_calls: u64 = m["llm"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u["calls"].as_u64().unwrap())
                .sum();
            let mut words = format!("{calls} real calls");
            if errors > 0 {
                words.push_str(&format!(", {errors} failed"));
            }
            let fidelity = m["fidelity"]["score"].as_f64();
            if let Some(f) = fidelity {
                words.push_str(&format!(" · fidelity {}", figure::fraction(f, 2)));
            }
            words.push_str(&format!(
                " · {llm_calls} LLM calls · {} tokens · ",
                r["tokens"]
            ));
            let detail = screen
                .lines()
                .find(|l| l.contains(&format!("· cell {}", selected.id)))
                .unwrap_or_else(|| panic!("no detail line:\n{screen}"));
            assert!(
                detail.contains(&words),
                "{}: {words:?}\n{screen}",
                selected.path.display()
            );
            // The cell itself: its calls and fidelity as report has them.
            let noun = if calls == 1 { "call" } else { "calls" };
            let row_line = screen
                .lines()
                .find(|l| {
                    l.trim_start_matches('"')
                        .starts_with(&format!("│{}", selected.task))
                })
                .unwrap_or_else(|| panic!("no row for {}:\n{screen}", selected.task));
            assert!(
                row_line.contains(&format!("{calls} {noun}")),
                "{row_line}\n{screen}"
            );
            if let Some(f) = fidelity {
                assert!(
                    row_line.contains(&format!("fid {}", figure::fraction(f, 2))),
                    "{row_line}\n{screen}"
                );
            }
            // The totals line counts the cells as they are marked.
            let clean = reported
                .values()
                .filter(|r| {
                    let m = &r["metrics"];
                    m["status"] == "completed"
                        && r["tool_errors"] == 0
                        && m["rejected_decisions"] == 0
                        && m["ending"] == "planner_finished"
                })
                .count();
            let short = reported.len() - clean;
            let counts = if short > 0 {
                format!("{clean} completed · {short} completed with marks · ")
            } else {
                format!("{clean} completed · ")
            };
            assert!(screen.contains(&counts), "{counts:?}\n{screen}");
            seen += 1;
        }
    }
    assert_eq!(seen, 6);
}

/// A search of `iterations` that stopped for `stop`, and the run's end.
fn search_run(name: &str, stop: cosmos_trajectory::event::SearchStop) -> Run {
    use cosmos_trajectory::event::{Ending, Phase, RunStatus};
    let (status, ending) = match stop {
        cosmos_trajectory::event::SearchStop::Interrupted => {
            (RunStatus::Interrupted, Ending::Interrupted)
        }
        _ => (RunStatus::Completed, Ending::SearchExhausted),
    };
    common::run_of(
        &format!("runs/{name}.jsonl"),
        common::header(name, AgentKind::Spiral, Some("memory")),
        vec![
            EventBody::Phase { phase: Phase::Plan },
            EventBody::NodeAdded {
                node: 0,
                parent: None,
                depth: 0,
                action: None,
                prior: None,
            },
            EventBody::SearchFinished {
                root: 0,
                iterations: 7,
                expanded: 3,
                revisited: 2,
                widened: 1,
                retried: 0,
                fruitless: 1,
                stopped: stop,
                detail: None,
            },
            EventBody::RunFinished {
                status,
                error: None,
                ending: Some(ending),
                totals: Default::default(),
                end_digest: Default::default(),
                state_match: Default::default(),
            },
        ],
    )
}

/// The same checks as for the sample runs, over a generated family of the runs that went
/// wrong in other ways: a failed plan, a revised plan, a crashed search, an interrupted and an
/// exhausted search, a fork, a proxy session and a file with a torn line.
#[test]
fn browser_run_view_compare_and_about_show_reports_figures_for_generated_runs() {
    use cosmos_trajectory::event::{Ending, ForkOf, RunStatus, SearchStop};
    let dir = tempfile::tempdir().unwrap();
    let mut runs = vec![
        ("plan-fails", common::plan_fails_run()),
        ("revised", common::revised_run()),
        ("crashed", common::crashed_run()),
        (
            "interrupted",
            search_run("interrupted", SearchStop::Interrupted),
        ),
        ("exhausted", search_run("exhausted", SearchStop::Exhausted)),
    ];
    // A fork at step 2 of the failed plan: its first call replayed from the original.
    let mut fork = common::plan_fails_run();
    fork.header.fork_of = Some(ForkOf {
        run_id: "time_mcp_001-plan_exec".into(),
        file: "runs/plan-fails.jsonl".into(),
        step: 2,
    });
    let bodies: Vec<EventBody> = fork
        .all_events()
        .into_iter()
        .map(|e| match e.body {
            EventBody::ToolCalled {
                step: 1,
                tool,
                server,
                arguments,
                result,
                latency_ms,
                node,
                error,
                ..
            } => EventBody::ToolCalled {
                step: 1,
                tool,
                server,
                arguments,
                result,
                latency_ms,
                node,
                error,
                origin: Some(Box::new(Origin {
                    run: "runs/plan-fails.jsonl".into(),
                    seq: 9,
                })),
                state_change: None,
            },
            body => body,
        })
        .collect();
    runs.push((
        "fork",
        common::run_of("runs/fork.jsonl", fork.header.clone(), bodies),
    ));
    // A proxy session: the client's calls, ended by the client.
    runs.push((
        "proxy",
        common::run_of(
            "runs/proxy.jsonl",
            common::header("proxy", AgentKind::External, None),
            vec![
                called(1, "12:00", false),
                called(2, "no such zone", true),
                EventBody::RunFinished {
                    status: RunStatus::Completed,
                    error: None,
                    ending: Some(Ending::ClientClosed),
                    totals: Default::default(),
                    end_digest: Default::default(),
                    state_match: Default::default(),
                },
            ],
        ),
    ));
    for (name, run) in &runs {
        common::write_run(run, &dir.path().join(format!("{name}.jsonl")));
    }
    // A torn line in the middle of the failed plan's copy.
    let whole = std::fs::read_to_string(dir.path().join("plan-fails.jsonl")).unwrap();
    let mut lines: Vec<String> = whole.lines().map(String::from).collect();
    lines.insert(4, "{\"seq\":4,\"t_ms\":40,\"kind\":\"tool_ca".into());
    // A run of its own (a copy with the same run_id is the same run, counted once).
    lines[0] = lines[0].replacen("\"run_id\":\"", "\"run_id\":\"torn-", 1);
    std::fs::write(dir.path().join("torn.jsonl"), lines.join("\n") + "\n").unwrap();
    let reported = common::reported_per_run(dir.path());
    assert_eq!(reported.len(), runs.len() + 1);
    for (path, r) in &reported {
        shows_reports_figures(path, r);
    }
}

/// `cosmos wm-eval` of the sample runs with `memory`: every simulation it writes carries the
/// world model's confidence, its JSON has the calibration, and the view's calibration overlay
/// (`a`) shows that JSON's figures, read from the file.
#[test]
fn the_calibration_overlay_shows_wm_evals_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let out = dir.path().join("out");
    let doc: Value = serde_json::from_str(&cosmos(&[
        "wm-eval",
        samples.to_str().unwrap(),
        "--world-model",
        "memory",
        "--format",
        "json",
        "--out",
        out.to_str().unwrap(),
    ]))
    .unwrap();
    let c = &doc["world_models"][0]["calibration"];
    for field in ["ece", "brier", "auroc"] {
        assert!(c[field].is_number(), "{field}: {c}");
    }
    assert!(!c["selective"].as_array().unwrap().is_empty(), "{c}");
    let file = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&file).unwrap();
    let simulations: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "call_simulated")
        .collect();
    assert!(!simulations.is_empty());
    for s in &simulations {
        assert!(s["confidence"].is_number(), "{s}");
        assert_eq!(s["confidence_source"], "recall", "{s}");
    }
    assert_eq!(c["n"], simulations.len(), "{c}");
    let mut app = opened(Run::open(&file).unwrap(), (200, 120));
    app.update(Action::Do(Command::About));
    let screen = render(&mut app);
    let fraction = |v: &Value| cosmos_engine::metrics::figure::fraction(v.as_f64().unwrap(), 2);
    let figures = format!(
        "ECE {} · Brier {} · AUROC {} · good: fidelity at least 0.90 ({} of {})",
        fraction(&c["ece"]),
        fraction(&c["brier"]),
        fraction(&c["auroc"]),
        c["good"],
        c["n"]
    );
    assert!(screen.contains(&figures), "{figures}\n{screen}");
    let confidences: Vec<f64> = simulations
        .iter()
        .map(|s| s["confidence"].as_f64().unwrap())
        .collect();
    for point in c["selective"].as_array().unwrap() {
        // The threshold as written trusts exactly the row's count.
        let shown = point["threshold_shown"].as_str().unwrap();
        let at: f64 = shown.parse().unwrap();
        assert_eq!(
            confidences.iter().filter(|&&c| c >= at).count() as u64,
            point["n"].as_u64().unwrap(),
            "≥ {shown}: {point}"
        );
        let line = format!(
            "≥ {shown}  coverage {} ({})  fidelity {}",
            cosmos_engine::metrics::figure::percent(point["coverage"].as_f64().unwrap(), 0),
            point["n"],
            fraction(&point["fidelity"]["mean"])
        );
        assert!(screen.contains(&line), "{line}\n{screen}");
    }
    for bin in c["reliability"].as_array().unwrap() {
        let n = bin["n"].as_u64().unwrap();
        if n == 0 {
            continue;
        }
        let head = format!(
            "{:.1}–{:.1}  n {n:>4}  c ",
            bin["from"].as_f64().unwrap(),
            bin["to"].as_f64().unwrap()
        );
        let line = screen
            .lines()
            .find(|l| l.contains(&head))
            .unwrap_or_else(|| panic!("{head}\n{screen}"));
        for (mark, field) in [("c", "confidence"), ("f", "fidelity")] {
            let value = fraction(&bin[field]);
            assert!(
                line.split(&format!(" {mark} "))
                    .nth(1)
                    .is_some_and(|rest| rest.split_whitespace().nth(1) == Some(value.as_str())),
                "{field} {value}: {line}"
            );
        }
    }
}

/// A confidence outside [0, 1] is none, as the format says, wherever it is read: `validate`
/// warns of each line, and the calibration overlay draws, counting none of them as given.
#[test]
fn confidences_outside_zero_to_one_are_none_and_validate_warns() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let source =
        samples.join("20261204T010335.776Z_wm-eval_memory+qwen-1-5b+qwen-1-5b-logprobs.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let mut planted = Vec::new();
    let mut lines = Vec::new();
    for line in std::fs::read_to_string(&source).unwrap().lines() {
        let mut event: Value = serde_json::from_str(line).unwrap();
        let bad = ["1e308", "2", "-1"];
        if event["kind"] == "call_simulated"
            && event["confidence"].is_number()
            && planted.len() < bad.len()
        {
            let value = bad[planted.len()];
            event["confidence"] = serde_json::from_str(value).unwrap();
            planted.push((event["seq"].as_u64().unwrap() + 1, value));
        }
        lines.push(event.to_string());
    }
    assert_eq!(planted.len(), 3);
    let file = dir.path().join("wm-eval.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let checked = cosmos(&["validate", file.to_str().unwrap()]);
    for (line, value) in &planted {
        let value = match *value {
            "2" => "2.0",
            "-1" => "-1.0",
            _ => "1e+308",
        };
        assert!(
            checked.lines().any(
                |l| l.contains(&format!(":{line}: warning: confidence {value}"))
                    && l.contains("read as none")
            ),
            "line {line} ({value}):\n{checked}"
        );
    }
    let given = |run: &Run| -> usize {
        run.events_from(0)
            .filter(|e| {
                matches!(
                    &e.body,
                    EventBody::CallSimulated {
                        prediction: PredictionRecord {
                            confidence: Some(_),
                            ..
                        },
                        ..
                    }
                )
            })
            .count()
    };
    let (before, after) = (Run::open(&source).unwrap(), Run::open(&file).unwrap());
    assert_eq!(given(&after), given(&before) - 3);
    let mut app = opened(after, (200, 120));
    app.update(Action::Do(Command::About));
    let screen = render(&mut app);
    assert!(screen.contains("predictions with a confidence"), "{screen}");
}

/// The sample runs' folder and its wm-eval files.
fn sample_wm_eval_files() -> (PathBuf, Vec<PathBuf>) {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let files = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("_wm-eval_"))
        .collect();
    (samples, files)
}

/// Truth III: every selective row of the calibration overlay, on every sample wm-eval file,
/// names a threshold at which exactly its count of predictions is trusted (a threshold is never
/// rounded up past confidences it would then leave out), and the overlay shows that text.
#[test]
fn every_selective_row_names_a_threshold_that_trusts_exactly_its_count() {
    let (_, files) = sample_wm_eval_files();
    assert!(files.len() >= 2, "{files:?}");
    let mut rows = 0;
    for file in files {
        let run = Run::open(&file).unwrap();
        let board = cosmos_engine::wm_eval::Filed::read(&run).leaderboard();
        let mut confidences: HashMap<String, Vec<f64>> = HashMap::new();
        for event in run.events_from(0) {
            if let EventBody::CallSimulated {
                prediction:
                    PredictionRecord {
                        world_model,
                        confidence: Some(c),
                        ..
                    },
                ..
            } = &event.body
            {
                confidences.entry(world_model.clone()).or_default().push(*c);
            }
        }
        let mut app = opened(run, (200, 200));
        app.update(Action::Do(Command::About));
        let screen = render(&mut app);
        for model in &board.world_models {
            let given = confidences.get(&model.name).cloned().unwrap_or_default();
            for point in &model.calibration.selective {
                let at: f64 = point.threshold_shown.parse().unwrap();
                assert_eq!(
                    given.iter().filter(|&&c| c >= at).count(),
                    point.n,
                    "{}: {} ≥ {}",
                    file.display(),
                    model.name,
                    point.threshold_shown
                );
                let row = format!("≥ {}  coverage", point.threshold_shown);
                assert!(screen.contains(&row), "{row}\n{screen}");
                rows += 1;
            }
        }
    }
    assert!(rows > 10, "{rows} rows");
}

/// Truth III: the browser shows every wm-eval file's row by one rule: a wm-eval file makes no
/// call of its own, so its calls and success read `—` whichever version wrote its totals (the
/// sample files over the same 52 calls read `52 100%` and `0 —`).
#[test]
fn every_wm_eval_row_in_the_browser_reads_the_same_way() {
    use cosmos_app::tui::Browser;
    use cosmos_trajectory::listing::RunSummary;
    let (samples, files) = sample_wm_eval_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let listed: Vec<RunSummary> = files.iter().map(|f| RunSummary::read(f)).collect();
    let size = (200, 20);
    let browser = Browser::new(vec![samples.clone()], listed, size.1 - 1);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), size);
    let screen = render(&mut app);
    let header = screen
        .lines()
        .find(|l| l.contains("calls") && l.contains("success"))
        .unwrap_or_else(|| panic!("{screen}"));
    // By columns, not bytes: the rows hold `│`, `★` and `…`.
    let at = header.chars().collect::<String>()[..header.find("calls").unwrap()]
        .chars()
        .count();
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains("wm-eval")).collect();
    assert_eq!(rows.len(), 2, "{screen}");
    for row in rows {
        let from: String = row.chars().skip(at).collect();
        let cells: Vec<&str> = from.split_whitespace().take(2).collect();
        assert_eq!(cells, ["—", "—"], "{row}\n{screen}");
    }
}

/// Every node of every sample run that was called for real while planning (`node_grounded`)
/// shows that real result beside its prediction, never "not executed".
#[test]
fn a_node_called_while_planning_shows_its_real_result_beside_the_prediction() {
    use cosmos_app::tui::RunView;
    use cosmos_app::tui::TreeItem;
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let mut checked = 0;
    for path in std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
    {
        let run = Run::open(&path).unwrap();
        // (A grounded node the plan then executed shows its executed call instead.)
        let executed: Vec<u64> = (0..run.len())
            .filter_map(|i| match &run.event(i).body {
                EventBody::ToolCalled { node, .. } => *node,
                _ => None,
            })
            .collect();
        // Each node's prediction, for its fidelity to the grounded result.
        let predicted: std::collections::HashMap<u64, cosmos_trajectory::event::Observation> = (0
            ..run.len())
            .filter_map(|i| match run.event(i).into_owned().body {
                EventBody::NodeSimulated {
                    node, prediction, ..
                } => Some((node, prediction.observation)),
                _ => None,
            })
            .collect();
        // Each with the prediction's fidelity to the grounded result, as the inspector says it.
        let grounded: Vec<(u32, String, Option<f64>)> = (0..run.len())
            .filter_map(|i| match &run.event(i).body {
                EventBody::NodeGrounded {
                    node, observation, ..
                } if !executed.contains(node) => Some((
                    run.slot_of(*node)?,
                    observation.text.clone(),
                    predicted
                        .get(node)
                        .map(|p| cosmos_engine::metrics::fidelity::compare(p, observation).score),
                )),
                _ => None,
            })
            .collect();
        if grounded.is_empty() {
            continue;
        }
        let last = run.len() - 1;
        let mut app = opened(run, (200, 50));
        app.update(Action::JumpTo(last));
        app.update(Action::Do(Command::ExpandAll));
        for (slot, real, fidelity) in grounded {
            for _ in 0..60 {
                app.update(Action::Do(Command::Up));
            }
            for _ in 0..60 {
                let view = app.top_as::<RunView>().unwrap();
                if view.tree().selected_item() == Some(TreeItem::Node(slot)) {
                    break;
                }
                app.update(Action::Do(Command::Down));
            }
            let view = app.top_as::<RunView>().unwrap();
            assert_eq!(view.tree().selected_item(), Some(TreeItem::Node(slot)));
            let screen = render(&mut app);
            assert!(
                screen.contains("real, called while planning ⊕")
                    || screen.contains("real: failed ✗"),
                "{}: node slot {slot}:\n{screen}",
                path.display()
            );
            assert!(!screen.contains("not executed at this point"), "{screen}");
            // Truth IV: the observation pane gives the figure the inspector gives the grounded
            // call (the node's prediction against its real result), never "—" beside it.
            if let Some(f) = fidelity {
                assert!(
                    screen.contains(&format!(
                        "fidelity {f:.2} to the result called while planning"
                    )),
                    "{}: node slot {slot}: fidelity {f:.2}:\n{screen}",
                    path.display()
                );
            }
            let first_line = real
                .lines()
                .find(|l| l.trim().len() > 3)
                .unwrap_or_default()
                .trim()
                .to_string();
            assert!(
                screen.contains(&first_line),
                "{first_line:?} not shown:\n{screen}"
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "no sample run has a grounded node");
}

/// The calibration overlay's per-tool routing says for every world model and tool of every
/// sample wm-eval file what `cosmos wm-eval --target-error 0.1 --routing-out` writes: the same
/// threshold, or never trusted.
#[test]
fn the_overlays_per_tool_routing_is_the_routing_files() {
    use cosmos_engine::metrics::routing_file::RoutingFile;
    let (_, files) = sample_wm_eval_files();
    let mut checked = 0;
    for file in files {
        let run = Run::open(&file).unwrap();
        let names = cosmos_engine::wm_eval::Filed::read(&run).names;
        let mut app = opened(run, (220, 400));
        app.update(Action::Do(Command::About));
        let screen = render(&mut app);
        let lines: Vec<&str> = screen.lines().collect();
        // Each world model's section: from its heading to the next one.
        let heading = |n: &str| {
            lines.iter().position(|l| {
                l.contains(&format!("{n} · ")) && l.contains("predictions with a confidence")
            })
        };
        let starts: Vec<usize> = names.iter().filter_map(|n| heading(n)).collect();
        for name in names.clone() {
            let from = heading(&name).unwrap_or_else(|| panic!("no section for {name}"));
            let to = starts
                .iter()
                .copied()
                .filter(|&s| s > from)
                .min()
                .unwrap_or(lines.len());
            let section = &lines[from..to];
            let text = cosmos_engine::wm_eval::routing(&file, &name, 0.1, 0.1, &[])
                .unwrap()
                .text;
            let routing = RoutingFile::parse(&text).unwrap();
            for (tool, threshold) in &routing.thresholds {
                let says = match threshold {
                    Some(x) => format!("trust ≥ {x}:"),
                    None => "never trusted: ".to_string(),
                };
                assert!(
                    section
                        .iter()
                        .any(|l| l.contains(tool.as_str()) && l.contains(&says)),
                    "{}: {name} {tool} should say {says:?}\n{screen}",
                    file.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 10, "{checked} tools checked");
}
