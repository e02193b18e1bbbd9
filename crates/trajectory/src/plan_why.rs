//! Why a plan won: the rule, the pool of nodes it chose from and their values, the ties. Read
//! from what the run recorded (`plan_selected`'s choice); a file written before choices were
//! recorded is explained with today's rule, and says so, and says when today's rule would have
//! chosen another node. The one account of it: the explorer's tree title and about view, and
//! `cosmos export markdown`, all read it from here.
//!
//! Why a plan won, for the explorer and the Markdown export: read from the
//! `plan_selected`'s recorded choice; an older file without one is explained by today's rule over
//! the tree and says so in one line (and which node today's rule would choose when it differs).

use super::event::{ActionKind, NodeId, PlanChoice, PlanPool, Verdict};
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
    /// The nodes the rule chose from: the chosen one, then best first (empty for a chain;
    /// a recorded choice keeps only the pool's best).
    pub pool: Vec<PlanCandidate>,
    /// How many nodes the pool held.
    pub pool_size: usize,
    /// Where the account comes from.
    pub source: WhySource,
}

/// Where an account of a plan comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhySource {
    /// The run recorded how its rule chose: the values are those the rule read.
    Recorded,
    /// An older file: today's rule over the tree at the cursor, which picks the same node.
    Derived,
    /// An older file whose plan today's rule would not choose: it would choose this node.
    Contradicted(NodeId),
}

impl PlanWhy {
    /// One line on where the account comes from, when it is not the run's own record.
    pub fn caveat(&self) -> Option<String> {
        match self.source {
            WhySource::Recorded => None,
            _ if self.pool.is_empty() => None,
            WhySource::Derived => {
                Some("recorded before plan choices were: values re-read from the tree".to_string())
            }
            WhySource::Contradicted(id) => Some(format!(
                "recorded before plan choices were: today's rule would choose #{id}, not this plan's end"
            )),
        }
    }

    /// How a tie with the chosen node was broken, when some node ties with it and the account
    /// knows (never for a contradicted older file): the earlier node wins, as today's rule
    /// breaks ties, or, for a record whose chosen node is the later one, the search's own order.
    pub fn tie_rule(&self) -> Option<TieRule> {
        let chosen = self.pool.iter().find(|c| c.chosen)?.slot;
        let mut ties = self.pool.iter().filter(|c| c.ties).peekable();
        ties.peek()?;
        match self.source {
            WhySource::Contradicted(_) => None,
            _ if ties.all(|c| c.slot > chosen) => Some(TieRule::Earlier),
            _ => Some(TieRule::SearchOrder),
        }
    }
}

/// How a tie with the chosen node was broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TieRule {
    /// The earlier node wins (the rule of today's search).
    Earlier,
    /// The search ranked the chosen node first, though a tied one is earlier (a record of
    /// another version's rule).
    SearchOrder,
}

impl TieRule {
    /// In words.
    pub fn words(self) -> &'static str {
        match self {
            TieRule::Earlier => "the earlier node wins",
            TieRule::SearchOrder => "the search ranked the chosen one first",
        }
    }
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
/// the run recorded them; for an older file, as today's rule reads the tree at the cursor (the
/// same search's finish nodes, or all its nodes when none finished; never one the world model
/// could not simulate).
pub fn plan_why(run: &Run, state: &TreeState, k: usize) -> Option<PlanWhy> {
    let plan = run.plan_event_at(k)?;
    let (event, rule, nodes) = (plan.event, plan.rule, plan.nodes);
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
        pool_size: 0,
        source: WhySource::Recorded,
    };
    let (Some(chosen), "best_mean" | "most_visited") = (chosen, rule) else {
        return Some(why);
    };
    let most_visited = rule == "most_visited";
    if let Some(choice) = plan.choice {
        recorded(run, &mut why, choice, chosen, most_visited);
        return Some(why);
    }
    derived(run, state, &mut why, chosen, most_visited);
    Some(why)
}

/// The account from the run's own record.
fn recorded(run: &Run, why: &mut PlanWhy, choice: &PlanChoice, chosen: u32, most_visited: bool) {
    why.finished = choice.pool == PlanPool::Finished;
    why.pool_size = choice.pool_size as usize;
    let score = |q: f64, visits: u32| if most_visited { f64::from(visits) } else { q };
    let best = choice.ranked.first().map(|r| score(r.q, r.visits));
    why.pool = choice
        .ranked
        .iter()
        .filter_map(|r| {
            let slot = run.slot_of(r.node)?;
            Some(PlanCandidate {
                slot,
                q: Some(r.q),
                visits: r.visits,
                chosen: slot == chosen,
                ties: slot != chosen
                    && best.is_some_and(|b| (score(r.q, r.visits) - b).abs() <= PlanChoice::TIE),
            })
        })
        .collect();
}

/// The account of an older file, which did not record its choice: today's rule over the tree
/// at the cursor, saying whether it picks the node the run chose.
fn derived(run: &Run, state: &TreeState, why: &mut PlanWhy, chosen: u32, most_visited: bool) {
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
                    && matches!((score(s), value), (Some(a), Some(b)) if (a - b).abs() <= PlanChoice::TIE),
            }
        })
        .collect();
    // Today's rule: the best score, the earlier node among those within a tie of it.
    let by_rule = |a: &PlanCandidate, b: &PlanCandidate| {
        let (sa, sb) = (score(a.slot), score(b.slot));
        sb.unwrap_or(f64::MIN)
            .total_cmp(&sa.unwrap_or(f64::MIN))
            .then(a.slot.cmp(&b.slot))
    };
    let best = pool
        .iter()
        .filter_map(|c| score(c.slot))
        .max_by(f64::total_cmp);
    let today = pool
        .iter()
        .filter(|c| matches!((score(c.slot), best), (Some(s), Some(b)) if b - s <= PlanChoice::TIE))
        .map(|c| c.slot)
        .min();
    why.source = match today {
        Some(slot) if slot != chosen => WhySource::Contradicted(run.nodes()[slot as usize].id),
        _ => WhySource::Derived,
    };
    // The chosen one first, then best first, earlier first among equals.
    pool.sort_by(|a, b| b.chosen.cmp(&a.chosen).then(by_rule(a, b)));
    why.pool_size = pool.len();
    why.pool = pool;
}
