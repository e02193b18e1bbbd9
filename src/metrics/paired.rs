//! Configurations against a baseline on the tasks both ran (`cosmos report --baseline KEY`):
//! per metric, the mean of per-task differences (each side averaged over its repeats of the
//! task), a paired bootstrap 95% interval, and on how many tasks it was higher, the same, or
//! lower. Pure arithmetic over records.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Serialize;

use super::group::{GroupBy, RunRecord};
use super::run::RunMetrics;
use super::stats::paired_bootstrap;

/// One configuration's difference from the baseline on one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedRow {
    /// The configuration (its group key).
    pub key: String,
    /// The metric.
    pub metric: &'static str,
    /// Tasks both ran (and both have the metric on).
    pub n: usize,
    /// Mean of `metric(key) − metric(baseline)` over those tasks.
    pub mean_diff: Option<f64>,
    /// Paired bootstrap 95% interval of that mean; `None` under two tasks.
    pub ci: Option<[f64; 2]>,
    /// Tasks where this configuration's value was higher.
    pub higher: usize,
    /// Tasks with the same value.
    pub same: usize,
    /// Tasks where it was lower.
    pub lower: usize,
}

/// A metric of one run, when it has it.
type Metric = (&'static str, fn(&RunMetrics) -> Option<f64>);

/// The metrics compared (those of the report's table that are per run).
const METRICS: [Metric; 8] = [
    ("tool_calls", |m| Some(m.tool_calls as f64)),
    ("tool_call_success_rate", |m| m.tool_call_success_rate),
    ("valid_tool_name_rate", |m| m.valid_tool_name_rate),
    ("input_schema_compliance", |m| m.input_schema_compliance),
    ("fidelity", |m| m.fidelity.map(|f| f.score)),
    ("tokens", |m| Some(m.tokens() as f64)),
    ("wall_time_s", |m| Some(m.wall_ms as f64 / 1000.0)),
    ("judge_overall", |m| m.judge.map(|j| j.overall)),
];

/// Every other group against `baseline` (a group key, or a part of one that names a single
/// group), metric by metric.
pub fn against_baseline(
    records: &[RunRecord],
    by: GroupBy,
    baseline: &str,
) -> Result<(String, Vec<PairedRow>)> {
    // group → task → runs
    let mut groups: BTreeMap<String, BTreeMap<&str, Vec<&RunMetrics>>> = BTreeMap::new();
    for r in records {
        groups
            .entry(r.key(by))
            .or_default()
            .entry(r.task.as_str())
            .or_default()
            .push(&r.metrics);
    }
    let base_key = if groups.contains_key(baseline) {
        baseline.to_string()
    } else {
        let matches: Vec<&String> = groups.keys().filter(|k| k.contains(baseline)).collect();
        match matches.as_slice() {
            [one] => (*one).clone(),
            [] => bail!(
                "--baseline {baseline:?} names no group; the groups are: {}",
                groups.keys().cloned().collect::<Vec<_>>().join("; ")
            ),
            many => bail!(
                "--baseline {baseline:?} names {} groups ({}); give more of the key",
                many.len(),
                many.iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    };
    let mean_of = |runs: &[&RunMetrics], get: fn(&RunMetrics) -> Option<f64>| {
        let values: Vec<f64> = runs.iter().filter_map(|m| get(m)).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let base = &groups[&base_key];
    let mut rows = Vec::new();
    for (key, tasks) in &groups {
        if *key == base_key {
            continue;
        }
        for (metric, get) in METRICS {
            let diffs: Vec<f64> = tasks
                .iter()
                .filter_map(|(task, runs)| {
                    let theirs = mean_of(runs, get)?;
                    let ours = mean_of(base.get(task)?, get)?;
                    Some(theirs - ours)
                })
                .collect();
            let n = diffs.len();
            let tie = |d: f64| d.abs() <= 1e-9;
            rows.push(PairedRow {
                key: key.clone(),
                metric,
                n,
                mean_diff: (n > 0).then(|| diffs.iter().sum::<f64>() / n as f64),
                ci: (n >= 2).then(|| paired_bootstrap(&diffs)),
                higher: diffs.iter().filter(|&&d| d > 0.0 && !tie(d)).count(),
                same: diffs.iter().filter(|&&d| tie(d)).count(),
                lower: diffs.iter().filter(|&&d| d < 0.0 && !tie(d)).count(),
            });
        }
    }
    Ok((base_key, rows))
}

/// The rows as a table (`markdown` for a GitHub table).
pub fn render(baseline: &str, rows: &[PairedRow], markdown: bool) -> String {
    let mut out = format!(
        "\nAgainst the baseline {baseline}, on the tasks both ran (per task: each side's mean over its repeats):\n"
    );
    let header = [
        "configuration",
        "metric",
        "tasks",
        "mean difference [95% CI]",
        "higher",
        "same",
        "lower",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| r.n > 0)
        .map(|r| {
            vec![
                r.key.clone(),
                r.metric.to_string(),
                r.n.to_string(),
                match (r.mean_diff, r.ci) {
                    (Some(m), Some([lo, hi])) => format!("{m:+.3} [{lo:+.3}, {hi:+.3}]"),
                    (Some(m), None) => format!("{m:+.3}"),
                    _ => "—".into(),
                },
                r.higher.to_string(),
                r.same.to_string(),
                r.lower.to_string(),
            ]
        })
        .collect();
    super::table::aligned(&mut out, &header, &cells, markdown);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn record(agent: &str, task: &str, calls: u64, success: f64) -> RunRecord {
        RunRecord {
            path: PathBuf::from(format!("{agent}-{task}")),
            agent: agent.into(),
            world_model: "none".into(),
            planner: "p".into(),
            task: task.into(),
            reference_calls: None,
            metrics: RunMetrics {
                tool_calls: calls,
                tool_call_success_rate: Some(success),
                ..Default::default()
            },
        }
    }

    #[test]
    fn hand_worked_against_a_baseline() {
        let records = vec![
            // Baseline react: task a (two repeats, mean 3 calls, success 0.5), task b.
            record("react", "a", 2, 0.5),
            record("react", "a", 4, 0.5),
            record("react", "b", 1, 1.0),
            // spiral: a 5 calls (+2), b 1 call (0), c only here (not paired).
            record("spiral", "a", 5, 1.0),
            record("spiral", "b", 1, 0.5),
            record("spiral", "c", 9, 1.0),
        ];
        let (base, rows) = against_baseline(&records, GroupBy::Agent, "react").unwrap();
        assert_eq!(base, "react");
        let calls = rows.iter().find(|r| r.metric == "tool_calls").unwrap();
        assert_eq!(calls.key, "spiral");
        assert_eq!(calls.n, 2, "task c is not paired");
        assert_eq!(calls.mean_diff, Some(1.0));
        assert_eq!((calls.higher, calls.same, calls.lower), (1, 1, 0));
        let [lo, hi] = calls.ci.unwrap();
        assert!(lo >= 0.0 && hi <= 2.0, "{lo} {hi}");
        let success = rows
            .iter()
            .find(|r| r.metric == "tool_call_success_rate")
            .unwrap();
        // a: 1.0 − 0.5 = +0.5; b: 0.5 − 1.0 = −0.5.
        assert_eq!(success.mean_diff, Some(0.0));
        assert_eq!((success.higher, success.same, success.lower), (1, 0, 1));
        // A part of a key works when it names one group; a wrong one lists the groups.
        assert!(against_baseline(&records, GroupBy::Agent, "rea").is_ok());
        let err = against_baseline(&records, GroupBy::Agent, "ppo")
            .unwrap_err()
            .to_string();
        assert!(err.contains("react; spiral"), "{err}");
        assert!(render(&base, &rows, true).contains("| spiral"));
    }
}
