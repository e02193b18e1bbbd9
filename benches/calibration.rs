//! Calibration benchmark: prints figures, asserts nothing. `cargo bench --bench calibration`
//! (`-- --quick` for a tenth). First the selective curve of the sample runs' memory world model
//! (`cosmos wm-eval sample_runs --world-model memory`, leave one run out), as the leaderboard
//! computes it; then the calibration of 10^6 predictions from 1,000 runs (continuous
//! confidences: the curve is taken at 20 steps of coverage), timed.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;

use std::path::Path;

use common::{ms, scale, time};
use cosmos_engine::metrics::calibration::{GOOD_FIDELITY, Scored, calibration};
use cosmos_engine::wm_eval::{EvalSpec, evaluate, recorded_calls};
use cosmos_engine::world_model::BuiltInOptions;

fn main() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let dir = tempfile::tempdir().unwrap();
    let (calls, _) = recorded_calls(std::slice::from_ref(&samples)).unwrap();
    let spec = EvalSpec {
        world_models: vec!["memory".into()],
        config: None,
        options: BuiltInOptions {
            memory_from: vec![samples.clone()],
            ..Default::default()
        },
        concurrency: 4,
        out_dir: dir.path().join("out"),
        runs: vec![samples],
        decision: false,
        good_fidelity: GOOD_FIDELITY,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let never_stopped = tokio::sync::watch::channel(false).1;
    let evaluation = runtime
        .block_on(evaluate(&spec, &calls, never_stopped))
        .unwrap();
    for w in &evaluation.board.world_models {
        let c = &w.calibration;
        println!(
            "sample runs, {}: {} predictions with a confidence, ECE {:.3}, Brier {:.3}, AUROC {}",
            w.name,
            c.n,
            c.ece.unwrap_or(f64::NAN),
            c.brier.unwrap_or(f64::NAN),
            c.auroc.map_or("—".into(), |a| format!("{a:.3}"))
        );
        println!("  confidence ≥   coverage   n   mean fidelity [95% CI]");
        for s in &c.selective {
            let ci = s
                .fidelity
                .ci
                .map_or(String::new(), |[lo, hi]| format!(" [{lo:.2}, {hi:.2}]"));
            println!(
                "  {:>12.3}   {:>7.1}%  {:>3}   {:.3}{ci}",
                s.threshold,
                s.coverage * 100.0,
                s.n,
                s.fidelity.mean
            );
        }
    }

    let n = 1_000_000 / scale();
    let sources: Vec<String> = (0..1_000).map(|r| format!("runs/{r}.jsonl")).collect();
    // A world model whose confidence tells something: fidelity near it, with noise.
    let mut seed = 7u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let predictions: Vec<Scored> = (0..n)
        .map(|i| {
            let confidence = next();
            let fidelity = (confidence + (next() - 0.5) * 0.6).clamp(0.0, 1.0);
            Scored {
                confidence: Some(confidence),
                fidelity,
                source: &sources[i % sources.len()],
            }
        })
        .collect();
    let (c, took) = time(|| calibration(&predictions, GOOD_FIDELITY));
    println!(
        "{n} predictions from {} runs: calibration in {:.0} ms (ECE {:.3}, AUROC {:.3}, {} curve points)",
        sources.len(),
        ms(took),
        c.ece.unwrap_or(f64::NAN),
        c.auroc.unwrap_or(f64::NAN),
        c.selective.len()
    );
}
