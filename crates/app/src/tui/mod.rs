//! The explorer (docs/design.md, "Explorer (terminal UI)"), in the ratatui component pattern.
//!
//! - The contract, at the bottom: [`view`] (what every view keeps: it owns its state, handles
//!   an [`action::Action`], asks the app for more through requests, draws from `&self`; and
//!   [`view::Job`], background work that carries its own way to run and answer), [`action`],
//!   [`feed`], [`keymap`], [`theme`], [`fork_spec`].
//! - The event loop: [`app::App`] (the stack of views and the one `update`), [`terminal`]
//!   (raw mode, the panic hook, input into actions, background work on its threads),
//!   [`open`] (which view shows what was loaded), [`reading`] and [`fork_work`] (the app's own
//!   long work: a run read in parts, a fork).
//! - [`views`]: the screens. [`overlays`]: help, questions, pickers and forms over them.
//!   [`widgets`]: the prompt, scrolling, wrapping. [`jobs`]: background work views start.
//!
//! Untrusted text is made inert by `cosmos_trajectory::sanitize` before drawing.

pub mod action;
pub mod app;
pub mod feed;
pub mod fork_spec;
pub mod fork_work;
pub mod jobs;
pub mod keymap;
pub mod open;
pub mod overlays;
pub mod reading;
pub mod terminal;
pub mod theme;
pub mod view;
pub mod views;
pub mod widgets;

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::time::Duration;

use anyhow::{Context, Result};

use self::action::{Action, LiveSource};
use self::app::App;
use self::keymap::Keymap;
use self::theme::Theme;
use self::views::browser::Browser;
use self::views::run_view::RunView;
use cosmos_trajectory::listing::list_runs;
use cosmos_trajectory::tail::Tail;

/// The user's keymap: `keys.toml` in the XDG config folder, else the defaults.
pub fn load_keymap() -> Result<Keymap> {
    match Keymap::default_path() {
        Some(p) => Keymap::load(&p),
        None => Ok(Keymap::default()),
    }
}

/// The size the terminal reports, or 80×24 when it reports none.
fn terminal_size() -> (u16, u16) {
    crossterm::terminal::size().unwrap_or((80, 24))
}

/// How often a followed file is checked for new lines. Polling (not inotify) also works
/// on the network volumes that sweeps share.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

/// Opens the explorer on `paths`: one file opens the run view (followed as it grows while it
/// has no `run_finished` line yet); folders open the browser over all of them.
pub fn explore(paths: &[PathBuf], probe: cosmos_engine::probe::ProbeSetup) -> Result<()> {
    // A path that is not there is a mistake to name, not an empty browser ("No runs here").
    for path in paths {
        if std::fs::metadata(path).is_err() {
            anyhow::bail!(
                "{}: no such file or folder (give a run file or a folder of runs)",
                path.display()
            );
        }
    }
    let keymap = load_keymap()?;
    let theme = Theme::from_env();
    let size = terminal_size();
    let body = ratatui::layout::Rect::new(0, 0, size.0, size.1.saturating_sub(1));
    // One file opens the run view; folders (several: a folder and the runs made of the
    // foreign files in it) open the browser.
    if let [path] = paths
        && path.is_file()
    {
        // Its last line says whether it has ended (without reading the rest twice).
        if cosmos_trajectory::listing::RunSummary::read(path)
            .finished
            .is_some()
        {
            // Read as a whole file reads it (a torn last line is a problem, not a wait), the
            // first screen from its first part while the rest is read.
            let (view, rest, problems) = match reading::open_in_parts(path)? {
                reading::Opened::Whole(run) => {
                    let problems = run.problems.len();
                    (open::run(run, body), None, problems)
                }
                reading::Opened::Head {
                    run,
                    read,
                    total,
                    rest,
                } => (open::reading(run, body, read, total), Some(rest), 0),
            };
            let mut app = App::on(view, keymap, theme, size);
            app.say_problems(problems);
            app.probe = probe;
            return explore_then_settle_forks(app, rest);
        }
        let (run, tail) = Tail::open(path)?;
        terminal::require_terminal()?;
        let mut app = App::new(RunView::following(run, body), keymap, theme, size);
        app.probe = probe;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || follow(tail, tx));
        return explore_then_settle_forks(app, Some(rx));
    }
    // Several folders (one of runs, one of runs made of foreign files) list as one.
    let roots: Vec<PathBuf> = paths.to_vec();
    let runs = list_runs(&roots)
        .with_context(|| format!("listing {}", cosmos_trajectory::reader::path_list(&roots)))?;
    let mut app = App::new(
        Browser::new(roots, runs, size.1.saturating_sub(1)),
        keymap,
        theme,
        size,
    );
    app.probe = probe;
    explore_then_settle_forks(app, None)
}

/// Runs the explorer; once it is left, stops the forks started from it (when the person
/// chose to stop what was running) or says where the ones left running write.
fn explore_then_settle_forks(
    app: App,
    live: Option<std::sync::mpsc::Receiver<Action>>,
) -> Result<()> {
    let exit = terminal::run(app, live, None);
    if fork_work::any_running() {
        if matches!(exit, Ok(view::Exit::LeaveRunning)) {
            eprintln!(
                "cosmos: the fork goes on without the explorer; its run is in its --out folder"
            );
        } else {
            fork_work::stop_all(fork_work::STOP_WITHIN);
        }
    }
    exit.map(drop)
}

/// Sends the events a growing file gains until it finishes, the view closes, or it cannot
/// be read (then the view keeps what it has; the reason goes to the log).
fn follow(mut tail: Tail, events: Sender<Action>) {
    loop {
        match tail.poll() {
            Ok(new) => {
                for event in new {
                    if events
                        .send(Action::LiveEvent(LiveSource::Followed, Box::new(event)))
                        .is_err()
                    {
                        return;
                    }
                }
            }
            Err(e) => {
                tracing::warn!("following stopped: {e:#}");
                let _ = events.send(Action::FollowLost(LiveSource::Followed, format!("{e:#}")));
                return;
            }
        }
        for problem in tail.take_problems() {
            tracing::warn!("{problem}");
        }
        if tail.finished() {
            return;
        }
        std::thread::sleep(FOLLOW_EVERY);
    }
}
