//! The contract every view of the explorer keeps (in the spirit of gitui's components and
//! the ratatui component template): a view owns its state, handles an action and says whether
//! it consumed it, asks the app for anything beyond itself through [`Request`]s, refreshes
//! derived state at most once per frame in [`View::settle`], and draws from `&self`.

use std::path::PathBuf;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::action::Action;
use super::app::Layer;
use super::keymap::Mode;
use super::theme::Theme;

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
        node: crate::trajectory::event::NodeId,
        /// The world model's name.
        world_model: String,
        /// Where world models and servers are found.
        setup: crate::probe::ProbeSetup,
    },
    /// Append a person's note on a node or event to the run (→ [`Action::Probed`], as any
    /// event added to a finished run).
    Annotate {
        /// The run's file.
        path: PathBuf,
        /// The node it is about.
        node: Option<crate::trajectory::event::NodeId>,
        /// The event it is about, by `seq`.
        event: Option<u64>,
        /// The note.
        text: String,
        /// The run's clock at its end, for the note's `t_ms`.
        t_ms: u64,
        /// Where the endpoints' keys are found, to redact them from the note.
        setup: crate::probe::ProbeSetup,
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
    /// Make a node's call for real, append it to the run (→ [`Action::Probed`]).
    ProbeReal {
        /// The run's file.
        path: PathBuf,
        /// The node.
        node: crate::trajectory::event::NodeId,
        /// Where world models and servers are found.
        setup: crate::probe::ProbeSetup,
    },
}

/// What a view asks of the app while handling an action; applied after it returns.
#[derive(Debug)]
pub enum Request {
    /// Put a view in front of this one.
    Push(Box<Layer>),
    /// Close this view (the one in front).
    Close,
    /// Close this view, then give the view behind it this action.
    CloseThen(Action),
    /// Start background work.
    Start(Work),
    /// Leave the explorer.
    Exit(Exit),
    /// A message for the status line.
    Say(String),
    /// Probe node `node` of the run at `path`: with a world model the person picks, or for
    /// real (`real`) after a question.
    Probe {
        /// The run's file.
        path: PathBuf,
        /// The node.
        node: crate::trajectory::event::NodeId,
        /// Its call in words (`tool with {arguments}`), for the question before a real call.
        call: String,
        /// For real.
        real: bool,
    },
    /// Append a person's note to the run at `path` (the app adds where keys are found).
    Annotate {
        /// The run's file.
        path: PathBuf,
        /// The node it is about.
        node: Option<crate::trajectory::event::NodeId>,
        /// The event it is about, by `seq`.
        event: Option<u64>,
        /// The note.
        text: String,
        /// The run's clock at its end.
        t_ms: u64,
    },
}

/// One view: a screen (browser, run, compare) or an overlay (inspector, help, question).
pub trait View {
    /// Whose keys apply while this view is in front.
    fn mode(&self) -> Mode;

    /// Applies an action; requests for the app go into `out`.
    fn update(&mut self, action: &Action, out: &mut Vec<Request>) -> Handled;

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
