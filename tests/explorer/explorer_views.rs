//! Snapshot tests of every view, at 80x24 and 200x60, drawn with ratatui's TestBackend.
//! Review changes with `cargo insta review` (or accept with INSTA_UPDATE=always).

use crate::common;

use std::path::PathBuf;

use cosmos_app::tui::App;
use cosmos_app::tui::Browser;
use cosmos_app::tui::CallDetail;
use cosmos_app::tui::CompareView;
use cosmos_app::tui::Inspector;
use cosmos_app::tui::RunView;
use cosmos_app::tui::Theme;
use cosmos_app::tui::WmEvalView;
use cosmos_app::tui::open_run;
use cosmos_app::tui::{Action, LiveSource};
use cosmos_app::tui::{Command, Keymap};
use cosmos_trajectory::event::{AgentKind, PredictionRecord};
use cosmos_trajectory::run::Run;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

const SIZES: [(u16, u16); 2] = [(80, 24), (200, 60)];

use common::render;

use common::run_app;

#[test]
fn empty_folder() {
    for size in SIZES {
        let mut app = App::new(
            Browser::new(vec![PathBuf::from("sample_runs")], vec![], size.1 - 1),
            Keymap::default(),
            Theme::new(true),
            size,
        );
        insta::assert_snapshot!(
            format!("empty_folder_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
}

#[test]
fn browser_with_runs_and_group_table() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = common::three_listed(dir.path());
    for size in SIZES {
        let browser = Browser::new(vec![PathBuf::from("runs")], summaries.clone(), size.1 - 1);
        let mut app = App::new(browser, Keymap::default(), Theme::new(true), size);
        insta::assert_snapshot!(format!("browser_{}x{}", size.0, size.1), render(&mut app));
        app.update(Action::Do(Command::ToggleGroups));
        for (id, work) in app.take_work() {
            for a in cosmos_app::tui::perform(id, work) {
                app.update(a);
            }
        }
        insta::assert_snapshot!(
            format!("browser_groups_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
}

#[test]
fn the_browser_shows_every_status_marker_whole_and_tells_a_sweeps_runs_apart() {
    use cosmos_trajectory::event::{AgentKind, DecisionProblem, Ending, EventBody, RunStatus};
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sweep")).unwrap();
    // A run with every marker at once, and a sweep's two configurations on the same task.
    let mut written = Vec::new();
    let mut write = |name: &str, label: Option<&str>, ending: Ending, status: RunStatus| {
        let mut header = common::header("unit_converter_001", AgentKind::React, None);
        header.label = label.map(str::to_string);
        let mut bodies = common::plan_fails_bodies("llm", "Mars/Olympus");
        bodies.retain(|b| !matches!(b, EventBody::RunFinished { .. }));
        bodies.push(EventBody::DecisionRejected {
            problem: DecisionProblem::NoTool,
            detail: "no tool".into(),
            reply: serde_json::json!({"action": "call"}),
        });
        bodies.push(EventBody::RunFinished {
            status,
            error: None,
            ending: Some(ending),
            totals: Default::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        });
        let run = common::run_of(name, header, bodies);
        let path = dir.path().join(name);
        common::write_run(&run, &path);
        written.push(path);
    };
    write("a.jsonl", None, Ending::StepLimit, RunStatus::Completed);
    write(
        "sweep/b.jsonl",
        Some("react-4-steps"),
        Ending::NoCallPlanned,
        RunStatus::Failed,
    );
    write(
        "sweep/c.jsonl",
        Some("plan-exec-memory"),
        Ending::Interrupted,
        RunStatus::Interrupted,
    );
    let runs = cosmos_trajectory::listing::list_runs(&[dir.path().to_path_buf()]).unwrap();
    for size in [(200, 50), (80, 24)] {
        let browser = Browser::new(vec![dir.path().to_path_buf()], runs.clone(), size.1 - 1);
        let mut app = App::new(browser, Keymap::default(), Theme::new(true), size);
        let screen = render(&mut app);
        for summary in &runs {
            let outcome = summary.outcome();
            assert!(outcome.contains('✗') && outcome.contains('?'), "{outcome}");
            assert!(
                screen.contains(&outcome),
                "{outcome} whole at {size:?}:\n{screen}"
            );
        }
        // Whole where there is room; told apart where there is not.
        for label in ["react-4-steps", "plan-exec-memory"] {
            let shown = if size.0 >= 200 { label } else { &label[..7] };
            assert!(screen.contains(shown), "{shown} at {size:?}:\n{screen}");
        }
    }
}

#[test]
fn the_group_table_scrolls_by_column_and_keeps_its_label_column() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = common::three_listed(dir.path());
    let browser = Browser::new(vec![dir.path().to_path_buf()], summaries, 23);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (80, 24));
    app.update(Action::Do(Command::ToggleGroups));
    for (id, work) in app.take_work() {
        for a in cosmos_app::tui::perform(id, work) {
            app.update(a);
        }
    }
    let header_of = |screen: &str| {
        screen
            .lines()
            .find(|l| l.contains("│config "))
            .map(|l| {
                l.trim_matches(|c| c == '"' || c == '│')
                    .split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let before = header_of(&render(&mut app));
    assert_eq!(before[..2], ["config", "runs"], "{before:?}");
    app.update(Action::Do(Command::ScrollRight));
    let after = header_of(&render(&mut app));
    // One whole column further: the label stays, `runs` is gone, the next column follows.
    assert_eq!(after[0], "config", "{after:?}");
    assert_eq!(after[1], before[2], "{before:?} -> {after:?}");
    let rows = render(&mut app);
    assert!(
        rows.lines().any(|l| l.contains("react")),
        "the rows keep their labels:\n{rows}"
    );
    app.update(Action::Do(Command::ScrollLeft));
    assert_eq!(header_of(&render(&mut app)), before);
}

#[test]
fn crashed_run() {
    for size in SIZES {
        insta::assert_snapshot!(
            format!("crashed_run_{}x{}", size.0, size.1),
            render(&mut run_app(common::crashed_run(), size))
        );
    }
}

#[test]
fn what_just_happened_leads_the_status_line_so_a_narrow_screen_keeps_it() {
    let mut app = run_app(common::plan_fails_run(), (80, 24));
    app.say_problems(3);
    let screen = render(&mut app);
    let status = screen.lines().last().unwrap();
    assert!(
        status.contains("3 problem(s) reading this run"),
        "the message is on the 80-column status line: {status}"
    );
}

#[test]
fn plan_fails_at_step_two() {
    for size in SIZES {
        let mut app = run_app(common::plan_fails_run(), size);
        // Jump to the failure, which selects the failing node and shows simulated beside real.
        app.update(Action::Do(Command::Top));
        app.update(Action::Do(Command::NextFailure));
        insta::assert_snapshot!(
            format!("plan_fails_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
    // What the snapshot's text cannot show: the styles, read from the buffer's cells.
    let mut app = run_app(common::plan_fails_run(), (200, 60));
    app.update(Action::Do(Command::Top));
    app.update(Action::Do(Command::NextFailure));
    app.settle();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let theme = Theme::new(true);
    let text = terminal.backend().to_string();
    let row_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} on screen:\n{text}")) as u16
    };
    let cells = |row: u16, from: u16, to: u16| -> String {
        (from..to)
            .map(|x| buffer[(x, row)].symbol().to_string())
            .collect()
    };
    // The selected tree row (node #2, the failing call's) is drawn reversed.
    let selected = row_of("★ #2 ");
    assert!(
        buffer[(3, selected)]
            .style()
            .add_modifier
            .contains(ratatui::style::Modifier::REVERSED),
        "the selection is marked"
    );
    // The real side's error differs from the simulation: marked as a difference.
    let diff_row = row_of("Error executing");
    let line = cells(diff_row, 100, 200);
    let x = 100
        + line
            .find("Error")
            .map(|b| line[..b].chars().count())
            .unwrap() as u16;
    assert_eq!(
        buffer[(x, diff_row)].style().fg,
        theme.diff().fg,
        "a differing line is marked"
    );
    // The failure in the timeline: its sign, in the failure colour.
    let failed = text
        .lines()
        .position(|l| l.contains("tool_called") && l.contains('✗'))
        .expect("the failed call in the timeline") as u16;
    let line = cells(failed, 0, 100);
    let x = line.find('✗').map(|b| line[..b].chars().count()).unwrap() as u16;
    assert_eq!(buffer[(x, failed)].style().fg, theme.error().fg);
}

#[test]
fn revised_plan_hangs_under_the_failed_step() {
    for size in SIZES {
        let mut app = run_app(common::revised_run(), size);
        app.update(Action::Do(Command::ExpandAll));
        insta::assert_snapshot!(
            format!("revised_plan_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
    // The revised plan's finish node: its planned answer beside the answer the run gave.
    let mut app = run_app(common::revised_run(), (120, 30));
    app.update(Action::Do(Command::ExpandAll));
    for _ in 0..5 {
        app.update(Action::Do(Command::Down));
    }
    insta::assert_snapshot!("revised_plan_finish_node", render(&mut app));
    {}
}

#[test]
fn inspector_shows_an_event_in_full() {
    for size in SIZES {
        let mut app = run_app(common::plan_fails_run(), size);
        app.update(Action::Do(Command::Top));
        app.update(Action::Do(Command::NextFailure));
        // On the timeline, i shows the event at the cursor.
        app.update(Action::Do(Command::FocusNext));
        app.update(Action::Do(Command::Inspect));
        insta::assert_snapshot!(format!("inspector_{}x{}", size.0, size.1), render(&mut app));
    }
}

#[test]
fn a_recorded_llm_call_reads_as_a_conversation() {
    use cosmos_trajectory::event::{Event, EventBody, Role};
    let messages = serde_json::json!([
        {"role": "system", "content": "You are an agent that solves the user's request."},
        {"role": "user", "content": "Request: what time is it in Tokyo?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "Time_MCP_get_current_time", "arguments": "{\"timezone\":\"Asia/Tokyo\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"datetime\": \"2026-12-01T18:00:00+09:00\"}"},
        {"role": "assistant", "content": "It is 18:00 in Tokyo."}
    ]);
    let event = Event {
        seq: 3,
        t_ms: 1200,
        body: EventBody::LlmCall {
            role: Role::Planner,
            model: "m".into(),
            prompt_tokens: 120,
            completion_tokens: 9,
            tokens_estimated: false,
            latency_ms: 300,
            error: None,
            messages: Some(Box::new(messages)),
        },
    };
    for size in SIZES {
        let inspector = Inspector::event(&event, None, size);
        let text = inspector.lines().join("\n");
        for expected in [
            "conversation (5 messages)",
            "── system",
            "── user",
            "── assistant",
            "→ calls Time_MCP_get_current_time (call_1)",
            "\"timezone\": \"Asia/Tokyo\"",
            "── tool · result of call_1",
            "It is 18:00 in Tokyo.",
            "the call",
            "prompt_tokens: 120",
        ] {
            assert!(text.contains(expected), "{expected} missing:\n{text}");
        }
        let mut app = App::new(inspector, Keymap::default(), Theme::new(true), size);
        insta::assert_snapshot!(
            format!("conversation_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
}

#[test]
fn tree_of_a_hundred_thousand_nodes() {
    let run = common::big_run(100_000);
    assert_eq!(run.nodes().len(), 100_000);
    let mut app = run_app(run, (200, 60));
    app.update(Action::Do(Command::ExpandAll));
    insta::assert_snapshot!("big_tree_200x60", render(&mut app));
    app.update(Action::Resize(80, 24));
    insta::assert_snapshot!("big_tree_80x24", render(&mut app));
}

#[test]
fn compare_three_runs() {
    let runs = common::three_runs();
    for size in SIZES {
        let mut app = App::new(
            CompareView::new(&runs, size),
            Keymap::default(),
            Theme::new(true),
            size,
        );
        insta::assert_snapshot!(format!("compare_{}x{}", size.0, size.1), render(&mut app));
    }
}

#[test]
fn at_80x24_every_compare_metric_row_is_reachable_by_key_and_wheel() {
    use crossterm::event::{KeyModifiers, MouseEvent, MouseEventKind};
    let runs = common::three_runs();
    let size = (80, 24);
    let mut app = App::new(
        CompareView::new(&runs, size),
        Keymap::default(),
        Theme::new(true),
        size,
    );
    let first = render(&mut app);
    assert!(
        !first.contains("answer "),
        "the table is cut at 80x24: {first}"
    );
    assert!(first.contains("Tab, then ↑/↓"), "{first}");
    // Tab moves the keys to the metrics; ↓ goes through every row, End to the answer.
    app.update(Action::Do(Command::FocusNext));
    let mut seen = first.clone();
    for _ in 0..12 {
        app.update(Action::Do(Command::Down));
        seen.push_str(&render(&mut app));
    }
    for row in [
        "fidelity",
        "tokens",
        "time s",
        "wm tokens",
        "judge overall",
        "answer",
    ] {
        assert!(seen.contains(&format!("│{row} ")), "{row} unreachable");
    }
    app.update(Action::Do(Command::Top));
    app.update(Action::Do(Command::Bottom));
    let last = render(&mut app);
    assert!(last.contains("│answer "), "{last}");
    insta::assert_snapshot!("compare_metrics_scrolled_80x24", last);
    // The wheel over the table scrolls it back up.
    app.update(Action::Do(Command::FocusNext));
    for _ in 0..20 {
        app.update(Action::Mouse(MouseEvent {
            kind: MouseEventKind::ScrollUp,
            column: 20,
            row: 3,
            modifiers: KeyModifiers::NONE,
        }));
    }
    assert_eq!(render(&mut app), first);
}

/// Two SPIRAL runs of one task that differ only in α (and so in their files' names).
fn two_alphas() -> Vec<Run> {
    [1.0, 0.5]
        .into_iter()
        .map(|alpha| {
            let mut header = common::header("time_mcp_001", AgentKind::Spiral, Some("llm"));
            for (k, v) in [
                ("iterations", serde_json::json!(8)),
                ("k", serde_json::json!(3)),
                ("alpha", serde_json::json!(alpha)),
                ("plan_rule", serde_json::json!("best_mean")),
            ] {
                header.agent.settings.insert(k.into(), v);
            }
            header.servers = vec![cosmos_trajectory::event::ServerInfo {
                name: "time".into(),
                transport: "stdio".into(),
                target: Some("python -m mcp_server_time".into()),
                shared: false,
                start_digest: None,
                start_state: None,
                seed_removed: Vec::new(),
                protocol: None,
            }];
            common::run_of(
                &format!("runs/alpha-{alpha}.jsonl"),
                header,
                common::plan_fails_bodies("llm", "US/NewYork"),
            )
        })
        .collect()
}

#[test]
fn the_about_view_tells_the_runs_story_and_compare_names_what_differs() {
    let runs = two_alphas();
    // Compare's headers name exactly the setting that differs.
    let compare = CompareView::new(&runs, (200, 60));
    assert_eq!(
        compare.labels(),
        ["spiral / llm alpha=1.0", "spiral / llm alpha=0.5"]
    );
    for size in SIZES {
        for (run, alpha) in two_alphas().into_iter().zip(["1.0", "0.5"]) {
            let mut app = run_app(run, size);
            app.update(Action::Do(Command::About));
            let screen = render(&mut app);
            assert!(screen.contains("About this run"), "{screen}");
            let Some(about) = app.top_as::<Inspector>() else {
                panic!("the about view");
            };
            let text = about.lines().join("\n");
            for expected in [
                format!("alpha = {alpha}"),
                "k = 3".to_string(),
                "iterations = 8".to_string(),
                "Convert 9:00 Paris time to Tokyo".to_string(),
                "planner: qwen2.5-coder-1.5b".to_string(),
                "time · stdio · python -m mcp_server_time".to_string(),
                "time:convert_time".to_string(),
                "rule: chain".to_string(),
            ] {
                assert!(text.contains(&expected), "{expected} missing:\n{text}");
            }
            if alpha == "0.5" {
                insta::assert_snapshot!(format!("about_{}x{}", size.0, size.1), screen);
            }
        }
    }
}

#[test]
fn help_overlay() {
    let mut app = run_app(common::plan_fails_run(), (80, 24));
    app.update(Action::Do(Command::Help));
    insta::assert_snapshot!("help_80x24", render(&mut app));
    // The keys that do not fit are a scroll away.
    for _ in 0..50 {
        app.update(Action::Do(Command::Down));
    }
    insta::assert_snapshot!("help_80x24_scrolled", render(&mut app));
}

#[test]
fn a_rejected_planner_reply_shows_as_a_failure_in_the_metrics_pane() {
    use cosmos_trajectory::event::{AgentKind, DecisionProblem, EventBody};
    let rejected = EventBody::DecisionRejected {
        problem: DecisionProblem::NoTool,
        detail: "\"action\": \"call\" names no tool".into(),
        reply: serde_json::json!({"action": "call"}),
    };
    let run = common::run_of(
        "runs/rejected.jsonl",
        common::header("time_mcp_001", AgentKind::React, None),
        vec![rejected],
    );
    let app = run_app(run, (80, 24));
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let text = terminal.backend().to_string();
    let row = text
        .lines()
        .position(|l| l.contains("1 malformed planner reply"))
        .unwrap_or_else(|| panic!("no rejected line:\n{text}"));
    let col = text
        .lines()
        .nth(row)
        .unwrap()
        .chars()
        .position(|c| c == '1')
        .unwrap();
    let cell = &buffer[(col as u16, row as u16)];
    assert_eq!(
        cell.style().fg,
        Theme::new(true).error().fg,
        "drawn as a failure"
    );
}

#[test]
fn a_run_that_completed_with_failed_calls_is_marked_as_a_failure_in_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = common::three_listed(dir.path());
    let browser = Browser::new(vec![PathBuf::from("runs")], summaries, 23);
    let app = App::new(browser, Keymap::default(), Theme::new(true), (80, 24));
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let text = terminal.backend().to_string();
    let buffer = terminal.backend().buffer().clone();
    let theme = Theme::new(true);
    let style_of = |needle: &str| {
        let (row, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{text}"));
        let col = line[..line.find(needle).unwrap()].chars().count() - 1;
        buffer[(col as u16, row as u16)].style().fg
    };
    // The ReAct run made 3 good calls; the Plan-Exec runs each had a failed call.
    assert_eq!(style_of("completed   "), theme.good().fg, "a clean run");
    assert_eq!(
        style_of("completed ✗1"),
        theme.error().fg,
        "completed with a failure"
    );
}

#[test]
fn a_failing_run_opens_on_its_first_failed_call() {
    for size in SIZES {
        let view = RunView::opened(
            common::plan_fails_run(),
            Rect::new(0, 0, size.0, size.1 - 1),
        );
        let mut app = App::new(view, Keymap::default(), Theme::new(true), size);
        insta::assert_snapshot!(
            format!("failing_run_opened_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
}

#[test]
fn a_react_run_opens_on_its_failed_step_selected_showing_its_real_error() {
    use cosmos_trajectory::event::{AgentKind, EventBody, Observation};
    let call = |step: u64, target: &str, result: &str, is_error: bool| EventBody::ToolCalled {
        step,
        tool: "time:convert_time".into(),
        server: Some("time".into()),
        arguments: Box::new(serde_json::json!({"target_timezone": target})),
        result: Observation {
            text: result.into(),
            is_error,
            ..Default::default()
        },
        latency_ms: 10,
        node: None,
        error: None,
        origin: None,
        state_change: None,
    };
    let run = || {
        common::run_of(
            "runs/react-fails.jsonl",
            common::header("t", AgentKind::React, None),
            vec![
                call(1, "Asia/Tokyo", "18:00 in Tokyo", false),
                call(2, "Mars/Olympus", "Invalid timezone: Mars/Olympus", true),
                call(3, "Europe/London", "09:00 in London", false),
                common::completed(),
            ],
        )
    };
    for size in SIZES {
        let view = RunView::opened(run(), Rect::new(0, 0, size.0, size.1 - 1));
        let mut app = App::new(view, Keymap::default(), Theme::new(true), size);
        let screen = render(&mut app);
        // The failed step is the selected one, and its real error is what the pane shows.
        assert!(screen.contains("real: failed ✗"), "{screen}");
        assert!(!screen.contains("18:00 in Tokyo"), "{screen}");
        if size.0 >= 120 {
            assert!(
                screen.contains("Invalid timezone: Mars/Olympus"),
                "{screen}"
            );
        }
        assert!(
            screen.contains("opened at the first failed call"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("react_failed_step_{}x{}", size.0, size.1), screen);
    }
}

#[test]
fn at_80_columns_sibling_calls_show_the_arguments_that_tell_them_apart() {
    use cosmos_trajectory::event::{Action, AgentKind, EventBody, Verdict};
    let call = |target: &str| {
        Some(Action::ToolCall {
            tool: "Time MCP:convert_time".into(),
            arguments: serde_json::json!({
                "source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": target
            }),
        })
    };
    let added = |node, action| EventBody::NodeAdded {
        node,
        parent: Some(0),
        depth: 1,
        action,
        prior: None,
    };
    let evaluated = |node, verdict: Verdict, reward| EventBody::NodeEvaluated {
        node,
        verdict,
        base_reward: reward,
        critic_reward: None,
        critic_reason: None,
        reward,
        terminal: verdict != Verdict::Valid,
        horizon: None,
    };
    let bodies = vec![
        EventBody::root(),
        added(1, call("Asia/Tokyo")),
        added(2, call("Europe/London")),
        added(3, call("Mars/Olympus")),
        evaluated(1, Verdict::Valid, 0.1),
        evaluated(2, Verdict::Valid, 0.1),
        evaluated(3, Verdict::Invalid, -1.0),
        EventBody::Backpropagated {
            path: vec![0, 1],
            value: 0.1,
        },
    ];
    let run = common::run_of(
        "runs/siblings.jsonl",
        common::header("t", AgentKind::Spiral, Some("llm")),
        bodies,
    );
    let mut app = run_app(run, (80, 24));
    let screen = render(&mut app);
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains("┃    #")).collect();
    assert_eq!(rows.len(), 3, "{screen}");
    for (row, target) in rows
        .iter()
        .zip(["Asia/Tokyo", "Europe/London", "Mars/Olympus"])
    {
        assert!(row.contains(target), "{row}\n{screen}");
    }
    // The invalid mark is never cut off.
    assert!(rows[2].contains('⊘'), "{}", rows[2]);
    insta::assert_snapshot!("sibling_calls_80x24", screen);
}

#[test]
fn tree_rows_carry_node_ids_and_verdict_marks() {
    use cosmos_trajectory::event::{Action, AgentKind, EventBody, Observation, Verdict};
    let call = |target: &str| Action::ToolCall {
        tool: "time:convert_time".into(),
        arguments: serde_json::json!({"target_timezone": target}),
    };
    let added = |node, action| EventBody::NodeAdded {
        node,
        parent: (node > 0).then_some(0),
        depth: u32::from(node > 0),
        action,
        prior: None,
    };
    let evaluated = |node, verdict, base| EventBody::NodeEvaluated {
        node,
        verdict,
        base_reward: base,
        critic_reward: None,
        critic_reason: None,
        reward: base,
        terminal: true,
        horizon: None,
    };
    let bodies = vec![
        added(0, None),
        added(1, Some(call("Mars/Olympus"))),
        added(2, Some(call("Asia/Tokyo"))),
        EventBody::NodeSimulated {
            node: 1,
            route: None,
            prediction: PredictionRecord {
                world_model: "validator".into(),
                observation: Observation {
                    text: "unknown zone".into(),
                    is_error: true,
                    ..Default::default()
                },
                latency_ms: 0,
                tokens: None,
                confidence: None,
                confidence_source: None,
                members: Vec::new(),
                predicted_state: None,
            },
        },
        evaluated(1, Verdict::Invalid, -1.0),
        evaluated(2, Verdict::NotSimulated, 0.0),
    ];
    let run = common::run_of(
        "runs/marks.jsonl",
        common::header("t", AgentKind::Spiral, Some("llm")),
        bodies,
    );
    let app = run_app(run, (120, 30));
    let mut terminal = Terminal::new(TestBackend::new(120, 30)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let text = terminal.backend().to_string();
    let buffer = terminal.backend().buffer().clone();
    let error = Theme::new(true).error().fg;
    for (id, mark) in [("#1 ", '⊘'), ("#2 ", '∅')] {
        let (row, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(id) && l.contains(mark))
            .unwrap_or_else(|| panic!("no row with {id} and {mark}:\n{text}"));
        let col = line.chars().position(|c| c == mark).unwrap() - 1;
        assert_eq!(
            buffer[(col as u16, row as u16)].style().fg,
            error,
            "{mark} is a failure"
        );
    }
}

/// A search where two finishes tie at 0.90: London's (#4, under #1, which leads at the root)
/// and Tokyo's (#3, under #2, the earlier), the plan given as `plan` and its recorded `choice`.
fn tie_bodies(
    plan: Vec<u64>,
    choice: Option<Box<cosmos_trajectory::event::PlanChoice>>,
) -> Vec<cosmos_trajectory::event::EventBody> {
    use cosmos_trajectory::event::{Action, EventBody, Verdict};
    let call = |target: &str| {
        Some(Action::ToolCall {
            tool: "time:convert_time".into(),
            arguments: serde_json::json!({"target_timezone": target}),
        })
    };
    let finish = Some(Action::Finish { answer: None });
    let added = |node, parent: Option<u64>, depth, action| EventBody::NodeAdded {
        node,
        parent,
        depth,
        action,
        prior: None,
    };
    let evaluated = |node, verdict, reward| EventBody::NodeEvaluated {
        node,
        verdict,
        base_reward: reward,
        critic_reward: None,
        critic_reason: None,
        reward,
        terminal: verdict != Verdict::Valid,
        horizon: None,
    };
    let back = |path: Vec<u64>, value| EventBody::Backpropagated { path, value };
    vec![
        added(0, None, 0, None),
        added(1, Some(0), 1, call("Europe/London")),
        added(2, Some(0), 1, call("Asia/Tokyo")),
        evaluated(1, Verdict::Valid, 0.6),
        evaluated(2, Verdict::Valid, 0.4),
        back(vec![0, 1], 0.6),
        back(vec![0, 2], 0.4),
        added(3, Some(2), 2, finish.clone()),
        evaluated(3, Verdict::Finish, 0.9),
        back(vec![0, 2, 3], 0.9),
        added(4, Some(1), 2, finish),
        evaluated(4, Verdict::Finish, 0.9),
        back(vec![0, 1, 4], 0.9),
        EventBody::SearchFinished {
            root: 0,
            iterations: 4,
            expanded: 3,
            revisited: 1,
            widened: 0,
            retried: 1,
            fruitless: 0,
            stopped: cosmos_trajectory::event::SearchStop::Iterations,
            detail: None,
        },
        EventBody::PlanSelected {
            nodes: plan,
            rule: "best_mean".into(),
            choice,
            risky: Vec::new(),
        },
    ]
}

#[test]
fn the_plans_reason_names_its_rule_value_and_a_tie() {
    use cosmos_trajectory::event::AgentKind;
    // London (#1) leads at the root (Q 0.75 against 0.65), yet the plan runs through Tokyo
    // (#2): Tokyo's finish (#3) ties London's (#4) at 0.90, and the earlier id wins.
    let bodies = tie_bodies(vec![2, 3], None);
    let run = common::run_of(
        "runs/tie.jsonl",
        common::header("t", AgentKind::Spiral, Some("llm")),
        bodies,
    );
    for size in SIZES {
        let mut app = run_app(run_of_same(&run), size);
        let screen = render(&mut app);
        if size.0 >= 120 {
            assert!(
                screen.contains("★ best mean 0.90; ties #4, earlier wins"),
                "{screen}"
            );
            // The search's iteration accounting is at the tree's foot.
            assert!(
                screen.contains(
                    "4 iterations: 3 expanded, 1 revisited, 1 retried · stopped: iterations"
                ),
                "{screen}"
            );
        }
        insta::assert_snapshot!(format!("plan_reason_tie_{}x{}", size.0, size.1), screen);
        // The about view gives the reason whole: every candidate with its mean and visits.
        app.update(cosmos_app::tui::Action::Do(Command::About));
        let Some(about) = app.top_as::<Inspector>() else {
            panic!("the about view");
        };
        let text = about.lines().join("\n");
        for expected in [
            "rule: best_mean · the plan: #2→#3",
            "chosen among 2 finished paths by mean Q, best first:",
            "★ #3 Q=0.900 N=1 finish",
            "= #4 Q=0.900 N=1 finish",
            "ties with the chosen one: the earlier node wins",
            "4 iterations: 3 expanded, 1 revisited, 1 retried · stopped: iterations",
        ] {
            assert!(text.contains(expected), "{expected} missing:\n{text}");
        }
    }
}

/// The tie above, as a file could hold it: the plan ends at the later of two equal finishes.
fn tie_won_by_the_later_node(choice: Option<Box<cosmos_trajectory::event::PlanChoice>>) -> Run {
    use cosmos_trajectory::event::AgentKind;
    common::run_of(
        "runs/later.jsonl",
        common::header("t", AgentKind::Spiral, Some("llm")),
        tie_bodies(vec![1, 4], choice),
    )
}

/// The about view's text and the tree pane's title row of `run`.
fn about_and_title(run: &Run) -> (String, String) {
    let mut app = run_app(run_of_same(run), (200, 60));
    let screen = render(&mut app);
    app.update(cosmos_app::tui::Action::Do(Command::About));
    let Some(about) = app.top_as::<Inspector>() else {
        panic!("the about view");
    };
    let title = screen.lines().next().unwrap_or_default().to_string();
    (about.lines().join("\n"), title)
}

#[test]
fn an_older_plan_that_todays_rule_would_not_choose_is_never_explained_by_todays_rule() {
    // An older file (no recorded choice) whose plan ends at #4, though #3 ties it and is
    // earlier: "the earlier node wins" would contradict the ★.
    let (about, title) = about_and_title(&tie_won_by_the_later_node(None));
    assert!(
        about.contains("today's rule would choose #3, not this plan's end"),
        "{about}"
    );
    assert!(about.contains("★ #4 Q=0.900 N=1 finish"), "{about}");
    assert!(!about.contains("earlier node wins"), "{about}");
    assert!(title.contains("today's rule takes #3"), "{title}");
    assert!(!title.contains("earlier wins"), "{title}");
}

#[test]
fn a_recorded_choice_is_explained_as_recorded() {
    use cosmos_trajectory::event::{PlanChoice, PlanPool, RankedNode};
    // The same tree, with the choice the run recorded: the ranking is the record's, values
    // and all, and nothing is re-derived.
    let choice = PlanChoice {
        pool: PlanPool::Finished,
        pool_size: 2,
        ranked: vec![
            RankedNode {
                node: 4,
                q: 0.9,
                visits: 1,
            },
            RankedNode {
                node: 3,
                q: 0.9,
                visits: 1,
            },
        ],
    };
    let (about, title) = about_and_title(&tie_won_by_the_later_node(Some(Box::new(choice))));
    assert!(!about.contains("today's rule"), "{about}");
    assert!(!about.contains("recorded before"), "{about}");
    let chosen = about
        .find("★ #4 Q=0.900 N=1 finish")
        .expect("the chosen one");
    let tied = about.find("= #3 Q=0.900 N=1 finish").expect("the tie");
    assert!(chosen < tied, "the record's order:\n{about}");
    assert!(
        about.contains("the search ranked the chosen one first"),
        "{about}"
    );
    assert!(title.contains("★ best mean 0.90; ties #3"), "{title}");
    assert!(!title.contains("earlier wins"), "{title}");
}

/// A copy of a run built in memory (runs are not Clone).
fn run_of_same(run: &Run) -> Run {
    common::run_of(
        run.path.to_str().unwrap(),
        run.header.clone(),
        run.all_events().iter().map(|e| e.body.clone()).collect(),
    )
}

/// A SPIRAL run whose node #1 has it all: a long critic reason, a simulation, and a real call
/// that failed.
fn node_with_everything() -> Run {
    use cosmos_trajectory::event::{Action, AgentKind, EventBody, Observation, Verdict};
    let reason = "The call converts 12:00 in Europe/London to Asia/Tokyo, which is exactly \
                  what the task asks for first; the arguments match the schema, the time is \
                  given in 24-hour form as the tool expects, and the simulated result gives \
                  a plausible offset of nine hours, so this step should move the plan forward \
                  without any need to revisit the earlier lookup of the current time.";
    assert!(reason.len() > 300, "{}", reason.len());
    let bodies = vec![
        EventBody::root(),
        EventBody::NodeAdded {
            node: 1,
            parent: Some(0),
            depth: 1,
            action: Some(Action::ToolCall {
                tool: "Time MCP:convert_time".into(),
                arguments: serde_json::json!({"source_timezone": "Europe/London", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
            }),
            prior: Some(0.8),
        },
        EventBody::NodeSimulated { node: 1, route: None, prediction: PredictionRecord { world_model: "llm".into(), observation: Observation {
                text: r#"{"source":{"timezone":"Europe/London","datetime":"2026-11-30T12:00:00+00:00"},"target":{"timezone":"Asia/Tokyo","datetime":"2026-11-30T21:00:00+09:00"},"time_difference":"+9.0h"}"#.into(),
                ..Default::default()
            }, latency_ms: 900, tokens: Some(310), confidence: None, confidence_source: None, members: Vec::new(), predicted_state: None } },
        EventBody::NodeEvaluated {
            node: 1,
            verdict: Verdict::Valid,
            base_reward: 0.1,
            critic_reward: Some(0.85),
            critic_reason: Some(reason.into()),
            reward: 0.475,
            terminal: false,
            horizon: None,
        },
        EventBody::Backpropagated {
            path: vec![0, 1],
            value: 0.475,
        },
        EventBody::PlanSelected {
            nodes: vec![1],
            rule: "best_mean".into(),
            choice: None,
            risky: Vec::new(),
        },
        EventBody::ToolCalled {
            step: 1,
            tool: "Time MCP:convert_time".into(),
            server: Some("Time MCP".into()),
            arguments: Box::new(serde_json::json!({"source_timezone": "Europe/London", "time": "12:00", "target_timezone": "Asia/Tokyo"})),
            result: Observation {
                text: "Error executing tool convert_time: upstream clock unavailable".into(),
                is_error: true,
                ..Default::default()
            },
            latency_ms: 40,
            node: Some(1),
            error: None,
            origin: None,
            state_change: None,
        },
    ];
    common::run_of(
        "runs/everything.jsonl",
        common::header("t", AgentKind::Spiral, Some("llm")),
        bodies,
    )
}

#[test]
fn the_node_inspector_shows_a_node_whole() {
    for size in SIZES {
        let view = RunView::opened(node_with_everything(), Rect::new(0, 0, size.0, size.1 - 1));
        let mut app = App::new(view, Keymap::default(), Theme::new(true), size);
        // Opened on the failed call with node #1 selected: one key shows the node.
        app.update(Action::Do(Command::Inspect));
        let Some(inspector) = app.top_as::<Inspector>() else {
            panic!("i on a node opens its inspector");
        };
        // The critic's reason is there whole, wrapped, not cut.
        let rows = inspector.rows().join(" ");
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let reason = match &node_with_everything().all_events()[3].body {
            cosmos_trajectory::event::EventBody::NodeEvaluated {
                critic_reason: Some(r),
                ..
            } => r.clone(),
            other => panic!("{other:?}"),
        };
        assert!(flat(&rows).contains(&flat(&reason)), "{rows}");
        assert!(!inspector.rows().iter().any(|r| r.ends_with('…')));
        let screen = render(&mut app);
        insta::assert_snapshot!(format!("node_inspector_{}x{}", size.0, size.1), screen);
    }
    // At 200x60 everything is on one screen; the failure is drawn as one, in its cells.
    let view = RunView::opened(node_with_everything(), Rect::new(0, 0, 200, 59));
    let mut app = App::new(view, Keymap::default(), Theme::new(true), (200, 60));
    app.update(Action::Do(Command::Inspect));
    app.settle();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let text = terminal.backend().to_string();
    let buffer = terminal.backend().buffer().clone();
    let (row, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("upstream clock unavailable"))
        .expect("the real error is shown");
    let col = line
        .find("upstream")
        .map(|b| line[..b].chars().count())
        .unwrap()
        - 1;
    assert_eq!(
        buffer[(col as u16, row as u16)].style().fg,
        Theme::new(true).error().fg,
        "the failed result is drawn as a failure"
    );
}

#[test]
fn in_every_sample_search_the_star_is_the_recorded_plan_and_nothing_contradicts_it() {
    use cosmos_trajectory::event::{AgentKind, EventBody};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let (mut checked, mut stopped) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let run = Run::open(&path).unwrap();
        if run.header.agent.kind != AgentKind::Spiral {
            continue;
        }
        let Some(chosen) = run.all_events().iter().rev().find_map(|e| match &e.body {
            EventBody::PlanSelected { nodes, choice, .. } => {
                assert!(
                    choice.is_some(),
                    "{}: the choice is recorded",
                    path.display()
                );
                nodes.last().copied()
            }
            _ => None,
        }) else {
            // A search stopped before it chose: the run's own story says that, and how it ended.
            let mut app = run_app(Run::open(&path).unwrap(), (120, 40));
            app.update(Action::Do(Command::About));
            let text = app
                .top_as::<Inspector>()
                .expect("the about view")
                .lines()
                .join("\n");
            for said in [
                "none: no plan was chosen in this run",
                "stopped: interrupted",
                "ending: interrupted",
            ] {
                assert!(text.contains(said), "{}: {said}:\n{text}", path.display());
            }
            stopped += 1;
            continue;
        };
        for size in SIZES {
            let mut app = run_app(Run::open(&path).unwrap(), size);
            let screen = render(&mut app);
            assert!(
                !screen.contains("today's rule"),
                "{}:\n{screen}",
                path.display()
            );
            app.update(Action::Do(Command::About));
            let Some(about) = app.top_as::<Inspector>() else {
                panic!("the about view");
            };
            let text = about.lines().join("\n");
            let starred: Vec<&str> = text
                .lines()
                .filter(|l| l.trim_start().starts_with('★'))
                .collect();
            assert_eq!(
                starred.len(),
                1,
                "{}: one chosen node:\n{text}",
                path.display()
            );
            assert!(
                starred[0]
                    .trim_start()
                    .starts_with(&format!("★ #{chosen} ")),
                "{}: the ★ is #{chosen}, as plan_selected records:\n{text}",
                path.display()
            );
            for contradiction in ["today's rule", "recorded before"] {
                assert!(!text.contains(contradiction), "{}:\n{text}", path.display());
            }
        }
        checked += 1;
    }
    assert!(
        checked >= 3,
        "the sample SPIRAL runs with a plan ({checked})"
    );
    assert!(stopped >= 1, "the sample search stopped mid-way");
}

#[test]
fn every_critic_reason_in_the_sample_runs_reads_whole_at_80x24() {
    use cosmos_trajectory::event::EventBody;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let run = Run::open(&path).unwrap();
        let state = cosmos_trajectory::fold::TreeState::fold(&run, run.len());
        for (slot, node) in run.nodes().iter().enumerate() {
            let reason = run.all_events().iter().rev().find_map(|e| match &e.body {
                EventBody::NodeEvaluated {
                    node: n,
                    critic_reason: Some(r),
                    ..
                } if *n == node.id => Some(r.clone()),
                _ => None,
            });
            let Some(reason) = reason else { continue };
            let inspector = cosmos_app::tui::Inspector::node(&run, &state, slot as u32, (80, 24));
            let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
            let rows = flat(&inspector.rows().join(" "));
            assert!(
                rows.contains(&flat(&cosmos_trajectory::sanitize::inert(&reason))),
                "{}: node #{}: {reason}",
                path.display(),
                node.id
            );
            assert!(
                inspector
                    .rows()
                    .iter()
                    .all(|r| unicode_width::UnicodeWidthStr::width(*r) <= 76)
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "the samples have critic reasons ({checked})");
}

#[test]
fn a_live_run_mid_way() {
    let source = common::plan_fails_run();
    for size in SIZES {
        let view = RunView::live(
            Run::new("runs/live.jsonl".into(), source.header.clone()),
            Rect::new(0, 0, size.0, size.1 - 1),
            None,
        );
        let mut app = App::new(view, Keymap::default(), Theme::new(true), size);
        for event in source
            .all_events()
            .iter()
            .take(source.len() * 3 / 4)
            .cloned()
        {
            app.update(Action::LiveEvent(LiveSource::Followed, Box::new(event)));
        }
        let screen = render(&mut app);
        assert!(screen.contains("LIVE"), "{screen}");
        insta::assert_snapshot!(format!("live_mid_way_{}x{}", size.0, size.1), screen);
    }
}

#[test]
fn from_the_sample_runs_a_plan_exec_run_with_a_failed_call_is_a_few_keys_away() {
    use cosmos_trajectory::event::AgentKind;
    // The sample runs (whose real calls all succeeded; several stopped at their step limit)
    // and a Plan-Exec run with a failed real call among them.
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let folder = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&samples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(&path, folder.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    common::write_run(
        &common::plan_fails_run(),
        &folder.path().join("20200101T000000.000Z_plan_fails.jsonl"),
    );
    let dir = folder.path().to_path_buf();
    let runs = cosmos_trajectory::listing::list_runs(std::slice::from_ref(&dir)).unwrap();
    let size = (160, 45);
    let runs_count = runs.len();
    let mut app = App::new(
        Browser::new(vec![dir], runs, size.1 - 1),
        Keymap::default(),
        Theme::new(true),
        size,
    );
    let press = |app: &mut App, code: crossterm::event::KeyCode| {
        let ev = crossterm::event::Event::Key(crossterm::event::KeyEvent::new(
            code,
            crossterm::event::KeyModifiers::NONE,
        ));
        let action = app.map_input(ev).unwrap();
        app.update(action);
    };
    // The browser recounts the older runs' totals first (in the background; here at once).
    for (id, work) in app.take_work() {
        for a in cosmos_app::tui::perform(id, work) {
            app.update(a);
        }
    }
    // `f` walks the runs that went wrong (failed calls, step limits, searches cut short): a
    // Plan-Exec run with a failed real call is among the first, then Enter opens it.
    let mut presses = 0;
    loop {
        press(&mut app, crossterm::event::KeyCode::Char('f'));
        presses += 1;
        let selected = app.find::<Browser>().and_then(|b| b.selected_run());
        let kind = selected
            .and_then(|r| r.header.as_ref().ok())
            .map(|h| h.agent.kind);
        let failed_call = selected.is_some_and(|r| r.outcome().contains('✗'));
        assert!(
            selected.is_some_and(|r| !r.clean()),
            "f stops only where something went wrong"
        );
        if kind == Some(AgentKind::PlanExec) && failed_call {
            break;
        }
        assert!(
            presses <= runs_count,
            "f never reached the Plan-Exec run with a failed call"
        );
    }
    press(&mut app, crossterm::event::KeyCode::Enter);
    for (id, work) in app.take_work() {
        for a in cosmos_app::tui::perform(id, work) {
            app.update(a);
        }
    }
    let view = app.find::<RunView>().expect("the run is open");
    assert_eq!(view.run().header.agent.kind, AgentKind::PlanExec);
    let first = view.run().first_failed_call().unwrap();
    assert_eq!(view.position(), first + 1, "at its first failed call");
    let screen = render(&mut app);
    assert!(screen.contains("real: failed ✗"), "{screen}");
    assert!(screen.contains("simulated"), "{screen}");
    assert!(
        screen.contains("opened at the first failed call"),
        "{screen}"
    );
}

#[test]
fn the_group_table_marks_what_it_cuts_and_scrolls_sideways() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = common::three_listed(dir.path());
    let size = (80, 24);
    let browser = Browser::new(vec![dir.path().to_path_buf()], summaries, size.1 - 1);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), size);
    app.update(Action::Do(Command::ToggleGroups));
    for (id, work) in app.take_work() {
        for a in cosmos_app::tui::perform(id, work) {
            app.update(a);
        }
    }
    let screen = render(&mut app);
    let table: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("Groups (config)"))
        .skip(1)
        .take_while(|l| !l.contains('└'))
        .collect();
    assert!(
        table
            .iter()
            .any(|l| l.contains("spiral") || l.contains("react")),
        "{screen}"
    );
    // A row wider than the pane ends in `…` at its edge instead of losing digits unseen.
    let cut: Vec<&&str> = table
        .iter()
        .filter(|l| l.trim_end_matches(['│', '"']).ends_with('…'))
        .collect();
    assert!(
        !cut.is_empty(),
        "the table is wider than 80 columns:\n{screen}"
    );
    let first_row = table[0].to_string();
    app.update(Action::Do(Command::ScrollRight));
    let scrolled = render(&mut app);
    assert!(
        !scrolled.contains(&first_row),
        "→ scrolls the table sideways"
    );
}

/// A wm-eval file in memory: two calls (London, then a failing Mars), two world models.
fn wm_eval_run() -> Run {
    use cosmos_trajectory::event::{AgentKind, EventBody, Observation, Origin};
    let london =
        r#"{"timezone":"Europe/London","datetime":"2026-11-30T09:00:00+00:00","is_dst":false}"#;
    let tokyo =
        r#"{"timezone":"Asia/Tokyo","datetime":"2026-11-30T18:00:00+09:00","is_dst":false}"#;
    let obs = |text: &str, is_error| Observation {
        text: text.into(),
        is_error,
        ..Default::default()
    };
    let called = |step: u64, target: &str, result: Observation| EventBody::ToolCalled {
        step,
        tool: "Time MCP:convert_time".into(),
        server: Some("Time MCP".into()),
        arguments: Box::new(serde_json::json!({"time": "09:00", "target_timezone": target})),
        result,
        latency_ms: 0,
        node: None,
        error: None,
        origin: Some(Box::new(Origin {
            run: "runs/a.jsonl".into(),
            seq: step * 7,
        })),
        state_change: None,
    };
    let simulated = |step, wm: &str, o: Observation| EventBody::CallSimulated {
        step,
        tool: None,
        arguments: None,
        prediction: PredictionRecord {
            world_model: wm.into(),
            observation: o,
            latency_ms: 5,
            tokens: None,
            confidence: None,
            confidence_source: None,
            members: Vec::new(),
            predicted_state: None,
        },
    };
    let mut header = common::header("wm-eval", AgentKind::WmEval, None);
    header
        .agent
        .settings
        .insert("names".into(), serde_json::json!(["memory", "qwen"]));
    common::run_of(
        "runs/wm-eval.jsonl",
        header,
        vec![
            called(1, "Europe/London", obs(london, false)),
            simulated(1, "memory", obs(london, false)),
            simulated(1, "qwen", obs(tokyo, false)),
            called(
                2,
                "Mars/Olympus",
                obs("Invalid timezone: 'Mars/Olympus'", true),
            ),
            EventBody::Error {
                source: cosmos_trajectory::event::ErrorSource::WorldModel,
                name: Some("memory".into()),
                message: "step 2: memory world model: no recorded call".into(),
                stderr_tail: None,
                step: None,
            },
            simulated(2, "qwen", obs("<the tool's text result>", false)),
        ],
    )
}

#[test]
fn a_wm_eval_file_opens_in_the_world_model_view() {
    for size in SIZES {
        let area = Rect::new(0, 0, size.0, size.1 - 1);
        let mut app = App::on(
            open_run(wm_eval_run(), area),
            Keymap::default(),
            Theme::new(true),
            size,
        );
        let screen = render(&mut app);
        if size.0 >= 200 {
            // What each world model got wrong, not only a number.
            assert!(
                screen.contains("0.58 /timezone: \"Asia/Tokyo\" ≠ \"Europe/London\""),
                "{screen}"
            );
            assert!(screen.contains("1.00 = real"), "{screen}");
            assert!(screen.contains("0.00 no prediction"), "{screen}");
            assert!(screen.contains("✗ step 2: memory world model"), "{screen}");
        }
        insta::assert_snapshot!(format!("wm_eval_view_{}x{}", size.0, size.1), screen);
        // Sorted by disagreement, Mars (nobody right) comes first; Enter shows it whole.
        app.update(Action::Do(Command::SortNext));
        let Some(view) = app.top_as::<WmEvalView>() else {
            panic!("the world-model view");
        };
        assert_eq!(
            view.selected().map(|r| r.step),
            Some(2),
            "s puts the cursor on the call that most needs a look"
        );
        app.update(Action::Do(Command::Open));
        let Some(detail) = app.top_as::<CallDetail>() else {
            panic!("Enter opens the call whole");
        };
        assert!(
            detail.text().contains("Invalid timezone"),
            "{}",
            detail.text()
        );
        insta::assert_snapshot!(
            format!("wm_eval_call_{}x{}", size.0, size.1),
            render(&mut app)
        );
        app.update(Action::Do(Command::Back));
        assert!(app.top_is::<WmEvalView>());
        // r opens the run the selected call came from, at that call (its seq there, less one:
        // the cursor's index).
        let Some(view) = app.top_as::<WmEvalView>() else {
            panic!("the world-model view");
        };
        let seq = view.selected().unwrap().source_seq.unwrap();
        app.update(Action::Do(Command::OpenSource));
        let work = app.take_work();
        assert!(
            matches!(&work[..], [(_, cosmos_app::tui::Work::OpenRunAt(path, at))]
                if path.ends_with("a.jsonl") && *at as u64 == seq - 1),
            "{work:?}"
        );
    }
}

#[test]
fn probing_a_node_shows_the_picker_and_then_the_probe_in_the_node_inspector() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("probed.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    common::write_run(
        &common::three_runs().into_iter().next().unwrap(),
        &dir.path().join("other.jsonl"),
    );
    let size = (80, 24);
    let view = RunView::opened(
        Run::open(&path).unwrap(),
        Rect::new(0, 0, size.0, size.1 - 1),
    );
    let mut app = App::new(view, Keymap::default(), Theme::new(true), size);
    // The llm world model is offered because its role has an endpoint (whatever the
    // environment says).
    let config = dir.path().join("cosmos.toml");
    std::fs::write(
        &config,
        "[roles.world_model]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    app.probe.config = Some(config);
    let folder = dir.path().display().to_string();
    let shown = |app: &mut App| render(app).replace(&folder, "TMP");
    // Opened on the failed call, node #2 selected: p lists the world models.
    app.update(Action::Do(Command::Probe));
    insta::assert_snapshot!("probe_picker_80x24", shown(&mut app));
    app.update(Action::Do(Command::Down));
    app.update(Action::Do(Command::Open));
    for (id, work) in app.take_work() {
        for a in cosmos_app::tui::perform(id, work) {
            app.update(a);
        }
    }
    app.update(Action::Do(Command::Inspect));
    // Down to the probe's section.
    for _ in 0..40 {
        app.update(Action::Do(Command::Down));
    }
    let screen = shown(&mut app);
    assert!(
        screen.contains("probed after the run with memory"),
        "{screen}"
    );
    insta::assert_snapshot!("probe_in_node_inspector_80x24", screen);
}

#[test]
fn a_call_a_world_model_never_reached_is_no_failure_in_the_view() {
    // An interrupted wm-eval file: call 3 was copied and simulated by `memory` only, before
    // the stop. The view counts, as `cosmos wm-eval` does, the calls every world model got to.
    use cosmos_trajectory::event::{EventBody, Observation, Origin};
    let mut run = wm_eval_run();
    run.push(cosmos_trajectory::event::Event {
        seq: 100,
        t_ms: 10,
        body: EventBody::ToolCalled {
            step: 3,
            tool: "Time MCP:convert_time".into(),
            server: Some("Time MCP".into()),
            arguments: Box::new(serde_json::json!({"time": "10:00"})),
            result: Observation::default(),
            latency_ms: 0,
            node: None,
            error: None,
            origin: Some(Box::new(Origin {
                run: "runs/a.jsonl".into(),
                seq: 99,
            })),
            state_change: None,
        },
    });
    run.push(cosmos_trajectory::event::Event {
        seq: 101,
        t_ms: 11,
        body: EventBody::CallSimulated {
            step: 3,
            tool: None,
            arguments: None,
            prediction: PredictionRecord {
                world_model: "memory".into(),
                observation: Observation::default(),
                latency_ms: 1,
                tokens: None,
                confidence: None,
                confidence_source: None,
                members: Vec::new(),
                predicted_state: None,
            },
        },
    });
    let view = cosmos_app::tui::WmEvalView::new(&run, (120, 40));
    let qwen = view
        .board()
        .world_models
        .iter()
        .find(|w| w.name == "qwen")
        .unwrap();
    assert_eq!(
        (qwen.calls, qwen.failed),
        (2, 0),
        "call 3 is not qwen's failure"
    );
    let memory = view
        .board()
        .world_models
        .iter()
        .find(|w| w.name == "memory")
        .unwrap();
    assert_eq!((memory.calls, memory.failed), (2, 1));
}

#[test]
fn the_notes_list_at_80x24_and_200x60() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noted.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    for (node, event, text) in [
        (
            Some(2),
            None,
            "wrong turn: Mars is no timezone, the planner should have asked",
        ),
        (None, Some(3), "this result is where the plan went wrong"),
    ] {
        common::annotate(&path, node, event, text, 900);
    }
    for size in [(80, 24), (200, 60)] {
        let mut app = run_app(Run::open(&path).unwrap(), size);
        app.update(Action::Do(Command::Notes));
        // The status line names the temporary file; the screen above it is the view.
        let screen = render(&mut app);
        let body: Vec<&str> = screen.lines().take(size.1 as usize - 1).collect();
        insta::assert_snapshot!(format!("notes_{}x{}", size.0, size.1), body.join("\n"));
    }
}

#[test]
fn every_help_line_is_whole_at_200_columns_and_wrapped_not_cut_at_80() {
    use cosmos_app::tui::HelpView;
    let keymap = Keymap::default();
    for mode in cosmos_app::tui::MODES {
        // The keys, then the legend of the marks the view draws.
        let legend = cosmos_app::tui::help_legend(mode);
        let words: Vec<String> = keymap
            .help(mode)
            .iter()
            .map(|(_, text)| *text)
            .chain(legend.iter().map(|(_, text)| *text))
            .flat_map(|text| text.split_whitespace().map(str::to_string))
            .collect();
        let legend_rows = if legend.is_empty() {
            0
        } else {
            legend.len() + 2
        };
        for size in [(200, 60), (80, 24)] {
            let help = HelpView::new(&keymap, mode, size);
            let shown: Vec<String> = help
                .rows()
                .iter()
                .flat_map(|(_, text)| text.split_whitespace().map(str::to_string))
                .collect();
            assert_eq!(shown, words, "{mode:?} at {size:?}");
            if size.0 == 200 {
                assert_eq!(
                    help.rows().len(),
                    keymap.help(mode).len() + legend_rows,
                    "{mode:?}: one row per key at 200 columns"
                );
            }
        }
    }
}

#[test]
fn a_destructive_tools_calls_are_marked_and_the_help_says_why() {
    let mut run = common::plan_fails_run();
    for tool in &mut run.header.tools {
        tool.annotations = Some(Box::new(serde_json::json!({"destructiveHint": true})));
    }
    let mut app = run_app(run, (200, 60));
    let screen = render(&mut app);
    // The tree's call nodes and the timeline's real calls.
    assert!(screen.contains("! time:convert_time"), "{screen}");
    assert!(screen.contains("! 1. time:convert_time"), "{screen}");
    app.update(Action::Do(Command::Help));
    let help = render(&mut app);
    assert!(help.contains("annotates destructive"), "{help}");
}

/// `b` on a finished plan's step: the fork form over the run, filled in with its settings
/// (SPIRAL with the `llm` world model; recorded tools only, as no servers were given).
#[test]
fn fork_form() {
    for size in SIZES {
        let mut app = run_app(common::plan_fails_run(), size);
        app.update(Action::Do(Command::Bottom));
        app.update(Action::Do(Command::Branch));
        insta::assert_snapshot!(format!("fork_form_{}x{}", size.0, size.1), render(&mut app));
    }
}

/// A login stepping up its scopes in front of a run: the address whole, wrapped to be copied.
#[test]
fn page_prompt() {
    for size in SIZES {
        let mut app = run_app(common::plan_fails_run(), size);
        let (answer, _waiting) = tokio::sync::oneshot::channel();
        let question = cosmos_engine::mcp::Question {
            server: "prot".into(),
            tool: None,
            request: rmcp::model::ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "prot asks for scope \"read admin\" beyond this login's (read): log in again to grant it".into(),
                url: "http://127.0.0.1:4000/authorize?response_type=code&client_id=c0ffee&scope=read+admin&redirect_uri=http%3A%2F%2F127.0.0.1%3A4001%2Fcallback".into(),
                elicitation_id: "cosmos-login-prot".into(),
            },
            answer,
        };
        app.update(Action::Elicit(Box::new(question)));
        insta::assert_snapshot!(
            format!("page_prompt_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
}

/// A server's request for input in front of a run: the form from its schema, defaults filled in.
#[test]
fn elicitation_form() {
    for size in SIZES {
        let mut app = run_app(common::plan_fails_run(), size);
        let (answer, _waiting) = tokio::sync::oneshot::channel();
        let question = cosmos_engine::mcp::Question::form(
            "test",
            "Please provide your registration information:",
            serde_json::json!({"type": "object", "properties": {
                "username": {"type": "string", "title": "Username"},
                "newsletter": {"type": "boolean", "title": "Newsletter", "default": false},
                "role": {"type": "string", "title": "Role", "enum": ["developer", "designer"], "default": "designer"},
                "age": {"type": "integer", "title": "Age"}
            }, "required": ["username"]}),
            answer,
        )
        .expect("a form schema");
        app.update(Action::Elicit(Box::new(question)));
        insta::assert_snapshot!(
            format!("elicitation_form_{}x{}", size.0, size.1),
            render(&mut app)
        );
    }
}

/// Background work that panicked (a bug) ends its request with a message: the wait for it is
/// over and the explorer goes on.
#[test]
fn background_work_that_failed_ends_its_wait_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = common::three_listed(dir.path());
    let browser = Browser::new(vec![dir.path().to_path_buf()], summaries, 23);
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (120, 24));
    app.update(Action::Do(Command::Open));
    let work = app.take_work();
    assert_eq!(work.len(), 1);
    let screen = render(&mut app);
    assert!(screen.contains("opening"), "{screen}");
    app.update(Action::WorkFailed(work[0].0, "index out of bounds".into()));
    let screen = render(&mut app);
    assert!(!screen.contains("opening"), "{screen}");
    assert!(
        screen.contains("background work failed: index out of bounds"),
        "{screen}"
    );
    // And the browser still answers.
    app.update(Action::Do(Command::Down));
    assert!(app.top_as::<Browser>().is_some());
}

/// A node an ensemble predicted: the inspector lists its members side by side, each with its
/// own confidence and its fidelity to the real result (by the one fidelity function), and a
/// member that failed as failed, then each one's prediction or error.
#[test]
fn a_node_of_an_ensemble_shows_each_member_beside_the_real_result() {
    use cosmos_trajectory::event::{AgentKind, EventBody, MemberPrediction, Observation};
    let mut bodies = common::plan_fails_bodies("both", "Mars/Olympus");
    let picked = bodies
        .iter()
        .find_map(|b| match b {
            EventBody::NodeSimulated {
                node: 1,
                prediction: PredictionRecord { observation, .. },
                ..
            } => Some(observation.clone()),
            _ => None,
        })
        .unwrap();
    let guess = Observation {
        text: "Tokyo is 8 hours ahead".into(),
        ..Default::default()
    };
    let members = vec![
        MemberPrediction {
            world_model: "recorded".into(),
            observation: Some(picked.clone()),
            error: None,
            latency_ms: 1,
            confidence: Some(0.9),
            confidence_source: Some("recall".into()),
        },
        MemberPrediction {
            world_model: "qwen".into(),
            observation: Some(guess.clone()),
            error: None,
            latency_ms: 2900,
            confidence: None,
            confidence_source: None,
        },
        MemberPrediction {
            world_model: "mine".into(),
            observation: None,
            error: Some("world model command timed out after 30s".into()),
            latency_ms: 0,
            confidence: None,
            confidence_source: None,
        },
    ];
    for body in &mut bodies {
        if let EventBody::NodeSimulated {
            node: 1,
            prediction:
                PredictionRecord {
                    members: m,
                    confidence,
                    confidence_source,
                    ..
                },
            ..
        } = body
        {
            *m = members.clone();
            *confidence = Some(0.25);
            *confidence_source = Some("agreement".into());
        }
    }
    let run = common::run_of(
        "runs/ensemble.jsonl",
        common::header("t", AgentKind::PlanExec, Some("both")),
        bodies,
    );
    let real = cosmos_engine::probe::real_of(&run, 1).expect("node 1 was executed");
    let slot = run.nodes().iter().position(|n| n.id == 1).unwrap() as u32;
    let state = cosmos_trajectory::fold::TreeState::fold(&run, run.len());
    let inspector = Inspector::node(&run, &state, slot, (100, 40));
    let rows = inspector.rows();
    let row_of = |name: &str| {
        rows.iter()
            .find(|r| r.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}: {rows:#?}"))
            .to_string()
    };
    let fidelity = |o: &Observation| cosmos_engine::metrics::fidelity::compare(o, &real).score;
    assert!(
        row_of("recorded").contains(&format!(
            "confidence 0.90 (recall) · fidelity {:.2}",
            fidelity(&picked)
        )),
        "{rows:#?}"
    );
    assert!(
        row_of("qwen").contains(&format!("no confidence · fidelity {:.2}", fidelity(&guess))),
        "{rows:#?}"
    );
    assert!(row_of("mine").contains("failed ✗"), "{rows:#?}");
    let all = rows.join("\n");
    assert!(all.contains("simulated by both · confidence 0.25 (agreement)"));
    assert!(all.contains("the ensemble's 3 members · fidelity to the real result"));
    assert!(all.contains("predicted by qwen") && all.contains("Tokyo is 8 hours ahead"));
    assert!(all.contains("mine gave no prediction") && all.contains("timed out after 30s"));
    insta::assert_snapshot!("node_of_an_ensemble_100x40", all);
}

/// A node where routing's short horizon stopped the search: the inspector says so, with the
/// trust along the path its `node_evaluated` records and the run's threshold.
#[test]
fn a_node_at_the_horizon_says_why_the_search_went_no_further() {
    use cosmos_trajectory::event::{AgentKind, EventBody, Verdict};
    let mut bodies = common::plan_fails_bodies("memory", "Mars/Olympus");
    let at = bodies
        .iter()
        .position(|b| matches!(b, EventBody::NodeSimulated { node: 1, .. }))
        .unwrap();
    bodies.insert(
        at + 1,
        EventBody::NodeEvaluated {
            node: 1,
            verdict: Verdict::Valid,
            base_reward: 0.1,
            critic_reward: None,
            critic_reason: None,
            reward: 0.1,
            terminal: true,
            horizon: Some(0.36),
        },
    );
    let mut header = common::header("t", AgentKind::Spiral, Some("memory"));
    header
        .agent
        .settings
        .insert("go_real_below".into(), serde_json::json!(0.5));
    let run = common::run_of("runs/horizon.jsonl", header, bodies);
    let slot = run.nodes().iter().position(|n| n.id == 1).unwrap() as u32;
    let state = cosmos_trajectory::fold::TreeState::fold(&run, run.len());
    let rows = Inspector::node(&run, &state, slot, (120, 40))
        .rows()
        .join("\n");
    assert!(
        rows.contains(
            "the search imagined no further: the confidence along the path is 0.36, below \
             go_real_below (0.5)"
        ),
        "{rows}"
    );
}

/// A Plan-Exec run of `bodies` at `path`, and its node #1's inspector rows.
fn node_one_rows(
    path: &str,
    bodies: Vec<cosmos_trajectory::event::EventBody>,
) -> (cosmos_trajectory::run::Run, String) {
    use cosmos_trajectory::event::AgentKind;
    let run = common::run_of(
        path,
        common::header("t", AgentKind::PlanExec, Some("llm")),
        bodies,
    );
    let slot = run.nodes().iter().position(|n| n.id == 1).unwrap() as u32;
    let state = cosmos_trajectory::fold::TreeState::fold(&run, run.len());
    let rows = Inspector::node(&run, &state, slot, (120, 60))
        .rows()
        .join("\n");
    (run, rows)
}

/// A node whose unsure prediction routing replaced by the real call: the inspector shows the
/// real result beside the prediction, with the prediction's fidelity to it (the one function).
#[test]
fn a_grounded_node_shows_its_real_result_beside_the_prediction() {
    use cosmos_trajectory::event::{EventBody, Observation};
    let mut bodies = common::plan_fails_bodies("llm", "Mars/Olympus");
    let at = bodies
        .iter()
        .position(|b| matches!(b, EventBody::NodeSimulated { node: 1, .. }))
        .unwrap();
    let predicted = match &bodies[at] {
        EventBody::NodeSimulated {
            prediction: PredictionRecord { observation, .. },
            ..
        } => observation.clone(),
        _ => unreachable!(),
    };
    let real = Observation {
        text: r#"{"target":{"timezone":"Asia/Tokyo","datetime":"2026-11-29T17:00:00+09:00"}}"#
            .into(),
        ..Default::default()
    };
    bodies.insert(
        at + 1,
        EventBody::NodeGrounded {
            node: 1,
            tool: "time:convert_time".into(),
            server: Some("time".into()),
            observation: real.clone(),
            latency_ms: 40,
            error: None,
            confidence: Some(0.3),
            state_change: None,
            origin: None,
        },
    );
    let (_, rows) = node_one_rows("runs/grounded.jsonl", bodies);
    let fidelity = cosmos_engine::metrics::fidelity::compare(&predicted, &real).score;
    for said in [
        "called for real while planning on time: the prediction was unsure (confidence 0.30)"
            .to_string(),
        format!("the prediction's fidelity to this result {fidelity:.2}"),
        "2026-11-29T17:00:00+09:00".to_string(),
    ] {
        assert!(rows.contains(&said), "{said}\n{rows}");
    }
}

/// A node whose real call changed its server's state: the inspector lists each changed field,
/// before and after, beside the value the world model's predicted state gave it; the timeline
/// marks the call.
#[test]
fn a_call_that_changed_state_shows_the_change_beside_the_predicted_state() {
    use cosmos_trajectory::event::{EventBody, FieldChange, StateChange};
    use serde_json::json;
    let mut bodies = common::plan_fails_bodies("llm", "Mars/Olympus");
    for body in &mut bodies {
        match body {
            EventBody::NodeSimulated {
                node: 1,
                prediction:
                    PredictionRecord {
                        predicted_state, ..
                    },
                ..
            } => *predicted_state = Some(Box::new(json!({"item/b2": {"qty": 20}}))),
            EventBody::ToolCalled {
                node: Some(1),
                state_change,
                ..
            } => {
                *state_change = Some(Box::new(StateChange {
                    fields_changed: 1,
                    fields: [(
                        "item/b2".to_string(),
                        FieldChange {
                            before: Some(json!({"qty": 0})),
                            after: Some(json!({"qty": 25})),
                        },
                    )]
                    .into(),
                    ..Default::default()
                }))
            }
            _ => {}
        }
    }
    let (run, rows) = node_one_rows("runs/stateful.jsonl", bodies);
    for said in [
        "state: the call changed 1 field · beside each, the predicted state's value",
        r#"item/b2: {"qty":0} → {"qty":25}"#,
        r#"predicted {"qty":20} ✗"#,
    ] {
        assert!(rows.contains(said), "{said}\n{rows}");
    }
    let step = run.steps().iter().find(|s| s.node == Some(1)).unwrap();
    let event = run.event(step.event as usize);
    let line = cosmos_trajectory::describe::summary(
        &event,
        cosmos_trajectory::describe::Latencies::of(&run.header),
    );
    assert!(line.contains("✎ 1 field →"), "{line}");
    // The event itself (Enter on the timeline, a ReAct run's only view of a call): the same
    // change, field by field.
    let rows = Inspector::event(&event, None, (120, 60)).rows().join("\n");
    assert!(
        rows.contains(r#"item/b2: {"qty":0} → {"qty":25}"#),
        "{rows}"
    );
}

/// Truth III: a state field's long value is wrapped in the inspector, never cut (as the README
/// says of every inspector): all of a 300-character value is there, to its last word.
#[test]
fn a_long_state_value_is_wrapped_whole_in_the_inspector() {
    use cosmos_trajectory::event::{EventBody, FieldChange, StateChange};
    use serde_json::json;
    let long = format!("{} THE-END", "word ".repeat(60));
    let mut bodies = common::plan_fails_bodies("llm", "Mars/Olympus");
    for body in &mut bodies {
        if let EventBody::ToolCalled {
            node: Some(1),
            state_change,
            ..
        } = body
        {
            *state_change = Some(Box::new(StateChange {
                fields_changed: 1,
                fields: [(
                    "note/long".to_string(),
                    FieldChange {
                        before: None,
                        after: Some(json!(long)),
                    },
                )]
                .into(),
                ..Default::default()
            }));
        }
    }
    let (run, _) = node_one_rows("runs/long-state.jsonl", bodies);
    let step = run.steps().iter().find(|s| s.node == Some(1)).unwrap();
    let event = run.event(step.event as usize);
    let rows = Inspector::event(&event, None, (100, 60)).rows().join(" ");
    assert!(rows.contains("THE-END"), "{rows}");
    assert_eq!(rows.matches("word").count(), 60, "{rows}");
}

/// A proxy session's protocol (`W`): each message's row, the selected one below; a torn last
/// line counted in the title.
#[test]
fn protocol_overlay() {
    let dir = tempfile::tempdir().unwrap();
    let run_path = dir.path().join("session.jsonl");
    let lines = [
        r#"{"t_ms":2,"dir":"in","id":0,"method":"initialize","bytes":120,"message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"c","version":"1"}}}}"#,
        r#"{"t_ms":3,"dir":"out","id":0,"method":"initialize","bytes":96,"latency_ms":1,"message":{"jsonrpc":"2.0","id":0,"result":{"serverInfo":{"name":"everything"}}}}"#,
        r#"{"t_ms":40,"dir":"in","id":1,"method":"tools/call","bytes":88,"message":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\u001b[2Jhi"}}}}"#,
        r#"{"t_ms":52,"dir":"out","method":"notifications/progress","bytes":90,"message":{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}}"#,
        r#"{"t_ms":61,"dir":"out","id":1,"method":"tools/call","bytes":9000,"latency_ms":21,"cut":true,"message":{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi…"}]}}}"#,
        r#"{"t_ms":70,"dir":"in","meth"#,
    ];
    std::fs::write(
        cosmos_trajectory::wire::wire_path(&run_path),
        lines.join("\n"),
    )
    .unwrap();
    let run = common::run_of(
        run_path.to_str().unwrap(),
        common::header("external", AgentKind::External, None),
        Vec::new(),
    );
    let mut app = run_app(run, (100, 24));
    app.update(Action::Do(Command::Wire));
    for (id, work) in app.take_work() {
        for answer in cosmos_app::tui::perform(id, work) {
            app.update(answer);
        }
    }
    app.update(Action::Do(Command::Down));
    app.update(Action::Do(Command::Down));
    let screen = render(&mut app);
    // The status line names the temporary folder: the rest is the snapshot.
    let body: Vec<&str> = screen.lines().take(23).collect();
    insta::assert_snapshot!("protocol_100x24", body.join("\n"));
    assert!(!screen.contains('\u{1b}'), "an escape reached the screen");
}

/// Truth III: one ending style. A run that completed with a failed call reads `completed ✗1`
/// in the failure colour in the run view's metrics and in compare's status row, as the browser
/// writes and colours it.
#[test]
fn an_outcome_reads_and_is_coloured_the_same_in_the_run_view_and_compare() {
    let theme = Theme::new(true);
    let style_of = |app: &mut App, size: (u16, u16), needle: &str| {
        app.settle();
        let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
        terminal.draw(|f| app.draw(f)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let text = terminal.backend().to_string();
        let (row, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle}:\n{text}"));
        let at = line.find(needle).unwrap() + needle.find("completed").unwrap();
        let x = line[..at].chars().count() as u16;
        buffer[(x, row as u16)].style().fg
    };
    let size = (160, 40);
    let mut app = run_app(common::revised_run(), size);
    assert_eq!(
        style_of(&mut app, size, "status    completed ✗1"),
        theme.error().fg
    );
    let runs = vec![common::revised_run(), common::revised_run()];
    let compare = CompareView::new(&runs, (size.0, size.1 - 1));
    let mut app = App::new(compare, Keymap::default(), theme, size);
    assert_eq!(
        style_of(&mut app, size, "status         completed ✗1"),
        theme.error().fg
    );
}
