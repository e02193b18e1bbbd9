//! Inspect AI logs read as cosmos runs, one per sample (and epoch): its input is the task, its
//! `model` events are model turns, its `tool` events real calls, its output the answer.
//!
//! A `.eval` log is a zip with one entry per sample: read an entry at a time, so memory is
//! bounded by the largest sample. A torn zip (a log still being written, a copy cut short) has
//! no directory: its entries are then read from the front until the tear, and the tear said.
//! A `.json` log is streamed: its `samples` are converted one by one as the parser reaches
//! them, never held together.
//!
//! Inspect's logs do not say which MCP server a tool came from, so its tools keep their own
//! names (a name in Claude Code's `mcp__SERVER__TOOL` form still becomes `SERVER:TOOL`).
//!
//! A `.eval` is read entry by entry through the zip's directory; without one (a
//! torn zip) from the front through the local headers until the tear. A `.json` log is streamed
//! by a serde seed that converts each element of `samples` as the parser reaches it.

use std::collections::HashMap;
use std::fmt;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use serde::Deserialize;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

use cosmos_trajectory::event::{Observation, Source, ToolInfo};

use super::budget::{ATTACHMENTS_BUDGET, Attachments, Budget, Counted, SAMPLE_VALUES_BUDGET, list};
use super::draft::{Call, Draft, Imported, Score, Turn, content_text, timestamp};
use super::format::{Format, Said};

/// Largest sample read from a `.eval` entry; a bigger one is skipped and said (a zip's sizes
/// can claim anything, and one sample is what memory holds at a time).
const MAX_SAMPLE_BYTES: u64 = 4 << 30;

/// The log's `eval`: what ran.
#[derive(Debug, Default, Clone, Deserialize)]
struct EvalSpec {
    #[serde(default)]
    task: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    solver: Option<String>,
}

/// The log's `plan`: the solvers, for naming the agent.
#[derive(Debug, Default, Clone, Deserialize)]
struct Plan {
    #[serde(default)]
    steps: Vec<PlanStep>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct PlanStep {
    #[serde(default)]
    solver: String,
}

/// What the log says of the whole evaluation, read before its samples.
#[derive(Debug, Default, Clone)]
struct Evaluation {
    file: String,
    eval: EvalSpec,
    plan: Plan,
}

impl Evaluation {
    fn agent(&self) -> String {
        let solvers = match &self.eval.solver {
            Some(solver) => solver.clone(),
            None => self
                .plan
                .steps
                .iter()
                .map(|s| s.solver.as_str())
                .collect::<Vec<_>>()
                .join(" → "),
        };
        if solvers.is_empty() {
            "inspect-ai".to_string()
        } else {
            format!("inspect-ai: {solvers}")
        }
    }
}

/// One sample, as much as cosmos reads.
#[derive(Debug, Default)]
struct Sample {
    id: Value,
    epoch: Option<u64>,
    input: Value,
    output: Option<Value>,
    events: Vec<Value>,
    started_at: Option<String>,
    completed_at: Option<String>,
    error: Option<Value>,
    attachments: HashMap<String, String>,
    scores: Option<serde_json::Map<String, Value>>,
    target: Option<Value>,
}

/// A sample parsed against its memory budget: only the fields cosmos reads are kept (its
/// `messages`, as big as its events, are passed over unbuilt), every value counted.
struct SampleSeed<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for SampleSeed<'_> {
    type Value = Sample;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Sample, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for SampleSeed<'_> {
    type Value = Sample;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an Inspect sample")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sample, A::Error> {
        use serde::de::Error;
        let counted = Counted(self.0);
        let mut sample = Sample::default();
        let mut has_id = false;
        let some = |v: Value| (!v.is_null()).then_some(v);
        let text = |v: Value| v.as_str().map(str::to_string);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => {
                    sample.id = map.next_value_seed(counted)?;
                    has_id = true;
                }
                "epoch" => sample.epoch = map.next_value_seed(counted)?.as_u64(),
                "input" => sample.input = map.next_value_seed(counted)?,
                "output" => sample.output = some(map.next_value_seed(counted)?),
                "events" => sample.events = list(map.next_value_seed(counted)?, "events")?,
                "started_at" => sample.started_at = text(map.next_value_seed(counted)?),
                "completed_at" => sample.completed_at = text(map.next_value_seed(counted)?),
                "error" => sample.error = some(map.next_value_seed(counted)?),
                "target" => sample.target = some(map.next_value_seed(counted)?),
                "attachments" => {
                    sample.attachments = match map.next_value_seed(counted)? {
                        Value::Object(texts) => texts
                            .into_iter()
                            .filter_map(|(k, v)| match v {
                                Value::String(text) => Some((k, text)),
                                _ => None,
                            })
                            .collect(),
                        _ => HashMap::new(),
                    }
                }
                "scores" => {
                    sample.scores = match map.next_value_seed(counted)? {
                        Value::Object(scores) => Some(scores),
                        _ => None,
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !has_id {
            return Err(A::Error::missing_field("id"));
        }
        Ok(sample)
    }
}

/// One sample read from `reader` within a budget named `what`.
fn parse_sample(reader: impl Read, what: &str) -> serde_json::Result<Sample> {
    let budget = Budget::new(SAMPLE_VALUES_BUDGET, what);
    let mut de = serde_json::Deserializer::from_reader(BufReader::new(reader));
    let sample = SampleSeed(&budget).deserialize(&mut de)?;
    de.end()?;
    Ok(sample)
}

/// Largest header (`header.json`, the journal's start) read: what it says of the evaluation
/// is a few fields.
const MAX_HEADER_BYTES: u64 = 64 << 20;

/// A header's JSON, within its bytes and a budget of values.
fn parse_header(reader: impl Read, what: &str) -> serde_json::Result<Value> {
    let budget = Budget::new(SAMPLE_VALUES_BUDGET, what);
    let mut de =
        serde_json::Deserializer::from_reader(BufReader::new(reader.take(MAX_HEADER_BYTES)));
    let value = Counted(&budget).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Reads an Inspect log (`.eval` or `.json`, told apart by content).
pub fn read(path: &Path, each: &mut dyn FnMut(Imported) -> Result<()>) -> Result<Said> {
    let mut magic = [0u8; 4];
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let n = file.read(&mut magic)?;
    let context = Evaluation {
        file: path.display().to_string(),
        ..Evaluation::default()
    };
    if n == 4 && &magic == b"PK\x03\x04" {
        read_eval(path, context, each)
    } else {
        read_json(path, context, each)
    }
}

/// A `.eval` zip: the header's spec, then each `samples/*.json` entry in turn.
fn read_eval(
    path: &Path,
    mut context: Evaluation,
    each: &mut dyn FnMut(Imported) -> Result<()>,
) -> Result<Said> {
    let file = std::fs::File::open(path)?;
    let mut said = Said::default();
    let mut archive = match zip::ZipArchive::new(BufReader::new(file)) {
        Ok(archive) => archive,
        Err(e) => return read_torn_eval(path, context, each, &e.to_string()),
    };
    for spec in ["header.json", "_journal/start.json"] {
        if let Ok(entry) = archive.by_name(spec) {
            let value = parse_header(entry, spec)
                .with_context(|| format!("{}: {spec} is not readable JSON", path.display()))?;
            take_spec(&mut context, &value);
            break;
        }
    }
    // The directory maps names to entries: of entries sharing a name, one is read.
    if archive.has_duplicate_names() {
        said.lines.push(format!(
            "{}: the zip names some entries more than once; one entry of each name was read \
             (a sample may be missing)",
            path.display()
        ));
    }
    for index in 0..archive.len() {
        let entry = match archive.by_index(index) {
            Ok(entry) => entry,
            Err(e) => {
                said.lines.push(format!("entry {index}: {e}"));
                continue;
            }
        };
        let name = match entry.name() {
            Ok(name) => name.to_string(),
            Err(e) => {
                said.lines.push(format!("entry {index}: {e}"));
                continue;
            }
        };
        if !(name.starts_with("samples/") && name.ends_with(".json")) {
            continue;
        }
        if entry.size() > MAX_SAMPLE_BYTES {
            said.lines.push(format!(
                "{name}: {} bytes, over the {} a sample may have",
                entry.size(),
                MAX_SAMPLE_BYTES
            ));
            continue;
        }
        match parse_sample(entry.take(MAX_SAMPLE_BYTES), &name) {
            Ok(sample) => each(convert(&context, sample))?,
            Err(e) => said
                .lines
                .push(format!("{name}: not a readable sample: {e}")),
        }
    }
    Ok(said)
}

/// A `.eval` zip without its directory: entries read from the front, each whole one kept,
/// until the tear.
fn read_torn_eval(
    path: &Path,
    mut context: Evaluation,
    each: &mut dyn FnMut(Imported) -> Result<()>,
    why: &str,
) -> Result<Said> {
    let mut said = Said::default();
    let mut reader = BufReader::new(std::fs::File::open(path)?);
    let mut read = 0usize;
    let tear = loop {
        let mut entry = match zip::read::read_zipfile_from_stream(&mut reader) {
            Ok(Some(entry)) => entry,
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        };
        let name = entry.name().map(|n| n.to_string()).unwrap_or_default();
        if name == "_journal/start.json" || name == "header.json" {
            match parse_header(&mut entry, &name) {
                Ok(value) => take_spec(&mut context, &value),
                Err(e) if e.is_io() => break Some(format!("{name}: {e}")),
                Err(_) => {}
            }
        } else if name.starts_with("samples/") && name.ends_with(".json") {
            match parse_sample((&mut entry).take(MAX_SAMPLE_BYTES), &name) {
                Ok(sample) => {
                    each(convert(&context, sample))?;
                    read += 1;
                }
                // The bytes ran out inside the entry: that is the tear.
                Err(e) if e.is_io() || e.is_eof() => break Some(format!("{name}: {e}")),
                Err(e) => said
                    .lines
                    .push(format!("{name}: not a readable sample: {e}")),
            }
        }
    };
    said.lines.push(format!(
        "{}: a torn zip ({why}); {read} sample(s) read from the front{}",
        path.display(),
        tear.map(|t| format!(" before the tear ({t})"))
            .unwrap_or_default()
    ));
    Ok(said)
}

/// The spec and plan of a `header.json` (or the journal's start).
fn take_spec(context: &mut Evaluation, value: &Value) {
    if let Some(eval) = value
        .get("eval")
        .and_then(|e| EvalSpec::deserialize(e).ok())
    {
        context.eval = eval;
    }
    if let Some(plan) = value.get("plan").and_then(|p| Plan::deserialize(p).ok()) {
        context.plan = plan;
    }
}

/// A `.json` log, streamed: `eval` and `plan` kept as met, each of `samples` converted as the
/// parser reaches it. Inspect writes `eval` first; samples met before it are named from the
/// sample alone.
fn read_json(
    path: &Path,
    context: Evaluation,
    each: &mut dyn FnMut(Imported) -> Result<()>,
) -> Result<Said> {
    let file = std::fs::File::open(path)?;
    let mut reading = Reading {
        context,
        each,
        samples: 0,
        failed: None,
    };
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file));
    let parsed = (&mut reading).deserialize(&mut de).and_then(|()| de.end());
    if let Some(failed) = reading.failed {
        return Err(failed);
    }
    let mut said = Said::default();
    if let Err(e) = parsed {
        if reading.samples == 0 {
            return Err(anyhow!(
                "{} is not a readable Inspect log: {e}",
                path.display()
            ));
        }
        said.lines.push(format!(
            "{}: the log breaks off ({e}); the {} sample(s) before it were read",
            path.display(),
            reading.samples
        ));
    }
    Ok(said)
}

/// The streaming reader's state.
struct Reading<'a> {
    context: Evaluation,
    each: &'a mut dyn FnMut(Imported) -> Result<()>,
    samples: usize,
    /// Why `each` failed (a write), which stops the reading.
    failed: Option<anyhow::Error>,
}

impl<'de> DeserializeSeed<'de> for &mut Reading<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &mut Reading<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an Inspect log object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "eval" => self.context.eval = map.next_value()?,
                "plan" => self.context.plan = map.next_value()?,
                "samples" => map.next_value_seed(Samples(&mut *self))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `samples` array, one sample at a time.
struct Samples<'r, 'a>(&'r mut Reading<'a>);

impl<'de> DeserializeSeed<'de> for Samples<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Samples<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of samples")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let what = format!("sample {} of the log", self.0.samples + 1);
            let budget = Budget::new(SAMPLE_VALUES_BUDGET, what);
            let Some(sample) = seq.next_element_seed(SampleSeed(&budget))? else {
                break;
            };
            let run = convert(&self.0.context, sample);
            if let Err(e) = (self.0.each)(run) {
                self.0.failed = Some(e);
                return Err(serde::de::Error::custom("stopped"));
            }
            self.0.samples += 1;
        }
        Ok(())
    }
}

fn text_of(value: &Value) -> Option<&str> {
    value.as_str()
}

/// A sample's id as text.
fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Seconds as milliseconds.
fn millis(seconds: Option<&Value>) -> Option<u64> {
    let seconds = seconds?.as_f64()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).round() as u64)
}

/// One sample as one run.
fn convert(context: &Evaluation, mut sample: Sample) -> Imported {
    let attachments =
        &Attachments::new(std::mem::take(&mut sample.attachments), ATTACHMENTS_BUDGET);
    let id = id_text(&sample.id);
    let epoch = sample.epoch.unwrap_or(1);
    let source = Source {
        format: Format::Inspect.as_str().to_string(),
        file: context.file.clone(),
        id: format!("{}/{id}/epoch-{epoch}", context.eval.task),
        ..Source::default()
    };
    let started = sample
        .started_at
        .as_deref()
        .and_then(timestamp)
        .or_else(|| {
            sample.events.iter().find_map(|e| {
                e.get("timestamp")
                    .and_then(Value::as_str)
                    .and_then(timestamp)
            })
        });
    let mut draft = Draft::new(source, &id, started);
    draft.agent(context.agent());
    draft.model(&context.eval.model);
    match &sample.input {
        Value::String(text) => draft.user(started, &attachments.resolved(text)),
        Value::Array(messages) => {
            for message in messages {
                let text = content_text(
                    &attachments.resolve(message.get("content").unwrap_or(&Value::Null)),
                );
                match message.get("role").and_then(Value::as_str) {
                    Some("user") => draft.user(started, &text),
                    Some(role) => {
                        let t_ms = draft.at(started);
                        draft.note(t_ms, role, &text);
                    }
                    None => {}
                }
            }
        }
        _ => {}
    }
    let mut catalogue_taken = false;
    for event in &sample.events {
        let at = event
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(timestamp);
        match event.get("event").and_then(Value::as_str) {
            Some("model") => {
                if !catalogue_taken
                    && let Some(tools) = event.get("tools").and_then(Value::as_array)
                {
                    catalogue_taken = true;
                    draft.tools(tools.iter().filter_map(|t| tool_info(t, attachments)));
                }
                draft.turn(model_turn(event, at, attachments));
            }
            Some("tool") => {
                draft.call(tool_call(event, at, attachments));
            }
            Some("score") => {
                if let Some(score) = event.get("score") {
                    let scorer = event.get("scorer").and_then(Value::as_str);
                    let target = event.get("target").or(sample.target.as_ref());
                    draft.scored(
                        at,
                        Score::of_inspect(scorer.unwrap_or("scorer"), score, target),
                    );
                }
            }
            _ => {}
        }
    }
    if sample.scores.is_some()
        && !sample
            .events
            .iter()
            .any(|e| e.get("event") == Some(&json!("score")))
    {
        let completed = sample.completed_at.as_deref().and_then(timestamp);
        for (scorer, score) in sample.scores.iter().flatten() {
            draft.scored(
                completed,
                Score::of_inspect(scorer, score, sample.target.as_ref()),
            );
        }
    }
    let completed = sample.completed_at.as_deref().and_then(timestamp);
    let answer = sample
        .output
        .as_ref()
        .and_then(|o| o.get("completion"))
        .and_then(text_of)
        .map(|t| attachments.resolved(t).into_owned())
        .filter(|t| !t.is_empty());
    if let Some(answer) = answer {
        draft.answer(completed, &answer);
    }
    if attachments.cut() > 0 {
        draft.skipped(format!(
            "{} attachment reference(s) not copied: the sample's attachments passed {} MiB \
             (docs/import.md, \"Limits\")",
            attachments.cut(),
            ATTACHMENTS_BUDGET >> 20
        ));
    }
    let failure = sample.error.as_ref().map(|e| {
        e.get("message")
            .and_then(Value::as_str)
            .map_or_else(|| e.to_string(), |m| attachments.resolved(m).into_owned())
    });
    draft.finish(failure, None)
}

/// A `model` event as a turn: its model, usage, time and the reply it chose.
fn model_turn(
    event: &Value,
    at: Option<chrono::DateTime<chrono::Utc>>,
    attachments: &Attachments,
) -> Turn {
    let output = event.get("output");
    let usage = output.and_then(|o| o.get("usage"));
    let message = output
        .and_then(|o| o.get("choices"))
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"));
    let calls: Vec<Value> = message
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    json!({
                        "name": c.get("function").cloned().unwrap_or(Value::Null),
                        "arguments": attachments.resolve(c.get("arguments").unwrap_or(&Value::Null)),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let content = message
        .and_then(|m| m.get("content"))
        .map(|c| content_text(&attachments.resolve(c)))
        .unwrap_or_default();
    let mut reply = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        reply["tool_calls"] = Value::Array(calls);
    }
    Turn {
        at,
        model: event
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        prompt_tokens: usage
            .and_then(|u| u.get("input_tokens"))
            .and_then(Value::as_u64),
        completion_tokens: usage
            .and_then(|u| u.get("output_tokens"))
            .and_then(Value::as_u64),
        latency_ms: millis(event.get("working_time")),
        error: event
            .get("error")
            .filter(|e| !e.is_null())
            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string)),
        reply,
    }
}

/// A `tool` event as a real call. One still pending has no result.
fn tool_call(
    event: &Value,
    at: Option<chrono::DateTime<chrono::Utc>>,
    attachments: &Attachments,
) -> Call {
    let error = event.get("error").filter(|e| !e.is_null()).map(|e| {
        e.get("message")
            .and_then(Value::as_str)
            .map_or_else(|| e.to_string(), |m| attachments.resolved(m).into_owned())
    });
    let pending = event.get("pending").and_then(Value::as_bool) == Some(true);
    let result = (!pending).then(|| {
        let text = event
            .get("result")
            .map(|r| content_text(&attachments.resolve(r)))
            .unwrap_or_default();
        Observation::of_text(text, error.is_some())
    });
    Call {
        name: event
            .get("function")
            .and_then(Value::as_str)
            .unwrap_or("tool")
            .to_string(),
        arguments: attachments.resolve(event.get("arguments").unwrap_or(&json!({}))),
        result,
        error,
        latency_ms: if pending {
            None
        } else {
            millis(event.get("working_time"))
        },
        at,
    }
}

/// A model event's tool (`{name, description, parameters}`) as a catalogue entry.
fn tool_info(tool: &Value, attachments: &Attachments) -> Option<ToolInfo> {
    Some(ToolInfo {
        name: tool.get("name")?.as_str()?.to_string(),
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .map(|d| attachments.resolved(d).into_owned())
            .unwrap_or_default(),
        input_schema: attachments
            .resolve(tool.get("parameters").unwrap_or(&json!({"type": "object"})))
            .into(),
        output_schema: None,
        annotations: None,
        ..Default::default()
    })
}
