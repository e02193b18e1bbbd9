//! wm-eval benchmark: prints figures, asserts nothing. `cargo bench --bench wm_eval`
//! (`-- --quick` for a tenth). 1,000 recorded calls simulated by 3 world models against an
//! OpenAI-compatible endpoint that answers in 200 ms (the tests' scripted server, a real HTTP
//! process), 8 at once: wall time against the ideal 3,000 × 0.2 s / 8 = 75 s; then the
//! world-model view's first frame and frame p99 over the file written.
//!
//! Then `traces` on 10^5 recorded conversions (10^4 with `--quick`) in 100 runs: the time to
//! read them into the store against `report`'s reading of the same files (MiB/s), and the time
//! to predict a call never recorded, first of its context (the rules fitted) and after (a
//! lookup): the target is well under a millisecond. `-- traces` runs that part alone.
//!
//! First, one long run on a sandboxed server (every call changes one field of its state) of
//! 10^4 and 10^5 calls (a tenth with `--quick`) evaluated with `memory`: time and peak memory,
//! where linear in the calls is the goal (each call's state is folded on from the one before).

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ms, pct, peak_mb, reset_peak, scale, time};
use cosmos_app::tui::Action;
use cosmos_app::tui::App;
use cosmos_app::tui::Theme;
use cosmos_app::tui::open_run;
use cosmos_app::tui::{Command as Key, Keymap};
use cosmos_engine::wm_eval::{EvalSpec, evaluate, recorded_calls};
use cosmos_engine::world_model::BuiltInOptions;
use cosmos_trajectory::event::{AgentKind, EventBody, Observation};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::synthetic::{self, Spec};
use cosmos_trajectory::writer::Writer;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use serde_json::json;

fn main() {
    traces(100_000 / scale());
    // `-- traces`: that part alone.
    if std::env::args().any(|a| a == "traces") {
        return;
    }
    for n in [10_000, 100_000] {
        long_run(n / scale());
    }
    let calls = 1_000 / scale();
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    // 20 runs of calls to two tools, the same shape a time server returns.
    for r in 0..20 {
        let mut header = synthetic::header(&Spec::default());
        header.synthetic = true;
        header.agent.kind = AgentKind::React;
        let mut w = Writer::create(
            &runs.join(format!("run-{r:02}.jsonl")),
            &header,
            Redactor::new(),
            None,
        )
        .unwrap();
        for i in 0..calls / 20 {
            let hour = (r * 7 + i) % 24;
            w.write(
                i as u64,
                EventBody::ToolCalled {
                    step: i as u64 + 1,
                    tool: format!("Time MCP:{}", if i % 3 == 0 { "get_current_time" } else { "convert_time" }),
                    server: None,
                    arguments: Box::new(json!({"time": format!("{hour:02}:00"), "target_timezone": "Asia/Tokyo"})),
                    result: Observation {
                        text: format!(r#"{{"timezone":"Asia/Tokyo","datetime":"2026-11-30T{hour:02}:00:00+09:00","is_dst":false}}"#),
                        is_error: i % 11 == 0,
                        ..Default::default()
                    },
                    latency_ms: 3,
                    node: None,
                    error: None,
                    origin: None,
                    state_change: None,
                },
            )
            .unwrap();
        }
    }

    // The scripted endpoint, answering every simulation after 200 ms.
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        json!({"rules": [{"when": "You simulate an MCP server", "delay_s": 0.2,
            "content": {"is_error": false, "content": "{\"timezone\":\"Asia/Tokyo\",\"datetime\":\"2026-11-30T09:00:00+09:00\",\"is_dst\":false}"}}]})
        .to_string(),
    )
    .unwrap();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/scripted_llm.py");
    let mut child = Command::new("python3")
        .arg(&server)
        .arg(&script)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the scripted endpoint");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port: u16 = first.trim().trim_start_matches("PORT ").parse().unwrap();
    let config = dir.path().join("cosmos.toml");
    let mut toml = String::new();
    for name in ["wm-a", "wm-b", "wm-c"] {
        toml.push_str(&format!(
            "[world_models.{name}]\nkind = \"llm\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"{name}\"\napi_key_env = \"NO_KEY_NEEDED\"\n"
        ));
    }
    std::fs::write(&config, toml).unwrap();

    let (recorded, _) = recorded_calls(std::slice::from_ref(&runs)).unwrap();
    let spec = EvalSpec {
        world_models: vec!["wm-a".into(), "wm-b".into(), "wm-c".into()],
        config: Some(config),
        options: BuiltInOptions::default(),
        concurrency: 8,
        out_dir: dir.path().join("out"),
        runs: vec![runs],
        decision: false,
        good_fidelity: cosmos_engine::metrics::calibration::GOOD_FIDELITY,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let never_stopped = tokio::sync::watch::channel(false).1;
    let (evaluation, wall) = time(|| {
        runtime
            .block_on(evaluate(&spec, &recorded, never_stopped.clone()))
            .unwrap()
    });
    let ideal = recorded.len() as f64 * 3.0 * 0.2 / 8.0;
    println!(
        "wm-eval of {} calls × 3 world models, endpoint 200 ms, concurrency 8: {:.1} s (ideal {ideal:.1} s, {:.0}% overhead)",
        recorded.len(),
        wall.as_secs_f64(),
        (wall.as_secs_f64() / ideal - 1.0) * 100.0
    );
    let _ = child.kill();
    let _ = child.wait();

    let (run, t_open) = time(|| Run::open(&evaluation.path).unwrap());
    let size = (200, 60);
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    let (mut app, t_view) = time(|| {
        App::on(
            open_run(run, Rect::new(0, 0, size.0, size.1 - 1)),
            Keymap::default(),
            Theme::new(true),
            size,
        )
    });
    let (_, t_draw) = time(|| terminal.draw(|f| app.draw(f)).unwrap());
    println!(
        "world-model view of that file: open {:.1} ms + view {:.1} ms + first frame {:.1} ms",
        ms(t_open),
        ms(t_view),
        ms(t_draw)
    );
    let mut frames: Vec<Duration> = Vec::new();
    for i in 0..300 {
        let key = if i % 50 == 0 {
            Key::SortNext
        } else {
            Key::Down
        };
        app.update(Action::Do(key));
        let start = Instant::now();
        app.settle();
        terminal.draw(|f| app.draw(f)).unwrap();
        frames.push(start.elapsed());
    }
    frames.sort();
    println!(
        "world-model view frame (select, sort): p50 {:.2} ms, p99 {:.2} ms",
        ms(pct(&frames, 0.5)),
        ms(pct(&frames, 0.99))
    );
}

/// wm-eval of one run of `calls` calls, each changing one field of its server's state, with the
/// `memory` world model (no endpoint): time and peak memory.
fn long_run(calls: usize) {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let mut header = synthetic::header(&Spec::default());
    header.agent.kind = AgentKind::React;
    let start: serde_json::Map<String, serde_json::Value> = (0..20)
        .map(|k| (format!("item/{k}"), json!({"qty": 0})))
        .collect();
    header.servers = vec![cosmos_trajectory::event::ServerInfo {
        name: "kv".into(),
        transport: "stdio".into(),
        target: None,
        shared: false,
        start_digest: Some("sha256:0".into()),
        start_state: Some(Box::new(serde_json::Value::Object(start))),
        seed_removed: Vec::new(),
        protocol: None,
    }];
    let mut w = Writer::create(&runs.join("long.jsonl"), &header, Redactor::new(), None).unwrap();
    for i in 0..calls {
        let field = format!("item/{}", i % 20);
        let change = cosmos_trajectory::event::StateChange {
            fields_changed: 1,
            fields: [(
                field,
                cosmos_trajectory::event::FieldChange {
                    before: Some(json!({"qty": i / 20})),
                    after: Some(json!({"qty": i / 20 + 1})),
                },
            )]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        w.write(
            i as u64,
            EventBody::ToolCalled {
                step: i as u64 + 1,
                tool: "kv:add".into(),
                server: Some("kv".into()),
                arguments: Box::new(json!({"item": i % 20, "by": 1})),
                result: Observation {
                    text: format!("qty {}", i / 20 + 1),
                    ..Default::default()
                },
                latency_ms: 1,
                node: None,
                error: None,
                origin: None,
                state_change: Some(Box::new(change)),
            },
        )
        .unwrap();
    }
    drop(w);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    reset_peak();
    let (_, wall) = time(|| {
        let (recorded, _) = recorded_calls(std::slice::from_ref(&runs)).unwrap();
        let spec = EvalSpec {
            world_models: vec!["memory".into()],
            config: None,
            options: BuiltInOptions {
                memory_from: vec![runs.clone()],
                ..BuiltInOptions::default()
            },
            concurrency: 8,
            out_dir: dir.path().join("out"),
            runs: vec![runs.clone()],
            decision: false,
            good_fidelity: cosmos_engine::metrics::calibration::GOOD_FIDELITY,
        };
        let never_stopped = tokio::sync::watch::channel(false).1;
        runtime
            .block_on(evaluate(&spec, &recorded, never_stopped))
            .unwrap()
    });
    println!(
        "wm-eval of one run of {calls} state-changing calls (memory): {:.1} s, peak {:.0} MB",
        wall.as_secs_f64(),
        peak_mb()
    );
}

/// `traces` over `calls` recorded conversions: store built, prediction timed.
fn traces(calls: usize) {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    // Five tools, five unit pairs each, factor and offset fixed per pair (as a unit converter).
    let pair = |i: usize| (i % 5, (i / 5) % 5);
    for r in 0..100 {
        let mut header = synthetic::header(&Spec::default());
        header.synthetic = true;
        header.agent.kind = AgentKind::React;
        let mut w = Writer::create(
            &runs.join(format!("run-{r:03}.jsonl")),
            &header,
            Redactor::new(),
            None,
        )
        .unwrap();
        for i in 0..calls / 100 {
            let (tool, units) = pair(i * 7 + r);
            let value = (r * calls + i) as f64 / 100.0;
            let result = json!({
                "original_value": value, "original_unit": format!("u{units}"),
                "converted_value": value * (units + 2) as f64 + tool as f64,
                "converted_unit": format!("v{units}"), "conversion_type": format!("kind{tool}")
            });
            w.write(
                i as u64,
                EventBody::ToolCalled {
                    step: i as u64 + 1,
                    tool: format!("units:convert_{tool}"),
                    server: None,
                    arguments: Box::new(
                        json!({"value": value, "from_unit": format!("u{units}"), "to_unit": format!("v{units}")}),
                    ),
                    result: Observation {
                        text: result.to_string(),
                        structured: Some(Box::new(result)),
                        ..Default::default()
                    },
                    latency_ms: 1,
                    node: None,
                    error: None,
                    origin: None,
                    state_change: None,
                },
            )
            .unwrap();
        }
    }
    let bytes = common::folder_bytes(&runs) as f64 / (1024.0 * 1024.0);
    let mut config = cosmos_engine::config::Config::from_text("", None, |_| None).unwrap();
    let options = BuiltInOptions {
        memory_from: vec![runs.clone()],
        ..Default::default()
    };
    let named = cosmos_engine::world_model::resolve("traces", &mut config, &options)
        .unwrap()
        .unwrap();
    let (built, t_build) = time(|| named.build().unwrap());
    let report = Path::new(env!("CARGO_BIN_EXE_cosmos"));
    let (_, t_report) = time(|| {
        let out = Command::new(report)
            .args(["report", "--format", "json"])
            .arg(&runs)
            .output()
            .unwrap();
        assert!(out.status.success());
    });
    println!(
        "traces: store of {calls} recorded calls ({bytes:.0} MiB) built in {:.0} ms ({:.0} MiB/s); `report` reads them in {:.0} ms ({:.0} MiB/s)",
        ms(t_build),
        bytes / t_build.as_secs_f64(),
        ms(t_report),
        bytes / t_report.as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let tool = |t: usize| cosmos_trajectory::event::ToolInfo {
        name: format!("units:convert_{t}"),
        ..Default::default()
    };
    let predict = |t: usize, units: usize, value: f64| {
        let tool = tool(t);
        let arguments = json!({"value": value, "from_unit": format!("u{units}"), "to_unit": format!("v{units}")});
        let start = Instant::now();
        let sim = runtime
            .block_on(
                built
                    .model
                    .simulate(cosmos_engine::world_model::SimRequest {
                        tool: &tool,
                        arguments: &arguments,
                        user_request: "",
                        history: &[],
                        state: None,
                    }),
            )
            .unwrap();
        (start.elapsed(), sim)
    };
    let mut first = Vec::new();
    let mut later = Vec::new();
    for t in 0..5 {
        for units in 0..5 {
            first.push(predict(t, units, -1.5).0);
            for k in 0..200 {
                let (took, sim) = predict(t, units, -(k as f64) - 2.25);
                let got = sim.observation.structured.unwrap()["converted_value"]
                    .as_f64()
                    .unwrap();
                let want = (-(k as f64) - 2.25) * (units + 2) as f64 + t as f64;
                assert!(
                    (got - want).abs() < 1e-6 * want.abs().max(1.0),
                    "{got} for {want}"
                );
                later.push(took);
            }
        }
    }
    first.sort();
    later.sort();
    println!(
        "traces: a call never recorded predicted in {:.3} ms median (p99 {:.3} ms) once its context's rules are fitted; the first of a context {:.1} ms median (fitting on its ~{} calls)",
        ms(pct(&later, 0.5)),
        ms(pct(&later, 0.99)),
        ms(pct(&first, 0.5)),
        calls / 25
    );
}
