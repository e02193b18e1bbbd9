//! Whether a world model's confidence can be trusted (docs/world-models.md, "When to trust a
//! prediction"): its confidences held against the fidelity its predictions really had, on
//! recorded calls (`cosmos wm-eval`). A prediction without a confidence is counted apart, never
//! given one.
//!
//! - `ece`: expected calibration error, confidence against fidelity, over ten equal bins of
//!   confidence: Σ (bin's share) · |mean confidence − mean fidelity|.
//! - `brier`: mean (confidence − good)², `good` being 1 for a prediction whose fidelity is at
//!   least the threshold.
//! - `auroc`: how well confidence ranks good predictions above the others (Mann–Whitney: the
//!   chance that a good one has the higher confidence, ties counting half); none without both.
//! - `selective`: trusting only predictions with confidence at least t, for each t: the share
//!   trusted (coverage) and their mean fidelity, its 95% interval clustered by the run each call
//!   came from (as the leaderboard's fidelity).
//! - `reliability`: the bins themselves, for the diagram.
//!
//! A world model's confidences held against its predictions' fidelity (ECE,
//! Brier, AUROC, the selective curve with run-clustered intervals, the reliability bins); a
//! prediction without a confidence is counted apart, never given one.

use serde::Serialize;

use super::group::UNIT;
use super::mean::Mean;
use super::stats::Estimate;

pub use super::fidelity::GOOD_FIDELITY;

/// Bins of the reliability diagram and of ECE.
const BINS: usize = 10;

/// Most points of the selective curve (thresholds beyond are taken at coverage steps).
const MAX_POINTS: usize = 20;

/// One prediction: its confidence, its fidelity, the run its call came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored<'a> {
    /// The world model's confidence, when it gave one.
    pub confidence: Option<f64>,
    /// Its fidelity against the real result.
    pub fidelity: f64,
    /// The run its call was recorded in (the cluster).
    pub source: &'a str,
}

/// One bin of confidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bin {
    /// Its lower edge (inclusive).
    pub from: f64,
    /// Its upper edge (exclusive, but for the last, which holds 1).
    pub to: f64,
    /// Predictions in it.
    pub n: usize,
    /// Their mean confidence.
    pub confidence: Option<f64>,
    /// Their mean fidelity.
    pub fidelity: Option<f64>,
}

/// One point of the selective curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selective {
    /// Predictions with at least this confidence are trusted.
    pub threshold: f64,
    /// The threshold as every view writes it: the fewest decimals that trust exactly these
    /// predictions, never rounded up ([`super::figure::threshold`]).
    pub threshold_shown: String,
    /// The share of predictions with a confidence that are trusted.
    pub coverage: f64,
    /// How many.
    pub n: usize,
    /// Their mean fidelity, with its interval.
    pub fidelity: Mean,
}

/// A world model's calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// Predictions with a confidence.
    pub n: usize,
    /// Predictions the world model gave no confidence for (left out of every figure here).
    pub without_confidence: usize,
    /// The fidelity a prediction needs to count as good.
    pub good_fidelity: f64,
    /// Good predictions among the `n`.
    pub good: usize,
    /// Expected calibration error.
    pub ece: Option<f64>,
    /// Brier score of confidence as the chance of a good prediction.
    pub brier: Option<f64>,
    /// Area under the ROC curve of confidence for good predictions.
    pub auroc: Option<f64>,
    /// Trusting the most confident share: coverage against mean fidelity, most confident first.
    pub selective: Vec<Selective>,
    /// The reliability diagram's bins.
    pub reliability: Vec<Bin>,
}

/// The calibration of `predictions`, a prediction being good at `good_fidelity` or above.
pub fn calibration(predictions: &[Scored<'_>], good_fidelity: f64) -> Calibration {
    let with: Vec<(f64, f64, &str)> = predictions
        .iter()
        .filter_map(|p| p.confidence.map(|c| (c, p.fidelity, p.source)))
        .collect();
    let n = with.len();
    let is_good = |f: f64| f >= good_fidelity;
    let good = with.iter().filter(|(_, f, _)| is_good(*f)).count();
    let reliability = bins(&with);
    let ece = (n > 0).then(|| {
        reliability
            .iter()
            .filter_map(|b| Some(b.n as f64 / n as f64 * (b.confidence? - b.fidelity?).abs()))
            .sum()
    });
    let brier = (n > 0).then(|| {
        with.iter()
            .map(|(c, f, _)| (c - if is_good(*f) { 1.0 } else { 0.0 }).powi(2))
            .sum::<f64>()
            / n as f64
    });
    Calibration {
        n,
        without_confidence: predictions.len() - n,
        good_fidelity,
        good,
        ece,
        brier,
        auroc: auroc(&with, good_fidelity),
        selective: selective(&with),
        reliability,
    }
}

/// The bin of confidence `c`: tenths, 1 in the last.
fn bin_of(c: f64) -> usize {
    ((c * BINS as f64) as usize).min(BINS - 1)
}

fn bins(with: &[(f64, f64, &str)]) -> Vec<Bin> {
    let mut sums = [(0usize, 0.0f64, 0.0f64); BINS];
    for (c, f, _) in with {
        let s = &mut sums[bin_of(*c)];
        *s = (s.0 + 1, s.1 + c, s.2 + f);
    }
    sums.iter()
        .enumerate()
        .map(|(i, &(n, c, f))| Bin {
            from: i as f64 / BINS as f64,
            to: (i + 1) as f64 / BINS as f64,
            n,
            confidence: (n > 0).then(|| c / n as f64),
            fidelity: (n > 0).then(|| f / n as f64),
        })
        .collect()
}

/// Mann–Whitney's AUROC: the chance a good prediction has a higher confidence than one that is
/// not, ties counting half. Sorted once: O(n log n).
fn auroc(with: &[(f64, f64, &str)], good_fidelity: f64) -> Option<f64> {
    let mut sorted: Vec<(f64, bool)> = with
        .iter()
        .map(|(c, f, _)| (*c, *f >= good_fidelity))
        .collect();
    let positives = sorted.iter().filter(|(_, g)| *g).count();
    let negatives = sorted.len() - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    // For each group of equal confidence: the negatives below it count whole, those in it half.
    let (mut below, mut wins, mut i) = (0usize, 0.0f64, 0usize);
    while i < sorted.len() {
        let j = i + sorted[i..]
            .iter()
            .take_while(|(c, _)| *c == sorted[i].0)
            .count();
        let group = &sorted[i..j];
        let pos = group.iter().filter(|(_, g)| *g).count();
        let neg = group.len() - pos;
        wins += pos as f64 * (below as f64 + 0.5 * neg as f64);
        below += neg;
        i = j;
    }
    Some(wins / (positives * negatives) as f64)
}

/// The selective curve: at each distinct confidence (at most [`MAX_POINTS`] of them, taken at
/// even steps of coverage), the predictions at or above it.
fn selective(with: &[(f64, f64, &str)]) -> Vec<Selective> {
    let mut sorted: Vec<&(f64, f64, &str)> = with.iter().collect();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut thresholds: Vec<f64> = sorted.iter().map(|(c, ..)| *c).collect();
    thresholds.dedup();
    if thresholds.len() > MAX_POINTS {
        let n = sorted.len();
        thresholds = (1..=MAX_POINTS)
            .map(|k| sorted[(k * n).div_ceil(MAX_POINTS) - 1].0)
            .collect();
        thresholds.dedup();
    }
    thresholds
        .into_iter()
        .filter_map(|t| {
            let kept = sorted.partition_point(|(c, ..)| *c >= t);
            let (values, sources): (Vec<f64>, Vec<&str>) =
                sorted[..kept].iter().map(|(_, f, s)| (*f, *s)).unzip();
            let estimate = Estimate::of_clustered(&values, &sources, UNIT)?;
            // The surest confidence under the threshold: what its text must stay above.
            let below = sorted.get(kept).map(|(c, ..)| *c);
            Some(Selective {
                threshold: t,
                threshold_shown: super::figure::threshold(t, below),
                coverage: kept as f64 / sorted.len() as f64,
                n: kept,
                fidelity: Mean {
                    mean: estimate.mean,
                    ci: estimate.ci,
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(table: &[(Option<f64>, f64, &'static str)]) -> Vec<Scored<'static>> {
        table
            .iter()
            .map(|&(confidence, fidelity, source)| Scored {
                confidence,
                fidelity,
                source,
            })
            .collect()
    }

    /// Five predictions with a confidence and one without, worked by hand.
    #[test]
    fn ece_brier_and_auroc_match_a_hand_worked_table() {
        let table = scored(&[
            (Some(0.95), 1.0, "a"),
            (Some(0.92), 0.5, "a"),
            (Some(0.55), 0.95, "b"),
            (Some(0.55), 0.2, "b"),
            (Some(0.15), 0.1, "c"),
            (None, 1.0, "c"),
        ]);
        let c = calibration(&table, 0.9);
        assert_eq!((c.n, c.without_confidence, c.good), (5, 1, 2));
        // Bins: [0.9,1] holds 0.95/1.0 and 0.92/0.5: mean c 0.935, mean f 0.75, gap 0.185;
        // [0.5,0.6) holds 0.55/0.95 and 0.55/0.2: gap |0.55 − 0.575| = 0.025;
        // [0.1,0.2) holds 0.15/0.1: gap 0.05. ECE = (2·0.185 + 2·0.025 + 0.05) / 5 = 0.094.
        assert!((c.ece.unwrap() - 0.094).abs() < 1e-12, "{:?}", c.ece);
        // Good: fidelity ≥ 0.9 (1.0 and 0.95). Brier = (0.05² + 0.92² + 0.45² + 0.55² + 0.15²) / 5.
        let brier = (0.0025 + 0.8464 + 0.2025 + 0.3025 + 0.0225) / 5.0;
        assert!((c.brier.unwrap() - brier).abs() < 1e-12, "{:?}", c.brier);
        // Pairs (good, not good): 0.95 beats 0.92, 0.55, 0.15 (3); 0.55 vs 0.92 loses, vs
        // 0.55 ties (½), vs 0.15 wins (1½ in all). (3 + 1.5) / 6 = 0.75.
        assert!((c.auroc.unwrap() - 0.75).abs() < 1e-12, "{:?}", c.auroc);
        let bin = &c.reliability[9];
        assert_eq!(bin.n, 2);
        assert!((bin.confidence.unwrap() - 0.935).abs() < 1e-12);
    }

    #[test]
    fn the_selective_curve_trusts_the_most_confident_first() {
        let table = scored(&[
            (Some(0.9), 1.0, "a"),
            (Some(0.9), 0.8, "b"),
            (Some(0.5), 0.4, "c"),
            (Some(0.1), 0.0, "d"),
        ]);
        let c = calibration(&table, 0.9);
        let points: Vec<(f64, usize, f64)> = c
            .selective
            .iter()
            .map(|s| (s.threshold, s.n, s.fidelity.mean))
            .collect();
        // Ties at 0.9 are trusted together, never split by the order they came in.
        assert_eq!(points[0], (0.9, 2, 0.9));
        assert_eq!((points[1].0, points[1].1), (0.5, 3));
        assert!((points[1].2 - 2.2 / 3.0).abs() < 1e-12);
        assert_eq!((points[2].0, points[2].1), (0.1, 4));
        assert!((c.selective.last().unwrap().coverage - 1.0).abs() < 1e-12);
    }

    #[test]
    fn no_confidence_and_one_class_give_no_figure_rather_than_a_made_up_one() {
        let c = calibration(&scored(&[(None, 1.0, "a")]), 0.9);
        assert_eq!((c.n, c.ece, c.brier, c.auroc), (0, None, None, None));
        assert!(c.selective.is_empty());
        let all_good = calibration(
            &scored(&[(Some(0.3), 1.0, "a"), (Some(0.8), 0.95, "b")]),
            0.9,
        );
        assert_eq!(all_good.auroc, None);
        assert!(all_good.brier.is_some());
    }

    /// Many distinct confidences give at most [`MAX_POINTS`] points, the last at full coverage.
    #[test]
    fn a_long_curve_is_taken_at_steps_of_coverage() {
        let table: Vec<Scored> = (0..1000)
            .map(|i| Scored {
                confidence: Some(i as f64 / 1000.0),
                fidelity: i as f64 / 1000.0,
                source: if i % 2 == 0 { "a" } else { "b" },
            })
            .collect();
        let c = calibration(&table, 0.9);
        assert!(c.selective.len() <= MAX_POINTS);
        assert_eq!(c.selective.last().unwrap().n, 1000);
        // More confident, more faithful: the curve falls as coverage grows.
        assert!(
            c.selective
                .windows(2)
                .all(|w| w[0].fidelity.mean >= w[1].fidelity.mean)
        );
    }
}
