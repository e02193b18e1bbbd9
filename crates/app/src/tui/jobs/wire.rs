//! A proxy session's protocol log (`STEM.wire`), read off the UI thread.

use std::path::PathBuf;
use std::sync::Arc;

use crate::tui::action::{Action, RequestId};
use crate::tui::view::Job;

/// Reads the protocol log at `path` (→ [`Action::WireRead`]).
#[derive(Debug)]
pub struct ReadWireJob {
    path: PathBuf,
}

impl ReadWireJob {
    /// The log at `path`.
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }
}

impl Job for ReadWireJob {
    fn kind(&self) -> &'static str {
        "wire"
    }

    fn read_key(&self) -> Option<String> {
        Some(self.path.display().to_string())
    }

    fn run(self: Box<Self>, id: RequestId) -> Vec<Action> {
        let log = cosmos_trajectory::wire::read(&self.path)
            .map(Arc::new)
            .map_err(|e| format!("{e:#}"));
        vec![Action::WireRead(id, log)]
    }
}
