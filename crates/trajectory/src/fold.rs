//! The fold: events `0..k` → the search tree's changing values at cursor `k`.
//!
//! Only what changes per node is folded here; everything append-only lives in
//! [`Run`]'s indices. Every event can be undone exactly: value sums are kept in
//! fixed point (nano-units), so adding and then removing a value restores the same bits,
//! and seeking backward is as cheap as forward. [`Cursor`] adds sparse snapshots so that
//! a jump anywhere costs at most a few tens of thousands of steps.
//!
//! `TreeState`, the only state that is folded: per-node visits, value sum, latest
//! simulation and evaluation. Every event can be applied and **undone exactly** (value sums are
//! fixed-point integers), so `Cursor` seeks both ways by stepping, with at most 16 snapshots (and about 16 MB of them) to
//! bound long jumps; a run that grows past what its cursor was made for (live, read in parts)
//! spaces them further apart to stay within that. Visible nodes at cursor k are a prefix of the arena. A run is folded from
//! the start once when opened (`Cursor::advance_observing` lets the run view fill its charts on
//! that pass).

use std::collections::BTreeMap;

use super::lean::LeanBody;
use super::run::{NONE, Run};

/// Fixed-point scale of value sums.
const NANO: f64 = 1e9;

/// The changing values of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeDyn {
    /// Visits N.
    pub visits: u32,
    /// Sum of backpropagated values, in nano-units.
    pub value_nano: i64,
    /// Latest `node_simulated` event for the node, or [`NONE`].
    pub simulated: u32,
    /// Latest `node_evaluated` event for the node, or [`NONE`].
    pub evaluated: u32,
}

impl Default for NodeDyn {
    fn default() -> Self {
        Self {
            visits: 0,
            value_nano: 0,
            simulated: NONE,
            evaluated: NONE,
        }
    }
}

impl NodeDyn {
    /// Mean value Q = value sum / N; `None` before the first visit.
    pub fn q(&self) -> Option<f64> {
        (self.visits > 0).then(|| self.value_nano as f64 / NANO / f64::from(self.visits))
    }

    /// The value sum as a float.
    pub fn value_sum(&self) -> f64 {
        self.value_nano as f64 / NANO
    }
}

fn to_nano(value: f64) -> i64 {
    if value.is_finite() {
        (value.clamp(-1e6, 1e6) * NANO).round() as i64
    } else {
        0
    }
}

/// The tree at a cursor: visible nodes are the first `nodes.len()` of the run's arena.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TreeState {
    applied: usize,
    nodes: Vec<NodeDyn>,
}

impl TreeState {
    /// Folds events `0..k` from scratch.
    pub fn fold(run: &Run, k: usize) -> Self {
        let mut state = Self::default();
        while state.applied < k.min(run.len()) {
            state.apply(run);
        }
        state
    }

    /// The cursor: how many events are applied.
    pub fn applied(&self) -> usize {
        self.applied
    }

    /// Nodes visible at this cursor.
    pub fn visible_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The values of the node in arena slot `slot`, if visible.
    pub fn node(&self, slot: u32) -> Option<&NodeDyn> {
        self.nodes.get(slot as usize)
    }

    /// All visible nodes' values, by arena slot.
    pub fn nodes(&self) -> &[NodeDyn] {
        &self.nodes
    }

    /// Applies the next event. Panics past the end of the run.
    pub fn apply(&mut self, run: &Run) {
        let i = self.applied;
        let slot = run.event_slot(i);
        match &run.brief(i).body {
            LeanBody::NodeAdded { .. } if slot != NONE => self.nodes.push(NodeDyn::default()),
            LeanBody::NodeSimulated { .. } if (slot as usize) < self.nodes.len() => {
                self.nodes[slot as usize].simulated = i as u32;
            }
            LeanBody::NodeEvaluated { .. } if (slot as usize) < self.nodes.len() => {
                self.nodes[slot as usize].evaluated = i as u32;
            }
            LeanBody::Backpropagated { path, value } => {
                self.add_along(run, path, to_nano(*value), 1)
            }
            _ => {}
        }
        self.applied += 1;
    }

    /// Undoes the last applied event. Panics at cursor 0.
    pub fn unapply(&mut self, run: &Run) {
        let i = self.applied - 1;
        let slot = run.event_slot(i);
        match &run.brief(i).body {
            LeanBody::NodeAdded { .. } if slot != NONE => {
                self.nodes.pop();
            }
            LeanBody::NodeSimulated { .. } if (slot as usize) < self.nodes.len() => {
                self.nodes[slot as usize].simulated = run.prev_same(i);
            }
            LeanBody::NodeEvaluated { .. } if (slot as usize) < self.nodes.len() => {
                self.nodes[slot as usize].evaluated = run.prev_same(i);
            }
            LeanBody::Backpropagated { path, value } => {
                self.add_along(run, path, -to_nano(*value), -1)
            }
            _ => {}
        }
        self.applied = i;
    }

    fn add_along(&mut self, run: &Run, path: &[u64], value_nano: i64, visits: i64) {
        for id in path {
            // A node not yet visible is skipped the same way in both directions,
            // because visibility is the same just before and just after this event.
            if let Some(n) = run
                .slot_of(*id)
                .and_then(|s| self.nodes.get_mut(s as usize))
            {
                n.visits = (i64::from(n.visits) + visits) as u32;
                n.value_nano += value_nano;
            }
        }
    }

    /// The reward of the node's latest evaluation.
    pub fn last_reward(&self, run: &Run, slot: u32) -> Option<f64> {
        let e = self.node(slot)?.evaluated;
        match &run.briefs().get(e as usize)?.body {
            LeanBody::NodeEvaluated { reward, .. } => Some(*reward),
            _ => None,
        }
    }

    /// Whether the node's latest `node_evaluated` ended the search's imagination there
    /// (routing's short horizon).
    pub fn horizon(&self, run: &Run, slot: u32) -> bool {
        let Some(n) = self.node(slot) else {
            return false;
        };
        matches!(
            run.briefs().get(n.evaluated as usize).map(|b| &b.body),
            Some(LeanBody::NodeEvaluated { horizon: true, .. })
        )
    }

    /// The verdict of the node's latest `node_evaluated`, if it has been evaluated.
    pub fn verdict(&self, run: &Run, slot: u32) -> Option<super::event::Verdict> {
        let e = self.node(slot)?.evaluated;
        match &run.briefs().get(e as usize)?.body {
            LeanBody::NodeEvaluated { verdict, .. } => Some(*verdict),
            _ => None,
        }
    }
}

/// How many snapshots a cursor keeps at most.
const MAX_SNAPSHOTS: usize = 16;
/// About how much memory a cursor's snapshots may hold together; a big tree gets fewer of
/// them (but never under 4), spaced further apart.
const SNAPSHOT_BYTES: usize = 16 << 20;
/// Fewest events between snapshots.
const MIN_INTERVAL: usize = 16_384;

/// A position in a run with cheap seeking in both directions.
#[derive(Debug, Clone)]
pub struct Cursor {
    state: TreeState,
    snapshots: BTreeMap<usize, TreeState>,
    interval: usize,
}

impl Cursor {
    /// A cursor at 0, spacing snapshots for a run of `run.len()` events and
    /// `run.nodes().len()` nodes.
    pub fn new(run: &Run) -> Self {
        let interval = (run.len() / Self::snapshots_for(run.nodes().len())).max(MIN_INTERVAL);
        Self {
            state: TreeState::default(),
            snapshots: BTreeMap::new(),
            interval,
        }
    }

    /// The position (events applied).
    pub fn position(&self) -> usize {
        self.state.applied
    }

    /// The tree at the position.
    pub fn state(&self) -> &TreeState {
        &self.state
    }

    /// Moves to `k` (clamped to the run), by the cheapest of: stepping from here, or
    /// restoring the nearest snapshot and stepping from there.
    pub fn seek(&mut self, run: &Run, k: usize) {
        let k = k.min(run.len());
        let here = self.state.applied.abs_diff(k);
        let clone_cost = self.state.nodes.len() / 8;
        let below = self.snapshots.range(..=k).next_back().map(|(&p, _)| p);
        let above = self.snapshots.range(k..).next().map(|(&p, _)| p);
        let best = [below, above]
            .into_iter()
            .flatten()
            .min_by_key(|p| p.abs_diff(k));
        if let Some(p) = best
            && p.abs_diff(k) + clone_cost < here
        {
            self.state.clone_from(&self.snapshots[&p]);
        }
        while self.state.applied < k {
            self.state.apply(run);
            self.maybe_snapshot();
        }
        while self.state.applied > k {
            self.state.unapply(run);
        }
    }

    /// Steps forward to `k` (clamped), showing `observe` the state after every event: the
    /// run view's first pass builds its charts this way instead of folding twice.
    pub fn advance_observing(&mut self, run: &Run, k: usize, mut observe: impl FnMut(&TreeState)) {
        let k = k.min(run.len());
        while self.state.applied < k {
            self.state.apply(run);
            self.maybe_snapshot();
            observe(&self.state);
        }
    }

    /// How many snapshots the memory budget allows for a tree of `nodes` nodes.
    fn snapshots_for(nodes: usize) -> usize {
        // A snapshot holds the tree as it was: on average half the final tree.
        let per_snapshot = (nodes / 2).max(1) * std::mem::size_of::<NodeDyn>();
        (SNAPSHOT_BYTES / per_snapshot).clamp(4, MAX_SNAPSHOTS)
    }

    fn maybe_snapshot(&mut self) {
        let at = self.state.applied;
        if at.is_multiple_of(self.interval) && !self.snapshots.contains_key(&at) {
            self.snapshots.insert(at, self.state.clone());
            // A run that grew past what the cursor was made for (a live run, one read in
            // parts) would otherwise gather snapshots without end: space them twice as far
            // apart, keeping the ones on the wider spacing.
            while self.snapshots.len() > Self::snapshots_for(self.state.nodes.len()) {
                self.interval *= 2;
                let interval = self.interval;
                self.snapshots.retain(|at, _| at.is_multiple_of(interval));
            }
        }
    }

    /// The snapshots held (for tests of the memory bound).
    pub fn snapshots(&self) -> usize {
        self.snapshots.len()
    }
}
