//! Phase 2: the plan's calls on the real servers, each linked to the plan node it executes.

use anyhow::Result;
use serde_json::Value;

use super::recorder::Recorder;
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

/// Makes one real call and records it (and the server's death, if this call found it).
pub async fn call(
    env: &mut Env,
    rec: &mut Recorder,
    step: u64,
    planned: &PlannedCall,
) -> Result<Option<HistoryStep>> {
    let Some((server, outcome)) = env
        .or_stop(env.pool.call(&planned.tool, &planned.arguments))
        .await
    else {
        return Ok(None);
    };
    rec.emit(EventBody::ToolCalled {
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
        rec.emit(EventBody::Error {
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

/// Executes a whole plan in order. Returns the real steps, or how the run ended early.
pub async fn execute_plan(
    env: &mut Env,
    rec: &mut Recorder,
    plan: &[PlannedCall],
) -> Result<Result<Vec<HistoryStep>, End>> {
    let mut real = Vec::new();
    for (i, planned) in plan.iter().enumerate() {
        match call(env, rec, i as u64 + 1, planned).await? {
            Some(step) => real.push(step),
            None => return Ok(Err(End::interrupted())),
        }
    }
    Ok(Ok(real))
}
