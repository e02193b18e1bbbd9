//! ReAct-Plan-Exec: phase 1 runs the ReAct loop against the world model to write a whole
//! plan: each decision is rehearsed like a SPIRAL candidate (the chain case: one candidate, no
//! critic, and a dead end does not stop the chain) and recorded as a chain of nodes. Phase 2
//! runs the plan's calls on the real servers; then the summarizer answers from the real results.

use anyhow::Result;

use super::execute::{OnFailure, PlannedCall, execute_plan};
use super::ports::EventSink;
use super::prompt::{Setting, Turn};
use super::react::planner_turn;
use super::rehearse::{self, Rehearser};
use super::search_env::SearchEnv;
use super::settings::Settings;
use super::{End, Env, Limit, answer};
use crate::world_model::HistoryStep;
use cosmos_trajectory::event::{Action, Ending, EventBody, NodeId, Phase, Verdict};

/// Runs ReAct-Plan-Exec to the end.
pub async fn run(env: &Env, sink: &mut dyn EventSink) -> Result<End> {
    let Some(world_model) = env.world_model.clone() else {
        return Ok(End::failed(
            "ReAct-Plan-Exec needs a world model (--world-model llm|memory|command)",
        ));
    };
    // A fork plans on from the original's steps before the fork point.
    let prior = env.prior_steps();
    let Chain {
        plan,
        nodes: chain,
        risky,
        rejected,
        limit,
        planner_finished,
    } = match plan(env, sink, world_model, &prior).await? {
        Ok(chain) => chain,
        Err(end) => return Ok(end),
    };
    // What ended the planning: a limit or the chain cut short; else a plan without a call
    // the planner never finished; else the planner's finish.
    let planned = match &limit {
        Some(why) => why.ending,
        None if plan.is_empty() && !planner_finished => Ending::NoCallPlanned,
        None => Ending::PlannerFinished,
    };
    if plan.is_empty() && !planner_finished {
        // Nothing to execute: the run failed, and says why.
        let why = match (&limit, rejected) {
            (Some(limit), Some(last)) => format!("{}; last rejected reply: {last}", limit.message),
            (Some(limit), None) => limit.message.clone(),
            (None, Some(last)) => format!("the planner gave no usable decision (last: {last})"),
            (None, None) => "the planner proposed no call".to_string(),
        };
        return Ok(End::failed(format!("no plan to execute: {why}")).ending(planned));
    }
    if let Some(why) = limit {
        env.record_agent_error(sink, why.message)?;
    }
    sink.emit(EventBody::PlanSelected {
        nodes: chain,
        rule: "chain".into(),
        choice: None,
        risky,
    })?;
    sink.emit(EventBody::Phase {
        phase: Phase::Execute,
    })?;
    match execute_plan(env, sink, &plan, &prior, OnFailure::Continue).await? {
        Ok(executed) => {
            // A budget that cut the plan short counts unless planning already went wrong.
            let ending = executed.stopped_by.map_or(planned, |s| planned.then(s));
            let real = [prior, executed.real].concat();
            Ok(answer::answer(env, sink, &real).await?.ending(ending))
        }
        Err(end) => Ok(end.ending(planned)),
    }
}

/// What phase 1 wrote: the plan's calls, the chain's nodes, those resting on a guess, the last
/// rejected reply, the limit that ended planning, and whether the planner finished.
struct Chain {
    plan: Vec<PlannedCall>,
    nodes: Vec<NodeId>,
    risky: Vec<NodeId>,
    rejected: Option<String>,
    limit: Option<Limit>,
    planner_finished: bool,
}

/// Phase 1: the ReAct loop against the world model, each decision rehearsed and recorded as a
/// node of the chain, after the `prior` real steps. `Err` is how the run ended when a stop or
/// the time budget cut it.
async fn plan(
    env: &Env,
    sink: &mut dyn EventSink,
    world_model: std::sync::Arc<dyn crate::world_model::WorldModel>,
    prior: &[HistoryStep],
) -> Result<std::result::Result<Chain, End>> {
    let rehearser = Rehearser::new(env, world_model, prior.len());
    // The step budget ends the chain.
    let settings = Settings::chain();
    sink.emit(EventBody::Phase { phase: Phase::Plan })?;
    sink.emit(EventBody::root())?;
    let mut simulated: Vec<HistoryStep> = prior.to_vec();
    let mut plan: Vec<PlannedCall> = Vec::new();
    let mut chain: Vec<NodeId> = Vec::new();
    // Routing: the chain's steps that rest on an unsure prediction of a tool not read-only.
    let mut risky: Vec<NodeId> = Vec::new();
    let mut rejected: Option<String> = None;
    let mut limit: Option<Limit> = None;
    let mut planner_finished = false;
    let max_steps = env.budget().max_steps;
    for turn_no in 1..=max_steps {
        if let Some(why) = env.meter.over() {
            limit = Some(why);
            break;
        }
        let turn = Turn {
            request: &env.task.request,
            history: &simulated,
            setting: Setting::Rehearsal {
                real_steps: prior.len(),
            },
            k: 1,
            rejected: rejected.as_deref(),
        };
        let action = match planner_turn(env, sink, &turn).await? {
            Ok(Ok(action)) => action,
            Ok(Err(rejection)) => {
                sink.emit(rejection.event())?;
                rejected = Some(rejection.detail);
                continue;
            }
            Err(end) => return Ok(Err(end)),
        };
        rejected = None;
        let node = chain.len() as NodeId + 1;
        let depth = node as u32;
        sink.emit(EventBody::NodeAdded {
            node,
            parent: Some(chain.last().copied().unwrap_or(0)),
            depth,
            action: Some(action.clone()),
            prior: None,
        })?;
        let r = match env
            .bounded(rehearse::rehearse(
                &rehearser,
                &settings,
                &simulated,
                &action,
                (node, depth),
            ))
            .await
            .or_end("rehearsing a step")
        {
            Ok(r) => r,
            Err(end) => {
                rehearser.record_cut(sink, &end)?;
                return Ok(Err(end));
            }
        };
        rehearse::record(sink, node, &r)?;
        rehearser.recorded(node);
        chain.push(node);
        if r.risky {
            risky.push(node);
        }
        let Action::ToolCall { tool, arguments } = action else {
            planner_finished = true;
            break;
        };
        plan.push(PlannedCall {
            node: Some(node),
            tool: tool.clone(),
            arguments: arguments.clone(),
        });
        // A step the world model could not simulate is an unknown, not a failure: it stays in
        // the plan, unsimulated, and the real call decides. Without a prediction to plan on
        // from, the chain ends there.
        if r.verdict == Verdict::NotSimulated {
            limit = Some(Limit {
                ending: Ending::SearchEndedEarly,
                message: format!(
                    "planning stopped at step {node}: the world model could not simulate it; \
                     the step runs unsimulated"
                ),
            });
            break;
        }
        simulated.push(HistoryStep {
            tool,
            arguments,
            observation: r.observation().cloned().unwrap_or_default(),
            state_change: r
                .grounded
                .as_ref()
                .and_then(|g| g.state_change.clone())
                .map(|c| std::sync::Arc::new(*c)),
            predicted_state: r.predicted_state(),
        });
        if turn_no == max_steps {
            limit = Some(Limit::steps(max_steps, "while planning"));
        }
    }
    Ok(Ok(Chain {
        plan,
        nodes: chain,
        risky,
        rejected,
        limit,
        planner_finished,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::agent::testing::{self, ScriptedChat, ScriptedTools, ScriptedWorldModel};
    use cosmos_trajectory::event::{Observation, RunStatus, VALIDATOR};
    use serde_json::json;

    fn tools() -> Arc<ScriptedTools> {
        ScriptedTools::new(&["s:a", "s:b"], |tool, _| Observation {
            text: format!("{tool} real"),
            ..Default::default()
        })
    }

    #[tokio::test]
    async fn a_step_the_world_model_could_not_simulate_ends_the_chain_and_runs_unsimulated() {
        let planner = ScriptedChat::json_replies(vec![
            json!({"action": "call", "tool": "s:a", "arguments": {}}),
            json!({"action": "finish"}),
        ]);
        let wm = ScriptedWorldModel(Box::new(|_| Err("world model LLM failed: refused".into())));
        let tools = tools();
        let env = testing::env(planner, None, tools.clone(), Some(Arc::new(wm)), 4);
        let mut events = Vec::new();
        let end = run(&env, &mut events).await.unwrap();
        assert_eq!(end.status, RunStatus::Completed, "the real call decided");
        assert_eq!(
            end.ending,
            Some(Ending::SearchEndedEarly),
            "the chain was cut short"
        );
        // The failure is an error, never a prediction.
        assert!(events.iter().any(|e| matches!(e, EventBody::Error { source, message, .. } if *source == cosmos_trajectory::event::ErrorSource::WorldModel && message.contains("refused"))));
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, EventBody::NodeSimulated { .. }))
        );
        assert!(events.iter().any(|e| matches!(
            e,
            EventBody::NodeEvaluated {
                node: 1,
                verdict: Verdict::NotSimulated,
                ..
            }
        )));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::Error { source, message, .. }
            if *source == cosmos_trajectory::event::ErrorSource::Agent && message.contains("runs unsimulated")))
        );
        // The unknown step stays in the plan, and the real call is made.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::PlanSelected { nodes, .. } if nodes == &[1]))
        );
        assert_eq!(tools.called().len(), 1);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::ToolCalled { node: Some(1), .. }))
        );
    }

    #[tokio::test]
    async fn a_chain_with_no_usable_decision_fails_the_run_saying_why() {
        // Every reply calls without a tool: each is rejected and told back, until the step
        // budget is spent; nothing is executed and the run is `failed`, never `completed`.
        let planner = ScriptedChat::json_replies(vec![json!({"action": "call"})]);
        let wm = ScriptedWorldModel(Box::new(|tool| Ok(format!("{tool} predicted"))));
        let tools = tools();
        let env = testing::env(planner, None, tools.clone(), Some(Arc::new(wm)), 3);
        let mut events = Vec::new();
        let end = run(&env, &mut events).await.unwrap();
        assert_eq!(end.status, RunStatus::Failed);
        let error = end.error.clone().unwrap_or_default();
        assert!(
            error.contains("no plan to execute") && error.contains("names no tool"),
            "{error}"
        );
        let rejected = events
            .iter()
            .filter(|e| matches!(e, EventBody::DecisionRejected { .. }))
            .count();
        assert_eq!(rejected, 3);
        assert!(tools.called().is_empty());
        assert!(!events.iter().any(|e| matches!(e, EventBody::Answer { .. })));
    }

    #[tokio::test]
    async fn a_spent_budget_stops_the_plan_before_its_calls_and_writes_no_answer() {
        let planner = ScriptedChat::json_replies(vec![
            json!({"action": "call", "tool": "s:a", "arguments": {}}),
            json!({"action": "call", "tool": "s:b", "arguments": {}}),
        ]);
        let wm = ScriptedWorldModel(Box::new(|tool| Ok(format!("{tool} predicted"))));
        let tools = tools();
        let mut env = testing::env(planner, None, tools.clone(), Some(Arc::new(wm)), 6);
        // One planner turn (15 tokens) and one prediction (23) spend a 30-token budget.
        env.meter = Arc::new(crate::agent::Meter::new(crate::agent::Budget {
            max_tokens: 30,
            ..*env.budget()
        }));
        let mut events = Vec::new();
        let end = run(&env, &mut events).await.unwrap();
        assert!(
            tools.called().is_empty(),
            "no real call with the budget spent"
        );
        let errors: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::Error { message, .. } => Some(message.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            errors,
            [
                "token budget of 30 spent",
                "token budget of 30 spent: 1 planned calls not run"
            ]
        );
        assert_eq!(
            end,
            End::failed("no answer written: token budget of 30 spent").ending(Ending::TokenLimit)
        );
    }

    #[tokio::test]
    async fn each_step_is_rehearsed_like_a_spiral_candidate_and_then_run_for_real() {
        let planner = ScriptedChat::json_replies(vec![
            json!({"action": "call", "tool": "s:a", "arguments": {}}),
            json!({"action": "call", "tool": "s:zzz", "arguments": {}}),
            json!({"action": "call", "tool": "s:b", "arguments": {}}),
            json!({"action": "finish", "answer": "planned"}),
            json!({"action": "finish"}),
        ]);
        let wm = ScriptedWorldModel(Box::new(|tool| Ok(format!("{tool} predicted"))));
        let tools = tools();
        let env = testing::env(planner, None, tools.clone(), Some(Arc::new(wm)), 6);
        let mut events = Vec::new();
        run(&env, &mut events).await.unwrap();
        let simulated: Vec<(u64, &str, Option<u64>)> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::NodeSimulated {
                    node,
                    prediction:
                        cosmos_trajectory::event::PredictionRecord {
                            world_model,
                            tokens,
                            ..
                        },
                    ..
                } => Some((*node, world_model.as_str(), *tokens)),
                _ => None,
            })
            .collect();
        // The world model's tokens on its predictions; the unknown tool is the validator's.
        assert_eq!(
            simulated,
            [
                (1, "scripted", Some(23)),
                (2, VALIDATOR, None),
                (3, "scripted", Some(23))
            ]
        );
        let verdicts: Vec<(u64, Verdict, f64)> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::NodeEvaluated {
                    node,
                    verdict,
                    base_reward,
                    ..
                } => Some((*node, *verdict, *base_reward)),
                _ => None,
            })
            .collect();
        assert_eq!(
            verdicts,
            [
                (1, Verdict::Valid, 0.1),
                (2, Verdict::Invalid, -1.0),
                (3, Verdict::Valid, 0.1),
                (4, Verdict::Finish, 1.0)
            ]
        );
        // The chain is the plan: the invalid call runs too, and fails for real.
        assert_eq!(tools.called(), ["s:a", "s:zzz", "s:b"]);
    }
}
