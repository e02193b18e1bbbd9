//! World models side by side on the same recorded calls (`cosmos wm-eval`): per world model the
//! calls it simulated, mean fidelity with its 95% interval, how well it predicted which calls
//! fail (precision, recall, F1), per tool; and for every pair of world models a paired comparison
//! on the calls both simulated (mean difference with a paired 95% interval, wins, ties,
//! losses). Fidelity is [`super::fidelity::compare`], the one every view uses.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::calibration::{Calibration, Scored, calibration};
use super::fidelity::Fidelity;
use super::group::UNIT;
use super::stats::{self, Estimate};

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
    /// One outcome per world model.
    pub outcomes: Vec<Outcome>,
}

/// A mean fidelity with its interval, as the JSON shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Mean {
    /// The mean.
    pub mean: f64,
    /// The 95% interval, as `report` gives fidelity: a bounded mean's (it stays in [0, 1]),
    /// clustered by the run each call came from; `None` under [`stats::MIN_N`] values (runs,
    /// when clustered).
    pub ci: Option<[f64; 2]>,
}

impl Mean {
    /// The mean of `values`, each from the run `source[i]`.
    fn of(values: &[f64], source: &[&str]) -> Option<Self> {
        Estimate::of_clustered(values, source, UNIT).map(|e| Self {
            mean: e.mean,
            ci: e.ci,
        })
    }
}

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
    let (mut tp, mut fp, mut fn_, mut failed, mut none, mut tokens) = (0, 0, 0, 0, 0, 0);
    let mut by_tool: BTreeMap<&str, Scores> = BTreeMap::new();
    let mut by_server: BTreeMap<&str, Scores> = BTreeMap::new();
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
            } => {
                let source = call.source.as_str();
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
                tokens += t;
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
    }
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

/// The leaderboard as text.
pub fn render(board: &Leaderboard, format: Format) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(board).unwrap_or_default() + "\n";
    }
    // Every figure here lies in [0, 1]: never shown as 0 or 1 unless it is exactly that.
    let fraction = |v: f64| super::figure::fraction(v, 2);
    let num = |v: Option<f64>| v.map_or("—".to_string(), fraction);
    let mean = |m: &Option<Mean>| match m {
        Some(Mean {
            mean,
            ci: Some([lo, hi]),
        }) => format!("{} [{}, {}]", fraction(*mean), fraction(*lo), fraction(*hi)),
        Some(Mean { mean, ci: None }) => fraction(*mean),
        None => "—".into(),
    };
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
                mean(&w.fidelity),
                num(w.error_prediction.precision),
                num(w.error_prediction.recall),
                num(w.error_prediction.f1),
                // How many of its predictions came with a confidence.
                format!("{}/{}", w.calibration.n, w.n),
                num(w.calibration.ece),
                num(w.calibration.brier),
                num(w.calibration.auroc),
                w.tokens.to_string(),
            ];
            if decided {
                row.push(w.decision.map_or("—".to_string(), |d| {
                    format!("{}/{} {}", d.same, d.n, mean(&Some(d.rate)))
                }));
            }
            row
        })
        .collect();
    let mut out = String::new();
    if format == Format::Csv {
        let _ = writeln!(out, "{}", header.join(","));
        for r in rows {
            let cells: Vec<String> = r
                .iter()
                .map(|c| {
                    if c.contains([',', '"']) {
                        format!("\"{}\"", c.replace('"', "\"\""))
                    } else {
                        c.clone()
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join(","));
        }
        return out;
    }
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
    super::table::aligned(&mut out, &header, &rows, format == Format::Markdown);
    if !pair_rows.is_empty() {
        out.push('\n');
        super::table::aligned(
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
        }
    }

    fn call(real_error: bool, outcomes: Vec<Outcome>) -> CallResult {
        CallResult {
            tool: if real_error { "t:fails" } else { "t:works" }.into(),
            source: String::new(),
            real_error,
            outcomes,
        }
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
