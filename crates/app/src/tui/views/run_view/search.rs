//! Find in a run (`/`): every event whose text (tool names, arguments, results, reasons,
//! answers, errors) holds all the words typed; `n`/`N` go to the next and previous hit.

use crate::tui::widgets::prompt::{Prompt, matches_all, words};
use cosmos_trajectory::describe::{Latencies, brief_summary, summary};
use cosmos_trajectory::event::{Action as NodeAction, Event, EventBody, PredictionRecord};
use cosmos_trajectory::run::Run;

/// Fewest new events searched on more than one thread.
const PARALLEL_FROM: usize = 20_000;

/// Most new events searched on the UI thread; more are searched in the background
/// (`FindJob`), so a find over a big run never freezes input.
pub const IN_PLACE: usize = 20_000;

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
    /// A background search is under way for events up to this one.
    pub pending: Option<usize>,
}

impl Search {
    /// True when a query is in force.
    pub fn active(&self) -> bool {
        !self.words.is_empty()
    }

    /// Sets the query and searches the run: in place when it is small; else it returns the
    /// range a background search must cover (`FindJob`, answered by [`Search::found`]).
    pub fn set(&mut self, query: &str, run: &Run) -> Option<std::ops::Range<usize>> {
        self.query = query.trim().to_string();
        self.words = words(query);
        self.hits.clear();
        self.searched = 0;
        self.pending = None;
        if run.len() > IN_PLACE {
            self.pending = Some(run.len());
            return Some(0..run.len());
        }
        self.catch_up(run);
        None
    }

    /// A background search's hits for events `0..to`, for the query `words`; ignored when the
    /// query changed meanwhile.
    pub fn found(&mut self, words: &[String], to: usize, hits: Vec<u32>) -> bool {
        if self.pending != Some(to) || words != self.words.as_slice() {
            return false;
        }
        self.pending = None;
        self.hits = hits;
        self.searched = to;
        true
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
        if self.pending.is_some() {
            // The background search covers the start; what came since waits for it.
            return;
        }
        // Events are read back from the file and parsed: a big run is searched in a few
        // slices at once, one per core, and the hits joined in order.
        let (from, to) = (self.searched, run.len());
        let slices = if to - from < PARALLEL_FROM {
            1
        } else {
            cosmos_trajectory::parallel::workers()
        };
        let words = &self.words;
        let latencies = Latencies::of(&run.header);
        let search = |range: std::ops::Range<usize>| {
            // Events whose brief says all their text holds are searched without reading back.
            let mut hits = Vec::new();
            let mut unbriefed = Vec::new();
            for i in range {
                let brief = run.brief(i);
                match brief_summary(brief, latencies).filter(|_| brief.whole().is_none()) {
                    Some(said) => {
                        if matches_all(&haystack(brief.kind(), &said, None), words) {
                            hits.push(i as u32);
                        }
                    }
                    None => unbriefed.push(i),
                }
            }
            let events = run.events_at(unbriefed.iter().copied());
            hits.extend(
                unbriefed
                    .iter()
                    .zip(events)
                    .filter(|(_, event)| matches_all(&event_haystack(event, latencies), words))
                    .map(|(&i, _)| i as u32),
            );
            hits.sort_unstable();
            hits
        };
        let hits = if slices == 1 {
            search(from..to)
        } else {
            let size = (to - from).div_ceil(slices);
            let starts: Vec<usize> = (from..to).step_by(size).collect();
            cosmos_trajectory::parallel::map(&starts, |&start| {
                search(start..(start + size).min(to))
            })
            .into_iter()
            .flatten()
            .collect()
        };
        self.hits.extend(hits);
        self.searched = to;
    }

    /// How many events match.
    pub fn hits(&self) -> usize {
        self.hits.len()
    }

    /// The events that match, in order (for marking them).
    pub fn hit_events(&self) -> &[u32] {
        &self.hits
    }

    /// The 1-based rank of event `at` among the hits, when it is one.
    pub fn rank_of(&self, at: usize) -> Option<usize> {
        self.hits.binary_search(&(at as u32)).ok().map(|i| i + 1)
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

/// The events of the file at `path` among the first `to` that hold every word, read as a
/// stream (off the UI thread: `FindJob`).
pub fn find_in_file(
    path: &std::path::Path,
    words: &[String],
    to: usize,
) -> anyhow::Result<Vec<u32>> {
    let mut stream = cosmos_trajectory::reader::EventStream::open(path)?;
    let latencies = Latencies::of(stream.header());
    let mut hits = Vec::new();
    let mut i = 0usize;
    while i < to {
        let Some(event) = stream.next_event()? else {
            break;
        };
        if matches_all(&event_haystack(&event, latencies), words) {
            hits.push(i as u32);
        }
        i += 1;
    }
    Ok(hits)
}

/// An event's searchable text, lower-cased.
fn event_haystack(event: &Event, latencies: Latencies) -> String {
    haystack(
        event.body.kind(),
        &summary(event, latencies),
        Some(&event.body),
    )
}

/// The searchable text, lower-cased, of an event's kind, its summary, and the texts of its body
/// the summary cuts short (`None` for a kind whose summary says it all).
fn haystack(kind: &str, summary: &str, body: Option<&EventBody>) -> String {
    let mut s = format!("{kind} {summary}");
    let mut add = |t: &str| {
        s.push(' ');
        s.push_str(t);
    };
    let Some(body) = body else {
        return s.to_lowercase();
    };
    if let Some(call) = cosmos_trajectory::recorded_call::RecordedCall::of(body) {
        add(call.tool);
        add(&call.arguments.to_string());
        add(&call.result.text);
        if let Some(e) = call.error {
            add(e);
        }
    }
    match body {
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
        EventBody::NodeSimulated {
            prediction: PredictionRecord { observation, .. },
            ..
        } => add(&observation.text),
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

    /// A big run is searched in slices on several threads; the hits are the ones a plain
    /// pass over every event finds, in order, and a live run's new events are searched on.
    #[test]
    fn a_big_run_searched_in_slices_gives_the_hits_of_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let run = super::super::synthetic_run(dir.path(), 8000, 11);
        let path = run.path.clone();
        assert!(run.len() > 2 * PARALLEL_FROM, "{} events", run.len());
        let events = run.all_events();
        for query in [
            "tokyo",
            "new_york valid",
            "node_added",
            "backpropagated along",
            "phase",
        ] {
            let words = words(query);
            let want: Vec<u32> = (0..events.len())
                .filter(|&i| matches_all(&event_haystack(&events[i], Latencies::Measured), &words))
                .map(|i| i as u32)
                .collect();
            assert!(!want.is_empty(), "{query} finds something");
            // In place, in slices on every core (how a live run's new events are searched).
            let mut sliced = Search {
                words: words.clone(),
                query: query.into(),
                ..Search::default()
            };
            sliced.catch_up(&run);
            assert_eq!(sliced.hits, want, "{query}");
            // In the background, streaming the file (how a big run is searched).
            let mut background = Search::default();
            let range = background
                .set(query, &run)
                .expect("searched in the background");
            let hits = find_in_file(&path, &words, range.end).unwrap();
            assert!(background.found(&words, range.end, hits));
            assert_eq!(background.hits, want, "{query}");
        }

        // Events pushed after opening are searched when they arrive.
        let mut run = run;
        let mut search = Search::default();
        let range = search.set("tokyo", &run).unwrap();
        let hits = find_in_file(&path, &search.words.clone(), range.end).unwrap();
        assert!(search.found(&words("tokyo"), range.end, hits));
        let before = search.hits();
        let last = events
            .iter()
            .rev()
            .find(|e| event_haystack(e, Latencies::Measured).contains("tokyo"));
        let mut again = last.unwrap().clone();
        again.seq = events.last().unwrap().seq + 1;
        run.push(again);
        search.catch_up(&run);
        assert_eq!(search.hits(), before + 1);
    }
}
