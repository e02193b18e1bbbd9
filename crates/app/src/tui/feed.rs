//! What is fed to the explorer from outside it: a sweep's news (from `cli::sweep`). A leaf
//! of the explorer: the actions that carry these types, the views that read them and the
//! sweep that sends them all depend on this file, and it on none of them. (A live run's events
//! are plain `trajectory::event::Event`s.)

use cosmos_trajectory::event::{Event, Header, RunStatus};

/// What the sweep tells the view.
#[derive(Debug)]
pub enum SweepNews {
    /// A cell's run started (its servers are up, its file is created).
    Started {
        /// The cell's index in the grid.
        cell: usize,
        /// The run's header as written.
        header: Box<Header>,
    },
    /// A running cell's run recorded an event.
    Event {
        /// The cell.
        cell: usize,
        /// The event as written.
        event: Box<Event>,
    },
    /// A cell's infrastructure failed (servers would not start); it is tried again.
    Retrying {
        /// The cell.
        cell: usize,
        /// Why.
        reason: String,
    },
    /// A cell ended: its run's status, or why it could not run.
    Ended {
        /// The cell.
        cell: usize,
        /// The run's status, or why there is none.
        result: Result<RunStatus, String>,
        /// The sweep's progress after it (`3/12 · 40 s left`).
        progress: String,
    },
    /// A cell left to another process (it holds the cell, or finished it meanwhile).
    Skipped {
        /// The cell.
        cell: usize,
        /// Why.
        why: String,
        /// The sweep's progress after it.
        progress: String,
    },
    /// A remark that is no cell's result (a run set aside).
    Note(String),
    /// Every cell this process runs has ended, or the sweep was stopped.
    Over,
}
