//! ReAct (the baseline, no world model): think, call a real tool, observe, until the
//! planner finishes or a limit is hit.
//!
//! `plan_exec.rs`, `spiral.rs`: the agents, each a short loop over the steps above
//! (SPIRAL's execution-time revision is a loop of search → execute with `Stop` → search again;
//! a plan that ends at a horizon node loops the same way after it ran, from its real result).
//! `answer.rs`: the summarizer's answer. `endings.rs` (tests only) reaches every `Ending` with
//! an agent run over scripted ports.

use anyhow::Result;

use super::execute::{PlannedCall, call};
use super::planner::{self, Candidate};
use super::ports::EventSink;
use super::prompt::{Setting, Turn};
use super::{End, Env, Limit, answer};
use crate::world_model::HistoryStep;
use cosmos_trajectory::event::{Action, Ending, EventBody, Phase, Role};

/// Runs ReAct to the end.
pub async fn run(env: &Env, sink: &mut dyn EventSink) -> Result<End> {
    sink.emit(EventBody::Phase { phase: Phase::Plan })?;
    // A fork's agent starts after the original's steps before the fork point.
    let mut real: Vec<HistoryStep> = env.prior_steps();
    let mut final_answer = None;
    let mut rejected: Option<String> = None;
    let mut limit = None;
    for step in 1..=env.budget().max_steps {
        if let Some(why) = env.meter.over() {
            limit = Some(why);
            break;
        }
        let turn = Turn {
            request: &env.task.request,
            history: &real,
            setting: Setting::Real,
            k: 1,
            rejected: rejected.as_deref(),
        };
        let candidate = match planner_turn(env, sink, &turn).await? {
            Ok(c) => c,
            Err(end) => return Ok(end),
        };
        // A tool no server offers is called like any other: the host records MCP-Bench's
        // failed "not found" call, and the planner reads the error on its next turn.
        rejected = None;
        match candidate {
            Ok(Action::Finish { answer }) => {
                final_answer = answer;
                break;
            }
            Ok(Action::ToolCall { tool, arguments }) => {
                let planned = PlannedCall {
                    node: None,
                    tool,
                    arguments,
                };
                let step = real.len() as u64 + 1;
                match call(env, sink, step, &planned, &real).await? {
                    Ok(s) => real.push(s),
                    Err(end) => return Ok(end),
                }
            }
            Err(rejection) => {
                sink.emit(rejection.event())?;
                rejected = Some(rejection.detail);
            }
        }
        if step == env.budget().max_steps {
            limit = Some(Limit::steps(env.budget().max_steps, ""));
        }
    }
    let ending = limit.as_ref().map_or(Ending::PlannerFinished, |l| l.ending);
    if let Some(why) = limit {
        env.record_agent_error(sink, why.message)?;
    }
    match final_answer {
        // The planner's own answer is ReAct's answer; the summarizer writes one only when
        // the planner stopped without one.
        Some(text) if !text.trim().is_empty() => {
            sink.emit(EventBody::Phase {
                phase: Phase::Answer,
            })?;
            sink.emit(EventBody::Answer { text })?;
            Ok(End::completed().ending(ending))
        }
        _ => Ok(answer::answer(env, sink, &real).await?.ending(ending)),
    }
}

/// Asks the planner for the next action and records the call. `Err` carries how the run
/// ends when there is no decision (a stop, or the planner failing).
pub async fn planner_turn(
    env: &Env,
    sink: &mut dyn EventSink,
    turn: &Turn<'_>,
) -> Result<std::result::Result<Candidate, End>> {
    let client = env.roles.planner.clone();
    let started = std::time::Instant::now();
    let asked = match env
        .bounded(planner::ask(&client, &env.tools, &env.functions, turn))
        .await
        .or_end("the planner was deciding")
    {
        Ok(asked) => asked,
        Err(end) => {
            let model = &client.endpoint().model;
            env.record_cut_llm(sink, Role::Planner, model, started, &end)?;
            return Ok(Err(end));
        }
    };
    env.record_llm(
        sink,
        Role::Planner,
        asked.as_ref().map(|r| &r.completion),
        &client.endpoint().model,
    )?;
    if let Some(event) = asked.as_ref().ok().and_then(planner::Reply::fallback_event) {
        sink.emit(event)?;
    }
    Ok(match asked {
        Ok(reply) => match reply.candidates.into_iter().next() {
            Some(c) => Ok(c),
            None => Err(End::failed("the planner gave no action")),
        },
        Err(e) => Err(End::failed(format!("planner failed: {e}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::testing::{self, ScriptedChat, ScriptedTools, called_functions, kinds};
    use crate::llm::chat_wire::ToolCall;
    use crate::llm::endpoints::OutputMode;
    use cosmos_trajectory::event::{DecisionProblem, Observation, RunStatus};
    use serde_json::json;

    fn ok(tool: &str, _: &serde_json::Value) -> Observation {
        Observation {
            text: format!("{tool} ok"),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_call_without_a_tool_is_rejected_and_an_unknown_tool_is_a_failed_call() {
        let planner = ScriptedChat::json_replies(vec![
            json!({"action": "call"}),
            json!({"action": "call", "tool": "s:nope"}),
            json!({"action": "call", "tool": "s:a", "arguments": {"x": 1}}),
            json!({"action": "finish", "answer": "done"}),
        ]);
        let tools = ScriptedTools::new(&["s:a"], ok);
        let env = testing::env(planner.clone(), None, tools.clone(), None, 6);
        let mut events = Vec::new();
        let end = run(&env, &mut events).await.unwrap();
        assert_eq!(end, End::completed().ending(Ending::PlannerFinished));
        let rejected: Vec<DecisionProblem> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::DecisionRejected { problem, .. } => Some(*problem),
                _ => None,
            })
            .collect();
        assert_eq!(rejected, [DecisionProblem::NoTool]);
        assert_eq!(
            tools.called(),
            ["s:nope", "s:a"],
            "no call for a reply without a tool; an unknown tool is tried, as MCP-Bench does"
        );
        let unknown = events.iter().find_map(|e| match e {
            EventBody::ToolCalled {
                tool,
                server,
                result,
                ..
            } if tool == "s:nope" => Some((server.clone(), result.is_error)),
            _ => None,
        });
        assert_eq!(unknown, Some((None, true)), "a failed call with no server");
        assert!(matches!(events.last(), Some(EventBody::Answer { text }) if text == "done"));
        // The next prompt says why the reply was rejected.
        let second = &planner.sent()[1].messages[1];
        assert!(
            second
                .content_str()
                .contains("rejected: \"action\": \"call\" names no tool")
        );
    }

    #[tokio::test]
    async fn native_tool_calls_are_a_conversation() {
        // Like any function-calling model: call the first tool the conversation has not
        // called yet, answer in text when all are done.
        let planner = ScriptedChat::new(OutputMode::Tools, |req| {
            let done = called_functions(req);
            let next = ["s_a", "s_b", "s_c"]
                .into_iter()
                .find(|f| !done.iter().any(|d| d == f));
            Ok(match next {
                Some(f) => testing::calls(vec![ToolCall::new(format!("id_{f}"), f, &json!({}))]),
                None => testing::text("all three called"),
            })
        });
        let tools = ScriptedTools::new(&["s:a", "s:b", "s:c"], ok);
        let env = testing::env(planner.clone(), None, tools.clone(), None, 10);
        let mut events = Vec::new();
        let end = run(&env, &mut events).await.unwrap();
        assert_eq!(end.status, RunStatus::Completed);
        assert_eq!(tools.called(), ["s:a", "s:b", "s:c"]);
        assert!(
            matches!(events.last(), Some(EventBody::Answer { text }) if text == "all three called")
        );
        // The fourth request carries the three calls and their results as messages.
        let last = planner.sent().pop().unwrap();
        assert_eq!(called_functions(&last), ["s_a", "s_b", "s_c"]);
        assert_eq!(last.messages.last().unwrap().content_str(), "s:c ok");
        assert_eq!(last.tools.len(), 3);
    }

    #[tokio::test]
    async fn the_step_limit_is_an_agent_error_then_the_summarizer_answers() {
        let planner = ScriptedChat::json_replies(vec![
            json!({"action": "call", "tool": "s:a", "arguments": {}}),
        ]);
        let tools = ScriptedTools::new(&["s:a"], ok);
        let env = testing::env(planner, None, tools.clone(), None, 2);
        let mut events = Vec::new();
        let end = run(&env, &mut events).await.unwrap();
        assert_eq!(end, End::completed().ending(Ending::StepLimit));
        assert_eq!(tools.called().len(), 2);
        assert_eq!(
            kinds(&events),
            [
                "phase",
                "llm_call",
                "tool_called",
                "llm_call",
                "tool_called",
                "error",
                "phase",
                "llm_call",
                "answer"
            ]
        );
    }
}
