//! Random input against the explorer: sequences of keys, mouse clicks and resizes go through
//! the real keymap and `App::update` over a ReAct run, a SPIRAL run and an empty run, with a
//! frame drawn on `TestBackend` after every input. Nothing may panic.
//!
//! `PROPTEST_CASES` sets the number of cases (default below); each case is up to 80 inputs.

use crate::common;

use cosmos_app::tui::App;
use cosmos_app::tui::Keymap;
use cosmos_app::tui::RunView;
use cosmos_app::tui::Theme;
use cosmos_trajectory::event::AgentKind;
use cosmos_trajectory::run::Run;
use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use proptest::prelude::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

/// Cases when `PROPTEST_CASES` is not set.
const CASES: u32 = 400;

#[derive(Debug, Clone)]
enum Input {
    Key(KeyCode, KeyModifiers),
    Click(u16, u16),
    Scroll(u16, u16, bool),
    Resize(u16, u16),
}

fn input() -> impl Strategy<Value = Input> {
    let chars = prop::sample::select(
        "hjklHJKLtTfFnNiIeEcCgGmMsSpP/?+-0123456789 uwabxyz"
            .chars()
            .collect::<Vec<_>>(),
    );
    let codes = prop::sample::select(vec![
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Backspace,
        KeyCode::Delete,
    ]);
    let mods = prop::sample::select(vec![
        KeyModifiers::NONE,
        KeyModifiers::NONE,
        KeyModifiers::SHIFT,
        KeyModifiers::CONTROL,
    ]);
    prop_oneof![
        6 => (chars, mods.clone()).prop_map(|(c, m)| Input::Key(KeyCode::Char(c), m)),
        6 => (codes, mods).prop_map(|(c, m)| Input::Key(c, m)),
        1 => (0u16..260, 0u16..80).prop_map(|(x, y)| Input::Click(x, y)),
        1 => (0u16..260, 0u16..80, any::<bool>()).prop_map(|(x, y, d)| Input::Scroll(x, y, d)),
        1 => (1u16..260, 1u16..80).prop_map(|(w, h)| Input::Resize(w, h)),
    ]
}

fn runs() -> Vec<Run> {
    let react = common::three_runs()
        .into_iter()
        .find(|r| r.header.agent.kind == AgentKind::React)
        .expect("a ReAct run");
    let empty = common::run_of(
        "runs/empty.jsonl",
        common::header("t", AgentKind::Spiral, Some("llm")),
        vec![],
    );
    vec![react, common::revised_run(), empty]
}

fn drive(run: Run, inputs: &[Input]) {
    let size = (80u16, 24u16);
    let view = RunView::new(run, Rect::new(0, 0, size.0, size.1 - 1));
    let mut app = App::new(view, Keymap::default(), Theme::new(true), size);
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    for input in inputs {
        let event = match input {
            Input::Key(code, mods) => TermEvent::Key(KeyEvent::new(*code, *mods)),
            Input::Click(x, y) | Input::Scroll(x, y, _) => {
                let kind = match input {
                    Input::Scroll(_, _, true) => MouseEventKind::ScrollDown,
                    Input::Scroll(_, _, false) => MouseEventKind::ScrollUp,
                    _ => MouseEventKind::Down(MouseButton::Left),
                };
                TermEvent::Mouse(MouseEvent {
                    kind,
                    column: *x,
                    row: *y,
                    modifiers: KeyModifiers::NONE,
                })
            }
            Input::Resize(w, h) => {
                terminal = Terminal::new(TestBackend::new(*w, *h)).unwrap();
                TermEvent::Resize(*w, *h)
            }
        };
        if let Some(action) = app.map_input(event) {
            app.update(action);
        }
        // Background work (opening, comparing) is answered in line, as the terminal loop does;
        // a fork is a child process of the real binary (tests/agents/engine_fork.rs starts one), so
        // it is left out here.
        for (id, work) in app.take_work() {
            if matches!(work, cosmos_app::tui::Work::Fork(_)) {
                continue;
            }
            for action in cosmos_app::tui::perform(id, work) {
                app.update(action);
            }
        }
        if app.quit() {
            return;
        }
        app.settle();
        terminal.draw(|f| app.draw(f)).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(CASES),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_input_never_panics(which in 0usize..3, inputs in prop::collection::vec(input(), 0..80)) {
        drive(runs().swap_remove(which), &inputs);
    }
}

/// The two sequences the hardening issue found, kept as plain regression tests.
#[test]
fn known_panics_stay_fixed() {
    let react = || runs().swap_remove(0);
    // `C` (close all) on a ReAct run, which has no nodes.
    drive(
        react(),
        &[Input::Key(KeyCode::Char('C'), KeyModifiers::SHIFT)],
    );
    // Stepping past the last event with the focus off the tree.
    for run in runs() {
        drive(
            run,
            &[
                Input::Key(KeyCode::Tab, KeyModifiers::NONE),
                Input::Key(KeyCode::End, KeyModifiers::NONE),
                Input::Key(KeyCode::Right, KeyModifiers::NONE),
            ],
        );
    }
}
