//! An opened run, with the indices the explorer needs: the node arena, the executed steps
//! paired with their simulations, and per-kind event lists for jumps.
//!
//! A run opened from a file keeps each event's [`Brief`] (what the indices, fold, jumps and
//! metrics read) and where its line lies; the texts stay in the file and [`Run::event`] reads
//! an event back whole when a view shows it. So memory is of the order of the
//! file's size rather than a multiple of it (benches/trajectory.rs has the figures).
//! Events pushed after opening (all of a live run's) are kept whole.
//!
//! Invariant: every index here is append-only, so a live run grows by [`Run::push`]
//! without rebuilding anything, and the state at any cursor is a function of a prefix.
//!
//! A run opened for viewing: each event's `Brief` (what the indices, fold, jumps and
//! metrics read) plus **append-only indices** (node arena in `node_added` order, real steps
//! paired with the simulation of the node they execute, per-kind event lists for jumps). A run
//! opened from a file keeps where each line lies and a handle on the file; `Run::event`,
//! `events_at` and `events_from` read events back whole when a view shows them (in blocks of
//! nearby lines; a line that is no longer the event reads as an `error` event saying so).
//! Events pushed after opening (a live run's, probes) are kept whole, once (`Brief::split`). So the hot paths (fold,
//! jumps, metrics, charts) never touch the file, and memory is of the order of the file's
//! size (the indices are given their room once, judged from the first events, not grown by
//! doubling).
//! `Run::read_in_parts` reads a file in parts (`RunPart`: the header-only run, then `Part`s
//! of briefs and line spans with the bytes read) for a view that opens before the end;
//! `Run::extend` adds one. The same events and problems as `Run::open`.
//! Invariant: nothing in `Run` is ever rewritten, only appended, so live runs grow without
//! rebuilding and snapshots never go stale. What the metrics make of a run lives beside it, in
//! `metrics::run::RunFacts`.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rustc_hash::FxHashMap;

use super::catalog::ToolCatalog;
use super::event::{
    ActionKind, Event, EventBody, Header, JudgeRecord, NodeId, Observation, Phase, PlanChoice,
    RunStatus,
};
use super::lean::{Brief, LeanBody};
use super::reader::{EventStream, LineSpan, Problem, parse_event};
use crate::event::PredictionRecord;
use crate::recorded_call::RecordedCall;

/// Marks "no event" / "no node" in the `u32` indices.
pub const NONE: u32 = u32::MAX;

/// The fixed facts of one search-tree node (its changing values live in
/// [`super::fold::TreeState`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    /// The node's id in the file.
    pub id: NodeId,
    /// Arena slot of its parent.
    pub parent: Option<u32>,
    /// Depth as recorded.
    pub depth: u32,
    /// Index of its `node_added` event.
    pub added_at: u32,
    /// Which action leads into it; `None` for a search's root.
    pub action: Option<ActionKind>,
    /// Arena slots of its children, in the order they were added.
    pub children: Vec<u32>,
}

/// A real tool call, with the events it is paired with. What the metrics make of it lives
/// in `metrics::run::RunFacts`, which grows beside the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepRef {
    /// Index of its `tool_called` event.
    pub event: u32,
    /// Arena slot of the plan node it executes.
    pub node: Option<u32>,
    /// Index of the `node_simulated` event it is compared with: its node's latest before it,
    /// else (a prediction that came after the real call, as a shadowing proxy writes it) its
    /// node's first after it, which may lie past a cursor.
    pub simulated: Option<u32>,
    /// The call failed (`isError` or a transport error).
    pub is_error: bool,
}

/// A `plan_selected` event as the views read it.
#[derive(Debug, Clone, Copy)]
pub struct PlanEvent<'a> {
    /// Its index.
    pub event: u32,
    /// `best_mean`, `most_visited` or `chain`.
    pub rule: &'a str,
    /// The plan's node ids.
    pub nodes: &'a [NodeId],
    /// How the rule chose, when the run recorded it.
    pub choice: Option<&'a PlanChoice>,
}

/// A run loaded for viewing.
#[derive(Debug)]
pub struct Run {
    /// Where it came from (a file, or a label for a live run).
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Problems met while reading.
    pub problems: Vec<Problem>,
    /// Every good event, in file order, as far as the indices go.
    briefs: Vec<Brief>,
    texts: Texts,
    catalog: ToolCatalog,
    nodes: Vec<NodeInfo>,
    /// Fx-hashed, as `metrics::run` keys its simulations: ids are the file's own numbers.
    node_slot: FxHashMap<NodeId, u32>,
    /// Per event, where it sits in the tree (one vector, not two: a big run's indices are
    /// most of its memory, and every page of it is written once).
    links: Vec<EventLinks>,
    /// Per node, its latest simulation and evaluation so far.
    latest: Vec<Latest>,
    steps: Vec<StepRef>,
    /// Steps whose node had no simulation yet when they were made, by node slot: the node's
    /// next simulation is theirs ([`StepRef::simulated`]).
    awaiting_prediction: FxHashMap<u32, u32>,
    /// Simulations that came after the real call they pair with: event index to step.
    late_predictions: FxHashMap<u32, u32>,
    replayed: Vec<u32>,
    simulated_calls: Vec<u32>,
    phases: Vec<(u32, Phase, u64)>,
    plans: Vec<u32>,
    searches: Vec<u32>,
    answers: Vec<u32>,
    judges: Vec<u32>,
    /// `source_scored` events: an imported run's verdicts from its source.
    source_scores: Vec<u32>,
    rechecks: Vec<u32>,
    finishes: Vec<u32>,
    failures: Vec<u32>,
}

/// Where an event sits in the tree.
#[derive(Debug, Clone, Copy)]
struct EventLinks {
    /// The arena slot it concerns (node events only), else [`NONE`].
    slot: u32,
    /// The previous event it supersedes on the same node, else [`NONE`].
    prev_same: u32,
}

/// A node's latest `node_simulated` and `node_evaluated` events so far, else [`NONE`].
#[derive(Debug, Clone, Copy)]
struct Latest {
    simulated: u32,
    evaluated: u32,
}

/// Events read before [`Run::open`] judges how much room the rest of the file needs.
const GROWTH_SAMPLE: usize = 8192;

/// What [`Run::read_in_parts`] hands over.
#[derive(Debug)]
pub enum RunPart {
    /// The run: its header, no event yet.
    Begun(Box<Run>),
    /// Events read since the last part.
    More(Part),
}

/// Events of a run read in parts, and how far the reading has got.
#[derive(Debug, Default)]
pub struct Part {
    briefs: Vec<Brief>,
    spans: Vec<LineSpan>,
    /// Bytes of the file read so far.
    pub read: u64,
    /// The file's size when the reading began.
    pub total: u64,
    /// The problems met, in the last part only.
    pub problems: Option<Vec<Problem>>,
}

impl Part {
    /// A last part that says why the file could not be read to its end.
    pub fn failed(path: &Path, why: &str) -> Self {
        Self {
            problems: Some(vec![Problem {
                path: path.to_path_buf(),
                line: 0,
                severity: super::reader::Severity::Error,
                reason: format!("reading stopped: {why}"),
                skipped: true,
            }]),
            ..Self::default()
        }
    }

    /// Events in this part.
    pub fn len(&self) -> usize {
        self.briefs.len()
    }

    /// True when it holds no event.
    pub fn is_empty(&self) -> bool {
        self.briefs.is_empty()
    }
}

/// Where the whole events are.
#[derive(Debug, Default)]
struct Texts {
    /// The file the run was opened from (a handle of its own, read at offsets), and where
    /// each of the events read from it lies.
    file: Option<(File, Vec<LineSpan>)>,
    /// Events pushed after opening, whole, where their briefs do not hold them: they follow
    /// the file's.
    pushed: Vec<Option<Event>>,
}

impl Texts {
    /// How many events came from the file (the ones after them were pushed).
    fn read_from_file(&self) -> usize {
        self.file.as_ref().map_or(0, |(_, spans)| spans.len())
    }
}

/// The most bytes of nearby lines read back at once when several events are read.
const READ_BACK_BYTES: u64 = 1 << 20;

impl Run {
    /// An empty run (for a live view; events arrive by [`Run::push`]).
    pub fn new(path: PathBuf, header: Header) -> Self {
        let catalog = ToolCatalog::new(&header.tools);
        Self {
            path,
            header,
            problems: Vec::new(),
            briefs: Vec::new(),
            texts: Texts::default(),
            catalog,
            nodes: Vec::new(),
            node_slot: FxHashMap::default(),
            links: Vec::new(),
            latest: Vec::new(),
            steps: Vec::new(),
            awaiting_prediction: FxHashMap::default(),
            late_predictions: FxHashMap::default(),
            replayed: Vec::new(),
            simulated_calls: Vec::new(),
            phases: Vec::new(),
            plans: Vec::new(),
            searches: Vec::new(),
            answers: Vec::new(),
            judges: Vec::new(),
            source_scores: Vec::new(),
            rechecks: Vec::new(),
            finishes: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Reads a whole file, skipping and recording bad lines. Events are read back from the
    /// same file when shown, through a handle kept open (so a file renamed or deleted meanwhile
    /// still reads; one rewritten in place reads as an error event that says so).
    pub fn open(path: &Path) -> Result<Self> {
        let file = super::reader::open_regular(path)?;
        let reader = file
            .try_clone()
            .with_context(|| format!("opening {}", path.display()))?;
        let total = file.metadata().map_or(0, |m| m.len());
        let mut stream = EventStream::from_file(path, reader)?;
        let mut run = Self::new(path.to_path_buf(), stream.header().clone());
        let mut spans = Vec::new();
        stream.read_all(|brief, span| {
            run.add(brief);
            spans.push(span);
            if spans.len() == GROWTH_SAMPLE {
                run.expect_the_rest(span.start, total, &mut spans);
            }
        })?;
        run.texts.file = Some((file, spans));
        run.problems = stream.take_problems();
        Ok(run)
    }

    /// Makes room at once for what the rest of a file of `total` bytes will likely bring,
    /// judged from the events of the first `read` bytes. A big run's indices grown by doubling
    /// leave every smaller copy behind, and the allocator hands that memory back only later:
    /// opening a 144 MB run peaked at 1.5× its size that way. A guess too small only means
    /// doubling again; room never used is never touched, so it costs no memory. Room the
    /// system refuses (a file whose first lines are far shorter than the rest can make the
    /// guess huge) is not taken: the indices grow as they would have.
    fn expect_the_rest(&mut self, read: u64, total: u64, spans: &mut Vec<LineSpan>) {
        if read == 0 || total <= read {
            return;
        }
        let grow = |n: usize| (n as f64 * (total as f64 / read as f64) * 1.05) as usize;
        let events = grow(self.briefs.len()).saturating_sub(self.briefs.len());
        let nodes = grow(self.nodes.len()).saturating_sub(self.nodes.len());
        // Each in turn, stopping at the first refusal.
        let _ = self
            .briefs
            .try_reserve(events)
            .and_then(|()| spans.try_reserve(events))
            .and_then(|()| self.links.try_reserve(events))
            .and_then(|()| self.nodes.try_reserve(nodes))
            .and_then(|()| self.latest.try_reserve(nodes));
        let _ = self.node_slot.try_reserve(nodes);
    }

    /// Reads `path` in parts, for a view that shows its first screen before the rest is read:
    /// the run with its header and no event yet, then its events in parts of `first` events
    /// and later of `every`, each part handed to `send` with how far the reading has got, the
    /// last one with the problems met. Reading goes on to the end (the same events and problems
    /// as [`Run::open`]); a `send` that finds nobody listening stops nothing but the sending.
    pub fn read_in_parts(
        path: &Path,
        first: usize,
        every: usize,
        mut send: impl FnMut(RunPart) -> bool,
    ) -> Result<()> {
        let file = super::reader::open_regular(path)?;
        let total = file.metadata().map_or(0, |m| m.len());
        let reader = file
            .try_clone()
            .with_context(|| format!("opening {}", path.display()))?;
        let mut stream = EventStream::from_file(path, reader)?;
        let mut run = Self::new(path.to_path_buf(), stream.header().clone());
        run.texts.file = Some((file, Vec::new()));
        let mut listening = send(RunPart::Begun(Box::new(run)));
        let mut part = Part::default();
        let mut size = first.max(1);
        stream.read_all(|brief, span| {
            part.read = span.start + u64::from(span.len) + 1;
            part.briefs.push(brief);
            part.spans.push(span);
            if part.briefs.len() >= size && listening {
                part.total = total;
                listening = send(RunPart::More(std::mem::take(&mut part)));
                size = every.max(1);
            }
        })?;
        part.total = total;
        part.read = total;
        part.problems = Some(stream.take_problems());
        if listening {
            send(RunPart::More(part));
        }
        Ok(())
    }

    /// Adds a part read by [`Run::read_in_parts`]; true when it was the last.
    pub fn extend(&mut self, part: Part) -> bool {
        let first = self.briefs.is_empty();
        for brief in part.briefs {
            self.add(brief);
        }
        if let Some((file, mut spans)) = self.texts.file.take() {
            spans.extend(part.spans);
            if first && part.problems.is_none() {
                self.expect_the_rest(part.read, part.total, &mut spans);
            }
            self.texts.file = Some((file, spans));
        }
        match part.problems {
            Some(problems) => {
                self.problems = problems;
                true
            }
            None => false,
        }
    }

    /// Number of events (the cursor runs from 0 to this).
    pub fn len(&self) -> usize {
        self.briefs.len()
    }

    /// True when no event has arrived.
    pub fn is_empty(&self) -> bool {
        self.briefs.is_empty()
    }

    /// What the run keeps of event `i` in memory. Panics past the end.
    pub fn brief(&self, i: usize) -> &Brief {
        &self.briefs[i]
    }

    /// What the run keeps of every event, in order.
    pub fn briefs(&self) -> &[Brief] {
        &self.briefs
    }

    /// Event `i`, whole: from memory when kept whole, else read back from the file. Panics
    /// past the end.
    pub fn event(&self, i: usize) -> Cow<'_, Event> {
        if let Some(event) = self.briefs[i].whole() {
            return Cow::Borrowed(event);
        }
        let from_file = self.texts.read_from_file();
        match &self.texts.file {
            Some((file, spans)) if i < from_file => {
                let read = spans[i].read_from(file).map_err(|e| e.to_string());
                Cow::Owned(self.read_back(i, read.as_deref().map_err(Clone::clone)))
            }
            _ => Cow::Borrowed(
                self.texts.pushed[i - from_file]
                    .as_ref()
                    .expect("a pushed event its brief does not hold is kept whole"),
            ),
        }
    }

    /// Event `i` whole, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<Cow<'_, Event>> {
        (i < self.len()).then(|| self.event(i))
    }

    /// The last event.
    pub fn last(&self) -> Option<Cow<'_, Event>> {
        self.len().checked_sub(1).map(|i| self.event(i))
    }

    /// Every event, whole, read back into one list: for tests and small runs (a view reads
    /// what it shows with [`Self::event`] or [`Self::events_from`]).
    pub fn all_events(&self) -> Vec<Event> {
        self.events_from(0).map(Cow::into_owned).collect()
    }

    /// The events from `start` on, whole, in order; lines that follow each other in the file
    /// are read back together.
    pub fn events_from(&self, start: usize) -> impl Iterator<Item = Cow<'_, Event>> + '_ {
        self.events_at(start..self.len())
    }

    /// The events at `indices` (in increasing order, for speed), whole; lines near each other
    /// in the file are read back together. Panics on an index past the end.
    pub fn events_at<'a>(
        &'a self,
        indices: impl IntoIterator<Item = usize> + 'a,
    ) -> impl Iterator<Item = Cow<'a, Event>> + 'a {
        let mut block: (u64, Vec<u8>) = (0, Vec::new());
        indices.into_iter().map(move |i| {
            let Some((file, spans)) = &self.texts.file else {
                return self.event(i);
            };
            if self.briefs[i].whole().is_some() || i >= spans.len() {
                return self.event(i);
            }
            let span = spans[i];
            let inside = |(at, bytes): &(u64, Vec<u8>)| {
                span.start >= *at && span.start + u64::from(span.len) <= at + bytes.len() as u64
            };
            let mut read = Ok(());
            if !inside(&block) {
                // This line and the ones after it, up to a block's worth.
                let end = spans[i..]
                    .iter()
                    .map(|s| s.start + u64::from(s.len))
                    .take_while(|&end| end <= span.start + READ_BACK_BYTES)
                    .last()
                    .unwrap_or(span.start + u64::from(span.len))
                    .max(span.start + u64::from(span.len));
                block.0 = span.start;
                block.1.resize((end - span.start) as usize, 0);
                read = file.read_exact_at(&mut block.1, span.start);
                if read.is_err() {
                    block.1.clear();
                }
            }
            let at = (span.start - block.0) as usize;
            let bytes = read
                .map(|()| &block.1[at..at + span.len as usize])
                .map_err(|e| e.to_string());
            Cow::Owned(self.read_back(i, bytes))
        })
    }

    /// The event of line bytes read back for event `i`, or an error event that says why
    /// they are not it.
    fn read_back(&self, i: usize, bytes: Result<&[u8], String>) -> Event {
        let brief = &self.briefs[i];
        let event = bytes
            .and_then(|b| parse_event(b).map_err(|e| e.to_string()))
            .and_then(|event| {
                if event.seq == brief.seq && event.body.kind() == brief.kind() {
                    Ok(event)
                } else {
                    Err(format!(
                        "found seq {} {} where seq {} {} was",
                        event.seq,
                        event.body.kind(),
                        brief.seq,
                        brief.kind()
                    ))
                }
            });
        event.unwrap_or_else(|reason| Event {
            seq: brief.seq,
            t_ms: brief.t_ms,
            body: EventBody::Error {
                source: crate::event::ErrorSource::Trajectory,
                name: None,
                message: format!(
                    "{}: event seq {} could not be read back (was the file rewritten since it \
                     was opened?): {reason}",
                    self.path.display(),
                    brief.seq
                ),
                stderr_tail: None,
                step: None,
            },
        })
    }

    /// The compiled tool catalogue of the header.
    pub fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// Appends one event and extends every index.
    pub fn push(&mut self, event: Event) {
        let (brief, event) = Brief::split(event);
        self.add(brief);
        self.texts.pushed.push(event);
    }

    /// Extends every index with one more event.
    fn add(&mut self, brief: Brief) {
        let idx = u32::try_from(self.briefs.len()).expect("a run holds fewer than 2^32 events");
        let mut slot = NONE;
        let mut prev = NONE;
        match &brief.body {
            // A duplicate id keeps its first node; `validate` reports it.
            LeanBody::NodeAdded {
                node,
                parent,
                depth,
                action,
            } if !self.node_slot.contains_key(node) => {
                slot = self.nodes.len() as u32;
                let parent_slot = parent.and_then(|p| self.node_slot.get(&p).copied());
                if let Some(p) = parent_slot {
                    self.nodes[p as usize].children.push(slot);
                }
                self.nodes.push(NodeInfo {
                    id: *node,
                    parent: parent_slot,
                    depth: *depth,
                    added_at: idx,
                    action: *action,
                    children: Vec::new(),
                });
                self.node_slot.insert(*node, slot);
                self.latest.push(Latest {
                    simulated: NONE,
                    evaluated: NONE,
                });
            }
            LeanBody::NodeSimulated { node, .. } => {
                if let Some(&s) = self.node_slot.get(node) {
                    slot = s;
                    prev = std::mem::replace(&mut self.latest[s as usize].simulated, idx);
                    if let Some(step) = self.awaiting_prediction.remove(&s) {
                        self.steps[step as usize].simulated = Some(idx);
                        self.late_predictions.insert(idx, step);
                    }
                }
            }
            LeanBody::NodeEvaluated { node, .. } => {
                if let Some(&s) = self.node_slot.get(node) {
                    slot = s;
                    prev = std::mem::replace(&mut self.latest[s as usize].evaluated, idx);
                }
            }
            LeanBody::Phase(phase) => self.phases.push((idx, *phase, brief.t_ms)),
            LeanBody::Full(event) => match &event.body {
                body @ EventBody::ToolCalled { .. } => {
                    if let Some(call) = RecordedCall::of(body) {
                        self.take_call(idx, call)
                    }
                }
                // A fork's call that a world model answered in place of the recording.
                EventBody::CallSimulated { tool: Some(_), .. } => self.simulated_calls.push(idx),
                EventBody::PlanSelected { .. } => self.plans.push(idx),
                EventBody::SearchFinished { .. } => self.searches.push(idx),
                EventBody::Answer { .. } => self.answers.push(idx),
                EventBody::JudgeScored { .. } => self.judges.push(idx),
                EventBody::SourceScored { .. } => self.source_scores.push(idx),
                EventBody::Recheck { .. } => self.rechecks.push(idx),
                EventBody::RunFinished { .. } => self.finishes.push(idx),
                _ => {}
            },
            _ => {}
        }
        if brief.is_failure() {
            self.failures.push(idx);
        }
        self.links.push(EventLinks {
            slot,
            prev_same: prev,
        });
        self.briefs.push(brief);
    }

    /// A recorded call at event `idx`: a step of this run, or (a copy: a fork's history) one
    /// replayed, which is no step of it.
    fn take_call(&mut self, idx: u32, call: RecordedCall<'_>) {
        if call.is_copy() {
            self.replayed.push(idx);
            return;
        }
        let node_slot = call.node.and_then(|n| self.node_slot.get(&n).copied());
        let simulated = node_slot
            .map(|s| self.latest[s as usize].simulated)
            .filter(|&e| e != NONE);
        if let (Some(s), None) = (node_slot, simulated) {
            self.awaiting_prediction.insert(s, self.steps.len() as u32);
        }
        self.steps.push(StepRef {
            event: idx,
            node: node_slot,
            simulated,
            is_error: call.failed(),
        });
    }

    /// The arena slot an event concerns ([`NONE`] if none).
    pub(crate) fn event_slot(&self, event: usize) -> u32 {
        self.links[event].slot
    }

    /// The event an event supersedes on the same node ([`NONE`] if none).
    pub(crate) fn prev_same(&self, event: usize) -> u32 {
        self.links[event].prev_same
    }

    /// The arena slot of a node id.
    pub fn slot_of(&self, id: NodeId) -> Option<u32> {
        self.node_slot.get(&id).copied()
    }

    /// Every node ever added, in order (a prefix of it is visible at a cursor).
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// Every real call, in order.
    pub fn steps(&self) -> &[StepRef] {
        &self.steps
    }

    /// The calls copied from another run (a fork's replayed history), by event index: not
    /// this run's steps, but results its agent went on from.
    pub fn replayed(&self) -> &[u32] {
        &self.replayed
    }

    /// A fork's calls that a world model answered in place of the recording (`call_simulated`
    /// naming its call), by event index.
    pub fn simulated_calls(&self) -> &[u32] {
        &self.simulated_calls
    }

    /// Every call the run's answer rests on, by event index, in order: the replayed ones and
    /// the real ones.
    pub fn calls_with_replayed(&self) -> Vec<u32> {
        let mut all: Vec<u32> = self.steps.iter().map(|s| s.event).collect();
        all.extend(&self.replayed);
        all.sort_unstable();
        all
    }

    /// The world model's predictions in the run: `node_simulated` events that are not a
    /// validator's rejection.
    pub fn predictions(&self) -> u64 {
        self.briefs
            .iter()
            .filter(|b| {
                matches!(
                    b.body,
                    LeanBody::NodeSimulated {
                        by_validator: false,
                        ..
                    }
                )
            })
            .count() as u64
    }

    /// The predicted observation of a `node_simulated` event.
    pub fn simulated_observation(&self, event: u32) -> Option<Observation> {
        match self.get(event as usize)?.into_owned().body {
            EventBody::NodeSimulated {
                prediction: PredictionRecord { observation, .. },
                ..
            } => Some(observation),
            _ => None,
        }
    }

    /// The body of event `i` when it is kept whole in memory (every kind but the six
    /// [`Brief`] keeps as numbers).
    fn whole_body(&self, i: u32) -> Option<&EventBody> {
        self.briefs.get(i as usize)?.whole().map(|e| &e.body)
    }

    /// How many items of an index list lie before cursor `k`.
    fn count_before(list: &[u32], k: usize) -> usize {
        list.partition_point(|&e| (e as usize) < k)
    }

    /// The last event of a list before cursor `k`.
    fn latest_before(list: &[u32], k: usize) -> Option<u32> {
        Self::count_before(list, k).checked_sub(1).map(|i| list[i])
    }

    /// The step a simulation at event `e` pairs with when it came after that step's real call
    /// ([`StepRef::simulated`]).
    pub fn late_prediction_of(&self, e: u32) -> Option<usize> {
        self.late_predictions.get(&e).map(|&s| s as usize)
    }

    /// Steps executed before cursor `k`.
    pub fn steps_at(&self, k: usize) -> &[StepRef] {
        &self.steps[..self.steps.partition_point(|s| (s.event as usize) < k)]
    }

    /// The latest `plan_selected` before cursor `k`: its event index, rule, node ids and the
    /// choice it recorded.
    pub fn plan_event_at(&self, k: usize) -> Option<PlanEvent<'_>> {
        let e = Self::latest_before(&self.plans, k)?;
        match self.whole_body(e)? {
            EventBody::PlanSelected {
                nodes,
                rule,
                choice,
                ..
            } => Some(PlanEvent {
                event: e,
                rule,
                nodes,
                choice: choice.as_deref(),
            }),
            _ => None,
        }
    }

    /// The `search_finished` events before cursor `k`, by index.
    pub fn searches_before(&self, k: usize) -> &[u32] {
        &self.searches[..Self::count_before(&self.searches, k)]
    }

    /// The latest `search_finished` before cursor `k`: what the search's iterations did.
    pub fn search_finished_at(&self, k: usize) -> Option<&EventBody> {
        self.whole_body(Self::latest_before(&self.searches, k)?)
    }

    /// The plan selected by cursor `k`, as arena slots.
    pub fn plan_at(&self, k: usize) -> Vec<u32> {
        match Self::latest_before(&self.plans, k).and_then(|e| self.whole_body(e)) {
            Some(EventBody::PlanSelected { nodes, .. }) => {
                nodes.iter().filter_map(|n| self.slot_of(*n)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The answer given by cursor `k`.
    pub fn answer_at(&self, k: usize) -> Option<&str> {
        match self.whole_body(Self::latest_before(&self.answers, k)?)? {
            EventBody::Answer { text } => Some(text),
            _ => None,
        }
    }

    /// The phase at cursor `k`.
    pub fn phase_at(&self, k: usize) -> Option<Phase> {
        let n = self.phases.partition_point(|(e, _, _)| (*e as usize) < k);
        n.checked_sub(1).map(|i| self.phases[i].1)
    }

    /// The `run_finished` event by cursor `k`.
    pub fn finish_at(&self, k: usize) -> Option<&Event> {
        self.finish_index_at(k).and_then(|e| self.briefs[e].whole())
    }

    /// The event index of the latest `run_finished` before cursor `k`.
    pub fn finish_index_at(&self, k: usize) -> Option<usize> {
        Self::latest_before(&self.finishes, k).map(|e| e as usize)
    }

    /// The first event at or after `from` that is a real tool call.
    pub fn next_tool_call(&self, from: usize) -> Option<usize> {
        let i = self.steps.partition_point(|s| (s.event as usize) < from);
        self.steps.get(i).map(|s| s.event as usize)
    }

    /// The event index of the first real call that failed, if any.
    pub fn first_failed_call(&self) -> Option<usize> {
        self.steps
            .iter()
            .find(|s| s.is_error)
            .map(|s| s.event as usize)
    }

    /// The last real tool call before `before`.
    pub fn prev_tool_call(&self, before: usize) -> Option<usize> {
        let i = self.steps.partition_point(|s| (s.event as usize) < before);
        i.checked_sub(1).map(|i| self.steps[i].event as usize)
    }

    /// The first failure event at or after `from`.
    pub fn next_failure(&self, from: usize) -> Option<usize> {
        self.failures
            .get(Self::count_before(&self.failures, from))
            .map(|&e| e as usize)
    }

    /// The last failure event before `before`.
    pub fn prev_failure(&self, before: usize) -> Option<usize> {
        Self::latest_before(&self.failures, before).map(|e| e as usize)
    }

    /// The first event at or after `from` that concerns node `id`.
    pub fn next_event_of_node(&self, from: usize, id: NodeId) -> Option<usize> {
        self.briefs
            .get(from..)?
            .iter()
            .position(|e| e.touches(id))
            .map(|i| from + i)
    }

    /// The last event before `before` that concerns node `id`.
    pub fn prev_event_of_node(&self, before: usize, id: NodeId) -> Option<usize> {
        let end = before.min(self.briefs.len());
        self.briefs[..end].iter().rposition(|e| e.touches(id))
    }

    /// Phase changes before cursor `k`, with their times.
    pub fn phases_at(&self, k: usize) -> impl Iterator<Item = (Phase, u64)> + '_ {
        let end = self.phases.partition_point(|(e, _, _)| (*e as usize) < k);
        self.phases[..end].iter().map(|(_, p, t)| (*p, *t))
    }

    /// The verdicts the run's source recorded (`source_scored`) before cursor `k`, counted.
    pub fn source_tally_at(&self, k: usize) -> crate::event::SourceTally {
        let mut tally = crate::event::SourceTally::default();
        let before = self.source_scores.partition_point(|&e| (e as usize) < k);
        for &i in &self.source_scores[..before] {
            if let Some(EventBody::SourceScored { passed, .. }) = self.whole_body(i) {
                tally.add(*passed);
            }
        }
        tally
    }

    /// The `source_scored` events, by index.
    pub fn source_scores(&self) -> &[u32] {
        &self.source_scores
    }

    /// The latest judgement before cursor `k`.
    pub fn judge_at(&self, k: usize) -> Option<JudgeRecord<'_>> {
        self.whole_body(Self::latest_before(&self.judges, k)?)?
            .judge_record()
    }

    /// The latest recheck of the run's calls (`cosmos recheck`) before cursor `k`.
    pub fn recheck_at(&self, k: usize) -> Option<&EventBody> {
        self.whole_body(Self::latest_before(&self.rechecks, k)?)
    }

    /// The status `run_finished` gave, by cursor `k`.
    pub fn status_at(&self, k: usize) -> Option<RunStatus> {
        match &self.finish_at(k)?.body {
            EventBody::RunFinished { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True when an answer was given before cursor `k`.
    pub fn answered_at(&self, k: usize) -> bool {
        Self::count_before(&self.answers, k) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{self, Spec};

    /// The room a run makes for the rest of its file is a guess: one the system cannot give
    /// (here more than the address space) is passed over, and the run reads on as before.
    #[test]
    fn room_the_system_refuses_is_passed_over() {
        let spec = Spec {
            nodes: 20,
            ..Spec::default()
        };
        let mut run = Run::new("guess".into(), synthetic::header(&spec));
        let events = synthetic::events(&spec);
        let mut spans = Vec::new();
        let add = |run: &mut Run, spans: &mut Vec<LineSpan>, i: usize| {
            let (t_ms, body) = events[i].clone();
            run.add(Brief::of(Event {
                seq: i as u64 + 1,
                t_ms,
                body,
            }));
            spans.push(LineSpan {
                start: i as u64 * 100,
                len: 99,
            });
        };
        for i in 0..events.len() / 2 {
            add(&mut run, &mut spans, i);
        }
        let capacity = run.briefs.capacity();
        run.expect_the_rest(100, u64::MAX, &mut spans);
        assert_eq!(run.briefs.capacity(), capacity, "nothing was reserved");
        // A guess it can give is taken.
        run.expect_the_rest(1_000, 4_000, &mut spans);
        assert!(
            run.briefs.capacity() >= run.len() * 3,
            "{}",
            run.briefs.capacity()
        );
        for i in events.len() / 2..events.len() {
            add(&mut run, &mut spans, i);
        }
        assert_eq!(run.len(), events.len());
        assert!(!run.nodes().is_empty());
    }
}
