//! Totals written by an older metrics version, computed again with today's.

use std::path::PathBuf;

use crate::tui::action::{Action, RequestId};
use crate::tui::view::Job;
use cosmos_engine::metrics::records::recount;

/// Computes again the totals (and the ending) of runs whose `run_finished` totals an older
/// metrics version wrote (→ [`Action::Recounted`]).
#[derive(Debug)]
pub struct RecountJob {
    paths: Vec<PathBuf>,
}

impl RecountJob {
    /// The runs at `paths`.
    pub fn new(paths: Vec<PathBuf>) -> Self {
        Self { paths }
    }
}

impl Job for RecountJob {
    fn kind(&self) -> &'static str {
        "recount"
    }

    fn read_key(&self) -> Option<String> {
        Some(format!("{:?}", self.paths))
    }

    fn run(self: Box<Self>, id: RequestId) -> Vec<Action> {
        let recounts = recount(&self.paths).unwrap_or_else(|e| {
            tracing::warn!("recounting totals failed: {e:#}");
            Vec::new()
        });
        vec![Action::Recounted(id, recounts)]
    }
}
