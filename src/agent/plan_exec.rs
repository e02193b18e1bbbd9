//! ReAct-Plan-Exec: phase 1 runs the ReAct loop against the world model (simulated
//! observations only) to write a whole plan, recorded as a chain of nodes; phase 2 runs the
//! plan's calls on the real servers; then the summarizer answers from the real results.

use anyhow::Result;

use super::execute::{PlannedCall, execute_plan};
use super::recorder::Recorder;
use super::{End, Env, answer, planner_turn};
use crate::trajectory::event::{Action, EventBody, NodeId, Observation, Phase, Verdict};
use crate::world_model::{HistoryStep, SimRequest};

/// Runs ReAct-Plan-Exec to the end.
pub async fn run(env: &mut Env, rec: &mut Recorder) -> Result<End> {
    let Some(world_model) = env.world_model.clone() else {
        return Ok(End::failed(
            "ReAct-Plan-Exec needs a world model (--world-model llm|memory|command)",
        ));
    };
    rec.emit(EventBody::Phase { phase: Phase::Plan })?;
    rec.emit(EventBody::NodeAdded {
        node: 0,
        parent: None,
        depth: 0,
        action: None,
        prior: None,
    })?;
    let mut simulated: Vec<HistoryStep> = Vec::new();
    let mut plan: Vec<PlannedCall> = Vec::new();
    let mut chain: Vec<NodeId> = Vec::new();
    let mut parent: NodeId = 0;
    let mut limit = None;
    for depth in 1..=env.budget.max_steps as u32 {
        if let Some(why) = env.over_budget() {
            limit = Some(why);
            break;
        }
        let mode = "Tool results you see are predictions of a world model; you are writing a plan that will be run for real afterwards.";
        let decision = match planner_turn(env, rec, &simulated, mode, "predicted results").await? {
            Ok(d) => d,
            Err(end) => return Ok(end),
        };
        let node = NodeId::from(depth);
        rec.emit(EventBody::NodeAdded {
            node,
            parent: Some(parent),
            depth,
            action: Some(decision.action.clone()),
            prior: None,
        })?;
        chain.push(node);
        let (tool, arguments) = match decision.action {
            Action::Finish { .. } => {
                rec.emit(EventBody::NodeEvaluated {
                    node,
                    verdict: Verdict::Finish,
                    base_reward: 1.0,
                    critic_reward: None,
                    critic_reason: None,
                    reward: 1.0,
                    terminal: true,
                })?;
                break;
            }
            Action::ToolCall { tool, arguments } => (tool, arguments),
        };
        // An unknown tool or bad arguments is predicted as the error the server would give.
        let check = env.catalog.check(&tool, &arguments);
        let observation = match env.tools.iter().find(|t| t.name == tool) {
            Some(info) if check.schema_ok => {
                let req = SimRequest {
                    tool: info,
                    arguments: &arguments,
                    user_request: &env.task.request,
                    history: &simulated,
                };
                let Some(sim) = env.or_stop(world_model.simulate(req)).await else {
                    return Ok(End::interrupted());
                };
                match sim {
                    Ok(sim) => {
                        if let Some(usage) = &sim.llm {
                            env.record_world_model_llm(rec, usage)?;
                        }
                        rec.emit(EventBody::NodeSimulated {
                            node,
                            world_model: world_model.name(),
                            observation: sim.observation.clone(),
                            latency_ms: sim.latency.as_millis() as u64,
                            tokens: sim
                                .llm
                                .as_ref()
                                .map(|u| u.prompt_tokens + u.completion_tokens),
                        })?;
                        sim.observation
                    }
                    Err(f) => {
                        if let Some(usage) = &f.llm {
                            env.record_world_model_llm(rec, usage)?;
                        }
                        rec.emit(EventBody::Error {
                            source: "world_model".into(),
                            name: Some(world_model.name()),
                            message: f.message.clone(),
                            stderr_tail: None,
                        })?;
                        Observation {
                            text: f.message,
                            is_error: true,
                            ..Default::default()
                        }
                    }
                }
            }
            _ => Observation {
                text: env
                    .catalog
                    .explain(&tool, &arguments)
                    .unwrap_or_else(|| "invalid call".into()),
                is_error: true,
                ..Default::default()
            },
        };
        let (verdict, base) = if !check.valid_name || !check.schema_ok {
            (Verdict::Invalid, -1.0)
        } else if observation.is_error {
            (Verdict::DeadEnd, -0.5)
        } else {
            (Verdict::Valid, 0.1)
        };
        rec.emit(EventBody::NodeEvaluated {
            node,
            verdict,
            base_reward: base,
            critic_reward: None,
            critic_reason: None,
            reward: base,
            terminal: false,
        })?;
        simulated.push(HistoryStep {
            tool: tool.clone(),
            arguments: arguments.clone(),
            observation,
        });
        plan.push(PlannedCall {
            node: Some(node),
            tool,
            arguments,
        });
        parent = node;
        if depth as usize == env.budget.max_steps {
            limit = Some(format!(
                "step limit of {} reached while planning",
                env.budget.max_steps
            ));
        }
    }
    if let Some(why) = limit {
        rec.emit(EventBody::Error {
            source: "agent".into(),
            name: None,
            message: why,
            stderr_tail: None,
        })?;
    }
    rec.emit(EventBody::PlanSelected {
        nodes: chain,
        rule: "chain".into(),
    })?;
    rec.emit(EventBody::Phase {
        phase: Phase::Execute,
    })?;
    let real = match execute_plan(env, rec, &plan).await? {
        Ok(real) => real,
        Err(end) => return Ok(end),
    };
    answer::answer(env, rec, &real).await
}
