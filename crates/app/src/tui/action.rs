//! What input means: keys, mouse and background messages become an [`Action`], which
//! `App::update` routes to the view in front (background answers to the view that asked,
//! outside feeds to the views that subscribe). Nothing else changes state. A leaf of the
//! explorer: it names no view.

use crossterm::event::{KeyEvent, MouseEvent};

use super::keymap::Command;
use cosmos_trajectory::event::Event;
use cosmos_trajectory::run::Run;

/// Which background request a result answers; a result whose request is no longer wanted
/// (the person went back, or asked again) is dropped.
pub type RequestId = u64;

/// Whose live events an action carries: the run the explorer was started to follow (the
/// agent `cosmos run` drives, or a file still being written), or a fork the explorer started
/// (by its request). Each live view takes only its own run's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveSource {
    /// The run the explorer was started on.
    Followed,
    /// The fork started by this request.
    Fork(RequestId),
}

/// Everything that can change the explorer's state.
#[derive(Debug)]
pub enum Action {
    /// A bound key's command.
    Do(Command),
    /// A key while a text prompt has the focus (it edits the text).
    Input(KeyEvent),
    /// A mouse event.
    Mouse(MouseEvent),
    /// The terminal changed size.
    Resize(u16, u16),
    /// Time passed (drives play).
    Tick,
    /// Put the run's cursor just after this event (from the node inspector's links).
    JumpTo(usize),
    /// A run finished loading in the background.
    Loaded(RequestId, Box<anyhow::Result<Run>>),
    /// The first part of a run asked for (`Work::OpenRun`): `read` of `total` bytes; the rest
    /// follows as `RunRead`.
    LoadedHead(RequestId, Box<Run>, u64, u64),
    /// A part of the run file at this path, read after its view opened (taken once, by the
    /// view reading it: actions are shared, parts are not copied).
    RunRead(
        std::path::PathBuf,
        std::sync::Arc<std::sync::Mutex<Option<cosmos_trajectory::run::Part>>>,
    ),
    /// The group table finished computing in the background.
    GroupsReady(
        RequestId,
        Result<Vec<cosmos_engine::metrics::group::GroupRow>, String>,
    ),
    /// Totals (and the ending) computed again with today's metrics, by file (`RecountJob`).
    Recounted(RequestId, Vec<cosmos_trajectory::listing::Recount>),
    /// A live run produced an event: which run says which view takes it.
    LiveEvent(LiveSource, Box<Event>),
    /// Following a growing file stopped: it shrank, was replaced or renamed, or cannot be
    /// read (why, in words).
    FollowLost(LiveSource, String),
    /// A probe finished: the event appended to the run, or why not.
    Probed(RequestId, Box<anyhow::Result<Event>>),
    /// A background find's hits in a run's file: the words, the events searched, the hits.
    Found(
        RequestId,
        std::path::PathBuf,
        Vec<String>,
        usize,
        Result<Vec<u32>, String>,
    ),
    /// A proxy session's protocol log read in the background (`ReadWireJob`), or why not.
    WireRead(
        RequestId,
        Result<std::sync::Arc<cosmos_trajectory::wire::WireLog>, String>,
    ),
    /// A running sweep's news (a cell started, recorded an event, ended).
    Sweep(Box<super::feed::SweepNews>),
    /// The person chose how to probe a node: with this world model, or (`None`) for real.
    Probe(cosmos_trajectory::event::NodeId, Option<String>),
    /// The person chose how to fork the run at a step (the `b` form).
    Fork(super::fork_spec::ForkChoice),
    /// A server asks the person for input while a live run's call waits (elicitation).
    Elicit(Box<cosmos_engine::mcp::Question>),
    /// A fork started from the explorer ended (its run opened with the `Loaded` answering the
    /// same request; its events came as `LiveEvent`s).
    ForkEnded(RequestId),
    /// Runs compared in the background (loading them and aligning their calls can take long
    /// on big runs): the view to show, or why the runs could not be read.
    Compared(RequestId, anyhow::Result<Made>),
    /// Background work ended in a panic (a bug): what it said, in place of its answer. The
    /// request's wait ends and the message is shown; the explorer goes on.
    WorkFailed(RequestId, String),
    /// The explorer's own work wrote a run file (a fork, when it starts and when it ends): a
    /// browser over its folder lists it, or reads its totals again.
    Written(std::path::PathBuf),
}

impl Action {
    /// The request a job's answer answers: the app gives it to the view that asked (and
    /// drops it once that view is gone). A job answering with a new kind of action lists it
    /// here.
    pub fn answers(&self) -> Option<RequestId> {
        match self {
            Action::Found(id, ..)
            | Action::WireRead(id, _)
            | Action::Probed(id, _)
            | Action::GroupsReady(id, _)
            | Action::Recounted(id, _) => Some(*id),
            _ => None,
        }
    }
}

/// Something background work made for the app (compare's view), held as `Any` so that this
/// file, at the bottom of the explorer, names no view: the app takes it back out by its type
/// ([`Made::take`]).
pub struct Made(Box<dyn std::any::Any + Send>);

impl Made {
    /// Holds `made` for the app.
    pub fn new<T: Send + 'static>(made: T) -> Self {
        Self(Box::new(made))
    }

    /// What was made, when it is a `T`.
    pub fn take<T: 'static>(self) -> Option<T> {
        self.0.downcast::<T>().ok().map(|b| *b)
    }
}

impl std::fmt::Debug for Made {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Made(view)")
    }
}
