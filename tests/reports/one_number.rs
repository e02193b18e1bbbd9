//! One number everywhere: for every sample run (written by older metrics versions, so their
//! stored totals are stale) and for hand-made and generated runs (failures, rejections, an
//! unknown tool, no calls, revisions, a crash, a judgement appended), the value of every
//! metric each view shows equals `cosmos report --format json --per-run`'s: the run browser
//! (its totals, recounted when stale), the run view at its end, compare, the sweep matrix's
//! finished cells (same recount, in `cli/sweep/disk.rs`'s test) and the report.

use crate::common;

use std::path::{Path, PathBuf};

use cosmos_app::tui::Action;
use cosmos_app::tui::CompareView;
use cosmos_app::tui::RecountJob;
use cosmos_app::tui::RunView;
use cosmos_app::tui::perform;
use cosmos_app::tui::{View, Work};
use cosmos_engine::metrics::run::{METRICS_VERSION, RunMetrics};
use cosmos_trajectory::event::{
    AgentKind, DecisionProblem, DimensionScore, Ending, EventBody, JudgeScores, Observation, Phase,
    Role, RunStatus, ToolInfo, ToolSchema, Totals,
};
use cosmos_trajectory::listing::RunSummary;
use cosmos_trajectory::run::Run;
use ratatui::layout::Rect;
use serde_json::{Value, json};

/// A ReAct run whose planner named no tool once, called a tool no server offers, and finished
/// after a failed call on a second server; then a judge scored it (appended after the end).
fn react_with_everything() -> Run {
    let mut header = common::header("mixed", AgentKind::React, None);
    header.tools.push(ToolInfo {
        name: "units:convert".into(),
        description: String::new(),
        input_schema: ToolSchema::new(json!({})),
        ..Default::default()
    });
    let args = json!({"source_timezone": "UTC", "time": "10:00", "target_timezone": "UTC"});
    let tool = |tool: &str, server: Option<&str>, is_error: bool, step| EventBody::ToolCalled {
        step,
        tool: tool.into(),
        server: server.map(str::to_string),
        arguments: Box::new(args.clone()),
        result: Observation {
            text: "r".into(),
            is_error,
            ..Default::default()
        },
        latency_ms: 5,
        node: None,
        error: None,
        origin: None,
        state_change: None,
    };
    let llm = |role| EventBody::LlmCall {
        role,
        model: "m".into(),
        prompt_tokens: 100,
        completion_tokens: 10,
        latency_ms: 3,
        tokens_estimated: false,
        error: None,
        messages: None,
    };
    let bodies = vec![
        EventBody::Phase { phase: Phase::Plan },
        llm(Role::Planner),
        EventBody::DecisionRejected {
            problem: DecisionProblem::NoTool,
            detail: "no tool".into(),
            reply: json!({"action": "call"}),
        },
        llm(Role::Planner),
        tool("nowhere:nothing", None, true, 1),
        llm(Role::Planner),
        tool("time:convert_time", Some("time"), false, 2),
        llm(Role::Planner),
        tool("units:convert", Some("units"), true, 3),
        // As an older ReAct wrote its step limit (no ending in run_finished).
        EventBody::Error {
            source: cosmos_trajectory::event::ErrorSource::Agent,
            name: None,
            message: "step limit of 4 reached".into(),
            stderr_tail: None,
            step: None,
        },
        EventBody::Phase {
            phase: Phase::Answer,
        },
        EventBody::Answer {
            text: "done".into(),
        },
        common::completed(),
        llm(Role::Judge),
        EventBody::JudgeScored {
            model: "judge".into(),
            scores: Box::new(JudgeScores {
                task_fulfillment: six(),
                grounding: six(),
                tool_appropriateness: six(),
                parameter_accuracy: six(),
                dependency_awareness: six(),
                parallelism_efficiency: six(),
            }),
            judging: None,
        },
    ];
    common::run_of("mixed.jsonl", header, bodies)
}

fn six() -> DimensionScore {
    DimensionScore {
        score: 6.0,
        reason: String::new(),
    }
}

/// A run that made no call at all.
fn no_calls() -> Run {
    let header = common::header("quiet", AgentKind::React, None);
    let bodies = vec![
        EventBody::Phase { phase: Phase::Plan },
        EventBody::Answer {
            text: "nothing to do".into(),
        },
        EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: Some(Ending::PlannerFinished),
            totals: Totals::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        },
    ];
    common::run_of("quiet.jsonl", header, bodies)
}

fn copy_jsonl(from: &Path, to: &Path) {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for (i, path) in files.iter().enumerate() {
        let copy = to.join(path.file_name().unwrap());
        if i % 2 == 0 {
            std::fs::copy(path, &copy).unwrap();
            continue;
        }
        // Every other one as an older version wrote it: totals of metrics version 0 (and a
        // call count no version would give), which every view must compute again.
        let text = std::fs::read_to_string(path).unwrap();
        let (body, last) = text.trim_end().rsplit_once('\n').unwrap();
        let mut finished: Value = serde_json::from_str(last).unwrap();
        if finished["kind"] == "run_finished" && finished["totals"].is_object() {
            finished["totals"]["metrics_version"] = 0.into();
            finished["totals"]["tool_calls"] = 999.into();
            finished["totals"]["ending"] = Value::Null;
        }
        std::fs::write(&copy, format!("{body}\n{finished}\n")).unwrap();
    }
}

/// Every file the report reads, in a temporary folder.
fn runs_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_jsonl(&root.join("sample_runs"), dir.path());
    copy_jsonl(&root.join("sample_runs/sweep"), dir.path());
    let mut made = common::three_runs();
    made.extend([
        common::plan_fails_run(),
        common::revised_run(),
        plan_exec_with_every_failure(),
        common::crashed_run(),
        common::big_run(300),
        react_with_everything(),
        no_calls(),
    ]);
    for (i, run) in made.iter().enumerate() {
        let name = format!(
            "made-{i}-{}",
            run.path.file_name().unwrap().to_string_lossy()
        );
        common::write_run(run, &dir.path().join(name));
    }
    dir
}

/// The report's per-run metrics, by file name.
fn report(dir: &Path) -> Vec<(PathBuf, Value)> {
    common::reported_per_run(dir)
}

/// The metrics a run's `run_finished` totals hold, as the report gives them.
fn totals_of(r: &Value) -> Totals {
    let m = &r["metrics"];
    Totals {
        events: 0,
        tool_calls: m["tool_calls"].as_u64().unwrap(),
        tool_errors: r["tool_errors"].as_u64().unwrap(),
        nodes: m["nodes"].as_u64().unwrap(),
        llm_calls: 0,
        tokens: r["tokens"].as_u64().unwrap(),
        wall_ms: m["wall_ms"].as_u64().unwrap(),
        fidelity: m["fidelity"]["score"].as_f64(),
        rejected_decisions: m["rejected_decisions"].as_u64().unwrap(),
        simulated_answers: m["simulated_answers"].as_u64().unwrap(),
        source_failed: m["source_failed"].as_u64().unwrap_or(0),
        ending: serde_json::from_value(m["ending"].clone()).unwrap(),
        metrics_version: METRICS_VERSION,
        leader: None,
    }
}

/// What the browser shows of a run: its stored totals when current, else the recount the
/// app starts for it.
fn browser_totals(path: &Path) -> (Totals, Option<Ending>) {
    let mut summary = RunSummary::read(path);
    let stored = summary.finished.clone().expect("a finished run");
    if stored.totals.metrics_version != METRICS_VERSION {
        let recount = RecountJob::new(vec![path.to_path_buf()]);
        let answers = perform(1, Work::Job(Box::new(recount)));
        match answers.as_slice() {
            [Action::Recounted(_, recounts)] if recounts.len() == 1 => {
                summary.recounted(&recounts[0])
            }
            other => panic!("no recount for {}: {other:?}", path.display()),
        }
    }
    let f = summary.finished.unwrap();
    let ending = f.totals.ending;
    (f.totals, ending)
}

fn same(a: &RunMetrics, r: &Value, view: &str, path: &Path) {
    let got = serde_json::to_value(a).unwrap();
    assert_eq!(got, r["metrics"], "{view} of {}", path.display());
}

#[test]
fn every_view_shows_the_reports_value() {
    let dir = runs_folder();
    let per_run = report(dir.path());
    let stale = per_run
        .iter()
        .filter(|(p, _)| {
            RunSummary::read(p)
                .finished
                .is_some_and(|f| f.totals.metrics_version != METRICS_VERSION)
        })
        .count();
    assert!(stale >= 5, "older totals are read as stale: {stale}");
    let area = Rect::new(0, 0, 200, 60);
    let mut opened = Vec::new();
    for (path, r) in &per_run {
        // The browser (only finished runs have totals to show).
        if RunSummary::read(path).finished.is_some() {
            let (shown, ending) = browser_totals(path);
            let want = totals_of(r);
            assert_eq!(
                serde_json::to_value(ending).unwrap(),
                r["metrics"]["ending"],
                "browser's ending of {}",
                path.display()
            );
            assert_eq!(
                Totals {
                    events: 0,
                    llm_calls: 0,
                    ..shown
                },
                want,
                "browser of {}",
                path.display()
            );
        }
        // The run view at its end.
        let run = Run::open(path).unwrap();
        let mut view = RunView::new(run, area);
        view.settle();
        same(view.metrics(), r, "run view", path);
        opened.push(Run::open(path).unwrap());
    }
    // Compare, two runs at a time (every run appears in some pair).
    for (pair, runs) in opened.chunks(2).zip(per_run.chunks(2)) {
        if pair.len() < 2 {
            continue;
        }
        let compare = CompareView::new(pair, (200, 60));
        for (metrics, (path, r)) in compare.metrics().iter().zip(runs) {
            same(metrics, r, "compare", path);
        }
    }
}

#[test]
fn the_hand_made_runs_values_are_mcp_benchs_worked_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    common::write_run(&react_with_everything(), &dir.path().join("mixed.jsonl"));
    common::write_run(&no_calls(), &dir.path().join("quiet.jsonl"));
    let per_run = report(dir.path());
    let by = |name: &str| {
        per_run
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .map(|(_, r)| r["metrics"].clone())
            .unwrap()
    };
    // MCP-Bench on mixed: three executions (the unknown tool is one, failed, with no
    // server); valid names 2/3; success 1/3; compliance 2/2 (empty schemas accept all);
    // failures among valid calls 1/2; planned tools: 3 calls with a tool and 1 without:
    // 3/4; two servers called: cross-server.
    let m = by("mixed.jsonl");
    assert_eq!(m["tool_calls"], 3);
    assert_eq!(m["valid_tool_name_rate"].as_f64(), Some(2.0 / 3.0));
    assert_eq!(m["tool_call_success_rate"].as_f64(), Some(1.0 / 3.0));
    assert_eq!(m["input_schema_compliance"].as_f64(), Some(1.0));
    assert_eq!(m["valid_call_failure_rate"].as_f64(), Some(0.5));
    assert_eq!(m["planning_json_compliance"].as_f64(), Some(0.75));
    assert_eq!(m["server_count"], 2);
    assert_eq!(m["judge"]["overall"].as_f64(), Some(6.0));
    // An older file's ending is read from its agent error: the step limit.
    assert_eq!(m["ending"], "step_limit");
    // MCP-Bench with no calls: the call rates are undefined (left out of averages),
    // planning compliance is 1.0, no servers.
    let q = by("quiet.jsonl");
    assert_eq!(q["tool_calls"], 0);
    for key in [
        "tool_call_success_rate",
        "valid_tool_name_rate",
        "input_schema_compliance",
        "valid_call_failure_rate",
    ] {
        assert!(q[key].is_null(), "{key}: {q}");
    }
    assert_eq!(q["planning_json_compliance"].as_f64(), Some(1.0));
    assert_eq!(q["server_count"], 0);
    assert_eq!(
        q["ending"], "planner_finished",
        "as run_finished recorded it"
    );
}

/// A ReAct-Plan-Exec run whose plan met every kind of failure MCP-Bench counts: a tool no
/// server offers, arguments of the wrong type (the server refuses them), a call cut off by its
/// timeout, and one success; and a planner reply with no tool.
fn plan_exec_with_every_failure() -> Run {
    let header = common::header("failures", AgentKind::PlanExec, Some("memory"));
    let good = json!({"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Tokyo"});
    let wrong = json!({"source_timezone": "UTC", "time": 9, "target_timezone": "Asia/Tokyo"});
    let calls = [
        ("nowhere:nothing", json!({}), None, true, None),
        ("time:convert_time", wrong, Some("time"), true, None),
        (
            "time:convert_time",
            good.clone(),
            None,
            true,
            Some("timed out after 60s"),
        ),
        ("time:convert_time", good, Some("time"), false, None),
    ];
    let mut bodies = vec![
        EventBody::Phase { phase: Phase::Plan },
        EventBody::root(),
        EventBody::DecisionRejected {
            problem: DecisionProblem::NoTool,
            detail: "no tool".into(),
            reply: json!({"action": "call"}),
        },
    ];
    for (i, (tool, arguments, _, _, _)) in calls.iter().enumerate() {
        bodies.push(EventBody::NodeAdded {
            node: i as u64 + 1,
            parent: Some(i as u64),
            depth: i as u32 + 1,
            action: Some(cosmos_trajectory::event::Action::ToolCall {
                tool: tool.to_string(),
                arguments: arguments.clone(),
            }),
            prior: None,
        });
    }
    bodies.push(EventBody::Phase {
        phase: Phase::Execute,
    });
    for (i, (tool, arguments, server, is_error, error)) in calls.into_iter().enumerate() {
        bodies.push(EventBody::ToolCalled {
            step: i as u64 + 1,
            tool: tool.into(),
            server: server.map(str::to_string),
            arguments: Box::new(arguments),
            result: Observation {
                text: "r".into(),
                is_error,
                ..Default::default()
            },
            latency_ms: 5,
            node: Some(i as u64 + 1),
            error: error.map(str::to_string),
            origin: None,
            state_change: None,
        });
    }
    bodies.push(EventBody::Answer { text: "?".into() });
    bodies.push(common::completed());
    common::run_of("failures.jsonl", header, bodies)
}

#[test]
fn plan_execs_failures_are_counted_as_mcp_bench_counts_them_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    common::write_run(
        &plan_exec_with_every_failure(),
        &dir.path().join("failures.jsonl"),
    );
    let per_run = report(dir.path());
    let m = &per_run[0].1["metrics"];
    // Four executions. Valid names: 3 of 4 (the unknown tool). Successes: 1 of 4. Schema
    // compliance among the 3 valid: the wrong type fails, the timed-out call's arguments are
    // fine: 2/3. Valid calls that failed: the wrong type and the timeout, 2/3. One server (the
    // timed-out call counts under its tool's server, as MCP-Bench's exception path does).
    // Planned: 4 calls named a tool, 1 reply did not: 4/5.
    assert_eq!(m["tool_calls"], 4);
    assert_eq!(m["valid_tool_name_rate"].as_f64(), Some(0.75));
    assert_eq!(m["tool_call_success_rate"].as_f64(), Some(0.25));
    assert_eq!(m["input_schema_compliance"].as_f64(), Some(2.0 / 3.0));
    assert_eq!(m["valid_call_failure_rate"].as_f64(), Some(2.0 / 3.0));
    assert_eq!(m["server_count"], 1);
    assert_eq!(m["planning_json_compliance"].as_f64(), Some(0.8));
}
