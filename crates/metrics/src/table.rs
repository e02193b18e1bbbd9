//! The group table as text: aligned for the terminal, markdown, or CSV.
//!
//! The group table (text, CSV) and its columns, which also name their paired metric;
//! `paper_tables.rs`: `--format markdown` as the paper's Tables 1, 2 and 4, each cell with its
//! difference from the baseline.

use std::fmt::Write as _;

use super::group::{GroupBy, GroupRow};
use super::stats::{Estimate, Interval};
use super::text_table::{aligned, csv};
use cosmos_trajectory::event::{DIMENSION_NAMES, Ending};

/// A metric column: header, how to read it from a row, and its metric in `--baseline`'s pairs.
pub(super) struct Column {
    pub(super) title: &'static str,
    pub(super) get: fn(&GroupRow) -> Option<Estimate>,
    /// Multiply for display (rates as percentages).
    pub(super) scale: f64,
    pub(super) decimals: usize,
    /// The metric's name in [`super::paired`] (`""` when it is not paired).
    pub(super) paired: &'static str,
    /// The top of a bounded metric's range as shown (100 for a rate, 1 for fidelity): its
    /// figures never read as a bound they are not ([`super::figure::within`]).
    pub(super) top: Option<f64>,
}

impl Column {
    /// One figure of the column (a mean or an interval's end), as shown.
    pub(super) fn figure(&self, value: f64) -> String {
        let (shown, d) = (value * self.scale, self.decimals);
        match self.top {
            Some(top) => super::figure::within(shown, top, d),
            None => format!("{shown:.d$}"),
        }
    }
}

/// Every metric column of the report, in its order (the judge's only when `judged`; the
/// calls resting on unsure predictions and the grounded ones only when `planned`: some group
/// planned on predictions; what routing trusted, saved and later found poor only when
/// `routed`: some group routed; state match and fidelity split by state change only when
/// `stateful`: some run checks its end state or simulated a call a sandbox watched).
pub(super) fn columns(
    judged: bool,
    planned: bool,
    routed: bool,
    stateful: bool,
    scored: bool,
) -> Vec<Column> {
    let c = |title, get, scale: f64, decimals, paired| Column {
        title,
        get,
        scale,
        decimals,
        paired,
        // Rates are shown as percentages; the bounded scores get their top below.
        top: (scale == 100.0).then_some(100.0),
    };
    let bounded = |top: f64, column: Column| Column {
        top: Some(top),
        ..column
    };
    let mut cols = vec![
        c(
            "calls/task",
            (|r: &GroupRow| r.tool_calls) as fn(&GroupRow) -> Option<Estimate>,
            1.0,
            2,
            "tool_calls",
        ),
        c(
            "success %",
            |r| r.tool_call_success_rate,
            100.0,
            1,
            "tool_call_success_rate",
        ),
        c(
            "valid name %",
            |r| r.valid_tool_name_rate,
            100.0,
            1,
            "valid_tool_name_rate",
        ),
        c(
            "schema %",
            |r| r.input_schema_compliance,
            100.0,
            1,
            "input_schema_compliance",
        ),
        c(
            "valid-call fail %",
            |r| r.valid_call_failure_rate,
            100.0,
            1,
            "valid_call_failure_rate",
        ),
        c(
            "plan JSON %",
            |r| r.planning_json_compliance,
            100.0,
            1,
            "planning_json_compliance",
        ),
        c("servers", |r| r.server_count, 1.0, 2, "server_count"),
        c(
            "cross-server %",
            |r| r.cross_server_coordination,
            100.0,
            1,
            "cross_server_coordination",
        ),
        c(
            "rejected",
            |r| r.rejected_decisions,
            1.0,
            2,
            "rejected_decisions",
        ),
        bounded(
            100.0,
            c(
                "EQ",
                |r| r.execution_quality,
                1.0,
                1,
                super::paired::EXECUTION_QUALITY,
            ),
        ),
        bounded(
            100.0,
            c(
                "EQ anchored",
                |r| r.execution_quality_anchored,
                1.0,
                1,
                "execution_quality_anchored",
            ),
        ),
        c("tokens", |r| r.tokens, 1.0, 0, "tokens"),
        c("time s", |r| r.wall_time_s, 1.0, 1, "wall_time_s"),
        bounded(1.0, c("fidelity", |r| r.fidelity, 1.0, 3, "fidelity")),
    ];
    if planned {
        cols.extend([
            bounded(1.0, c("w2r", |r| r.w2r, 1.0, 3, "w2r")),
            c("unsure calls", |r| r.unsure_calls, 1.0, 2, ""),
            c("grounded", |r| r.grounded_calls, 1.0, 2, ""),
        ]);
    }
    if routed {
        cols.extend([
            c("trusted", |r| r.trusted_predictions, 1.0, 2, ""),
            c("saved", |r| r.real_calls_saved, 1.0, 2, ""),
            c("trusted poor", |r| r.trusted_poor, 1.0, 2, ""),
        ]);
    }
    if stateful {
        cols.extend([
            c("state match %", |r| r.state_match, 100.0, 1, "state_match"),
            bounded(
                1.0,
                c("fid. changed", |r| r.fidelity_changed_state, 1.0, 3, ""),
            ),
            bounded(
                1.0,
                c("fid. unchanged", |r| r.fidelity_unchanged_state, 1.0, 3, ""),
            ),
        ]);
    }
    if scored {
        cols.push(c(
            "source pass %",
            |r| r.source_passed,
            100.0,
            1,
            "source_passed",
        ));
    }
    if judged {
        cols.extend([
            c("judge tokens", |r| r.judge_tokens, 1.0, 0, "judge_tokens"),
            bounded(
                10.0,
                c(
                    "task compl.",
                    |r| r.task_completion,
                    1.0,
                    2,
                    "judge_task_completion",
                ),
            ),
            bounded(
                10.0,
                c(
                    "tool sel.",
                    |r| r.tool_selection,
                    1.0,
                    2,
                    "judge_tool_selection",
                ),
            ),
            bounded(
                10.0,
                c(
                    "planning",
                    |r| r.planning_effectiveness,
                    1.0,
                    2,
                    "judge_planning_effectiveness",
                ),
            ),
            bounded(10.0, c("overall", |r| r.overall, 1.0, 2, "judge_overall")),
            bounded(10.0, c("new overall", |r| r.new_overall, 1.0, 2, "")),
        ]);
    }
    cols
}

/// `mean [low–high]` and `(n=…)` when n differs from the row's runs; `—` when undefined.
/// Without an interval the cell says why only when it is not for too few runs (the legend
/// says that one).
pub(super) fn cell(e: Option<Estimate>, col: &Column, runs: usize) -> String {
    let Some(e) = e else { return "—".to_string() };
    let mut s = col.figure(e.mean);
    match e.ci {
        Some([lo, hi]) => {
            let _ = write!(s, " [{}–{}]", col.figure(lo), col.figure(hi));
        }
        None if e.interval == Interval::NoSpread => s.push_str(" (all equal)"),
        None => {}
    }
    if e.n != runs {
        let _ = write!(s, " (n={})", e.n);
    }
    s
}

/// What the cells mean, under every table.
pub const LEGEND: &str = "runs (N clean): N finished cleanly by the browser's rule (completed, \
    no failed call, no rejected reply, no ending mark, no failing score of its source). \
    mean [95% interval]: rates, fidelity, EQ and judge scores by Wilson's \
    interval at the effective n; tokens and time log-normal (Cox); counts Student's t; repeats of \
    a task clustered. No interval under 3 runs (or tasks, with repeats). (n=…) where fewer runs \
    had the metric. EQ = Execution Quality within the planner's cohort; tokens are the agent's, \
    the judge's apart. docs/report-format.md says why each interval.";

/// The table as aligned text, or markdown.
pub fn render(rows: &[GroupRow], by: GroupBy, markdown: bool) -> String {
    let judged = rows.iter().any(|r| r.task_completion.is_some());
    let cols = columns(
        judged,
        rows.iter().any(|r| r.unsure_calls.is_some()),
        rows.iter().any(|r| r.trusted_predictions.is_some()),
        rows.iter().any(|r| {
            r.state_match.is_some()
                || r.fidelity_changed_state.is_some()
                || r.fidelity_unchanged_state.is_some()
        }),
        rows.iter().any(|r| r.source_passed.is_some()),
    );
    let by_name = format!("{by:?}").to_lowercase();
    let mut header: Vec<String> = vec![by_name, "runs".into()];
    header.extend(cols.iter().map(|c| c.title.to_string()));
    header.push("flags".into());
    let mut table: Vec<Vec<String>> = Vec::with_capacity(rows.len());
    for r in rows {
        let mut line = vec![r.key.clone(), format!("{} ({} clean)", r.runs, r.clean)];
        line.extend(cols.iter().map(|c| cell((c.get)(r), c, r.runs)));
        line.push(r.flags.join(","));
        table.push(line);
    }
    let mut out = String::new();
    if rows.is_empty() {
        out.push_str("no runs\n");
        return out;
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    aligned(&mut out, &header, &table, markdown);
    if !markdown {
        out.push('\n');
        out.push_str(LEGEND);
        out.push('\n');
    }
    let cohorts = super::group::cohorts_note(rows, by);
    if !cohorts.is_empty() {
        out.push('\n');
        out.push_str(&cohorts);
    }
    let judges = judge_notes(rows);
    if !judges.is_empty() {
        out.push('\n');
        out.push_str(&judges);
        out.push('\n');
        out.push_str(&render_judge_spread(rows, markdown));
    }
    out.push('\n');
    out.push_str(&render_endings(rows, markdown));
    out
}

/// Who judged each group, with how many trials: one line when every group had the same,
/// else a line per group; empty when no run was judged.
pub fn judge_notes(rows: &[GroupRow]) -> String {
    let notes: Vec<(&str, String)> = rows
        .iter()
        .filter_map(|r| Some((r.key.as_str(), r.judge_spread.as_ref()?.note())))
        .collect();
    match notes.first() {
        None => String::new(),
        Some((_, first)) if notes.iter().all(|(_, n)| n == first) => format!("{first}\n"),
        Some(_) => notes
            .iter()
            .map(|(key, note)| format!("{key}: {note}\n"))
            .collect(),
    }
}

/// The judge's own spread beside the runs': per group, each sub-dimension's and the overall's
/// standard deviation between runs / between the judge's trials of one run. Empty when no run
/// was judged.
pub fn render_judge_spread(rows: &[GroupRow], markdown: bool) -> String {
    let judged: Vec<&GroupRow> = rows.iter().filter(|r| r.judge_spread.is_some()).collect();
    if judged.is_empty() {
        return String::new();
    }
    let shown = |name: &str| DIMENSION_NAMES.contains(&name) || name == "overall";
    let mut header = vec!["group"];
    if let Some(spread) = &judged[0].judge_spread {
        header.extend(
            spread
                .rows
                .iter()
                .map(|r| r.name.as_str())
                .filter(|n| shown(n)),
        );
    }
    let sd = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.2}"));
    let table: Vec<Vec<String>> = judged
        .iter()
        .filter_map(|r| {
            let spread = r.judge_spread.as_ref()?;
            let mut line = vec![r.key.clone()];
            line.extend(
                spread
                    .rows
                    .iter()
                    .filter(|row| shown(&row.name))
                    .map(|row| format!("{} / {}", sd(row.between_runs), sd(row.between_trials))),
            );
            Some(line)
        })
        .collect();
    let mut out = String::from(if markdown {
        "**Judge spread** (standard deviation between runs / between the judge's trials of one run)\n\n"
    } else {
        "Judge spread (standard deviation between runs / between the judge's trials of one run):\n"
    });
    aligned(&mut out, &header, &table, markdown);
    out.push_str(
        "\nBetween runs: of each run's mean over its trials. Between trials: the judge's own, \
         pooled over the runs judged more than once (— when none was); it is part of each \
         judge score's interval.\n",
    );
    out
}

/// Runs per group by what brought them to their end: one column per ending any run had.
pub fn render_endings(rows: &[GroupRow], markdown: bool) -> String {
    let mut names: Vec<&str> = Ending::ALL
        .iter()
        .map(|e| e.as_str())
        .filter(|name| rows.iter().any(|r| r.endings.contains_key(*name)))
        .collect();
    if rows.iter().any(|r| r.endings.contains_key("unknown")) {
        names.push("unknown");
    }
    let mut out = String::from(if markdown {
        "**How runs ended**\n\n"
    } else {
        "How runs ended:\n"
    });
    if names.is_empty() {
        out.push_str("no run has finished\n");
        return out;
    }
    let mut header = vec!["group"];
    header.extend(&names);
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut line = vec![r.key.clone()];
            line.extend(
                names
                    .iter()
                    .map(|n| r.endings.get(*n).copied().unwrap_or(0).to_string()),
            );
            line
        })
        .collect();
    aligned(&mut out, &header, &table, markdown);
    out.push_str(
        "\nplanner_finished: the planner chose to finish; search_exhausted: the search used its \
         iterations with no path finished; step_limit, token_limit, time_limit: a limit stopped \
         the agent; search_ended_early: the planner or world model failed mid-search; \
         no_call_planned: nothing was executed; interrupted: a stop (the stop key, Ctrl-C, a \
         signal) ended it; client_closed, idle_expired: a proxy session's client ended it or \
         left it idle; source_ended: an imported run, ended by its own agent elsewhere; \
         unknown: an older file that does not say.\n",
    );
    out
}

/// The table as CSV: `metric_mean,metric_n,metric_ci95,metric_ci_low,metric_ci_high` per metric.
pub fn render_csv(rows: &[GroupRow]) -> String {
    let cols = columns(true, true, true, true, true);
    let mut header = vec!["group".to_string(), "runs".into(), "completed".into()];
    for c in &cols {
        let name = csv_name(c.title);
        for part in ["mean", "n", "ci95", "ci_low", "ci_high"] {
            header.push(format!("{name}_{part}"));
        }
    }
    header.push("flags".into());
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let records: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut record = vec![r.key.clone(), r.runs.to_string(), r.completed.to_string()];
            for c in &cols {
                match (c.get)(r) {
                    Some(e) => record.extend([
                        e.mean.to_string(),
                        e.n.to_string(),
                        opt(e.ci95),
                        opt(e.ci.map(|c| c[0])),
                        opt(e.ci.map(|c| c[1])),
                    ]),
                    None => record.extend(std::iter::repeat_n(String::new(), 5)),
                }
            }
            record.push(r.flags.join(";"));
            record
        })
        .collect();
    csv(&header, &records)
}

fn csv_name(title: &str) -> String {
    title
        .replace(['%', '.', '/'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
        .to_lowercase()
}
