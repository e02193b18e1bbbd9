//! Key sequences → expected state, with no terminal: input goes through the real keymap
//! (`App::map_input`) and `App::update`, background effects through `terminal::perform`.

mod common;

use std::path::PathBuf;
use std::sync::mpsc;

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use mcp_cosmos::trajectory::event::{Event, EventBody};
use mcp_cosmos::trajectory::listing::RunSummary;
use mcp_cosmos::trajectory::run::Run;
use mcp_cosmos::tui::action::Action;
use mcp_cosmos::tui::app::{App, Effect, Screen};
use mcp_cosmos::tui::browser::Browser;
use mcp_cosmos::tui::keymap::Keymap;
use mcp_cosmos::tui::run_view::tree::Item;
use mcp_cosmos::tui::run_view::{Pane, RunView};
use mcp_cosmos::tui::theme::Theme;
use ratatui::layout::Rect;

fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        send(app, KeyCode::Char(c));
    }
}

fn send(app: &mut App, code: KeyCode) {
    let ev = TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE));
    if let Some(a) = app.map_input(ev) {
        app.update(a);
    }
}

fn run_effects(app: &mut App) -> Vec<Effect> {
    let effects = app.take_effects();
    for e in effects.clone() {
        for a in mcp_cosmos::tui::terminal::perform(e) {
            app.update(a);
        }
    }
    effects
}

fn run_app(run: Run) -> App {
    App::with_run(
        RunView::new(run, Rect::new(0, 0, 120, 39)),
        Keymap::default(),
        Theme::new(true),
        (120, 40),
    )
}

fn view(app: &App) -> &RunView {
    app.run.as_ref().unwrap()
}

#[test]
fn stepping_jumping_and_focus() {
    let mut app = run_app(common::plan_fails_run());
    let len = view(&app).run.len();
    assert_eq!(view(&app).position(), len, "opens at the end");
    send(&mut app, KeyCode::Home);
    assert_eq!(view(&app).position(), 0);
    press(&mut app, "lll");
    assert_eq!(view(&app).position(), 3);
    send(&mut app, KeyCode::Left);
    assert_eq!(view(&app).position(), 2);
    press(&mut app, "t");
    // Event 15 (index 14) is the first tool call; the cursor lands just after it.
    assert_eq!(view(&app).position(), 15);
    assert_eq!(view(&app).metrics().tool_calls, 1);
    press(&mut app, "f");
    assert_eq!(view(&app).position(), 16);
    assert_eq!(view(&app).metrics().tool_call_success_rate, Some(0.5));
    // The failing step's node is selected and shown beside its simulation.
    let node2 = view(&app).run.slot_of(2).unwrap();
    assert_eq!(view(&app).tree.selected_item(), Some(Item::Node(node2)));
    press(&mut app, "F");
    assert_eq!(view(&app).position(), 16, "no earlier failure: stays");
    press(&mut app, "T");
    assert_eq!(view(&app).position(), 15);
    send(&mut app, KeyCode::End);
    assert_eq!(view(&app).position(), len);

    assert_eq!(view(&app).focus, Pane::Tree);
    for expected in [Pane::Timeline, Pane::Observation, Pane::Metrics, Pane::Tree] {
        send(&mut app, KeyCode::Tab);
        assert_eq!(view(&app).focus, expected);
    }
    send(&mut app, KeyCode::BackTab);
    assert_eq!(view(&app).focus, Pane::Metrics);
}

#[test]
fn timeline_focus_moves_the_cursor_and_tree_keys_move_selection() {
    let mut app = run_app(common::plan_fails_run());
    send(&mut app, KeyCode::Home);
    send(&mut app, KeyCode::Tab);
    press(&mut app, "jjjj");
    assert_eq!(view(&app).position(), 4);
    press(&mut app, "k");
    assert_eq!(view(&app).position(), 3);
    send(&mut app, KeyCode::End);
    send(&mut app, KeyCode::BackTab);
    assert_eq!(view(&app).tree.selected, 0);
    press(&mut app, "jj");
    assert_eq!(view(&app).tree.selected, 2);
    let rows = view(&app).tree.len();
    send(&mut app, KeyCode::Home);
    send(&mut app, KeyCode::End);
    // Close the root: only it remains listed.
    press(&mut app, "kk");
    send(&mut app, KeyCode::Enter);
    assert_eq!(view(&app).tree.len(), 1);
    press(&mut app, "o");
    assert_eq!(view(&app).tree.len(), rows);
}

#[test]
fn next_event_of_the_selected_node() {
    let mut app = run_app(common::plan_fails_run());
    send(&mut app, KeyCode::Home);
    // Tree is empty at 0; step until node 1 exists, then select it.
    press(&mut app, "llll");
    send(&mut app, KeyCode::Down);
    let slot = view(&app).run.slot_of(1).unwrap();
    assert_eq!(view(&app).tree.selected_item(), Some(Item::Node(slot)));
    press(&mut app, "n");
    // The next event about node 1 is its simulation (event 5).
    assert_eq!(view(&app).position(), 5);
}

#[test]
fn play_pause_and_speed() {
    let mut app = run_app(common::big_run(300));
    send(&mut app, KeyCode::Char(' '));
    assert_eq!(view(&app).position(), 0, "play from the end restarts");
    assert!(app.animating());
    app.update(Action::Tick);
    let after_one = view(&app).position();
    assert!(after_one > 0);
    press(&mut app, "+");
    app.update(Action::Tick);
    assert!(
        view(&app).position() - after_one > after_one,
        "faster moves further per tick"
    );
    send(&mut app, KeyCode::Char(' '));
    let paused_at = view(&app).position();
    app.update(Action::Tick);
    assert_eq!(view(&app).position(), paused_at);
    assert!(!app.animating());
}

#[test]
fn help_overlay_swallows_keys_and_quit_quits() {
    let mut app = run_app(common::plan_fails_run());
    press(&mut app, "?");
    assert_eq!(app.help, Some(0));
    send(&mut app, KeyCode::Home);
    assert_eq!(
        view(&app).position(),
        view(&app).run.len(),
        "keys do nothing under help"
    );
    send(&mut app, KeyCode::Esc);
    assert_eq!(app.help, None);
    press(&mut app, "q");
    assert!(app.quit);
}

#[test]
fn help_scrolls_on_a_short_terminal_and_stops_at_its_end() {
    let mut app = run_app(common::plan_fails_run());
    press(&mut app, "?");
    press(&mut app, "jjj");
    assert_eq!(
        app.help,
        Some(0),
        "a tall terminal shows every key: nothing to scroll"
    );
    app.update(Action::Resize(80, 24));
    press(&mut app, &"j".repeat(100));
    let lines = Keymap::default().help().len() + 1;
    assert_eq!(
        app.help,
        Some(lines - 21),
        "as far as the last line and no further"
    );
    press(&mut app, "k");
    assert_eq!(app.help, Some(lines - 22));
}

#[test]
fn mouse_click_selects_a_tree_row() {
    let mut app = run_app(common::plan_fails_run());
    let click = MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 5,
        row: 3,
        modifiers: KeyModifiers::NONE,
    };
    app.update(Action::Mouse(click));
    assert_eq!(view(&app).tree.selected, 2);
    assert_eq!(view(&app).focus, Pane::Tree);
}

#[test]
fn browser_filter_sort_open_mark_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let mut summaries = Vec::new();
    for run in common::three_runs() {
        let path = dir.path().join(run.path.file_name().unwrap());
        let mut w = mcp_cosmos::trajectory::writer::Writer::create(
            &path,
            &run.header,
            Default::default(),
            Some(mcp_cosmos::metrics::run::RunAccumulator::tally(&run.header)),
        )
        .unwrap();
        for e in &run.events {
            w.write(e.t_ms, e.body.clone()).unwrap();
        }
        summaries.push(RunSummary::read(&path));
    }
    let browser = Browser::new(vec![PathBuf::from(dir.path())], summaries, 39);
    let mut app = App::with_browser(browser, Keymap::default(), Theme::new(true), (120, 40));
    let b = |app: &App| app.browser.as_ref().unwrap().view().len();
    assert_eq!(b(&app), 3);

    press(&mut app, "/react");
    assert!(app.browser.as_ref().unwrap().typing);
    assert_eq!(b(&app), 1);
    press(&mut app, "q");
    assert!(!app.quit, "q is text while typing");
    send(&mut app, KeyCode::Esc);
    assert_eq!(b(&app), 3);
    assert!(!app.browser.as_ref().unwrap().typing);

    press(&mut app, "s");
    assert_ne!(
        app.browser.as_ref().unwrap().sort.0,
        mcp_cosmos::tui::browser::Column::Started
    );

    press(&mut app, "mc");
    assert!(app.message.as_ref().unwrap().contains("mark 2 to 4"));
    press(&mut app, "m");
    press(&mut app, "c");
    let effects = run_effects(&mut app);
    assert!(matches!(&effects[..], [Effect::LoadCompare(p)] if p.len() == 2));
    assert_eq!(app.screen, Screen::Compare);
    send(&mut app, KeyCode::Esc);
    assert_eq!(app.screen, Screen::Browser);

    send(&mut app, KeyCode::Enter);
    run_effects(&mut app);
    assert_eq!(app.screen, Screen::Run);
    send(&mut app, KeyCode::Esc);
    assert_eq!(app.screen, Screen::Browser);
    assert!(app.run.is_none());

    press(&mut app, "g");
    run_effects(&mut app);
    assert!(
        matches!(&app.browser.as_ref().unwrap().groups, mcp_cosmos::tui::browser::Groups::Ready(rows) if rows.len() == 3)
    );
    send(&mut app, KeyCode::Esc);
    assert_eq!(
        app.browser.as_ref().unwrap().groups,
        mcp_cosmos::tui::browser::Groups::Hidden
    );
    send(&mut app, KeyCode::Esc);
    assert!(app.quit);
}

#[test]
fn live_run_grows_follows_pauses_and_stops() {
    let source = common::plan_fails_run();
    let (stop_tx, stop_rx) = mpsc::channel();
    let live = RunView::live(
        Run::new("live".into(), source.header.clone()),
        Rect::new(0, 0, 120, 39),
        Some(stop_tx),
    );
    let mut app = App::with_run(live, Keymap::default(), Theme::new(true), (120, 40));

    // The agent's side: events over a channel, as `cosmos run` will send them.
    let (tx, rx) = mpsc::channel::<Event>();
    let events = source.events.clone();
    let feeder = std::thread::spawn(move || {
        for e in events {
            tx.send(e).unwrap();
        }
    });
    let mut nodes_seen = Vec::new();
    for (i, event) in rx.iter().enumerate() {
        if i == 12 {
            // Pause following: later events arrive but the cursor stays.
            send(&mut app, KeyCode::Char(' '));
        }
        app.update(Action::LiveEvent(Box::new(event)));
        nodes_seen.push(view(&app).tree.len());
        if i < 12 {
            assert_eq!(view(&app).position(), i + 1, "follows the newest event");
        } else {
            assert_eq!(view(&app).position(), 12, "paused");
        }
    }
    feeder.join().unwrap();
    assert!(
        nodes_seen.windows(2).all(|w| w[0] <= w[1]) && nodes_seen[11] == 4,
        "the tree grows: {nodes_seen:?}"
    );
    assert!(view(&app).status().contains("LIVE (paused)"));
    send(&mut app, KeyCode::Char(' '));
    assert_eq!(
        view(&app).position(),
        view(&app).run.len(),
        "resuming jumps to the newest event"
    );
    press(&mut app, "x");
    assert!(stop_rx.try_recv().is_ok(), "the stop key reaches the agent");
    assert!(matches!(
        view(&app).run.events.last().unwrap().body,
        EventBody::RunFinished { .. }
    ));
}

#[test]
fn find_in_the_timeline() {
    let mut app = run_app(common::plan_fails_run());
    send(&mut app, KeyCode::Home);
    press(&mut app, "/");
    assert!(view(&app).finding);
    press(&mut app, "q");
    assert!(!app.quit, "q is text while finding");
    send(&mut app, KeyCode::Backspace);
    press(&mut app, "us/newyork");
    assert!(view(&app).status().contains("find: us/newyork"));
    send(&mut app, KeyCode::Enter);
    // The first event that mentions it is node 2's node_added (event 8).
    assert_eq!(view(&app).position(), 8);
    assert!(view(&app).message.as_ref().unwrap().contains("found"));
    press(&mut app, "/");
    press(&mut app, "zzz-nothing");
    send(&mut app, KeyCode::Enter);
    assert_eq!(view(&app).position(), 8);
    assert!(
        view(&app)
            .message
            .as_ref()
            .unwrap()
            .contains("no event matches")
    );
}

#[test]
fn inspector_opens_scrolls_and_closes_without_leaving_the_run() {
    let mut app = run_app(common::plan_fails_run());
    // At the failure: the real call of step 2.
    press(&mut app, "<f");
    let k = view(&app).position();
    press(&mut app, "i");
    let inspector = view(&app)
        .inspector
        .as_ref()
        .expect("i opens the inspector");
    let text = inspector.lines().join("\n");
    assert!(
        text.contains("kind: tool_called") && text.contains("Invalid timezone"),
        "{text}"
    );
    // Keys move the inspector, not the cursor.
    press(&mut app, "jjl");
    assert_eq!(view(&app).position(), k);
    send(&mut app, KeyCode::Esc);
    assert!(view(&app).inspector.is_none());
    assert_eq!(app.screen, Screen::Run, "Esc closes the inspector only");
    // Enter on the timeline inspects too; at the start there is nothing to show.
    send(&mut app, KeyCode::Tab);
    assert_eq!(view(&app).focus, Pane::Timeline);
    send(&mut app, KeyCode::Enter);
    assert!(view(&app).inspector.is_some());
    send(&mut app, KeyCode::Enter);
    press(&mut app, "<i");
    assert!(view(&app).inspector.is_none());
    assert!(view(&app).message.as_deref().unwrap().contains("no event"));
}

#[test]
fn opening_a_failing_run_lands_on_its_first_failed_call_with_the_node_selected() {
    let run = common::plan_fails_run();
    let first = run
        .first_failed_call()
        .expect("the fixture has a failed call");
    let node = match &run.events[first].body {
        EventBody::ToolCalled { node, .. } => node.expect("a planned call"),
        other => panic!("{other:?}"),
    };
    let slot = run.slot_of(node).unwrap();
    let view = RunView::opened(run, Rect::new(0, 0, 120, 39));
    assert_eq!(
        view.position(),
        first + 1,
        "the cursor stands just after the failed call"
    );
    assert_eq!(view.tree.selected_item(), Some(Item::Node(slot)));
    // A run without a failed call opens at its end, as before.
    let clean = common::three_runs()
        .into_iter()
        .find(|r| r.first_failed_call().is_none())
        .expect("a run without a failed call");
    let end = clean.len();
    assert_eq!(
        RunView::opened(clean, Rect::new(0, 0, 120, 39)).position(),
        end
    );
}
