//! Hand-built runs for the explorer's tests: small, deterministic, each showing one thing.
#![allow(dead_code)]

pub mod tmux;

use chrono::{TimeZone, Utc};
use cosmos_trajectory::event::{
    Action, AgentInfo, AgentKind, Event, EventBody, Header, ModelInfo, Observation, Phase,
    PredictionRecord, Role, RunStatus, TaskInfo, ToolInfo, Totals, Verdict, WorldModelInfo,
};
use cosmos_trajectory::run::Run;
use cosmos_trajectory::synthetic::{self, Spec};
use serde_json::json;

/// A header with a fixed start time, so snapshots do not change.
pub fn header(task: &str, agent: AgentKind, world_model: Option<&str>) -> Header {
    // Each header a run of its own: two files of one run_id are one run (a copy).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut h = Header::new(
        format!("{task}-{}-{n}", agent.as_str()),
        TaskInfo {
            id: task.into(),
            request: "Convert 9:00 Paris time to Tokyo, then to New York.".into(),
            reference_call_count: Some(2),
            ..Default::default()
        },
        AgentInfo {
            kind: agent,
            settings: Default::default(),
        },
        ModelInfo {
            model: "qwen2.5-coder-1.5b".into(),
            base_url: None,
        },
    );
    h.started_at = Some(Utc.with_ymd_and_hms(2026, 11, 29, 15, 0, 0).unwrap());
    h.world_model = world_model.map(|w| WorldModelInfo {
        name: w.into(),
        details: Default::default(),
    });
    h.tools = vec![ToolInfo {
        name: "time:convert_time".into(),
        description: "Convert time between timezones".into(),
        input_schema: cosmos_trajectory::event::ToolSchema::new(
            json!({"type": "object", "properties": {"source_timezone": {"type": "string"}, "time": {"type": "string"}, "target_timezone": {"type": "string"}}, "required": ["source_timezone", "time", "target_timezone"]}),
        ),
        ..Default::default()
    }];
    h
}

/// Builds a run from bodies, numbering events and spacing them 100 ms apart.
pub fn run_of(path: &str, header: Header, bodies: Vec<EventBody>) -> Run {
    let mut run = Run::new(path.into(), header);
    for (i, body) in bodies.into_iter().enumerate() {
        run.push(Event {
            seq: i as u64 + 1,
            t_ms: (i as u64 + 1) * 100,
            body,
        });
    }
    run
}

fn call(target: &str) -> Action {
    Action::ToolCall {
        tool: "time:convert_time".into(),
        arguments: json!({"source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": target}),
    }
}

fn obs(text: &str, is_error: bool) -> Observation {
    Observation::of_text(text, is_error)
}

/// ReAct-Plan-Exec: a two-step plan whose second real call fails although the world model
/// predicted success.
pub fn plan_fails_bodies(world_model: &str, second_target: &str) -> Vec<EventBody> {
    let llm = |role| EventBody::LlmCall {
        role,
        model: "qwen2.5-coder-1.5b".into(),
        prompt_tokens: 1200,
        completion_tokens: 80,
        tokens_estimated: false,
        latency_ms: 4000,
        error: None,
        messages: None,
    };
    let tokyo = r#"{"source":{"timezone":"Europe/Paris","datetime":"2026-11-29T09:00:00+01:00"},"target":{"timezone":"Asia/Tokyo","datetime":"2026-11-29T17:00:00+09:00"},"time_difference":"+8.0h"}"#;
    let tokyo_sim = r#"{"source":{"timezone":"Europe/Paris","datetime":"2026-11-29T09:00:00+01:00"},"target":{"timezone":"Asia/Tokyo","datetime":"2026-11-29T16:00:00+09:00"},"time_difference":"+7.0h"}"#;
    vec![
        EventBody::Phase { phase: Phase::Plan },
        EventBody::root(),
        llm(Role::Planner),
        EventBody::NodeAdded {
            node: 1,
            parent: Some(0),
            depth: 1,
            action: Some(call("Asia/Tokyo")),
            prior: None,
        },
        EventBody::NodeSimulated {
            node: 1,
            route: None,
            prediction: PredictionRecord {
                world_model: world_model.into(),
                observation: obs(tokyo_sim, false),
                latency_ms: 3000,
                tokens: Some(900),
                confidence: None,
                confidence_source: None,
                members: Vec::new(),
                predicted_state: None,
            },
        },
        llm(Role::WorldModel),
        llm(Role::Planner),
        EventBody::NodeAdded {
            node: 2,
            parent: Some(1),
            depth: 2,
            action: Some(call(second_target)),
            prior: None,
        },
        EventBody::NodeSimulated {
            node: 2,
            route: None,
            prediction: PredictionRecord {
                world_model: world_model.into(),
                observation: obs(
                    r#"{"target":{"timezone":"America/New_York","datetime":"2026-11-29T03:00:00-05:00"}}"#,
                    false,
                ),
                latency_ms: 3000,
                tokens: Some(900),
                confidence: None,
                confidence_source: None,
                members: Vec::new(),
                predicted_state: None,
            },
        },
        llm(Role::WorldModel),
        llm(Role::Planner),
        EventBody::NodeAdded {
            node: 3,
            parent: Some(2),
            depth: 3,
            action: Some(Action::Finish { answer: None }),
            prior: None,
        },
        EventBody::PlanSelected {
            nodes: vec![1, 2, 3],
            rule: "chain".into(),
            choice: None,
            risky: Vec::new(),
        },
        EventBody::Phase {
            phase: Phase::Execute,
        },
        EventBody::ToolCalled {
            step: 1,
            tool: "time:convert_time".into(),
            server: Some("time".into()),
            arguments: Box::new(
                json!({"source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": "Asia/Tokyo"}),
            ),
            result: obs(tokyo, false),
            latency_ms: 15,
            node: Some(1),
            error: None,
            origin: None,
            state_change: None,
        },
        EventBody::ToolCalled {
            step: 2,
            tool: "time:convert_time".into(),
            server: Some("time".into()),
            arguments: Box::new(
                json!({"source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": second_target}),
            ),
            result: obs(
                &format!("Error executing tool convert_time: Invalid timezone: '{second_target}'"),
                true,
            ),
            latency_ms: 12,
            node: Some(2),
            error: None,
            origin: None,
            state_change: None,
        },
        EventBody::Phase {
            phase: Phase::Answer,
        },
        llm(Role::Summarizer),
        EventBody::Answer {
            text: "It is 17:00 in Tokyo; New York could not be converted.".into(),
        },
        EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: None,
            totals: Totals::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        },
    ]
}

/// The plan-fails run.
pub fn plan_fails_run() -> Run {
    run_of(
        "runs/plan-fails.jsonl",
        header("time_mcp_001", AgentKind::PlanExec, Some("llm")),
        plan_fails_bodies("llm", "US/NewYork"),
    )
}

/// SPIRAL-Exec with execution-time revision: the plan's first real call fails (the world
/// model predicted success), a second search hangs under the failed node, and its plan works.
pub fn revised_run() -> Run {
    let node = |node, parent, depth, action| EventBody::NodeAdded {
        node,
        parent,
        depth,
        action,
        prior: None,
    };
    let simulated = |node, text: &str| EventBody::NodeSimulated {
        node,
        route: None,
        prediction: PredictionRecord {
            world_model: "memory".into(),
            observation: obs(text, false),
            latency_ms: 1,
            tokens: None,
            confidence: None,
            confidence_source: None,
            members: Vec::new(),
            predicted_state: None,
        },
    };
    let evaluated = |node, verdict, reward| EventBody::NodeEvaluated {
        node,
        verdict,
        base_reward: cosmos_engine::agent::base_reward(verdict),
        critic_reward: None,
        critic_reason: None,
        reward,
        terminal: verdict != Verdict::Valid,
        horizon: None,
    };
    let backprop = |path: &[u64], value| EventBody::Backpropagated {
        path: path.to_vec(),
        value,
    };
    let called = |step, target: &str, node, result: &str, is_error| EventBody::ToolCalled {
        step,
        tool: "time:convert_time".into(),
        server: Some("time".into()),
        arguments: Box::new(
            json!({"source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": target}),
        ),
        result: obs(result, is_error),
        latency_ms: 14,
        node: Some(node),
        error: None,
        origin: None,
        state_change: None,
    };
    let finish = || Some(Action::Finish { answer: None });
    let predicted = r#"{"target":{"datetime":"2026-11-29T17:00:00"}}"#;
    let bodies = vec![
        EventBody::Phase { phase: Phase::Plan },
        node(0, None, 0, None),
        node(1, Some(0), 1, Some(call("Tokio"))),
        simulated(1, predicted),
        evaluated(1, Verdict::Valid, 0.1),
        backprop(&[0, 1], 0.1),
        node(2, Some(1), 2, finish()),
        evaluated(2, Verdict::Finish, 1.0),
        backprop(&[0, 1, 2], 1.0),
        EventBody::PlanSelected {
            nodes: vec![1, 2],
            rule: "best_mean".into(),
            choice: None,
            risky: Vec::new(),
        },
        EventBody::Phase {
            phase: Phase::Execute,
        },
        called(
            1,
            "Tokio",
            1,
            "Error executing tool convert_time: Invalid timezone: 'Tokio'",
            true,
        ),
        EventBody::Phase { phase: Phase::Plan },
        node(3, Some(1), 2, None),
        node(4, Some(3), 3, Some(call("Asia/Tokyo"))),
        simulated(4, predicted),
        evaluated(4, Verdict::Valid, 0.1),
        backprop(&[3, 4], 0.1),
        node(
            5,
            Some(4),
            4,
            Some(Action::Finish {
                answer: Some("Tokyo: 17:00".into()),
            }),
        ),
        evaluated(5, Verdict::Finish, 1.0),
        backprop(&[3, 4, 5], 1.0),
        EventBody::PlanSelected {
            nodes: vec![1, 3, 4, 5],
            rule: "best_mean".into(),
            choice: None,
            risky: Vec::new(),
        },
        EventBody::Phase {
            phase: Phase::Execute,
        },
        called(
            2,
            "Asia/Tokyo",
            4,
            r#"{"target":{"timezone":"Asia/Tokyo","datetime":"2026-11-29T17:00:00+09:00"}}"#,
            false,
        ),
        EventBody::Phase {
            phase: Phase::Answer,
        },
        EventBody::Answer {
            text: "It is 17:00 in Tokyo.".into(),
        },
        EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: None,
            totals: Totals::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        },
    ];
    run_of(
        "runs/revised.jsonl",
        header("time_mcp_001", AgentKind::Spiral, Some("memory")),
        bodies,
    )
}

/// A SPIRAL run that crashed: it stops mid-search, without `run_finished`.
pub fn crashed_run() -> Run {
    let spec = Spec {
        nodes: 40,
        branching: 3,
        padding: 0,
        seed: 11,
    };
    let mut bodies: Vec<EventBody> = synthetic::events(&spec)
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    bodies.truncate(bodies.len() * 2 / 3);
    let mut h = header("time_mcp_002", AgentKind::Spiral, Some("memory"));
    h.tools = synthetic::header(&spec).tools;
    run_of("runs/crashed.jsonl", h, bodies)
}

/// A synthetic run with `nodes` nodes and a fixed start time.
pub fn big_run(nodes: usize) -> Run {
    let spec = Spec {
        nodes,
        branching: 3,
        padding: 0,
        seed: 5,
    };
    let mut h = synthetic::header(&spec);
    h.started_at = Some(Utc.with_ymd_and_hms(2026, 11, 29, 15, 0, 0).unwrap());
    let mut run = Run::new("runs/big.jsonl".into(), h);
    synthetic::push_events(&mut run, &spec);
    run
}

/// Three runs of one task: plan-exec with llm and memory world models, and ReAct.
pub fn three_runs() -> Vec<Run> {
    let react_bodies = vec![
        EventBody::Phase { phase: Phase::Plan },
        EventBody::ToolCalled {
            step: 1,
            tool: "time:convert_time".into(),
            server: Some("time".into()),
            arguments: Box::new(
                json!({"source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": "Asia/Tokyo"}),
            ),
            result: obs("{\"ok\":1}", false),
            latency_ms: 10,
            node: None,
            error: None,
            origin: None,
            state_change: None,
        },
        EventBody::ToolCalled {
            step: 2,
            tool: "time:get_current_time".into(),
            server: Some("time".into()),
            arguments: Box::new(json!({"timezone": "UTC"})),
            result: obs("{\"ok\":2}", false),
            latency_ms: 10,
            node: None,
            error: None,
            origin: None,
            state_change: None,
        },
        EventBody::ToolCalled {
            step: 3,
            tool: "time:convert_time".into(),
            server: Some("time".into()),
            arguments: Box::new(
                json!({"source_timezone": "Europe/Paris", "time": "09:00", "target_timezone": "America/New_York"}),
            ),
            result: obs("{\"ok\":3}", false),
            latency_ms: 10,
            node: None,
            error: None,
            origin: None,
            state_change: None,
        },
        EventBody::Answer {
            text: "done".into(),
        },
        EventBody::RunFinished {
            status: RunStatus::Completed,
            error: None,
            ending: None,
            totals: Totals::default(),
            end_digest: Default::default(),
            state_match: Default::default(),
        },
    ];
    vec![
        run_of(
            "runs/a.jsonl",
            header("time_mcp_001", AgentKind::PlanExec, Some("llm")),
            plan_fails_bodies("llm", "US/NewYork"),
        ),
        run_of(
            "runs/b.jsonl",
            header("time_mcp_001", AgentKind::PlanExec, Some("memory")),
            plan_fails_bodies("memory", "America/New_York"),
        ),
        run_of(
            "runs/c.jsonl",
            header("time_mcp_001", AgentKind::React, None),
            react_bodies,
        ),
    ]
}

/// A `run_finished` that completed (the writer fills its totals).
#[allow(dead_code)]
pub fn completed() -> EventBody {
    EventBody::RunFinished {
        status: RunStatus::Completed,
        error: None,
        ending: None,
        totals: Totals::default(),
        end_digest: Default::default(),
        state_match: Default::default(),
    }
}

/// Writes a run through the real writer (so the file is what `cosmos run` would write).
pub fn write_run(run: &Run, path: &std::path::Path) {
    use cosmos_trajectory::redact::Redactor;
    use cosmos_trajectory::writer::Writer;
    let mut w = Writer::create(
        path,
        &run.header,
        Redactor::new(),
        Some(cosmos_engine::metrics::run::RunAccumulator::tally(
            &run.header,
        )),
    )
    .unwrap();
    for e in &run.all_events() {
        w.write(e.t_ms, e.body.clone()).unwrap();
    }
}

/// The three hand-made runs written to `dir` through the real writer, as the browser lists them.
pub fn three_listed(dir: &std::path::Path) -> Vec<cosmos_trajectory::listing::RunSummary> {
    three_runs()
        .into_iter()
        .map(|run| {
            let path = dir.join(run.path.file_name().unwrap());
            write_run(&run, &path);
            cosmos_trajectory::listing::RunSummary::read(&path)
        })
        .collect()
}

/// Appends a note by "ana" to the run at `path` as the explorer does (`probe::annotate`), at
/// `t_ms`, on a node or an event (`seq`).
#[allow(dead_code)]
pub fn annotate(
    path: &std::path::Path,
    node: Option<u64>,
    event: Option<u64>,
    text: &str,
    t_ms: u64,
) {
    let note = EventBody::Annotation {
        node,
        event,
        text: text.to_string(),
        who: "ana".to_string(),
    };
    cosmos_engine::probe::annotate(path, note, t_ms, &Default::default()).unwrap();
}

/// The app's next frame, drawn on a TestBackend of its size, as text.
pub fn render(app: &mut cosmos_app::tui::App) -> String {
    app.settle();
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(app.size.0, app.size.1)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    terminal.backend().to_string()
}

/// What `cosmos ARGS` prints, run from the repository's root without colour; it must succeed.
pub fn cosmos_stdout(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `cosmos report FOLDER --format json --per-run`'s record of each run, with its path.
pub fn reported_per_run(folder: &std::path::Path) -> Vec<(std::path::PathBuf, serde_json::Value)> {
    let doc: serde_json::Value = serde_json::from_str(&cosmos_stdout(&[
        "report",
        folder.to_str().unwrap(),
        "--format",
        "json",
        "--per-run",
    ]))
    .unwrap();
    doc["per_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                std::path::PathBuf::from(r["path"].as_str().unwrap()),
                r.clone(),
            )
        })
        .collect()
}

/// An app showing `run` in the run view, on a terminal of `size` (its last row the status line).
pub fn run_app(run: Run, size: (u16, u16)) -> cosmos_app::tui::App {
    let view =
        cosmos_app::tui::RunView::new(run, ratatui::layout::Rect::new(0, 0, size.0, size.1 - 1));
    cosmos_app::tui::App::new(
        view,
        cosmos_app::tui::Keymap::default(),
        cosmos_app::tui::Theme::new(true),
        size,
    )
}
