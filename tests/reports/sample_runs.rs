//! The sample runs are today's: each file in `sample_runs/` holds every event the current agent
//! of its kind always writes, and totals of the current metrics version, so the first thing a
//! newcomer opens shows this program and not an older one. When an agent starts writing a new
//! event or the metrics change meaning, this fails until the runs are made again
//! (`scripts/make-sample-runs.sh`). And the figures `sample_runs/README.md` quotes are
//! `cosmos report`'s on those files.

use crate::common;

use std::path::{Path, PathBuf};

use cosmos_engine::metrics::run::METRICS_VERSION;
use cosmos_trajectory::event::{AgentKind, EventBody};
use cosmos_trajectory::run::Run;

/// Every trajectory under `sample_runs/`, its sweep's included.
fn sample_runs() -> Vec<PathBuf> {
    // As every reader of run folders lists them (kept end states, `*.state/`, are no runs).
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs");
    let mut files = cosmos_trajectory::reader::collect_files(&[folder])
        .unwrap()
        .files;
    files.sort();
    assert!(files.len() >= 10, "the sample runs are missing: {files:?}");
    files
}

/// What is wrong with one sample run, as today's agents write runs.
fn staleness(path: &Path) -> Vec<String> {
    let run = Run::open(path).unwrap();
    let events: Vec<EventBody> = run.all_events().into_iter().map(|e| e.body).collect();
    let mut wrong = Vec::new();
    let Some(EventBody::RunFinished { ending, totals, .. }) = events
        .iter()
        .rev()
        .find(|e| matches!(e, EventBody::RunFinished { .. }))
    else {
        return vec!["no run_finished".into()];
    };
    if totals.metrics_version != METRICS_VERSION {
        wrong.push(format!(
            "totals of metrics version {}, not {METRICS_VERSION}",
            totals.metrics_version
        ));
    }
    let kind = run.header.agent.kind;
    if kind == AgentKind::WmEval {
        return wrong;
    }
    if ending.is_none() {
        wrong.push("run_finished records no ending".into());
    }
    // A proxy session's phases are its client's, of which cosmos knows nothing.
    if kind != AgentKind::External && !events.iter().any(|e| matches!(e, EventBody::Phase { .. })) {
        wrong.push("no phase event".into());
    }
    let plans: Vec<&EventBody> = events
        .iter()
        .filter(|e| matches!(e, EventBody::PlanSelected { .. }))
        .collect();
    match kind {
        AgentKind::Spiral => {
            let roots = events
                .iter()
                .filter(|e| matches!(e, EventBody::NodeAdded { action: None, .. }))
                .count();
            let finished = events
                .iter()
                .filter(|e| matches!(e, EventBody::SearchFinished { .. }))
                .count();
            if roots != finished {
                wrong.push(format!("{roots} searches but {finished} search_finished"));
            }
            for plan in plans {
                if let EventBody::PlanSelected { choice: None, .. } = plan {
                    wrong.push("a plan_selected without the choice it made".into());
                }
            }
        }
        AgentKind::PlanExec if plans.is_empty() => wrong.push("no plan_selected".into()),
        _ => {}
    }
    wrong
}

/// Sample runs known to be older than the program, not made again yet (a 2-core machine makes
/// the whole set in hours; sample_runs/README.md says which and why). The list may only
/// shrink: a run that is stale and not here fails the test, and so does one listed here that
/// is gone or no longer stale.
const STILL_TO_REMAKE: &[&str] = &[];

#[test]
fn every_sample_run_holds_what_todays_agents_write() {
    let mut stale = Vec::new();
    let mut listed_but_current = Vec::new();
    for path in sample_runs() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let wrong = staleness(&path);
        match (wrong.is_empty(), STILL_TO_REMAKE.contains(&name.as_str())) {
            (false, false) => stale.extend(
                wrong
                    .into_iter()
                    .map(|why| format!("{}: {why}", path.display())),
            ),
            (true, true) => listed_but_current.push(name),
            _ => {}
        }
    }
    assert!(
        stale.is_empty(),
        "sample runs older than the program (make them again with scripts/make-sample-runs.sh):\n{}",
        stale.join("\n")
    );
    assert!(
        listed_but_current.is_empty(),
        "made again, so no longer to remake: take them off STILL_TO_REMAKE: {listed_but_current:?}"
    );
    let present: Vec<String> = sample_runs()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    for listed in STILL_TO_REMAKE {
        assert!(
            present.iter().any(|p| p == listed),
            "{listed} is on STILL_TO_REMAKE but not in sample_runs/"
        );
    }
}

#[test]
fn the_staleness_check_finds_an_older_file() {
    // A run written before searches recorded their end and their plan's choice.
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.jsonl");
    let header = serde_json::json!({"format":"mcp-cosmos-trajectory","version":1,"kind":"run_started","run_id":"r","started_at":"2026-11-30T12:00:00Z","tool_version":"0.1.0","task":{"id":"t","request":"r"},"agent":{"kind":"spiral","settings":{}},"planner":{"base_url":"x","model":"m"},"servers":[],"tools":[]});
    let lines = [
        header.to_string(),
        r#"{"seq":1,"t_ms":1,"kind":"phase","phase":"plan"}"#.to_string(),
        r#"{"seq":2,"t_ms":2,"kind":"node_added","node":0,"parent":null,"depth":0,"action":null}"#
            .to_string(),
        r#"{"seq":3,"t_ms":3,"kind":"plan_selected","nodes":[],"rule":"best_mean"}"#.to_string(),
        r#"{"seq":4,"t_ms":4,"kind":"run_finished","status":"completed","totals":{"events":4,"tool_calls":0,"tool_errors":0,"nodes":1,"llm_calls":0,"tokens":0,"wall_ms":4}}"#.to_string(),
    ];
    std::fs::write(&old, lines.join("\n") + "\n").unwrap();
    let wrong = staleness(&old);
    for expected in [
        "metrics version 0",
        "no ending",
        "1 searches but 0 search_finished",
        "without the choice",
    ] {
        assert!(
            wrong.iter().any(|w| w.contains(expected)),
            "{expected}: {wrong:?}"
        );
    }
}

/// The report block `sample_runs/README.md` quotes, between its markers.
fn quoted_report() -> String {
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/README.md"),
    )
    .unwrap();
    let start = "<!-- cosmos report sample_runs: begin -->\n```\n";
    let from = readme.find(start).expect("the README quotes the report") + start.len();
    let to = from
        + readme[from..]
            .find("```\n<!-- cosmos report sample_runs: end -->")
            .unwrap();
    readme[from..to].to_string()
}

/// What `cosmos report ARGS` prints in the repository's root (no colour); it must succeed.
fn report(args: &[&str]) -> String {
    let args: Vec<&str> = std::iter::once("report")
        .chain(args.iter().copied())
        .collect();
    common::cosmos_stdout(&args)
}

#[test]
fn the_readme_quotes_the_reports_figures() {
    let report = report(&["sample_runs"]);
    assert_eq!(
        quoted_report(),
        report,
        "sample_runs/README.md quotes other figures than `cosmos report sample_runs` gives"
    );
}

/// `sample_runs/sweep-report.md` is what the command `sample_runs/README.md` gives for it prints
/// today.
#[test]
fn the_sweep_report_is_the_reports_output() {
    let printed = report(&[
        "sample_runs/sweep",
        "--baseline",
        "react",
        "--format",
        "markdown",
        "--power",
    ]);
    let written = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/sweep-report.md"),
    )
    .unwrap();
    assert_eq!(
        written, printed,
        "sample_runs/sweep-report.md is not what the report gives today (make it again with the README's command)"
    );
}

/// Truth IV: endings in one rule. The runs `report` counts clean in its `runs (N clean)` are
/// the runs the browser draws as clean finishes (`Totals::clean`), never "ok" beside runs the
/// browser marks `⊣steps`.
#[test]
fn the_report_counts_clean_the_runs_the_browser_draws_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc: serde_json::Value = serde_json::from_str(&common::cosmos_stdout(&[
        "report",
        "sample_runs",
        "--format",
        "json",
    ]))
    .unwrap();
    let reported: u64 = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["clean"].as_u64().unwrap())
        .sum();
    let listed = cosmos_trajectory::listing::list_runs(&[root.join("sample_runs")]).unwrap();
    let runs: Vec<_> = listed.iter().filter(|r| !r.is_evaluation()).collect();
    assert_eq!(
        runs.len() as u64,
        doc["runs"].as_u64().unwrap(),
        "the same runs"
    );
    let drawn_clean = runs.iter().filter(|r| r.clean()).count() as u64;
    assert_eq!(reported, drawn_clean);
    assert!(
        drawn_clean < runs.len() as u64,
        "some sample runs end marked (the step limit): the rule has something to tell"
    );
}

/// World to real: every group of planners' runs has `w2r`, a share in [0, 1]; a ReAct group
/// (whose calls rest on no prediction) has none.
#[test]
fn planner_groups_have_world_to_real_and_react_groups_none() {
    let doc: serde_json::Value = serde_json::from_str(&common::cosmos_stdout(&[
        "report",
        "sample_runs",
        "--format",
        "json",
    ]))
    .unwrap();
    let groups = doc["groups"].as_array().unwrap();
    let mut planners = 0;
    for g in groups {
        let key = g["key"].as_str().unwrap();
        if key.starts_with("react") {
            assert!(g.get("w2r").is_none_or(|w| w.is_null()), "{key}: {g}");
        } else if key.starts_with("plan") || key.starts_with("spiral") {
            let mean = g["w2r"]["mean"]
                .as_f64()
                .unwrap_or_else(|| panic!("{key}: {g}"));
            assert!((0.0..=1.0).contains(&mean), "{key}: {mean}");
            planners += 1;
        }
    }
    assert!(planners >= 4, "{planners} planner groups");
}
