//! Find in a run (`/`): every event whose text (tool names, arguments, results, reasons,
//! answers, errors) holds all the words typed; `n`/`N` go to the next and previous hit.

use crate::trajectory::describe::summary;
use crate::trajectory::event::{Action as NodeAction, Event, EventBody};
use crate::trajectory::run::Run;
use crate::tui::prompt::{Prompt, matches_all, words};

/// State of find in a run.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// The prompt, while typing.
    pub prompt: Option<Prompt>,
    /// The query's words (empty: no search in force).
    pub words: Vec<String>,
    /// The query as typed.
    pub query: String,
    /// Indices of the events that match, in order.
    hits: Vec<u32>,
    /// Events searched so far (a live run grows).
    searched: usize,
}

impl Search {
    /// True when a query is in force.
    pub fn active(&self) -> bool {
        !self.words.is_empty()
    }

    /// Sets the query and searches the run.
    pub fn set(&mut self, query: &str, run: &Run) {
        self.query = query.trim().to_string();
        self.words = words(query);
        self.hits.clear();
        self.searched = 0;
        self.catch_up(run);
    }

    /// Ends the search.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Searches events added since the last call.
    pub fn catch_up(&mut self, run: &Run) {
        if !self.active() {
            self.searched = run.len();
            return;
        }
        for (i, event) in run.events.iter().enumerate().skip(self.searched) {
            if matches_all(&haystack(event), &self.words) {
                self.hits.push(i as u32);
            }
        }
        self.searched = run.len();
    }

    /// How many events match.
    pub fn hits(&self) -> usize {
        self.hits.len()
    }

    /// The first hit after event `at` (or before it, going back), wrapping around; with its
    /// 1-based rank among the hits and whether it wrapped.
    pub fn next(&self, at: Option<usize>, forward: bool) -> Option<(usize, usize, bool)> {
        if self.hits.is_empty() {
            return None;
        }
        let n = self.hits.len();
        let i = if forward {
            at.map_or(0, |a| self.hits.partition_point(|&h| h as usize <= a))
        } else {
            let before = at.map_or(0, |a| self.hits.partition_point(|&h| (h as usize) < a));
            before.checked_sub(1).unwrap_or(n)
        };
        let wrapped = i >= n;
        let i = if wrapped {
            if forward { 0 } else { n - 1 }
        } else {
            i
        };
        Some((self.hits[i] as usize, i + 1, wrapped))
    }
}

/// An event's searchable text, lower-cased.
fn haystack(event: &Event) -> String {
    let mut s = format!("{} {}", event.body.kind(), summary(event));
    let mut add = |t: &str| {
        s.push(' ');
        s.push_str(t);
    };
    match &event.body {
        EventBody::ToolCalled {
            tool,
            arguments,
            result,
            error,
            ..
        } => {
            add(tool);
            add(&arguments.to_string());
            add(&result.text);
            if let Some(e) = error {
                add(e);
            }
        }
        EventBody::NodeAdded {
            action: Some(action),
            ..
        } => match action {
            NodeAction::ToolCall { tool, arguments } => {
                add(tool);
                add(&arguments.to_string());
            }
            NodeAction::Finish { answer } => add(answer.as_deref().unwrap_or("")),
        },
        EventBody::NodeSimulated { observation, .. } => add(&observation.text),
        EventBody::NodeEvaluated {
            critic_reason: Some(reason),
            ..
        } => add(reason),
        EventBody::Answer { text } => add(text),
        EventBody::Error { message, .. } => add(message),
        EventBody::DecisionRejected { detail, reply, .. } => {
            add(detail);
            add(&reply.to_string());
        }
        _ => {}
    }
    s.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_and_previous_wrap_around() {
        let s = Search {
            words: vec!["x".into()],
            hits: vec![3, 7, 9],
            ..Search::default()
        };
        assert_eq!(s.next(Some(3), true), Some((7, 2, false)));
        assert_eq!(s.next(Some(9), true), Some((3, 1, true)));
        assert_eq!(s.next(None, true), Some((3, 1, false)));
        assert_eq!(s.next(Some(7), false), Some((3, 1, false)));
        assert_eq!(s.next(Some(3), false), Some((9, 3, true)));
        assert_eq!(s.next(Some(8), false), Some((7, 2, false)));
        assert_eq!(Search::default().next(Some(1), true), None);
    }
}
