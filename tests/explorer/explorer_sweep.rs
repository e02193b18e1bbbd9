//! The sweep's matrix view without a terminal: news from the sweep → cell states, keys → what
//! opens, snapshots at 80x24 and 200x60.

use crate::common;

use std::path::PathBuf;
use std::sync::mpsc;

use cosmos_app::tui::Action;
use cosmos_app::tui::App;
use cosmos_app::tui::ConfirmLeave;
use cosmos_app::tui::Keymap;
use cosmos_app::tui::RunView;
use cosmos_app::tui::SweepNews;
use cosmos_app::tui::Theme;
use cosmos_app::tui::{CellState, GridCell, SweepView};
use cosmos_app::tui::{View, Work};
use cosmos_trajectory::event::{RunStatus, Totals};
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

const CONFIGS: [&str; 3] = ["react", "plan-exec-memory", "spiral-llm"];
const TASKS: [&str; 2] = ["time_mcp_000", "unit_converter_001"];

fn totals(calls: u64, errors: u64, fidelity: Option<f64>) -> Totals {
    Totals {
        events: 20,
        tool_calls: calls,
        tool_errors: errors,
        llm_calls: 6,
        tokens: 4_200,
        wall_ms: 61_000,
        fidelity,
        ..Default::default()
    }
}

/// 2 tasks × 3 configurations: done, failed, missing on the first row; the second row queued
/// (the sweep is about to run it).
fn sweep_app(size: (u16, u16)) -> (App, mpsc::Receiver<()>) {
    let mut cells = Vec::new();
    for task in TASKS {
        for config in CONFIGS {
            cells.push(GridCell {
                id: format!("{:0>12}", cells.len()),
                task: task.into(),
                config: config.into(),
                repeat: 1,
                path: PathBuf::from(format!("runs/{task}_{config}_r1.jsonl")),
                state: CellState::Missing,
            });
        }
    }
    cells[0].state = CellState::Done(RunStatus::Completed, totals(4, 0, None));
    cells[1].state = CellState::Done(RunStatus::Failed, totals(3, 2, Some(0.41)));
    let (stop_tx, stop_rx) = mpsc::channel();
    let mut view = SweepView::new(
        "examples/paper.toml".into(),
        cells,
        Some(stop_tx),
        Rect::new(0, 0, size.0, size.1 - 1),
    );
    view.queue(3..6);
    let app = App::new(view, Keymap::default(), Theme::new(true), size);
    (app, stop_rx)
}

fn news(app: &mut App, news: SweepNews) {
    app.update(Action::Sweep(Box::new(news)));
}

/// Cell 3 (unit_converter_001 × react) starts and records the hand-made run's events.
fn start_cell_3(app: &mut App) -> cosmos_trajectory::run::Run {
    let run = common::plan_fails_run();
    news(
        app,
        SweepNews::Started {
            cell: 3,
            header: Box::new(run.header.clone()),
        },
    );
    for e in &run.all_events() {
        news(
            app,
            SweepNews::Event {
                cell: 3,
                event: Box::new(e.clone()),
            },
        );
    }
    run
}

fn key(app: &mut App, code: KeyCode) {
    let ev = TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE));
    if let Some(a) = app.map_input(ev) {
        app.update(a);
    }
}

fn sweep(app: &App) -> &SweepView {
    app.find::<SweepView>().expect("the sweep view")
}

fn render(app: &mut App) -> String {
    app.settle();
    let mut terminal = Terminal::new(TestBackend::new(app.size.0, app.size.1)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn the_matrix_shows_each_cells_state_and_outcome() {
    for size in [(80, 24), (200, 60)] {
        let (mut app, _stop) = sweep_app(size);
        start_cell_3(&mut app);
        news(
            &mut app,
            SweepNews::Retrying {
                cell: 4,
                reason: "no MCP server could be started".into(),
            },
        );
        news(
            &mut app,
            SweepNews::Ended {
                cell: 5,
                result: Err("no MCP server could be started".into()),
                progress: "4/6 · 95s left".into(),
            },
        );
        let screen = render(&mut app);
        insta::assert_snapshot!(format!("sweep_matrix_{}x{}", size.0, size.1), screen);
    }
}

#[test]
fn a_running_cell_counts_its_calls_live_and_ends_with_its_totals() {
    let (mut app, _stop) = sweep_app((120, 30));
    let run = start_cell_3(&mut app);
    app.settle();
    let calls = run
        .all_events()
        .iter()
        .filter(|e| e.body.kind() == "tool_called")
        .count() as u64;
    assert!(calls > 0);
    match &sweep(&app).cells()[3].state {
        CellState::Running(t) => {
            assert_eq!(t.tool_calls, calls);
            assert!(t.tool_errors > 0, "the hand-made run has a failed call");
            assert!(t.fidelity.is_some(), "its calls were simulated first");
        }
        other => panic!("running, not {other:?}"),
    }
    news(
        &mut app,
        SweepNews::Ended {
            cell: 3,
            result: Ok(RunStatus::Completed),
            progress: "1/3 · 10s left".into(),
        },
    );
    match &sweep(&app).cells()[3].state {
        CellState::Done(RunStatus::Completed, t) => assert_eq!(t.tool_calls, calls),
        other => panic!("done, not {other:?}"),
    }
    assert!(render(&mut app).contains("1/3 · 10s left"));
    // A cell another process holds is left to it, and says so.
    news(
        &mut app,
        SweepNews::Skipped {
            cell: 4,
            why: "running in another process (pid 7 since 18:00)".into(),
            progress: "2/3 · 5s left".into(),
        },
    );
    assert!(matches!(
        &sweep(&app).cells()[4].state,
        CellState::Elsewhere(why) if why.contains("pid 7")
    ));
    assert!(render(&mut app).contains("⋯ another process"));
}

#[test]
fn enter_opens_a_running_cell_followed_a_finished_one_from_its_file() {
    let (mut app, _stop) = sweep_app((120, 30));
    let run = start_cell_3(&mut app);
    let events = run.all_events();
    let (last, head) = events.split_last().unwrap();
    // Back to a state where the last event has not arrived: a fresh app, all but the last.
    let (mut app2, _stop2) = sweep_app((120, 30));
    news(
        &mut app2,
        SweepNews::Started {
            cell: 3,
            header: Box::new(run.header.clone()),
        },
    );
    for e in head {
        news(
            &mut app2,
            SweepNews::Event {
                cell: 3,
                event: Box::new(e.clone()),
            },
        );
    }
    // Row 2, column 1: the running cell.
    key(&mut app2, KeyCode::Down);
    key(&mut app2, KeyCode::Enter);
    let opened = app2.find::<RunView>().expect("a run view in front");
    assert_eq!(opened.run().len(), head.len());
    assert!(opened.is_live(), "followed, not a snapshot");
    // The cell's next event reaches the open view too.
    news(
        &mut app2,
        SweepNews::Event {
            cell: 3,
            event: Box::new(last.clone()),
        },
    );
    assert_eq!(app2.find::<RunView>().unwrap().run().len(), run.len());
    // A finished cell opens from its file.
    key(&mut app, KeyCode::Enter);
    let work: Vec<Work> = app.take_work().into_iter().map(|(_, w)| w).collect();
    assert!(
        matches!(&work[..], [Work::OpenRun(path)]
            if path == &PathBuf::from("runs/time_mcp_000_react_r1.jsonl")),
        "{work:?}"
    );
    // A queued cell has nothing to open, and says so.
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Enter);
    assert!(app.take_work().is_empty());
    assert!(
        app.message().unwrap().contains("no run yet"),
        "{:?}",
        app.message()
    );
}

#[test]
fn f_finds_failed_cells_x_stops_and_leaving_a_running_sweep_asks() {
    let (mut app, stop) = sweep_app((120, 30));
    key(&mut app, KeyCode::Char('f'));
    assert_eq!(sweep(&app).selected().unwrap().config, "plan-exec-memory");
    key(&mut app, KeyCode::Char('f'));
    assert_eq!(
        sweep(&app).selected().unwrap().config,
        "plan-exec-memory",
        "the only failure: wraps around to itself"
    );
    key(&mut app, KeyCode::Char('q'));
    assert!(app.top_is::<ConfirmLeave>(), "asks first");
    assert!(render(&mut app).contains("Leave the sweep?"));
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('x'));
    stop.try_recv().expect("x asks the sweep to stop");
    assert!(app.message().unwrap().contains("stopping the sweep"));
    news(&mut app, SweepNews::Over);
    assert!(!sweep(&app).is_running());
    assert_eq!(
        sweep(&app).cells()[4].state,
        CellState::Missing,
        "never started: missing again"
    );
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit(), "nothing running: q quits");
    // The help lists the sweep's own keys.
    let (mut app, _stop) = sweep_app((120, 30));
    key(&mut app, KeyCode::Char('?'));
    let help = render(&mut app);
    assert!(help.contains("next cell that failed"), "{help}");
    assert_eq!(sweep(&app).mode(), cosmos_app::tui::Mode::Sweep);
}
