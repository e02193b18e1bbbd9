//! Each 95% interval the report prints covers the true value in 93–97% of 2,000 draws from
//! distributions shaped like the metrics, at n = 3, 5, 10 and 30 (fixed seeds). The cases that
//! cannot are named below with the window they are held to and why (docs/report-format.md,
//! "Intervals").

use cosmos_engine::metrics::coverage::{SIZES, cases, coverage};

/// The window a case is held to at size `n`.
fn window(name: &str, n: usize) -> (f64, f64) {
    match (name, n) {
        // 0/1 values take few distinct outcomes: each sample either covers or not, so no
        // interval's coverage sits in a narrow window (Wilson's own dips to 91% at n = 5).
        // Ours errs on the wide side: never under 93%.
        ("bernoulli 0.1" | "bernoulli 0.9", _) => (0.93, 1.0),
        // A rate piled against 1: a little under at small n.
        ("beta(5,0.7)", n) if n <= 10 => (0.92, 0.97),
        // Cox's log-normal interval with two degrees of freedom.
        ("lognormal(9,1)", 3) => (0.91, 0.97),
        // A rate piled near 0 with a long tail: at small n most samples miss the tail, and
        // no interval that stays in [0, 1] without being useless can know it is there.
        ("beta(0.3,3)", n) if n <= 10 => (0.86, 0.97),
        // Counts at n = 3: Student's t with two degrees of freedom on a discrete, skewed
        // sample.
        ("poisson(4)", 3) => (0.90, 0.99),
        // Runs that differ only by the judge's noise: choosing the larger of two estimates of
        // one variance (between runs, between trials) errs a little wide.
        ("judge noise only", _) => (0.93, 0.98),
        _ => (0.93, 0.97),
    }
}

#[test]
fn every_interval_covers_its_truth_in_its_window() {
    let mut failures = Vec::new();
    for (c, case) in cases().iter().enumerate() {
        for (s, &n) in SIZES.iter().enumerate() {
            let (covered, absent) = coverage(case, n, 1_000 + (c * 10 + s) as u64);
            let (lo, hi) = window(case.name, n);
            println!(
                "{:<16} n={n:<3} coverage {covered:.3} (no interval: {absent})",
                case.name
            );
            if !(lo..=hi).contains(&covered) {
                failures.push(format!(
                    "{} at n={n}: {covered:.3} outside [{lo}, {hi}]",
                    case.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
