//! A mean of per-call figures in [0, 1] with its interval, as the leaderboard's JSON shows it.

use serde::Serialize;

use super::group::UNIT;
use super::stats::Estimate;

/// A mean fidelity with its interval, as the JSON shows it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Mean {
    /// The mean.
    pub mean: f64,
    /// The 95% interval, as `report` gives fidelity: a bounded mean's (it stays in [0, 1]),
    /// clustered by the run each call came from; `None` under [`super::stats::MIN_N`] values (runs,
    /// when clustered).
    pub ci: Option<[f64; 2]>,
}

impl Mean {
    /// The mean of `values`, each from the run `source[i]`.
    pub(super) fn of(values: &[f64], source: &[&str]) -> Option<Self> {
        Estimate::of_clustered(values, source, UNIT).map(|e| Self {
            mean: e.mean,
            ci: e.ci,
        })
    }
}
