//! Real tool calls: [`call`] makes one and records it (ReAct calls it each turn);
//! [`execute_plan`] is phase 2 of the rehearsing agents, the plan's calls in order, each
//! linked to the plan node it executes, with what to do on a failure as a parameter.

use anyhow::Result;
use serde_json::Value;

use super::ports::EventSink;
use super::{End, Env};
use crate::trajectory::event::{EventBody, NodeId};
use crate::world_model::HistoryStep;

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
}

/// Makes one real call as step `step` and records it (and the server's death, if this call
/// found it). `None` when a stop came first.
pub async fn call(
    env: &Env,
    sink: &mut dyn EventSink,
    step: u64,
    planned: &PlannedCall,
) -> Result<Option<HistoryStep>> {
    let Some((server, outcome)) = env
        .or_stop(env.host.call(&planned.tool, &planned.arguments))
        .await
    else {
        return Ok(None);
    };
    sink.emit(EventBody::ToolCalled {
        step,
        tool: planned.tool.clone(),
        server,
        arguments: planned.arguments.clone(),
        result: outcome.result.clone(),
        latency_ms: outcome.latency.as_millis() as u64,
        node: planned.node,
        error: outcome.error.clone(),
    })?;
    if let Some(died) = outcome.server_died {
        sink.emit(EventBody::Error {
            source: "server".into(),
            name: Some(died.name),
            message: died.message,
            stderr_tail: died.stderr_tail,
        })?;
    }
    Ok(Some(HistoryStep {
        tool: planned.tool.clone(),
        arguments: planned.arguments.clone(),
        observation: outcome.result,
    }))
}

/// Runs `plan` in order, numbering steps after `done` real steps. A spent budget stops it
/// with an `agent` error naming the calls left; a stop request ends the run (`Err`).
pub async fn execute_plan(
    env: &Env,
    sink: &mut dyn EventSink,
    plan: &[PlannedCall],
    done: usize,
    on_failure: OnFailure,
) -> Result<std::result::Result<Executed, End>> {
    let mut executed = Executed {
        real: Vec::new(),
        failed_at: None,
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
            break;
        }
        let step = (done + executed.real.len() + 1) as u64;
        let Some(real) = call(env, sink, step, planned).await? else {
            return Ok(Err(End::interrupted()));
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
