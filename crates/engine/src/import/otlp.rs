//! OpenTelemetry traces in OTLP JSON (a collector's file exporter, `cosmos export otel --out`)
//! read as cosmos runs, one per trace: GenAI semantic conventions (`invoke_agent`, `chat`,
//! `execute_tool` and their `gen_ai.*` attributes) and OpenInference (`openinference.span.kind`
//! `AGENT`, `LLM`, `TOOL`; `input.value`, `output.value`, `llm.token_count.*`).
//!
//! The file is read an object at a time (a line of a collector's file, or one whole
//! document); a trace's spans may be spread over objects, so the spans cosmos keeps (their
//! times, names and attributes, not their events) are gathered by trace before any run is made.
//! Spans cosmos marked simulated (`cosmos.simulated`) and LLM calls of roles other than the
//! planner (`cosmos.role`) are not the agent's: they are counted in `source.skipped`.
//!
//! Reads a file an object at a time; spans are gathered by trace (a trace may span
//! objects) as a few facts each, not their events.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use cosmos_trajectory::event::{Observation, Source};

use super::draft::{Call, Draft, Imported, Turn};
use super::format::{Format, Said};

/// One span, as much as cosmos reads.
#[derive(Debug, Default)]
struct SpanLite {
    parent: String,
    name: String,
    start_ns: u64,
    end_ns: u64,
    attrs: Map<String, Value>,
    /// OTLP's status code: 2 is an error.
    status_code: i64,
    status_message: String,
    service: Option<String>,
}

impl SpanLite {
    fn str(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).and_then(Value::as_str)
    }
    fn first_str(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| self.str(k))
    }
    fn number(&self, keys: &[&str]) -> Option<u64> {
        keys.iter()
            .find_map(|k| self.attrs.get(*k).and_then(Value::as_u64))
    }
    fn at(&self) -> Option<DateTime<Utc>> {
        (self.start_ns > 0).then(|| DateTime::from_timestamp_nanos(self.start_ns as i64))
    }
    fn latency_ms(&self) -> Option<u64> {
        (self.start_ns > 0 && self.end_ns >= self.start_ns)
            .then(|| (self.end_ns - self.start_ns) / 1_000_000)
    }
    fn operation(&self) -> Option<&str> {
        self.str("gen_ai.operation.name")
    }
    fn kind(&self) -> Option<&str> {
        self.str("openinference.span.kind")
    }
    fn is_llm(&self) -> bool {
        matches!(
            self.operation(),
            Some("chat" | "text_completion" | "generate_content")
        ) || self.kind() == Some("LLM")
    }
    fn is_tool(&self) -> bool {
        self.operation() == Some("execute_tool") || self.kind() == Some("TOOL")
    }
    fn is_agent(&self) -> bool {
        self.operation() == Some("invoke_agent") || self.kind() == Some("AGENT")
    }
    fn failed(&self) -> Option<String> {
        (self.status_code == 2).then(|| {
            if self.status_message.is_empty() {
                "the span's status is an error".to_string()
            } else {
                self.status_message.clone()
            }
        })
    }
}

/// An OTLP `AnyValue` as JSON.
fn any_value(value: &Value) -> Value {
    let Some(map) = value.as_object() else {
        return Value::Null;
    };
    if let Some(s) = map.get("stringValue") {
        return s.clone();
    }
    if let Some(b) = map.get("boolValue") {
        return b.clone();
    }
    if let Some(i) = map.get("intValue") {
        // OTLP JSON writes 64-bit integers as strings.
        return match i {
            Value::String(s) => s.parse::<i64>().map_or(Value::Null, |n| json!(n)),
            other => other.clone(),
        };
    }
    if let Some(d) = map.get("doubleValue") {
        return d.clone();
    }
    if let Some(array) = map.get("arrayValue").and_then(|a| a.get("values")) {
        return Value::Array(
            array
                .as_array()
                .into_iter()
                .flatten()
                .map(any_value)
                .collect(),
        );
    }
    if let Some(list) = map.get("kvlistValue").and_then(|a| a.get("values")) {
        return Value::Object(attributes(list));
    }
    Value::Null
}

/// OTLP attributes (`[{key, value}]`) as a map.
fn attributes(list: &Value) -> Map<String, Value> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|kv| {
            Some((
                kv.get("key")?.as_str()?.to_string(),
                any_value(kv.get("value")?),
            ))
        })
        .collect()
}

fn nanos(value: Option<&Value>) -> u64 {
    match value {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(v) => v.as_u64().unwrap_or(0),
        None => 0,
    }
}

/// Reads an OTLP JSON file into one run per trace.
pub fn read(path: &Path, each: &mut dyn FnMut(Imported) -> Result<()>) -> Result<Said> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut traces: BTreeMap<(usize, String), Vec<SpanLite>> = BTreeMap::new();
    let mut first_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut said = Said::default();
    let stream = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file))
        .into_iter::<Value>();
    for (objects, object) in stream.enumerate() {
        let object = match object {
            Ok(object) => object,
            Err(e) if objects == 0 => {
                return Err(anyhow::anyhow!("{} is not OTLP JSON: {e}", path.display()));
            }
            Err(e) => {
                said.lines.push(format!(
                    "{}: the file breaks off after {objects} object(s) ({e}); the spans before it were read",
                    path.display()
                ));
                break;
            }
        };
        for resource in object
            .get("resourceSpans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let service = resource
                .get("resource")
                .and_then(|r| r.get("attributes"))
                .map(attributes)
                .and_then(|a| a.get("service.name")?.as_str().map(str::to_string));
            for scope in resource
                .get("scopeSpans")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for span in scope
                    .get("spans")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let trace = span
                        .get("traceId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let next = first_seen.len();
                    let order = *first_seen.entry(trace.clone()).or_insert(next);
                    let status = span.get("status");
                    traces.entry((order, trace)).or_default().push(SpanLite {
                        parent: span
                            .get("parentSpanId")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        name: span
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        start_ns: nanos(span.get("startTimeUnixNano")),
                        end_ns: nanos(span.get("endTimeUnixNano")),
                        attrs: span.get("attributes").map(attributes).unwrap_or_default(),
                        status_code: status
                            .and_then(|s| s.get("code"))
                            .and_then(Value::as_i64)
                            .unwrap_or(0),
                        status_message: status
                            .and_then(|s| s.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        service: service.clone(),
                    });
                }
            }
        }
    }
    if traces.is_empty() && said.lines.is_empty() {
        anyhow::bail!("{} holds no spans", path.display());
    }
    let file = path.display().to_string();
    for ((_, trace), spans) in traces {
        each(convert(&file, &trace, spans))?;
    }
    Ok(said)
}

/// A tool's arguments as the span wrote them: JSON when it is, else the text under `input`.
fn arguments(text: Option<&str>) -> Value {
    match text {
        None => json!({}),
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| json!({"input": text})),
    }
}

/// A result as a span wrote it: cosmos's `{"text", "is_error"}`, or any text.
fn observation(text: &str, is_error: bool) -> Observation {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) if map.get("text").is_some_and(Value::is_string) => {
            Observation::of_text(
                map["text"].as_str().unwrap_or_default(),
                is_error || map.get("is_error").and_then(Value::as_bool) == Some(true),
            )
        }
        _ => Observation::of_text(text, is_error),
    }
}

/// One trace as one run.
fn convert(file: &str, trace: &str, mut spans: Vec<SpanLite>) -> Imported {
    spans.sort_by_key(|s| s.start_ns);
    let root = spans
        .iter()
        .position(|s| s.parent.is_empty() && s.is_agent())
        .or_else(|| spans.iter().position(|s| s.parent.is_empty()));
    let root = root.map(|i| spans.remove(i));
    let source = Source {
        format: Format::Otlp.as_str().to_string(),
        file: file.to_string(),
        id: trace.to_string(),
        ..Source::default()
    };
    let task = root
        .as_ref()
        .and_then(|r| r.str("cosmos.task.id").map(str::to_string))
        .unwrap_or_else(|| trace.to_string());
    let mut draft = Draft::new(source, &task, root.as_ref().and_then(SpanLite::at));
    if let Some(root) = &root {
        let agent = root
            .first_str(&["gen_ai.agent.name", "agent.name"])
            .map(str::to_string)
            .or_else(|| root.service.clone())
            .unwrap_or_else(|| root.name.clone());
        draft.agent(agent);
        if let Some(model) = root.first_str(&["gen_ai.request.model", "llm.model_name"]) {
            draft.model(model);
        }
        if let Some(request) = root.str("input.value") {
            draft.user(root.at(), request);
        }
    }
    let (mut simulated, mut other_roles, mut without_content) = (0, 0, 0);
    for span in &spans {
        if span.is_llm() {
            if span.str("cosmos.role").is_some_and(|r| r != "planner") {
                other_roles += 1;
                continue;
            }
            let reply = span
                .first_str(&["gen_ai.output.messages", "output.value"])
                .unwrap_or_default();
            draft.turn(Turn {
                at: span.at(),
                model: span
                    .first_str(&[
                        "gen_ai.response.model",
                        "gen_ai.request.model",
                        "llm.model_name",
                    ])
                    .map(str::to_string),
                prompt_tokens: span
                    .number(&["gen_ai.usage.input_tokens", "llm.token_count.prompt"]),
                completion_tokens: span
                    .number(&["gen_ai.usage.output_tokens", "llm.token_count.completion"]),
                latency_ms: span.latency_ms(),
                error: span.failed(),
                reply: json!({"role": "assistant", "content": reply}),
            });
        } else if span.is_tool() {
            if span.attrs.get("cosmos.simulated") == Some(&Value::Bool(true)) {
                simulated += 1;
                continue;
            }
            let is_error = span.str("error.type") == Some("tool_error");
            let failed = span.failed().filter(|_| !is_error);
            let result = span.first_str(&["gen_ai.tool.call.result", "output.value"]);
            if result.is_none() && failed.is_none() {
                without_content += 1;
            }
            draft.call(Call {
                name: span
                    .first_str(&["gen_ai.tool.name", "tool.name"])
                    .unwrap_or(&span.name)
                    .to_string(),
                arguments: arguments(span.first_str(&[
                    "gen_ai.tool.call.arguments",
                    "input.value",
                    "tool.parameters",
                ])),
                // A span without its result (written without content) is no cut-off call: its
                // status says how it went, and the missing text is said below.
                result: Some(result.map_or_else(
                    || Observation::of_text("", is_error),
                    |r| observation(r, is_error),
                )),
                error: failed,
                latency_ms: span.latency_ms(),
                at: span.at(),
            });
        }
    }
    for (n, what) in [
        (
            simulated,
            "simulated call span(s) (cosmos.simulated), not real calls",
        ),
        (
            other_roles,
            "LLM call span(s) of other roles than the planner",
        ),
        (
            without_content,
            "tool call span(s) without their result text (the trace was written without content)",
        ),
    ] {
        if n > 0 {
            draft.skipped(format!("{n} {what}"));
        }
    }
    if let Some(root) = &root {
        let end = (root.end_ns > 0).then(|| DateTime::from_timestamp_nanos(root.end_ns as i64));
        if let Some(answer) = root.first_str(&["cosmos.answer", "output.value"]) {
            draft.answer(end, answer);
        }
        // The run lasted as long as its root span.
        draft.at(end);
        return draft.finish(root.failed(), None);
    }
    draft.finish(None, None)
}
