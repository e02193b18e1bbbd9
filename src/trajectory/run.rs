//! A whole run in memory, with the indices the explorer needs: the node arena, the
//! executed steps paired with their simulations, and per-kind event lists for jumps.
//!
//! Invariant: every index here is append-only, so a live run grows by [`Run::push`]
//! without rebuilding anything, and the state at any cursor is a function of a prefix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::catalog::ToolCatalog;
use super::event::{Event, EventBody, Header, JudgeScores, NodeId, Observation, Phase, RunStatus};
use super::reader::{EventStream, Problem};

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
    /// Index of the `node_simulated` event it is compared with.
    pub simulated: Option<u32>,
    /// The call failed (`isError` or a transport error).
    pub is_error: bool,
}

/// A run loaded for viewing.
#[derive(Debug)]
pub struct Run {
    /// Where it came from (a file, or a label for a live run).
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// Every good event, in file order.
    pub events: Vec<Event>,
    /// Problems met while reading.
    pub problems: Vec<Problem>,
    catalog: ToolCatalog,
    nodes: Vec<NodeInfo>,
    node_slot: HashMap<NodeId, u32>,
    /// Per event: the arena slot it concerns (node events only), else [`NONE`].
    event_slot: Vec<u32>,
    /// Per event: the previous event it supersedes on the same node, else [`NONE`].
    prev_same: Vec<u32>,
    last_simulated: Vec<u32>,
    last_evaluated: Vec<u32>,
    steps: Vec<StepRef>,
    phases: Vec<(u32, Phase, u64)>,
    plans: Vec<u32>,
    answers: Vec<u32>,
    judges: Vec<u32>,
    finishes: Vec<u32>,
    failures: Vec<u32>,
}

impl Run {
    /// An empty run (for a live view; events arrive by [`Run::push`]).
    pub fn new(path: PathBuf, header: Header) -> Self {
        let catalog = ToolCatalog::new(&header.tools);
        Self {
            path,
            header,
            events: Vec::new(),
            problems: Vec::new(),
            catalog,
            nodes: Vec::new(),
            node_slot: HashMap::new(),
            event_slot: Vec::new(),
            prev_same: Vec::new(),
            last_simulated: Vec::new(),
            last_evaluated: Vec::new(),
            steps: Vec::new(),
            phases: Vec::new(),
            plans: Vec::new(),
            answers: Vec::new(),
            judges: Vec::new(),
            finishes: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Reads a whole file, skipping and recording bad lines.
    pub fn open(path: &Path) -> Result<Self> {
        let mut stream = EventStream::open(path)?;
        let mut run = Self::new(path.to_path_buf(), stream.header().clone());
        stream.read_all(|event| run.push(event))?;
        run.problems = stream.take_problems();
        Ok(run)
    }

    /// Number of events (the cursor runs from 0 to this).
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when no event has arrived.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The compiled tool catalogue of the header.
    pub fn catalog(&self) -> &ToolCatalog {
        &self.catalog
    }

    /// Appends one event and extends every index.
    pub fn push(&mut self, event: Event) {
        let idx = u32::try_from(self.events.len()).expect("a run holds fewer than 2^32 events");
        let mut slot = NONE;
        let mut prev = NONE;
        match &event.body {
            // A duplicate id keeps its first node; `validate` reports it.
            EventBody::NodeAdded {
                node,
                parent,
                depth,
                ..
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
                    children: Vec::new(),
                });
                self.node_slot.insert(*node, slot);
                self.last_simulated.push(NONE);
                self.last_evaluated.push(NONE);
            }
            EventBody::NodeSimulated { node, .. } => {
                if let Some(&s) = self.node_slot.get(node) {
                    slot = s;
                    prev = std::mem::replace(&mut self.last_simulated[s as usize], idx);
                }
            }
            EventBody::NodeEvaluated { node, .. } => {
                if let Some(&s) = self.node_slot.get(node) {
                    slot = s;
                    prev = std::mem::replace(&mut self.last_evaluated[s as usize], idx);
                }
            }
            EventBody::ToolCalled {
                result,
                node,
                error,
                ..
            } => {
                let node_slot = node.and_then(|n| self.node_slot.get(&n).copied());
                let simulated = node_slot
                    .map(|s| self.last_simulated[s as usize])
                    .filter(|&e| e != NONE);
                self.steps.push(StepRef {
                    event: idx,
                    node: node_slot,
                    simulated,
                    is_error: result.is_error || error.is_some(),
                });
            }
            EventBody::Phase { phase } => self.phases.push((idx, *phase, event.t_ms)),
            EventBody::PlanSelected { .. } => self.plans.push(idx),
            EventBody::Answer { .. } => self.answers.push(idx),
            EventBody::JudgeScored { .. } => self.judges.push(idx),
            EventBody::RunFinished { .. } => self.finishes.push(idx),
            _ => {}
        }
        if event.body.is_failure() {
            self.failures.push(idx);
        }
        self.event_slot.push(slot);
        self.prev_same.push(prev);
        self.events.push(event);
    }

    /// The arena slot an event concerns ([`NONE`] if none).
    pub(crate) fn event_slot(&self, event: usize) -> u32 {
        self.event_slot[event]
    }

    /// The event an event supersedes on the same node ([`NONE`] if none).
    pub(crate) fn prev_same(&self, event: usize) -> u32 {
        self.prev_same[event]
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

    /// The predicted observation of a `node_simulated` event.
    pub fn simulated_observation(&self, event: u32) -> Option<&Observation> {
        match &self.events.get(event as usize)?.body {
            EventBody::NodeSimulated { observation, .. } => Some(observation),
            _ => None,
        }
    }

    /// How many items of an index list lie before cursor `k`.
    fn count_before(list: &[u32], k: usize) -> usize {
        list.partition_point(|&e| (e as usize) < k)
    }

    /// The last event of a list before cursor `k`.
    fn latest_before(list: &[u32], k: usize) -> Option<u32> {
        Self::count_before(list, k).checked_sub(1).map(|i| list[i])
    }

    /// Steps executed before cursor `k`.
    pub fn steps_at(&self, k: usize) -> &[StepRef] {
        &self.steps[..self.steps.partition_point(|s| (s.event as usize) < k)]
    }

    /// The latest `plan_selected` before cursor `k`: its event index, rule and node ids.
    pub fn plan_event_at(&self, k: usize) -> Option<(u32, &str, &[NodeId])> {
        let e = Self::latest_before(&self.plans, k)?;
        match &self.events[e as usize].body {
            EventBody::PlanSelected { nodes, rule } => Some((e, rule.as_str(), nodes.as_slice())),
            _ => None,
        }
    }

    /// The plan selected by cursor `k`, as arena slots.
    pub fn plan_at(&self, k: usize) -> Vec<u32> {
        match Self::latest_before(&self.plans, k).map(|e| &self.events[e as usize].body) {
            Some(EventBody::PlanSelected { nodes, .. }) => {
                nodes.iter().filter_map(|n| self.slot_of(*n)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The answer given by cursor `k`.
    pub fn answer_at(&self, k: usize) -> Option<&str> {
        match &self.events[Self::latest_before(&self.answers, k)? as usize].body {
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
        Self::latest_before(&self.finishes, k).map(|e| &self.events[e as usize])
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
        self.events
            .get(from..)?
            .iter()
            .position(|e| Self::touches(e, id))
            .map(|i| from + i)
    }

    /// The last event before `before` that concerns node `id`.
    pub fn prev_event_of_node(&self, before: usize, id: NodeId) -> Option<usize> {
        let end = before.min(self.events.len());
        self.events[..end]
            .iter()
            .rposition(|e| Self::touches(e, id))
    }

    fn touches(e: &Event, id: NodeId) -> bool {
        match &e.body {
            EventBody::Backpropagated { path, .. } => path.contains(&id),
            EventBody::PlanSelected { nodes, .. } => nodes.contains(&id),
            body => body.node() == Some(id),
        }
    }

    /// Phase changes before cursor `k`, with their times.
    pub fn phases_at(&self, k: usize) -> impl Iterator<Item = (Phase, u64)> + '_ {
        let end = self.phases.partition_point(|(e, _, _)| (*e as usize) < k);
        self.phases[..end].iter().map(|(_, p, t)| (*p, *t))
    }

    /// The latest judge scores before cursor `k`.
    pub fn judge_at(&self, k: usize) -> Option<&JudgeScores> {
        match &self.events[Self::latest_before(&self.judges, k)? as usize].body {
            EventBody::JudgeScored { scores, .. } => Some(scores),
            _ => None,
        }
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
