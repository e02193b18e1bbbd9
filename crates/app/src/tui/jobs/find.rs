//! A find over a big run's file, off the UI thread, so input never freezes.

use std::path::PathBuf;

use crate::tui::action::{Action, RequestId};
use crate::tui::view::Job;
use crate::tui::views::run_view::search::find_in_file;

/// Finds the events `0..to` of the run at `path` that hold every one of `words` (→
/// [`Action::Found`]).
#[derive(Debug)]
pub struct FindJob {
    path: PathBuf,
    words: Vec<String>,
    to: usize,
}

impl FindJob {
    /// A find of `words` in events `0..to` of the run at `path`.
    pub fn new(path: PathBuf, words: Vec<String>, to: usize) -> Self {
        Self { path, words, to }
    }
}

impl Job for FindJob {
    fn kind(&self) -> &'static str {
        "find"
    }

    fn read_key(&self) -> Option<String> {
        Some(format!(
            "{} {:?} {}",
            self.path.display(),
            self.words,
            self.to
        ))
    }

    fn waiting(&self) -> Option<String> {
        Some("finding".into())
    }

    fn run(self: Box<Self>, id: RequestId) -> Vec<Action> {
        let hits = find_in_file(&self.path, &self.words, self.to).map_err(|e| format!("{e:#}"));
        vec![Action::Found(id, self.path, self.words, self.to, hits)]
    }
}
