//! Proof, not promise: how often a threshold chosen by `metrics::routing_bound::choose` lets
//! more poor predictions through than promised. Calibration sets are drawn from synthetic
//! populations whose skill per confidence is known exactly, a threshold is chosen on each, and
//! the chosen threshold's true population error is computed in closed form. The guarantee holds
//! when the share of sets whose error exceeds ε is at most δ. Also prints the share of calls
//! the threshold trusts (real calls saved).
//!
//!     cargo bench --bench routing_bound [-- --quick]
//!
//! # Measured (moved from docs/world-models.md)
//!
//! `cargo bench --bench routing_bound` checks the promise: it draws 4,000 calibration sets from
//! synthetic populations whose error at every threshold is known exactly and counts how often the
//! chosen threshold's true error exceeds ε. Measured: at most 0.060 for δ = 0.1 and 0.034 for
//! δ = 0.05 over three populations and four sizes (a tool right 80% of the time, at n = 360:
//! 0.060, trusting 87% of calls). The same bench runs the method on the sample wm-eval files at
//! ε = δ = 0.1: of their tools, only the memory world model's `Unit Converter:convert_temperature`
//! is trusted (at ≥ 0.9, in the file of 2026-12-04; not in the older one); the 1.5B model, with or without log-probabilities,
//! gets no threshold for any tool, and no tool of the stateful set has the 22 predictions a
//! threshold needs.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

use cosmos_engine::metrics::routing_bound::{Choice, Judged, choose};

/// A tool's population: right with probability `right`, its confidence uniform in
/// `right_conf` when right and in `wrong_conf` when wrong.
struct Population {
    name: &'static str,
    right: f64,
    right_conf: (f64, f64),
    wrong_conf: (f64, f64),
}

/// P(confidence ≥ t) of a uniform on `range`.
fn above(t: f64, (lo, hi): (f64, f64)) -> f64 {
    ((hi - t.max(lo)) / (hi - lo)).clamp(0.0, 1.0)
}

impl Population {
    /// The true share of poor predictions among those at or above `t`, and the share of all
    /// predictions at or above it.
    fn at(&self, t: f64) -> (f64, f64) {
        let right = self.right * above(t, self.right_conf);
        let wrong = (1.0 - self.right) * above(t, self.wrong_conf);
        let trusted = right + wrong;
        (if trusted > 0.0 { wrong / trusted } else { 0.0 }, trusted)
    }

    fn draw(&self, n: usize, rng: &mut fastrand::Rng) -> Vec<Judged> {
        (0..n)
            .map(|_| {
                let right = rng.f64() < self.right;
                let (lo, hi) = if right {
                    self.right_conf
                } else {
                    self.wrong_conf
                };
                Judged {
                    confidence: lo + (hi - lo) * rng.f64(),
                    poor: !right,
                }
            })
            .collect()
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let trials = if quick { 400 } else { 4000 };
    let populations = [
        Population {
            name: "the issue's good tool (80% right)",
            right: 0.8,
            right_conf: (0.6, 1.0),
            wrong_conf: (0.0, 0.7),
        },
        Population {
            name: "overlapping (70% right)",
            right: 0.7,
            right_conf: (0.3, 1.0),
            wrong_conf: (0.0, 0.9),
        },
        Population {
            name: "barely separable (92% right)",
            right: 0.92,
            right_conf: (0.5, 1.0),
            wrong_conf: (0.4, 1.0),
        },
    ];
    println!(
        "routing bound: {trials} calibration sets per row; exceedance = share of sets whose chosen threshold's true error is over ε (must be ≤ δ)"
    );
    println!(
        "{:<36} {:>5} {:>5} {:>5} {:>12} {:>12} {:>14}",
        "population", "n", "ε", "δ", "exceedance", "trusted", "no threshold"
    );
    for population in &populations {
        for (n, target, delta) in [
            (120, 0.1, 0.1),
            (360, 0.1, 0.1),
            (360, 0.05, 0.1),
            (1000, 0.1, 0.05),
        ] {
            let mut rng = fastrand::Rng::with_seed(42);
            let (mut exceeded, mut untrusted, mut trusted_share) = (0usize, 0usize, 0.0);
            for _ in 0..trials {
                let sample = population.draw(n, &mut rng);
                match choose(&sample, target, delta) {
                    Choice::Trusted { threshold, .. } => {
                        let (error, share) = population.at(threshold);
                        exceeded += usize::from(error > target);
                        trusted_share += share;
                    }
                    Choice::Untrusted { .. } => untrusted += 1,
                }
            }
            let exceedance = exceeded as f64 / trials as f64;
            println!(
                "{:<36} {:>5} {:>5} {:>5} {:>11.3}{} {:>11.1}% {:>13.1}%",
                population.name,
                n,
                target,
                delta,
                exceedance,
                if exceedance <= delta { " " } else { "!" },
                100.0 * trusted_share / trials as f64,
                100.0 * untrusted as f64 / trials as f64
            );
        }
    }
    println!(
        "(trusted: the mean share of all calls the chosen threshold lets the world model answer, over the sets where one was chosen; ! marks a row over δ)"
    );
    sample_files();
}

/// The same method on the sample runs' wm-eval files: per world model and tool, the threshold
/// chosen at ε = δ = 0.1, or why none.
fn sample_files() {
    use cosmos_engine::metrics::routing_file::RoutingFile;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let mut files: Vec<std::path::PathBuf> = [root.clone(), root.join("stateful")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| {
            p.to_string_lossy().contains("_wm-eval_") && p.extension().is_some_and(|e| e == "jsonl")
        })
        .collect();
    files.sort();
    println!(
        "\nthe sample wm-eval files, ε = δ = 0.1 (a tool needs at least 22 predictions to be trusted at all):"
    );
    for file in files {
        let Ok(run) = cosmos_trajectory::run::Run::open(&file) else {
            continue;
        };
        let names = cosmos_engine::wm_eval::Filed::read(&run).names;
        for name in names {
            let Ok(text) = cosmos_engine::wm_eval::routing(&file, &name, 0.1, 0.1, &[]) else {
                continue;
            };
            let Ok(routing) = RoutingFile::parse(&text.text) else {
                continue;
            };
            let trusted: Vec<String> = routing
                .thresholds
                .iter()
                .filter_map(|(tool, x)| x.map(|x| format!("{tool} ≥ {x}")))
                .collect();
            println!(
                "  {} · {name}: {} of {} tools trusted{}",
                file.file_name().unwrap_or_default().to_string_lossy(),
                trusted.len(),
                routing.thresholds.len(),
                if trusted.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", trusted.join(", "))
                }
            );
        }
    }
}
