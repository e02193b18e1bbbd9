//! A tool's confidence threshold with a guarantee: the lowest threshold at which, with
//! probability at least 1 − δ, the share of poor predictions among those trusted (confidence at
//! or above it) is at most ε. Learn-then-Test with fixed-sequence testing (Angelopoulos, Bates
//! et al., 2021): each candidate threshold is a hypothesis "its error exceeds ε", rejected when
//! the exact (Clopper–Pearson) upper bound of its error at level δ is at most ε; candidates are
//! tested from the surest down and testing stops at the first not rejected, so the family-wise
//! error is at most δ and every threshold passed is valid at once. The lowest one passed is
//! chosen: it trusts the most predictions.
//!
//! Assumption: the calls to come are exchangeable with the ones the threshold was chosen on
//! (the same tools, servers and world model, drawn the same way). A server that changed breaks
//! it (`cosmos recheck` finds that); so does a task mix that moved.

use statrs::distribution::{Beta, ContinuousCDF};

pub use super::recalibration::Judged;

/// What the data allow for one tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// Trust predictions at or above `threshold`: of the `n` such predictions seen, `poor`
    /// were poor, and `bound` is the upper bound at level δ of the poor share (≤ ε).
    Trusted {
        /// The threshold (a confidence seen; predictions at or above it are trusted).
        threshold: f64,
        /// Predictions at or above it.
        n: usize,
        /// Of those, poor.
        poor: usize,
        /// Clopper–Pearson upper bound of the poor share, at level δ.
        bound: f64,
    },
    /// No threshold meets ε with these predictions.
    Untrusted {
        /// Why, in words.
        why: String,
        /// At least this many more predictions would be needed before any threshold could pass,
        /// when too few is the reason (none if the predictions are poor enough that more of
        /// the same would not help).
        more_needed: Option<usize>,
    },
}

/// The fewest trusted predictions with which any threshold can pass: with none poor, the
/// Clopper–Pearson bound is 1 − δ^(1/n), at most ε once n ≥ ln δ / ln(1 − ε).
pub fn fewest_to_pass(target_error: f64, delta: f64) -> usize {
    ((delta.ln() / (1.0 - target_error).ln()) - 1e-9)
        .ceil()
        .max(1.0) as usize
}

/// The exact (Clopper–Pearson) one-sided upper bound, at level δ, of a rate with `k`
/// successes in `n` trials.
pub fn upper_bound(k: usize, n: usize, delta: f64) -> f64 {
    if n == 0 || k >= n {
        return 1.0;
    }
    match Beta::new(k as f64 + 1.0, (n - k) as f64) {
        Ok(beta) => beta.inverse_cdf(1.0 - delta),
        Err(_) => 1.0,
    }
}

/// The lowest threshold whose poor share is at most `target_error` with probability at least
/// 1 − `delta` (see the module's doc).
pub fn choose(predictions: &[Judged], target_error: f64, delta: f64) -> Choice {
    let mut sorted: Vec<Judged> = predictions
        .iter()
        .copied()
        .filter(|p| p.confidence.is_finite())
        .collect();
    // Surest first; a threshold is a confidence seen, and trusts every prediction at or above.
    sorted.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let needed = fewest_to_pass(target_error, delta);
    if sorted.len() < needed {
        return Choice::Untrusted {
            why: format!(
                "{} prediction(s); no threshold can pass ε = {target_error} at δ = {delta} with fewer than {needed}",
                sorted.len()
            ),
            more_needed: Some(needed - sorted.len()),
        };
    }
    let mut passed: Option<Choice> = None;
    let mut poor = 0usize;
    let mut i = 0;
    while i < sorted.len() {
        // Every prediction of this confidence joins at once: a threshold cannot split ties.
        let threshold = sorted[i].confidence;
        while i < sorted.len() && sorted[i].confidence == threshold {
            poor += usize::from(sorted[i].poor);
            i += 1;
        }
        let n = i;
        if n < needed {
            // Before the sequence starts: no bound could pass yet.
            continue;
        }
        let bound = upper_bound(poor, n, delta);
        if bound > target_error {
            // Fixed-sequence testing stops at the first threshold not passed.
            break;
        }
        passed = Some(Choice::Trusted {
            threshold,
            n,
            poor,
            bound,
        });
    }
    passed.unwrap_or_else(|| {
        let first_n = needed;
        let seen_poor = sorted[..first_n].iter().filter(|p| p.poor).count();
        Choice::Untrusted {
            why: format!(
                "the surest {first_n} predictions hold {seen_poor} poor: the bound of their poor share exceeds ε = {target_error}"
            ),
            more_needed: None,
        }
    })
}

/// Per tool, the predictions of world model `w` over `calls` (those with a confidence; a
/// prediction without one is never trusted), judged poor under `good_fidelity`.
pub fn judged_by_tool(
    calls: &[super::leaderboard::CallResult],
    w: usize,
    good_fidelity: f64,
) -> std::collections::BTreeMap<String, Vec<Judged>> {
    let mut by_tool: std::collections::BTreeMap<String, Vec<Judged>> = Default::default();
    for call in calls {
        let entry = by_tool.entry(call.tool.clone()).or_default();
        if let super::leaderboard::Outcome::Simulated {
            fidelity,
            confidence: Some(confidence),
            ..
        } = call.outcomes[w]
        {
            entry.push(Judged {
                confidence,
                poor: fidelity.score < good_fidelity,
            });
        }
    }
    by_tool
}

/// The routing file `cosmos wm-eval --routing-out` writes (TOML): the world model, ε, δ, the
/// good-fidelity mark, the method and the runs; then per tool its threshold with what backs
/// it, or `trust = false` with why.
///
/// A tool with a recalibration (`recalibrations`) gets a `recalibration` table: the curve,
/// its ECE before and out of fold, and, when trusted, the threshold on its scale (the curve
/// of the raw one). A curve that would let a raw confidence under the threshold reach the
/// recalibrated one (two confidences rounded to one value) is left out: the scale must trust
/// exactly what the raw threshold does.
pub fn routing_file(
    world_model: &str,
    target_error: f64,
    delta: f64,
    good_fidelity: f64,
    runs: &[String],
    choices: &std::collections::BTreeMap<String, Choice>,
    recalibrations: &std::collections::BTreeMap<String, (super::recalibration::Fitted, Vec<f64>)>,
) -> String {
    use toml::{Table, Value};
    let mut doc = Table::new();
    doc.insert("world_model".into(), Value::from(world_model));
    doc.insert("target_error".into(), Value::from(target_error));
    doc.insert("delta".into(), Value::from(delta));
    doc.insert("good_fidelity".into(), Value::from(good_fidelity));
    doc.insert(
        "method".into(),
        Value::from(
            "Learn-then-Test, fixed sequence from the surest threshold down, Clopper-Pearson bound",
        ),
    );
    doc.insert(
        "runs".into(),
        Value::Array(runs.iter().map(|r| Value::from(r.as_str())).collect()),
    );
    let mut tools = Table::new();
    for (tool, choice) in choices {
        let mut entry = Table::new();
        let mut recalibrated = recalibrations.get(tool).map(|(fitted, _)| {
            let mut table = Table::new();
            table.insert("method".into(), Value::from("platt"));
            table.insert("slope".into(), Value::from(fitted.map.slope));
            table.insert("intercept".into(), Value::from(fitted.map.intercept));
            table.insert("ece_raw".into(), Value::from(fitted.ece_raw));
            table.insert(
                "ece_cross_fitted".into(),
                Value::from(fitted.ece_cross_fitted),
            );
            table.insert(
                "folds".into(),
                Value::from(super::recalibration::FOLDS as i64),
            );
            table
        });
        match choice {
            Choice::Trusted {
                threshold,
                n,
                poor,
                bound,
            } => {
                entry.insert("go_real_below".into(), Value::from(*threshold));
                entry.insert("n".into(), Value::from(*n as i64));
                entry.insert("poor".into(), Value::from(*poor as i64));
                entry.insert("bound".into(), Value::from(*bound));
                if let Some((fitted, seen)) = recalibrations.get(tool) {
                    let on_scale = fitted.map.apply(*threshold);
                    let exact = seen
                        .iter()
                        .all(|&c| (fitted.map.apply(c) >= on_scale) == (c >= *threshold));
                    match (exact, recalibrated.as_mut()) {
                        (true, Some(table)) => {
                            table.insert("go_real_below".into(), Value::from(on_scale));
                        }
                        _ => recalibrated = None,
                    }
                }
            }
            Choice::Untrusted { why, more_needed } => {
                entry.insert("trust".into(), Value::from(false));
                entry.insert("why".into(), Value::from(why.as_str()));
                if let Some(more) = more_needed {
                    entry.insert("more_needed".into(), Value::from(*more as i64));
                }
            }
        }
        if let Some(table) = recalibrated {
            entry.insert("recalibration".into(), Value::Table(table));
        }
        tools.insert(tool.clone(), Value::Table(entry));
    }
    doc.insert("tools".into(), Value::Table(tools));
    format!(
        "# Written by cosmos wm-eval --target-error: per tool, the lowest confidence at which the\n\
         # share of poor predictions trusted is at most target_error with probability at least\n\
         # 1 - delta, if calls to come are exchangeable with these (docs/world-models.md).\n{}",
        toml::to_string(&doc).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_two_clean_predictions_are_the_fewest_that_pass_at_a_tenth() {
        assert_eq!(fewest_to_pass(0.1, 0.1), 22);
        // The bound of 0 in 22 at δ 0.1 is just under 0.1; of 0 in 21 just over.
        assert!(upper_bound(0, 22, 0.1) <= 0.1);
        assert!(upper_bound(0, 21, 0.1) > 0.1);
    }

    #[test]
    fn the_clopper_pearson_bound_is_exact() {
        // 1 poor in 10 at δ 0.05: the textbook exact one-sided bound is 0.3942.
        assert!((upper_bound(1, 10, 0.05) - 0.3942).abs() < 1e-3);
        assert_eq!(upper_bound(3, 3, 0.1), 1.0);
    }

    /// The population: one tool right 80% of the time (confidence uniform in 0.6–1.0
    /// when right, 0.0–0.7 when wrong, 360 calls); two tools always wrong yet 0.95-sure.
    #[test]
    fn a_good_tool_is_trusted_between_its_error_and_a_confidently_wrong_one_never() {
        let mut draws = fastrand::Rng::with_seed(7);
        let good: Vec<Judged> = (0..360)
            .map(|_| {
                let right = draws.f64() < 0.8;
                let confidence = if right {
                    0.6 + 0.4 * draws.f64()
                } else {
                    0.7 * draws.f64()
                };
                Judged {
                    confidence,
                    poor: !right,
                }
            })
            .collect();
        match choose(&good, 0.1, 0.1) {
            Choice::Trusted { threshold, .. } => {
                assert!((0.2..=0.8).contains(&threshold), "{threshold}")
            }
            other => panic!("{other:?}"),
        }
        let bad = vec![
            Judged {
                confidence: 0.95,
                poor: true
            };
            120
        ];
        assert!(matches!(
            choose(&bad, 0.1, 0.1),
            Choice::Untrusted {
                more_needed: None,
                ..
            }
        ));
    }

    #[test]
    fn too_few_predictions_say_how_many_more() {
        let few = vec![
            Judged {
                confidence: 0.99,
                poor: false
            };
            5
        ];
        assert_eq!(
            choose(&few, 0.1, 0.1),
            Choice::Untrusted {
                why: "5 prediction(s); no threshold can pass ε = 0.1 at δ = 0.1 with fewer than 22"
                    .into(),
                more_needed: Some(17),
            }
        );
    }
}
