//! What input means: keys, mouse and background messages become an [`Action`], which
//! `App::update` applies. Nothing else changes state.

use crossterm::event::{KeyEvent, MouseEvent};

use crate::trajectory::event::Event;
use crate::trajectory::run::Run;

/// Everything that can change the explorer's state.
#[derive(Debug)]
pub enum Action {
    /// Leave the explorer.
    Quit,
    /// Close the current screen or overlay.
    Back,
    /// Show or hide the key help.
    ToggleHelp,
    /// Selection up/down in the focused pane.
    Up,
    /// Selection down.
    Down,
    /// A page up.
    PageUp,
    /// A page down.
    PageDown,
    /// Open the selected run (browser), or open/close the selected node (tree).
    Open,
    /// Cursor one event back.
    StepBack,
    /// Cursor one event forward.
    StepForward,
    /// Cursor to the first event.
    JumpStart,
    /// Cursor to the last event.
    JumpEnd,
    /// Cursor to the next real tool call.
    NextToolCall,
    /// Cursor to the previous real tool call.
    PrevToolCall,
    /// Cursor to the next failure.
    NextFailure,
    /// Cursor to the previous failure.
    PrevFailure,
    /// Cursor to the next event of the selected node.
    NextNodeEvent,
    /// Play or pause the timeline.
    PlayPause,
    /// Play faster.
    Faster,
    /// Play slower.
    Slower,
    /// Focus the next pane.
    FocusNext,
    /// Focus the previous pane.
    FocusPrev,
    /// Open every node under the selection.
    ExpandAll,
    /// Close every node.
    CollapseAll,
    /// Start typing a filter/search.
    Search,
    /// Sort the browser by the next column.
    SortNext,
    /// Reverse the sort.
    SortReverse,
    /// Show or hide the group table.
    ToggleGroups,
    /// Mark or unmark the selected run for Compare.
    Mark,
    /// Open Compare on the marked runs.
    Compare,
    /// Stop the live run.
    StopRun,
    /// Show the event at the cursor in full.
    Inspect,
    /// A key while typing into the search prompt.
    Input(KeyEvent),
    /// A mouse event.
    Mouse(MouseEvent),
    /// The terminal changed size.
    Resize(u16, u16),
    /// Time passed (drives play).
    Tick,
    /// A run finished loading in the background.
    Loaded(Box<anyhow::Result<Run>>),
    /// The group table finished computing in the background.
    GroupsReady(Vec<crate::metrics::group::GroupRow>),
    /// A live run produced an event.
    LiveEvent(Box<Event>),
}
