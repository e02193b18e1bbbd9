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

use std::any::Any;
use std::path::PathBuf;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::action::Action;
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
/// that carries the request's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Open a run file (→ [`Action::Loaded`]).
    OpenRun(PathBuf),
    /// Open a run file with the cursor just after one of its events (→ [`Action::Loaded`]).
    OpenRunAt(PathBuf, usize),
    /// Open runs to compare (→ one [`Action::Loaded`] each).
    Compare(Vec<PathBuf>),
    /// Compute the group table (→ [`Action::GroupsReady`]).
    Groups(Vec<PathBuf>),
    /// Compute again the totals of runs whose `run_finished` totals were written by an older
    /// metrics version (→ [`Action::Recounted`]).
    Recount(Vec<PathBuf>),
    /// Simulate a node's call with a named world model, append it to the run (→
    /// [`Action::Probed`]).
    Probe {
        /// The run's file.
        path: PathBuf,
        /// The node.
        node: cosmos_trajectory::event::NodeId,
        /// The world model's name.
        world_model: String,
        /// Where world models and servers are found.
        setup: cosmos_engine::probe::ProbeSetup,
    },
    /// Append a person's note on a node or event to the run (→ [`Action::Probed`], as any
    /// event added to a finished run).
    Annotate {
        /// The run's file.
        path: PathBuf,
        /// The node it is about.
        node: Option<cosmos_trajectory::event::NodeId>,
        /// The event it is about, by `seq`.
        event: Option<u64>,
        /// The note.
        text: String,
        /// The run's clock at its end, for the note's `t_ms`.
        t_ms: u64,
        /// Where the endpoints' keys are found, to redact them from the note.
        setup: cosmos_engine::probe::ProbeSetup,
    },
    /// Find in a run's file, off the UI thread (→ [`Action::Found`]).
    Find {
        /// The run's file.
        path: PathBuf,
        /// The words every hit holds.
        words: Vec<String>,
        /// Events searched: `0..to`.
        to: usize,
    },
    /// Fork a run as `cosmos fork` does, in a child process, and follow the fork's file (→
    /// [`Action::Loaded`] once it exists, its events, then [`Action::ForkEnded`]).
    Fork(super::fork_spec::ForkWork),
    /// Read a proxy session's protocol log (→ [`Action::WireRead`]).
    ReadWire(PathBuf),
    /// Make a node's call for real, append it to the run (→ [`Action::Probed`]).
    ProbeReal {
        /// The run's file.
        path: PathBuf,
        /// The node.
        node: cosmos_trajectory::event::NodeId,
        /// Where world models and servers are found.
        setup: cosmos_engine::probe::ProbeSetup,
    },
}

impl Work {
    /// True for work that only reads (opening, counting, finding): asking again while it is on
    /// its way asks for the same answer. Probes and notes write, and are never merged.
    pub fn is_read(&self) -> bool {
        !matches!(
            self,
            Work::Probe { .. } | Work::ProbeReal { .. } | Work::Annotate { .. } | Work::Fork(_)
        )
    }
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

    /// The status line's text while this view is in front (overlays leave it to the view
    /// behind them by returning `None`).
    fn status(&self) -> Option<String>;

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
