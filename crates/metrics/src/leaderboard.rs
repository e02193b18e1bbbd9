//! World models side by side on the same recorded calls (`cosmos wm-eval`): per world model the
//! calls it simulated, mean fidelity with its 95% interval, how well it predicted which calls
//! fail (precision, recall, F1), per tool; and for every pair of world models a paired comparison
//! on the calls both simulated (mean difference with a paired 95% interval, wins, ties,
//! losses). Fidelity is [`super::fidelity::compare`], the one every view uses.
//!
//! World models side by side on the same calls (`cosmos wm-eval`): per world
//! model n, failures, no predictions, mean fidelity with its interval, error prediction
//! precision/recall/F1, calibration, per tool; per pair a paired bootstrap interval and
//! wins/ties/losses.
//!
//! # The JSON shape (`cosmos wm-eval --format json`)
//!
//! | key | meaning |
//! |---|---|
//! | `n` | calls the world model simulated (a prediction was made, empty or placeholder ones included: they score 0) |
//! | `calls`, `failed` | calls it was asked to simulate, and those it could not (no prediction is made up for them) |
//! | `no_prediction` | simulations that predicted nothing: empty, a placeholder, the prompt echoed |
//! | `fidelity` | mean fidelity over the `n` calls with its 95% interval (Wilson's score interval, as `report` gives fidelity: it stays in [0, 1]; `ci` null under two) |
//! | `calibration` | the world model's confidences held against its predictions' fidelity, over the `n` predictions that came with one (`without_confidence` did not): `ece`, `brier`, `auroc` (a prediction is good at `good_fidelity` or above, `wm-eval --good-fidelity`; `good` counts them; `auroc` null without both kinds), the `selective` curve (per confidence threshold: `coverage`, `n`, mean `fidelity` with its interval clustered by run) and the ten `reliability` bins; definitions in [world-models.md](docs/world-models.md#when-to-trust-a-prediction) |
//! | `error_prediction` | a real failure is the positive class: `precision` of its predicted errors, `recall` of the real failures, `f1`; `null` where a ratio has no denominator |
//! | `by_server`, `by_tool` | the same fidelity per server (`tool` holds the server's name) and per tool |
//! | `by_state_change` | fidelity (`n` and `fidelity`, as above) of the calls that `changed` their server's state (a sandbox saw a field change), left it `unchanged` (a sandbox saw none, or the tool is marked read-only) and the `unknown` rest; a key is present when it has calls ([world-models.md](docs/world-models.md#worlds-with-state)) |
//! | `by_fields_changed` | the same by how many fields the real call changed, `0`, `1`, `2-4`, `5+`, over calls a sandbox watched |
//! | `risk_weighted_fidelity` | mean fidelity with each call weighted 4 (a tool its server marks destructive), 2 (another call that changed or may have changed state) or 1; a point value with no interval; `null` with no simulation |
//! | `state_fidelity` | over calls whose real state after is known and for which the world model predicted a state: the share of fields (of both states) on which they agree, mean and interval; `null` when there are none |
//! | `decision` | with `--decision` only: `{n, same, rate: {mean, ci}}`, how often the planner's next action given the simulation was the one it took given the real result |
//! | `pairs` | every pair in the order given, on the calls both simulated: `mean_diff` of `fidelity(a) − fidelity(b)`, its paired 95% interval `ci` (within ±1, clustered by the run each call came from as the world models' fidelity is; `null` under 3 calls, or 3 runs when a run gave several), and `wins`/`ties`/`losses` for `a` |
//!
//! # An example of the JSON shape
//!
//! ```json
//! {
//!   "world_models": [
//!     {
//!       "name": "memory",
//!       "n": 38,
//!       "calls": 39,
//!       "failed": 1,
//!       "no_prediction": 0,
//!       "fidelity": {"mean": 0.86, "ci": [0.79, 0.92]},
//!       "error_prediction": {"precision": 1.0, "recall": 1.0, "f1": 1.0},
//!       "tokens": 0,
//!       "calibration": {"n": 38, "without_confidence": 0, "good_fidelity": 0.9, "good": 29,
//!         "ece": 0.14, "brier": 0.04, "auroc": 0.97,
//!         "selective": [{"threshold": 0.9, "coverage": 0.76, "n": 29, "fidelity": {"mean": 0.99, "ci": [0.76, 1.0]}}],
//!         "reliability": [{"from": 0.9, "to": 1.0, "n": 29, "confidence": 0.9, "fidelity": 0.99}]},
//!       "by_server": [{"tool": "Time MCP", "n": 30, "fidelity": {"mean": 0.88, "ci": [0.71, 0.96]}}],
//!       "by_tool": [{"tool": "Time MCP:convert_time", "n": 20, "fidelity": {"mean": 0.9, "ci": [0.69, 0.97]}}],
//!       "by_state_change": {"changed": {"n": 6, "fidelity": {"mean": 0.75, "ci": [0.31, 0.95]}},
//!                           "unchanged": {"n": 32, "fidelity": {"mean": 0.88, "ci": [0.8, 0.93]}}},
//!       "by_fields_changed": {"0": {"n": 7, "fidelity": {"mean": 0.36, "ci": [0.17, 0.62]}},
//!                             "1": {"n": 6, "fidelity": {"mean": 0.75, "ci": [0.31, 0.95]}}},
//!       "risk_weighted_fidelity": 0.83,
//!       "state_fidelity": {"n": 4, "fidelity": {"mean": 1.0, "ci": [0.51, 1.0]}}
//!     }
//!   ],
//!   "pairs": [
//!     {"a": "memory", "b": "qwen", "n": 37, "mean_diff": 0.21, "ci": [0.12, 0.3], "wins": 20, "ties": 9, "losses": 8}
//!   ]
//! }
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::calibration::{Calibration, Scored, calibration};
use super::fidelity::Fidelity;
use super::group::UNIT;
pub use super::mean::Mean;
use super::stats::{self};

/// What one world model did with one recorded call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// It predicted a result, scored against the real one.
    Simulated {
        /// The score.
        fidelity: Fidelity,
        /// It predicted an error.
        predicted_error: bool,
        /// Tokens it spent.
        tokens: u64,
        /// Given this simulation instead of the real result, the planner decided the same
        /// next action (`None` when decisions were not asked for, or one could not be had).
        same_decision: Option<bool>,
        /// The world model's confidence in it, when it gave one.
        confidence: Option<f64>,
        /// Its predicted state against the real state after the call, field by field
        /// (`mcp::state_view::agreement`), when both are known.
        state_fidelity: Option<f64>,
    },
    /// It could not simulate (the world model failed; no prediction is made up for it).
    Failed,
}

/// One recorded call and what every world model did with it (in the world models' order).
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// Namespaced tool.
    pub tool: String,
    /// The run it was recorded in: calls of one run share its task and history, so they are
    /// one cluster for the intervals.
    pub source: String,
    /// The real call failed.
    pub real_error: bool,
    /// What the real call did to its server's state.
    pub effect: StateEffect,
    /// One outcome per world model.
    pub outcomes: Vec<Outcome>,
}

/// What a recorded real call did to its server's state (docs/world-models.md, "Worlds with
/// state").
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StateEffect {
    /// The fields it changed, when a sandbox watched the call.
    pub fields_changed: Option<u32>,
    /// Its tool's own annotations: `readOnlyHint`, and `destructiveHint`.
    pub read_only: Option<bool>,
    /// The tool is marked destructive by its server.
    pub destructive: bool,
}

impl StateEffect {
    /// Whether the call changed state: what the sandbox saw, else what the tool's annotations
    /// say (read-only: no; otherwise unknown, since a tool that may write need not have).
    pub fn changed(&self) -> Option<bool> {
        match (self.fields_changed, self.read_only) {
            (Some(n), _) => Some(n > 0),
            (None, Some(true)) => Some(false),
            _ => None,
        }
    }

    /// The `by_state_change` split this call falls in.
    pub fn split(&self) -> &'static str {
        match self.changed() {
            Some(true) => "changed",
            Some(false) => "unchanged",
            None => "unknown",
        }
    }

    /// The `by_fields_changed` bin (EnvSimBench's): `0`, `1`, `2-4`, `5+`; none unwatched.
    pub fn fields_bin(&self) -> Option<&'static str> {
        Some(match self.fields_changed? {
            0 => "0",
            1 => "1",
            2..=4 => "2-4",
            _ => "5+",
        })
    }

    /// The weight of the call in risk-weighted fidelity: [`RISK_DESTRUCTIVE`] for a tool its
    /// server marks destructive, [`RISK_CHANGED`] for a call that changed state (or may have:
    /// a tool not marked read-only, unwatched), 1 for one that changed nothing.
    pub fn risk(&self) -> f64 {
        if self.destructive {
            RISK_DESTRUCTIVE
        } else if self.changed() != Some(false) {
            RISK_CHANGED
        } else {
            1.0
        }
    }
}

/// Risk weight of a call of a tool its server marks destructive.
pub const RISK_DESTRUCTIVE: f64 = 4.0;
/// Risk weight of any other call that changed (or may have changed) state.
pub const RISK_CHANGED: f64 = 2.0;

/// How well failures were foreseen: the positive class is a real call that failed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorPrediction {
    /// Of the calls it said would fail, how many did; `None` when it said none would.
    pub precision: Option<f64>,
    /// Of the calls that failed, how many it said would; `None` when none failed.
    pub recall: Option<f64>,
    /// Their harmonic mean, when both exist.
    pub f1: Option<f64>,
}

/// One tool's (or server's) share of a world model's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRow {
    /// Namespaced tool, or the server.
    pub tool: String,
    /// Calls simulated.
    pub n: usize,
    /// Mean fidelity.
    pub fidelity: Option<Mean>,
}

/// One world model's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorldModelRow {
    /// Its name.
    pub name: String,
    /// Calls it simulated (a prediction was made, including empty or placeholder ones).
    pub n: usize,
    /// Calls it was asked to simulate.
    pub calls: usize,
    /// Calls it could not simulate.
    pub failed: usize,
    /// Simulations that predicted nothing (empty, placeholder, prompt echoed).
    pub no_prediction: usize,
    /// Mean fidelity over the calls it simulated.
    pub fidelity: Option<Mean>,
    /// Error prediction.
    pub error_prediction: ErrorPrediction,
    /// Tokens spent.
    pub tokens: u64,
    /// Decision fidelity (`wm-eval --decision`): how often the planner's next action given the
    /// simulation was the one it took given the real result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionAgreement>,
    /// Its confidences held against its fidelity ([`super::calibration`]).
    pub calibration: Calibration,
    /// Per server (the part of a tool's name before the `:`).
    pub by_server: Vec<ToolRow>,
    /// Per tool.
    pub by_tool: Vec<ToolRow>,
    /// Fidelity of the calls that changed state apart from those that did not
    /// ([`StateEffect::split`]: `changed`, `unchanged`, `unknown`), each present when it has
    /// calls.
    pub by_state_change: BTreeMap<&'static str, Split>,
    /// Fidelity by how many fields the real call changed (`0`, `1`, `2-4`, `5+`), over calls a
    /// sandbox watched.
    pub by_fields_changed: BTreeMap<&'static str, Split>,
    /// Fidelity weighted by each call's risk ([`StateEffect::risk`]): a point value (the
    /// weights leave no plain n for an interval).
    pub risk_weighted_fidelity: Option<f64>,
    /// Mean agreement of its predicted states with the real ones after the calls, over the
    /// calls where both are known.
    pub state_fidelity: Option<Split>,
}

/// Fidelity over one part of the calls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Split {
    /// Calls in it.
    pub n: usize,
    /// Mean fidelity with its interval.
    pub fidelity: Option<Mean>,
}

/// How often a world model's simulation led the planner to the same next action as the real
/// result did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DecisionAgreement {
    /// Calls with both decisions.
    pub n: usize,
    /// Of those, the same decision.
    pub same: usize,
    /// `same / n`, with its 95% interval (a bounded mean, clustered by run).
    pub rate: Mean,
}

/// Two world models on the calls both simulated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// The first.
    pub a: String,
    /// The second.
    pub b: String,
    /// Calls both simulated.
    pub n: usize,
    /// Mean of `fidelity(a) − fidelity(b)`.
    pub mean_diff: Option<f64>,
    /// 95% interval of that mean (`stats::paired_clustered`: within ±1, clustered by the run
    /// each call came from, as the means are; none under `stats::MIN_N` calls, or runs when
    /// clustered).
    pub ci: Option<[f64; 2]>,
    /// Calls where `a` scored higher.
    pub wins: usize,
    /// Calls where both scored the same.
    pub ties: usize,
    /// Calls where `b` scored higher.
    pub losses: usize,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaderboard {
    /// One row per world model, in the order given.
    pub world_models: Vec<WorldModelRow>,
    /// Every pair, in the order given.
    pub pairs: Vec<Pair>,
}

/// The leaderboard of `names` over `calls`, a prediction counting as good for calibration at
/// `good_fidelity` or above.
pub fn leaderboard(names: &[String], calls: &[CallResult], good_fidelity: f64) -> Leaderboard {
    let world_models = names
        .iter()
        .enumerate()
        .map(|(w, name)| row(name, w, calls, good_fidelity))
        .collect();
    let mut pairs = Vec::new();
    for a in 0..names.len() {
        for b in a + 1..names.len() {
            pairs.push(pair(names, a, b, calls));
        }
    }
    Leaderboard {
        world_models,
        pairs,
    }
}

fn score(outcome: &Outcome) -> Option<f64> {
    match outcome {
        Outcome::Simulated { fidelity, .. } => Some(fidelity.score),
        Outcome::Failed => None,
    }
}

fn row(name: &str, w: usize, calls: &[CallResult], good_fidelity: f64) -> WorldModelRow {
    let mut scores = Scores::default();
    let mut scored = Vec::new();
    let (mut tp, mut fp, mut fn_, mut failed, mut none, mut tokens) = (0, 0, 0, 0, 0, 0u64);
    let mut by_tool: BTreeMap<&str, Scores> = BTreeMap::new();
    let mut by_server: BTreeMap<&str, Scores> = BTreeMap::new();
    let mut by_state_change: BTreeMap<&'static str, Scores> = BTreeMap::new();
    let mut by_fields_changed: BTreeMap<&'static str, Scores> = BTreeMap::new();
    let mut states = Scores::default();
    let (mut weighted, mut weights) = (0.0, 0.0);
    let mut decisions = Scores::default();
    for call in calls {
        match call.outcomes[w] {
            Outcome::Failed => failed += 1,
            Outcome::Simulated {
                fidelity,
                predicted_error,
                tokens: t,
                same_decision,
                confidence,
                state_fidelity,
            } => {
                let source = call.source.as_str();
                by_state_change
                    .entry(call.effect.split())
                    .or_default()
                    .push(fidelity.score, source);
                if let Some(bin) = call.effect.fields_bin() {
                    by_fields_changed
                        .entry(bin)
                        .or_default()
                        .push(fidelity.score, source);
                }
                if let Some(s) = state_fidelity {
                    states.push(s, source);
                }
                weighted += call.effect.risk() * fidelity.score;
                weights += call.effect.risk();
                scored.push(Scored {
                    confidence,
                    fidelity: fidelity.score,
                    source,
                });
                if let Some(same) = same_decision {
                    decisions.push(if same { 1.0 } else { 0.0 }, source);
                }
                scores.push(fidelity.score, source);
                by_tool
                    .entry(&call.tool)
                    .or_default()
                    .push(fidelity.score, source);
                let server = call.tool.rsplit_once(':').map_or("", |(s, _)| s);
                by_server
                    .entry(server)
                    .or_default()
                    .push(fidelity.score, source);
                tokens = tokens.saturating_add(t);
                none += usize::from(fidelity.no_prediction);
                // Nothing predicted foresees no failure.
                let said_error = predicted_error && !fidelity.no_prediction;
                match (said_error, call.real_error) {
                    (true, true) => tp += 1,
                    (true, false) => fp += 1,
                    (false, true) => fn_ += 1,
                    (false, false) => {}
                }
            }
        }
    }
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    let precision = ratio(tp, tp + fp);
    let recall = ratio(tp, tp + fn_);
    let f1 = match (precision, recall) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    WorldModelRow {
        name: name.to_string(),
        n: scores.values.len(),
        calls: calls.len(),
        failed,
        no_prediction: none,
        fidelity: scores.mean(),
        error_prediction: ErrorPrediction {
            precision,
            recall,
            f1,
        },
        tokens,
        decision: decisions.mean().map(|rate| DecisionAgreement {
            n: decisions.values.len(),
            same: decisions.values.iter().filter(|&&d| d == 1.0).count(),
            rate,
        }),
        calibration: calibration(&scored, good_fidelity),
        by_server: rows_of(by_server),
        by_tool: rows_of(by_tool),
        by_state_change: splits(by_state_change),
        by_fields_changed: splits(by_fields_changed),
        risk_weighted_fidelity: (weights > 0.0).then(|| weighted / weights),
        state_fidelity: (!states.values.is_empty()).then(|| states.split()),
    }
}

fn splits(groups: BTreeMap<&'static str, Scores>) -> BTreeMap<&'static str, Split> {
    groups.into_iter().map(|(k, s)| (k, s.split())).collect()
}

/// Scores with the run each came from.
#[derive(Default)]
struct Scores<'a> {
    values: Vec<f64>,
    sources: Vec<&'a str>,
}

impl<'a> Scores<'a> {
    fn push(&mut self, value: f64, source: &'a str) {
        self.values.push(value);
        self.sources.push(source);
    }

    fn mean(&self) -> Option<Mean> {
        Mean::of(&self.values, &self.sources)
    }

    fn split(&self) -> Split {
        Split {
            n: self.values.len(),
            fidelity: self.mean(),
        }
    }
}

fn rows_of(groups: BTreeMap<&str, Scores>) -> Vec<ToolRow> {
    groups
        .into_iter()
        .map(|(tool, s)| ToolRow {
            tool: tool.to_string(),
            n: s.values.len(),
            fidelity: s.mean(),
        })
        .collect()
}

fn pair(names: &[String], a: usize, b: usize, calls: &[CallResult]) -> Pair {
    let (diffs, sources): (Vec<f64>, Vec<&str>) = calls
        .iter()
        .filter_map(|c| {
            let diff = score(&c.outcomes[a])? - score(&c.outcomes[b])?;
            Some((diff, c.source.as_str()))
        })
        .unzip();
    let n = diffs.len();
    let tie = |d: f64| d.abs() <= 1e-9;
    let mean_diff = (n > 0).then(|| diffs.iter().sum::<f64>() / n as f64);
    Pair {
        a: names[a].clone(),
        b: names[b].clone(),
        n,
        mean_diff,
        ci: stats::paired_clustered(&diffs, &sources, UNIT).and_then(|e| e.ci),
        wins: diffs.iter().filter(|&&d| d > 0.0 && !tie(d)).count(),
        ties: diffs.iter().filter(|&&d| tie(d)).count(),
        losses: diffs.iter().filter(|&&d| d < 0.0 && !tie(d)).count(),
    }
}

/// How the leaderboard is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns.
    Table,
    /// A markdown table.
    Markdown,
    /// Comma-separated values (the world models' rows).
    Csv,
    /// The JSON of docs/report-format.md.
    Json,
}

/// A figure in [0, 1], never shown as 0 or 1 unless it is exactly that; `—` for none.
fn figure_text(v: Option<f64>) -> String {
    v.map_or("—".to_string(), |v| super::figure::fraction(v, 2))
}

/// A mean with its 95% interval when it has one; `—` for none.
fn mean_text(m: &Option<Mean>) -> String {
    let fraction = |v: f64| super::figure::fraction(v, 2);
    match m {
        Some(Mean {
            mean,
            ci: Some([lo, hi]),
        }) => format!("{} [{}, {}]", fraction(*mean), fraction(*lo), fraction(*hi)),
        Some(Mean { mean, ci: None }) => fraction(*mean),
        None => "—".into(),
    }
}

/// The leaderboard's main table: a row per world model.
fn main_table(board: &Leaderboard) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let decided = board.world_models.iter().any(|w| w.decision.is_some());
    let mut header = vec![
        "world model",
        "simulated",
        "failed",
        "no prediction",
        "fidelity [95% CI]",
        "error P",
        "error R",
        "error F1",
        "confidence",
        "ECE",
        "Brier",
        "AUROC",
        "tokens",
    ];
    if decided {
        header.push("same decision [95% CI]");
    }
    let rows: Vec<Vec<String>> = board
        .world_models
        .iter()
        .map(|w| {
            let mut row = vec![
                w.name.clone(),
                format!("{}/{}", w.n, w.calls),
                w.failed.to_string(),
                w.no_prediction.to_string(),
                mean_text(&w.fidelity),
                figure_text(w.error_prediction.precision),
                figure_text(w.error_prediction.recall),
                figure_text(w.error_prediction.f1),
                // How many of its predictions came with a confidence.
                format!("{}/{}", w.calibration.n, w.n),
                figure_text(w.calibration.ece),
                figure_text(w.calibration.brier),
                figure_text(w.calibration.auroc),
                w.tokens.to_string(),
            ];
            if decided {
                row.push(w.decision.map_or("—".to_string(), |d| {
                    format!("{}/{} {}", d.same, d.n, mean_text(&Some(d.rate)))
                }));
            }
            row
        })
        .collect();
    (header, rows)
}

/// Each pair of world models on the calls both simulated.
fn pairs_table(board: &Leaderboard) -> ([&'static str; 7], Vec<Vec<String>>) {
    let pair_header = [
        "a",
        "b",
        "both simulated",
        "mean a−b [95% CI]",
        "wins",
        "ties",
        "losses",
    ];
    let pair_rows: Vec<Vec<String>> = board
        .pairs
        .iter()
        .map(|p| {
            vec![
                p.a.clone(),
                p.b.clone(),
                p.n.to_string(),
                match (p.mean_diff, p.ci) {
                    (Some(m), Some([lo, hi])) => format!("{m:+.2} [{lo:+.2}, {hi:+.2}]"),
                    (Some(m), None) => format!("{m:+.2}"),
                    _ => "—".into(),
                },
                p.wins.to_string(),
                p.ties.to_string(),
                p.losses.to_string(),
            ]
        })
        .collect();
    (pair_header, pair_rows)
}

/// Fidelity by what each call did to its server's state, when some call's effect is known.
fn state_table(board: &Leaderboard) -> Option<([&'static str; 10], Vec<Vec<String>>)> {
    let stateful = board
        .world_models
        .iter()
        .any(|w| w.by_state_change.keys().any(|k| *k != "unknown") || w.state_fidelity.is_some());
    if !stateful {
        return None;
    }
    let split = |s: Option<&Split>| {
        s.map_or("—".to_string(), |s| {
            format!("{} (n={})", mean_text(&s.fidelity), s.n)
        })
    };
    let state_header = [
        "world model",
        "changed state",
        "unchanged",
        "unknown",
        "0 fields",
        "1 field",
        "2–4 fields",
        "5+ fields",
        "risk-weighted",
        "predicted state",
    ];
    let state_rows: Vec<Vec<String>> = board
        .world_models
        .iter()
        .map(|w| {
            let mut row = vec![w.name.clone()];
            for k in ["changed", "unchanged", "unknown"] {
                row.push(split(w.by_state_change.get(k)));
            }
            for k in ["0", "1", "2-4", "5+"] {
                row.push(split(w.by_fields_changed.get(k)));
            }
            row.push(figure_text(w.risk_weighted_fidelity));
            row.push(split(w.state_fidelity.as_ref()));
            row
        })
        .collect();
    Some((state_header, state_rows))
}

/// The leaderboard as text.
pub fn render(board: &Leaderboard, format: Format) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(board).unwrap_or_default() + "\n";
    }
    let (header, rows) = main_table(board);
    if format == Format::Csv {
        return super::text_table::csv(&header, &rows);
    }
    let markdown = format == Format::Markdown;
    let mut out = String::new();
    super::text_table::aligned(&mut out, &header, &rows, markdown);
    let state = state_table(board);
    let stateful = state.is_some();
    if let Some((state_header, state_rows)) = state {
        out.push('\n');
        super::text_table::aligned(&mut out, &state_header, &state_rows, markdown);
    }
    let (pair_header, pair_rows) = pairs_table(board);
    if !pair_rows.is_empty() {
        out.push('\n');
        super::text_table::aligned(
            &mut out,
            &pair_header,
            &pair_rows,
            format == Format::Markdown,
        );
    }
    if format == Format::Table {
        out.push_str(
            "\nfidelity: mean over the calls each world model simulated, 95% interval (Wilson's at \
             the effective n, clustered by the run each call came from); error P/R/F1: how well it \
             foresaw the calls that failed; confidence: predictions that came with one, and over \
             them ECE (confidence against fidelity), Brier and AUROC (confidence as the chance of a \
             fidelity of at least the good threshold); pairs: mean difference on the calls both \
             simulated with its 95% interval. Formulas: docs/world-models.md, \"Fidelity\" and \
             \"When to trust a prediction\"; intervals: docs/report-format.md.\n",
        );
    }
    if format == Format::Table && stateful {
        out.push_str(
            "state: fidelity of the calls that changed their server's state (a sandbox saw a \
             field change), that did not (or whose tool is read-only), and of the rest; by the \
             fields the real call changed; risk-weighted (a destructive tool's call counts 4, \
             another call that changed or may have changed state 2, the rest 1); predicted \
             state: fields of the world model's predicted state that agree with the real state \
             after the call. docs/world-models.md, \"Worlds with state\".\n",
        );
        if let Some(w) = board.world_models.first() {
            let _ = writeln!(
                out,
                "good fidelity (for Brier, AUROC): at least {:.2} (--good-fidelity)",
                w.calibration.good_fidelity
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(score: f64, predicted_error: bool) -> Outcome {
        Outcome::Simulated {
            fidelity: Fidelity {
                error_agreement: 1.0,
                structure: None,
                values: None,
                token_f1: score,
                score,
                no_prediction: false,
            },
            predicted_error,
            tokens: 10,
            same_decision: None,
            confidence: None,
            state_fidelity: None,
        }
    }

    fn call(real_error: bool, outcomes: Vec<Outcome>) -> CallResult {
        CallResult {
            tool: if real_error { "t:fails" } else { "t:works" }.into(),
            source: String::new(),
            real_error,
            effect: StateEffect::default(),
            outcomes,
        }
    }

    #[test]
    fn calls_that_changed_state_are_scored_apart_and_weigh_by_their_risk() {
        let effect = |fields_changed, read_only, destructive| StateEffect {
            fields_changed,
            read_only,
            destructive,
        };
        let with = |effect, score, state| CallResult {
            effect,
            outcomes: vec![match sim(score, false) {
                Outcome::Simulated {
                    fidelity,
                    predicted_error,
                    tokens,
                    same_decision,
                    confidence,
                    ..
                } => Outcome::Simulated {
                    fidelity,
                    predicted_error,
                    tokens,
                    same_decision,
                    confidence,
                    state_fidelity: state,
                },
                failed => failed,
            }],
            ..call(false, vec![])
        };
        let calls = [
            // A read a sandbox saw change nothing, predicted well.
            with(effect(Some(0), Some(true), false), 1.0, Some(1.0)),
            // A write of one field, predicted half well.
            with(effect(Some(1), Some(false), false), 0.5, Some(0.75)),
            // A delete of three fields, predicted badly.
            with(effect(Some(3), Some(false), true), 0.0, Some(0.25)),
            // A read-only tool no sandbox watched: unchanged by its annotation.
            with(effect(None, Some(true), false), 1.0, None),
            // An unannotated, unwatched call: nobody knows.
            with(effect(None, None, false), 0.5, None),
        ];
        let row = &leaderboard(&["w".into()], &calls, 0.5).world_models[0];
        let split = |k: &str| row.by_state_change[k].fidelity.unwrap().mean;
        assert_eq!(row.by_state_change["unchanged"].n, 2);
        assert_eq!(split("unchanged"), 1.0);
        assert_eq!(row.by_state_change["changed"].n, 2);
        assert_eq!(split("changed"), 0.25);
        assert_eq!(row.by_state_change["unknown"].n, 1);
        let bins: Vec<(&str, usize)> = row
            .by_fields_changed
            .iter()
            .map(|(k, s)| (*k, s.n))
            .collect();
        assert_eq!(bins, [("0", 1), ("1", 1), ("2-4", 1)]);
        // Weights 1, 2, 4, 1, 2: (1 + 1 + 0 + 1 + 1) / 10.
        assert_eq!(row.risk_weighted_fidelity, Some(0.4));
        let state = row.state_fidelity.unwrap();
        assert_eq!(state.n, 3);
        assert!((state.fidelity.unwrap().mean - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn hand_worked_rows_and_pair() {
        let names = vec!["a".to_string(), "b".to_string()];
        let mut calls = vec![
            call(false, vec![sim(1.0, false), sim(0.5, false)]),
            call(false, vec![sim(0.8, true), sim(0.8, false)]),
            call(true, vec![sim(1.0, true), sim(0.0, false)]),
            call(true, vec![sim(0.0, false), Outcome::Failed]),
        ];
        // Calls of one run are one cluster: from a single run, the pair has no interval.
        let one_run = leaderboard(&names, &calls, 0.9);
        assert_eq!(one_run.pairs[0].n, 3);
        assert_eq!(
            one_run.pairs[0].ci, None,
            "three calls of one run are one unit"
        );
        for (i, c) in calls.iter_mut().enumerate() {
            c.source = format!("run-{i}");
        }
        let board = leaderboard(&names, &calls, 0.9);
        let a = &board.world_models[0];
        assert_eq!((a.n, a.calls, a.failed, a.tokens), (4, 4, 0, 40));
        assert!((a.fidelity.unwrap().mean - 0.7).abs() < 1e-12);
        // a said "error" twice (one right), and caught one of the two failures.
        assert_eq!(a.error_prediction.precision, Some(0.5));
        assert_eq!(a.error_prediction.recall, Some(0.5));
        assert_eq!(a.error_prediction.f1, Some(0.5));
        let b = &board.world_models[1];
        assert_eq!((b.n, b.failed), (3, 1));
        assert_eq!(b.error_prediction.precision, None, "b never said error");
        assert_eq!(b.error_prediction.recall, Some(0.0));
        assert_eq!(b.by_tool.len(), 2);
        assert_eq!(b.by_server.len(), 1, "both tools are on server t");
        assert_eq!((b.by_server[0].tool.as_str(), b.by_server[0].n), ("t", 3));
        // The pair: on the three calls both simulated, a−b = +0.5, 0, +1.0.
        let p = &board.pairs[0];
        assert_eq!((p.n, p.wins, p.ties, p.losses), (3, 2, 1, 0));
        assert!((p.mean_diff.unwrap() - 0.5).abs() < 1e-12);
        let [lo, hi] = p.ci.unwrap();
        // A difference of fidelities stays within ±1.
        assert!(
            lo >= -1.0 && hi <= 1.0 && lo <= 0.5 && 0.5 <= hi,
            "{lo} {hi}"
        );
    }

    #[test]
    fn formats_carry_the_same_rows() {
        let names = vec!["memory".to_string(), "qwen".to_string()];
        let calls = vec![call(false, vec![sim(1.0, false), sim(0.5, false)])];
        let board = leaderboard(&names, &calls, 0.9);
        let json: serde_json::Value = serde_json::from_str(&render(&board, Format::Json)).unwrap();
        assert_eq!(json["world_models"][0]["name"], "memory");
        assert_eq!(json["world_models"][1]["fidelity"]["mean"], 0.5);
        assert_eq!(json["pairs"][0]["a"], "memory");
        assert_eq!(json["pairs"][0]["wins"], 1);
        assert!(render(&board, Format::Table).contains("qwen"));
        assert!(render(&board, Format::Markdown).starts_with("| world model"));
        assert_eq!(render(&board, Format::Csv).lines().count(), 3);
    }
}
