//! `cosmos report`: the paper's tables for groups of runs, as text, markdown, CSV or JSON.

use crate::cli::output::{errln, out};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use cosmos_engine::metrics::group::{GroupBy, GroupRow, RunRecord, group};
use cosmos_engine::metrics::records::read_records;
use cosmos_engine::metrics::table;
use cosmos_trajectory::sanitize::{inert, inert_json};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// Aligned text for the terminal.
    #[default]
    Table,
    /// Markdown laid out as the paper's Tables 1, 2 and 4 (with `--baseline`, each cell's
    /// paired difference from it).
    Markdown,
    /// One row per group, `metric_mean,metric_n,metric_ci95,metric_ci_low,metric_ci_high` per metric.
    Csv,
    /// The stable JSON shape documented in docs/report-format.md.
    Json,
}

/// The JSON document `--format json` prints.
#[derive(Debug, Serialize)]
pub struct ReportDoc {
    /// Always `mcp-cosmos-report`.
    pub format: &'static str,
    /// Shape version.
    pub version: u32,
    /// What a row stands for.
    pub group_by: GroupBy,
    /// Runs read.
    pub runs: usize,
    /// Files that could not be read at all.
    pub unreadable: Vec<String>,
    /// Lines of the runs read that were skipped (`FILE:LINE: reason`): what they held is in
    /// no figure.
    pub skipped_lines: Vec<String>,
    /// The rows.
    pub groups: Vec<GroupRow>,
    /// With `--baseline`: every other group against it, on the tasks both ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineDoc>,
    /// With `--per-run`: every run's own metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_run: Option<Vec<PerRun>>,
}

/// One run's own metrics in the JSON report (`--per-run`): the values every view shows.
#[derive(Debug, Serialize)]
pub struct PerRun {
    /// Its file.
    pub path: PathBuf,
    /// Its group's key.
    pub key: String,
    /// Its task.
    pub task: String,
    /// How it was made: run by cosmos, recorded by the proxy, or imported (from what file).
    pub made_by: String,
    /// Real calls that failed.
    pub tool_errors: u64,
    /// Tokens the agent spent; `null` when the run's source counted none.
    pub tokens: Option<u64>,
    /// More than one server was called.
    pub cross_server_coordination: bool,
    /// Every metric of the run.
    pub metrics: cosmos_engine::metrics::run::RunMetrics,
}

impl PerRun {
    /// Run `r`'s row, in the group `by` puts it in.
    fn of(r: &RunRecord, by: GroupBy) -> Self {
        Self {
            path: r.path.clone(),
            key: r.key(by),
            task: r.task.clone(),
            made_by: r.made_by.clone(),
            tool_errors: r.metrics.tool_errors(),
            tokens: (!r.metrics.tokens_unrecorded).then(|| r.metrics.tokens()),
            cross_server_coordination: r.metrics.cross_server_coordination(),
            metrics: r.metrics.clone(),
        }
    }
}

/// What `cosmos report` adds to the groups.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// Compare with this group.
    pub baseline: Option<&'a str>,
    /// Print the tasks each comparison needs for 80% power.
    pub power: bool,
    /// Put every run's metrics in the JSON.
    pub per_run: bool,
}

/// The `baseline` object of the JSON report.
#[derive(Debug, Serialize)]
pub struct BaselineDoc {
    /// The baseline group's key.
    pub key: String,
    /// Its comparisons.
    pub pairs: Vec<cosmos_engine::metrics::paired::PairedRow>,
}

/// Says which runs' token counts reached the largest count (their sums stop there).
fn say_saturated_tokens(records: &[RunRecord]) {
    for r in records.iter().filter(|r| r.metrics.tokens_saturated()) {
        errln!(
            "cosmos: {}: its token counts add up past {}: shown as that, the largest count, not the sum",
            inert(&r.path.display().to_string()),
            u64::MAX
        );
    }
}

/// Reads every run (streaming, one at a time) and prints the table.
pub fn run(
    paths: &[PathBuf],
    by: GroupBy,
    format: ReportFormat,
    options: Options<'_>,
) -> Result<ExitCode> {
    let Options {
        baseline,
        power,
        per_run,
    } = options;
    let (records, unreadable) = read_records(paths)?;
    // Whatever the format, what was passed over is said on stderr.
    for u in &unreadable {
        errln!("cosmos: skipped {}", inert(u));
    }
    let skipped_lines: Vec<String> = records
        .iter()
        .flat_map(|r| r.skipped_lines.iter().cloned())
        .collect();
    for line in &skipped_lines {
        errln!("cosmos: {}", inert(line));
    }
    say_saturated_tokens(&records);
    if records.is_empty() {
        anyhow::bail!(
            "no runs to report under {}",
            cosmos_trajectory::reader::path_list(paths)
        );
    }
    let rows = group(&records, by);
    let paired = baseline
        .map(|b| cosmos_engine::metrics::paired::against_baseline(&records, by, b))
        .transpose()?;
    let out = match format {
        ReportFormat::Json => {
            let per_run = per_run.then(|| records.iter().map(|r| PerRun::of(r, by)).collect());
            let doc = ReportDoc {
                format: "mcp-cosmos-report",
                version: 2,
                group_by: by,
                runs: records.len(),
                unreadable,
                skipped_lines,
                groups: rows,
                baseline: paired.map(|(key, pairs)| BaselineDoc { key, pairs }),
                per_run,
            };
            // Still JSON, and still inert: unsafe characters become \u escapes.
            out!(
                "{}",
                inert_json(&(serde_json::to_string_pretty(&doc)? + "\n"))
            );
            return Ok(ExitCode::SUCCESS);
        }
        ReportFormat::Table => table::render(&rows, by, false),
        ReportFormat::Markdown => cosmos_engine::metrics::paper_tables::render(
            &rows,
            by,
            paired.as_ref().map(|(k, p)| (k.as_str(), p.as_slice())),
        ),
        ReportFormat::Csv => table::render_csv(&rows),
    };
    let out = match (&paired, format) {
        (Some((key, pairs)), ReportFormat::Table | ReportFormat::Markdown) => {
            out + &cosmos_engine::metrics::paired::render(
                key,
                pairs,
                format == ReportFormat::Markdown,
                power,
            )
        }
        _ => out,
    };
    // The tables say it too: figures that leave files or lines out say so under them.
    let out = match format {
        ReportFormat::Table | ReportFormat::Markdown => {
            out + &passed_over(
                &unreadable,
                &skipped_lines,
                format == ReportFormat::Markdown,
            )
        }
        _ => out,
    };
    out!("{}", inert(&out));
    Ok(ExitCode::SUCCESS)
}

/// What the figures leave out, for under a table: files passed over (unreadable, or no run),
/// lines skipped.
fn passed_over(unreadable: &[String], skipped_lines: &[String], markdown: bool) -> String {
    if unreadable.is_empty() && skipped_lines.is_empty() {
        return String::new();
    }
    let bullet = if markdown { "- " } else { "  " };
    let mut out = format!(
        "\n{}Left out of these figures{}: {} file(s) passed over, {} line(s) skipped\n",
        if markdown { "**" } else { "" },
        if markdown { "**" } else { "" },
        unreadable.len(),
        skipped_lines.len()
    );
    for what in unreadable.iter().chain(skipped_lines) {
        out.push_str(&format!("{bullet}{what}\n"));
    }
    out
}
