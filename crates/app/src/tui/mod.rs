//! The explorer (docs/design.md, "Explorer"), in the ratatui component pattern.
//!
//! - The contract, at the bottom: `view` (what every view keeps: it owns its state, handles
//!   an [`Action`], asks the app for more through requests, draws from `&self`; and
//!   `view::Job`, background work that carries its own way to run and answer), `action`,
//!   `feed`, `keymap`, `theme`, `fork_spec`.
//! - The event loop: [`App`] (the stack of views and the one `update`), `terminal`
//!   (raw mode, the panic hook, input into actions, background work on its threads),
//!   `open` (which view shows what was loaded), `reading` and `fork_work` (the app's own
//!   long work: a run read in parts, a fork).
//! - `views`: the screens. `overlays`: help, questions, pickers and forms over them.
//!   `widgets`: the prompt, scrolling, wrapping. `jobs`: background work views start.
//!
//! Untrusted text is made inert by `cosmos_trajectory::sanitize` before drawing.
//!
//! Views ask the app for anything beyond themselves with `Request`s (push a view, close, start
//! background work, leave, say something) and refresh derived state at most once per frame in
//! `settle`. `view.rs`, `action.rs`, `feed.rs`, `keymap.rs` and `theme.rs` name no view.
//!
//! - **Adding a view.** Write it in its own file (`impl View`), and push it from the place that
//!   opens it: `out.push(Request::Push(Box::new(view)))`. If it needs background work it starts it
//!   with `Request::Start` and handles the answer in its own `update`; if a key opens it, the key
//!   is a `Command` with a row in `keymap.rs`. `notes.rs` (the run's notes, `L`) is the example:
//!   the file, the `Command::Notes` row and one match arm in the run view are all it took.
//!
//! - Shared pieces, one of each: `scroll.rs` (scroll and selection arithmetic, position text),
//!   `wrap.rs` (text wrapped to a width in columns, indentation kept, breaks between JSON
//!   tokens), `prompt.rs` (the one text prompt, on `tui-input`; words that must all match).
//!
//! - `browser.rs`: the run browser over `trajectory::listing` summaries (sort, filter, next run
//!   with a failure, marks, group table). Totals of an older metrics version show `…` until the
//!   background recount (`RecountJob`, which the browser starts for its stale rows) answers. Column widths
//!   follow their content (`ContentWidths`, read when the listing changes): the status column is
//!   as wide as its widest markers, and a label column (the header's label, else the folder under
//!   the root) tells a sweep's runs apart, with forks marked (`mark_forks`: `⑂@N` on a fork,
//!   `⑂×K` on a listed original; `fork_link` follows `fork_of` either way). The group table
//!   scrolls by column, its label kept.
//!
//! - `run_view/`: `mod.rs` owns the cursor; live events are applied to the `Run` at once (each
//!   `LiveEvent` names its source, the followed run or a fork's request, and a view takes only
//!   its own) and
//!   `refresh()` (tree rows, timeline rows, observation, metrics, charts) runs at most once per
//!   frame. Invariant: whatever reads events back from the file happens in `refresh()`, never
//!   in `draw`. `tree.rs`
//!   is a flat window over open subtrees (rebuilt only when the visible node count or the open
//!   set changes; only on-screen rows are drawn), which is what keeps 10^5 nodes smooth; row
//!   texts are read in `refresh` for the rows near the selection and the scroll and cached per
//!   node, and what a family's children call (`describe::SiblingCalls`, which tells siblings
//!   apart in narrow rows) is gathered once per parent, since one node may have 10^4 children; `trajectory::plan_why` is the one account of why a plan won (its pool, values, ties),
//!   used by the tree's title and the about view; replay (Space, `playback.rs`: playing or
//!   paused, the speed, when the next step is due) plays at 5 events a second by
//!   default, and stepping, jumping or playing selects the node the event touched
//!   (`select_touched`), so the tree opens there and the observation pane follows the cursor;
//!   `additions.rs` is what a person adds to a finished run (probes of a node, notes), started as
//!   background work and appended when it answers;
//!   `observation.rs` prepares capped, inert, diff-marked text and wraps only the rows on screen;
//!   `search.rs` is find in a run (events read back from the file, except the kinds whose brief
//!   holds their whole summary, `describe::brief_summary`); a run over `IN_PLACE` events is searched
//!   off the UI thread (`FindJob` streams the file; `Action::Found` answers the view showing
//!   that file), and the new events of a live run are searched in place;
//!   `timeline.rs` keeps the rows around the cursor, read again only when the cursor, the run
//!   or the pane changes; `metrics.rs` draws (the charts are sampled every 2^n-th event, n
//!   growing with the run, so how a run arrived never changes them; the last bar is the cursor's
//!   own value, the one the numbers above say; best Q is kept up as values are backpropagated,
//!   not scanned per sample; spread over the chart's width); `inspector.rs` is the
//!   overlay that shows one event or one node whole, or the run's own story (`Inspector::about`:
//!   header, why this plan, each search's accounting), laid out once per width, with links to
//!   events.
//!
//! - `compare.rs`: metrics of 2–4 runs with the best marked (world-model predictions and cost,
//!   answers quoted; rows that differ first, so a short screen keeps them; the table scrolls on
//!   its own with `Tab`), column labels naming every header setting that
//!   differs between the runs, every run's calls aligned together
//!   (progressively, by a common subsequence of tool names against the rows so far: Myers' diff
//!   from `similar`, memory linear in the calls, within a 500 ms deadline per run, so two runs of
//!   25,000 calls stay far under 1 GB, `tests/agents/compare_memory.rs`; a fork's replayed and
//!   simulated calls are rows too, marked), the selected row per run, and the first divergence
//!   (`first_divergence`: the first row not all the same call with the same result), where the view
//!   opens when one run is a fork of another; Enter reopens a run at a call (`Work::OpenRunAt`).
//!
//! - `wm_eval_view.rs`: a `wm_eval` file (`open::run` picks it by the header's agent
//!   kind): the leaderboard, one row per call with each world model's score and first differing
//!   leaf (read through `wm_eval::Filed`, as `cosmos wm-eval` reads its file), sorted with
//!   the calls nobody got right first, and `CallDetail`, one call with every simulation side by
//!   side.
//!
//! - `sweep_view.rs`: a running sweep's matrix (tasks × configurations), fed by `SweepNews`
//!   (`Action::Sweep`) from `cli::sweep`; running cells keep their events and a
//!   `RunAccumulator`, so a cell's figures are the report's and Enter opens a running cell as a
//!   followed run view (`RunView::following_cell`, which subscribes to that cell's news);
//!   finished cells open from their files, their state read by `cli::finished_cell` (the one
//!   reading of a cell's file, which `tests/explorer/view_truth.rs` holds to the report). Cells and the
//!   totals line count by `Totals::clean`, as the browser marks runs.
//!
//! - `overlay.rs`: where overlays sit (the centred box, the inset panel), laid out in one place.
//!
//! - `elicit_form.rs`: a server's request for input while a live run's call waits
//!   (`Action::Elicit`, pushed by the app in front of everything): the schema's fields with their
//!   defaults, edited, and the answer sent straight to the waiting call (closing it unanswered
//!   declines). `page_prompt.rs`: the same for a page to open (a login stepping up its scopes,
//!   `mcp::oauth::step_up`): the address shown whole, `Esc` gives the login up, and it says when
//!   the login came back (the waiting side dropped its end).
//!
//! - `confirm.rs` (leave a live run? make a call for real?), `picker.rs` (which world model to
//!   probe with), `help.rs` (the keys, then a legend of every mark the view draws), `notes.rs`,
//!   `wire_view.rs` (a proxy session's protocol, `W`, read by `ReadWireJob`): the small
//!   overlays. A probe's question answers the run
//!   view behind it with `Action::Probe`; the run view starts the work and hears its answer.
//!
//! Live runs: `RunView::push` appends to the `Run`; the view follows the newest event unless the
//! person paused or moved the cursor. `cosmos replay FILE` of a file without its `run_finished`
//! follows it through `trajectory::tail` (complete lines only, polled).

pub(crate) mod action;
pub(crate) mod app;
pub(crate) mod feed;
pub(crate) mod fork_spec;
pub(crate) mod fork_work;
pub(crate) mod jobs;
pub(crate) mod keymap;
pub(crate) mod open;
pub(crate) mod overlays;
pub(crate) mod reading;
pub(crate) mod terminal;
pub(crate) mod theme;
pub(crate) mod view;
pub(crate) mod views;
pub(crate) mod widgets;

pub use action::{Action, LiveSource};
pub use app::App;
pub use feed::SweepNews;
pub use jobs::recount::RecountJob;
pub use keymap::{Command, Keymap, MODES, Mode};
pub use open::run as open_run;
pub use overlays::confirm::{ConfirmCall, ConfirmLeave};
pub use overlays::elicit_form::ElicitForm;
pub use overlays::fork_form::ForkForm;
pub use overlays::help::{HelpView, legend as help_legend};
pub use overlays::picker::WorldModelPicker;
pub use reading::{Opened, open_in_parts};
pub use terminal::perform;
pub use theme::Theme;
pub use view::{Exit, View, Work};
pub use views::browser::{Browser, Column as BrowserColumn, Groups};
pub use views::compare::{CallSource, CompareView};
pub use views::notes::NotesView;
pub use views::run_view::inspector::Inspector;
pub use views::run_view::search::IN_PLACE as SEARCH_IN_PLACE;
pub use views::run_view::tree::Item as TreeItem;
pub use views::run_view::{Pane, RunView};
pub use views::sweep_view::{CellState, GridCell, SweepView};
pub use views::wm_eval_view::{CallDetail, WmEvalView};

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::time::Duration;

use anyhow::{Context, Result};

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
