//! Why a plan won: the rule, the pool of nodes it chose from and their values at a cursor,
//! the ties. The one account of it: the explorer's tree title and about view, and
//! `cosmos export markdown`, all read it from here.

use super::event::{ActionKind, Verdict};
use super::fold::TreeState;
use super::run::Run;

/// Why the plan in force at cursor `k` was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanWhy {
    /// The `plan_selected` event.
    pub event: u32,
    /// `best_mean`, `most_visited` or `chain`.
    pub rule: String,
    /// The plan's node ids, `#1→#4→#7`.
    pub path: String,
    /// The pool was the finished paths (else every node: no path finished).
    pub finished: bool,
    /// The nodes the rule chose from: the chosen one, then best first (empty for a chain).
    pub pool: Vec<PlanCandidate>,
}

/// One node the plan rule chose among.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanCandidate {
    /// Arena slot.
    pub slot: u32,
    /// Mean value at the cursor.
    pub q: Option<f64>,
    /// Visits at the cursor.
    pub visits: u32,
    /// The plan ends here.
    pub chosen: bool,
    /// Scores the same as the chosen one (the earlier node wins).
    pub ties: bool,
}

impl PlanCandidate {
    /// Its node id and action in words (read from the file).
    pub fn described(&self, run: &Run) -> (super::event::NodeId, String) {
        let info = &run.nodes()[self.slot as usize];
        let label = super::describe::compact_node_label(&run.event(info.added_at as usize).body);
        (info.id, label)
    }

    /// Its mean value, or `—` before any visit.
    pub fn q_text(&self) -> String {
        self.q.map_or("—".to_string(), |q| format!("{q:.3}"))
    }
}

/// Why the plan in force at cursor `k` was chosen: the rule and the pool it chose from, as
/// the search chose (the same search's finish nodes, or all its nodes when none finished;
/// never one the world model could not simulate), at the values of the cursor.
pub fn plan_why(run: &Run, state: &TreeState, k: usize) -> Option<PlanWhy> {
    let (event, rule, nodes) = run.plan_event_at(k)?;
    let path = nodes
        .iter()
        .map(|n| format!("#{n}"))
        .collect::<Vec<_>>()
        .join("→");
    let chosen = nodes.last().and_then(|&id| run.slot_of(id));
    let mut why = PlanWhy {
        event,
        rule: rule.to_string(),
        path,
        finished: false,
        pool: Vec::new(),
    };
    let (Some(chosen), "best_mean" | "most_visited") = (chosen, rule) else {
        return Some(why);
    };
    let most_visited = rule == "most_visited";
    let is_finish = |slot: u32| run.nodes()[slot as usize].action == Some(ActionKind::Finish);
    // A search's root has no action: the run's root, or an execution-time revision's.
    let search_root = |mut slot: u32| loop {
        let info = &run.nodes()[slot as usize];
        match info.parent {
            Some(parent) if info.action.is_some() => slot = parent,
            _ => return slot,
        }
    };
    let score = |slot: u32| {
        let n = state.node(slot).copied().unwrap_or_default();
        if most_visited {
            Some(f64::from(n.visits))
        } else {
            n.q()
        }
    };
    why.finished = is_finish(chosen);
    let search = search_root(chosen);
    let value = score(chosen);
    let mut pool: Vec<PlanCandidate> = (0..state.visible_nodes() as u32)
        .filter(|&s| s != search && search_root(s) == search)
        .filter(|&s| !why.finished || is_finish(s))
        // The agent's pool (`Tree::plan`).
        .filter(|&s| Verdict::may_be_planned(state.verdict(run, s)))
        .map(|s| {
            let n = state.node(s).copied().unwrap_or_default();
            PlanCandidate {
                slot: s,
                q: n.q(),
                visits: n.visits,
                chosen: s == chosen,
                ties: s != chosen
                    && matches!((score(s), value), (Some(a), Some(b)) if (a - b).abs() < 1e-9),
            }
        })
        .collect();
    // The chosen one first, then best first, earlier first among equals.
    pool.sort_by(|a, b| {
        let (sa, sb) = (score(a.slot), score(b.slot));
        b.chosen
            .cmp(&a.chosen)
            .then(sb.unwrap_or(f64::MIN).total_cmp(&sa.unwrap_or(f64::MIN)))
            .then(a.slot.cmp(&b.slot))
    });
    why.pool = pool;
    Some(why)
}
