//! A step's real tool call and a plan's. [`call`] makes it through `real_call` (the one path
//! to a server or a fork's recording, which a call grounded while planning takes too) and
//! records one step (`tool_called`, with the server's progress reports as `call_progress`, one
//! per 250 ms at most; a miss in a fork goes where `--on-miss` says); [`record_call`] is the one
//! record of a real call, which `cosmos proxy` uses too; [`execute_plan`] is phase 2 of the
//! rehearsing agents, the plan's calls in order, each linked to the plan node it executes, with
//! `OnFailure::{Continue, Stop}`, the budget checked before each.

use anyhow::Result;
use serde_json::Value;

use super::fork::OnMiss;
use super::ports::EventSink;
use super::real_call::{Made, from_recording, make};
use super::{End, Env, rehearse};
use crate::mcp::server::{CallOutcome, Progress};
use crate::world_model::HistoryStep;
use cosmos_trajectory::event::{
    Action, Ending, EventBody, NodeId, PROGRESS_EVERY_MS, PredictionRecord,
};

/// One call of a plan.
#[derive(Debug, Clone)]
pub struct PlannedCall {
    /// The node it came from.
    pub node: Option<NodeId>,
    /// Namespaced tool.
    pub tool: String,
    /// Arguments.
    pub arguments: Value,
}

impl PlannedCall {
    /// The call as an action (what a node of a chain records).
    pub fn action(&self) -> Action {
        Action::ToolCall {
            tool: self.tool.clone(),
            arguments: self.arguments.clone(),
        }
    }
}

/// What phase 2 does when a real call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Run the rest of the plan (ReAct-Plan-Exec, SPIRAL-Exec without revision).
    Continue,
    /// Stop at the failed call (SPIRAL-Exec, to revise the plan from there).
    Stop,
}

/// How far a plan got.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// The real steps, in order.
    pub real: Vec<HistoryStep>,
    /// The index in the plan of the call that failed and stopped it ([`OnFailure::Stop`]).
    pub failed_at: Option<usize>,
    /// The budget that stopped the plan before its last call, if one did.
    pub stopped_by: Option<Ending>,
}

/// Makes one real call as step `step`, after the steps `history`, and records it (and the
/// server's death, if this call found it). A call cut off by a stop or the time budget is
/// recorded too, with what cut it (the server may have acted on it), and ends the run (`Err`).
///
/// In a fork with `--tools recorded`, the recording answers instead when it holds the call
/// (a replayed copy), and a miss goes where `--on-miss` says.
pub async fn call(
    env: &Env,
    sink: &mut dyn EventSink,
    step: u64,
    planned: &PlannedCall,
    history: &[HistoryStep],
) -> Result<std::result::Result<HistoryStep, End>> {
    if let Some(recording) = env.fork.as_ref().and_then(|f| f.recording.as_ref()) {
        if let Some((file, recorded)) = from_recording(env, &planned.tool, &planned.arguments) {
            sink.emit(recorded.copied(file, step, planned.node))?;
            return Ok(Ok(HistoryStep {
                tool: planned.tool.clone(),
                arguments: planned.arguments.clone(),
                observation: recorded.result.clone(),
                ..Default::default()
            }));
        }
        match recording.on_miss {
            OnMiss::Real => {}
            OnMiss::Error => {
                let why = format!(
                    "step {step} calls {}, which {} never made: --on-miss error ends the fork here",
                    cosmos_trajectory::describe::call_label(&planned.tool, &planned.arguments),
                    env.fork.as_ref().map_or("", |f| f.of.file.as_str())
                );
                sink.emit(EventBody::Error {
                    source: cosmos_trajectory::event::ErrorSource::Fork,
                    name: None,
                    message: why.clone(),
                    stderr_tail: None,
                    step: None,
                })?;
                return Ok(Err(End::failed(why)));
            }
            OnMiss::WorldModel => return simulate_miss(env, sink, step, planned, history).await,
        }
    }
    // The server's progress reports, recorded as they come (one per PROGRESS_EVERY_MS at most;
    // a report that cannot be written is dropped: the call's own record decides the run).
    let mut last_report: Option<std::time::Instant> = None;
    let mut report = |p: Progress| {
        let every = std::time::Duration::from_millis(PROGRESS_EVERY_MS);
        if last_report.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        last_report = Some(std::time::Instant::now());
        let _ = sink.emit(EventBody::CallProgress {
            step,
            tool: planned.tool.clone(),
            progress: p.progress,
            total: p.total,
            message: p.message,
        });
    };
    let Made {
        server,
        outcome,
        end,
    } = make(env, &planned.tool, &planned.arguments, Some(&mut report)).await;
    let real = record_call(sink, step, planned, server, outcome)?;
    if let Some(end) = end {
        return Ok(Err(end));
    }
    Ok(Ok(real))
}

/// Answers a fork's call that the recording does not hold with the run's world model, and
/// records it as a simulation (`call_simulated`, naming the call), never as a real call. A
/// world model that cannot answer is an `error` and ends the fork: there is no result to go
/// on from.
async fn simulate_miss(
    env: &Env,
    sink: &mut dyn EventSink,
    step: u64,
    planned: &PlannedCall,
    history: &[HistoryStep],
) -> Result<std::result::Result<HistoryStep, End>> {
    let Some(world_model) = env.world_model.clone() else {
        return Ok(Err(End::failed(
            "--on-miss world-model needs a world model (--world-model)",
        )));
    };
    let started = std::time::Instant::now();
    let predicted = match env
        .bounded(rehearse::predict(
            world_model.as_ref(),
            &env.tools,
            &env.task.request,
            history,
            &planned.tool,
            &planned.arguments,
            &env.start_states,
        ))
        .await
        .or_end("the world model was answering a call the recording does not hold")
    {
        Ok(predicted) => predicted,
        Err(end) => return Ok(Err(end)),
    };
    env.meter.spend(predicted.spent);
    for event in predicted.events {
        sink.emit(event)?;
    }
    match predicted.answer {
        Ok(prediction) => {
            sink.emit(EventBody::CallSimulated {
                step,
                tool: Some(planned.tool.clone()),
                arguments: Some(Box::new(planned.arguments.clone())),
                prediction: PredictionRecord {
                    world_model: world_model.name(),
                    observation: prediction.observation.clone(),
                    latency_ms: started.elapsed().as_millis() as u64,
                    tokens: prediction.tokens,
                    confidence: prediction.confidence.as_ref().map(|c| c.value),
                    confidence_source: prediction.confidence.as_ref().map(|c| c.source.clone()),
                    members: prediction.members,
                    predicted_state: prediction.predicted_state.clone().map(Box::new),
                },
            })?;
            Ok(Ok(HistoryStep {
                tool: planned.tool.clone(),
                arguments: planned.arguments.clone(),
                observation: prediction.observation,
                state_change: None,
                predicted_state: prediction.predicted_state.map(std::sync::Arc::new),
            }))
        }
        Err(message) => {
            sink.emit(EventBody::Error {
                source: cosmos_trajectory::event::ErrorSource::WorldModel,
                name: Some(world_model.name()),
                message: message.clone(),
                stderr_tail: None,
                step: None,
            })?;
            Ok(Err(End::failed(format!(
                "the world model could not answer step {step}, a call the recording does not hold: {message}"
            ))))
        }
    }
}

/// Records a real call made as step `step` (the server's requests for input while it ran,
/// `tool_called`, then an `error` when the call found its server dead) and returns it as a step of the history: the one record of a real call,
/// whoever made it (an agent, or the client of `cosmos proxy`).
pub fn record_call(
    sink: &mut dyn EventSink,
    step: u64,
    planned: &PlannedCall,
    server: Option<String>,
    outcome: CallOutcome,
) -> Result<HistoryStep> {
    // What the server asked for while the call ran came before its result.
    for asked in &outcome.elicited {
        sink.emit(EventBody::Elicitation {
            step,
            tool: planned.tool.clone(),
            message: asked.message.clone(),
            requested: Box::new(asked.requested.clone()),
            action: asked.action.to_string(),
            content: asked.content.clone().map(Box::new),
            reason: asked.reason.clone(),
            waited_ms: asked.waited_ms,
        })?;
    }
    sink.emit(EventBody::ToolCalled {
        step,
        tool: planned.tool.clone(),
        server,
        arguments: Box::new(planned.arguments.clone()),
        result: outcome.result.clone(),
        latency_ms: outcome.latency.as_millis() as u64,
        node: planned.node,
        error: outcome.error.clone(),
        origin: None,
        state_change: outcome.state_change.clone(),
    })?;
    if let Some(died) = &outcome.server_died {
        sink.emit(died.event())?;
    }
    Ok(HistoryStep {
        tool: planned.tool.clone(),
        arguments: planned.arguments.clone(),
        observation: outcome.result,
        state_change: outcome.state_change.map(|c| std::sync::Arc::new(*c)),
        predicted_state: None,
    })
}

/// Runs `plan` in order, after the real steps `done`. A spent budget stops it with an
/// `agent` error naming the calls left; a stop request ends the run (`Err`).
pub async fn execute_plan(
    env: &Env,
    sink: &mut dyn EventSink,
    plan: &[PlannedCall],
    done: &[HistoryStep],
    on_failure: OnFailure,
) -> Result<std::result::Result<Executed, End>> {
    let mut executed = Executed {
        real: Vec::new(),
        failed_at: None,
        stopped_by: None,
    };
    for (i, planned) in plan.iter().enumerate() {
        if env.stopped() {
            return Ok(Err(End::interrupted()));
        }
        if let Some(why) = env.meter.over() {
            env.record_agent_error(
                sink,
                format!("{why}: {} planned calls not run", plan.len() - i),
            )?;
            executed.stopped_by = Some(why.ending);
            break;
        }
        let step = (done.len() + executed.real.len() + 1) as u64;
        let history = [done, &executed.real].concat();
        let real = match call(env, sink, step, planned, &history).await? {
            Ok(real) => real,
            Err(end) => return Ok(Err(end)),
        };
        let failed = real.observation.is_error;
        executed.real.push(real);
        if failed && on_failure == OnFailure::Stop {
            executed.failed_at = Some(i);
            break;
        }
    }
    Ok(Ok(executed))
}
