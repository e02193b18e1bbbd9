//! Recalibration: a strictly increasing map from a world model's confidence in one tool's
//! prediction to the chance the prediction is good. Platt scaling: a logistic curve on the
//! confidence's logit, `σ(slope · logit(c) + intercept)` with `slope > 0`, fitted by maximum
//! likelihood on Platt's smoothed targets (so a tool whose predictions separate perfectly still
//! gets a finite curve).
//!
//! `wm-eval --routing-out` fits one per tool and stores it in the routing file. Its calibration
//! error is measured by cross-fitting: the calls are dealt into [`FOLDS`] folds in their
//! order, each fold's confidences mapped by a curve fitted on the other folds, and the ECE
//! taken over those out-of-fold values, so the figure is for calls the curve never saw.
//!
//! Strictly increasing, the map never reorders predictions: a threshold on the recalibrated
//! scale trusts exactly the predictions the raw threshold it maps trusts, and the routing
//! bound's guarantee (chosen on the raw order) carries over unchanged.

use super::calibration::{Scored, calibration};

/// One prediction of a tool's call: its confidence and whether it was poor (its fidelity under
/// the good-fidelity mark).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// The world model's confidence.
    pub confidence: f64,
    /// Fidelity under the mark.
    pub poor: bool,
}

/// Folds of the cross-fitting.
pub const FOLDS: usize = 5;

/// Fewest predictions of a tool a curve is fitted on: two per fold.
pub const FEWEST: usize = 2 * FOLDS;

/// Confidences are held this far from 0 and 1 before their logit is taken.
const EDGE: f64 = 1e-6;

/// A fitted curve: the chance of a good prediction at confidence `c` is
/// `σ(slope · logit(c) + intercept)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recalibration {
    /// The logit's weight; always above 0.
    pub slope: f64,
    /// The offset.
    pub intercept: f64,
}

impl Recalibration {
    /// The recalibrated confidence: the fitted chance of a good prediction.
    pub fn apply(&self, confidence: f64) -> f64 {
        sigmoid(self.slope * logit(confidence) + self.intercept)
    }

    /// The curve fitted on `judged`, or why none is: too few predictions, all good or all
    /// poor, or a confidence that does not rise with good predictions.
    pub fn fit(judged: &[Judged]) -> Result<Self, String> {
        if judged.len() < FEWEST {
            return Err(format!(
                "{} prediction(s); a curve needs at least {FEWEST}",
                judged.len()
            ));
        }
        let good = judged.iter().filter(|j| !j.poor).count();
        if good == 0 || good == judged.len() {
            return Err(format!(
                "every prediction {}: nothing to tell apart",
                if good == 0 { "poor" } else { "good" }
            ));
        }
        // Platt's targets: a good prediction counts (good + 1) / (good + 2), a poor one
        // 1 / (poor + 2).
        let poor = judged.len() - good;
        let (hit, miss) = (
            (good as f64 + 1.0) / (good as f64 + 2.0),
            1.0 / (poor as f64 + 2.0),
        );
        let points: Vec<(f64, f64)> = judged
            .iter()
            .map(|j| (logit(j.confidence), if j.poor { miss } else { hit }))
            .collect();
        let (slope, intercept) = newton(&points);
        if !(slope.is_finite() && intercept.is_finite()) || slope <= 0.0 {
            return Err("confidence does not rise with good predictions".into());
        }
        Ok(Self { slope, intercept })
    }
}

/// A tool's curve with its calibration error before and after, out of fold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fitted {
    /// The curve fitted on every prediction (what a run applies).
    pub map: Recalibration,
    /// ECE of the raw confidences against good predictions.
    pub ece_raw: f64,
    /// ECE of the out-of-fold recalibrated confidences against good predictions.
    pub ece_cross_fitted: f64,
}

/// The curve for `judged` (in call order) with its cross-fitted ECE, or why there is none (a
/// fold's own fit counting too).
pub fn cross_fitted(judged: &[Judged]) -> Result<Fitted, String> {
    let map = Recalibration::fit(judged)?;
    let mut out_of_fold = vec![0.0; judged.len()];
    for fold in 0..FOLDS {
        let training: Vec<Judged> = judged
            .iter()
            .enumerate()
            .filter(|(i, _)| i % FOLDS != fold)
            .map(|(_, j)| *j)
            .collect();
        let curve = Recalibration::fit(&training)
            .map_err(|why| format!("fold {} of {FOLDS}: {why}", fold + 1))?;
        for (i, j) in judged.iter().enumerate().filter(|(i, _)| i % FOLDS == fold) {
            out_of_fold[i] = curve.apply(j.confidence);
        }
    }
    let ece = |confidences: &mut dyn Iterator<Item = f64>| {
        let scored: Vec<Scored<'_>> = confidences
            .zip(judged)
            .map(|(c, j)| Scored {
                confidence: Some(c),
                fidelity: if j.poor { 0.0 } else { 1.0 },
                source: "",
            })
            .collect();
        calibration(&scored, 0.5).ece.unwrap_or(0.0)
    };
    Ok(Fitted {
        map,
        ece_raw: ece(&mut judged.iter().map(|j| j.confidence)),
        ece_cross_fitted: ece(&mut out_of_fold.into_iter()),
    })
}

fn logit(c: f64) -> f64 {
    let c = c.clamp(EDGE, 1.0 - EDGE);
    (c / (1.0 - c)).ln()
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// The logistic loss of `(a, b)` over `(x, target)` points.
fn loss(points: &[(f64, f64)], a: f64, b: f64) -> f64 {
    points
        .iter()
        .map(|&(x, t)| {
            let z = a * x + b;
            // −[t·ln σ(z) + (1−t)·ln(1−σ(z))], written to stay finite for large |z|.
            let log1p_exp = |z: f64| {
                if z > 0.0 {
                    z + (-z).exp().ln_1p()
                } else {
                    z.exp().ln_1p()
                }
            };
            t * log1p_exp(-z) + (1.0 - t) * log1p_exp(z)
        })
        .sum()
}

/// Newton's method with a backtracking line search on the logistic loss, from slope 1 and
/// intercept 0 (the identity on the logit).
fn newton(points: &[(f64, f64)]) -> (f64, f64) {
    let (mut a, mut b) = (1.0, 0.0);
    let mut current = loss(points, a, b);
    for _ in 0..100 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(x, t) in points {
            let p = sigmoid(a * x + b);
            let w = (p * (1.0 - p)).max(1e-12);
            ga += (p - t) * x;
            gb += p - t;
            haa += w * x * x;
            hab += w * x;
            hbb += w;
        }
        let det = haa * hbb - hab * hab;
        if det.abs() < 1e-300 {
            break;
        }
        let (da, db) = ((hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det);
        let mut step = 1.0;
        let mut moved = false;
        while step > 1e-10 {
            let (na, nb) = (a - step * da, b - step * db);
            let next = loss(points, na, nb);
            if next <= current {
                (a, b, current, moved) = (na, nb, next, true);
                break;
            }
            step /= 2.0;
        }
        if !moved || (step * da).abs().max((step * db).abs()) < 1e-10 {
            break;
        }
    }
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Predictions whose chance of being good at confidence `c` is `σ(2·logit(c) − 0.5)`.
    fn drawn(n: usize, seed: u64) -> Vec<Judged> {
        let truth = Recalibration {
            slope: 2.0,
            intercept: -0.5,
        };
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n)
            .map(|_| {
                let confidence = 0.02 + 0.96 * rng.f64();
                Judged {
                    confidence,
                    poor: rng.f64() >= truth.apply(confidence),
                }
            })
            .collect()
    }

    #[test]
    fn a_known_curve_is_found_again() {
        let fitted = Recalibration::fit(&drawn(20_000, 3)).unwrap();
        assert!((fitted.slope - 2.0).abs() < 0.15, "{fitted:?}");
        assert!((fitted.intercept + 0.5).abs() < 0.1, "{fitted:?}");
    }

    #[test]
    fn the_curve_never_reorders_and_lowers_the_error_out_of_fold() {
        let judged = drawn(2_000, 5);
        let fitted = cross_fitted(&judged).unwrap();
        let mut last = 0.0;
        for k in 0..=1000 {
            let now = fitted.map.apply(k as f64 / 1000.0);
            assert!(now > last || k == 0, "not increasing at {k}");
            last = now;
        }
        // The raw confidences are miscalibrated by construction; the curve, unseen, is close.
        assert!(fitted.ece_raw > 0.05, "{fitted:?}");
        assert!(fitted.ece_cross_fitted < fitted.ece_raw / 2.0, "{fitted:?}");
    }

    #[test]
    fn no_curve_where_nothing_can_be_told_apart() {
        let all_good = vec![
            Judged {
                confidence: 0.7,
                poor: false
            };
            40
        ];
        assert!(
            Recalibration::fit(&all_good)
                .unwrap_err()
                .contains("every prediction good")
        );
        assert!(
            Recalibration::fit(&all_good[..4])
                .unwrap_err()
                .contains("at least 10")
        );
        // Sure when wrong, unsure when right: a falling curve is no recalibration. Perfectly
        // separated the other way: finite all the same (Platt's targets).
        let alternating = |poor_when_sure: bool| -> Vec<Judged> {
            (0..40)
                .map(|i| Judged {
                    confidence: if i % 2 == 0 { 0.9 } else { 0.1 },
                    poor: (i % 2 == 0) == poor_when_sure,
                })
                .collect()
        };
        assert!(
            Recalibration::fit(&alternating(true))
                .unwrap_err()
                .contains("does not rise")
        );
        let separated = alternating(false);
        let curve = Recalibration::fit(&separated).unwrap();
        assert!(
            curve.apply(0.9) < 1.0 && curve.apply(0.9) > 0.9,
            "{curve:?}"
        );
    }
}
