//! SPIRAL-Exec: phase 1 is the Monte Carlo tree search of [`super::mcts`] over the world
//! model, each candidate rehearsed by [`super::rehearse`] (planner proposing K, world model
//! predicting, critic scoring); phase 2 runs the best plan on the real servers; then the
//! summarizer answers.

use std::sync::Arc;

use anyhow::Result;

use super::execute::{OnFailure, PlannedCall, execute_plan};
use super::mcts::{self, Origin, Search, Tree};
use super::ports::EventSink;
use super::rehearse::Rehearser;
use super::{Bounded, End, Env, answer};
use super::{Settings, Stopped};
use crate::world_model::{HistoryStep, WorldModel};
use cosmos_trajectory::event::{Action, Ending, EventBody, NodeId, Phase};

/// Runs SPIRAL-Exec to the end.
///
/// With execution-time revision on, a real call that fails ends phase 2 early: a new search
/// (the same settings, the run's remaining token and time budget) starts from the real steps
/// taken, the failed one included so the planner sees the real error, and hangs under the
/// failed node in the tree; its plan runs next. At most `settings.revisions` times, and
/// never past the run's step budget.
pub async fn run(env: &Env, sink: &mut dyn EventSink, settings: &Settings) -> Result<End> {
    let Some(world_model) = env.world_model.clone() else {
        return Ok(End::failed(
            "SPIRAL-Exec needs a world model (--world-model llm|memory|command)",
        ));
    };
    // A fork's search starts from the original's steps before the fork point.
    let mut real: Vec<HistoryStep> = env.prior_steps();
    let mut origin = Origin {
        history: real.clone(),
        ..Origin::default()
    };
    let mut revisions_left = settings.revisions;
    // The run's node ids of the path the real steps executed (the plan so far).
    let mut path: Vec<NodeId> = Vec::new();
    // What ended the run: the first thing that went wrong, else how the last search ended.
    let mut ending = Ending::SearchExhausted;
    loop {
        sink.emit(EventBody::Phase { phase: Phase::Plan })?;
        let search_settings = Settings {
            // The real steps already spent part of the depth.
            max_depth: settings.max_depth.saturating_sub(real.len() as u32).max(1),
            ..*settings
        };
        let (searched, cut_short) =
            match search(env, sink, &world_model, &search_settings, &origin).await? {
                Ok(searched) => searched,
                Err(end) => return Ok(end.ending(ending)),
            };
        let tree = &searched.tree;
        let choice = tree.choose(settings.plan_rule);
        let plan = &choice.path;
        if plan.is_empty() {
            let (why, cause) = no_plan(&searched, cut_short);
            if origin.anchor.is_none() {
                // Nothing to execute and nothing executed: the run failed, and says why.
                return Ok(End::failed(why).ending(ending.then(cause)));
            }
            // A revision that found nothing still leaves the real steps to answer from.
            env.record_agent_error(sink, format!("the revision has {why}"))?;
        }
        if origin.anchor.is_some() {
            path.push(origin.id(0));
        }
        path.extend(plan.iter().map(|&i| origin.id(i)));
        sink.emit(EventBody::PlanSelected {
            nodes: path.clone(),
            rule: settings.plan_rule.as_str().into(),
            choice: choice.recorded(tree, &origin),
            risky: plan
                .iter()
                .filter(|&&i| tree.nodes[i].risky)
                .map(|&i| origin.id(i))
                .collect(),
        })?;
        let (calls, indices) = plan_calls(tree, plan, &origin);
        let finishes = plan
            .last()
            .is_some_and(|&i| matches!(tree.nodes[i].action, Some(Action::Finish { .. })));
        ending = ending.then(match cut_short {
            Some(cut) => cut,
            None if calls.is_empty() && !finishes => Ending::NoCallPlanned,
            None if finishes => Ending::PlannerFinished,
            None => Ending::SearchExhausted,
        });
        sink.emit(EventBody::Phase {
            phase: Phase::Execute,
        })?;
        // A revision needs steps left to run and a budget to search with.
        let can_revise = |done: usize| {
            revisions_left > 0 && done < env.budget().max_steps && env.meter.over().is_none()
        };
        let on_failure = if revisions_left > 0 {
            OnFailure::Stop
        } else {
            OnFailure::Continue
        };
        let executed = match execute_plan(env, sink, &calls, &real, on_failure).await? {
            Ok(executed) => executed,
            Err(end) => return Ok(end.ending(ending)),
        };
        if let Some(stopped) = executed.stopped_by {
            ending = ending.then(stopped);
        }
        let made = executed.real.len();
        real.extend(executed.real);
        // Short-horizon imagination (routing): a plan that ends where the search stopped
        // imagining (`Node::horizon`) has run for real; the search goes on from its real
        // result, as long as it made progress and steps and budget are left.
        let horizon_end = plan
            .last()
            .copied()
            .filter(|&i| tree.nodes[i].horizon.is_some());
        if let Some(last) = horizon_end
            && executed.failed_at.is_none()
            && executed.stopped_by.is_none()
            && made > 0
            && real.len() < env.budget().max_steps
            && env.meter.over().is_none()
        {
            origin = Origin {
                history: real.clone(),
                first_id: origin.id(tree.nodes.len()),
                anchor: Some((origin.id(last), origin.depth(tree.nodes[last].depth))),
            };
            continue;
        }
        let Some(failed) = executed.failed_at.filter(|_| can_revise(real.len())) else {
            break;
        };
        revisions_left -= 1;
        // The plan so far ends at the failed node; the revision hangs under it.
        let failed = indices[failed];
        let failed_id = origin.id(failed);
        if let Some(at) = path.iter().position(|&n| n == failed_id) {
            path.truncate(at + 1);
        }
        origin = Origin {
            history: real.clone(),
            first_id: origin.id(tree.nodes.len()),
            anchor: Some((failed_id, origin.depth(tree.nodes[failed].depth))),
        };
    }
    Ok(answer::answer(env, sink, &real).await?.ending(ending))
}

/// The plan's calls, and beside each the tree index of its node (where a revision hangs).
fn plan_calls(tree: &Tree, plan: &[usize], origin: &Origin) -> (Vec<PlannedCall>, Vec<usize>) {
    plan.iter()
        .filter_map(|&i| match &tree.nodes[i].action {
            Some(Action::ToolCall { tool, arguments }) => Some((
                PlannedCall {
                    node: Some(origin.id(i)),
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                },
                i,
            )),
            _ => None,
        })
        .unzip()
}

/// One search (the first, or a revision) with the budget the run has left, and the ending it
/// gives the run when it was cut short. `Err` is how the run ended when the search was
/// stopped (a stop request, the time budget).
async fn search(
    env: &Env,
    sink: &mut dyn EventSink,
    world_model: &Arc<dyn WorldModel>,
    settings: &Settings,
    origin: &Origin,
) -> Result<std::result::Result<(Search, Option<Ending>), End>> {
    let rehearser = Rehearser::new(env, world_model.clone(), origin.history.len());
    // The whole search is bounded: a stop or the time budget cancels the calls in flight,
    // which are recorded as cut off, and the search still ends with its `search_finished`
    // saying so. Events recorded so far stay in the file.
    let mut searched = Search::new();
    let grown = env
        .bounded(mcts::grow(
            &rehearser,
            settings,
            origin,
            sink,
            &mut searched,
        ))
        .await;
    let (stopped, cut) = match grown {
        Bounded::Done(stopped) => (stopped?, None),
        Bounded::Stopped => (Stopped::Interrupted, Some(End::interrupted())),
        Bounded::OutOfTime(why) => {
            let end = End::out_of_time(&why, "searching");
            (Stopped::Budget(why), Some(end))
        }
    };
    if let Some(end) = &cut {
        rehearser.record_cut(sink, end)?;
    }
    mcts::finish(origin, sink, &mut searched, stopped)?;
    if let Some(end) = cut {
        return Ok(Err(end));
    }
    let cut_short = match &searched.stopped {
        Stopped::Interrupted => return Ok(Err(End::interrupted())),
        Stopped::PlannerFailed(e) | Stopped::WorldModelFailed(e) => {
            env.record_agent_error(sink, format!("search stopped early: {e}"))?;
            Some(Ending::SearchEndedEarly)
        }
        Stopped::Budget(e) => {
            env.record_agent_error(sink, format!("search stopped early: {e}"))?;
            // A stop request returned above: this is a spent budget, or the tokens left that
            // cannot cover another rehearsal (the meter not yet over).
            Some(env.meter.over().map_or(Ending::TokenLimit, |l| l.ending))
        }
        Stopped::Done | Stopped::Exhausted => None,
    };
    Ok(Ok((searched, cut_short)))
}

/// Why a search left no plan, in words, and the ending that gives the run.
fn no_plan(searched: &Search, cut_short: Option<Ending>) -> (String, Ending) {
    let why = match &searched.stopped {
        Stopped::WorldModelFailed(e) => {
            format!("the world model could not simulate any candidate ({e})")
        }
        Stopped::PlannerFailed(e) | Stopped::Budget(e) => e.clone(),
        // A stopped search returns before a plan is asked for.
        Stopped::Interrupted => "stopped by the user".to_string(),
        Stopped::Done | Stopped::Exhausted => match &searched.last_rejection {
            Some(last) => format!(
                "the planner gave no usable decision ({} retries; last: {last})",
                searched.accounting.retried
            ),
            None => "the search found no valid step the world model could simulate".to_string(),
        },
    };
    (
        format!("no plan to execute: {why}"),
        cut_short.unwrap_or(Ending::NoCallPlanned),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::agent::testing::{
        self, ScriptedChat, ScriptedTools, ScriptedWorldModel, called_functions,
    };
    use crate::llm::chat_wire::ToolCall;
    use crate::llm::endpoints::OutputMode;
    use cosmos_trajectory::event::{NodeId, Observation, Role, RunStatus, SearchStop};
    use serde_json::json;

    fn settings() -> Settings {
        Settings {
            iterations: 4,
            max_depth: 3,
            k: 2,
            concurrency: 2,
            ..Settings::default()
        }
    }

    /// SPIRAL over four candidates per expansion (a planner turn costs 15 tokens, a
    /// prediction 23, no critic) with a token budget of `max_tokens`.
    fn four_candidates(max_tokens: u64) -> (Env, Settings) {
        let four = json!({"candidates": [
            {"action": "call", "tool": "s:a", "arguments": {}},
            {"action": "call", "tool": "s:b", "arguments": {}},
            {"action": "call", "tool": "s:c", "arguments": {}},
            {"action": "call", "tool": "s:d", "arguments": {}}
        ]});
        let planner = ScriptedChat::json_replies(vec![four]);
        let wm = ScriptedWorldModel(Box::new(|tool| Ok(format!("{tool} predicted"))));
        let tools =
            ScriptedTools::new(&["s:a", "s:b", "s:c", "s:d"], |_, _| Observation::default());
        let mut env = testing::env(planner, None, tools, Some(Arc::new(wm)), 8);
        env.meter = Arc::new(crate::agent::Meter::new(crate::agent::Budget {
            max_tokens,
            ..*env.budget()
        }));
        let settings = Settings {
            iterations: 5,
            k: 4,
            concurrency: 4,
            alpha: 1.0,
            ..settings()
        };
        (env, settings)
    }

    #[tokio::test]
    async fn an_expansion_rehearses_only_as_many_candidates_as_the_budget_left_covers() {
        // Four candidates each time; a planner turn costs 15 tokens, a prediction 23 (the
        // scripted ports' usage), no critic. Budget 170: the first expansion rehearses all
        // four (no cost known yet): 15 + 4·23 = 107. The second proposes (122), and 48 tokens
        // left cover two rehearsals at 23: 2, not 4 (168). The third proposes (183) and can
        // afford none: the search stops for the budget. Rehearsing all four would have spent
        // 214 before the budget was first checked.
        let (env, settings) = four_candidates(170);
        let mut events = Vec::new();
        run(&env, &mut events, &settings).await.unwrap();
        let added: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::NodeAdded {
                    node,
                    parent: Some(_),
                    ..
                } => Some(*node),
                _ => None,
            })
            .collect();
        assert_eq!(added.len(), 6, "four, then two: {added:?}");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::Error { source, message, .. }
            if *source == cosmos_trajectory::event::ErrorSource::Agent && message.contains("cannot cover another rehearsal")))
        );
    }

    #[tokio::test]
    async fn a_search_stopped_because_no_rehearsal_fits_ends_the_run_by_its_token_limit() {
        // Budget 190: 107 after the first expansion, 168 after the second (two of four), the
        // third planner turn brings it to 183: 7 tokens left, under one rehearsal's 23, yet
        // the budget is not spent. The search stops, and the cause is the token budget.
        let (env, settings) = four_candidates(190);
        let mut events = Vec::new();
        let end = run(&env, &mut events, &settings).await.unwrap();
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventBody::Error { message, .. }
            if message.contains("cannot cover another rehearsal")))
        );
        assert_eq!(end.ending, Some(Ending::TokenLimit));
    }

    #[tokio::test]
    async fn a_search_stopped_mid_way_records_its_end_and_the_run_ends_interrupted() {
        use crate::world_model::{SimFailure, SimRequest, Simulation};
        use cosmos_trajectory::event::WorldModelInfo;
        /// A world model that tells when it is asked, then never answers.
        struct Hanging(Arc<tokio::sync::Notify>);
        impl WorldModel for Hanging {
            fn name(&self) -> String {
                "hanging".into()
            }
            fn describe(&self) -> WorldModelInfo {
                crate::world_model::describe(self.name(), [])
            }
            fn simulate<'a>(
                &'a self,
                _request: SimRequest<'a>,
            ) -> futures::future::BoxFuture<'a, std::result::Result<Simulation, SimFailure>>
            {
                self.0.notify_one();
                Box::pin(std::future::pending())
            }
        }
        let asked = Arc::new(tokio::sync::Notify::new());
        let planner = ScriptedChat::json_replies(vec![json!({"candidates": [
            {"action": "call", "tool": "s:a", "arguments": {}}
        ]})]);
        let tools = ScriptedTools::new(&["s:a"], |_, _| Observation::default());
        let mut env = testing::env(
            planner,
            None,
            tools.clone(),
            Some(Arc::new(Hanging(asked.clone()))),
            8,
        );
        let (stop, stopped) = tokio::sync::watch::channel(false);
        env.stop = stopped;
        let mut events = Vec::new();
        let settings = settings();
        let (end, ()) = tokio::join!(run(&env, &mut events, &settings), async {
            asked.notified().await;
            stop.send(true).unwrap();
        });
        let end = end.unwrap();
        assert_eq!(end.status, RunStatus::Interrupted);
        assert_eq!(end.ending, Some(Ending::Interrupted));
        let finished: Vec<&EventBody> = events
            .iter()
            .filter(|e| matches!(e, EventBody::SearchFinished { .. }))
            .collect();
        assert!(
            matches!(
                finished.as_slice(),
                [EventBody::SearchFinished {
                    stopped: SearchStop::Interrupted,
                    iterations: 1,
                    ..
                }]
            ),
            "{finished:?}"
        );
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, EventBody::PlanSelected { .. })),
            "a stopped search plans nothing"
        );
        assert!(tools.called().is_empty());
    }

    /// Short-horizon imagination: with `go_real_below` and a world model that gives no
    /// confidence (unsure) of a tool not annotated read-only, the search imagines no further
    /// than that call (its node stops the rollout, recorded with the trust along the path);
    /// the plan runs it for real and the search goes on from the real result, where the
    /// planner, seeing it, finishes.
    #[tokio::test]
    async fn a_plan_that_ends_at_the_horizon_runs_and_the_search_goes_on_from_the_real_result() {
        let planner = ScriptedChat::new(OutputMode::Json, |request| {
            let seen = serde_json::to_string(&request.messages).unwrap_or_default();
            let reply = if seen.contains("real a result") {
                json!({"candidates": [{"action": "finish", "answer": "done"}]})
            } else {
                json!({"candidates": [{"action": "call", "tool": "s:a", "arguments": {}}]})
            };
            Ok(testing::text(&reply.to_string()))
        });
        let wm = ScriptedWorldModel(Box::new(|tool| Ok(format!("{tool} predicted"))));
        let tools = ScriptedTools::new(&["s:a"], |_, _| Observation {
            text: "real a result".into(),
            ..Default::default()
        });
        let mut env = testing::env(planner, None, tools.clone(), Some(Arc::new(wm)), 8);
        env.go_real_below = Some(0.5);
        let mut events = Vec::new();
        let settings = Settings {
            alpha: 1.0,
            ..settings()
        };
        let end = run(&env, &mut events, &settings).await.unwrap();
        assert_eq!(end.ending, Some(Ending::PlannerFinished), "{end:?}");
        assert_eq!(tools.called(), ["s:a"], "made once, for real");
        let horizons: Vec<(NodeId, Option<f64>)> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::NodeEvaluated { node, horizon, .. } => Some((*node, *horizon)),
                _ => None,
            })
            .collect();
        let stopped: Vec<NodeId> = horizons
            .iter()
            .filter(|(_, h)| *h == Some(0.0))
            .map(|(n, _)| *n)
            .collect();
        assert_eq!(stopped.len(), 1, "{horizons:?}");
        // Two searches: the second hangs under the node the first stopped at.
        let searches = events
            .iter()
            .filter(|e| matches!(e, EventBody::SearchFinished { .. }))
            .count();
        assert_eq!(searches, 2);
        let second_root = events.iter().find_map(|e| match e {
            EventBody::NodeAdded {
                parent: Some(p),
                action: None,
                node,
                ..
            } => Some((*node, *p)),
            _ => None,
        });
        assert_eq!(second_root.map(|(_, p)| p), Some(stopped[0]));
    }

    #[tokio::test]
    async fn with_the_world_model_down_the_search_stops_and_the_run_fails_saying_why() {
        let planner = ScriptedChat::json_replies(vec![json!({"candidates": [
            {"action": "call", "tool": "s:a", "arguments": {}},
            {"action": "call", "tool": "s:b", "arguments": {}}
        ]})]);
        let wm = ScriptedWorldModel(Box::new(|_| Err("world model LLM failed: refused".into())));
        let tools = ScriptedTools::new(&["s:a", "s:b"], |_, _| Observation::default());
        let env = testing::env(
            planner,
            Some(ScriptedChat::down()),
            tools.clone(),
            Some(Arc::new(wm)),
            8,
        );
        let mut events = Vec::new();
        let end = run(&env, &mut events, &settings()).await.unwrap();
        assert_eq!(end.status, RunStatus::Failed, "nothing could be simulated");
        assert_eq!(end.ending, Some(Ending::SearchEndedEarly));
        let error = end.error.unwrap_or_default();
        assert!(error.contains("world model could not simulate") && error.contains("refused"));
        let wm_errors = events
            .iter()
            .filter(|e| matches!(e, EventBody::Error { source, .. } if *source == cosmos_trajectory::event::ErrorSource::WorldModel))
            .count();
        assert_eq!(wm_errors, 2, "one expansion, then the search stopped");
        let planner_calls = events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    EventBody::LlmCall {
                        role: Role::Planner,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(planner_calls, 1, "no planner call per remaining iteration");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, EventBody::NodeSimulated { .. }))
        );
        assert!(events.iter().any(|e| matches!(
            e,
            EventBody::SearchFinished {
                stopped: SearchStop::WorldModelFailed,
                iterations: 1,
                ..
            }
        )));
        assert!(tools.called().is_empty());
        assert!(!events.iter().any(|e| matches!(e, EventBody::Answer { .. })));
    }

    #[tokio::test]
    async fn a_tools_only_endpoint_plans_critiques_and_makes_real_calls() {
        // Proposes by calling tools; critiques through the forced `critique` function.
        let planner = ScriptedChat::new(OutputMode::Tools, |req| {
            if let Some(choice) = &req.tool_choice {
                assert_eq!(choice.function.name, "critique");
                let call = ToolCall::new("c", "critique", &json!({"score": 0.8, "reason": "good"}));
                return Ok(testing::calls(vec![call]));
            }
            if req.tools.is_empty() {
                return Ok(testing::text("the answer")); // the summarizer
            }
            Ok(if called_functions(req).is_empty() {
                testing::calls(vec![
                    ToolCall::new("1", "s_a", &json!({"x": 1})),
                    ToolCall::new("2", "s_b", &json!({})),
                ])
            } else {
                testing::text("done")
            })
        });
        let wm = ScriptedWorldModel(Box::new(|tool| Ok(format!("{tool} predicted"))));
        let tools = ScriptedTools::new(&["s:a", "s:b"], |_, _| Observation::default());
        let env = testing::env(planner, None, tools.clone(), Some(Arc::new(wm)), 8);
        let mut events = Vec::new();
        let end = run(&env, &mut events, &settings()).await.unwrap();
        // The planner's text reply is a finish: the plan's path reaches it.
        assert_eq!(end, End::completed().ending(Ending::PlannerFinished));
        assert!(!tools.called().is_empty(), "the plan ran for real");
        assert!(events.iter().any(|e| matches!(e, EventBody::NodeEvaluated { critic_reward: Some(c), critic_reason: Some(r), .. } if *c == 0.8 && r == "good")));
        assert!(events.iter().any(|e| matches!(
            e,
            EventBody::NodeAdded {
                action: Some(cosmos_trajectory::event::Action::Finish { .. }),
                ..
            }
        )));
    }
}
