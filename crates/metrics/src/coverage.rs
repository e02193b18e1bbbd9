//! How often the report's 95% intervals cover the true value, measured by simulation: samples
//! from known distributions shaped like the metrics (0/1 outcomes near 0 and 1, bounded scores,
//! skewed rates, log-normal token counts, counts, repeats of tasks, judge scores averaged over
//! noisy trials, paired differences) at
//! n = 3, 5, 10 and 30, each interval made exactly as `report` makes it. Deterministic (fixed
//! seeds). `tests/reports/interval_coverage.rs` holds the coverage to its window; `benches/coverage.rs`
//! prints the table.

use super::group::UNIT;
use super::stats::{self, Estimate, Scale};

/// Draws per case.
pub const DRAWS: usize = 2_000;
/// The sample sizes measured (values, or tasks for clustered and paired cases).
pub const SIZES: [usize; 4] = [3, 5, 10, 30];

/// One distribution the coverage is measured on.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// Its name in the table.
    pub name: &'static str,
    /// What it stands for.
    pub stands_for: &'static str,
    /// The metric's scale (as the report gives it).
    pub scale: Scale,
    /// How a sample is drawn.
    pub draw: Draw,
    /// The true mean.
    pub truth: f64,
}

/// How a case's samples are drawn.
#[derive(Debug, Clone, Copy)]
pub enum Draw {
    /// Independent values.
    Values(fn(&mut fastrand::Rng) -> f64),
    /// Tasks with three repeats each: a task's own mean, then repeats around it.
    Repeats(
        fn(&mut fastrand::Rng) -> f64,
        fn(&mut fastrand::Rng, f64) -> f64,
    ),
    /// Per-task paired differences.
    Paired(fn(&mut fastrand::Rng) -> f64),
    /// Paired differences three to a unit (calls of one run): a unit's own mean difference,
    /// then differences around it.
    PairedRepeats(
        fn(&mut fastrand::Rng) -> f64,
        fn(&mut fastrand::Rng, f64) -> f64,
    ),
    /// Runs judged in [`TRIALS`] trials each: a run's own score, then trials around it; each
    /// run's value is its trials' mean, with their variance (as the report takes judge scores).
    Trials(
        fn(&mut fastrand::Rng) -> f64,
        fn(&mut fastrand::Rng, f64) -> f64,
    ),
}

/// Judge trials per run in the [`Draw::Trials`] case (MCP-Bench's five).
pub const TRIALS: u32 = 5;

/// The cases, with their true means.
pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "bernoulli 0.1",
            stands_for: "a rare outcome per run (e.g. completion of a hard task)",
            scale: UNIT,
            draw: Draw::Values(|r| f64::from(u8::from(r.f64() < 0.1))),
            truth: 0.1,
        },
        Case {
            name: "bernoulli 0.9",
            stands_for: "a common outcome per run (every call succeeding)",
            scale: UNIT,
            draw: Draw::Values(|r| f64::from(u8::from(r.f64() < 0.9))),
            truth: 0.9,
        },
        Case {
            name: "beta(2,5)",
            stands_for: "a bounded score (fidelity)",
            scale: UNIT,
            draw: Draw::Values(|r| beta(r, 2.0, 5.0)),
            truth: 2.0 / 7.0,
        },
        Case {
            name: "beta(5,0.7)",
            stands_for: "a per-run rate skewed towards 1 (success rate)",
            scale: UNIT,
            draw: Draw::Values(|r| beta(r, 5.0, 0.7)),
            truth: 5.0 / 5.7,
        },
        Case {
            name: "beta(0.3,3)",
            stands_for: "a per-run rate skewed towards 0 (valid-call failures)",
            scale: UNIT,
            draw: Draw::Values(|r| beta(r, 0.3, 3.0)),
            truth: 0.3 / 3.3,
        },
        Case {
            name: "100·beta(4,2)",
            stands_for: "Execution Quality (0–100)",
            scale: super::group::EQ_SCALE,
            draw: Draw::Values(|r| 100.0 * beta(r, 4.0, 2.0)),
            truth: 100.0 * 4.0 / 6.0,
        },
        Case {
            name: "lognormal(9,1)",
            stands_for: "tokens per run",
            scale: Scale::Positive,
            draw: Draw::Values(|r| (9.0 + normal(r)).exp()),
            truth: (9.5f64).exp(),
        },
        Case {
            name: "poisson(4)",
            stands_for: "calls per run",
            scale: Scale::Count,
            draw: Draw::Values(|r| poisson(r, 4.0)),
            truth: 4.0,
        },
        Case {
            name: "repeats ×3",
            stands_for: "a rate over tasks repeated three times (clustered)",
            scale: UNIT,
            draw: Draw::Repeats(
                |r| beta(r, 2.0, 2.0),
                |r, a| beta(r, 8.0 * a + 0.1, 8.0 * (1.0 - a) + 0.1),
            ),
            // The task means are symmetric around 0.5, and so are the repeats'.
            truth: 0.5,
        },
        Case {
            name: "judge ×5 trials",
            stands_for: "a judge score (0–10), each run's the mean of five noisy trials",
            scale: super::group::JUDGE_SCALE,
            draw: Draw::Trials(
                |r| 2.5 + 6.0 * beta(r, 2.0, 2.0),
                |r, score| score + 3.0 * (beta(r, 2.0, 2.0) - 0.5),
            ),
            // Both spreads are symmetric: the runs' scores centre on 5.5, trials on the run's.
            truth: 5.5,
        },
        Case {
            name: "judge noise only",
            stands_for: "runs that deserve the same score, told apart only by the judge's noise",
            scale: super::group::JUDGE_SCALE,
            draw: Draw::Trials(|_| 6.0, |r, score| score + 4.0 * (beta(r, 2.0, 2.0) - 0.5)),
            truth: 6.0,
        },
        Case {
            name: "paired rate Δ",
            stands_for: "a rate's per-task difference between two configurations",
            scale: UNIT,
            draw: Draw::Paired(|r| beta(r, 2.0, 5.0) - beta(r, 3.0, 3.0)),
            truth: 2.0 / 7.0 - 0.5,
        },
        Case {
            name: "paired tokens Δ",
            stands_for: "tokens' per-task difference",
            scale: Scale::Positive,
            draw: Draw::Paired(|r| 1000.0 * (normal(r) + 0.5)),
            truth: 500.0,
        },
        Case {
            name: "paired calls Δ",
            stands_for: "two world models' fidelity difference on calls, three per run (clustered)",
            scale: UNIT,
            draw: Draw::PairedRepeats(
                |r| 0.1 + 0.4 * (beta(r, 2.0, 2.0) - 0.5),
                |r, a| a + 0.6 * (beta(r, 2.0, 2.0) - 0.5),
            ),
            // Both spreads are symmetric around 0: the mean difference is the runs' centre.
            truth: 0.1,
        },
    ]
}

/// The share of `DRAWS` intervals at size `n` that cover the case's truth (an absent interval
/// covers nothing), and how many draws had no interval.
pub fn coverage(case: &Case, n: usize, seed: u64) -> (f64, usize) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let (mut covered, mut absent) = (0usize, 0usize);
    for _ in 0..DRAWS {
        let estimate = match case.draw {
            Draw::Values(draw) => {
                let values: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                Estimate::of(&values, case.scale)
            }
            Draw::Repeats(task_mean, repeat) => {
                let (values, tasks) = in_threes(&mut rng, n, task_mean, repeat);
                Estimate::of_clustered(&values, &tasks, case.scale)
            }
            Draw::Paired(draw) => {
                let diffs: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                stats::paired(&diffs, case.scale)
            }
            Draw::PairedRepeats(unit_mean, repeat) => {
                let (diffs, units) = in_threes(&mut rng, n, unit_mean, repeat);
                stats::paired_clustered(&diffs, &units, case.scale)
            }
            Draw::Trials(run_score, trial) => {
                let mut values = Vec::with_capacity(n);
                let mut measured = Vec::with_capacity(n);
                for _ in 0..n {
                    let score = run_score(&mut rng);
                    let trials: Vec<f64> = (0..TRIALS).map(|_| trial(&mut rng, score)).collect();
                    values.push(trials.iter().sum::<f64>() / f64::from(TRIALS));
                    let sd = stats::sd(&trials).unwrap_or(0.0);
                    measured.push((sd * sd, TRIALS));
                }
                let runs: Vec<usize> = (0..n).collect();
                let floor = stats::trial_noise(n, &measured);
                Estimate::of_noisy(&values, &runs, floor, case.scale)
            }
        };
        match estimate.and_then(|e| e.ci) {
            Some([lo, hi]) => covered += usize::from(lo <= case.truth && case.truth <= hi),
            None => absent += 1,
        }
    }
    (covered as f64 / DRAWS as f64, absent)
}

/// `n` clusters of three values: a cluster's own mean, then values around it; the values and
/// the cluster of each.
fn in_threes(
    rng: &mut fastrand::Rng,
    n: usize,
    cluster_mean: fn(&mut fastrand::Rng) -> f64,
    around: fn(&mut fastrand::Rng, f64) -> f64,
) -> (Vec<f64>, Vec<usize>) {
    let mut values = Vec::with_capacity(3 * n);
    let mut clusters = Vec::with_capacity(3 * n);
    for c in 0..n {
        let mean = cluster_mean(rng);
        for _ in 0..3 {
            values.push(around(rng, mean));
            clusters.push(c);
        }
    }
    (values, clusters)
}

/// A standard normal draw (Box–Muller).
fn normal(r: &mut fastrand::Rng) -> f64 {
    let u = 1.0 - r.f64();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * r.f64()).cos()
}

/// A Gamma(shape, 1) draw (Marsaglia and Tsang; shape < 1 by the boost `U^(1/shape)`).
fn gamma(r: &mut fastrand::Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        return gamma(r, shape + 1.0) * (1.0 - r.f64()).powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(r);
        let v = (1.0 + c * x).powi(3);
        if v > 0.0 && (1.0 - r.f64()).ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A Beta(a, b) draw.
fn beta(r: &mut fastrand::Rng, a: f64, b: f64) -> f64 {
    let x = gamma(r, a);
    x / (x + gamma(r, b))
}

/// A Poisson(λ) draw (Knuth's product of uniforms; λ is small here).
fn poisson(r: &mut fastrand::Rng, lambda: f64) -> f64 {
    let limit = (-lambda).exp();
    let (mut k, mut p) = (0.0, r.f64());
    while p > limit {
        k += 1.0;
        p *= r.f64();
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samplers_have_their_means() {
        let mut r = fastrand::Rng::with_seed(7);
        let mean = |f: &dyn Fn(&mut fastrand::Rng) -> f64, r: &mut fastrand::Rng| {
            (0..200_000).map(|_| f(r)).sum::<f64>() / 200_000.0
        };
        assert!((mean(&|r| beta(r, 2.0, 5.0), &mut r) - 2.0 / 7.0).abs() < 0.005);
        assert!((mean(&|r| beta(r, 0.3, 3.0), &mut r) - 0.3 / 3.3).abs() < 0.005);
        assert!((mean(&|r| poisson(r, 4.0), &mut r) - 4.0).abs() < 0.02);
        assert!((mean(&normal, &mut r)).abs() < 0.01);
    }
}
