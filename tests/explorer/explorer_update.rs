//! Key sequences → expected state, with no terminal: input goes through the real keymap
//! (`App::map_input`) and `App::update`, background effects through `terminal::perform`.

use crate::common;

use std::sync::mpsc;

use cosmos_app::tui::App;
use cosmos_app::tui::Browser;
use cosmos_app::tui::CompareView;
use cosmos_app::tui::ConfirmCall;
use cosmos_app::tui::ConfirmLeave;
use cosmos_app::tui::HelpView;
use cosmos_app::tui::Inspector;
use cosmos_app::tui::Theme;
use cosmos_app::tui::TreeItem;
use cosmos_app::tui::WorldModelPicker;
use cosmos_app::tui::open_run;
use cosmos_app::tui::{Action, LiveSource};
use cosmos_app::tui::{Exit, View, Work};
use cosmos_app::tui::{Keymap, Mode};
use cosmos_app::tui::{Pane, RunView};
use cosmos_trajectory::event::{Event, EventBody};
use cosmos_trajectory::listing::RunSummary;
use cosmos_trajectory::run::Run;
use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
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

/// Runs the work the app asked for, answering it; says what the work was.
fn run_effects(app: &mut App) -> Vec<String> {
    let work = app.take_work();
    let asked = work.iter().map(|(_, w)| format!("{w:?}")).collect();
    for (id, w) in work {
        for a in cosmos_app::tui::perform(id, w) {
            app.update(a);
        }
    }
    asked
}

/// A synthetic SPIRAL run of 4,000 nodes written into `dir`: more events than a find searches
/// in place.
fn big_run(dir: &std::path::Path, seed: u64) -> std::path::PathBuf {
    use cosmos_trajectory::synthetic::{self, Spec};
    let path = dir.join("big.jsonl");
    let spec = Spec {
        nodes: 4_000,
        seed,
        ..Spec::default()
    };
    synthetic::write(
        &path,
        &spec,
        cosmos_engine::metrics::run::RunAccumulator::tally,
    )
    .unwrap();
    path
}

fn run_app(run: Run) -> App {
    App::new(
        RunView::new(run, Rect::new(0, 0, 120, 39)),
        Keymap::default(),
        Theme::new(true),
        (120, 40),
    )
}

/// The browser over the three hand-made runs, written to `dir`.
fn browser_over_three_runs(dir: &std::path::Path, size: (u16, u16)) -> App {
    let browser = Browser::new(
        vec![dir.to_path_buf()],
        common::three_listed(dir),
        size.1 - 1,
    );
    App::new(browser, Keymap::default(), Theme::new(true), size)
}

fn view(app: &App) -> &RunView {
    app.find::<RunView>().unwrap()
}

fn status(app: &App) -> String {
    view(app).status().unwrap()
}

fn help_scroll(app: &App) -> Option<usize> {
    app.top_as::<HelpView>().map(|h| h.scroll.offset)
}

#[test]
fn stepping_jumping_and_focus() {
    let mut app = run_app(common::plan_fails_run());
    let len = view(&app).run().len();
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
    let node2 = view(&app).run().slot_of(2).unwrap();
    assert_eq!(
        view(&app).tree().selected_item(),
        Some(TreeItem::Node(node2))
    );
    press(&mut app, "F");
    assert_eq!(view(&app).position(), 16, "no earlier failure: stays");
    press(&mut app, "T");
    assert_eq!(view(&app).position(), 15);
    send(&mut app, KeyCode::End);
    assert_eq!(view(&app).position(), len);

    assert_eq!(view(&app).focus(), Pane::Tree);
    for expected in [Pane::Timeline, Pane::Observation, Pane::Metrics, Pane::Tree] {
        send(&mut app, KeyCode::Tab);
        assert_eq!(view(&app).focus(), expected);
    }
    send(&mut app, KeyCode::BackTab);
    assert_eq!(view(&app).focus(), Pane::Metrics);
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
    assert_eq!(view(&app).tree().selection().selected, 0);
    press(&mut app, "jj");
    assert_eq!(view(&app).tree().selection().selected, 2);
    let rows = view(&app).tree().len();
    send(&mut app, KeyCode::Home);
    send(&mut app, KeyCode::End);
    // Close the root: only it remains listed.
    press(&mut app, "kk");
    send(&mut app, KeyCode::Enter);
    assert_eq!(view(&app).tree().len(), 1);
    press(&mut app, "o");
    assert_eq!(view(&app).tree().len(), rows);
}

#[test]
fn next_event_of_the_selected_node() {
    let mut app = run_app(common::plan_fails_run());
    send(&mut app, KeyCode::Home);
    // Tree is empty at 0; step until node 1 exists, then select it.
    press(&mut app, "llll");
    send(&mut app, KeyCode::Down);
    let slot = view(&app).run().slot_of(1).unwrap();
    assert_eq!(
        view(&app).tree().selected_item(),
        Some(TreeItem::Node(slot))
    );
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
    // A tick is 50 ms: a second of replay at the speed it starts at is 5 events, one at a
    // time, slow enough to follow.
    let second = |app: &mut App| {
        let from = view(app).position();
        for _ in 0..20 {
            app.update(Action::Tick);
        }
        view(app).position() - from
    };
    assert_eq!(second(&mut app), 5);
    press(&mut app, "+");
    assert!(second(&mut app) > 5, "faster moves further per second");
    send(&mut app, KeyCode::Char(' '));
    let paused_at = view(&app).position();
    app.update(Action::Tick);
    assert_eq!(view(&app).position(), paused_at);
    assert!(!app.animating());
}

#[test]
fn playing_opens_the_tree_to_each_touched_node_and_selects_it() {
    let mut app = run_app(common::plan_fails_run());
    send(&mut app, KeyCode::Char(' '));
    assert_eq!(view(&app).position(), 0);
    let mut followed = 0;
    while app.animating() {
        for _ in 0..4 {
            app.update(Action::Tick);
        }
        let v = view(&app);
        let k = v.position();
        // The node the event before the cursor is about, when it is about one.
        let Some(slot) = k
            .checked_sub(1)
            .and_then(|i| v.run().brief(i).node())
            .and_then(|id| v.run().slot_of(id))
        else {
            continue;
        };
        assert_eq!(
            v.tree().selected_item(),
            Some(TreeItem::Node(slot)),
            "at event {k} the tree selects what it touched"
        );
        followed += 1;
    }
    assert!(followed >= 5, "{followed} node events followed");
}

#[test]
fn help_overlay_swallows_keys_and_quit_quits() {
    let mut app = run_app(common::plan_fails_run());
    press(&mut app, "?");
    assert_eq!(help_scroll(&app), Some(0));
    send(&mut app, KeyCode::Home);
    assert_eq!(
        view(&app).position(),
        view(&app).run().len(),
        "keys do nothing under help"
    );
    send(&mut app, KeyCode::Esc);
    assert_eq!(help_scroll(&app), None);
    press(&mut app, "q");
    assert_eq!(app.exit, Some(Exit::Quit));
}

#[test]
fn help_scrolls_on_a_short_terminal_and_stops_at_its_end() {
    let mut app = run_app(common::plan_fails_run());
    // Tall enough for every key and the legend of every mark.
    app.update(Action::Resize(200, 80));
    press(&mut app, "?");
    press(&mut app, "jjj");
    assert_eq!(
        help_scroll(&app),
        Some(0),
        "a tall terminal shows every key: nothing to scroll"
    );
    app.update(Action::Resize(80, 24));
    press(&mut app, &"j".repeat(100));
    // The run view's keys and the global ones (some wrapped at 80 columns) and a footer line,
    // in 21 rows (24 less the status line and the overlay's two borders).
    let lines = app.top_as::<HelpView>().unwrap().rows().len() + 1;
    assert!(
        lines > Keymap::default().help(Mode::Run).len() + 1,
        "some rows wrap"
    );
    assert_eq!(
        help_scroll(&app),
        Some(lines - 21),
        "as far as the last line and no further"
    );
    press(&mut app, "k");
    assert_eq!(help_scroll(&app), Some(lines - 22));
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
    assert_eq!(view(&app).tree().selection().selected, 2);
    assert_eq!(view(&app).focus(), Pane::Tree);
}

#[test]
fn browser_filter_sort_open_mark_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = browser_over_three_runs(dir.path(), (120, 40));
    let b = |app: &App| app.find::<Browser>().unwrap().view().len();
    assert_eq!(b(&app), 3);

    press(&mut app, "/react");
    assert!(app.find::<Browser>().unwrap().prompt().is_some());
    assert_eq!(b(&app), 1);
    press(&mut app, "q");
    assert!(!app.quit(), "q is text while typing");
    // Ctrl-W deletes the word typed: it does not type a `w`.
    let ctrl = |c| TermEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    app.update(app.map_input(ctrl('w')).unwrap());
    assert_eq!(app.find::<Browser>().unwrap().filter(), "");
    assert_eq!(b(&app), 3);
    // Several words: every one must match.
    press(&mut app, "plan_exec react");
    assert_eq!(b(&app), 0, "no run is both");
    app.update(app.map_input(ctrl('u')).unwrap());
    press(&mut app, "react completed");
    assert_eq!(b(&app), 1);
    send(&mut app, KeyCode::Esc);
    assert_eq!(b(&app), 3);
    assert!(app.find::<Browser>().unwrap().prompt().is_none());

    press(&mut app, "s");
    assert_ne!(
        app.find::<Browser>().unwrap().sort().0,
        cosmos_app::tui::BrowserColumn::Started
    );

    press(&mut app, "mc");
    assert!(app.message().unwrap().contains("mark 2 to 4"));
    press(&mut app, "m");
    press(&mut app, "c");
    let work = run_effects(&mut app);
    assert!(
        matches!(&work[..], [w] if w.starts_with("Compare([") && w.matches(".jsonl").count() == 2),
        "{work:?}"
    );
    assert!(app.top_is::<CompareView>());
    send(&mut app, KeyCode::Esc);
    assert!(app.top_is::<Browser>());

    send(&mut app, KeyCode::Enter);
    run_effects(&mut app);
    assert!(app.top_is::<RunView>());
    send(&mut app, KeyCode::Esc);
    assert!(app.top_is::<Browser>());
    assert!(app.find::<RunView>().is_none());

    press(&mut app, "g");
    run_effects(&mut app);
    assert!(
        matches!(app.find::<Browser>().unwrap().groups(), cosmos_app::tui::Groups::Ready(rows) if rows.len() == 3)
    );
    send(&mut app, KeyCode::Esc);
    assert_eq!(
        app.find::<Browser>().unwrap().groups(),
        &cosmos_app::tui::Groups::Hidden
    );
    // Esc goes back, never out of the program: only q leaves.
    send(&mut app, KeyCode::Esc);
    assert!(!app.quit());
    assert!(app.message().unwrap().contains("q quits"));
    press(&mut app, "q");
    assert!(app.quit());
}

#[test]
fn live_run_grows_follows_pauses_asks_before_leaving_and_stops() {
    let source = common::plan_fails_run();
    let (stop_tx, stop_rx) = mpsc::channel();
    let live = RunView::live(
        Run::new("live".into(), source.header.clone()),
        Rect::new(0, 0, 120, 39),
        Some(stop_tx),
    );
    let mut app = App::new(live, Keymap::default(), Theme::new(true), (120, 40));

    // The agent's side: events over a channel, as `cosmos run` sends them; all but the
    // last (run_finished) for now.
    let (tx, rx) = mpsc::channel::<Event>();
    let mut events = source.all_events().clone();
    let finished = events.pop().unwrap();
    assert!(matches!(finished.body, EventBody::RunFinished { .. }));
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
        app.update(Action::LiveEvent(LiveSource::Followed, Box::new(event)));
        // The loop settles the views once per frame; here, a frame per event.
        app.settle();
        nodes_seen.push(view(&app).tree().len());
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
    assert!(status(&app).contains("LIVE (paused"));
    send(&mut app, KeyCode::Char(' '));
    assert_eq!(
        view(&app).position(),
        view(&app).run().len(),
        "resuming jumps to the newest event"
    );

    // q while the run goes on asks; Esc stays; nothing reached the agent.
    press(&mut app, "q");
    assert!(app.top_is::<ConfirmLeave>(), "q asks first");
    assert!(!app.quit());
    send(&mut app, KeyCode::Esc);
    assert!(app.top_is::<RunView>());
    send(&mut app, KeyCode::Esc);
    assert!(app.top_is::<RunView>(), "Esc never leaves");
    press(&mut app, "q");
    assert!(app.top_is::<ConfirmLeave>());
    press(&mut app, "l");
    assert_eq!(app.exit, Some(Exit::LeaveRunning), "leave, the run goes on");
    assert!(stop_rx.try_recv().is_err(), "leaving is not stopping");
    // (The loop would end here; this test goes on with the view.)
    app.exit = None;
    assert!(app.top_is::<RunView>());

    // The stop key stops without a question (it says what it does).
    press(&mut app, "x");
    assert!(stop_rx.try_recv().is_ok(), "the stop key reaches the agent");

    // The run writes its end: the status says so, and q no longer asks.
    app.update(Action::LiveEvent(LiveSource::Followed, Box::new(finished)));
    app.settle();
    assert!(
        status(&app).contains("finished (completed)"),
        "{}",
        status(&app)
    );
    press(&mut app, "q");
    assert_eq!(app.exit, Some(Exit::Quit));
}

#[test]
fn a_live_react_run_shows_its_newest_step() {
    let source = common::three_runs()
        .into_iter()
        .find(|r| r.nodes().is_empty() && r.steps().len() >= 2)
        .expect("a ReAct run with two steps");
    let live = RunView::live(
        Run::new("live".into(), source.header.clone()),
        Rect::new(0, 0, 120, 39),
        None,
    );
    let mut app = App::new(live, Keymap::default(), Theme::new(true), (120, 40));
    let mut last_step = None;
    for event in source.all_events().clone() {
        let is_call = matches!(event.body, EventBody::ToolCalled { .. });
        app.update(Action::LiveEvent(LiveSource::Followed, Box::new(event)));
        app.settle();
        if is_call {
            let steps = view(&app).run().steps().len();
            last_step = Some(steps - 1);
        }
        if let Some(step) = last_step {
            assert_eq!(
                view(&app).tree().selected_item(),
                Some(TreeItem::Step(step))
            );
        }
    }
    assert!(last_step.unwrap() >= 1);
}

#[test]
fn a_live_view_takes_only_its_own_runs_events() {
    let source = common::plan_fails_run();
    let events = source.all_events();
    let empty = || Run::new("live".into(), source.header.clone());
    let area = Rect::new(0, 0, 200, 39);
    let (stop, _stopped) = std::sync::mpsc::channel();
    let followed = RunView::live(empty(), area, None);
    let fork = RunView::fork(empty(), area, stop, 7);
    for (opened, own, other) in [
        (followed, LiveSource::Followed, LiveSource::Fork(7)),
        (fork, LiveSource::Fork(7), LiveSource::Followed),
    ] {
        let mut app = App::new(opened, Keymap::default(), Theme::new(true), (200, 40));
        // Another run's events and its loss of following are not this view's.
        app.update(Action::LiveEvent(other, Box::new(events[0].clone())));
        app.update(Action::LiveEvent(
            LiveSource::Fork(8),
            Box::new(events[0].clone()),
        ));
        app.update(Action::FollowLost(other, "another run's file went".into()));
        app.settle();
        assert_eq!(view(&app).run().len(), 0, "{own:?}");
        assert!(status(&app).contains("LIVE"), "{own:?}: {}", status(&app));
        app.update(Action::LiveEvent(own, Box::new(events[0].clone())));
        app.settle();
        assert_eq!(view(&app).run().len(), 1, "{own:?}");
    }
}

#[test]
fn a_followed_file_that_is_replaced_stops_saying_live_and_says_why() {
    let source = common::plan_fails_run();
    let live = RunView::live(
        Run::new("live".into(), source.header.clone()),
        Rect::new(0, 0, 200, 39),
        None,
    );
    let mut app = App::new(live, Keymap::default(), Theme::new(true), (200, 40));
    app.update(Action::LiveEvent(
        LiveSource::Followed,
        Box::new(source.all_events()[0].clone()),
    ));
    app.settle();
    assert!(status(&app).contains("LIVE"), "{}", status(&app));
    app.update(Action::FollowLost(
        LiveSource::Followed,
        "runs/x.jsonl was replaced by another file while followed; following stopped".into(),
    ));
    app.settle();
    let said = status(&app);
    assert!(!said.contains("LIVE"), "{said}");
    assert!(
        said.contains("NOT FOLLOWED") && said.contains("replaced"),
        "{said}"
    );
    assert!(
        said.contains("cosmos replay"),
        "the way to reopen it: {said}"
    );
}

#[test]
fn find_in_the_run_with_next_and_previous_hits() {
    let mut app = run_app(common::plan_fails_run());
    send(&mut app, KeyCode::Home);
    press(&mut app, "/");
    assert!(view(&app).search().prompt.is_some());
    press(&mut app, "q");
    assert!(!app.quit(), "q is text while finding");
    send(&mut app, KeyCode::Backspace);
    press(&mut app, "us/newyork");
    assert!(status(&app).contains("find: us/newyork"));
    send(&mut app, KeyCode::Enter);
    // The first event that mentions it is node 2's node_added (event 8).
    assert_eq!(view(&app).position(), 8);
    // The status line says which hit of how many, once.
    let hits = view(&app).search().hits();
    assert!(hits >= 2, "the call and its node mention it too");
    let line = status(&app);
    assert!(line.contains(&format!("hit 1/{hits}")), "{line}");
    assert_eq!(
        line.matches("hit").count(),
        1,
        "the count is said once: {line}"
    );
    press(&mut app, "n");
    let second = view(&app).position();
    assert!(second > 8);
    assert!(status(&app).contains(&format!("hit 2/{hits}")));
    press(&mut app, "N");
    assert_eq!(view(&app).position(), 8, "N goes back");
    press(&mut app, "N");
    assert!(app.message().unwrap().contains("wrapped"));
    // Words, not a phrase: both must be in one event.
    press(&mut app, "/");
    app.update(Action::Input(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    press(&mut app, "invalid timezone");
    send(&mut app, KeyCode::Enter);
    assert!(status(&app).contains("hit 1/"), "{}", status(&app));
    press(&mut app, "/");
    app.update(Action::Input(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    press(&mut app, "zzz-nothing");
    send(&mut app, KeyCode::Enter);
    assert!(app.message().unwrap().contains("no event matches"));
    // Esc ends the search; then n is the node's next event again.
    send(&mut app, KeyCode::Esc);
    assert!(!view(&app).search().active());
    assert!(
        app.top_is::<RunView>(),
        "Esc ended the search, not the view"
    );
}

#[test]
fn n_and_capital_n_walk_the_selected_nodes_events_both_ways() {
    let mut app = run_app(common::plan_fails_run());
    // At the end every node is listed: select node 2 (root, node 1, node 2).
    press(&mut app, "jj");
    let Some(TreeItem::Node(slot)) = view(&app).tree().selected_item() else {
        panic!("a node is selected");
    };
    let id = view(&app).run().nodes()[slot as usize].id;
    let walk = |app: &mut App, key: &str| {
        let mut seen = Vec::new();
        loop {
            let before = view(app).position();
            press(app, key);
            if view(app).position() == before {
                return seen;
            }
            seen.push(view(app).position());
            // The node stays selected as the cursor walks its events.
            assert_eq!(view(app).tree().selected_item(), Some(TreeItem::Node(slot)));
        }
    };
    let backward = walk(&mut app, "N");
    assert!(
        backward.len() >= 3,
        "node #{id} has several events: {backward:?}"
    );
    assert!(app.message().unwrap().contains("no earlier event"));
    let forward = walk(&mut app, "n");
    assert!(app.message().unwrap().contains("no later event"));
    // Forward from the first event, n stops where N did, the other way round.
    let mut expected = backward.clone();
    expected.reverse();
    expected.remove(0);
    assert_eq!(forward, expected, "n retraces N");
}

#[test]
fn inspectors_open_scroll_jump_and_close_without_leaving_the_run() {
    let mut app = run_app(common::plan_fails_run());
    // At the failure: the real call of step 2. From the timeline, i shows the event.
    press(&mut app, "<f");
    send(&mut app, KeyCode::Tab);
    let k = view(&app).position();
    press(&mut app, "i");
    let Some(inspector) = app.top_as::<Inspector>() else {
        panic!("i opens the inspector");
    };
    let text = inspector.lines().join("\n");
    assert!(
        text.contains("kind: tool_called") && text.contains("Invalid timezone"),
        "{text}"
    );
    // Keys move the inspector, not the cursor.
    press(&mut app, "jjl");
    assert_eq!(view(&app).position(), k);
    send(&mut app, KeyCode::Esc);
    assert!(app.top_is::<RunView>(), "Esc closes the inspector only");

    // In the tree, i shows the selected node: its verdict, the simulation, the real result
    // and its events, any of which Enter jumps to.
    send(&mut app, KeyCode::BackTab);
    assert_eq!(view(&app).focus(), Pane::Tree);
    press(&mut app, "i");
    let Some(inspector) = app.top_as::<Inspector>() else {
        panic!("i on a node opens the node inspector");
    };
    let text = inspector.lines().join("\n");
    for needle in [
        "node #2",
        "verdict",
        "real result (step 2, failed ✗)",
        "events of #2",
    ] {
        assert!(text.contains(needle), "{needle} in\n{text}");
    }
    press(&mut app, "n");
    let Some(inspector) = app.top_as::<Inspector>() else {
        panic!("still open");
    };
    let first_event = inspector.chosen_link().expect("n chooses the first link") as usize;
    send(&mut app, KeyCode::Enter);
    assert!(app.top_is::<RunView>());
    assert_eq!(
        view(&app).position(),
        first_event + 1,
        "the cursor is at that event"
    );

    // Enter on the timeline inspects too; at the start, before any event, i shows the run
    // itself (its header: the task, the settings).
    send(&mut app, KeyCode::Tab);
    assert_eq!(view(&app).focus(), Pane::Timeline);
    send(&mut app, KeyCode::Enter);
    assert!(app.top_is::<Inspector>());
    send(&mut app, KeyCode::Esc);
    press(&mut app, "<i");
    let Some(about) = app.top_as::<Inspector>() else {
        panic!("i at the start shows the run");
    };
    assert!(about.lines().join("\n").contains("Convert 9:00 Paris time"));
}

#[test]
fn a_request_asked_again_on_its_way_is_one_request_and_a_newer_one_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = common::plan_fails_run();
    let path = dir.path().join("one.jsonl");
    common::write_run(&run, &path);
    let other = dir.path().join("two.jsonl");
    common::write_run(&run, &other);
    let browser = Browser::new(
        vec![dir.path().to_path_buf()],
        vec![RunSummary::read(&path), RunSummary::read(&other)],
        39,
    );
    let mut app = App::new(browser, Keymap::default(), Theme::new(true), (120, 40));
    send(&mut app, KeyCode::Enter);
    let work = app.take_work();
    assert_eq!(work.len(), 1);
    // The same run asked for again while it loads: the request on its way serves both.
    send(&mut app, KeyCode::Enter);
    assert!(app.take_work().is_empty(), "merged with the one on its way");
    // Another run asked for: a new request, and the first one's answer is stale.
    send(&mut app, KeyCode::Down);
    send(&mut app, KeyCode::Enter);
    let newer = app.take_work();
    assert_eq!(newer.len(), 1);
    let (old_id, old_work) = work.into_iter().next().unwrap();
    for a in cosmos_app::tui::perform(old_id, old_work) {
        app.update(a);
    }
    assert!(app.top_is::<Browser>(), "a stale answer is dropped");
    let (id, w) = newer.into_iter().next().unwrap();
    for a in cosmos_app::tui::perform(id, w) {
        app.update(a);
    }
    assert!(app.top_is::<RunView>());
}

#[test]
fn opening_a_failing_run_lands_on_its_first_failed_call_with_the_node_selected() {
    let run = common::plan_fails_run();
    let first = run
        .first_failed_call()
        .expect("the fixture has a failed call");
    let node = match &run.all_events()[first].body {
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
    assert_eq!(view.tree().selected_item(), Some(TreeItem::Node(slot)));
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

#[test]
fn compare_opens_the_chosen_runs_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = browser_over_three_runs(dir.path(), (160, 40));
    press(&mut app, "mmm");
    press(&mut app, "c");
    run_effects(&mut app);
    let Some(compare) = app.top_as::<CompareView>() else {
        panic!("compare is open");
    };
    // The calls of all three runs share rows: no run is only "extra" to the first.
    assert!(compare.rows().len() <= 4, "{} rows", compare.rows().len());
    // The last row, the second run's column.
    send(&mut app, KeyCode::End);
    press(&mut app, "l");
    let Some(compare) = app.top_as::<CompareView>() else {
        panic!("compare is open");
    };
    let row = compare.rows().len() - 1;
    let event = compare.rows()[row][1]
        .as_ref()
        .expect("the second run makes a call on the last row")
        .event;
    let path = compare.paths()[1].clone();
    send(&mut app, KeyCode::Enter);
    run_effects(&mut app);
    let view = app.find::<RunView>().expect("the run opened");
    assert_eq!(view.run().path, path, "the chosen column's run");
    assert_eq!(view.position(), event + 1, "at that call");
    send(&mut app, KeyCode::Esc);
    assert!(app.top_is::<CompareView>(), "Esc goes back to compare");
}

#[test]
fn probing_a_node_appends_a_simulation_and_asks_before_a_real_call() {
    use cosmos_trajectory::event::EventBody;
    let dir = tempfile::tempdir().unwrap();
    // The probed run, and another that recorded the same tool (what memory predicts from).
    let run = common::plan_fails_run();
    let path = dir.path().join("probed.jsonl");
    common::write_run(&run, &path);
    let other = common::three_runs().into_iter().next().unwrap();
    common::write_run(&other, &dir.path().join("other.jsonl"));
    let size = (120, 40);
    let mut app = opened(&path, size);
    app.probe = cosmos_engine::probe::ProbeSetup::default();
    // Node 2 (root, node 1, node 2), then p: the picker lists llm and memory.
    select_node_two(&mut app);
    let Some(TreeItem::Node(slot)) = view(&app).tree().selected_item() else {
        panic!("a node is selected");
    };
    assert_eq!(view(&app).run().nodes()[slot as usize].id, 2);
    press(&mut app, "p");
    assert!(app.top_is::<WorldModelPicker>(), "p asks which world model");
    send(&mut app, KeyCode::Down);
    send(&mut app, KeyCode::Enter);
    run_effects(&mut app);
    assert!(
        app.message().unwrap().contains("#2 probed with memory"),
        "{:?}",
        app.message()
    );
    // In the file, after run_finished, and the file still reads clean.
    let reread = Run::open(&path).unwrap();
    assert!(reread.problems.is_empty(), "{:?}", reread.problems);
    let last = reread.last().unwrap();
    assert!(
        matches!(&last.body, EventBody::NodeProbed { node: 2, world_model, observation: Some(_), .. } if world_model == "memory")
    );
    // The node inspector shows it.
    press(&mut app, "i");
    let Some(inspector) = app.top_as::<Inspector>() else {
        panic!("the node inspector");
    };
    assert!(
        inspector
            .lines()
            .join("\n")
            .contains("probed after the run with memory")
    );
    send(&mut app, KeyCode::Esc);

    // Without --mcp-config, P says what a real call needs before asking anything.
    press(&mut app, "P");
    assert!(!app.top_is::<ConfirmCall>());
    assert!(
        app.message().unwrap().contains("--mcp-config"),
        "{:?}",
        app.message()
    );
    // With servers, P asks first, naming the call; Esc makes no call and appends nothing.
    app.probe.mcp_config = Some(dir.path().join("mcp.json"));
    press(&mut app, "P");
    let Some(question) = app.top_as::<ConfirmCall>() else {
        panic!("P asks before a real call");
    };
    assert!(
        question.call.contains("time:convert_time"),
        "{}",
        question.call
    );
    assert!(
        question.why.contains("not annotate it read-only"),
        "{}",
        question.why
    );
    send(&mut app, KeyCode::Esc);
    assert!(app.take_work().is_empty());
    assert_eq!(Run::open(&path).unwrap().len(), reread.len());

    // A tool its server annotates read-only is called without a question, and the run says so.
    let mut read_only = common::plan_fails_run();
    for tool in &mut read_only.header.tools {
        tool.annotations = Some(Box::new(serde_json::json!({"readOnlyHint": true})));
    }
    let path = dir.path().join("read-only.jsonl");
    common::write_run(&read_only, &path);
    let mut app = opened(&path, size);
    app.probe.mcp_config = Some(dir.path().join("mcp.json"));
    select_node_two(&mut app);
    press(&mut app, "P");
    assert!(
        !app.top_is::<ConfirmCall>(),
        "a read-only tool needs no question"
    );
    assert!(
        app.message().unwrap().contains("annotates it read-only"),
        "{:?}",
        app.message()
    );
    assert_eq!(app.take_work().len(), 1, "the real call is started");
}

#[test]
fn the_group_table_arrives_even_after_a_run_was_opened_and_closed_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = browser_over_three_runs(dir.path(), (120, 40));
    press(&mut app, "g");
    let groups = app.take_work();
    send(&mut app, KeyCode::Enter);
    for (id, w) in app.take_work() {
        for a in cosmos_app::tui::perform(id, w) {
            app.update(a);
        }
    }
    assert!(app.top_is::<RunView>());
    send(&mut app, KeyCode::Esc);
    for (id, w) in groups {
        for a in cosmos_app::tui::perform(id, w) {
            app.update(a);
        }
    }
    assert!(
        matches!(app.find::<Browser>().unwrap().groups(), cosmos_app::tui::Groups::Ready(rows) if rows.len() == 3),
        "the table is not lost"
    );
}

#[test]
fn the_mouse_moving_changes_nothing_the_wheel_keeps_messages_and_a_double_click_opens() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = browser_over_three_runs(dir.path(), (120, 40));
    let mouse = |kind| MouseEvent {
        kind,
        column: 10,
        row: 3,
        modifiers: KeyModifiers::NONE,
    };
    send(&mut app, KeyCode::Esc);
    let said = app.message().map(str::to_string);
    assert!(said.as_deref().unwrap().contains("q quits"));
    // Motion is no action at all; the wheel scrolls and the message stays.
    assert!(
        app.map_input(TermEvent::Mouse(mouse(MouseEventKind::Moved)))
            .is_none()
    );
    app.update(Action::Mouse(mouse(MouseEventKind::ScrollDown)));
    assert_eq!(app.message().map(str::to_string), said);
    // One click selects; a second on the same cell opens what Enter opens.
    app.update(Action::Mouse(mouse(MouseEventKind::Down(
        MouseButton::Left,
    ))));
    assert!(app.top_is::<Browser>());
    app.update(Action::Mouse(mouse(MouseEventKind::Down(
        MouseButton::Left,
    ))));
    run_effects(&mut app);
    assert!(app.top_is::<RunView>(), "the double click opened the run");
}

#[test]
fn a_group_table_that_could_not_be_computed_says_why_not_an_empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = browser_over_three_runs(dir.path(), (120, 40));
    press(&mut app, "g");
    let (id, _) = app
        .take_work()
        .into_iter()
        .next()
        .expect("the groups were asked for");
    app.update(Action::GroupsReady(
        id,
        Err("reading runs/x.jsonl: permission denied".into()),
    ));
    assert!(matches!(
        &app.find::<Browser>().unwrap().groups(),
        cosmos_app::tui::Groups::Failed(why) if why.contains("permission denied")
    ));
}

#[test]
fn a_note_on_a_node_is_appended_through_the_runs_writer_and_is_there_when_reopened() {
    use cosmos_trajectory::event::EventBody;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noted.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    let size = (120, 40);
    let mut app = opened(&path, size);
    // Node #2 selected in the tree, A, a note typed, Enter.
    select_node_two(&mut app);
    let Some(TreeItem::Node(slot)) = view(&app).tree().selected_item() else {
        panic!("a node is selected");
    };
    assert_eq!(view(&app).run().nodes()[slot as usize].id, 2);
    press(&mut app, "A");
    assert!(status(&app).contains("note on #2"), "{}", status(&app));
    press(&mut app, "wrong turn: Mars is no timezone");
    send(&mut app, KeyCode::Enter);
    run_effects(&mut app);
    assert!(
        app.message().unwrap().contains("note on #2"),
        "{:?}",
        app.message()
    );
    // In the file, after run_finished, and the file reads clean; in the view at once.
    let reread = Run::open(&path).unwrap();
    assert!(reread.problems.is_empty(), "{:?}", reread.problems);
    assert!(matches!(
        &reread.last().unwrap().body,
        EventBody::Annotation { node: Some(2), text, .. } if text == "wrong turn: Mars is no timezone"
    ));
    assert_eq!(view(&app).run().len(), reread.len());
    // Find finds it, and the node inspector lists it among the node's events.
    press(&mut app, "/Mars timezone");
    send(&mut app, KeyCode::Enter);
    assert!(status(&app).contains("hit 1/1"), "{}", status(&app));
    send(&mut app, KeyCode::Esc);
    press(&mut app, "i");
    let Some(inspector) = app.top_as::<Inspector>() else {
        panic!("the node inspector");
    };
    assert!(inspector.lines().join("\n").contains("wrong turn"));
}

#[test]
fn a_find_over_a_big_run_is_searched_in_the_background_and_input_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = big_run(dir.path(), 9);
    let run = Run::open(&path).unwrap();
    assert!(run.len() > cosmos_app::tui::SEARCH_IN_PLACE);
    let mut app = run_app(run);
    send(&mut app, KeyCode::Home);
    press(&mut app, "/convert_time");
    send(&mut app, KeyCode::Enter);
    // The find is work for a background thread; the view says so and keys still move it.
    let work = app.take_work();
    assert!(
        matches!(&work[..], [(_, Work::Job(job))] if job.kind() == "find"),
        "{work:?}"
    );
    assert!(
        status(&app).contains("finding \"convert_time\""),
        "{}",
        status(&app)
    );
    press(&mut app, "l");
    assert_eq!(view(&app).position(), 1, "input is not frozen meanwhile");
    // Its answer gives the hits, and the cursor goes to the first after it.
    for (id, w) in work {
        for a in cosmos_app::tui::perform(id, w) {
            app.update(a);
        }
    }
    let hits = view(&app).search().hits();
    assert!(hits > 100, "{hits}");
    assert!(
        status(&app).contains(&format!("hit 1/{hits}")),
        "{}",
        status(&app)
    );
    let at = view(&app).position() - 1;
    assert!(
        view(&app).run().event(at).body.kind() == "node_added"
            || view(&app).run().event(at).body.kind() == "tool_called"
            || view(&app).run().event(at).body.kind() == "node_simulated"
    );
}

#[test]
fn a_background_find_that_fails_says_why_and_ends_the_find() {
    let dir = tempfile::tempdir().unwrap();
    let path = big_run(dir.path(), 3);
    let mut app = run_app(Run::open(&path).unwrap());
    press(&mut app, "/tokyo");
    send(&mut app, KeyCode::Enter);
    let work = app.take_work();
    assert!(
        matches!(&work[..], [(_, Work::Job(job))] if job.kind() == "find"),
        "{work:?}"
    );
    // The file goes away before the find reads it: a real failure, answered as any is.
    std::fs::remove_file(&path).unwrap();
    for (id, w) in work {
        for a in cosmos_app::tui::perform(id, w) {
            app.update(a);
        }
    }
    assert!(
        app.message().unwrap().contains("find failed: opening"),
        "{:?}",
        app.message()
    );
    assert!(!view(&app).search().active());
    assert!(!status(&app).contains("finding"), "{}", status(&app));
}

#[test]
fn the_notes_list_shows_every_note_and_enter_goes_to_what_it_is_about() {
    use cosmos_app::tui::NotesView;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noted.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    common::annotate(&path, Some(2), None, "wrong turn here", 900);
    common::annotate(&path, None, Some(3), "the third event", 950);
    let run = Run::open(&path).unwrap();
    let node_2_at = run.nodes()[run.slot_of(2).unwrap() as usize].added_at as usize;
    let event_3_at = run.briefs().iter().position(|b| b.seq == 3).unwrap();
    let mut app = run_app(run);
    press(&mut app, "L");
    let Some(notes) = app.top_as::<NotesView>() else {
        panic!("the notes list in front");
    };
    let about: Vec<(&str, &str, usize)> = notes
        .notes()
        .iter()
        .map(|n| (n.about.as_str(), n.text.as_str(), n.go_to))
        .collect();
    assert_eq!(
        about,
        [
            ("#2", "wrong turn here", node_2_at),
            ("event 3", "the third event", event_3_at)
        ]
    );
    // Its help lists a list's keys, not compare's.
    press(&mut app, "?");
    let help = app
        .top_as::<cosmos_app::tui::HelpView>()
        .expect("the help in front");
    let said: Vec<&str> = help.rows().iter().map(|(_, what)| what.as_str()).collect();
    assert!(
        said.iter()
            .any(|w| w.contains("a note: go to what it is about")),
        "{said:?}"
    );
    assert!(!said.iter().any(|w| w.contains("compare:")), "{said:?}");
    press(&mut app, "?");
    assert!(app.top_is::<NotesView>());
    // The second note: Enter closes the list and puts the cursor just after its event.
    send(&mut app, KeyCode::Down);
    send(&mut app, KeyCode::Enter);
    assert!(app.top_is::<RunView>());
    assert_eq!(view(&app).position(), event_3_at + 1);
}

#[test]
fn a_note_that_cannot_be_written_says_so_as_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noted.jsonl");
    common::write_run(&common::plan_fails_run(), &path);
    let mut app = run_app(Run::open(&path).unwrap());
    // The file goes away before the note is written.
    std::fs::remove_file(&path).unwrap();
    press(&mut app, "A");
    press(&mut app, "lost");
    send(&mut app, KeyCode::Enter);
    run_effects(&mut app);
    let said = app.message().unwrap_or_default().to_string();
    assert!(said.starts_with("the note was not added"), "{said}");
}

#[test]
fn a_live_calls_progress_shows_in_the_run_view_while_it_runs() {
    let source = common::three_runs()
        .into_iter()
        .find(|r| r.nodes().is_empty() && !r.steps().is_empty())
        .expect("a ReAct run");
    let live = RunView::live(
        Run::new("live".into(), source.header.clone()),
        Rect::new(0, 0, 120, 39),
        None,
    );
    let mut app = App::new(live, Keymap::default(), Theme::new(true), (120, 40));
    // The run up to its first call, then the server's report on that call, still running.
    let events = source.all_events();
    let first_call = events
        .iter()
        .position(|e| matches!(e.body, EventBody::ToolCalled { .. }))
        .unwrap();
    let mut seq = 0;
    for event in &events[..first_call] {
        seq = event.seq;
        app.update(Action::LiveEvent(
            LiveSource::Followed,
            Box::new(event.clone()),
        ));
    }
    let tool = match &events[first_call].body {
        EventBody::ToolCalled { tool, .. } => tool.clone(),
        _ => unreachable!(),
    };
    app.update(Action::LiveEvent(
        LiveSource::Followed,
        Box::new(Event {
            seq: seq + 1,
            t_ms: events[first_call].t_ms,
            body: EventBody::CallProgress {
                step: 1,
                tool,
                progress: 3.0,
                total: Some(4.0),
                message: Some("Step 3 of 4".into()),
            },
        }),
    ));
    app.settle();
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let screen = terminal.backend().to_string();
    assert!(
        screen.contains("call_progress") && screen.contains("1. ▰▰▰▰▰▰▰▰▱▱ 3/4 time:convert_time"),
        "{screen}"
    );
}

/// The explorer opened on the run file at `path`, as `cosmos replay FILE` opens it.
fn opened(path: &std::path::Path, size: (u16, u16)) -> App {
    App::on(
        open_run(
            Run::open(path).unwrap(),
            Rect::new(0, 0, size.0, size.1 - 1),
        ),
        Keymap::default(),
        Theme::new(true),
        size,
    )
}

/// Selects node #2 of `common::plan_fails_run` (root, node 1, node 2) in the tree.
fn select_node_two(app: &mut App) {
    send(app, KeyCode::Home);
    send(app, KeyCode::End);
    press(app, "kkkjj");
}

/// `path` read in parts of 500 and then 4,000 events: the run begun, its first part (not
/// added yet), and the later parts as the reader hands them over.
fn read_in_parts(
    path: &std::path::Path,
) -> (
    Run,
    cosmos_trajectory::run::Part,
    mpsc::Receiver<cosmos_trajectory::run::RunPart>,
) {
    read_in_parts_of(path, 500, 4_000)
}

/// `path` read in a first part of `first` events and later parts of `later`.
fn read_in_parts_of(
    path: &std::path::Path,
    first: usize,
    later: usize,
) -> (
    Run,
    cosmos_trajectory::run::Part,
    mpsc::Receiver<cosmos_trajectory::run::RunPart>,
) {
    use cosmos_trajectory::run::RunPart;
    let (tx, parts) = mpsc::channel();
    let reading = path.to_path_buf();
    std::thread::spawn(move || {
        Run::read_in_parts(&reading, first, later, |part| tx.send(part).is_ok()).unwrap();
    });
    let Ok(RunPart::Begun(run)) = parts.recv() else {
        panic!("the header first")
    };
    let Ok(RunPart::More(first)) = parts.recv() else {
        panic!("then the first part")
    };
    (*run, first, parts)
}

/// The explorer at 120x40 on a run's first part, `read` of `total` bytes read.
fn reading_app(run: Run, read: u64, total: u64) -> App {
    App::new(
        RunView::reading(run, Rect::new(0, 0, 120, 39), read, total),
        Keymap::default(),
        Theme::new(true),
        (120, 40),
    )
}

/// Hands the view a part the reader read, as the explorer's reading thread does.
fn hand_over(app: &mut App, path: &std::path::Path, part: cosmos_trajectory::run::Part) {
    app.update(Action::RunRead(
        path.to_path_buf(),
        std::sync::Arc::new(std::sync::Mutex::new(Some(part))),
    ));
}

fn screen(app: &mut App) -> String {
    use ratatui::{Terminal, backend::TestBackend};
    app.settle();
    let mut terminal = Terminal::new(TestBackend::new(app.size.0, app.size.1)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    terminal.backend().to_string()
}

/// A big run read in parts: the first screen comes from the first part, before the reader has
/// finished, saying how far it has read; once the last part is in, the screen is the one
/// opening the whole file shows. Driven by the reader's parts, never by a wait.
#[test]
fn a_big_run_shows_its_first_screen_before_the_rest_is_read_and_the_same_screen_once_read() {
    use cosmos_trajectory::run::RunPart;
    let dir = tempfile::tempdir().unwrap();
    let path = big_run(dir.path(), 7);
    let today = screen(&mut opened(&path, (120, 40)));

    let (mut run, first, parts) = read_in_parts(&path);
    let (read, total) = (first.read, first.total);
    assert!(!run.extend(first), "a big file is more than its first part");
    assert_eq!(run.len(), 500);
    let mut app = reading_app(run, read, total);
    let first_screen = screen(&mut app);
    let pct = read * 100 / total;
    assert!(
        first_screen.contains(&format!("reading … {pct}%")),
        "{first_screen}"
    );
    assert!(first_screen.contains("/500"), "{first_screen}");
    let mut parts_after = 0;
    let (mut read_events, mut last_pct, mut seen_meanwhile) = (500, pct, 0);
    for part in parts {
        let RunPart::More(part) = part else {
            panic!("parts only")
        };
        parts_after += 1;
        read_events += part.len();
        let pct = part.read * 100 / part.total;
        hand_over(&mut app, &path, part);
        if app.top_as::<RunView>().unwrap().is_reading() {
            // Untouched at the end of what is read, the view fills in as the reading goes.
            let meanwhile = screen(&mut app);
            assert_eq!(app.top_as::<RunView>().unwrap().position(), read_events);
            assert!(
                meanwhile.contains(&format!("{read_events}/{read_events}")),
                "{meanwhile}"
            );
            assert!(pct > last_pct, "{pct}% after {last_pct}%");
            assert!(
                meanwhile.contains(&format!("reading … {pct}%")),
                "{meanwhile}"
            );
            last_pct = pct;
            seen_meanwhile += 1;
        }
    }
    assert_eq!(seen_meanwhile, parts_after - 1, "every part but the last");
    assert!(parts_after > 2, "read in several parts");
    let view = app.top_as::<RunView>().unwrap();
    assert!(!view.is_reading());
    assert_eq!(
        screen(&mut app),
        today,
        "the same screen as opening it whole"
    );
}

/// A run with a failed call, read in parts, opens where opening it whole opens (at that call),
/// with the same screen: whether the call is in the first part or in a later one.
#[test]
fn a_run_read_in_parts_opens_at_its_first_failed_call_as_the_whole_run_does() {
    use cosmos_trajectory::run::RunPart;
    let dir = tempfile::tempdir().unwrap();
    // The first seed whose run fails a real call (synthetic runs fail one in five).
    let (path, failed) = (1..)
        .find_map(|seed: u64| {
            let folder = dir.path().join(seed.to_string());
            std::fs::create_dir(&folder).unwrap();
            let path = big_run(&folder, seed);
            let failed = Run::open(&path).unwrap().first_failed_call()?;
            Some((path, failed))
        })
        .unwrap();
    let today = screen(&mut opened(&path, (120, 40)));
    assert!(today.contains("opened at the first failed call"), "{today}");
    for (first, later, in_the_head) in [(500, 3_000, false), (failed + 1, 2, true)] {
        let (mut run, head, parts) = read_in_parts_of(&path, first, later);
        let (read, total) = (head.read, head.total);
        assert!(!run.extend(head));
        let mut app = reading_app(run, read, total);
        let first_screen = screen(&mut app);
        assert_eq!(
            first_screen.contains("opened at the first failed call"),
            in_the_head,
            "{first_screen}"
        );
        let mut later_parts = 0;
        for part in parts {
            let RunPart::More(part) = part else {
                panic!("parts only")
            };
            later_parts += 1;
            hand_over(&mut app, &path, part);
            // Drawn between parts, as the explorer draws while it reads.
            screen(&mut app);
        }
        assert!(later_parts > 1, "read in several parts ({in_the_head})");
        assert_eq!(app.top_as::<RunView>().unwrap().position(), failed + 1);
        assert_eq!(
            screen(&mut app),
            today,
            "the whole open's screen (failed call in the first part: {in_the_head})"
        );
    }
}

/// Keys work on what is read; End while reading follows the end as it is read and ends there.
#[test]
fn end_while_reading_waits_for_the_end() {
    use cosmos_trajectory::run::RunPart;
    let dir = tempfile::tempdir().unwrap();
    let path = big_run(dir.path(), 8);
    let whole_len = Run::open(&path).unwrap().len();
    let (mut run, first, parts) = read_in_parts(&path);
    let (read, total) = (first.read, first.total);
    run.extend(first);
    let mut app = reading_app(run, read, total);
    app.update(Action::Do(cosmos_app::tui::Command::StepBack));
    assert_eq!(
        app.top_as::<RunView>().unwrap().position(),
        499,
        "keys work meanwhile"
    );
    app.update(Action::Do(cosmos_app::tui::Command::Bottom));
    let Ok(RunPart::More(second)) = parts.recv() else {
        panic!("a second part")
    };
    let in_two = 500 + second.len();
    hand_over(&mut app, &path, second);
    assert_eq!(
        app.top_as::<RunView>().unwrap().position(),
        in_two,
        "at the end read so far"
    );
    for part in parts {
        let RunPart::More(part) = part else { panic!() };
        hand_over(&mut app, &path, part);
    }
    assert_eq!(app.top_as::<RunView>().unwrap().position(), whole_len);
}
