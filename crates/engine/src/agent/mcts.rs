//! The search of SPIRAL-Exec, apart from any model: Monte Carlo tree search over states
//! (the task plus the simulated steps so far), with UCT selection, K candidates per
//! expansion, each rehearsed by [`super::rehearse`], and backpropagation. Everything it does
//! is an event, emitted in a fixed order, so replaying the file rebuilds the tree.
//!
//! Models come in through [`SearchEnv`]; the unit tests drive it with a toy environment.
//!
//! SPIRAL's search, model-free: `Tree` (UCT selection with unvisited children first,
//! backpropagation, plan by best mean or most visits; `not_simulated` nodes never in a plan) and
//! `search`, which drives a `SearchEnv` (propose K, should_stop, plus what `rehearse` needs) and
//! records every event in a fixed order. `search_from` roots a search at an `Origin` (real steps
//! taken, the run's first id, the node it hangs under): the `Tree` always counts from 0 and only
//! the emitted events carry the run's ids, so a revision's nodes never collide with the first
//! search's. Candidates of one expansion are rehearsed concurrently (`buffered`, so results,
//! events and the tree do not depend on which call finishes first). An expansion with no usable
//! candidate asks again with the reasons (`retries`); a node whose children are all dead ends is
//! widened (`widen`); `Settled::Skip` keeps selection off settled paths (`Node::settled`, kept up
//! the path by `settle_from`). A node the world model could not simulate is never
//! backpropagated nor selected by value (it has no value; its parent's N and Q are its simulated
//! children's). Every search ends with one `search_finished` (its `Accounting` and `Stopped`):
//! `grow` keeps what it did in a `Search` the caller owns, so a search dropped mid-way by a stop
//! or the time budget is still `finish`ed (`interrupted`, or `budget`). Routing's short horizon:
//! each node carries `trust`, the product of `Rehearsal::trust` from the root, and a valid node
//! whose trust falls below `go_real_below` is terminal with `horizon` set
//! (`Rehearsal::stop_at_horizon`; no dead end). `Tree::choose` is the plan
//! rule: the plan, its pool and the pool's best nodes in the rule's order, which `plan_selected`
//! records (`PlanChoice`) so no view re-derives the choice. Unit-tested on a toy environment.

use std::collections::HashSet;

use anyhow::Result;
use futures::StreamExt;
use futures::future::BoxFuture;

use super::ports::EventSink;
use super::rehearse::{self, Rehearsal};
use super::search_env::{SearchEnv, Stopped};
use crate::world_model::{HistoryStep, canonical};
use cosmos_trajectory::event::{
    Action, EventBody, NodeId, Observation, PlanChoice, PlanPool, RankedNode, Verdict,
};

use super::settings::{PlanRule, Settings, Settled};

/// One node of the search tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Its parent.
    pub parent: Option<usize>,
    /// Its children, in the order added.
    pub children: Vec<usize>,
    /// Depth (root 0).
    pub depth: u32,
    /// The action leading here (`None` at the root).
    pub action: Option<Action>,
    /// The predicted observation of the action.
    pub observation: Option<Observation>,
    /// The predicted state of the action's server after it, when the world model tracks
    /// state (none when the call went real).
    pub predicted_state: Option<std::sync::Arc<serde_json::Value>>,
    /// Visits N.
    pub visits: u32,
    /// Sum of backpropagated values.
    pub value_sum: f64,
    /// Combined reward when evaluated.
    pub reward: f64,
    /// Ends a path.
    pub terminal: bool,
    /// Its verdict once rehearsed.
    pub verdict: Option<Verdict>,
    /// Times it was expanded again because its children were all dead ends.
    pub widened: u32,
    /// Nothing below it can still change: it is terminal, or its children are all settled
    /// and it will not be widened again.
    pub settled: bool,
    /// Routing: its prediction was unsure and its tool not read-only (`Rehearsal::risky`).
    pub risky: bool,
    /// The product of [`Rehearsal::trust`] along the path from the root to here (1 at the
    /// root): how far the search's imagination of this state may be trusted.
    pub trust: f64,
    /// Routing's short horizon: the search imagines no further below this node, since
    /// `trust` fell below `go_real_below` here (`Rehearsal::horizon`).
    pub horizon: Option<f64>,
}

impl Node {
    /// A new, unvisited node.
    fn new(parent: Option<usize>, depth: u32, action: Option<Action>) -> Self {
        Self {
            parent,
            children: vec![],
            depth,
            action,
            observation: None,
            predicted_state: None,
            visits: 0,
            value_sum: 0.0,
            reward: 0.0,
            terminal: false,
            verdict: None,
            widened: 0,
            settled: false,
            risky: false,
            trust: 1.0,
            horizon: None,
        }
    }

    /// A terminal node that does not finish: a dead end, an invalid call, or one the world
    /// model could not simulate (not one the horizon stopped: its state is valid, only too
    /// uncertain to imagine past).
    pub fn dead_end(&self) -> bool {
        self.terminal && self.verdict != Some(Verdict::Finish) && self.horizon.is_none()
    }

    /// Mean value Q (0 before any visit).
    pub fn q(&self) -> f64 {
        if self.visits == 0 {
            0.0
        } else {
            self.value_sum / f64::from(self.visits)
        }
    }
}

/// The search tree; node ids are indices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    /// Every node; index = id.
    pub nodes: Vec<Node>,
}

impl Tree {
    /// A tree with only the root.
    pub fn new() -> Self {
        Self {
            nodes: vec![Node::new(None, 0, None)],
        }
    }

    /// UCT from the root: unvisited children first (in order), then the best
    /// `Q + c·sqrt(ln N_parent / N)`; stops at a node without children or a terminal one.
    pub fn select(&self, c: f64) -> usize {
        self.select_with(c, 0, Settled::Revisit)
            .expect("revisiting never runs out of nodes")
    }

    /// [`Tree::select`], also stopping at a node whose children are all dead ends while it may
    /// be widened (fewer than `widen` times so far), and, with [`Settled::Skip`], never
    /// entering a settled node. `None` when every path is settled and skipped.
    pub fn select_with(&self, c: f64, widen: u32, settled: Settled) -> Option<usize> {
        let skip = settled == Settled::Skip;
        if skip && self.nodes[0].settled {
            return None;
        }
        let mut at = 0;
        loop {
            let node = &self.nodes[at];
            if node.terminal || node.children.is_empty() || self.widenable(at, widen) {
                return Some(at);
            }
            // A child the world model could not simulate has no value to select by.
            let simulated = node
                .children
                .iter()
                .copied()
                .filter(|&ch| self.nodes[ch].verdict != Some(Verdict::NotSimulated));
            if simulated.clone().next().is_none() {
                // Nothing below it was simulated: it is as good as a leaf, to expand again.
                return (!skip).then_some(at);
            }
            let open = simulated.filter(|&ch| !(skip && self.nodes[ch].settled));
            if let Some(unvisited) = open.clone().find(|&ch| self.nodes[ch].visits == 0) {
                return Some(unvisited);
            }
            let ln_parent = f64::from(node.visits.max(1)).ln();
            at = open.max_by(|&a, &b| {
                self.uct(a, c, ln_parent)
                    .total_cmp(&self.uct(b, c, ln_parent))
                    .then(b.cmp(&a))
            })?;
        }
    }

    /// Its children are all dead ends and it may be expanded again.
    fn widenable(&self, n: usize, widen: u32) -> bool {
        let node = &self.nodes[n];
        node.widened < widen
            && !node.children.is_empty()
            && node.children.iter().all(|&ch| self.nodes[ch].dead_end())
    }

    /// Recomputes [`Node::settled`] from `n` up to the root.
    fn settle_from(&mut self, n: usize, widen: u32) {
        let mut at = Some(n);
        while let Some(i) = at {
            let node = &self.nodes[i];
            let settled = node.terminal
                || (!node.children.is_empty()
                    && node.children.iter().all(|&ch| self.nodes[ch].settled)
                    && !self.widenable(i, widen));
            self.nodes[i].settled = settled;
            at = self.nodes[i].parent;
        }
    }

    fn uct(&self, n: usize, c: f64, ln_parent: f64) -> f64 {
        let node = &self.nodes[n];
        node.q() + c * (ln_parent / f64::from(node.visits)).sqrt()
    }

    /// The ids from the root down to `n`.
    pub fn path(&self, n: usize) -> Vec<usize> {
        let mut path = vec![n];
        while let Some(p) = self.nodes[*path.last().expect("non-empty")].parent {
            path.push(p);
        }
        path.reverse();
        path
    }

    /// The simulated steps from the root to `n`.
    pub fn history(&self, n: usize) -> Vec<HistoryStep> {
        self.path(n)
            .into_iter()
            .filter_map(
                |i| match (&self.nodes[i].action, &self.nodes[i].observation) {
                    (Some(Action::ToolCall { tool, arguments }), Some(obs)) => Some(HistoryStep {
                        tool: tool.clone(),
                        arguments: arguments.clone(),
                        observation: obs.clone(),
                        state_change: None,
                        predicted_state: self.nodes[i].predicted_state.clone(),
                    }),
                    _ => None,
                },
            )
            .collect()
    }

    /// Adds `value` to every node from the root to `n`, one visit each.
    pub fn backpropagate(&mut self, n: usize, value: f64) -> Vec<usize> {
        let path = self.path(n);
        for &i in &path {
            self.nodes[i].visits += 1;
            self.nodes[i].value_sum += value;
        }
        path
    }

    /// The final plan: the path to the best terminal `finish` node by `rule` (any node when
    /// no path finished), without the root. Ties go to the earlier node. A node the world
    /// model could not simulate, or a call its tool's schema rejected, is never part of a
    /// plan: the first is unknown, the second known to fail.
    pub fn plan(&self, rule: PlanRule) -> Vec<usize> {
        self.choose(rule).path
    }

    /// The plan and how `rule` chose it: the pool, and its best nodes in the rule's order.
    pub fn choose(&self, rule: PlanRule) -> Choice {
        let candidates =
            (1..self.nodes.len()).filter(|&i| Verdict::may_be_planned(self.nodes[i].verdict));
        let finishes: Vec<usize> = candidates
            .clone()
            .filter(|&i| matches!(self.nodes[i].action, Some(Action::Finish { .. })))
            .collect();
        let (pool, ranked) = if finishes.is_empty() {
            (PlanPool::EveryNode, candidates.collect::<Vec<_>>())
        } else {
            (PlanPool::Finished, finishes)
        };
        let score = |i: usize| match rule {
            PlanRule::BestMean => self.nodes[i].q(),
            PlanRule::MostVisited => f64::from(self.nodes[i].visits),
        };
        let pool_size = ranked.len();
        // Best first; every node within a tie (`PlanChoice::TIE`) of the best score ties with
        // it and the earlier of them wins; the rest by score, the earlier among equals (a
        // stable sort keeps index order). The tolerance stays out of the comparator, which
        // must be a total order.
        let best = ranked.iter().map(|&i| score(i)).max_by(f64::total_cmp);
        let (mut tied, mut rest): (Vec<usize>, Vec<usize>) = ranked
            .into_iter()
            .partition(|&i| best.is_some_and(|b| b - score(i) <= PlanChoice::TIE));
        rest.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
        tied.sort_unstable();
        tied.append(&mut rest);
        let mut ranked = tied;
        let path = ranked
            .first()
            .map(|&best| self.path(best).into_iter().skip(1).collect())
            .unwrap_or_default();
        ranked.truncate(PlanChoice::RANKED);
        Choice {
            path,
            pool,
            pool_size,
            ranked,
        }
    }
}

/// A plan and how the rule chose it ([`Tree::choose`]), in tree indices.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The plan's nodes, without the root.
    pub path: Vec<usize>,
    /// What the rule chose among.
    pub pool: PlanPool,
    /// How many nodes the pool held.
    pub pool_size: usize,
    /// The pool's best nodes, best first (the chosen one first), at most [`PlanChoice::RANKED`].
    pub ranked: Vec<usize>,
}

impl Choice {
    /// As `plan_selected` records it, with the run's ids.
    pub fn recorded(&self, tree: &Tree, origin: &Origin) -> Option<Box<PlanChoice>> {
        (!self.ranked.is_empty()).then(|| {
            Box::new(PlanChoice {
                pool: self.pool,
                pool_size: self.pool_size as u64,
                ranked: self
                    .ranked
                    .iter()
                    .map(|&i| RankedNode {
                        node: origin.id(i),
                        q: tree.nodes[i].q(),
                        visits: tree.nodes[i].visits,
                    })
                    .collect(),
            })
        })
    }
}

/// What one search did with its iterations (recorded as `search_finished`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Accounting {
    /// Iterations started.
    pub iterations: u64,
    /// Iterations that added nodes (widenings included).
    pub expanded: u64,
    /// Iterations that revisited a finished path (its reward counted again).
    pub revisited: u64,
    /// Expansions of a node whose children were all dead ends.
    pub widened: u64,
    /// Times the planner was asked again after a reply with no usable candidate.
    pub retried: u64,
    /// Iterations whose expansion added nothing (no usable or no new candidate).
    pub fruitless: u64,
}

/// A finished search: the tree, why it stopped and what its iterations did.
#[derive(Debug, Clone)]
pub struct Search {
    /// The tree.
    pub tree: Tree,
    /// Why it stopped.
    pub stopped: Stopped,
    /// Its iterations.
    pub accounting: Accounting,
    /// Why the last fruitless expansion gave nothing (the planner's last rejection).
    pub last_rejection: Option<String>,
}

impl Search {
    /// A search not started yet: only the root.
    pub fn new() -> Self {
        Self {
            tree: Tree::new(),
            stopped: Stopped::Done,
            accounting: Accounting::default(),
            last_rejection: None,
        }
    }
}

impl Default for Search {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a search sits in the run: at the start (the default), or, for an execution-time
/// revision, after real steps, hanging under the node whose real call failed.
///
/// The search's [`Tree`] always counts from 0; `Origin` maps its ids and depths to the
/// run's, so a second search in one file never reuses a node id.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// Real steps taken before the root; every state of this search starts with them.
    pub history: Vec<HistoryStep>,
    /// The run's id for the root; the search's other nodes follow it in order.
    pub first_id: NodeId,
    /// The run's node the root hangs under, with that node's depth.
    pub anchor: Option<(NodeId, u32)>,
}

impl Origin {
    /// The run's id of tree node `local`.
    pub fn id(&self, local: usize) -> NodeId {
        self.first_id + local as NodeId
    }

    /// The run's depth of a tree depth.
    pub fn depth(&self, local: u32) -> u32 {
        self.anchor.map_or(0, |(_, d)| d + 1) + local
    }

    fn ids(&self, path: &[usize]) -> Vec<NodeId> {
        path.iter().map(|&i| self.id(i)).collect()
    }
}

/// Runs a search from the start of a run, recording every event in `sink` in a fixed order.
pub async fn search(
    env: &dyn SearchEnv,
    settings: &Settings,
    sink: &mut dyn EventSink,
) -> Result<Search> {
    search_from(env, settings, &Origin::default(), sink).await
}

/// Runs a search rooted at `origin`, recording every event in `sink` in a fixed order and
/// ending with its `search_finished`. The tree's ids count from 0 whatever the origin.
pub async fn search_from(
    env: &dyn SearchEnv,
    settings: &Settings,
    origin: &Origin,
    sink: &mut dyn EventSink,
) -> Result<Search> {
    let mut search = Search::new();
    let stopped = grow(env, settings, origin, sink, &mut search).await?;
    finish(origin, sink, &mut search, stopped)?;
    Ok(search)
}

/// The search's root and its iterations, until they run out or something stops them. What
/// it did so far stays in `search` when the future is dropped mid-way (a stop, the time
/// budget), so the caller can still [`finish`] it.
pub async fn grow(
    env: &dyn SearchEnv,
    settings: &Settings,
    origin: &Origin,
    sink: &mut dyn EventSink,
    search: &mut Search,
) -> Result<Stopped> {
    sink.emit(EventBody::NodeAdded {
        node: origin.id(0),
        parent: origin.anchor.map(|(id, _)| id),
        depth: origin.depth(0),
        action: None,
        prior: None,
    })?;
    iterate(env, settings, origin, sink, search).await
}

/// Ends a search: records why it stopped and what its iterations did (`search_finished`).
pub fn finish(
    origin: &Origin,
    sink: &mut dyn EventSink,
    search: &mut Search,
    stopped: Stopped,
) -> Result<()> {
    search.stopped = stopped;
    let a = search.accounting;
    sink.emit(EventBody::SearchFinished {
        root: origin.id(0),
        iterations: a.iterations,
        expanded: a.expanded,
        revisited: a.revisited,
        widened: a.widened,
        retried: a.retried,
        fruitless: a.fruitless,
        stopped: search.stopped.stop(),
        detail: search.stopped.detail().map(str::to_string),
    })
}

/// The iterations of a search, until they run out or something stops it.
async fn iterate(
    env: &dyn SearchEnv,
    settings: &Settings,
    origin: &Origin,
    sink: &mut dyn EventSink,
    search: &mut Search,
) -> Result<Stopped> {
    for _ in 0..settings.iterations {
        if let Some(stopped) = env.should_stop() {
            return Ok(stopped);
        }
        let tree = &mut search.tree;
        let Some(leaf) = tree.select_with(settings.c, settings.widen, settings.settled) else {
            return Ok(Stopped::Exhausted);
        };
        search.accounting.iterations += 1;
        if tree.nodes[leaf].terminal {
            // A finished path is revisited: its reward counts again, as in SPIRAL.
            search.accounting.revisited += 1;
            let value = tree.nodes[leaf].reward;
            let path = tree.backpropagate(leaf, value);
            sink.emit(EventBody::Backpropagated {
                path: origin.ids(&path),
                value,
            })?;
            if leaf == 0 {
                return Ok(Stopped::Exhausted);
            }
            continue;
        }
        let history = if origin.history.is_empty() {
            tree.history(leaf)
        } else {
            [origin.history.clone(), tree.history(leaf)].concat()
        };
        // A node with children is widened: the planner sees what is known to fail.
        let widening = !tree.nodes[leaf].children.is_empty();
        let mut candidates = match propose(env, settings, sink, search, leaf, &history).await? {
            Ok(candidates) => candidates,
            Err(stopped) => return Ok(stopped),
        };
        let (tree, accounting) = (&mut search.tree, &mut search.accounting);
        if candidates.is_empty() {
            accounting.fruitless += 1;
            if widening {
                // Nothing new: it will not be widened again.
                tree.nodes[leaf].widened = settings.widen;
            } else {
                // The planner had nothing usable to offer: this state is a dead end.
                tree.nodes[leaf].terminal = true;
            }
            tree.settle_from(leaf, settings.widen);
            continue;
        }
        // Rehearsals of one expansion run at once: dispatch no more than the budget covers.
        let affordable = env.affordable(candidates.len());
        if affordable == 0 {
            return Ok(Stopped::Budget(
                "the token budget left cannot cover another rehearsal".to_string(),
            ));
        }
        candidates.truncate(affordable);
        accounting.expanded += 1;
        if widening {
            accounting.widened += 1;
            tree.nodes[leaf].widened += 1;
        }
        // Every candidate is added first, then all are rehearsed concurrently; results come
        // back in candidate order, so events and the tree are the same whatever finishes first.
        let depth = tree.nodes[leaf].depth + 1;
        let first_id = add_children(tree, leaf, depth, &candidates, origin, sink)?;
        let rehearsals = rehearse_children(
            env,
            settings,
            origin,
            &history,
            &candidates,
            (first_id, depth),
        )
        .await;
        let world_model_failed = world_model_failure(&rehearsals);
        take_rehearsals(env, tree, leaf, first_id, rehearsals, origin, sink)?;
        back_up_children(tree, first_id, candidates.len(), origin, sink)?;
        tree.settle_from(leaf, settings.widen);
        if let Some(why) = world_model_failed {
            // Every further expansion would cost a planner call and simulate nothing.
            return Ok(Stopped::WorldModelFailed(why));
        }
    }
    Ok(Stopped::Done)
}

/// Expansion: the planner's new candidates for `leaf`, asked again (told why) up to
/// `settings.retries` times while a reply offers nothing new; `Err` when the search must stop.
async fn propose(
    env: &dyn SearchEnv,
    settings: &Settings,
    sink: &mut dyn EventSink,
    search: &mut Search,
    leaf: usize,
    history: &[HistoryStep],
) -> Result<Result<Vec<Action>, Stopped>> {
    let widening = !search.tree.nodes[leaf].children.is_empty();
    let tried = widening.then(|| dead_ends(&search.tree, leaf));
    let mut feedback = tried.clone();
    let mut candidates = Vec::new();
    for attempt in 0..=settings.retries {
        if attempt > 0 {
            search.accounting.retried += 1;
        }
        let (proposed, events) = env.propose(history, settings.k, feedback.as_deref()).await;
        for event in events {
            sink.emit(event)?;
        }
        let proposal = match proposed {
            Ok(p) => p,
            Err(e) => return Ok(Err(Stopped::PlannerFailed(e))),
        };
        candidates = new_candidates(&search.tree, leaf, proposal.actions, settings.k);
        if !candidates.is_empty() {
            break;
        }
        let why = if proposal.rejected.is_empty() {
            "it proposed no action that was not tried already".to_string()
        } else {
            proposal.rejected.join("; ")
        };
        search.last_rejection = Some(why.clone());
        feedback = Some(match &tried {
            Some(tried) => format!("{why}. {tried}"),
            None => why,
        });
        if let Some(stopped) = env.should_stop() {
            return Ok(Err(stopped));
        }
    }
    Ok(Ok(candidates))
}

/// Adds `candidates` as children of `leaf` at `depth` (each recorded as `node_added`); returns
/// the first one's index.
fn add_children(
    tree: &mut Tree,
    leaf: usize,
    depth: u32,
    candidates: &[Action],
    origin: &Origin,
    sink: &mut dyn EventSink,
) -> Result<usize> {
    let first_id = tree.nodes.len();
    for (i, action) in candidates.iter().enumerate() {
        let id = first_id + i;
        tree.nodes
            .push(Node::new(Some(leaf), depth, Some(action.clone())));
        tree.nodes[leaf].children.push(id);
        sink.emit(EventBody::NodeAdded {
            node: origin.id(id),
            parent: Some(origin.id(leaf)),
            depth: origin.depth(depth),
            action: Some(action.clone()),
            prior: None,
        })?;
    }
    Ok(first_id)
}

/// Simulation: every candidate rehearsed, `settings.concurrency` at a time, in candidate order.
async fn rehearse_children(
    env: &dyn SearchEnv,
    settings: &Settings,
    origin: &Origin,
    history: &[HistoryStep],
    candidates: &[Action],
    (first_id, depth): (usize, u32),
) -> Vec<Rehearsal> {
    // Futures are built first and then driven: a closure inside the stream would hold
    // borrows the compiler cannot prove Send for every lifetime.
    let futures: Vec<BoxFuture<'_, Rehearsal>> = candidates
        .iter()
        .enumerate()
        .map(move |(i, a)| -> BoxFuture<'_, Rehearsal> {
            let node = origin.id(first_id + i);
            Box::pin(rehearse::rehearse(env, settings, history, a, (node, depth)))
        })
        .collect();
    futures::stream::iter(futures)
        .buffered(settings.concurrency.max(1))
        .collect()
        .await
}

/// Each rehearsal recorded and its outcome set on its node: trust (to the routing horizon),
/// observation, predicted state, reward, verdict.
fn take_rehearsals(
    env: &dyn SearchEnv,
    tree: &mut Tree,
    leaf: usize,
    first_id: usize,
    rehearsals: Vec<Rehearsal>,
    origin: &Origin,
    sink: &mut dyn EventSink,
) -> Result<()> {
    let trust_before = tree.nodes[leaf].trust;
    // Routed by a file, a path's trust is 1 until its first untrusted prediction.
    let horizon = if env.routing_file().is_some() {
        Some(1.0)
    } else {
        env.go_real_below()
    };
    for (i, mut r) in rehearsals.into_iter().enumerate() {
        let id = first_id + i;
        let trust = r.stop_at_horizon(trust_before, horizon);
        rehearse::record(sink, origin.id(id), &r)?;
        env.recorded(origin.id(id));
        let node = &mut tree.nodes[id];
        node.trust = trust;
        node.horizon = r.horizon;
        node.observation = r.observation().cloned();
        node.predicted_state = r.predicted_state();
        node.reward = r.reward;
        node.terminal = r.terminal;
        node.settled = r.terminal;
        node.verdict = Some(r.verdict);
        node.risky = r.risky;
    }
    Ok(())
}

/// Backpropagation: each new child's reward backed up its path. A node the world model could
/// not simulate has no value: nothing to back up, and its parent's N and Q stay those of its
/// simulated children.
fn back_up_children(
    tree: &mut Tree,
    first_id: usize,
    count: usize,
    origin: &Origin,
    sink: &mut dyn EventSink,
) -> Result<()> {
    for id in first_id..first_id + count {
        if tree.nodes[id].verdict == Some(Verdict::NotSimulated) {
            continue;
        }
        let value = tree.nodes[id].reward;
        let path = tree.backpropagate(id, value);
        sink.emit(EventBody::Backpropagated {
            path: origin.ids(&path),
            value,
        })?;
    }
    Ok(())
}

/// When every call of an expansion that needed the world model found it failing: the last
/// failure's message.
fn world_model_failure(rehearsals: &[Rehearsal]) -> Option<String> {
    let needed: Vec<&Rehearsal> = rehearsals
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::Finish | Verdict::Invalid))
        .collect();
    if needed.is_empty() || needed.iter().any(|r| r.verdict != Verdict::NotSimulated) {
        return None;
    }
    needed.iter().rev().find_map(|r| {
        r.events.iter().rev().find_map(|e| match e {
            EventBody::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
    })
}

/// The dead ends under `n`, told to the planner when it widens `n`.
fn dead_ends(tree: &Tree, n: usize) -> String {
    let tried: Vec<String> = tree.nodes[n]
        .children
        .iter()
        .map(|&ch| {
            let child = &tree.nodes[ch];
            let action = match &child.action {
                Some(Action::ToolCall { tool, arguments }) => format!("{tool} {arguments}"),
                Some(Action::Finish { .. }) | None => "finish".to_string(),
            };
            let why = match (child.verdict, &child.observation) {
                (Some(Verdict::NotSimulated), _) => "could not be simulated".to_string(),
                (_, Some(o)) => {
                    let text: String = o.text.chars().take(DEAD_END_CHARS).collect();
                    format!("predicted: {}", text.replace('\n', " "))
                }
                _ => "a dead end".to_string(),
            };
            format!("{action} ({why})")
        })
        .collect();
    format!(
        "These actions were tried from this state and are dead ends; propose different ones: {}",
        tried.join("; ")
    )
}

/// Longest predicted result quoted for each dead end when a node is widened.
const DEAD_END_CHARS: usize = 300;

/// The proposed actions that are neither duplicates nor already children of `leaf`.
fn new_candidates(tree: &Tree, leaf: usize, actions: Vec<Action>, k: usize) -> Vec<Action> {
    let tried: HashSet<String> = tree.nodes[leaf]
        .children
        .iter()
        .filter_map(|&ch| tree.nodes[ch].action.as_ref().map(action_key))
        .collect();
    dedupe(
        actions
            .into_iter()
            .filter(|a| !tried.contains(&action_key(a)))
            .collect(),
        k,
    )
}

/// What makes two actions the same candidate.
fn action_key(action: &Action) -> String {
    match action {
        Action::ToolCall { tool, arguments } => format!("{tool}\u{0}{}", canonical(arguments)),
        Action::Finish { .. } => "finish".to_string(),
    }
}

/// Merges duplicate candidates (same tool and arguments, or a second finish), keeping order.
fn dedupe(actions: Vec<Action>, k: usize) -> Vec<Action> {
    let mut seen = HashSet::new();
    actions
        .into_iter()
        .filter(|a| seen.insert(action_key(a)))
        .take(k.max(1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Answer, Critique, Prediction, Proposal};
    use cosmos_trajectory::event::SearchStop;
    use serde_json::{Value, json};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A toy world: `t:good` works, `t:err` is predicted to fail, `t:bad` is invalid; the
    /// planner offers finish once a good step is in the history.
    struct Toy {
        proposals: AtomicUsize,
        stop_after_proposals: usize,
        /// The confidence of every prediction, and routing's threshold.
        confidence: Option<f64>,
        go_real_below: Option<f64>,
    }

    fn call(tool: &str) -> Action {
        Action::ToolCall {
            tool: tool.into(),
            arguments: json!({"x": 1}),
        }
    }

    impl Toy {
        fn new() -> Self {
            Self {
                proposals: AtomicUsize::new(0),
                stop_after_proposals: usize::MAX,
                confidence: None,
                go_real_below: None,
            }
        }
    }

    impl SearchEnv for Toy {
        fn propose<'a>(
            &'a self,
            history: &'a [HistoryStep],
            _k: usize,
            _feedback: Option<&'a str>,
        ) -> Answer<'a, Result<Proposal, String>> {
            self.proposals.fetch_add(1, Ordering::SeqCst);
            let actions = match history.len() {
                0 => vec![call("t:good"), call("t:err"), call("t:bad"), call("t:good")],
                _ => vec![Action::Finish { answer: None }, call("t:good")],
            };
            Box::pin(async move {
                (
                    Ok(Proposal {
                        actions,
                        rejected: vec![],
                    }),
                    vec![],
                )
            })
        }
        fn invalid(&self, tool: &str, _arguments: &Value) -> Option<String> {
            (tool == "t:bad").then(|| "unknown tool t:bad".to_string())
        }
        fn simulate<'a>(
            &'a self,
            _h: &'a [HistoryStep],
            tool: &'a str,
            _a: &'a Value,
        ) -> Answer<'a, Result<Prediction, String>> {
            let observation = Observation {
                text: format!("{tool} result"),
                is_error: tool == "t:err",
                ..Default::default()
            };
            let prediction = match tool {
                t if t.starts_with("t:down") => Err("world model unreachable".to_string()),
                _ => Ok(Prediction {
                    observation,
                    tokens: Some(7),
                    confidence: self
                        .confidence
                        .and_then(|c| crate::world_model::Confidence::new(c, "self")),
                    members: Vec::new(),
                    predicted_state: None,
                }),
            };
            Box::pin(async move { (prediction, vec![]) })
        }
        fn critique<'a>(
            &'a self,
            _h: &'a [HistoryStep],
            action: &'a Action,
            _o: Option<&'a Observation>,
        ) -> Answer<'a, Option<Critique>> {
            let score = match action {
                Action::Finish { .. } => 0.9,
                Action::ToolCall { tool, .. } if tool == "t:good" => 0.6,
                _ => 0.1,
            };
            Box::pin(async move {
                (
                    Some(Critique {
                        score,
                        reason: "toy".into(),
                    }),
                    vec![],
                )
            })
        }
        fn should_stop(&self) -> Option<Stopped> {
            (self.proposals.load(Ordering::SeqCst) >= self.stop_after_proposals)
                .then(|| Stopped::Budget("budget".to_string()))
        }
        fn world_model_name(&self) -> String {
            "toy".into()
        }
        fn go_real_below(&self) -> Option<f64> {
            self.go_real_below
        }
    }

    async fn run(env: &Toy, settings: Settings) -> (Tree, Stopped, Vec<EventBody>) {
        let mut events = Vec::new();
        let Search { tree, stopped, .. } = search(env, &settings, &mut events).await.unwrap();
        (tree, stopped, events)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn settings_out_of_range_are_refused_by_name() {
        let err = |s: Settings| s.check().unwrap_err().to_string();
        let d = Settings::default();
        assert_eq!(
            err(Settings { alpha: 2.0, ..d }),
            "alpha = 2.0: must be from 0 to 1"
        );
        assert_eq!(
            err(Settings {
                alpha: f64::NAN,
                ..d
            }),
            "alpha = NaN: must be from 0 to 1"
        );
        assert_eq!(
            err(Settings {
                c: f64::INFINITY,
                ..d
            }),
            "c (--exploration) = inf: must be from 0 to 1000"
        );
        assert_eq!(
            err(Settings { k: 0, ..d }),
            "k (--candidates) = 0: must be from 1 to 64"
        );
        assert_eq!(
            err(Settings {
                concurrency: 0,
                ..d
            }),
            "concurrency = 0: must be from 1 to 256"
        );
        assert!(d.check().is_ok());
    }

    /// Routing's short horizon: each prediction 0.8 sure, threshold 0.7. A good step at depth
    /// 1 is trusted 0.8; one at depth 2 only 0.64, so the search imagines no further below it
    /// (terminal, recorded with its trust, not a dead end); a finish predicts nothing and
    /// keeps its parent's trust. Without a threshold nothing stops.
    #[tokio::test]
    async fn a_rollout_stops_where_the_trust_along_it_falls_below_the_threshold() {
        let toy = Toy {
            confidence: Some(0.8),
            go_real_below: Some(0.7),
            ..Toy::new()
        };
        let (tree, _, events) = run(
            &toy,
            Settings {
                iterations: 12,
                max_depth: 6,
                ..Settings::default()
            },
        )
        .await;
        let stopped: Vec<&Node> = tree.nodes.iter().filter(|n| n.horizon.is_some()).collect();
        assert!(!stopped.is_empty());
        for node in &stopped {
            assert_eq!(node.depth, 2);
            assert!(close(node.horizon.unwrap(), 0.64) && close(node.trust, 0.64));
            assert!(node.terminal && !node.dead_end() && node.children.is_empty());
        }
        assert!(
            tree.nodes.iter().all(|n| n.depth <= 2),
            "nothing imagined past it"
        );
        let finish_trust = tree
            .nodes
            .iter()
            .find(|n| matches!(n.action, Some(Action::Finish { .. })))
            .map(|n| n.trust);
        assert!(finish_trust.is_some_and(|t| close(t, 0.8)));
        let recorded = events
            .iter()
            .filter(|e| matches!(e, EventBody::NodeEvaluated { horizon: Some(h), .. } if close(*h, 0.64)))
            .count();
        assert_eq!(recorded, stopped.len());

        let free = Toy {
            confidence: Some(0.8),
            ..Toy::new()
        };
        let (tree, _, _) = run(
            &free,
            Settings {
                iterations: 12,
                max_depth: 6,
                ..Settings::default()
            },
        )
        .await;
        assert!(tree.nodes.iter().all(|n| n.horizon.is_none()));
        assert!(tree.nodes.iter().any(|n| n.depth > 2));
    }

    #[tokio::test]
    async fn alpha_one_skips_the_critic() {
        let (tree, _, _) = run(
            &Toy::new(),
            Settings {
                iterations: 1,
                alpha: 1.0,
                ..Settings::default()
            },
        )
        .await;
        // good: base 0.1 alone.
        assert!(close(tree.nodes[1].reward, 0.1));
    }

    #[tokio::test]
    async fn first_iteration_expands_scores_and_backpropagates() {
        let (tree, stopped, events) = run(
            &Toy::new(),
            Settings {
                iterations: 1,
                ..Settings::default()
            },
        )
        .await;
        assert_eq!(stopped, Stopped::Done);
        // Duplicate t:good merged; K = 3 kept: good, err, bad.
        assert_eq!(tree.nodes[0].children, vec![1, 2, 3]);
        // good: 0.5·0.1 + 0.5·0.6 = 0.35; err: 0.5·(−0.5) + 0.5·0.1 = −0.2; bad: invalid, no critic: −1.
        assert!(
            close(tree.nodes[1].reward, 0.35)
                && close(tree.nodes[2].reward, -0.2)
                && close(tree.nodes[3].reward, -1.0)
        );
        assert!(!tree.nodes[1].terminal && tree.nodes[2].terminal && tree.nodes[3].terminal);
        assert_eq!(tree.nodes[0].visits, 3);
        assert!(close(tree.nodes[0].value_sum, 0.35 - 0.2 - 1.0));
        // The invalid candidate is recorded, not dropped, and never simulated by the world model.
        let evaluated: Vec<_> = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    EventBody::NodeEvaluated {
                        verdict: Verdict::Invalid,
                        ..
                    }
                )
            })
            .collect();
        assert_eq!(evaluated.len(), 1);
        assert!(events.iter().any(
            |e| matches!(e, EventBody::NodeSimulated { node: 3, prediction, .. }
            if prediction.world_model == cosmos_trajectory::event::VALIDATOR)
        ));
    }

    #[tokio::test]
    async fn a_world_model_failure_is_an_error_and_never_a_prediction_or_a_plan() {
        let mut events = Vec::new();
        let settings = Settings {
            iterations: 5,
            ..Settings::default()
        };
        // Every call goes to a world model that is down.
        let down = first_proposal(vec![call("t:down"), call("t:down2")]);
        let Search { tree, .. } = search(&down, &settings, &mut events).await.unwrap();
        let errors = events
            .iter()
            .filter(|e| matches!(e, EventBody::Error { source, .. } if *source == cosmos_trajectory::event::ErrorSource::WorldModel))
            .count();
        assert_eq!(errors, 2, "one error per failed simulation");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, EventBody::NodeSimulated { .. })),
            "a failure is never recorded as a prediction"
        );
        assert!(events.iter().all(|e| match e {
            EventBody::NodeEvaluated {
                verdict,
                reward,
                critic_reward,
                ..
            } => *verdict == Verdict::NotSimulated && *reward == 0.0 && critic_reward.is_none(),
            _ => true,
        }));
        assert_eq!(tree.plan(PlanRule::BestMean), Vec::<usize>::new());
        assert_eq!(tree.plan(PlanRule::MostVisited), Vec::<usize>::new());
    }

    #[tokio::test]
    async fn a_node_the_world_model_could_not_simulate_carries_no_value_and_no_visit() {
        let mut events = Vec::new();
        let settings = Settings {
            iterations: 6,
            alpha: 1.0,
            ..Settings::default()
        };
        // The first expansion offers one call the world model cannot simulate.
        let half_down = first_proposal(vec![call("t:down"), call("t:good")]);
        let Search { tree, .. } = search(&half_down, &settings, &mut events).await.unwrap();
        let down = &tree.nodes[1];
        assert_eq!(down.verdict, Some(Verdict::NotSimulated));
        assert_eq!(
            (down.visits, down.value_sum),
            (0, 0.0),
            "no value, no visit"
        );
        assert!(
            !events.iter().any(
                |e| matches!(e, EventBody::Backpropagated { path, .. } if path.last() == Some(&1))
            ),
            "never backpropagated"
        );
        // The root's N and Q are those of its simulated children alone.
        let root = &tree.nodes[0];
        let good = &tree.nodes[2];
        assert_eq!(root.visits, good.visits);
        assert!(close(root.value_sum, good.value_sum));
        assert!(
            good.visits > 1,
            "the search went on below the simulated child"
        );
    }

    #[test]
    fn the_choice_is_recorded_in_the_rules_order_the_earlier_first_among_equals() {
        let mut tree = Tree::new();
        for (reward, visits) in [(0.3, 1), (0.5, 2), (0.5, 1), (0.1, 4)] {
            let id = tree.nodes.len();
            tree.nodes.push(Node::new(Some(0), 1, Some(call("t:good"))));
            tree.nodes[0].children.push(id);
            tree.nodes[id].verdict = Some(Verdict::Valid);
            for _ in 0..visits {
                tree.backpropagate(id, reward);
            }
        }
        let origin = Origin {
            first_id: 100,
            ..Origin::default()
        };
        let by_mean = tree.choose(PlanRule::BestMean);
        assert_eq!(by_mean.path, vec![2], "ties go to the earlier node");
        let recorded = by_mean.recorded(&tree, &origin).unwrap();
        assert_eq!(recorded.pool, PlanPool::EveryNode);
        assert_eq!(recorded.pool_size, 4);
        let ids: Vec<NodeId> = recorded.ranked.iter().map(|r| r.node).collect();
        assert_eq!(ids, vec![102, 103, 101, 104]);
        assert!(close(recorded.ranked[0].q, 0.5));
        assert_eq!(recorded.ranked[0].visits, 2);
        let by_visits = tree.choose(PlanRule::MostVisited);
        assert_eq!(by_visits.path, vec![4]);
        assert_eq!(by_visits.ranked[0], 4);
        // A chain or an empty tree records no choice.
        assert!(
            Tree::new()
                .choose(PlanRule::BestMean)
                .recorded(&Tree::new(), &origin)
                .is_none()
        );
    }

    #[tokio::test]
    async fn predictions_carry_the_world_models_tokens() {
        let (_, _, events) = run(
            &Toy::new(),
            Settings {
                iterations: 1,
                ..Settings::default()
            },
        )
        .await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::NodeSimulated { prediction, .. }
            if prediction.world_model == "toy" && prediction.tokens == Some(7)))
        );
    }

    #[tokio::test]
    async fn uct_prefers_unvisited_then_the_best_bound() {
        let mut tree = Tree::new();
        for i in [1usize, 2] {
            tree.nodes.push(Node::new(Some(0), 1, Some(call("t:good"))));
            tree.nodes[0].children.push(i);
        }
        tree.backpropagate(1, 0.9);
        // Node 2 is unvisited: it goes first even though node 1 scored well.
        assert_eq!(tree.select(1.0), 2);
        tree.backpropagate(2, 0.1);
        // Both visited once: Q decides (same bonus).
        assert_eq!(tree.select(1.0), 1);
        // Many visits to 1 at a modest value let exploration pick 2 again.
        for _ in 0..20 {
            tree.backpropagate(1, 0.3);
        }
        assert_eq!(tree.select(1.0), 2);
        assert_eq!(
            tree.select(0.0),
            1,
            "without exploration the better mean wins"
        );
    }

    #[tokio::test]
    async fn finds_the_known_best_plan_with_both_rules() {
        let (tree, _, _) = run(
            &Toy::new(),
            Settings {
                iterations: 12,
                ..Settings::default()
            },
        )
        .await;
        let plan = tree.plan(PlanRule::BestMean);
        let actions: Vec<_> = plan
            .iter()
            .map(|&i| tree.nodes[i].action.clone().unwrap())
            .collect();
        assert_eq!(actions[0], call("t:good"));
        assert_eq!(actions.last(), Some(&Action::Finish { answer: None }));
        let visited = tree.plan(PlanRule::MostVisited);
        assert!(matches!(
            tree.nodes[*visited.last().unwrap()].action,
            Some(Action::Finish { .. })
        ));
    }

    #[test]
    fn plan_rules_can_disagree() {
        let mut tree = Tree::new();
        for i in 1..=2 {
            tree.nodes.push(Node {
                terminal: true,
                verdict: Some(Verdict::Finish),
                ..Node::new(Some(0), 1, Some(Action::Finish { answer: None }))
            });
            tree.nodes[0].children.push(i);
        }
        tree.backpropagate(1, 0.9); // high mean, one visit
        for _ in 0..3 {
            tree.backpropagate(2, 0.5); // lower mean, more visits
        }
        assert_eq!(tree.plan(PlanRule::BestMean), vec![1]);
        assert_eq!(tree.plan(PlanRule::MostVisited), vec![2]);
    }

    /// Truth III: a mean better only by floating-point noise is a tie, and the tie goes to
    /// the earlier node: #2 at 0.05000000000000001 does not beat #1 at 0.05.
    #[test]
    fn floating_point_noise_is_a_tie_and_the_earlier_node_wins_it() {
        let mut tree = Tree::new();
        for i in 1..=3 {
            tree.nodes.push(Node {
                terminal: true,
                verdict: Some(Verdict::Finish),
                ..Node::new(Some(0), 1, Some(Action::Finish { answer: None }))
            });
            tree.nodes[0].children.push(i);
        }
        tree.backpropagate(1, 0.05);
        tree.backpropagate(1, 0.05);
        tree.backpropagate(2, 0.1 * 0.5 + 1e-17);
        tree.backpropagate(3, 0.04);
        assert!(tree.nodes[2].q() > tree.nodes[1].q(), "the noise is there");
        let choice = tree.choose(PlanRule::BestMean);
        assert_eq!(choice.path, vec![1]);
        assert_eq!(choice.ranked, vec![1, 2, 3]);
        // A real difference, however small beyond the tie, still wins.
        tree.backpropagate(2, 0.05 + 1e-6);
        assert_eq!(tree.plan(PlanRule::BestMean), vec![2]);
    }

    #[test]
    fn a_call_its_schema_rejected_is_never_planned_even_with_nothing_finished() {
        let mut tree = Tree::new();
        let call = |text: &str| Action::ToolCall {
            tool: "t:echo".into(),
            arguments: json!({ "text": text }),
        };
        for (verdict, text) in [(Verdict::Invalid, "bad"), (Verdict::DeadEnd, "poor")] {
            tree.nodes.push(Node {
                terminal: true,
                verdict: Some(verdict),
                ..Node::new(Some(0), 1, Some(call(text)))
            });
            let i = tree.nodes.len() - 1;
            tree.nodes[0].children.push(i);
        }
        tree.backpropagate(1, 0.2); // the invalid call, oddly the better mean and more visits
        tree.backpropagate(1, 0.2);
        tree.backpropagate(2, -0.5);
        assert_eq!(tree.plan(PlanRule::BestMean), vec![2]);
        assert_eq!(tree.plan(PlanRule::MostVisited), vec![2]);
        // Nothing but the rejected call: no plan at all.
        tree.nodes.truncate(2);
        tree.nodes[0].children.truncate(1);
        assert_eq!(tree.plan(PlanRule::BestMean), Vec::<usize>::new());
    }

    /// The toy's world with another planner: `steer` answers a proposal (given the history
    /// and the feedback), or leaves it to the toy (`None`); every feedback is kept.
    struct Steered<F> {
        toy: Toy,
        steer: F,
        feedback: std::sync::Mutex<Vec<Option<String>>>,
    }

    type Steer = fn(&[HistoryStep], Option<&str>) -> Option<Proposal>;

    impl<F: Fn(&[HistoryStep], Option<&str>) -> Option<Proposal> + Send + Sync> SearchEnv
        for Steered<F>
    {
        fn propose<'a>(
            &'a self,
            history: &'a [HistoryStep],
            k: usize,
            feedback: Option<&'a str>,
        ) -> Answer<'a, Result<Proposal, String>> {
            self.feedback
                .lock()
                .unwrap()
                .push(feedback.map(str::to_string));
            match (self.steer)(history, feedback) {
                Some(proposal) => Box::pin(async move { (Ok(proposal), vec![]) }),
                None => self.toy.propose(history, k, None),
            }
        }
        fn invalid(&self, tool: &str, arguments: &Value) -> Option<String> {
            self.toy.invalid(tool, arguments)
        }
        fn simulate<'a>(
            &'a self,
            h: &'a [HistoryStep],
            tool: &'a str,
            a: &'a Value,
        ) -> Answer<'a, Result<Prediction, String>> {
            self.toy.simulate(h, tool, a)
        }
        fn critique<'a>(
            &'a self,
            h: &'a [HistoryStep],
            action: &'a Action,
            o: Option<&'a Observation>,
        ) -> Answer<'a, Option<Critique>> {
            self.toy.critique(h, action, o)
        }
        fn should_stop(&self) -> Option<Stopped> {
            None
        }
        fn world_model_name(&self) -> String {
            "toy".into()
        }
    }

    fn steered(steer: Steer) -> Steered<Steer> {
        Steered {
            toy: Toy::new(),
            steer,
            feedback: Default::default(),
        }
    }

    /// The toy's world whose root expansion is offered `first` (later ones are the toy's).
    fn first_proposal(
        first: Vec<Action>,
    ) -> Steered<impl Fn(&[HistoryStep], Option<&str>) -> Option<Proposal> + Send + Sync> {
        Steered {
            toy: Toy::new(),
            steer: move |history: &[HistoryStep], _: Option<&str>| {
                history.is_empty().then(|| Proposal {
                    actions: first.clone(),
                    rejected: vec![],
                })
            },
            feedback: Default::default(),
        }
    }

    /// The planner first offers only a dead end and an invalid call, and something better
    /// only once it is shown them.
    fn cornered() -> Steered<Steer> {
        steered(|history, feedback| {
            if !history.is_empty() {
                return None;
            }
            let actions = match feedback {
                Some(f) if f.contains("dead ends") => vec![call("t:err"), call("t:good")],
                _ => vec![call("t:err"), call("t:bad")],
            };
            Some(Proposal {
                actions,
                rejected: vec![],
            })
        })
    }

    #[tokio::test]
    async fn a_node_whose_children_are_all_dead_ends_is_widened_showing_them() {
        let env = cornered();
        let settings = Settings {
            iterations: 4,
            k: 2,
            ..Settings::default()
        };
        let mut events = Vec::new();
        let searched = search(&env, &settings, &mut events).await.unwrap();
        let feedback = env.feedback.lock().unwrap().clone();
        // The root's second expansion was told both dead ends and why; the repeated t:err was
        // dropped, so only t:good was added.
        let shown = feedback[1].as_deref().expect("the dead ends were shown");
        assert!(
            shown.contains("t:err") && shown.contains("t:err result"),
            "{shown}"
        );
        assert!(
            shown.contains("t:bad") && shown.contains("unknown tool"),
            "{shown}"
        );
        assert_eq!(searched.tree.nodes[0].children, vec![1, 2, 3]);
        assert!(
            matches!(&searched.tree.nodes[3].action, Some(Action::ToolCall { tool, .. }) if tool == "t:good")
        );
        assert_eq!(searched.accounting.widened, 1);
        // The plan goes through the widened node to a finish.
        let plan = searched.tree.plan(PlanRule::BestMean);
        assert_eq!(plan[0], 3);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::SearchFinished { widened: 1, .. }))
        );
    }

    #[tokio::test]
    async fn without_widening_dead_ends_are_revisited_as_in_spiral() {
        let env = cornered();
        let settings = Settings {
            iterations: 4,
            k: 2,
            widen: 0,
            ..Settings::default()
        };
        let searched = search(&env, &settings, &mut Vec::new()).await.unwrap();
        assert_eq!(
            env.feedback.lock().unwrap().len(),
            1,
            "the planner was asked once"
        );
        assert_eq!(searched.tree.nodes.len(), 3);
        let a = searched.accounting;
        assert_eq!((a.iterations, a.expanded, a.revisited), (4, 1, 3));
    }

    #[tokio::test]
    async fn skipping_settled_paths_spends_no_iteration_on_them_and_says_why_it_ended() {
        let settings = Settings {
            iterations: 40,
            k: 3,
            max_depth: 3,
            ..Settings::default()
        };
        let revisiting = search(&Toy::new(), &settings, &mut Vec::new())
            .await
            .unwrap();
        let skipping = Settings {
            settled: Settled::Skip,
            ..settings
        };
        let mut events = Vec::new();
        let skipped = search(&Toy::new(), &skipping, &mut events).await.unwrap();
        // Revisiting, most iterations go to finished paths; skipping, none does, and the
        // search ends once every path is settled, its plan still ending at a finish.
        assert!(
            revisiting.accounting.revisited > 20,
            "{:?}",
            revisiting.accounting
        );
        assert_eq!(skipped.accounting.revisited, 0);
        assert_eq!(skipped.stopped, Stopped::Exhausted);
        assert!(skipped.accounting.iterations < settings.iterations as u64);
        assert!(skipped.tree.nodes[0].settled);
        let plan = skipped.tree.plan(PlanRule::BestMean);
        assert!(matches!(
            skipped.tree.nodes[*plan.last().unwrap()].action,
            Some(Action::Finish { .. })
        ));
        let a = skipped.accounting;
        assert_eq!(a.iterations, a.expanded + a.revisited + a.fruitless);
        assert!(events.iter().any(|e| matches!(
            e,
            EventBody::SearchFinished {
                stopped: SearchStop::Exhausted,
                revisited: 0,
                ..
            }
        )));
    }

    #[tokio::test]
    async fn an_expansion_with_no_usable_candidate_asks_again_telling_why() {
        /// Rejects everything until told why, then offers the toy's candidates.
        fn stubborn() -> Steered<Steer> {
            steered(|history, feedback| {
                (history.is_empty() && feedback.is_none()).then(|| Proposal {
                    actions: vec![],
                    rejected: vec!["\"action\": \"call\" names no tool".to_string()],
                })
            })
        }
        let env = stubborn();
        let settings = Settings {
            iterations: 1,
            ..Settings::default()
        };
        let searched = search(&env, &settings, &mut Vec::new()).await.unwrap();
        let asked = env.feedback.lock().unwrap().clone();
        assert_eq!(asked[0], None);
        assert!(asked[1].as_deref().unwrap().contains("names no tool"));
        assert_eq!(searched.accounting.retried, 1);
        assert_eq!(
            searched.tree.nodes[0].children.len(),
            3,
            "the retry expanded the root"
        );
        // With no retries left the root is a dead end and the search has nothing to expand.
        let env = stubborn();
        let none = Settings {
            retries: 0,
            iterations: 3,
            ..Settings::default()
        };
        let searched = search(&env, &none, &mut Vec::new()).await.unwrap();
        assert_eq!(searched.stopped, Stopped::Exhausted);
        assert!(searched.tree.nodes[0].terminal);
        assert_eq!(searched.accounting.fruitless, 1);
        assert!(searched.last_rejection.unwrap().contains("names no tool"));
    }

    #[tokio::test]
    async fn budgets_stop_the_search() {
        let toy = Toy {
            stop_after_proposals: 2,
            ..Toy::new()
        };
        let (_, stopped, _) = run(
            &toy,
            Settings {
                iterations: 50,
                ..Settings::default()
            },
        )
        .await;
        assert_eq!(stopped, Stopped::Budget("budget".into()));
        assert_eq!(toy.proposals.load(Ordering::SeqCst), 2);
        let (tree, stopped, _) = run(
            &Toy::new(),
            Settings {
                iterations: 3,
                ..Settings::default()
            },
        )
        .await;
        assert_eq!(stopped, Stopped::Done);
        assert!(tree.nodes[0].visits >= 3);
    }

    #[tokio::test]
    async fn depth_limit_is_respected() {
        let (tree, _, _) = run(
            &Toy::new(),
            Settings {
                iterations: 30,
                max_depth: 1,
                ..Settings::default()
            },
        )
        .await;
        assert!(tree.nodes.iter().all(|n| n.depth <= 1));
        assert!(
            tree.nodes[1].terminal,
            "a valid call at the depth limit is a dead end"
        );
    }

    #[tokio::test]
    async fn replaying_the_events_rebuilds_the_tree() {
        use cosmos_trajectory::event::{AgentInfo, AgentKind, Event, Header, ModelInfo, TaskInfo};
        use cosmos_trajectory::fold::TreeState;
        use cosmos_trajectory::run::Run;
        let (tree, _, events) = run(
            &Toy::new(),
            Settings {
                iterations: 15,
                ..Settings::default()
            },
        )
        .await;
        let header = Header::new(
            "r",
            TaskInfo::default(),
            AgentInfo {
                kind: AgentKind::Spiral,
                settings: Default::default(),
            },
            ModelInfo::default(),
        );
        let mut replay = Run::new("mem".into(), header);
        for (i, body) in events.into_iter().enumerate() {
            replay.push(Event {
                seq: i as u64 + 1,
                t_ms: 0,
                body,
            });
        }
        let state = TreeState::fold(&replay, replay.len());
        assert_eq!(state.visible_nodes(), tree.nodes.len());
        for (id, node) in tree.nodes.iter().enumerate() {
            let slot = replay.slot_of(id as u64).unwrap();
            let folded = state.node(slot).unwrap();
            assert_eq!(folded.visits, node.visits, "visits of {id}");
            assert!(
                (folded.value_sum() - node.value_sum).abs() < 1e-6,
                "value of {id}"
            );
        }
    }

    #[tokio::test]
    async fn a_search_from_an_origin_maps_ids_depths_and_starts_from_its_history() {
        let origin = Origin {
            history: vec![HistoryStep {
                tool: "t:good".into(),
                arguments: json!({"x": 1}),
                observation: Observation::default(),
                ..Default::default()
            }],
            first_id: 40,
            anchor: Some((7, 2)),
        };
        let mut events = Vec::new();
        let settings = Settings {
            iterations: 1,
            ..Settings::default()
        };
        let Search { tree, .. } = search_from(&Toy::new(), &settings, &origin, &mut events)
            .await
            .unwrap();
        // With one real step already taken the toy offers finish first.
        assert!(matches!(tree.nodes[1].action, Some(Action::Finish { .. })));
        let added: Vec<(NodeId, Option<NodeId>, u32)> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::NodeAdded {
                    node,
                    parent,
                    depth,
                    ..
                } => Some((*node, *parent, *depth)),
                _ => None,
            })
            .collect();
        assert_eq!(
            added,
            vec![(40, Some(7), 3), (41, Some(40), 4), (42, Some(40), 4)]
        );
        let paths: Vec<&Vec<NodeId>> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::Backpropagated { path, .. } => Some(path),
                _ => None,
            })
            .collect();
        assert_eq!(paths, vec![&vec![40, 41], &vec![40, 42]]);
        assert!(events.iter().all(|e| e.node().is_none_or(|n| n >= 40)));
    }
}
