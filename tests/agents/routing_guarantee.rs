//! Routing with a guarantee, end to end: `cosmos wm-eval --target-error` over 600 recorded calls
//! of three tools, simulated by a `command` world model of known skill, writes a routing file
//! that never trusts the tools the model is confidently wrong about and trusts the good one at
//! a threshold its skill allows.

use std::path::Path;
use std::process::Command;

use cosmos_engine::metrics::run::RunAccumulator;
use cosmos_trajectory::event::{
    AgentInfo, AgentKind, EventBody, Header, ModelInfo, Observation, RunStatus, TaskInfo, ToolInfo,
    Totals,
};
use cosmos_trajectory::writer::Writer;
use serde_json::json;

/// A recorded run of 360 calls of `s:good` and 120 each of `s:bad1` and `s:bad2`; each result
/// is `{"n": N}` for the call's argument N.
fn recorded(path: &Path) {
    let tools: Vec<ToolInfo> = ["s:good", "s:bad1", "s:bad2"]
        .iter()
        .map(|name| ToolInfo {
            name: name.to_string(),
            description: "returns its n".into(),
            input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}})
                .into(),
            output_schema: None,
            annotations: None,
            ..Default::default()
        })
        .collect();
    let mut header = Header::new(
        "recorded-known-skill",
        TaskInfo {
            id: "known_skill".into(),
            request: "call the tools".into(),
            ..TaskInfo::default()
        },
        AgentInfo {
            kind: AgentKind::React,
            settings: Default::default(),
        },
        ModelInfo {
            model: "made-by-the-test".into(),
            base_url: None,
        },
    );
    header.tools = tools;
    header.synthetic = true;
    let mut writer = Writer::create(
        path,
        &header,
        Default::default(),
        Some(RunAccumulator::tally(&header)),
    )
    .unwrap();
    for i in 0..600u64 {
        let tool = match i % 5 {
            0..=2 => "s:good",
            3 => "s:bad1",
            _ => "s:bad2",
        };
        writer
            .write(
                i,
                EventBody::ToolCalled {
                    step: i + 1,
                    tool: tool.into(),
                    server: Some("s".into()),
                    arguments: Box::new(json!({"n": i})),
                    result: Observation::of_text(json!({"n": i}).to_string(), false),
                    latency_ms: 1,
                    node: None,
                    error: None,
                    origin: None,
                    state_change: None,
                },
            )
            .unwrap();
    }
    writer
        .write(
            600,
            EventBody::RunFinished {
                status: RunStatus::Completed,
                error: None,
                ending: None,
                totals: Totals::default(),
                end_digest: Default::default(),
                state_match: Default::default(),
            },
        )
        .unwrap();
}

/// The world model of known skill: on `s:good` right 80% of the time, with confidence uniform
/// in 0.6–1.0 when right and 0.0–0.7 when wrong; on the other two always wrong, 0.95-sure.
const WORLD_MODEL: &str = r#"
import json, random, sys
for line in sys.stdin:
    request = json.loads(line)
    n = request["arguments"]["n"]
    draw = random.Random(n)
    if request["tool"] == "s:good" and draw.random() < 0.8:
        reply = {"content": json.dumps({"n": n}), "confidence": 0.6 + 0.4 * draw.random()}
    elif request["tool"] == "s:good":
        reply = {"content": "no idea at all", "confidence": 0.7 * draw.random()}
    else:
        reply = {"content": "no idea at all", "confidence": 0.95}
    reply["is_error"] = False
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"#;

#[test]
fn the_routing_file_trusts_the_good_tool_within_its_skill_and_never_the_confidently_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("runs").join("known.jsonl");
    std::fs::create_dir_all(run.parent().unwrap()).unwrap();
    recorded(&run);
    let script = dir.path().join("known_skill.py");
    std::fs::write(&script, WORLD_MODEL).unwrap();
    let routing = dir.path().join("routing.toml");
    // Hardening VI: a link planted at the name the writer once staged under is left alone.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "mine").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("routing.toml.partial")).unwrap();
    let done = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "wm-eval",
            run.to_str().unwrap(),
            "--world-model",
            "command",
            "--world-model-command",
            &format!("python3 {}", script.display()),
            "--target-error",
            "0.1",
            "--delta",
            "0.1",
            "--routing-out",
            routing.to_str().unwrap(),
            "--out",
            dir.path().join("eval").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    let file: toml::Table = std::fs::read_to_string(&routing).unwrap().parse().unwrap();
    assert_eq!(file["world_model"].as_str(), Some("command"));
    assert_eq!(file["target_error"].as_float(), Some(0.1));
    let tools = file["tools"].as_table().unwrap();
    for bad in ["s:bad1", "s:bad2"] {
        assert_eq!(
            tools[bad]["trust"].as_bool(),
            Some(false),
            "{bad}: {:?}",
            tools[bad]
        );
        assert!(tools[bad].get("go_real_below").is_none());
    }
    let good = &tools["s:good"];
    let threshold = good["go_real_below"].as_float().unwrap();
    assert!((0.2..=0.8).contains(&threshold), "{good:?}");
    assert!(good["bound"].as_float().unwrap() <= 0.1);
    assert!(good["n"].as_integer().unwrap() >= 22);
    // The good tool's confidence is recalibrated: on calls the curve never saw, its error is
    // lower than the raw confidence's, and the threshold on its scale trusts exactly the
    // confidences the raw one does.
    let curve = good["recalibration"].as_table().unwrap();
    let (raw_ece, fitted_ece) = (
        curve["ece_raw"].as_float().unwrap(),
        curve["ece_cross_fitted"].as_float().unwrap(),
    );
    assert!(fitted_ece < raw_ece, "{curve:?}");
    assert!(curve["slope"].as_float().unwrap() > 0.0);
    let read = cosmos_engine::metrics::routing_file::RoutingFile::load(&routing).unwrap();
    assert!(read.recalibrated.contains_key("s:good"));
    for k in 0..=10_000 {
        let c = k as f64 / 10_000.0;
        assert_eq!(
            read.trusts("s:good", Some(c)),
            c >= threshold,
            "confidence {c}, raw threshold {threshold}"
        );
    }
    for bad in ["s:bad1", "s:bad2"] {
        assert!(!read.trusts(bad, Some(1.0)));
    }
    // What wm-eval said of each tool's curve.
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(
        said.contains("s:good: confidence recalibrated, ECE"),
        "{said}"
    );
}
