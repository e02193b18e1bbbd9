//! Metrics over groups of runs: the paper's tables, with n and 95% intervals, and
//! Execution Quality over a cohort of configurations that share a planner.
//!
//! Rows of the paper's tables: grouping, Execution Quality within a planner's cohort
//! (each row names its `EqCohort`; `cohorts_note` prints them under every table that shows EQ)
//! and anchored on the task's reference call count, judge aggregates, flags.
//!
//! # Why two groupings of the same runs give two Execution Qualities
//!
//! Execution Quality's efficiency term is normalised within a cohort: the rows of one planner that
//! made calls, by their calls per task (the paper's definition). A row is whatever `--group-by` makes
//! one: grouped by configuration, a SPIRAL-with-memory row is compared with the ReAct row and the
//! Plan-Exec rows of the same planner; grouped by world model, the ReAct runs (`none`) and the
//! Plan-Exec runs with the same world model fall into other rows, with other mean call counts, so the
//! cohort's fewest and most calls differ and so does every EQ in it. Both values are right for their
//! grouping; neither is the run's own. So every table that shows EQ names its cohorts under it
//! (planner, rows, runs, call range), and `execution_quality_anchored`, which normalises by the
//! task's reference call count instead, is the same under any grouping.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::run::{JudgeSummary, JudgeVariance, RunMetrics};
use super::stats::{Estimate, Scale};

/// Rates and fidelity.
pub const UNIT: Scale = Scale::Bounded(0.0, 1.0);
/// Execution Quality, 0–100.
pub const EQ_SCALE: Scale = Scale::Bounded(0.0, 100.0);
/// The judge's scores, 1–10.
pub const JUDGE_SCALE: Scale = Scale::Bounded(0.0, 10.0);
use cosmos_trajectory::event::{AgentKind, DIMENSION_NAMES, RunStatus};
use cosmos_trajectory::report_header::ReportHeader;

/// Execution Quality at or above this (out of 100) counts as high for the flag below.
pub const HIGH_EXECUTION_QUALITY: f64 = 70.0;
/// Task Completion (judge, 1–10) below this counts as low.
pub const LOW_TASK_COMPLETION: f64 = 5.0;
/// Without judge scores, a completion rate (answered and completed) below this counts as low.
pub const LOW_COMPLETION_RATE: f64 = 0.5;
/// A completion under this share of the best group's counts as low beside it.
pub const RELATIVE_COMPLETION: f64 = 0.6;
/// The flag for a configuration that scores well on Execution Quality by doing little.
pub const FLAG_DOES_LITTLE: &str = "does_little_errs_little";
/// The flag for a group whose runs used different planners (no cohort, no Execution Quality).
pub const FLAG_MIXED_PLANNERS: &str = "mixed_planners";
/// The flag for a group that made no tool calls: it has no success rate, so no Execution
/// Quality, and it is left out of its cohort's call range (its 0 would halve the others' EQ).
pub const FLAG_NO_CALLS: &str = "no_calls_not_in_cohort";

/// What one row of a table stands for (also `report --group-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum GroupBy {
    /// Agent, world model and planner together: one configuration per row.
    #[default]
    Config,
    /// The agent alone.
    Agent,
    /// The world model alone.
    WorldModel,
    /// The planner model alone.
    Planner,
    /// The task.
    Task,
}

/// One run as the tables see it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// Its file.
    pub path: PathBuf,
    /// Its run's id: two files of one id are one run (a copy), counted once.
    pub run_id: String,
    /// Agent name.
    pub agent: String,
    /// World model name, or `none`.
    pub world_model: String,
    /// Planner model.
    pub planner: String,
    /// Task id.
    pub task: String,
    /// The configuration's name, when the run has one (its header's `label`).
    pub label: Option<String>,
    /// The task's reference call count, when known.
    pub reference_calls: Option<u32>,
    /// How it was made (`run by cosmos …`, `recorded by cosmos proxy…`, `imported from …`).
    pub made_by: String,
    /// Its metrics.
    pub metrics: RunMetrics,
    /// Lines of its file that were skipped as bad (each `FILE:LINE: reason`), so the numbers
    /// above leave them out.
    pub skipped_lines: Vec<String>,
}

impl RunRecord {
    /// A record from a run's header and metrics.
    pub fn new(path: PathBuf, header: &ReportHeader, metrics: RunMetrics) -> Self {
        Self {
            path,
            run_id: header.run_id.clone(),
            agent: header.agent.as_str().to_string(),
            world_model: header.world_model.clone(),
            planner: header.planner.clone(),
            task: header.task.clone(),
            label: header.label.clone(),
            reference_calls: header.reference_calls,
            made_by: header.made_by.clone(),
            metrics,
            skipped_lines: Vec::new(),
        }
    }

    /// The key of the group this run belongs to.
    pub fn key(&self, by: GroupBy) -> String {
        match by {
            GroupBy::Config => match &self.label {
                Some(label) => label.clone(),
                None => format!("{} / {} / {}", self.agent, self.world_model, self.planner),
            },
            GroupBy::Agent => self.agent.clone(),
            GroupBy::WorldModel => self.world_model.clone(),
            GroupBy::Planner => self.planner.clone(),
            GroupBy::Task => self.task.clone(),
        }
    }

    /// Successful calls / calls; `None` with no calls.
    fn success_rate(&self) -> Option<f64> {
        self.metrics.tool_call_success_rate
    }

    /// Its answer is one cosmos sees (every agent's but a proxy session's).
    pub fn answerable(&self) -> bool {
        self.agent != AgentKind::External.as_str()
    }

    /// Completed with an answer.
    pub fn completed(&self) -> bool {
        self.metrics.status == Some(RunStatus::Completed) && self.metrics.answered
    }

    /// A clean finish by the one rule every view marks runs by ([`Totals::clean`](cosmos_trajectory::event::Totals::clean)): what the
    /// browser draws as a success, the table counts as clean.
    pub fn clean(&self) -> bool {
        self.metrics
            .status
            .is_some_and(|status| self.metrics.totals(0).clean(status))
    }
}

/// One row of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    /// The group's label.
    pub key: String,
    /// The planner models among its runs.
    pub planners: Vec<String>,
    /// Runs in the group.
    pub runs: usize,
    /// Runs that completed with an answer.
    pub completed: usize,
    /// Runs that finished cleanly by the one rule the browser marks by ([`Totals::clean`](cosmos_trajectory::event::Totals::clean)).
    #[serde(default)]
    pub clean: usize,
    /// Runs whose answer cosmos sees: all but proxy sessions, whose agent answers its own
    /// user (so `completed / answerable` is the share that answered, and a group of proxy
    /// sessions alone has none to judge by).
    #[serde(default)]
    pub answerable: usize,
    /// Real tool calls per run (per task).
    pub tool_calls: Option<Estimate>,
    /// Tool call success rate, over runs that made calls.
    pub tool_call_success_rate: Option<Estimate>,
    /// Valid tool name rate.
    pub valid_tool_name_rate: Option<Estimate>,
    /// Input schema compliance.
    pub input_schema_compliance: Option<Estimate>,
    /// MCP-Bench's valid call failure rate: failed calls among calls with a valid name.
    pub valid_call_failure_rate: Option<Estimate>,
    /// MCP-Bench's planning JSON compliance: planned calls that named a tool.
    pub planning_json_compliance: Option<Estimate>,
    /// Distinct servers called per run (runs with calls).
    pub server_count: Option<Estimate>,
    /// Share of runs (with calls) that called more than one server.
    pub cross_server_coordination: Option<Estimate>,
    /// Planner replies per run that were no usable decision.
    pub rejected_decisions: Option<Estimate>,
    /// Real calls per run that the plan rested on an unsure prediction
    /// ([`crate::run::RunMetrics::unsure_calls`]), over runs of agents that plan on
    /// predictions.
    #[serde(default)]
    pub unsure_calls: Option<Estimate>,
    /// Real calls per run made while planning in place of unsure predictions (routing's
    /// `node_grounded`), over the same runs.
    #[serde(default)]
    pub grounded_calls: Option<Estimate>,
    /// Predictions routing trusted per run
    /// ([`crate::run::RunMetrics::trusted_predictions`]), over runs that route.
    #[serde(default)]
    pub trusted_predictions: Option<Estimate>,
    /// Real calls routing saved per run, over the same runs.
    #[serde(default)]
    pub real_calls_saved: Option<Estimate>,
    /// Trusted predictions per run that the plan's real call found poor, over routed runs of
    /// planners.
    #[serde(default)]
    pub trusted_poor: Option<Estimate>,
    /// World to real ([`crate::run::RunMetrics::w2r`]), over planners' runs with a
    /// simulated call.
    #[serde(default)]
    pub w2r: Option<Estimate>,
    /// State match ([`crate::run::RunMetrics::state_match`]), over runs whose task
    /// checks its end state.
    #[serde(default)]
    pub state_match: Option<Estimate>,
    /// The share of runs their source's scorers passed (no score failed them), over runs
    /// whose source recorded a verdict (imported Inspect samples): the source's word, apart
    /// from cosmos's judge.
    #[serde(default)]
    pub source_passed: Option<Estimate>,
    /// Execution Quality (0–100) within the planner's cohort; `ci95` from per-run values.
    pub execution_quality: Option<Estimate>,
    /// Execution Quality anchored on each task's reference call count (comparable across experiments).
    pub execution_quality_anchored: Option<Estimate>,
    /// The cohort its Execution Quality is normalised within, when it has one.
    pub eq_cohort: Option<EqCohort>,
    /// Tokens per run the agent spent (every role but the judge).
    pub tokens: Option<Estimate>,
    /// Tokens per judged run the judge spent scoring it (apart from the agent's).
    pub judge_tokens: Option<Estimate>,
    /// Wall time per run, seconds.
    pub wall_time_s: Option<Estimate>,
    /// Simulation fidelity per run (runs with simulated steps).
    pub fidelity: Option<Estimate>,
    /// The same over the steps whose call changed its server's state (runs with such a step
    /// simulated; [`crate::run::FidelitySummary::changed_state`]).
    #[serde(default)]
    pub fidelity_changed_state: Option<Estimate>,
    /// The same over the steps whose call a sandbox saw change nothing.
    #[serde(default)]
    pub fidelity_unchanged_state: Option<Estimate>,
    /// Judge: Task Completion (1–10).
    pub task_completion: Option<Estimate>,
    /// Judge: Tool Selection.
    pub tool_selection: Option<Estimate>,
    /// Judge: Planning Effectiveness.
    pub planning_effectiveness: Option<Estimate>,
    /// Judge: Overall.
    pub overall: Option<Estimate>,
    /// Overall with Execution Quality (scaled to 1–10) as a fourth part.
    pub new_overall: Option<Estimate>,
    /// The judge's own spread beside the spread between runs, and who judged with how many
    /// trials; `None` when no run was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_spread: Option<JudgeSpread>,
    /// Runs by what brought them to their end (`Ending::as_str`, or `unknown` for an older
    /// file that does not tell; runs still going or that crashed are not counted).
    pub endings: BTreeMap<String, usize>,
    /// Warnings about the row, such as [`FLAG_DOES_LITTLE`].
    pub flags: Vec<String>,
}

/// The rows (of one grouping) whose call counts normalise each other's Execution Quality:
/// every row of one planner that made calls. Another grouping of the same runs makes other
/// rows, so other cohorts and other values; EQ anchored needs no cohort.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EqCohort {
    /// The planner the rows share.
    pub planner: String,
    /// The rows' keys.
    pub rows: Vec<String>,
    /// Runs in those rows.
    pub runs: usize,
    /// The fewest and the most calls per run of its rows (the efficiency range).
    pub calls: (f64, f64),
}

/// How much of a group's judge scores is the judge's own noise (docs/report-format.md,
/// "The judge"): per sub-dimension and headline score, the standard deviation between runs
/// (of their trial means) and the judge's own between trials (pooled over the runs judged more
/// than once); and each judge model with its runs and trials per run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSpread {
    /// Each judge model, by name.
    pub judges: Vec<JudgeModel>,
    /// The six sub-dimensions, then task completion, tool selection, planning and overall.
    pub rows: Vec<SpreadRow>,
}

/// A judge model and what it judged in a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeModel {
    /// The model.
    pub model: String,
    /// Runs it judged.
    pub runs: usize,
    /// The fewest trials a run's scores are the mean of.
    pub trials_min: u32,
    /// The most.
    pub trials_max: u32,
}

/// One score's two standard deviations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpreadRow {
    /// The sub-dimension or headline score.
    pub name: String,
    /// Between runs (of each run's trial mean); `None` under two runs.
    pub between_runs: Option<f64>,
    /// The judge's own, between trials of one run (pooled over the runs judged more than
    /// once); `None` when none was.
    pub between_trials: Option<f64>,
}

impl JudgeSpread {
    fn of(runs: &[&RunRecord]) -> Option<Self> {
        let judged: Vec<&JudgeSummary> = runs
            .iter()
            .filter_map(|r| r.metrics.judge.as_ref())
            .collect();
        if judged.is_empty() {
            return None;
        }
        let mut judges: BTreeMap<&str, (usize, u32, u32)> = BTreeMap::new();
        for j in &judged {
            let e = judges.entry(&j.model).or_insert((0, u32::MAX, 0));
            *e = (e.0 + 1, e.1.min(j.trials), e.2.max(j.trials));
        }
        let row = |name: &str,
                   value: &dyn Fn(&JudgeSummary) -> f64,
                   var: &dyn Fn(&JudgeVariance) -> f64| {
            let values: Vec<f64> = judged.iter().map(|j| value(j)).collect();
            let variances: Vec<f64> = judged
                .iter()
                .filter_map(|j| j.trial_variance.as_ref().map(var))
                .collect();
            let pooled = (!variances.is_empty())
                .then(|| (variances.iter().sum::<f64>() / variances.len() as f64).sqrt());
            SpreadRow {
                name: name.to_string(),
                between_runs: super::stats::sd(&values),
                between_trials: pooled,
            }
        };
        let mut rows: Vec<SpreadRow> = DIMENSION_NAMES
            .iter()
            .map(|d| {
                row(
                    d,
                    &|j| j.dimensions.get(d).copied().unwrap_or_default(),
                    &|v| v.dimensions.get(d).copied().unwrap_or_default(),
                )
            })
            .collect();
        rows.push(row("task completion", &|j| j.task_completion, &|v| {
            v.task_completion
        }));
        rows.push(row("tool selection", &|j| j.tool_selection, &|v| {
            v.tool_selection
        }));
        rows.push(row("planning", &|j| j.planning_effectiveness, &|v| {
            v.planning_effectiveness
        }));
        rows.push(row("overall", &|j| j.overall, &|v| v.overall));
        Some(Self {
            judges: judges
                .into_iter()
                .map(|(model, (runs, trials_min, trials_max))| JudgeModel {
                    model: model.to_string(),
                    runs,
                    trials_min,
                    trials_max,
                })
                .collect(),
            rows,
        })
    }

    /// `judge: MODEL, N trials` (each model; a range when runs differ; the runs when the
    /// group mixes models).
    pub fn note(&self) -> String {
        let several = self.judges.len() > 1;
        let parts: Vec<String> = self
            .judges
            .iter()
            .map(|j| {
                let (lo, hi) = (j.trials_min, j.trials_max);
                let trials = if lo == hi {
                    format!("{lo} trial{}", if lo == 1 { "" } else { "s" })
                } else {
                    format!("{lo}–{hi} trials")
                };
                if several {
                    format!("{}, {trials} ({} runs)", j.model, j.runs)
                } else {
                    format!("{}, {trials}", j.model)
                }
            })
            .collect();
        format!("judge: {}", parts.join("; "))
    }
}

/// Efficiency term of Execution Quality: `1 − (calls − min)/(max − min)`, 1 when max = min.
pub fn cohort_efficiency(calls: f64, min: f64, max: f64) -> f64 {
    if max - min <= f64::EPSILON {
        1.0
    } else {
        1.0 - (calls - min) / (max - min)
    }
}

/// Anchored efficiency: `min(1, reference / calls)`; `None` with no calls or no reference.
pub fn anchored_efficiency(calls: u64, reference: Option<u32>) -> Option<f64> {
    let reference = f64::from(reference.filter(|r| *r > 0)?);
    (calls > 0).then(|| (reference / calls as f64).min(1.0))
}

/// Execution Quality from a success rate and an efficiency term, × 100.
pub fn eq_score(success_rate: f64, efficiency: f64) -> f64 {
    100.0 * (success_rate + efficiency) / 2.0
}

/// Groups runs and computes every row.
pub fn group(records: &[RunRecord], by: GroupBy) -> Vec<GroupRow> {
    let mut groups: BTreeMap<String, Vec<&RunRecord>> = BTreeMap::new();
    for r in records {
        groups.entry(r.key(by)).or_default().push(r);
    }

    // Cohorts: the groups of one planner. Average calls per task of each group.
    let avg_calls: BTreeMap<&str, f64> = groups
        .iter()
        .map(|(k, runs)| {
            (
                k.as_str(),
                runs.iter()
                    .map(|r| r.metrics.tool_calls as f64)
                    .sum::<f64>()
                    / runs.len() as f64,
            )
        })
        .collect();
    let sole_planner = |runs: &[&RunRecord]| -> Option<String> {
        let first = &runs.first()?.planner;
        runs.iter()
            .all(|r| &r.planner == first)
            .then(|| first.clone())
    };
    // Groups that made no call have no EQ and would drag the range's minimum to 0.
    let mut cohort_range: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (k, runs) in &groups {
        let c = avg_calls[k.as_str()];
        if let Some(p) = sole_planner(runs).filter(|_| c > 0.0) {
            let e = cohort_range.entry(p).or_insert((c, c));
            e.0 = e.0.min(c);
            e.1 = e.1.max(c);
        }
    }

    let mut members: BTreeMap<String, (Vec<String>, usize)> = BTreeMap::new();
    for (k, runs) in &groups {
        if let Some(p) = sole_planner(runs).filter(|_| avg_calls[k.as_str()] > 0.0) {
            let m = members.entry(p).or_default();
            m.0.push(k.clone());
            m.1 += runs.len();
        }
    }

    let mut rows: Vec<GroupRow> = groups
        .iter()
        .map(|(key, runs)| {
            let planner = sole_planner(runs);
            let cohort = planner.as_ref().and_then(|p| cohort_range.get(p)).copied();
            let mut row = row(key, runs, cohort, avg_calls[key.as_str()]);
            row.eq_cohort = row.execution_quality.and(planner).and_then(|p| {
                let (rows, runs) = members.get(&p)?.clone();
                Some(EqCohort {
                    calls: cohort_range[&p],
                    planner: p,
                    rows,
                    runs,
                })
            });
            row
        })
        .collect();
    flag_doing_little_relative(&mut rows);
    rows
}

/// A group's task completion for the "does little" rule: the judge's Task Completion (1–10)
/// when every group was judged, else the share of runs completed with an answer (0–1); `None`
/// when the groups cannot be compared on one of them.
fn completions(rows: &[GroupRow]) -> Vec<Option<f64>> {
    let judged = rows.iter().all(|r| r.task_completion.is_some());
    rows.iter()
        .map(|r| match (judged, r.task_completion) {
            (true, Some(tc)) => Some(tc.mean),
            _ if r.answerable > 0 => Some(r.completed as f64 / r.answerable as f64),
            _ => None,
        })
        .collect()
}

/// The paper's "do little, fail little" against the other groups: a group whose Execution
/// Quality is high (≥ [`HIGH_EXECUTION_QUALITY`]) while its task completion is under
/// [`RELATIVE_COMPLETION`] of the best group's is flagged too, even when its completion is
/// not low in itself (docs/report-format.md, `flags`).
fn flag_doing_little_relative(rows: &mut [GroupRow]) {
    let completion = completions(rows);
    let best = completion.iter().flatten().copied().fold(0.0_f64, f64::max);
    for (row, completion) in rows.iter_mut().zip(completion) {
        let high = row
            .execution_quality
            .is_some_and(|eq| eq.mean >= HIGH_EXECUTION_QUALITY);
        if high
            && completion.is_some_and(|c| c < RELATIVE_COMPLETION * best)
            && !row.flags.iter().any(|f| f == FLAG_DOES_LITTLE)
        {
            row.flags.push(FLAG_DOES_LITTLE.to_string());
        }
    }
}

/// Which rows each Execution Quality was normalised within, in one line per cohort, for
/// under a table (empty when no row has a cohort EQ).
pub fn cohorts_note(rows: &[GroupRow], by: GroupBy) -> String {
    let mut seen: Vec<&EqCohort> = Vec::new();
    for c in rows.iter().filter_map(|r| r.eq_cohort.as_ref()) {
        if !seen.contains(&c) {
            seen.push(c);
        }
    }
    if seen.is_empty() {
        return String::new();
    }
    let by = format!("{by:?}").to_lowercase();
    let mut out = format!(
        "EQ is normalised within a cohort: the rows of one planner, here grouped by {by} \
         (another grouping forms other rows, so other values; EQ anchored needs no cohort):\n"
    );
    for c in seen {
        out.push_str(&format!(
            "  planner {}: {} ({} runs; {:.1}–{:.1} calls per run)\n",
            c.planner,
            c.rows.join(", "),
            c.runs,
            c.calls.0,
            c.calls.1
        ));
    }
    out
}

/// The estimate of a judge-based value over the judged runs (clustered by task), with the
/// judge's own noise as a floor under its error: each run's value is a mean of its trials,
/// whose sample variance (`noise` of the run's [`JudgeVariance`]) over the trial count is that
/// run's share (a run judged once adds none it can measure).
fn judged(
    runs: &[&RunRecord],
    value: &dyn Fn(&RunRecord, &JudgeSummary) -> Option<f64>,
    noise: fn(&JudgeVariance) -> f64,
) -> Option<Estimate> {
    let mut values = Vec::new();
    let mut tasks = Vec::new();
    let mut measured = Vec::new();
    for r in runs {
        let Some(j) = r.metrics.judge.as_ref() else {
            continue;
        };
        let Some(v) = value(r, j) else { continue };
        values.push(v);
        tasks.push(r.task.as_str());
        if let Some(var) = &j.trial_variance {
            measured.push((noise(var), j.trials));
        }
    }
    let floor = super::stats::trial_noise(values.len(), &measured);
    Estimate::of_noisy(&values, &tasks, floor, JUDGE_SCALE)
}

fn row(key: &str, runs: &[&RunRecord], cohort: Option<(f64, f64)>, avg_calls: f64) -> GroupRow {
    // Every estimate clusters repeats of a task (they are not independent runs).
    let est = |scale: Scale, f: &dyn Fn(&RunRecord) -> Option<f64>| {
        let (values, tasks): (Vec<f64>, Vec<&str>) = runs
            .iter()
            .filter_map(|r| Some((f(r)?, r.task.as_str())))
            .unzip();
        Estimate::of_clustered(&values, &tasks, scale)
    };
    let rate = |f: &dyn Fn(&RunRecord) -> Option<f64>| est(UNIT, f);
    let success = rate(&|r| r.success_rate());

    let execution_quality = cohort.and_then(|(min, max)| {
        let point = eq_score(success?.mean, cohort_efficiency(avg_calls, min, max));
        // The interval is that of the per-run values (each kept in EQ's range).
        let spread = est(EQ_SCALE, &|r| {
            let sr = r.success_rate()?;
            Some(
                eq_score(sr, cohort_efficiency(r.metrics.tool_calls as f64, min, max))
                    .clamp(0.0, 100.0),
            )
        })?;
        Some(spread.with_mean(point))
    });
    let execution_quality_anchored = est(EQ_SCALE, &|r| {
        let eff = anchored_efficiency(r.metrics.tool_calls, r.reference_calls)?;
        Some(eq_score(r.success_rate()?, eff))
    });

    let judge = |f: fn(&JudgeSummary) -> f64, noise: fn(&JudgeVariance) -> f64| {
        judged(runs, &|_, j| Some(f(j)), noise)
    };
    let task_completion = judge(|j| j.task_completion, |v| v.task_completion);
    let new_overall = execution_quality.and_then(|eq| {
        // (tc + ts + pe + EQ/10) / 4 = ¾ overall + EQ/40: the trials' noise is (¾)² overall's.
        judged(
            runs,
            &|_, j| {
                Some(
                    (j.task_completion
                        + j.tool_selection
                        + j.planning_effectiveness
                        + eq.mean / 10.0)
                        / 4.0,
                )
            },
            |v| v.overall * 9.0 / 16.0,
        )
    });

    let completed = runs.iter().filter(|r| r.completed()).count();
    let clean = runs.iter().filter(|r| r.clean()).count();
    let answerable = runs.iter().filter(|r| r.answerable()).count();
    let mut planners: Vec<String> = runs.iter().map(|r| r.planner.clone()).collect();
    planners.sort();
    planners.dedup();

    let mut flags = Vec::new();
    if planners.len() > 1 {
        flags.push(FLAG_MIXED_PLANNERS.to_string());
    }
    if avg_calls == 0.0 {
        flags.push(FLAG_NO_CALLS.to_string());
    }
    if let Some(eq) = execution_quality {
        let completion_low = match task_completion {
            Some(tc) => tc.mean < LOW_TASK_COMPLETION,
            // A proxy session's agent answers its own user: no share to judge by.
            None => answerable > 0 && (completed as f64 / answerable as f64) < LOW_COMPLETION_RATE,
        };
        if eq.mean >= HIGH_EXECUTION_QUALITY && completion_low {
            flags.push(FLAG_DOES_LITTLE.to_string());
        }
    }

    let mut endings: BTreeMap<String, usize> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.metrics.status.is_some()) {
        let name = r.metrics.ending.map_or("unknown", |e| e.as_str());
        *endings.entry(name.to_string()).or_default() += 1;
    }

    GroupRow {
        key: key.to_string(),
        planners,
        runs: runs.len(),
        completed,
        clean,
        answerable,
        tool_calls: est(Scale::Count, &|r| Some(r.metrics.tool_calls as f64)),
        tool_call_success_rate: success,
        valid_tool_name_rate: rate(&|r| r.metrics.valid_tool_name_rate),
        input_schema_compliance: rate(&|r| r.metrics.input_schema_compliance),
        valid_call_failure_rate: rate(&|r| r.metrics.valid_call_failure_rate),
        planning_json_compliance: rate(&|r| r.metrics.planning_json_compliance),
        server_count: est(Scale::Count, &|r| {
            (r.metrics.tool_calls > 0 && !r.metrics.servers_unrecorded)
                .then_some(r.metrics.server_count as f64)
        }),
        cross_server_coordination: rate(&|r| {
            (r.metrics.tool_calls > 0 && !r.metrics.servers_unrecorded)
                .then_some(f64::from(u8::from(r.metrics.cross_server_coordination())))
        }),
        rejected_decisions: est(Scale::Count, &|r| Some(r.metrics.rejected_decisions as f64)),
        unsure_calls: est(Scale::Count, &|r| r.metrics.unsure_calls.map(|n| n as f64)),
        grounded_calls: est(Scale::Count, &|r| {
            r.metrics
                .unsure_calls
                .is_some()
                .then_some(r.metrics.grounded_calls as f64)
        }),
        trusted_predictions: est(Scale::Count, &|r| {
            r.metrics.trusted_predictions.map(|n| n as f64)
        }),
        real_calls_saved: est(Scale::Count, &|r| {
            r.metrics.real_calls_saved.map(|n| n as f64)
        }),
        trusted_poor: est(Scale::Count, &|r| r.metrics.trusted_poor.map(|n| n as f64)),
        w2r: rate(&|r| r.metrics.w2r),
        state_match: rate(&|r| r.metrics.state_match),
        source_passed: rate(&|r| {
            let m = &r.metrics;
            (m.source_passed + m.source_failed > 0)
                .then_some(f64::from(u8::from(m.source_failed == 0)))
        }),
        execution_quality,
        execution_quality_anchored,
        eq_cohort: None,
        tokens: est(Scale::Positive, &|r| {
            (!r.metrics.tokens_unrecorded).then(|| r.metrics.tokens() as f64)
        }),
        judge_tokens: est(Scale::Positive, &|r| {
            r.metrics
                .judge
                .as_ref()
                .map(|_| r.metrics.judge_tokens() as f64)
        }),
        wall_time_s: est(Scale::Positive, &|r| {
            (!r.metrics.times_unrecorded).then(|| r.metrics.wall_ms as f64 / 1000.0)
        }),
        fidelity: rate(&|r| r.metrics.fidelity.map(|f| f.score)),
        fidelity_changed_state: rate(&|r| r.metrics.fidelity.and_then(|f| f.changed_state)),
        fidelity_unchanged_state: rate(&|r| r.metrics.fidelity.and_then(|f| f.unchanged_state)),
        task_completion,
        tool_selection: judge(|j| j.tool_selection, |v| v.tool_selection),
        planning_effectiveness: judge(|j| j.planning_effectiveness, |v| v.planning_effectiveness),
        overall: judge(|j| j.overall, |v| v.overall),
        new_overall,
        judge_spread: JudgeSpread::of(runs),
        endings,
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::JudgeSummary;
    use cosmos_trajectory::event::{DimensionScore, Dimensions, JudgeRecord};

    /// A one-trial judgement with these headline scores (both sub-dimensions alike).
    fn judged(task_completion: f64, tool_selection: f64, planning: f64) -> JudgeSummary {
        let scores = Dimensions::from_fn(|name| DimensionScore {
            score: match name {
                "task_fulfillment" | "grounding" => task_completion,
                "tool_appropriateness" | "parameter_accuracy" => tool_selection,
                _ => planning,
            },
            reason: String::new(),
        });
        JudgeSummary::of(JudgeRecord {
            model: "judge",
            scores: &scores,
            judging: None,
        })
    }

    fn rec(
        agent: &str,
        planner: &str,
        calls: u64,
        success: Option<f64>,
        reference: Option<u32>,
    ) -> RunRecord {
        RunRecord {
            run_id: String::new(),
            path: PathBuf::new(),
            agent: agent.into(),
            world_model: "none".into(),
            planner: planner.into(),
            task: "t".into(),
            label: None,
            reference_calls: reference,
            made_by: "run by cosmos (react)".into(),
            skipped_lines: Vec::new(),
            metrics: RunMetrics {
                tool_calls: calls,
                tool_call_success_rate: success,
                status: Some(RunStatus::Completed),
                answered: true,
                ..Default::default()
            },
        }
    }

    #[test]
    fn execution_quality_over_a_cohort_hand_worked() {
        // Cohort of planner p: A averages 2 calls (SR 1.0), B averages 6 calls (SR 0.5).
        // min 2, max 6. EQ(A) = 100·(1.0 + 1)/2 = 100. EQ(B) = 100·(0.5 + 0)/2 = 25.
        let runs = vec![
            rec("a", "p", 2, Some(1.0), None),
            rec("a", "p", 2, Some(1.0), None),
            rec("b", "p", 4, Some(0.5), None),
            rec("b", "p", 8, Some(0.5), None),
        ];
        let rows = group(&runs, GroupBy::Agent);
        assert_eq!(rows[0].execution_quality.unwrap().mean, 100.0);
        assert_eq!(rows[1].execution_quality.unwrap().mean, 25.0);
        // Per-run spread of B: calls 4 → eff 0.5 → 50; calls 8 → eff −0.5 → 0. Mean 25.
        assert_eq!(rows[1].execution_quality.unwrap().n, 2);
        // Two runs of one task: too few for an interval.
        assert_eq!(rows[1].execution_quality.unwrap().ci, None);
        assert_eq!(rows[1].tool_calls.unwrap().mean, 6.0);
    }

    #[test]
    fn a_group_without_calls_stays_out_of_the_cohort_hand_worked() {
        // A: 2 calls (SR 1.0), B: 6 calls (SR 0.5), Z: no calls. Without Z, min 2 and max 6:
        // EQ(A) = 100 and EQ(B) = 25 as above. Counted in, Z's 0 would make min 0:
        // EQ(A) = 100·(1 + (1 − 2/6))/2 = 83.3, EQ(B) = 100·(0.5 + 0)/2 = 25.
        let runs = vec![
            rec("a", "p", 2, Some(1.0), None),
            rec("b", "p", 6, Some(0.5), None),
            rec("z", "p", 0, None, None),
        ];
        let rows = group(&runs, GroupBy::Agent);
        assert_eq!(rows[0].execution_quality.unwrap().mean, 100.0);
        assert_eq!(rows[1].execution_quality.unwrap().mean, 25.0);
        assert_eq!(rows[2].execution_quality, None);
        assert_eq!(rows[2].flags, [FLAG_NO_CALLS]);
        assert!(rows[0].flags.is_empty());
    }

    #[test]
    fn judge_tokens_are_apart_from_the_runs_tokens() {
        use cosmos_trajectory::event::Role;
        let mut scored = rec("a", "p", 1, Some(1.0), None);
        scored.metrics.llm[Role::Planner.index()].prompt_tokens = 100;
        scored.metrics.llm[Role::Judge.index()].prompt_tokens = 40;
        scored.metrics.llm[Role::Judge.index()].completion_tokens = 2;
        scored.metrics.judge = Some(judged(5.0, 5.0, 5.0));
        let unjudged = rec("a", "p", 1, Some(1.0), None);
        let rows = group(&[scored, unjudged], GroupBy::Agent);
        assert_eq!(rows[0].tokens.unwrap().mean, 50.0, "(100 + 0) / 2 runs");
        let j = rows[0].judge_tokens.unwrap();
        assert_eq!((j.mean, j.n), (42.0, 1));
    }

    #[test]
    fn rates_get_an_interval_inside_zero_and_one_and_repeats_are_clustered() {
        let on = |task: &str, success| RunRecord {
            task: task.into(),
            ..rec("a", "p", 2, Some(success), None)
        };
        let runs = vec![on("t1", 0.0), on("t2", 1.0), on("t3", 1.0)];
        let success = group(&runs, GroupBy::Agent)[0]
            .tool_call_success_rate
            .unwrap();
        let [lo, hi] = success.ci.unwrap();
        assert!(
            (0.0..0.5).contains(&lo) && (0.66..=1.0).contains(&hi),
            "{lo} {hi}"
        );
        assert_eq!((success.ci95, success.tasks), (None, None));
        // The same values as repeats of two tasks: clustered, and two tasks are too few.
        let runs = vec![on("t1", 0.0), on("t2", 1.0), on("t2", 1.0)];
        let success = group(&runs, GroupBy::Agent)[0]
            .tool_call_success_rate
            .unwrap();
        assert_eq!((success.ci, success.tasks), (None, Some(2)));
    }

    #[test]
    fn cohort_of_one_and_max_equals_min() {
        let rows = group(&[rec("a", "p", 3, Some(0.5), None)], GroupBy::Agent);
        assert_eq!(rows[0].execution_quality.unwrap().mean, 75.0);
        assert_eq!(cohort_efficiency(3.0, 3.0, 3.0), 1.0);
    }

    #[test]
    fn separate_planners_are_separate_cohorts() {
        let runs = vec![
            rec("a", "p", 2, Some(1.0), None),
            rec("b", "q", 9, Some(1.0), None),
        ];
        let rows = group(&runs, GroupBy::Agent);
        // Each alone in its cohort: efficiency 1.
        assert_eq!(rows[0].execution_quality.unwrap().mean, 100.0);
        assert_eq!(rows[1].execution_quality.unwrap().mean, 100.0);
    }

    #[test]
    fn zero_calls_give_no_execution_quality() {
        let rows = group(&[rec("a", "p", 0, None, Some(2))], GroupBy::Agent);
        assert_eq!(rows[0].tool_call_success_rate, None);
        assert_eq!(rows[0].execution_quality, None);
        assert_eq!(rows[0].execution_quality_anchored, None);
        assert_eq!(rows[0].tool_calls.unwrap().mean, 0.0);
    }

    #[test]
    fn anchored_hand_worked() {
        // reference 2: 4 calls → eff 0.5; SR 1 → 75. 1 call → eff 1; SR 0 → 50.
        assert_eq!(anchored_efficiency(4, Some(2)), Some(0.5));
        assert_eq!(anchored_efficiency(1, Some(2)), Some(1.0));
        assert_eq!(anchored_efficiency(0, Some(2)), None);
        assert_eq!(anchored_efficiency(3, None), None);
        let rows = group(
            &[
                rec("a", "p", 4, Some(1.0), Some(2)),
                rec("a", "p", 1, Some(0.0), Some(2)),
            ],
            GroupBy::Agent,
        );
        assert_eq!(rows[0].execution_quality_anchored.unwrap().mean, 62.5);
    }

    #[test]
    fn mixed_planners_are_flagged_and_get_no_cohort() {
        let rows = group(
            &[
                rec("a", "p", 1, Some(1.0), None),
                rec("a", "q", 1, Some(1.0), None),
            ],
            GroupBy::Agent,
        );
        assert_eq!(rows[0].execution_quality, None);
        assert!(rows[0].flags.contains(&FLAG_MIXED_PLANNERS.to_string()));
    }

    #[test]
    fn does_little_errs_little_is_flagged() {
        let mut lazy = rec("lazy", "p", 1, Some(1.0), None);
        lazy.metrics.judge = Some(judged(2.0, 5.0, 5.0));
        let mut busy = rec("busy", "p", 5, Some(0.8), None);
        busy.metrics.judge = Some(judged(8.0, 8.0, 8.0));
        let rows = group(&[lazy, busy], GroupBy::Agent);
        let busy_row = &rows[0];
        let lazy_row = &rows[1];
        assert_eq!(lazy_row.key, "lazy");
        assert_eq!(lazy_row.execution_quality.unwrap().mean, 100.0);
        assert!(lazy_row.flags.contains(&FLAG_DOES_LITTLE.to_string()));
        assert!(busy_row.flags.is_empty());
        // New Overall of lazy: (2 + 5 + 5 + 100/10) / 4 = 5.5.
        assert_eq!(lazy_row.new_overall.unwrap().mean, 5.5);
        // busy: EQ = 100·(0.8 + 0)/2 = 40; New Overall = (8+8+8+4)/4 = 7.
        assert_eq!(busy_row.new_overall.unwrap().mean, 7.0);
    }

    /// The paper's case: high Execution Quality, task completion not low in itself (6 of 10)
    /// but well under the best group's (10): flagged beside it; the best is not.
    #[test]
    fn doing_little_is_flagged_relative_to_the_other_groups() {
        let mut careful = rec("careful", "p", 1, Some(1.0), None);
        careful.metrics.judge = Some(judged(5.5, 8.0, 8.0));
        let mut bold = rec("bold", "p", 4, Some(1.0), None);
        bold.metrics.judge = Some(judged(10.0, 8.0, 8.0));
        let rows = group(&[careful.clone(), bold], GroupBy::Agent);
        let by_key = |k: &str| rows.iter().find(|r| r.key == k).unwrap();
        assert!(by_key("careful").execution_quality.unwrap().mean >= HIGH_EXECUTION_QUALITY);
        assert!(
            by_key("careful")
                .flags
                .contains(&FLAG_DOES_LITTLE.to_string())
        );
        assert!(!by_key("bold").flags.contains(&FLAG_DOES_LITTLE.to_string()));
        // Alone, 5.5 of 10 is not low: no flag without a group to compare with.
        let alone = group(&[careful], GroupBy::Agent);
        assert!(!alone[0].flags.contains(&FLAG_DOES_LITTLE.to_string()));
    }

    #[test]
    fn without_judge_low_completion_uses_answers() {
        let mut r = rec("a", "p", 1, Some(1.0), None);
        r.metrics.answered = false;
        let rows = group(&[r], GroupBy::Agent);
        assert!(rows[0].flags.contains(&FLAG_DOES_LITTLE.to_string()));
    }

    /// A proxy session's agent answers its own user, never cosmos: its "no answer" is no
    /// failure, so a group of sessions is never flagged for doing little, alone or beside a
    /// group that answers.
    #[test]
    fn proxy_sessions_are_not_judged_by_answers_cosmos_cannot_see() {
        let mut session = rec("external", "p", 1, Some(1.0), None);
        session.metrics.answered = false;
        let mut agent = rec("react", "p", 3, Some(1.0), None);
        agent.metrics.answered = true;
        let alone = group(std::slice::from_ref(&session), GroupBy::Agent);
        assert_eq!((alone[0].completed, alone[0].answerable), (0, 0));
        assert!(alone[0].flags.is_empty(), "{:?}", alone[0].flags);
        let rows = group(&[session, agent], GroupBy::Agent);
        assert!(rows.iter().all(|r| r.flags.is_empty()), "{rows:?}");
    }
}
