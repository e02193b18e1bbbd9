//! Configurations against a baseline on the tasks both ran (`cosmos report --baseline KEY`):
//! per metric, the mean of per-task differences (each side averaged over its repeats of the
//! task), a paired bootstrap 95% interval, and on how many tasks it was higher, the same, or
//! lower. Every per-run metric of the report, and Execution Quality per task within the
//! planner's cohort on that task. Pure arithmetic over records.
//!
//! Groups against a baseline on the tasks both ran (`report --baseline`): every
//! per-run metric of the report and Execution Quality per task (within the planner's cohort on
//! that task), as mean per-task differences with the paired bootstrap of `stats.rs`,
//! higher/same/lower.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde::Serialize;

use super::group::{
    EQ_SCALE, GroupBy, JUDGE_SCALE, RunRecord, UNIT, anchored_efficiency, cohort_efficiency,
    eq_score,
};
use super::stats::{self, Interval, MIN_N, Scale};

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
    /// The 95% interval of that mean (`stats::paired`): `None` under
    /// [`stats::MIN_N`] tasks, or when the differences have no spread to estimate.
    pub ci: Option<[f64; 2]>,
    /// How the interval was made, or why there is none.
    pub interval: Option<Interval>,
    /// Standard deviation of the per-task differences; `None` under two tasks.
    pub sd: Option<f64>,
    /// Tasks a paired comparison needs to detect this mean difference with 80% power at the
    /// 5% level, from `sd` (`None` without a difference or a spread).
    pub tasks_for_80_power: Option<usize>,
    /// Tasks where this configuration's value was higher.
    pub higher: usize,
    /// Tasks with the same value.
    pub same: usize,
    /// Tasks where it was lower.
    pub lower: usize,
}

/// A metric of one run, when it has it, and its scale.
type Metric = (&'static str, Scale, fn(&RunRecord) -> Option<f64>);

/// The per-run metrics compared, in the report's order (Execution Quality within the cohort,
/// which is not per run, is worked out per task apart: [`EXECUTION_QUALITY`]).
pub const METRICS: [Metric; 21] = [
    ("tool_calls", Scale::Count, |r| {
        Some(r.metrics.tool_calls as f64)
    }),
    ("tool_call_success_rate", UNIT, |r| {
        r.metrics.tool_call_success_rate
    }),
    ("completed", UNIT, |r| {
        Some(f64::from(u8::from(r.completed())))
    }),
    ("valid_tool_name_rate", UNIT, |r| {
        r.metrics.valid_tool_name_rate
    }),
    ("input_schema_compliance", UNIT, |r| {
        r.metrics.input_schema_compliance
    }),
    ("valid_call_failure_rate", UNIT, |r| {
        r.metrics.valid_call_failure_rate
    }),
    ("planning_json_compliance", UNIT, |r| {
        r.metrics.planning_json_compliance
    }),
    ("server_count", Scale::Count, |r| {
        (r.metrics.tool_calls > 0 && !r.metrics.servers_unrecorded)
            .then_some(r.metrics.server_count as f64)
    }),
    ("rejected_decisions", Scale::Count, |r| {
        Some(r.metrics.rejected_decisions as f64)
    }),
    ("execution_quality_anchored", EQ_SCALE, |r| {
        let eff = anchored_efficiency(r.metrics.tool_calls, r.reference_calls)?;
        Some(eq_score(r.metrics.tool_call_success_rate?, eff))
    }),
    ("tokens", Scale::Positive, |r| {
        Some(r.metrics.tokens() as f64)
    }),
    ("wall_time_s", Scale::Positive, |r| {
        Some(r.metrics.wall_ms as f64 / 1000.0)
    }),
    ("fidelity", UNIT, |r| r.metrics.fidelity.map(|f| f.score)),
    ("judge_task_completion", JUDGE_SCALE, |r| {
        r.metrics.judge.as_ref().map(|j| j.task_completion)
    }),
    ("judge_tool_selection", JUDGE_SCALE, |r| {
        r.metrics.judge.as_ref().map(|j| j.tool_selection)
    }),
    ("judge_planning_effectiveness", JUDGE_SCALE, |r| {
        r.metrics.judge.as_ref().map(|j| j.planning_effectiveness)
    }),
    ("judge_overall", JUDGE_SCALE, |r| {
        r.metrics.judge.as_ref().map(|j| j.overall)
    }),
    ("judge_tokens", Scale::Positive, |r| {
        r.metrics
            .judge
            .is_some()
            .then(|| r.metrics.judge_tokens() as f64)
    }),
    ("cross_server_coordination", UNIT, |r| {
        (r.metrics.tool_calls > 0 && !r.metrics.servers_unrecorded)
            .then_some(f64::from(u8::from(r.metrics.cross_server_coordination())))
    }),
    ("state_match", UNIT, |r| r.metrics.state_match),
    ("w2r", UNIT, |r| r.metrics.w2r),
];

/// The scale of a compared metric.
fn scale_of(metric: &str) -> Scale {
    if metric == EXECUTION_QUALITY {
        return EQ_SCALE;
    }
    METRICS
        .iter()
        .find(|(m, _, _)| *m == metric)
        .map_or(Scale::Unbounded, |(_, scale, _)| *scale)
}

/// Execution Quality per task: `eq_score` of the group's mean success rate on the task and
/// its calls on the task against the range of the groups of its planner on that task.
pub const EXECUTION_QUALITY: &str = "execution_quality";

/// Every other group against `baseline` (a group key, or a part of one that names a single
/// group), metric by metric.
pub fn against_baseline(
    records: &[RunRecord],
    by: GroupBy,
    baseline: &str,
) -> Result<(String, Vec<PairedRow>)> {
    // group → task → runs
    let mut groups: BTreeMap<String, BTreeMap<&str, Vec<&RunRecord>>> = BTreeMap::new();
    for r in records {
        groups
            .entry(r.key(by))
            .or_default()
            .entry(r.task.as_str())
            .or_default()
            .push(r);
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
    // Per group and task: each metric's mean over the task's runs.
    let mut per_task: BTreeMap<&str, BTreeMap<&str, BTreeMap<&'static str, f64>>> = BTreeMap::new();
    for (key, tasks) in &groups {
        for (task, runs) in tasks {
            let values = per_task.entry(key).or_default().entry(task).or_default();
            for (metric, _, get) in METRICS {
                if let Some(m) = mean(runs.iter().filter_map(|r| get(r))) {
                    values.insert(metric, m);
                }
            }
        }
    }
    add_execution_quality(&groups, &mut per_task);
    let base = &per_task[base_key.as_str()];
    // The report's order: Execution Quality beside its anchored variant.
    let mut names: Vec<&'static str> = METRICS.iter().map(|(m, _, _)| *m).collect();
    let anchored = names
        .iter()
        .position(|m| *m == "execution_quality_anchored")
        .unwrap_or(names.len());
    names.insert(anchored, EXECUTION_QUALITY);
    let mut rows = Vec::new();
    for (key, tasks) in &per_task {
        if *key == base_key {
            continue;
        }
        for &metric in &names {
            let diffs: Vec<f64> = tasks
                .iter()
                .filter_map(|(task, values)| {
                    Some(values.get(metric)? - base.get(task)?.get(metric)?)
                })
                .collect();
            let n = diffs.len();
            let tie = |d: f64| d.abs() <= 1e-9;
            let estimate = stats::paired(&diffs, scale_of(metric));
            let sd = stats::sd(&diffs);
            let mean_diff = estimate.map(|e| e.mean);
            rows.push(PairedRow {
                key: key.to_string(),
                metric,
                n,
                mean_diff,
                ci: estimate.and_then(|e| e.ci),
                interval: estimate.map(|e| e.interval),
                sd,
                tasks_for_80_power: sd
                    .zip(mean_diff)
                    .and_then(|(sd, d)| stats::tasks_for_power(sd, d)),
                higher: diffs.iter().filter(|&&d| d > 0.0 && !tie(d)).count(),
                same: diffs.iter().filter(|&&d| tie(d)).count(),
                lower: diffs.iter().filter(|&&d| d < 0.0 && !tie(d)).count(),
            });
        }
    }
    Ok((base_key, rows))
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Execution Quality of every group on every task it ran, within the cohort of its planner on
/// that task (groups that mix planners, or made no call on the task, have none).
fn add_execution_quality<'a>(
    groups: &BTreeMap<String, BTreeMap<&'a str, Vec<&RunRecord>>>,
    per_task: &mut BTreeMap<&str, BTreeMap<&'a str, BTreeMap<&'static str, f64>>>,
) {
    let planner_of = |tasks: &BTreeMap<&str, Vec<&RunRecord>>| -> Option<String> {
        let mut all = tasks.values().flatten().map(|r| r.planner.as_str());
        let first = all.next()?;
        all.all(|p| p == first).then(|| first.to_string())
    };
    // (planner, task) → (min, max) of the groups' mean calls, over groups that made calls.
    let mut range: BTreeMap<(String, &str), (f64, f64)> = BTreeMap::new();
    for (key, tasks) in groups {
        let Some(planner) = planner_of(tasks) else {
            continue;
        };
        for task in tasks.keys() {
            let Some(&calls) = per_task[key.as_str()][task].get("tool_calls") else {
                continue;
            };
            if calls > 0.0 {
                let e = range
                    .entry((planner.clone(), *task))
                    .or_insert((calls, calls));
                e.0 = e.0.min(calls);
                e.1 = e.1.max(calls);
            }
        }
    }
    for (key, tasks) in groups {
        let Some(planner) = planner_of(tasks) else {
            continue;
        };
        for task in tasks.keys() {
            let values = per_task
                .get_mut(key.as_str())
                .and_then(|t| t.get_mut(task))
                .expect("every group and task has its values");
            let (Some(&calls), Some(&success)) = (
                values.get("tool_calls"),
                values.get("tool_call_success_rate"),
            ) else {
                continue;
            };
            if let Some(&(min, max)) = range.get(&(planner.clone(), *task)) {
                values.insert(
                    EXECUTION_QUALITY,
                    eq_score(success, cohort_efficiency(calls, min, max)),
                );
            }
        }
    }
}

/// The rows as a table (`markdown` for a GitHub table); `power` adds the tasks a comparison
/// needs to detect each difference (`cosmos report --power`).
pub fn render(baseline: &str, rows: &[PairedRow], markdown: bool, power: bool) -> String {
    let mut out = format!(
        "\nAgainst the baseline {baseline}, on the tasks both ran (per task: each side's mean over its repeats):\n{}",
        if markdown { "\n" } else { "" }
    );
    let mut header = vec![
        "configuration",
        "metric",
        "tasks",
        "mean difference [95% CI]",
        "higher",
        "same",
        "lower",
    ];
    if power {
        header.extend(["sd of differences", "tasks for 80% power"]);
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| r.n > 0)
        .map(|r| {
            let mut cells = vec![
                r.key.clone(),
                r.metric.to_string(),
                r.n.to_string(),
                difference(r),
                r.higher.to_string(),
                r.same.to_string(),
                r.lower.to_string(),
            ];
            if power {
                cells.push(r.sd.map_or("—".into(), |sd| format!("{sd:.3}")));
                cells.push(match (r.tasks_for_80_power, r.mean_diff) {
                    (Some(n), _) => n.to_string(),
                    (None, Some(d)) if d.abs() <= 1e-9 => "no difference".into(),
                    _ => "—".into(),
                });
            }
            cells
        })
        .collect();
    super::text_table::aligned(&mut out, &header, &cells, markdown);
    out.push_str(&format!(
        "\nIntervals: rates, fidelity, EQ and judge scores by Wilson's interval at the effective n \
         (never outside the difference's range); counts, tokens and time by Student's t. \
         \"too few tasks\": under {MIN_N} tasks no interval is given.\n"
    ));
    if power {
        out.push_str(
            "Tasks for 80% power: how many tasks a paired t-test at the 5% level needs to detect \
             the observed mean difference, given the sd of the per-task differences.\n",
        );
    }
    out
}

/// A difference with its interval, or why it has none.
pub fn difference(r: &PairedRow) -> String {
    match (r.mean_diff, r.ci, r.interval) {
        (Some(m), Some([lo, hi]), _) => format!("{m:+.3} [{lo:+.3}, {hi:+.3}]"),
        (Some(m), None, Some(Interval::TooFew)) => format!("{m:+.3} (too few tasks)"),
        (Some(m), None, Some(Interval::NoSpread)) => format!("{m:+.3} (same on every task)"),
        (Some(m), None, _) => format!("{m:+.3}"),
        _ => "—".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunMetrics;
    use std::path::PathBuf;

    fn record(agent: &str, task: &str, calls: u64, success: f64) -> RunRecord {
        RunRecord {
            run_id: String::new(),
            path: PathBuf::from(format!("{agent}-{task}")),
            agent: agent.into(),
            world_model: "none".into(),
            planner: "p".into(),
            task: task.into(),
            label: None,
            reference_calls: None,
            made_by: "run by cosmos (react)".into(),
            skipped_lines: Vec::new(),
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
        assert_eq!(
            (calls.ci, calls.interval),
            (None, Some(Interval::TooFew)),
            "two tasks are too few for an interval"
        );
        // sd of (+2, 0) = √2; to detect +1 with 80% power: (t + t)² · 2 ≤ n at n = 18.
        assert!((calls.sd.unwrap() - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(calls.tasks_for_80_power, Some(18));
        let success = rows
            .iter()
            .find(|r| r.metric == "tool_call_success_rate")
            .unwrap();
        // a: 1.0 − 0.5 = +0.5; b: 0.5 − 1.0 = −0.5.
        assert_eq!(success.mean_diff, Some(0.0));
        assert_eq!((success.higher, success.same, success.lower), (1, 0, 1));
        // Execution Quality per task within the cohort on that task. Task a: react 3 calls
        // (mean of 2 and 4), success 0.5; spiral 5 calls, 1.0; range 3–5: react
        // 100·(0.5 + 1)/2 = 75, spiral 100·(1 + 0)/2 = 50, −25. Task b: both 1 call (range
        // empty: efficiency 1): react 100·(1 + 1)/2 = 100, spiral 100·(0.5 + 1)/2 = 75, −25.
        let eq = rows.iter().find(|r| r.metric == EXECUTION_QUALITY).unwrap();
        assert_eq!(eq.n, 2);
        assert_eq!(eq.mean_diff, Some(-25.0));
        assert_eq!((eq.higher, eq.same, eq.lower), (0, 0, 2));
        // No judge scores: no judge rows with tasks.
        let judged = rows.iter().find(|r| r.metric == "judge_overall").unwrap();
        assert_eq!(judged.n, 0);
        // A part of a key works when it names one group; a wrong one lists the groups.
        assert!(against_baseline(&records, GroupBy::Agent, "rea").is_ok());
        let err = against_baseline(&records, GroupBy::Agent, "ppo")
            .unwrap_err()
            .to_string();
        assert!(err.contains("react; spiral"), "{err}");
        assert!(render(&base, &rows, true, false).contains("| spiral"));
        assert!(render(&base, &rows, false, true).contains("tasks for 80% power"));
    }
}
