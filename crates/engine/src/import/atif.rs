//! ATIF (Harbor's Agent Trajectory Interchange Format, v1.0–v1.8) read as a cosmos run: a
//! user step is the task (later ones notes), an agent step a model turn whose tool calls are
//! real calls with their observations, the last agent message without calls the answer.
//!
//! A file `cosmos export atif` wrote carries what only cosmos has under `extra.cosmos` (the
//! shape is in `export/atif_writer.rs`); read back, it gives the run its header and events again.
//!
//! Parses one trajectory and lets each step go once converted (peak about 1.4× the
//! file). `extra.cosmos` (an ATIF export's own record, `export/atif_writer.rs`) gives back the header and
//! the events no step stands for, each put back by its `seq`.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{Value, json};

use cosmos_trajectory::event::{Event, EventBody, Header, Observation, Source, ToolInfo};

use super::draft::{Call, Draft, Ended, Imported, Score, Turn, content_text, timestamp};
use super::format::{Format, Said};

/// Largest ATIF file read: its one session is held whole while converted.
const MAX_SESSION_BYTES: u64 = 4 << 30;

/// An ATIF trajectory, as much of it as cosmos reads (unknown fields are ignored: newer
/// versions add some).
#[derive(Debug, Deserialize)]
pub struct Trajectory {
    /// `ATIF-v1.7`…: required, so a JSON document without it is not taken for a trajectory.
    #[expect(dead_code, reason = "read only to require it")]
    pub schema_version: String,
    /// The session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// This document (v1.7+).
    #[serde(default)]
    pub trajectory_id: Option<String>,
    /// The agent system.
    pub agent: Agent,
    /// The interaction, in order.
    pub steps: Vec<Step>,
    /// Custom root metadata; `cosmos` holds a cosmos export's own record.
    #[serde(default)]
    pub extra: Option<Value>,
    /// Embedded subagents (v1.7+): not imported, said.
    #[serde(default)]
    pub subagent_trajectories: Option<Vec<Value>>,
    /// The run's totals, and in its `extra` whatever verdict the writer recorded (a reward,
    /// whether the task was resolved).
    #[serde(default)]
    pub final_metrics: Option<Value>,
}

/// `agent`.
#[derive(Debug, Deserialize)]
pub struct Agent {
    /// The agent system's name.
    pub name: String,
    /// Its version.
    #[serde(default)]
    pub version: Option<String>,
    /// The default model.
    #[serde(default)]
    pub model_name: Option<String>,
    /// OpenAI-style tool definitions.
    #[serde(default)]
    pub tool_definitions: Option<Vec<Value>>,
}

/// One step.
#[derive(Debug, Deserialize)]
pub struct Step {
    /// `system`, `user` or `agent`.
    pub source: String,
    /// ISO 8601.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// The step's model.
    #[serde(default)]
    pub model_name: Option<String>,
    /// Text or content parts.
    #[serde(default)]
    pub message: Value,
    /// The turn's calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Their results.
    #[serde(default)]
    pub observation: Option<StepObservation>,
    /// Tokens.
    #[serde(default)]
    pub metrics: Option<Metrics>,
    /// Custom metadata; `cosmos` holds a cosmos export's event.
    #[serde(default)]
    pub extra: Option<Value>,
    /// LLM inferences in this step (0: a deterministic dispatch).
    #[serde(default)]
    pub llm_call_count: Option<u64>,
}

/// One call.
#[derive(Debug, Deserialize)]
pub struct ToolCall {
    /// Pairs it with its result.
    pub tool_call_id: String,
    /// The tool.
    pub function_name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Value,
    /// Custom metadata; `cosmos` holds a cosmos export's event.
    #[serde(default)]
    pub extra: Option<Value>,
}

/// `observation`.
#[derive(Debug, Deserialize)]
pub struct StepObservation {
    /// One per call or event.
    #[serde(default)]
    pub results: Vec<ObservationResult>,
}

/// One result.
#[derive(Debug, Deserialize)]
pub struct ObservationResult {
    /// The call it answers; none for a system event.
    #[serde(default)]
    pub source_call_id: Option<String>,
    /// Text or content parts.
    #[serde(default)]
    pub content: Option<Value>,
    /// Custom metadata (an `is_error` flag, when a writer keeps one).
    #[serde(default)]
    pub extra: Option<Value>,
}

/// `metrics`.
#[derive(Debug, Deserialize)]
pub struct Metrics {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

/// Reads an ATIF file (one trajectory) into one run.
pub fn read(path: &Path, each: &mut dyn FnMut(Imported) -> Result<()>) -> Result<Said> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    // One session is held while it is converted: a file past the bound is refused, not read
    // until memory runs out.
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_SESSION_BYTES {
        anyhow::bail!(
            "{}: {size} bytes, over the {MAX_SESSION_BYTES} an ATIF session may have here (one session is held whole while it is converted)",
            path.display()
        );
    }
    let bounded = std::io::Read::take(BufReader::new(file), MAX_SESSION_BYTES + 1);
    let trajectory: Trajectory = serde_json::from_reader(bounded)
        .with_context(|| format!("{} is not a whole ATIF trajectory", path.display()))?;
    each(convert(trajectory, &path.display().to_string()))?;
    Ok(Said::default())
}

/// `extra.cosmos` of a value, when cosmos wrote it.
fn cosmos_extra(extra: &Option<Value>) -> Option<&Value> {
    extra.as_ref()?.get("cosmos")
}

/// A cosmos event kept in an export's extras.
fn cosmos_event(extra: &Option<Value>) -> Option<Event> {
    serde_json::from_value(cosmos_extra(extra)?.get("event")?.clone()).ok()
}

/// One trajectory as one run.
/// The trajectory is taken whole and each step let go once converted, so a big session is
/// held about once, not twice.
pub fn convert(mut trajectory: Trajectory, file: &str) -> Imported {
    let id = trajectory
        .session_id
        .clone()
        .or_else(|| trajectory.trajectory_id.clone())
        .unwrap_or_else(|| "session".to_string());
    let source = Source {
        format: Format::Atif.as_str().to_string(),
        file: file.to_string(),
        id: id.clone(),
        ..Source::default()
    };
    let started = trajectory
        .steps
        .iter()
        .find_map(|s| s.timestamp.as_deref().and_then(timestamp));
    let mut draft = Draft::new(source, &id, started);
    let own = cosmos_extra(&trajectory.extra);
    let own_header = own
        .and_then(|c| c.get("header"))
        .and_then(|h| serde_json::from_value::<Header>(h.clone()).ok());
    let exported = own_header.is_some();
    if let Some(header) = own_header {
        draft = draft.with_header(header);
    }
    let agent = &trajectory.agent;
    draft.agent(match &agent.version {
        Some(version) if !version.is_empty() => format!("{} {version}", agent.name),
        _ => agent.name.clone(),
    });
    if let Some(model) = &agent.model_name {
        draft.model(model);
    }
    if !exported {
        draft.tools(
            agent
                .tool_definitions
                .iter()
                .flatten()
                .filter_map(tool_definition),
        );
    }
    if let Some(subagents) = &trajectory.subagent_trajectories {
        draft.skipped(format!(
            "{} embedded subagent trajectories (import each from its own file)",
            subagents.len()
        ));
    }

    // An export's events that no step stands for (the search, simulations, notes), by seq.
    let mut kept: Vec<Event> = own
        .and_then(|c| c.get("events"))
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default();
    kept.sort_by_key(|e| e.seq);
    let mut kept = kept.into_iter().peekable();
    let mut ended = None;
    let mut flush_before = |draft: &mut Draft, seq: u64, ended: &mut Option<Ended>| {
        while let Some(event) = kept.next_if(|e| e.seq < seq) {
            keep(draft, event, ended);
        }
    };

    let last_answer = last_answer_step(&trajectory.steps);
    let steps = std::mem::take(&mut trajectory.steps);
    for (index, step) in steps.into_iter().enumerate() {
        let at = step.timestamp.as_deref().and_then(timestamp);
        let message = content_text(&step.message);
        match step.source.as_str() {
            "user" => draft.user(at, &message),
            "system" => {
                let t_ms = draft.at(at);
                draft.note(t_ms, "system", &message);
            }
            "agent" => {
                let turn_event = cosmos_event(&step.extra);
                if let Some(seq) = turn_event.as_ref().map(|e| e.seq) {
                    flush_before(&mut draft, seq, &mut ended);
                }
                agent_step(&mut draft, &step, at, turn_event, &mut |d, seq| {
                    flush_before(d, seq, &mut ended)
                });
                if Some(index) == last_answer && !message.is_empty() {
                    match cosmos_extra(&step.extra).and_then(|c| c.get("answer")) {
                        Some(answer) => {
                            if let Ok(event) = serde_json::from_value::<Event>(answer.clone()) {
                                flush_before(&mut draft, event.seq, &mut ended);
                                draft.event(event.t_ms, event.body);
                            }
                        }
                        None => draft.answer(at, &message),
                    }
                }
            }
            other => draft.skipped(format!(
                "a step from `{other}`, a source ATIF does not know"
            )),
        }
    }
    flush_before(&mut draft, u64::MAX, &mut ended);
    // A cosmos export brings its verdicts back as events of its own (above).
    if !exported {
        for score in verdicts(&trajectory) {
            draft.scored(None, score);
        }
    }
    draft.finish(None, ended)
}

/// Keys of `final_metrics.extra` that hold a verdict on the run.
const VERDICT_KEYS: &[&str] = &[
    "reward",
    "score",
    "success",
    "passed",
    "resolved",
    "is_resolved",
    "correct",
];

/// The verdicts an ATIF trajectory records: each verdict key of `final_metrics.extra`, and
/// each scorer of `extra.scores` (Inspect's shape, as `cosmos export atif` writes it).
fn verdicts(trajectory: &Trajectory) -> Vec<Score> {
    let mut found = Vec::new();
    if let Some(extra) = trajectory
        .final_metrics
        .as_ref()
        .and_then(|m| m.get("extra"))
        .and_then(Value::as_object)
    {
        for (key, value) in extra {
            if VERDICT_KEYS.contains(&key.to_ascii_lowercase().as_str()) && !value.is_null() {
                found.push(Score {
                    scorer: format!("final_metrics.extra.{key}"),
                    value: value.clone(),
                    answer: None,
                    explanation: None,
                    target: None,
                });
            }
        }
    }
    if let Some(scores) = trajectory
        .extra
        .as_ref()
        .and_then(|e| e.get("scores"))
        .and_then(Value::as_object)
    {
        for (scorer, score) in scores {
            found.push(Score::of_inspect(scorer, score, score.get("target")));
        }
    }
    found
}

/// An exported event no step stands for, put back (`run_finished` gives the ending only: the
/// writer totals the run again).
fn keep(draft: &mut Draft, event: Event, ended: &mut Option<Ended>) {
    match event.body {
        EventBody::RunFinished {
            status,
            error,
            ending,
            end_digest,
            state_match,
            ..
        } => {
            *ended = Some(Ended {
                t_ms: event.t_ms,
                status,
                error,
                ending,
                end_digest,
                state_match,
            })
        }
        body => draft.event(event.t_ms, body),
    }
}

/// The step whose message is the answer: the last agent step, when it calls nothing.
fn last_answer_step(steps: &[Step]) -> Option<usize> {
    let last = steps.iter().rposition(|s| s.source == "agent")?;
    let calls = steps[last]
        .tool_calls
        .as_ref()
        .is_some_and(|c| !c.is_empty());
    (!calls).then_some(last)
}

/// One agent step: its model turn (unless it made no LLM call), then its calls with their
/// observations.
fn agent_step(
    draft: &mut Draft,
    step: &Step,
    at: Option<chrono::DateTime<chrono::Utc>>,
    turn_event: Option<Event>,
    flush_before: &mut dyn FnMut(&mut Draft, u64),
) {
    let calls = step.tool_calls.as_deref().unwrap_or_default();
    let reply = json!({
        "role": "assistant",
        "content": content_text(&step.message),
        "tool_calls": calls.iter().map(|c| json!({"name": c.function_name, "arguments": c.arguments})).collect::<Vec<_>>(),
    });
    match turn_event {
        // cosmos's own record of the turn.
        Some(own) => draft.event(own.t_ms, own.body),
        // A step cosmos exported without a turn (its answer, a call no turn chose) made none.
        None if step.llm_call_count != Some(0) && cosmos_extra(&step.extra).is_none() => {
            let metrics = step.metrics.as_ref();
            draft.turn(Turn {
                at,
                model: step.model_name.clone(),
                prompt_tokens: metrics.and_then(|m| m.prompt_tokens),
                completion_tokens: metrics.and_then(|m| m.completion_tokens),
                latency_ms: None,
                error: None,
                reply,
            });
        }
        None => {}
    }
    let mut results: HashMap<&str, &ObservationResult> = HashMap::new();
    let observation = step.observation.as_ref().map_or(&[][..], |o| &o.results);
    for result in observation {
        match &result.source_call_id {
            Some(id) => {
                results.entry(id.as_str()).or_insert(result);
            }
            None => {
                let t_ms = draft.at(at);
                let text = result
                    .content
                    .as_ref()
                    .map(content_text)
                    .unwrap_or_default();
                draft.note(t_ms, "environment", &text);
            }
        }
    }
    for call in calls {
        let result = results.get(call.tool_call_id.as_str());
        let observation = result.and_then(|r| {
            let is_error = r
                .extra
                .as_ref()
                .and_then(|e| e.get("is_error"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            r.content
                .as_ref()
                .map(|c| Observation::of_text(content_text(c), is_error))
        });
        match cosmos_event(&call.extra) {
            Some(Event {
                seq,
                t_ms,
                body:
                    EventBody::ToolCalled {
                        step: own_step,
                        tool,
                        server,
                        arguments: _,
                        result: own_result,
                        latency_ms,
                        node,
                        error,
                        origin,
                        state_change,
                    },
            }) => {
                flush_before(draft, seq);
                // The call as ATIF has it (arguments, result text); the rest as cosmos kept it.
                let mut result = own_result;
                if let Some(observation) = observation {
                    result.text = observation.text;
                }
                draft.event(
                    t_ms,
                    EventBody::ToolCalled {
                        step: own_step,
                        tool,
                        server,
                        arguments: Box::new(call.arguments.clone()),
                        result,
                        latency_ms,
                        node,
                        error,
                        origin,
                        state_change,
                    },
                );
            }
            _ => {
                draft.call(Call {
                    name: call.function_name.clone(),
                    arguments: call.arguments.clone(),
                    result: observation,
                    error: None,
                    latency_ms: None,
                    at,
                });
            }
        }
    }
}

/// An OpenAI-style tool definition (`{type, function: {name, description, parameters}}`, or
/// the function object itself) as a catalogue entry.
fn tool_definition(definition: &Value) -> Option<ToolInfo> {
    let function = definition.get("function").unwrap_or(definition);
    Some(ToolInfo {
        name: function.get("name")?.as_str()?.to_string(),
        description: function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        input_schema: function
            .get("parameters")
            .or_else(|| function.get("input_schema"))
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}))
            .into(),
        output_schema: None,
        annotations: None,
        ..Default::default()
    })
}
