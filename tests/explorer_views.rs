//! Snapshot tests of every view, at 80x24 and 200x60, drawn with ratatui's TestBackend.
//! Review changes with `cargo insta review` (or accept with INSTA_UPDATE=always).

mod common;

use std::path::PathBuf;

use mcp_cosmos::trajectory::listing::RunSummary;
use mcp_cosmos::trajectory::run::Run;
use mcp_cosmos::tui::action::Action;
use mcp_cosmos::tui::app::App;
use mcp_cosmos::tui::browser::Browser;
use mcp_cosmos::tui::compare::CompareView;
use mcp_cosmos::tui::keymap::Keymap;
use mcp_cosmos::tui::run_view::RunView;
use mcp_cosmos::tui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

const SIZES: [(u16, u16); 2] = [(80, 24), (200, 60)];

fn render(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(app.size.0, app.size.1)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    terminal.backend().to_string()
}

/// The three hand-made runs written to `dir` through the real writer, as the browser lists them.
fn three_listed(dir: &std::path::Path) -> Vec<RunSummary> {
    common::three_runs()
        .into_iter()
        .map(|run| {
            let path = dir.join(run.path.file_name().unwrap());
            common::write_run(&run, &path);
            RunSummary::read(&path)
        })
        .collect()
}

fn run_app(run: Run, size: (u16, u16)) -> App {
    let view = RunView::new(run, Rect::new(0, 0, size.0, size.1 - 1));
    App::with_run(view, Keymap::default(), Theme::new(true), size)
}

#[test]
fn empty_folder() {
    for size in SIZES {
        let app = App::with_browser(
            Browser::new(vec![PathBuf::from("sample_runs")], vec![], size.1 - 1),
            Keymap::default(),
            Theme::new(true),
            size,
        );
        insta::assert_snapshot!(format!("empty_folder_{}x{}", size.0, size.1), render(&app));
    }
}

#[test]
fn browser_with_runs_and_group_table() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = three_listed(dir.path());
    for size in SIZES {
        let browser = Browser::new(vec![PathBuf::from("runs")], summaries.clone(), size.1 - 1);
        let mut app = App::with_browser(browser, Keymap::default(), Theme::new(true), size);
        insta::assert_snapshot!(format!("browser_{}x{}", size.0, size.1), render(&app));
        app.update(Action::ToggleGroups);
        for effect in app.take_effects() {
            for a in mcp_cosmos::tui::terminal::perform(effect) {
                app.update(a);
            }
        }
        insta::assert_snapshot!(
            format!("browser_groups_{}x{}", size.0, size.1),
            render(&app)
        );
    }
}

#[test]
fn crashed_run() {
    for size in SIZES {
        insta::assert_snapshot!(
            format!("crashed_run_{}x{}", size.0, size.1),
            render(&run_app(common::crashed_run(), size))
        );
    }
}

#[test]
fn plan_fails_at_step_two() {
    for size in SIZES {
        let mut app = run_app(common::plan_fails_run(), size);
        // Jump to the failure, which selects the failing node and shows simulated beside real.
        app.update(Action::JumpStart);
        app.update(Action::NextFailure);
        insta::assert_snapshot!(format!("plan_fails_{}x{}", size.0, size.1), render(&app));
    }
}

#[test]
fn revised_plan_hangs_under_the_failed_step() {
    for size in SIZES {
        let mut app = run_app(common::revised_run(), size);
        app.update(Action::ExpandAll);
        insta::assert_snapshot!(format!("revised_plan_{}x{}", size.0, size.1), render(&app));
    }
    // The revised plan's finish node: its planned answer beside the answer the run gave.
    let mut app = run_app(common::revised_run(), (120, 30));
    app.update(Action::ExpandAll);
    for _ in 0..5 {
        app.update(Action::Down);
    }
    insta::assert_snapshot!("revised_plan_finish_node", render(&app));
    {}
}

#[test]
fn inspector_shows_an_event_in_full() {
    for size in SIZES {
        let mut app = run_app(common::plan_fails_run(), size);
        app.update(Action::JumpStart);
        app.update(Action::NextFailure);
        app.update(Action::Inspect);
        insta::assert_snapshot!(format!("inspector_{}x{}", size.0, size.1), render(&app));
    }
}

#[test]
fn tree_of_a_hundred_thousand_nodes() {
    let run = common::big_run(100_000);
    assert_eq!(run.nodes().len(), 100_000);
    let mut app = run_app(run, (200, 60));
    app.update(Action::ExpandAll);
    insta::assert_snapshot!("big_tree_200x60", render(&app));
    app.update(Action::Resize(80, 24));
    insta::assert_snapshot!("big_tree_80x24", render(&app));
}

#[test]
fn compare_three_runs() {
    let runs = common::three_runs();
    for size in SIZES {
        let mut app = App::with_browser(
            Browser::new(vec![PathBuf::from("runs")], vec![], size.1 - 1),
            Keymap::default(),
            Theme::new(true),
            size,
        );
        app.compare = Some(CompareView::new(&runs));
        app.screen = mcp_cosmos::tui::app::Screen::Compare;
        insta::assert_snapshot!(format!("compare_{}x{}", size.0, size.1), render(&app));
    }
}

#[test]
fn help_overlay() {
    let mut app = run_app(common::plan_fails_run(), (80, 24));
    app.update(Action::ToggleHelp);
    insta::assert_snapshot!("help_80x24", render(&app));
    // The keys that do not fit are a scroll away.
    for _ in 0..50 {
        app.update(Action::Down);
    }
    insta::assert_snapshot!("help_80x24_scrolled", render(&app));
}

#[test]
fn a_rejected_planner_reply_shows_as_a_failure_in_the_metrics_pane() {
    use mcp_cosmos::trajectory::event::{AgentKind, DecisionProblem, EventBody};
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
    let summaries = three_listed(dir.path());
    let browser = Browser::new(vec![PathBuf::from("runs")], summaries, 23);
    let app = App::with_browser(browser, Keymap::default(), Theme::new(true), (80, 24));
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
        let app = App::with_run(view, Keymap::default(), Theme::new(true), size);
        insta::assert_snapshot!(
            format!("failing_run_opened_{}x{}", size.0, size.1),
            render(&app)
        );
    }
}

#[test]
fn tree_rows_carry_node_ids_and_verdict_marks() {
    use mcp_cosmos::trajectory::event::{Action, AgentKind, EventBody, Observation, Verdict};
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
    };
    let bodies = vec![
        added(0, None),
        added(1, Some(call("Mars/Olympus"))),
        added(2, Some(call("Asia/Tokyo"))),
        EventBody::NodeSimulated {
            node: 1,
            world_model: "validator".into(),
            observation: Observation {
                text: "unknown zone".into(),
                is_error: true,
                ..Default::default()
            },
            latency_ms: 0,
            tokens: None,
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

#[test]
fn the_plans_reason_names_its_rule_value_and_a_tie() {
    use mcp_cosmos::trajectory::event::{Action, AgentKind, EventBody, Verdict};
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
    };
    let back = |path: Vec<u64>, value| EventBody::Backpropagated { path, value };
    // London (#1) leads at the root (Q 0.75 against 0.65), yet the plan runs through Tokyo
    // (#2): Tokyo's finish (#3) ties London's (#4) at 0.90, and the earlier id wins.
    let bodies = vec![
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
        EventBody::PlanSelected {
            nodes: vec![2, 3],
            rule: "best_mean".into(),
        },
    ];
    let run = common::run_of(
        "runs/tie.jsonl",
        common::header("t", AgentKind::Spiral, Some("llm")),
        bodies,
    );
    for size in SIZES {
        let app = run_app(run_of_same(&run), size);
        let screen = render(&app);
        if size.0 >= 120 {
            assert!(
                screen.contains("★ best mean 0.90; ties #4, earlier wins"),
                "{screen}"
            );
        }
        insta::assert_snapshot!(format!("plan_reason_tie_{}x{}", size.0, size.1), screen);
    }
}

/// A copy of a run built in memory (runs are not Clone).
fn run_of_same(run: &Run) -> Run {
    common::run_of(
        run.path.to_str().unwrap(),
        run.header.clone(),
        run.events.iter().map(|e| e.body.clone()).collect(),
    )
}
