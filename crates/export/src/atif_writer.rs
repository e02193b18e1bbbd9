//! A run as an ATIF v1.7 trajectory (Harbor's Agent Trajectory Interchange Format), the
//! version most readers take (Docent, Arize Phoenix): the task a user step, each planner turn
//! an agent step with its model and tokens, each real call a tool call of the step whose turn
//! chose it and executed it at once (ReAct's), with its observation; a call executed later (a
//! plan's execution, SPIRAL's best path) a step of its own in time order, naming the plan node
//! it executes and the step of the turn that proposed it; the answer the last agent step.
//!
//! What only cosmos has goes under `extra.cosmos` (docs/import.md, "ATIF export"):
//! - the trajectory's: `{"shape": "mcp-cosmos/atif/1", "header": <the run's header>, "events":
//!   [<every event no step stands for>]}`: the search tree, simulations, routing, phases,
//!   the other roles' LLM calls, notes, `run_finished`, judgements;
//! - a turn's step: `{"event": <its llm_call>}`; the answer's step: `{"answer": <its answer>}`;
//! - a tool call's: `{"event": <its tool_called>, "simulated": {world_model, text, confidence?,
//!   fidelity}}`, the second when a world model predicted the call;
//! - an executed plan call's step: `{"executes": {"node": N, "proposed_by_step": S?}}`.
//!
//! An imported run's source verdicts (`source_scored`) are also written as `extra.scores`, in
//! Inspect's shape (`{scorer: {value, answer, explanation, target}}`).
//!
//! Every event keeps its `seq`, so `cosmos import` puts each back in its place.

use std::io::Write;

use anyhow::Result;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value, json};

use cosmos_trajectory::event::{EventBody, Header, PredictionRecord, Role, Source};
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;

use cosmos_metrics::fidelity;

/// The ATIF version written.
pub const SCHEMA_VERSION: &str = "ATIF-v1.7";
/// The `shape` of the trajectory's `extra.cosmos`.
pub const EXTRA_SHAPE: &str = "mcp-cosmos/atif/1";

/// Claude Code's name of an MCP tool, `mcp__SERVER__TOOL`, which `cosmos import` reads back as
/// `SERVER:TOOL`; a tool of no server keeps its name.
pub fn function_name(tool: &str, server: Option<&str>) -> String {
    match server.and_then(|s| Some((s, cosmos_trajectory::event::own_tool_name(tool, s)?))) {
        Some((server, own)) => format!("mcp__{server}__{own}"),
        None => tool.to_string(),
    }
}

/// The step being built.
struct Step(Map<String, Value>);

impl Step {
    fn new(source: &str, at: Option<String>) -> Self {
        let mut step = Map::new();
        step.insert("step_id".into(), json!(0));
        if let Some(at) = at {
            step.insert("timestamp".into(), json!(at));
        }
        step.insert("source".into(), json!(source));
        step.insert("message".into(), json!(""));
        Self(step)
    }

    fn calls(&mut self) -> &mut Vec<Value> {
        let calls = self
            .0
            .entry("tool_calls")
            .or_insert_with(|| Value::Array(Vec::new()));
        calls.as_array_mut().expect("made an array")
    }

    fn results(&mut self) -> &mut Vec<Value> {
        let observation = self
            .0
            .entry("observation")
            .or_insert_with(|| json!({"results": []}));
        observation["results"]
            .as_array_mut()
            .expect("made an array")
    }
}

/// Writes `run` as one ATIF trajectory (JSON).
pub fn write(run: &Run, out: &mut dyn Write) -> Result<()> {
    let header = &run.header;
    let timed = header.recorded(Source::TIMES);
    let at = |t_ms: u64| -> Option<String> {
        let start: DateTime<Utc> = header.started_at.filter(|_| timed)?;
        Some((start + Duration::milliseconds(t_ms as i64)).to_rfc3339())
    };
    let simulated_of: std::collections::HashMap<u32, u32> = run
        .steps()
        .iter()
        .filter_map(|s| Some((s.event, s.simulated?)))
        .collect();

    let mut steps: Vec<Step> = Vec::new();
    if let Some(request) = header.request() {
        let mut user = Step::new("user", at(0));
        user.0.insert("message".into(), json!(request));
        steps.push(user);
    }
    let mut kept = Vec::new();
    // The agent step the next real call belongs to (its turn chose it), while it answers none.
    let mut turn_open = false;
    // The latest planner turn's place in `steps`, and for each plan node the turn that was
    // latest when it was proposed.
    let mut last_turn: Option<usize> = None;
    let mut proposed_by: std::collections::HashMap<u64, usize> = Default::default();
    let (mut prompt_total, mut completion_total) = (0u64, 0u64);
    for i in 0..run.len() {
        let event = run.event(i);
        if let Some(call) = RecordedCall::of(&event.body) {
            let executes = match &event.body {
                EventBody::ToolCalled { node, .. } => *node,
                _ => None,
            };
            if !turn_open || executes.is_some() {
                let proposed = executes.and_then(|node| proposed_by.get(&node).copied());
                steps.push(unchosen_call_step(at(event.t_ms), executes, proposed));
                // The next call of this node's plan is a step of its own too.
                turn_open = executes.is_none();
            }
            let id = format!("call-{}", call.step);
            let mut extra = json!({"event": &*event});
            if let Some(simulated) = simulated_of
                .get(&(i as u32))
                .and_then(|&sim| prediction_of(&run.event(sim as usize).body, &call))
            {
                extra["simulated"] = simulated;
            }
            let step = steps.last_mut().expect("an agent step was opened");
            step.calls().push(json!({
                "tool_call_id": id,
                "function_name": function_name(call.tool, call.server),
                "arguments": if call.arguments.is_object() { call.arguments.clone() } else { json!({}) },
                "extra": {"cosmos": extra},
            }));
            let mut answered = json!({"source_call_id": id, "content": call.result.text});
            if call.failed() {
                answered["extra"] = json!({"is_error": true, "error": call.error});
            }
            step.results().push(answered);
            continue;
        }
        match &event.body {
            EventBody::LlmCall {
                role: Role::Planner,
                model,
                prompt_tokens,
                completion_tokens,
                messages,
                ..
            } => {
                let mut step = Step::new("agent", at(event.t_ms));
                if !model.is_empty() {
                    step.0.insert("model_name".into(), json!(model));
                }
                step.0
                    .insert("message".into(), json!(reply_text(messages.as_deref())));
                if header.recorded(Source::TOKENS) {
                    step.0.insert(
                        "metrics".into(),
                        json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}),
                    );
                    prompt_total += prompt_tokens;
                    completion_total += completion_tokens;
                }
                step.0
                    .insert("extra".into(), json!({"cosmos": {"event": &*event}}));
                steps.push(step);
                last_turn = Some(steps.len() - 1);
                turn_open = true;
            }
            EventBody::NodeAdded { node, .. } => {
                if let Some(turn) = last_turn {
                    proposed_by.insert(*node, turn);
                }
                kept.push(event.into_owned());
            }
            EventBody::Answer { text } => {
                let mut step = Step::new("agent", at(event.t_ms));
                step.0.insert("message".into(), json!(text));
                step.0
                    .insert("extra".into(), json!({"cosmos": {"answer": &*event}}));
                steps.push(step);
                turn_open = false;
            }
            _ => kept.push(event.into_owned()),
        }
    }
    let steps: Vec<Value> = steps
        .into_iter()
        .enumerate()
        .map(|(n, mut step)| {
            step.0.insert("step_id".into(), json!(n + 1));
            Value::Object(step.0)
        })
        .collect();
    let mut final_metrics = json!({"total_steps": steps.len()});
    if header.recorded(Source::TOKENS) {
        final_metrics["total_prompt_tokens"] = json!(prompt_total);
        final_metrics["total_completion_tokens"] = json!(completion_total);
    }
    let trajectory = json!({
        "schema_version": SCHEMA_VERSION,
        "session_id": header.run_id,
        "trajectory_id": header.run_id,
        "agent": agent_of(header),
        "steps": steps,
        "final_metrics": final_metrics,
        "extra": trajectory_extra(header, kept),
    });
    serde_json::to_writer(&mut *out, &trajectory)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// The trajectory's `extra`: cosmos's own record (its header and every event no step stands
/// for) and, for an imported run, its source's verdicts as `scores`.
fn trajectory_extra(header: &Header, kept: Vec<cosmos_trajectory::event::Event>) -> Value {
    let scores = source_scores(&kept);
    let mut extra = json!({"cosmos": {"shape": EXTRA_SHAPE, "header": header, "events": kept}});
    if !scores.is_empty() {
        extra["scores"] = Value::Object(scores);
    }
    extra
}

/// The step of a call no turn just chose (a plan's node executed, a proxy's client): one that
/// made no LLM call, naming the node it executes and the step of the turn that proposed it.
fn unchosen_call_step(at: Option<String>, executes: Option<u64>, proposed: Option<usize>) -> Step {
    let mut step = Step::new("agent", at);
    step.0.insert("llm_call_count".into(), json!(0));
    if let Some(node) = executes {
        let mut executed = json!({"node": node});
        if let Some(turn) = proposed {
            executed["proposed_by_step"] = json!(turn + 1);
        }
        step.0
            .insert("extra".into(), json!({"cosmos": {"executes": executed}}));
    }
    step
}

/// The source's verdicts among `kept`, in Inspect's shape (`{scorer: {value, answer,
/// explanation, target}}`), where a reader that knows no cosmos finds them.
fn source_scores(kept: &[cosmos_trajectory::event::Event]) -> Map<String, Value> {
    kept.iter()
        .filter_map(|e| match &e.body {
            EventBody::SourceScored {
                scorer,
                value,
                answer,
                explanation,
                target,
                ..
            } => Some((
                scorer.clone(),
                json!({"value": value, "answer": answer, "explanation": explanation, "target": target}),
            )),
            _ => None,
        })
        .collect()
}

/// What the world model predicted for a call (its node's `node_simulated`), with the fidelity
/// of that prediction to the real result.
fn prediction_of(simulated: &EventBody, call: &RecordedCall) -> Option<Value> {
    let EventBody::NodeSimulated {
        prediction:
            PredictionRecord {
                world_model,
                observation,
                confidence,
                ..
            },
        ..
    } = simulated
    else {
        return None;
    };
    Some(json!({
        "world_model": world_model,
        "text": observation.text,
        "confidence": confidence,
        "fidelity": fidelity::compare(observation, call.result).score,
    }))
}

/// ATIF's `agent`: cosmos, the planner's model, and the run's tools as function definitions.
fn agent_of(header: &Header) -> Value {
    let tools: Vec<Value> = header
        .tools
        .iter()
        .map(|t| {
            let server = t.name.split_once(':').map(|(s, _)| s);
            json!({"type": "function", "function": {
                "name": function_name(&t.name, server),
                "description": t.description,
                "parameters": t.input_schema.value(),
            }})
        })
        .collect();
    let mut agent = json!({"name": "mcp-cosmos", "version": header.tool_version});
    if let Some(model) = header.planner_model() {
        agent["model_name"] = json!(model);
    }
    if !tools.is_empty() {
        agent["tool_definitions"] = Value::Array(tools);
    }
    agent
}

/// The reply's text of recorded messages (the last one, the assistant's), or nothing.
fn reply_text(messages: Option<&Value>) -> String {
    messages
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .and_then(|m| m.get("content"))
        .map(cosmos_engine::import::content_text)
        .unwrap_or_default()
}
