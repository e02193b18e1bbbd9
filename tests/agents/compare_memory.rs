//! Comparing two long runs takes memory linear in their calls: two runs of 25,000 calls each
//! (their alignment once asked for a table of n×m cells, over 1 GB) compare with this whole
//! process under 1 GB. A test binary of its own, so the peak measured is this test's alone.

use crate::common;

use cosmos_app::tui::CompareView;
use cosmos_trajectory::event::{AgentKind, EventBody, Observation};

/// A ReAct run of `n` calls cycling through `tools` tools.
fn long_run(name: &str, n: u64, tools: u64) -> cosmos_trajectory::run::Run {
    let header = common::header(name, AgentKind::React, None);
    let bodies = (1..=n)
        .map(|step| EventBody::ToolCalled {
            step,
            tool: format!("time:tool_{}", step % tools),
            server: Some("time".into()),
            arguments: Box::new(serde_json::json!({"n": step})),
            result: Observation {
                text: "ok".into(),
                ..Default::default()
            },
            latency_ms: 1,
            node: None,
            error: None,
            origin: None,
            state_change: None,
        })
        .chain([common::completed()])
        .collect();
    common::run_of(&format!("{name}.jsonl"), header, bodies)
}

/// This process's peak resident memory (Linux's `VmHWM`), in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn two_runs_of_25000_calls_compare_under_a_gigabyte() {
    // Calls that share some tools and differ in others: the alignment has work to do.
    let runs = [long_run("a", 25_000, 7), long_run("b", 25_000, 5)];
    let view = CompareView::new(&runs, (200, 50));
    // Every call of both runs is in the alignment, once.
    let placed = |r: usize| view.rows().iter().filter(|row| row[r].is_some()).count();
    assert_eq!((placed(0), placed(1)), (25_000, 25_000));
    let peak = peak_memory();
    assert!(peak < 1 << 30, "peak memory {} MB", peak >> 20);
}
