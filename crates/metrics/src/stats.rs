//! Means with a 95% interval chosen for what the metric is (docs/report-format.md, "Intervals"):
//!
//! - a mean of values in a known range (rates, fidelity, Execution Quality, judge scores):
//!   Wilson's score interval at the effective sample size `p(1 − p) / se²` with Student's t
//!   quantile for z; it never leaves the range, and errs wide on 0/1 values (whose coverage
//!   cannot sit in a narrow window: few outcomes are possible);
//! - a positive, skewed quantity (tokens, seconds): Cox's interval for a log-normal mean;
//! - a count that can be 0 (calls, rejected decisions): Student's t, kept at or above 0;
//! - repeats of one task are not independent: with repeats the standard error is clustered by
//!   task (CR1) and the degrees of freedom are tasks − 1;
//! - a judge score is a mean of trials: the trials' own noise is a floor under its standard
//!   error ([`Estimate::of_noisy`]).
//!
//! Under [`MIN_N`] values (or tasks) there is no interval, and where the values leave nothing to
//! estimate a spread from, the interval says so instead of claiming certainty. Coverage is
//! measured in `tests/reports/interval_coverage.rs` and printed by `benches/coverage.rs`.
//!
//! Mean, n, 95% interval chosen by the metric's `Scale`: bounded means by Wilson at
//! the effective n (t quantile), positive skewed values by Cox's log-normal interval, counts by
//! Student's t kept at 0; repeats of a task clustered (CR1); none under `MIN_N`; paired
//! differences; tasks for 80% power. Quantiles from `statrs`. `coverage.rs` measures how often
//! each interval covers the truth on simulated metrics (`tests/reports/interval_coverage.rs` holds the
//! windows, `benches/coverage.rs` prints the table; docs/report-format.md, "Intervals").
//!
//! # Intervals
//!
//! Each interval is chosen for what its metric is. Coverage is measured, not assumed:
//! `tests/reports/interval_coverage.rs` draws 2,000 samples per case from distributions shaped like the
//! metrics at n = 3, 5, 10 and 30 and holds each case to 93–97% (exceptions below);
//! `cargo bench --bench coverage` prints the table.
//!
//! | metric kind | interval (`interval`) | why |
//! |---|---|---|
//! | a mean of values in a known range: rates (`tool_call_success_rate`, `valid_tool_name_rate`, `input_schema_compliance`, `valid_call_failure_rate`, `planning_json_compliance`, `cross_server_coordination`), `fidelity`, Execution Quality (0–100), judge scores (0–10) | Wilson's score interval at the effective sample size `n_eff = p(1 − p)/se²` (p the mean scaled to [0, 1], se its standard error), with Student's t quantile (df = n − 1) for z (`wilson_effective_n`) | It never leaves the range; `mean ± t·s/√n` leaves it and covered 77% on skewed rates at n = 3, and Wilson's interval over runs as trials covered 100%. |
//! | the same, when every value is equal | the value, widened by Wilson's upper bound for 0 of n (`w = z²/(n + z²)`): `[v − w(v − lo), v + w(hi − v)]` (`all_equal`) | n equal values say only that the share of the population elsewhere is small, not that it is 0; a zero-width interval would claim certainty. |
//! | positive, skewed: `tokens`, `judge_tokens`, `wall_time_s` | Cox's interval for a log-normal mean, `exp(ȳ + s²/2 ± t·√(s²/n + s⁴/(2(n−1))))` on the logs (`lognormal_cox`) | Student's t covered 82–87% on log-normal token counts at n ≤ 30; Cox's 92–96%. |
//! | counts that can be 0: `tool_calls`, `rejected_decisions`, `server_count` | Student's t, the low end kept at 0 (`student_t`); none when every value is equal (`no_spread`) | — |
//! | judge scores, each run's the mean of its judge's trials | the bounded interval above over the runs' trial means (clustered by task with repeats). When their spread is below what the trials' own noise gives (`Σ s_i²/m_i / n²`, from each run's trials), the runs differ by no more than the judge's noise (the one-way random-effects estimate of the between-run variance is 0): the standard error is then the trials', with their pooled degrees of freedom `Σ (m_i − 1)` | Three runs whose means happen to agree would otherwise claim a certainty the judge's own spread denies. Coverage 94–98%. |
//! | repeats of a task in one group (a sweep's `repeats > 1`) | the same intervals with the CR1 cluster-robust standard error by task, df = tasks − 1; log-normal ones on the task means | Repeats of a task are not independent: treating them as such covered 70–80% in the simulation; clustered, 95%. |
//! | paired differences (`--baseline`): per-task differences | bounded metrics: the bounded interval above on the differences, whose range is ±(hi − lo); others: Student's t on the differences | A bootstrap over two tasks gave zero-width intervals (`[-1.00, -1.00]`) and covered 75% at n = 3. |
//! | paired differences of world models (`wm-eval`): per-call differences, clustered by run | the bounded interval on the differences (±1), with the clustered standard error | Calls of one run share its task and history; counted as independent, the interval covered 87–88% in the simulation (`paired calls Δ`: runs of three calls); clustered, 95%. |
//! | any | none under 3 values, or 3 tasks when clustered or paired (`too_few`; tables say "too few") | Below that no interval means anything. |
//!
//! Cases held to another window, each with its reason, are listed in `tests/reports/interval_coverage.rs`
//! (0/1 outcomes, rates piled near 0 or 1, log-normal tokens and counts at n = 3, judge noise). No
//! interval for the mean of an unbounded quantity can guarantee its coverage at every n (Bahadur and
//! Savage, 1956); the table shows what these give on the shapes seen.
//!
//! `--power` (with `--baseline`) adds, per comparison, the standard deviation of the per-task
//! differences and the number of tasks a paired t-test at the 5% level needs to detect the
//! observed mean difference with 80% power: the smallest n with
//! `n ≥ (t₀.₉₇₅,ₙ₋₁ + t₀.₈₀,ₙ₋₁)² · sd² / Δ²` (`tasks_for_80_power` in the JSON). Repeats of a task
//! reduce only the within-task part of sd; the estimate uses the per-task means as they are.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Fewer values (or tasks, when clustered) than this get no interval: "too few".
pub const MIN_N: usize = 3;

/// What values a metric can take, which decides its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// Values in `[lo, hi]`: rates and fidelity in [0, 1], Execution Quality in [0, 100],
    /// judge scores in [1, 10].
    Bounded(f64, f64),
    /// Positive and right-skewed: tokens, seconds.
    Positive,
    /// Whole counts at or above 0: calls, rejected decisions.
    Count,
    /// Any real value (differences of unbounded metrics).
    Unbounded,
}

/// How an [`Estimate`]'s interval was made, or why it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interval {
    /// Wilson's score interval at the effective sample size, t quantile (bounded means).
    WilsonEffectiveN,
    /// Every value was the same: the share of the population elsewhere is at most Wilson's
    /// bound for 0 of n, and that share may lie anywhere in the range.
    AllEqual,
    /// Cox's interval for the mean of a log-normal quantity.
    LognormalCox,
    /// Student's t (counts kept at or above 0).
    StudentT,
    /// No interval: fewer than [`MIN_N`] values or tasks.
    TooFew,
    /// No interval: every value of an unbounded metric was the same, so there is no spread
    /// to estimate (a zero-width interval would claim certainty).
    NoSpread,
}

impl Interval {
    /// Short words for tables.
    pub fn words(self) -> &'static str {
        match self {
            Interval::WilsonEffectiveN => "Wilson, effective n",
            Interval::AllEqual => "all equal",
            Interval::LognormalCox => "log-normal (Cox)",
            Interval::StudentT => "Student's t",
            Interval::TooFew => "too few",
            Interval::NoSpread => "no spread",
        }
    }
}

/// A mean over `n` values with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The mean.
    pub mean: f64,
    /// How many values.
    pub n: usize,
    /// Tasks the values were clustered by, when some task had repeats (the interval's degrees
    /// of freedom are then tasks − 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<usize>,
    /// Half-width when the interval is `mean ± ci95`; `None` when it is not symmetric or absent.
    pub ci95: Option<f64>,
    /// The 95% interval `[low, high]`; `None` under [`MIN_N`] or with no spread.
    pub ci: Option<[f64; 2]>,
    /// How the interval was made.
    pub interval: Interval,
}

impl Estimate {
    /// The estimate over independent `values` of a metric on `scale`; `None` when there are none.
    pub fn of(values: &[f64], scale: Scale) -> Option<Self> {
        Self::build(values, None, scale, None)
    }

    /// The estimate over `values` where `task[i]` names the task of `values[i]`: repeats of a
    /// task are one cluster. Without repeats it is [`Estimate::of`].
    pub fn of_clustered<K: Eq + std::hash::Hash>(
        values: &[f64],
        task: &[K],
        scale: Scale,
    ) -> Option<Self> {
        Self::of_noisy(values, task, None, scale)
    }

    /// [`Estimate::of_clustered`] for values that are each a mean of noisy trials (a judge's
    /// scores), with `noise` the variance the trials alone put into the mean of the values
    /// ([`trial_noise`]). The spread between the values already holds that noise (the sample
    /// variance of run means estimates `σ²_runs + σ²_trials / m`), so it is the standard error
    /// as usual. When it comes out below what the trials alone give, the runs differ by no
    /// more than the judge's noise (the one-way random-effects estimate of `σ²_runs` is 0):
    /// the error is then the trials', with their pooled degrees of freedom.
    pub fn of_noisy<K: Eq + std::hash::Hash>(
        values: &[f64],
        task: &[K],
        noise: Option<Noise>,
        scale: Scale,
    ) -> Option<Self> {
        let mut index: HashMap<&K, usize> = HashMap::new();
        let ids: Vec<usize> = task
            .iter()
            .map(|k| {
                let next = index.len();
                *index.entry(k).or_insert(next)
            })
            .collect();
        let clustered = index.len() < values.len();
        Self::build(
            values,
            clustered.then_some((&ids, index.len())),
            scale,
            noise,
        )
    }

    /// The same estimate with another point value (Execution Quality's mean is the paper's
    /// point formula, its interval that of the per-run values).
    pub fn with_mean(self, mean: f64) -> Self {
        Self { mean, ..self }
    }

    fn build(
        values: &[f64],
        clusters: Option<(&Vec<usize>, usize)>,
        scale: Scale,
        floor: Option<Noise>,
    ) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let plain = Self {
            mean,
            n,
            tasks: clusters.map(|(_, g)| g),
            ci95: None,
            ci: None,
            interval: Interval::TooFew,
        };
        let units = clusters.map_or(n, |(_, g)| g);
        if units < MIN_N {
            return Some(plain);
        }
        let observed = match clusters {
            Some((ids, g)) => clustered_se2(values, ids, g, mean),
            None => sample_var(values, mean) / n as f64,
        };
        let (se2, df) = match floor {
            Some(noise) if noise.se2 > observed => (noise.se2, noise.df),
            _ => (observed, (units - 1) as f64),
        };
        let (ci, interval) = match scale {
            Scale::Bounded(lo, hi) => bounded(mean, se2, units, df, lo, hi),
            Scale::Positive if values.iter().all(|v| *v > 0.0) => {
                // Cox's interval on the values, or on the task means with repeats.
                let logs: Vec<f64> = match clusters {
                    Some((ids, g)) => cluster_means(values, ids, g)
                        .into_iter()
                        .map(f64::ln)
                        .collect(),
                    None => values.iter().map(|v| v.ln()).collect(),
                };
                (cox(&logs, df), Interval::LognormalCox)
            }
            Scale::Positive | Scale::Count => student(mean, se2, df, Some(0.0)),
            Scale::Unbounded => student(mean, se2, df, None),
        };
        let ci95 = ci.and_then(|[lo, hi]| {
            let half = (hi - lo) / 2.0;
            ((mean - lo - half).abs() < 1e-12 * (1.0 + half)).then_some(half)
        });
        Some(Self {
            ci,
            ci95: if interval == Interval::StudentT {
                ci95
            } else {
                None
            },
            interval,
            ..plain
        })
    }
}

fn sample_var(values: &[f64], mean: f64) -> f64 {
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64
}

/// The CR1 cluster-robust variance of the mean: `G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))² / N²`.
fn clustered_se2(values: &[f64], ids: &[usize], g: usize, mean: f64) -> f64 {
    let mut sums = vec![0.0; g];
    for (v, &id) in values.iter().zip(ids) {
        sums[id] += v - mean;
    }
    let n = values.len() as f64;
    let g = g as f64;
    g / (g - 1.0) * sums.iter().map(|s| s * s).sum::<f64>() / (n * n)
}

fn cluster_means(values: &[f64], ids: &[usize], g: usize) -> Vec<f64> {
    let mut sums = vec![(0.0, 0usize); g];
    for (v, &id) in values.iter().zip(ids) {
        sums[id].0 += v;
        sums[id].1 += 1;
    }
    sums.into_iter().map(|(s, c)| s / c as f64).collect()
}

/// Student's t 97.5th percentile with `df` degrees of freedom.
pub fn t_975(df: f64) -> f64 {
    t_quantile(0.975, df)
}

fn t_quantile(p: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

/// The standard normal's 97.5th percentile.
fn z_975() -> f64 {
    Normal::standard().inverse_cdf(0.975)
}

fn student(mean: f64, se2: f64, df: f64, floor: Option<f64>) -> (Option<[f64; 2]>, Interval) {
    if se2 <= f64::EPSILON * mean.abs().max(1.0) {
        return (None, Interval::NoSpread);
    }
    let half = t_975(df) * se2.sqrt();
    let lo = mean - half;
    (
        Some([floor.map_or(lo, |f| lo.max(f)), mean + half]),
        Interval::StudentT,
    )
}

fn bounded(
    mean: f64,
    se2: f64,
    units: usize,
    df: f64,
    lo: f64,
    hi: f64,
) -> (Option<[f64; 2]>, Interval) {
    let width = hi - lo;
    let p = ((mean - lo) / width).clamp(0.0, 1.0);
    let se2 = se2 / (width * width);
    let back = |[a, b]: [f64; 2]| Some([lo + a * width, lo + b * width]);
    if se2 <= 1e-18 {
        // Every value the same: at most `w` of the population lies elsewhere (Wilson's bound
        // for 0 of `units`), anywhere in the range.
        let z2 = z_975().powi(2);
        let w = z2 / (units as f64 + z2);
        return (back([p - w * p, p + w * (1.0 - p)]), Interval::AllEqual);
    }
    let n_eff = p * (1.0 - p) / se2;
    (
        back(wilson(p, n_eff, t_975(df))),
        Interval::WilsonEffectiveN,
    )
}

/// Wilson's score interval for a proportion `p` over `n` trials (fractional `n` allowed) with
/// quantile `z`.
pub fn wilson(p: f64, n: f64, z: f64) -> [f64; 2] {
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).max(0.0).sqrt();
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// Wilson's 95% interval for `successes` of `n` trials (a proportion of runs, such as runs
/// that completed).
pub fn proportion(successes: usize, n: usize) -> Option<[f64; 2]> {
    (n > 0).then(|| wilson(successes as f64 / n as f64, n as f64, z_975()))
}

/// Cox's 95% interval for the mean of a log-normal quantity from the logs of the values:
/// `exp(ȳ + s²/2 ± t·√(s²/n + s⁴/(2(n−1))))`.
fn cox(logs: &[f64], df: f64) -> Option<[f64; 2]> {
    let n = logs.len() as f64;
    let m = logs.iter().sum::<f64>() / n;
    let s2 = sample_var(logs, m);
    let half = t_975(df) * (s2 / n + s2 * s2 / (2.0 * (n - 1.0))).sqrt();
    let centre = m + s2 / 2.0;
    Some([(centre - half).exp(), (centre + half).exp()])
}

/// The 95% interval of the mean of paired differences `diffs` (one per task) of a metric on
/// `scale`: a bounded metric's differences are bounded by its width, anything else is Student's
/// t; under [`MIN_N`] tasks there is none.
pub fn paired(diffs: &[f64], scale: Scale) -> Option<Estimate> {
    Estimate::of(diffs, difference_scale(scale))
}

/// [`paired`] where `unit[i]` names what `diffs[i]` came from (the run of a call): differences
/// of one unit are one cluster, as in [`Estimate::of_clustered`], and the interval counts
/// units, not differences.
pub fn paired_clustered<K: Eq + std::hash::Hash>(
    diffs: &[f64],
    unit: &[K],
    scale: Scale,
) -> Option<Estimate> {
    Estimate::of_clustered(diffs, unit, difference_scale(scale))
}

/// The scale of a difference of two values on `scale`.
fn difference_scale(scale: Scale) -> Scale {
    match scale {
        Scale::Bounded(lo, hi) => Scale::Bounded(lo - hi, hi - lo),
        _ => Scale::Unbounded,
    }
}

/// How many tasks a paired comparison needs to detect a mean difference `delta` with 80%
/// power at the 5% level (two-sided paired t), when per-task differences have standard
/// deviation `sd`; `None` when `delta` is 0 or `sd` is not positive. Capped at 100,000.
pub fn tasks_for_power(sd: f64, delta: f64) -> Option<usize> {
    if sd.is_nan() || sd <= 0.0 || delta == 0.0 || !delta.is_finite() {
        return None;
    }
    let ratio = (sd / delta).powi(2);
    (2..=100_000).find(|&n| {
        let df = (n - 1) as f64;
        let need = (t_975(df) + t_quantile(0.8, df)).powi(2) * ratio;
        n as f64 >= need
    })
}

/// What trial noise alone puts into a mean of values that are each a mean of trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Its variance: `Σ s_i² / m_i / n²`.
    pub se2: f64,
    /// Its degrees of freedom, pooled over the values: `Σ (m_i − 1)`.
    pub df: f64,
}

/// The noise of `n` values from the `(s_i², m_i)` of those measured more than once (a value
/// from one trial adds none it can measure); `None` when none was.
pub fn trial_noise(n: usize, measured: &[(f64, u32)]) -> Option<Noise> {
    let repeated = measured.iter().filter(|(_, m)| *m >= 2);
    let sum: f64 = repeated.clone().map(|(var, m)| var / f64::from(*m)).sum();
    let df: f64 = repeated.map(|(_, m)| f64::from(*m - 1)).sum();
    (df > 0.0 && sum > 0.0).then(|| Noise {
        se2: sum / (n * n) as f64,
        df,
    })
}

/// The sample standard deviation of `values` (n − 1); `None` under two values.
pub fn sd(values: &[f64]) -> Option<f64> {
    (values.len() >= 2).then(|| {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        sample_var(values, mean).sqrt()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() < tol
    }

    #[test]
    fn quantiles_match_the_tables() {
        assert!(close(t_975(2.0), 4.303, 1e-3));
        assert!(close(t_975(29.0), 2.045, 1e-3));
        assert!(close(z_975(), 1.95996, 1e-5));
    }

    #[test]
    fn a_count_gets_student_t_kept_at_zero_hand_worked() {
        // 5, 6, 7: mean 6, s = 1, se = 1/√3, t(2) = 4.303 → ±2.4843.
        let e = Estimate::of(&[5.0, 6.0, 7.0], Scale::Count).unwrap();
        assert_eq!((e.mean, e.n, e.interval), (6.0, 3, Interval::StudentT));
        assert!(close(e.ci95.unwrap(), 4.302_652_7 / 3f64.sqrt(), 1e-6));
        // 0, 0, 3: mean 1, s = √3, se = 1, half 4.303: the low end stops at 0.
        let e = Estimate::of(&[0.0, 0.0, 3.0], Scale::Count).unwrap();
        let [lo, hi] = e.ci.unwrap();
        assert_eq!(lo, 0.0);
        assert!(close(hi, 1.0 + 4.302_652_7, 1e-6));
        assert_eq!(e.ci95, None, "not symmetric once kept at 0");
    }

    #[test]
    fn too_few_values_and_no_spread_have_no_interval() {
        let e = Estimate::of(&[5.0, 7.0], Scale::Count).unwrap();
        assert_eq!((e.ci, e.interval), (None, Interval::TooFew));
        let e = Estimate::of(&[4.0, 4.0, 4.0], Scale::Count).unwrap();
        assert_eq!((e.ci, e.interval), (None, Interval::NoSpread));
        assert_eq!(Estimate::of(&[], Scale::Count), None);
    }

    #[test]
    fn a_bounded_mean_stays_in_its_range_hand_worked() {
        // 0.2, 0.6, 1.0: p = 0.6, s² = 0.16, se² = 0.16/3, n_eff = 0.24/(0.16/3) = 4.5,
        // z = t(2) = 4.30265: z²/n = 4.11396; centre = (0.6 + 18.51282/9)/5.11396 = 0.51955;
        // half = 4.30265/5.11396 · √(0.24/4.5 + 18.51282/81) = 0.84136 · 0.53093 = 0.44670.
        let e = Estimate::of(&[0.2, 0.6, 1.0], Scale::Bounded(0.0, 1.0)).unwrap();
        assert_eq!(e.interval, Interval::WilsonEffectiveN);
        let expect = wilson(0.6, 4.5, t_975(2.0));
        let [lo, hi] = e.ci.unwrap();
        assert!(close(lo, expect[0], 1e-12) && close(hi, expect[1], 1e-12));
        assert!(
            close(lo, 0.07285, 1e-4) && close(hi, 0.96625, 1e-4),
            "{lo} {hi}"
        );
        // The same on a 1–10 scale (judge scores): the interval maps along.
        let judge = Estimate::of(&[2.8, 6.4, 10.0], Scale::Bounded(1.0, 10.0)).unwrap();
        let [jlo, jhi] = judge.ci.unwrap();
        assert!(close(jlo, 1.0 + 9.0 * lo, 1e-9) && close(jhi, 1.0 + 9.0 * hi, 1e-9));
    }

    #[test]
    fn all_equal_values_get_the_rule_for_zero_of_n_hand_worked() {
        // Three runs at 1.0: w = 3.8415 / (3 + 3.8415) = 0.56149: [0.43851, 1].
        let e = Estimate::of(&[1.0, 1.0, 1.0], Scale::Bounded(0.0, 1.0)).unwrap();
        assert_eq!(e.interval, Interval::AllEqual);
        let [lo, hi] = e.ci.unwrap();
        assert!(close(lo, 0.43851, 1e-4) && hi == 1.0, "{lo} {hi}");
        // On a 0–100 scale at 70: [70 − 0.5615·70, 70 + 0.5615·30].
        let e = Estimate::of(&[70.0; 3], Scale::Bounded(0.0, 100.0)).unwrap();
        let [lo, hi] = e.ci.unwrap();
        assert!(
            close(lo, 30.696, 1e-2) && close(hi, 86.845, 1e-2),
            "{lo} {hi}"
        );
    }

    #[test]
    fn a_positive_skewed_mean_gets_cox_hand_worked() {
        // logs 0, 1, 2 (values 1, e, e²): ȳ = 1, s² = 1, centre = 1.5,
        // half = 4.3027 · √(1/3 + 1/4) = 4.3027 · 0.76376 = 3.28624.
        let v = [1.0, 1f64.exp(), 2f64.exp()];
        let e = Estimate::of(&v, Scale::Positive).unwrap();
        assert_eq!(e.interval, Interval::LognormalCox);
        let [lo, hi] = e.ci.unwrap();
        assert!(close(lo.ln(), 1.5 - 3.28624, 1e-4) && close(hi.ln(), 1.5 + 3.28624, 1e-4));
    }

    #[test]
    fn repeats_of_a_task_are_clustered_hand_worked() {
        // Tasks a (1, 1) b (0, 0) c (1, 0): mean 0.5, deviations per task +1, −1, 0;
        // CR1 se² = 3/2 · 2 / 36 = 1/12; p = 0.5 → n_eff = 0.25 · 12 = 3; z = t(2).
        let v = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0];
        let task = ["a", "a", "b", "b", "c", "c"];
        let e = Estimate::of_clustered(&v, &task, Scale::Bounded(0.0, 1.0)).unwrap();
        assert_eq!(e.tasks, Some(3));
        let expect = wilson(0.5, 3.0, t_975(2.0));
        assert!(close(e.ci.unwrap()[0], expect[0], 1e-12));
        // Two tasks are too few, however many repeats.
        let e = Estimate::of_clustered(&v[..4], &task[..4], Scale::Bounded(0.0, 1.0)).unwrap();
        assert_eq!(
            (e.ci, e.interval, e.tasks),
            (None, Interval::TooFew, Some(2))
        );
        // No repeats: the plain estimate.
        let e = Estimate::of_clustered(&[1.0, 0.0, 1.0], &["a", "b", "c"], Scale::Count);
        assert_eq!(e, Estimate::of(&[1.0, 0.0, 1.0], Scale::Count));
    }

    #[test]
    fn paired_differences_of_a_rate_stay_within_its_width() {
        // Two tasks at −1 (the sweep report's [−1, −1]): too few.
        let e = paired(&[-1.0, -1.0], Scale::Bounded(0.0, 1.0)).unwrap();
        assert_eq!((e.ci, e.interval), (None, Interval::TooFew));
        // Five at −1: never zero-width, never below −1.
        let e = paired(&[-1.0; 5], Scale::Bounded(0.0, 1.0)).unwrap();
        let [lo, hi] = e.ci.unwrap();
        assert!(lo == -1.0 && hi > -1.0, "{lo} {hi}");
        // Tokens: Student's t on the differences, negative allowed.
        let e = paired(&[-10.0, -20.0, -30.0], Scale::Positive).unwrap();
        assert_eq!(e.interval, Interval::StudentT);
        assert!(e.ci.unwrap()[0] < -30.0);
    }

    #[test]
    fn power_hand_worked() {
        // sd = δ: n ≥ (t.975 + t.80)² with df n − 1: n = 10 gives (2.262 + 0.883)² = 9.89.
        assert_eq!(tasks_for_power(1.0, 1.0), Some(10));
        // sd = 2δ needs about four times as many (normal approximation 31.4, t: 34).
        assert_eq!(tasks_for_power(2.0, 1.0), Some(34));
        assert_eq!(tasks_for_power(0.0, 1.0), None);
        assert_eq!(tasks_for_power(1.0, 0.0), None);
    }

    #[test]
    fn a_proportion_is_wilsons() {
        let [lo, hi] = proportion(1, 2).unwrap();
        assert!(close(lo, 0.09453, 1e-5) && close(hi, 0.90547, 1e-5));
        assert_eq!(proportion(0, 0), None);
    }
}
