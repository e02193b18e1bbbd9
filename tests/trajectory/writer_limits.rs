//! No writer emits a line the reader refuses: every event kind that carries text or free-form
//! JSON, given oversized strings, huge arrays or deep objects, is written within the writer's
//! line limit and read back as the same kind, with nothing refused (a property test over random
//! sizes and shapes, with a small limit so the test stays fast).

use crate::common;

use cosmos_trajectory::event::{
    Action, AgentKind, DecisionProblem, EventBody, Observation, PredictionRecord, Role,
};
use cosmos_trajectory::reader::{EventStream, Severity};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::writer::Writer;
use proptest::prelude::*;
use serde_json::{Value, json};

const LIMIT: usize = 16 << 10;

/// A free-form value of about `size` bytes in one of several shapes.
fn big_value(shape: u8, size: usize) -> Value {
    match shape % 4 {
        0 => Value::String("é".repeat(size / 2)),
        1 => Value::Array((0..size / 2).map(|i| json!(i % 10)).collect()),
        2 => {
            let mut v = json!("leaf");
            for _ in 0..(size / 64).min(100) {
                v = json!({"k": v, "pad": "x".repeat(48)});
            }
            v
        }
        _ => {
            json!({"rows": (0..size / 24).map(|i| json!({"i": i, "s": "abc"})).collect::<Vec<_>>()})
        }
    }
}

fn bodies(shape: u8, size: usize) -> Vec<EventBody> {
    let text = "t".repeat(size);
    let observation = Observation {
        text: text.clone(),
        structured: Some(Box::new(big_value(shape, size))),
        ..Default::default()
    };
    vec![
        EventBody::ToolCalled {
            step: 1,
            tool: "s:t".into(),
            server: Some("s".into()),
            arguments: Box::new(big_value(shape.wrapping_add(1), size)),
            result: observation.clone(),
            latency_ms: 1,
            node: None,
            error: Some(text.clone()),
            origin: None,
            state_change: None,
        },
        EventBody::NodeSimulated {
            node: 1,
            route: None,
            prediction: PredictionRecord {
                world_model: "command".into(),
                observation,
                latency_ms: 1,
                tokens: None,
                confidence: None,
                confidence_source: None,
                members: Vec::new(),
                predicted_state: None,
            },
        },
        EventBody::LlmCall {
            role: Role::Planner,
            model: "m".into(),
            prompt_tokens: 1,
            completion_tokens: 1,
            tokens_estimated: false,
            latency_ms: 1,
            error: Some(text.clone()),
            messages: Some(Box::new(big_value(shape.wrapping_add(2), size))),
        },
        EventBody::DecisionRejected {
            problem: DecisionProblem::BadArguments,
            detail: text.clone(),
            reply: big_value(shape.wrapping_add(3), size),
        },
        EventBody::NodeAdded {
            node: 2,
            parent: Some(0),
            depth: 1,
            action: Some(Action::ToolCall {
                tool: "s:t".into(),
                arguments: big_value(shape, size),
            }),
            prior: None,
        },
        EventBody::Error {
            source: cosmos_trajectory::event::ErrorSource::Agent,
            name: None,
            message: text.clone(),
            stderr_tail: Some(text.clone()),
            step: None,
        },
        EventBody::Answer { text },
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_line_written_is_read(shape in 0u8..8, size in 1usize..(96 << 10)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        let mut header = common::header("limits", AgentKind::React, None);
        header.task.request = "r".repeat(size);
        header.label = Some("x".repeat(size / 3));
        let mut writer =
            Writer::create_with_max_line(&path, &header, Redactor::new(), None, LIMIT).unwrap();
        let bodies = bodies(shape, size);
        let kinds: Vec<String> = bodies.iter().map(|b| b.kind().to_string()).collect();
        for body in bodies {
            writer.write(0, body).unwrap();
        }
        drop(writer);
        let text = std::fs::read_to_string(&path).unwrap();
        // The header is written by the same path, and cut the same way.
        for line in text.lines() {
            prop_assert!(line.len() <= LIMIT, "a line of {} bytes: {}", line.len(), &line[..300.min(line.len())]);
        }
        let mut stream = EventStream::open(&path).unwrap();
        let mut read = Vec::new();
        while let Some(event) = stream.next_event().unwrap() {
            read.push(event.body.kind().to_string());
        }
        let refused: Vec<_> = stream
            .problems()
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .collect();
        prop_assert!(refused.is_empty(), "{refused:?}");
        prop_assert_eq!(read, kinds);
    }
}

/// Hardening VI: a value nested deeper than the reader reads (an OTLP span's arguments 127
/// levels deep, a server's structured result) is written with its deep part kept as a note,
/// and the line is read back: the run validates.
#[test]
fn a_value_nested_too_deep_for_the_reader_is_cut_and_the_line_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let header = common::header("deep", AgentKind::React, None);
    let mut writer = Writer::create(&path, &header, Redactor::new(), None).unwrap();
    let mut deep = json!("bottom");
    for _ in 0..127 {
        deep = json!({"in": deep});
    }
    writer
        .write(
            0,
            EventBody::ToolCalled {
                step: 1,
                tool: "s:t".into(),
                server: Some("s".into()),
                arguments: Box::new(json!({"shallow": 1, "deep": deep})),
                result: Observation::of_text("ok", false),
                latency_ms: 1,
                node: None,
                error: None,
                origin: None,
                state_change: None,
            },
        )
        .unwrap();
    drop(writer);
    let mut stream = EventStream::open(&path).unwrap();
    let event = stream.next_event().unwrap().expect("the call is read");
    assert!(stream.problems().is_empty(), "{:?}", stream.problems());
    let EventBody::ToolCalled { arguments, .. } = event.body else {
        panic!("{:?}", event.body);
    };
    assert_eq!(arguments["shallow"], json!(1));
    let text = serde_json::to_string(&arguments).unwrap();
    assert!(text.contains("nested deeper than 96 levels"), "{text}");
}
