//! SPIRAL-Exec's search settings (`--iterations`, `-k`, `[agent]` in cosmos.toml…): their
//! defaults, their ranges, and how `[agent]` of the read configuration lays over the defaults.
//! The search itself (`mcts.rs`) takes them as they are.
//!
//! SPIRAL's search settings, their defaults and ranges, and `[agent]` of the read
//! `config::Config` laid over them (`Settings::from_config`); flags win over both in `cli/run.rs`.

use anyhow::Result;
use serde::{Deserialize, Serialize};

/// How the final plan is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanRule {
    /// The terminal node with the best mean value (SPIRAL).
    BestMean,
    /// The terminal node visited most.
    MostVisited,
}

impl PlanRule {
    /// Name recorded in `plan_selected`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanRule::BestMean => "best_mean",
            PlanRule::MostVisited => "most_visited",
        }
    }
}

/// Search settings (SPIRAL's published defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Iterations (select, expand, evaluate, backpropagate).
    pub iterations: usize,
    /// Deepest node.
    pub max_depth: u32,
    /// UCT exploration constant c.
    pub c: f64,
    /// Candidates proposed per expansion.
    pub k: usize,
    /// Weight of the base reward: `alpha·base + (1−alpha)·critic`.
    pub alpha: f64,
    /// How the final plan is chosen.
    pub plan_rule: PlanRule,
    /// Simulations and critic calls of one expansion that run at once.
    pub concurrency: usize,
    /// Execution-time revision: how many times a failed real call may start a new search
    /// from the real steps taken so far (0, the paper's default, turns it off).
    pub revisions: usize,
    /// How often an expansion that gave no usable candidate (a rejected decision, a reply
    /// that is not JSON or was cut) asks the planner again, told what went wrong.
    pub retries: usize,
    /// How often a node whose children are all dead ends is expanded again (the planner
    /// shown the dead ends) instead of revisiting them; 0 is SPIRAL's published search.
    pub widen: u32,
    /// What selection does with settled paths (finished, or dead ends all the way down).
    pub settled: Settled,
    /// Routing (SPIRAL and ReAct-Plan-Exec): a prediction less sure than this (or with no
    /// confidence) of a read-only tool is replaced by the real call during planning
    /// (`node_grounded`); of another tool, it makes the node risky. `None`: every prediction
    /// is trusted, as in the paper.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub go_real_below: Option<f64>,
}

/// What the search does with a settled path: one whose every leaf is terminal, so visiting it
/// again adds no node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settled {
    /// Revisit it, its reward backpropagated again (SPIRAL's published search).
    #[default]
    Revisit,
    /// Never select it again (MCTS-Solver-style); the search ends once every path is settled.
    Skip,
}

impl Settled {
    /// Name in headers and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Settled::Revisit => "revisit",
            Settled::Skip => "skip",
        }
    }
}

impl Settings {
    /// A chain's rehearsals (Plan-Exec's chain, a `cosmos proxy` session): no critic (alpha 1),
    /// no depth limit (the chain is as long as its calls).
    pub fn chain() -> Self {
        Self {
            alpha: 1.0,
            max_depth: u32::MAX,
            ..Self::default()
        }
    }

    /// SPIRAL's defaults with the `[agent]` table of `config` over them.
    pub fn from_config(config: &crate::config::Config) -> Result<Self> {
        use anyhow::Context;
        let Some(table) = &config.agent else {
            return Ok(Self::default());
        };
        let mut merged = toml::Value::try_from(Self::default())?;
        if let Some(m) = merged.as_table_mut() {
            for (k, v) in table {
                m.insert(k.clone(), v.clone());
            }
        }
        let settings: Self = merged
            .try_into()
            .with_context(|| format!("[agent] in {}", config.name()))?;
        settings
            .check()
            .with_context(|| format!("[agent] in {}", config.name()))?;
        Ok(settings)
    }

    /// Every setting in range, or an error naming it and its range.
    pub fn check(&self) -> Result<()> {
        let within = |key: &str, v: f64, lo: f64, hi: f64| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(anyhow::anyhow!("{key} = {v:?}: must be from {lo} to {hi}"))
            }
        };
        let count = |key: &str, v: usize, lo: usize, hi: usize| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(anyhow::anyhow!("{key} = {v}: must be from {lo} to {hi}"))
            }
        };
        count("iterations", self.iterations, 1, 1_000_000)?;
        count("max_depth", self.max_depth as usize, 1, 10_000)?;
        within("c (--exploration)", self.c, 0.0, 1e3)?;
        count("k (--candidates)", self.k, 1, 64)?;
        within("alpha", self.alpha, 0.0, 1.0)?;
        count("concurrency", self.concurrency, 1, 256)?;
        count("revisions", self.revisions, 0, 1_000)?;
        count("retries", self.retries, 0, 100)?;
        count("widen", self.widen as usize, 0, 100)?;
        if let Some(x) = self.go_real_below {
            within("go_real_below", x, 0.0, 1.0)?;
        }
        Ok(())
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            iterations: 50,
            max_depth: 8,
            c: 1.0,
            k: 3,
            alpha: 0.5,
            plan_rule: PlanRule::BestMean,
            concurrency: 3,
            revisions: 0,
            retries: 2,
            widen: 1,
            settled: Settled::Revisit,
            go_real_below: None,
        }
    }
}
