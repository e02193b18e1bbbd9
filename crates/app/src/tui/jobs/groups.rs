//! The group table of the runs under the browser's folders (`g`), read off the UI thread.

use std::path::PathBuf;

use crate::tui::action::{Action, RequestId};
use crate::tui::view::Job;
use cosmos_engine::metrics::group::{GroupBy, group};
use cosmos_engine::metrics::records::read_records;

/// Computes the group table of the runs under `roots` (→ [`Action::GroupsReady`]).
#[derive(Debug)]
pub struct GroupsJob {
    roots: Vec<PathBuf>,
}

impl GroupsJob {
    /// The table of the runs under `roots`.
    pub fn new(roots: Vec<PathBuf>) -> Self {
        Self { roots }
    }
}

impl Job for GroupsJob {
    fn kind(&self) -> &'static str {
        "groups"
    }

    fn read_key(&self) -> Option<String> {
        Some(format!("{:?}", self.roots))
    }

    fn run(self: Box<Self>, id: RequestId) -> Vec<Action> {
        // A failure is said where the table would be, never shown as an empty table.
        let rows = read_records(&self.roots)
            .map(|(records, _)| group(&records, GroupBy::Config))
            .map_err(|e| format!("{e:#}"));
        vec![Action::GroupsReady(id, rows)]
    }
}
