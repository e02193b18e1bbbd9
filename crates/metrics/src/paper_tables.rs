//! `cosmos report --format markdown`: the group rows laid out as the paper's tables. Table 1:
//! tool use and Execution Quality; Table 2: the judge's scores; Table 4: cost and simulation.
//! With a baseline, every cell also carries the group's paired difference from it on the tasks
//! both ran (`Δ mean [95% CI]`), and the full comparison (higher/same/lower per metric) follows.

use std::fmt::Write as _;

use super::group::{GroupBy, GroupRow};
use super::paired::PairedRow;
use super::stats::Interval;
use super::table::{Column, cell, columns};
use super::text_table::aligned;

/// The paper's tables: a title and the report columns (by title) each one shows.
const TABLES: [(&str, &[&str]); 3] = [
    (
        "Table 1 · Tool use and Execution Quality",
        &[
            "calls/task",
            "success %",
            "EQ",
            "EQ anchored",
            "valid name %",
            "schema %",
            "valid-call fail %",
            "plan JSON %",
            "servers",
            "cross-server %",
        ],
    ),
    (
        "Table 2 · Judge scores (0–10)",
        &[
            "task compl.",
            "tool sel.",
            "planning",
            "overall",
            "new overall",
        ],
    ),
    (
        "Table 4 · Cost and simulation",
        &["tokens", "time s", "fidelity", "w2r", "rejected"],
    ),
];

/// The markdown tables; `baseline` is the baseline's key and the pairs against it.
pub fn render(rows: &[GroupRow], by: GroupBy, baseline: Option<(&str, &[PairedRow])>) -> String {
    if rows.is_empty() {
        return "no runs\n".into();
    }
    let judged = rows.iter().any(|r| r.task_completion.is_some());
    let all = columns(true, true, true, false, false);
    let by_name = format!("{by:?}").to_lowercase();
    let mut out = String::new();
    for (title, wanted) in TABLES {
        let _ = writeln!(out, "**{title}**\n");
        if title.starts_with("Table 2") && !judged {
            out.push_str("No run was judged (`cosmos judge RUNS`).\n\n");
            continue;
        }
        let cols: Vec<&Column> = wanted
            .iter()
            .filter_map(|w| all.iter().find(|c| c.title == *w))
            .collect();
        let mut header: Vec<&str> = vec![by_name.as_str(), "runs", "completed"];
        header.extend(cols.iter().map(|c| c.title));
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                let mut line = vec![
                    r.key.clone(),
                    r.runs.to_string(),
                    format!("{}/{}", r.completed, r.runs),
                ];
                line.extend(cols.iter().map(|c| {
                    let value = cell((c.get)(r), c, r.runs);
                    match baseline {
                        Some((key, _)) if key == r.key => format!("{value} (baseline)"),
                        Some((_, pairs)) => match difference(pairs, &r.key, c) {
                            Some(d) => format!("{value} ({d})"),
                            None => value,
                        },
                        None => value,
                    }
                }));
                line
            })
            .collect();
        aligned(&mut out, &header, &table, true);
        out.push('\n');
        if title.starts_with("Table 2") {
            // Which judge, and how many trials each score is the mean of.
            out.push_str(&super::table::judge_notes(rows).replace('\n', "  \n"));
            out.push('\n');
            out.push_str(&super::table::render_judge_spread(rows, true));
            out.push('\n');
        }
    }
    out.push_str("Cells: ");
    out.push_str(super::table::LEGEND);
    out.push_str(" EQ anchored uses each task's reference call count.");
    if let Some((key, _)) = baseline {
        let _ = write!(
            out,
            " Δ: the mean per-task difference from the baseline `{key}` on the tasks both ran, \
             with its paired 95% interval (none under {} tasks).",
            super::stats::MIN_N
        );
    }
    out.push_str("\n\n");
    let cohorts = super::group::cohorts_note(rows, by);
    if !cohorts.is_empty() {
        out.push_str(&cohorts);
        out.push('\n');
    }
    out.push_str(&super::table::render_endings(rows, true));
    out
}

/// `Δ +1.00 [+0.50, +1.50]` for group `key` on column `col`, scaled as the column is.
fn difference(pairs: &[PairedRow], key: &str, col: &Column) -> Option<String> {
    if col.paired.is_empty() {
        return None;
    }
    let p = pairs
        .iter()
        .find(|p| p.key == key && p.metric == col.paired && p.n > 0)?;
    let d = col.decimals;
    let scale = col.scale;
    let mean = p.mean_diff? * scale;
    Some(match (p.ci, p.interval) {
        (Some([lo, hi]), _) => {
            format!("Δ {mean:+.d$} [{:+.d$}, {:+.d$}]", lo * scale, hi * scale)
        }
        (None, Some(Interval::NoSpread)) => format!("Δ {mean:+.d$}, same on {} tasks", p.n),
        (None, _) => format!(
            "Δ {mean:+.d$}, {} task{}: too few",
            p.n,
            if p.n == 1 { "" } else { "s" }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Estimate;

    fn row(key: &str, calls: f64) -> GroupRow {
        GroupRow {
            key: key.into(),
            planners: vec!["p".into()],
            runs: 2,
            completed: 1,
            clean: 1,
            answerable: 2,
            tool_calls: Some(Estimate {
                mean: calls,
                n: 2,
                tasks: None,
                ci95: Some(0.5),
                ci: Some([calls - 0.5, calls + 0.5]),
                interval: Interval::StudentT,
            }),
            tool_call_success_rate: None,
            valid_tool_name_rate: None,
            input_schema_compliance: None,
            valid_call_failure_rate: None,
            planning_json_compliance: None,
            server_count: None,
            cross_server_coordination: None,
            rejected_decisions: None,
            unsure_calls: None,
            state_match: None,
            w2r: None,
            source_passed: None,
            fidelity_changed_state: None,
            fidelity_unchanged_state: None,
            grounded_calls: None,
            trusted_predictions: None,
            real_calls_saved: None,
            trusted_poor: None,
            execution_quality: None,
            execution_quality_anchored: None,
            eq_cohort: None,
            tokens: None,
            judge_tokens: None,
            judge_spread: None,
            wall_time_s: None,
            fidelity: None,
            task_completion: None,
            tool_selection: None,
            planning_effectiveness: None,
            overall: None,
            new_overall: None,
            endings: Default::default(),
            flags: vec![],
        }
    }

    #[test]
    fn the_paper_tables_carry_the_difference_from_the_baseline() {
        let rows = vec![row("react", 3.0), row("spiral", 4.0)];
        let pairs = vec![PairedRow {
            key: "spiral".into(),
            metric: "tool_calls",
            n: 2,
            mean_diff: Some(1.0),
            ci: Some([0.5, 1.5]),
            interval: Some(Interval::StudentT),
            sd: Some(0.1),
            tasks_for_80_power: Some(3),
            higher: 2,
            same: 0,
            lower: 0,
        }];
        let md = render(&rows, GroupBy::Config, Some(("react", &pairs)));
        assert!(
            md.contains("**Table 1 · Tool use and Execution Quality**"),
            "{md}"
        );
        assert!(md.contains("| react "), "{md}");
        assert!(md.contains("3.00 [2.50–3.50] (baseline)"), "{md}");
        assert!(
            md.contains("4.00 [3.50–4.50] (Δ +1.00 [+0.50, +1.50])"),
            "{md}"
        );
        assert!(md.contains("No run was judged"), "{md}");
        assert!(md.contains("**Table 4 · Cost and simulation**"), "{md}");
        let plain = render(&rows, GroupBy::Config, None);
        assert!(!plain.contains('Δ'), "{plain}");
    }
}
