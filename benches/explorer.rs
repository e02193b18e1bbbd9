//! Explorer benchmark: prints figures, asserts nothing. `cargo bench --bench explorer`
//! (add `-- --quick` for a tenth of the data). Targets from issue 5 beside each figure.

mod common;

use std::path::PathBuf;

use common::{big_run_file, folder_bytes, folder_of_runs, ms, pct, scale, time};
use mcp_cosmos::trajectory::listing::list_runs;
use mcp_cosmos::trajectory::run::Run;
use mcp_cosmos::tui::action::Action;
use mcp_cosmos::tui::app::App;
use mcp_cosmos::tui::browser::Browser;
use mcp_cosmos::tui::keymap::{Command, Keymap};
use mcp_cosmos::tui::run_view::RunView;
use mcp_cosmos::tui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

fn main() {
    let scale = scale();
    let (folder, runs) = folder_of_runs(scale);
    let bytes = folder_bytes(&folder);

    // Start to first frame over a folder: list + build the browser + draw once.
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let (_, t) = time(|| {
        let summaries = list_runs(std::slice::from_ref(&folder)).unwrap();
        let browser = Browser::new(vec![PathBuf::from(&folder)], summaries, 59);
        let app = App::with_browser(browser, Keymap::default(), Theme::new(true), (200, 60));
        terminal.draw(|f| app.draw(f)).unwrap();
    });
    println!(
        "first frame of the browser over {runs} runs / {:.0} MB: {:.1} ms   (target < 300 ms)",
        bytes as f64 / 1e6,
        ms(t)
    );

    let big = big_run_file(scale);
    let (run, t) = time(|| Run::open(&big).unwrap());
    println!(
        "open {} events: {:.2} s (parse-bound; see the trajectory benchmark)",
        run.len(),
        t.as_secs_f64()
    );
    let nodes = run.nodes().len();
    let (view, t) = time(|| RunView::new(run, Rect::new(0, 0, 200, 59)));
    println!(
        "run view ready ({nodes} nodes; fold to end, charts): {:.0} ms",
        ms(t)
    );
    let mut app = App::with_run(view, Keymap::default(), Theme::new(true), (200, 60));
    let (_, t) = time(|| app.update(Action::Do(Command::ExpandAll)));
    println!("expand all {nodes} nodes: {:.1} ms", ms(t));

    let mut draws = Vec::new();
    let mut updates = Vec::new();
    app.update(Action::Do(Command::Top));
    for i in 0..600 {
        // Step through the run in strides, as play at high speed does, and move the selection.
        let action = match i % 3 {
            0 => Action::Do(Command::Down),
            1 => Action::Do(Command::StepForward),
            _ => Action::Do(Command::NextToolCall),
        };
        updates.push(time(|| app.update(action)).1);
        draws.push(time(|| terminal.draw(|f| app.draw(f)).unwrap()).1);
    }
    app.update(Action::Do(Command::Bottom));
    for _ in 0..200 {
        updates.push(time(|| app.update(Action::Do(Command::Down))).1);
        draws.push(time(|| terminal.draw(|f| app.draw(f)).unwrap()).1);
    }
    draws.sort();
    updates.sort();
    println!(
        "run view frame at 200x60, {nodes}-node tree expanded: draw p50 {:.2} ms, p99 {:.2} ms   (target p99 < 4 ms)",
        ms(pct(&draws, 0.5)),
        ms(pct(&draws, 0.99))
    );
    println!(
        "update per key (step, select, jump): p50 {:.2} ms, p99 {:.2} ms",
        ms(pct(&updates, 0.5)),
        ms(pct(&updates, 0.99))
    );
}
