//! The contract every view of the explorer keeps (in the spirit of gitui's components and
//! the ratatui component template): a view owns its state, handles an action and says whether
//! it consumed it, asks the app for anything beyond itself through [`Request`]s, refreshes
//! derived state at most once per frame in [`View::settle`], and draws from `&self`.
//!
//! A leaf of the explorer: it names no view, so views, the app and the terminal loop all
//! build on it without importing each other. The app holds views as `Box<dyn View>`; a view
//! opens another by pushing it ([`Request::Push`]); answers to background work go back to the
//! view that asked, and outside feeds (live events, sweep news) to the views that
//! [`subscribe`](View::subscribes).
//!
//! The contract (`View`, `Request`, `Work`, `Context`: what views may read of the
//! explorer's setup, the probe setup). `action.rs`: the `Action` enum (a bound `Command`, typed
//! text, mouse, resize, tick, a jump, background answers, feeds, a probe chosen). `feed.rs`: the
//! types fed from outside (`SweepNews`). `keymap.rs` is the one table of commands (mode, default
//! keys, help): the keymap per mode, the help (wrapped, never cut), `keys.toml` overrides and the
//! conflict check all read it.

use std::any::Any;
use std::path::PathBuf;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::action::{Action, RequestId};
use super::keymap::Mode;
use super::theme::Theme;
use cosmos_engine::probe::ProbeSetup;

/// Whether a view used an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// It did; nobody else sees it.
    Consumed,
    /// Not its action; the app applies its default (Back closes, Quit leaves…).
    Ignored,
}

/// How the person left the explorer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Quit (a live run, if any, has finished or is stopped).
    Quit,
    /// Stop the live run, then leave.
    StopRun,
    /// Leave; the live run goes on without the view and prints its progress lines.
    LeaveRunning,
}

/// Slow work a view asks for; the app runs it in the background and answers with an action
/// that carries the request's id. The app's own kinds open views (a run, runs to compare, a
/// fork); everything else is a `Job`, answered to the view that asked.
#[derive(Debug)]
pub enum Work {
    /// Open a run file (→ [`Action::Loaded`]).
    OpenRun(PathBuf),
    /// Open a run file with the cursor just after one of its events (→ [`Action::Loaded`]).
    OpenRunAt(PathBuf, usize),
    /// Open runs to compare (→ [`Action::Compared`]).
    Compare(Vec<PathBuf>),
    /// Fork a run as `cosmos fork` does, in a child process, and follow the fork's file (→
    /// [`Action::Loaded`] once it exists, its events, then [`Action::ForkEnded`]).
    Fork(super::fork_spec::ForkWork),
    /// Work whose answer goes to the view that asked.
    Job(Box<dyn Job>),
}

impl Work {
    /// What names a read (opening, counting, finding): asking again with the same key while
    /// it is on its way asks for the same answer. `None` for work that writes (probes, notes,
    /// forks), which is never merged.
    pub fn read_key(&self) -> Option<String> {
        match self {
            Work::OpenRun(path) => Some(format!("open {}", path.display())),
            Work::OpenRunAt(path, at) => Some(format!("open {} at {at}", path.display())),
            Work::Compare(paths) => Some(format!("compare {paths:?}")),
            Work::Fork(_) => None,
            Work::Job(job) => job.read_key().map(|key| format!("{}: {key}", job.kind())),
        }
    }
}

/// Background work that answers the view that asked: each job carries how it runs and what it
/// answers, so a new one is a new type (a file of `tui/jobs/`), and neither the app nor the
/// terminal loop changes (as gitui's async jobs). Jobs run on the bounded background pool; a
/// panic in one is answered as [`Action::WorkFailed`].
pub trait Job: Send + std::fmt::Debug {
    /// Its kind: one unanswered request of each kind at a time (a newer one replaces it,
    /// whose answer would be stale).
    fn kind(&self) -> &'static str;
    /// For work that only reads, what names it ([`Work::read_key`]); `None` for work that
    /// writes.
    fn read_key(&self) -> Option<String>;
    /// What the status line says while it runs, when anything.
    fn waiting(&self) -> Option<String> {
        None
    }
    /// Does the work (on a background thread) and returns the actions that carry its answer,
    /// each marked with `id` ([`Action::answers`]).
    fn run(self: Box<Self>, id: RequestId) -> Vec<Action>;
}

/// What a view asks of the app while handling an action; applied after it returns.
pub enum Request {
    /// Put a view in front of this one.
    Push(Box<dyn View>),
    /// Close this view (the one in front).
    Close,
    /// Close this view, then give the view behind it this action.
    CloseThen(Action),
    /// Start background work; its answer comes back to this view.
    Start(Work),
    /// Leave the explorer.
    Exit(Exit),
    /// A message for the status line.
    Say(String),
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::Push(view) => write!(f, "Push({:?})", view.mode()),
            Request::Close => write!(f, "Close"),
            Request::CloseThen(action) => write!(f, "CloseThen({action:?})"),
            Request::Start(work) => write!(f, "Start({work:?})"),
            Request::Exit(exit) => write!(f, "Exit({exit:?})"),
            Request::Say(m) => write!(f, "Say({m:?})"),
        }
    }
}

/// What every view may read of the explorer's own setup while it handles an action.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Where probes find world models, servers and the keys to redact.
    pub probe: &'a ProbeSetup,
}

/// One view: a screen (browser, run, compare) or an overlay (inspector, help, question).
pub trait View: Any {
    /// Whose keys apply while this view is in front.
    fn mode(&self) -> Mode;

    /// Applies an action; requests for the app go into `out`.
    fn update(&mut self, action: &Action, cx: Context, out: &mut Vec<Request>) -> Handled;

    /// True when this view wants an action fed from outside (a live run's events, a sweep's
    /// news) wherever it is on the stack, not only in front. The app gives such an action to
    /// every view that subscribes, bottom first.
    fn subscribes(&self, _feed: &Action) -> bool {
        false
    }

    /// Called once when the view is put on the stack: the place to ask for its first work
    /// (the browser's recount of stale totals).
    fn opened(&mut self, _out: &mut Vec<Request>) {}

    /// What is still running in this view (`"run"`, `"sweep"`), so leaving asks first.
    fn running(&self) -> Option<&'static str> {
        None
    }

    /// Brings derived state in line with what changed since the last frame. Called once
    /// before each frame, so a burst of live events costs one refresh, not one per event.
    fn settle(&mut self) {}

    /// Draws into `area` from the state alone.
    fn draw(&self, frame: &mut Frame, area: Rect, theme: &Theme);

    /// The status line's text while this view is in front; `None` (the default, as overlays
    /// keep it) leaves it to the view behind.
    fn status(&self) -> Option<String> {
        None
    }

    /// True while a text prompt has the keys: they edit text instead of running commands.
    fn typing(&self) -> bool {
        false
    }

    /// True for overlays, drawn over the view behind them.
    fn is_overlay(&self) -> bool {
        false
    }

    /// True while the view changes by itself (play), so the loop ticks fast.
    fn animating(&self) -> bool {
        false
    }
}
