//! Means with a sample size and a 95% confidence interval: Student's t for unbounded
//! quantities, Wilson's score interval for rates (which never leaves [0, 1]).

use serde::{Deserialize, Serialize};

/// A mean over `n` values with the half-width of its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The mean.
    pub mean: f64,
    /// How many values.
    pub n: usize,
    /// Half-width of the symmetric 95% interval (Student's t); `None` with fewer than two
    /// values, and for a rate, whose interval is not symmetric (see `ci`).
    pub ci95: Option<f64>,
    /// The 95% interval, `[low, high]`: `mean ± ci95`, or for a rate Wilson's score interval;
    /// `None` with fewer than two values.
    pub ci: Option<[f64; 2]>,
}

impl Estimate {
    /// The estimate over `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let ci95 = (n >= 2).then(|| {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t_975(n - 1) * (var / n as f64).sqrt()
        });
        Some(Self {
            mean,
            n,
            ci95,
            ci: ci95.map(|h| [mean - h, mean + h]),
        })
    }

    /// The estimate of a rate from per-run values in [0, 1]: their mean, with Wilson's score
    /// interval taking the mean as the proportion and the runs as the trials. Unlike
    /// `mean ± t·s/√n`, it stays inside [0, 1] however few runs there are (two runs at 0 and 1
    /// give 50% [9.5%, 90.5%], not 50 ± 635%).
    pub fn of_rate(values: &[f64]) -> Option<Self> {
        let plain = Self::of(values)?;
        let ci = (plain.n >= 2).then(|| wilson(plain.mean, plain.n));
        Some(Self {
            ci95: None,
            ci,
            ..plain
        })
    }
}

/// Wilson's 95% score interval for a proportion `p` over `n` trials.
pub fn wilson(p: f64, n: usize) -> [f64; 2] {
    const Z: f64 = 1.959_963_984_540_054;
    let n = n as f64;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// Resamples for the paired bootstrap; a fixed seed makes every table reproducible.
const BOOTSTRAP: usize = 2_000;
const SEED: u64 = 0x5EED_C05E;

/// The paired bootstrap 95% interval of the mean of `diffs` (per-item differences, resampled
/// with replacement so each pair stays together): the 2.5th and 97.5th percentiles of the
/// resampled means. Needs at least one value.
pub fn paired_bootstrap(diffs: &[f64]) -> [f64; 2] {
    let mut rng = fastrand::Rng::with_seed(SEED);
    let n = diffs.len();
    let mut means: Vec<f64> = (0..BOOTSTRAP)
        .map(|_| (0..n).map(|_| diffs[rng.usize(..n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((BOOTSTRAP as f64 - 1.0) * q).round() as usize];
    [at(0.025), at(0.975)]
}

/// The 97.5th percentile of Student's t with `df` degrees of freedom.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_interval() {
        // values 1,2,3: mean 2, s = 1, se = 1/sqrt(3), t(2) = 4.303 → 2.4843…
        let e = Estimate::of(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((e.mean, e.n), (2.0, 3));
        assert!((e.ci95.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn degenerate_samples() {
        assert_eq!(Estimate::of(&[]), None);
        assert_eq!(
            Estimate::of(&[5.0]),
            Some(Estimate {
                mean: 5.0,
                n: 1,
                ci95: None,
                ci: None,
            })
        );
        assert_eq!(Estimate::of(&[4.0, 4.0]).unwrap().ci95, Some(0.0));
    }

    #[test]
    fn a_rates_interval_stays_inside_zero_and_one_hand_worked() {
        // Two runs at 0 and 1: Student's t gives 0.5 ± 6.353 (12.706 · 0.5).
        assert!((Estimate::of(&[0.0, 1.0]).unwrap().ci95.unwrap() - 6.353).abs() < 1e-9);
        // Wilson, p = 0.5, n = 2, z = 1.96: centre = 0.5; z²/n = 1.92073;
        // half = 1.95996 / 2.92073 · √(0.125 + 3.84146/16) = 0.67105 · 0.60423 = 0.40547.
        let r = Estimate::of_rate(&[0.0, 1.0]).unwrap();
        assert_eq!((r.mean, r.n, r.ci95), (0.5, 2, None));
        let [lo, hi] = r.ci.unwrap();
        assert!(
            (lo - 0.09453).abs() < 1e-5 && (hi - 0.90547).abs() < 1e-5,
            "{lo} {hi}"
        );
        // All successes: the interval touches 1 and stays below it.
        let [lo, hi] = Estimate::of_rate(&[1.0, 1.0, 1.0]).unwrap().ci.unwrap();
        assert!(hi == 1.0 && lo > 0.4 && lo < 0.5, "{lo}");
        // p = 1, n = 3: centre = (1 + 0.64029)/(1 + 1.28049) = 0.71924,
        // half = 1.95996/2.28049 · √(0 + 3.84146/36) = 0.85945 · 0.32666 = 0.28075 → low 0.43850.
        assert!((lo - 0.43850).abs() < 1e-5, "{lo}");
        assert_eq!(Estimate::of_rate(&[0.7]).unwrap().ci, None);
    }
}
