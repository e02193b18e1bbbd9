//! Properties of the fold: seeking anywhere equals folding from scratch, and visits and
//! values agree with the backpropagation events.

use std::collections::HashMap;

use cosmos_trajectory::event::EventBody;
use cosmos_trajectory::fold::{Cursor, TreeState};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::synthetic::{self, Spec};
use proptest::prelude::*;

fn run_of(spec: Spec) -> Run {
    let mut run = Run::new("mem".into(), synthetic::header(&spec));
    synthetic::push_events(&mut run, &spec);
    run
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn seek_equals_fold_from_scratch(
        seed in 0u64..1000,
        nodes in 2usize..200,
        branching in 1usize..5,
        targets in proptest::collection::vec(0.0f64..=1.0, 1..12),
    ) {
        let run = run_of(Spec { nodes, branching, padding: 0, seed });
        let mut cursor = Cursor::new(&run);
        for t in targets {
            let j = (t * run.len() as f64).round() as usize;
            cursor.seek(&run, j);
            prop_assert_eq!(cursor.position(), j);
            prop_assert_eq!(cursor.state(), &TreeState::fold(&run, j));
        }
    }

    #[test]
    fn visits_and_values_agree_with_backpropagation(seed in 0u64..1000, nodes in 2usize..150, cut in 0.0f64..=1.0) {
        let run = run_of(Spec { nodes, branching: 3, padding: 0, seed });
        let k = (cut * run.len() as f64) as usize;
        let state = TreeState::fold(&run, k);
        let mut visits: HashMap<u64, u32> = HashMap::new();
        let mut sums: HashMap<u64, f64> = HashMap::new();
        for e in &run.all_events()[..k] {
            if let EventBody::Backpropagated { path, value } = &e.body {
                for n in path {
                    *visits.entry(*n).or_default() += 1;
                    *sums.entry(*n).or_default() += value;
                }
            }
        }
        for (slot, node) in run.nodes().iter().enumerate().take(state.visible_nodes()) {
            let d = state.node(slot as u32).unwrap();
            prop_assert_eq!(d.visits, visits.get(&node.id).copied().unwrap_or(0));
            prop_assert!((d.value_sum() - sums.get(&node.id).copied().unwrap_or(0.0)).abs() < 1e-6);
        }
    }
}

#[test]
fn snapshots_make_long_jumps_exact() {
    // Large enough that the cursor takes snapshots, then jumps over them both ways.
    let run = run_of(Spec {
        nodes: 12_000,
        branching: 3,
        padding: 0,
        seed: 7,
    });
    assert!(run.len() > 40_000);
    let mut cursor = Cursor::new(&run);
    cursor.seek(&run, run.len());
    for j in [3, run.len() - 5, run.len() / 2, 17_000, 0, run.len()] {
        cursor.seek(&run, j);
        assert_eq!(cursor.state(), &TreeState::fold(&run, j), "at {j}");
    }
}

/// A cursor made while the run was short (a live run, one read in parts) keeps within its
/// snapshot budget as the run grows, and still seeks exactly.
#[test]
fn a_growing_runs_cursor_keeps_few_snapshots() {
    let whole = run_of(Spec {
        nodes: 60_000,
        branching: 3,
        padding: 0,
        seed: 11,
    });
    let mut run = Run::new("growing".into(), whole.header.clone());
    let mut cursor = Cursor::new(&run);
    for event in whole.all_events() {
        run.push(event);
        cursor.seek(&run, run.len());
    }
    assert!(run.len() > 16 * 16_384, "{} events", run.len());
    assert!(
        (1..=16).contains(&cursor.snapshots()),
        "{} snapshots",
        cursor.snapshots()
    );
    for j in [run.len() / 3, 5, run.len() - 1, run.len() / 2] {
        cursor.seek(&run, j);
        assert_eq!(cursor.state(), &TreeState::fold(&run, j), "at {j}");
    }
}

#[test]
fn metrics_at_cursor_match_the_streaming_accumulator() {
    use cosmos_engine::metrics::run::{RunAccumulator, RunFacts};
    let run = run_of(Spec {
        nodes: 1200,
        branching: 3,
        padding: 0,
        seed: 3,
    });
    let facts = RunFacts::of(&run);
    // The explorer sums LLM usage from checkpoints every 1024 calls: cursors just before, at
    // and just after the 1024th and 2048th calls, and the end just after a checkpoint.
    let llm_calls: Vec<usize> = (0..run.len())
        .filter(|&i| run.brief(i).kind() == "llm_call")
        .collect();
    assert!(llm_calls.len() > 2048, "{} calls", llm_calls.len());
    let mut cursors = vec![0, run.len() / 3, run.len()];
    for n in [1024, 2048] {
        let e = llm_calls[n];
        cursors.extend([e, e + 1, e + 2]);
    }
    let events = run.all_events();
    for k in cursors {
        let mut acc = RunAccumulator::new(&run.header);
        events[..k].iter().for_each(|e| acc.push(e));
        let state = TreeState::fold(&run, k);
        assert_eq!(facts.at(&run, k, &state), acc.metrics(), "at {k}");
    }
    // A run whose calls are exactly 2048 has no checkpoint at its end.
    let mut cut = Run::new("cut".into(), run.header.clone());
    events[..llm_calls[2048]]
        .iter()
        .for_each(|e| cut.push(e.clone()));
    let mut acc = RunAccumulator::new(&run.header);
    events[..cut.len()].iter().for_each(|e| acc.push(e));
    let end = TreeState::fold(&cut, cut.len());
    assert_eq!(RunFacts::of(&cut).at(&cut, cut.len(), &end), acc.metrics());
}
