//! A fork's part of an agent's environment (`cosmos fork`): the original run's steps before
//! the fork point, given to the agent as the steps it has taken and written into the new run
//! as replayed copies, and, with `--tools recorded`, the recording that answers the agent's
//! calls, with what to do about a call it does not hold.
//!
//! One record: a replayed call is a `tool_called` whose `origin` names the original's line (so
//! no metric counts it as this run's call); a call a world model answers in place of the
//! recording is a `call_simulated` naming the call (never a `tool_called`).
//!
//! What a fork's agent sees (`Env::fork`): the original's calls before the fork point
//! (`Fork::replay` writes them as copies first; `Env::prior_steps` is where every agent starts
//! from: ReAct's steps, Plan-Exec's chain, SPIRAL's `Origin`), the `Recording` (canonical
//! arguments, answers used in order), `OnMiss`, and `RecordedTools`, the catalogue of a fork that
//! starts no server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use futures::future::BoxFuture;
use serde_json::Value;

use super::ports::{EventSink, ToolHost};
use crate::mcp::server::{CallOutcome, OnProgress};
use crate::world_model::{HistoryStep, canonical};
use cosmos_trajectory::event::{ForkOf, ServerInfo, ToolInfo};
use cosmos_trajectory::recorded_call::OwnedCall;

/// A recorded call as a step of the history the agent is given.
fn history_step(call: &OwnedCall) -> HistoryStep {
    HistoryStep {
        tool: call.tool.clone(),
        arguments: call.arguments.clone(),
        observation: call.result.clone(),
        // Replayed, not made: the fork's own state did not change.
        ..Default::default()
    }
}

/// Where a call the recording does not hold goes (`--on-miss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMiss {
    /// The fork stops there, failed, saying which call it was (the default).
    Error,
    /// The real server answers it, recorded as a real call.
    Real,
    /// The run's world model answers it, recorded as a simulation (`call_simulated`).
    WorldModel,
}

impl OnMiss {
    /// The name on the command line and in the header.
    pub fn as_str(self) -> &'static str {
        match self {
            OnMiss::Error => "error",
            OnMiss::Real => "real",
            OnMiss::WorldModel => "world-model",
        }
    }
}

/// The original's calls answering the fork's (`--tools recorded`): a call is answered by the
/// original's first unused call of the same tool with the same canonical arguments, so a call
/// made twice gets the two answers in order; once those are used up, the last one again.
/// Looked up by key, so a recording of 10^5 calls answers in constant time.
#[derive(Debug)]
pub struct Recording {
    calls: Arc<[OwnedCall]>,
    /// Each distinct call's answers (indices into `calls`, in order) and how many were used.
    by_key: Mutex<HashMap<String, (Vec<u32>, usize)>>,
    /// Where a miss goes.
    pub on_miss: OnMiss,
}

impl Recording {
    /// The recording of `calls`.
    pub fn new(calls: Arc<[OwnedCall]>, on_miss: OnMiss) -> Self {
        let mut by_key: HashMap<String, (Vec<u32>, usize)> = HashMap::new();
        for (i, call) in calls.iter().enumerate() {
            by_key
                .entry(key(&call.tool, &call.arguments))
                .or_default()
                .0
                .push(i as u32);
        }
        Self {
            calls,
            by_key: Mutex::new(by_key),
            on_miss,
        }
    }

    /// The recorded answer to `tool` called with `arguments`, if the original made that call.
    pub fn answer(&self, tool: &str, arguments: &Value) -> Option<&OwnedCall> {
        let mut by_key = self.by_key.lock().expect("recording lock");
        let (answers, used) = by_key.get_mut(&key(tool, arguments))?;
        let at = answers[(*used).min(answers.len() - 1)];
        *used += 1;
        Some(&self.calls[at as usize])
    }
}

fn key(tool: &str, arguments: &Value) -> String {
    format!("{tool}\u{0}{}", canonical(arguments))
}

/// A fork as the session is asked for it: what the run file told, before anything starts.
#[derive(Debug, Clone)]
pub struct ForkPlan {
    /// The original and the fork point.
    pub of: ForkOf,
    /// Every call the original recorded as made, in order (shared, never copied per use).
    pub calls: Arc<[OwnedCall]>,
    /// How many of them come before the fork point: the history.
    pub history_len: usize,
    /// `--tools recorded`: where a miss goes (the recording is `calls`).
    pub recorded: Option<OnMiss>,
    /// The original's catalogue and servers, when no call can reach a server
    /// (`--tools recorded` without `--on-miss real`): then none is started.
    pub offline: Option<(Vec<ToolInfo>, Vec<ServerInfo>)>,
}

impl ForkPlan {
    /// The original's calls before the fork point.
    pub fn history(&self) -> &[OwnedCall] {
        &self.calls[..self.history_len]
    }

    /// The fork, ready for an agent's environment.
    pub fn fork(&self) -> Fork {
        Fork {
            of: self.of.clone(),
            calls: self.calls.clone(),
            history_len: self.history_len,
            recording: self
                .recorded
                .map(|on_miss| Recording::new(self.calls.clone(), on_miss)),
        }
    }

    /// The header settings that say how the fork's calls were answered.
    pub fn settings(&self) -> [(&'static str, &'static str); 2] {
        match self.recorded {
            Some(on_miss) => [("tools", "recorded"), ("on_miss", on_miss.as_str())],
            None => [("tools", "real"), ("on_miss", "real")],
        }
    }
}

/// The tools of a fork that starts no server: the original's catalogue. Nothing reaches its
/// `call` (the recording answers, or the miss goes to the world model or ends the fork); if
/// something did, it would get an error, never a made-up result.
pub struct RecordedTools(pub Vec<ToolInfo>);

impl ToolHost for RecordedTools {
    fn tools(&self) -> Vec<ToolInfo> {
        self.0.clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        _arguments: &'a Value,
        _on_progress: OnProgress<'a>,
    ) -> BoxFuture<'a, (Option<String>, CallOutcome)> {
        let message = format!("{tool}: this fork started no server (--tools recorded)");
        Box::pin(std::future::ready((
            None,
            CallOutcome::failure(message, std::time::Duration::ZERO),
        )))
    }
}

/// What makes a run a fork.
#[derive(Debug)]
pub struct Fork {
    /// The original and the fork point, for the header.
    pub of: ForkOf,
    /// Every call the original recorded as made, in order.
    calls: Arc<[OwnedCall]>,
    /// How many of them come before the fork point.
    history_len: usize,
    /// With `--tools recorded`: what answers the fork's calls.
    pub recording: Option<Recording>,
}

impl Fork {
    /// A fork of `of` whose history is `history` (in-process tests).
    pub fn new(of: ForkOf, history: Vec<OwnedCall>, recording: Option<Recording>) -> Self {
        Self {
            of,
            history_len: history.len(),
            calls: history.into(),
            recording,
        }
    }

    /// The original's calls before the fork point.
    pub fn history(&self) -> &[OwnedCall] {
        &self.calls[..self.history_len]
    }

    /// The steps taken before the fork point, as the agent is given them.
    pub fn history_steps(&self) -> Vec<HistoryStep> {
        self.history().iter().map(history_step).collect()
    }

    /// Writes the history into the fork as replayed calls, under their own step numbers, and
    /// uses up their answers in the recording (a later identical call gets the next one).
    pub fn replay(&self, sink: &mut dyn EventSink) -> Result<()> {
        for call in self.history() {
            if let Some(recording) = &self.recording {
                recording.answer(&call.tool, &call.arguments);
            }
            sink.emit(call.copied(&self.of.file, call.step, None))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::agent::settings::Settings;
    use crate::agent::testing::{self, ScriptedChat, ScriptedTools, ScriptedWorldModel};
    use crate::agent::{plan_exec, spiral};
    use cosmos_trajectory::event::{EventBody, Observation, Origin};
    use serde_json::json;

    /// A fork of a run whose step 1 was `s:a`, at step 2, over tools `s:a` and `s:b`.
    fn forked(planner: Arc<ScriptedChat>) -> (crate::agent::Env, Arc<ScriptedTools>) {
        let tools = ScriptedTools::new(&["s:a", "s:b"], |tool, _| Observation {
            text: format!("{tool} real"),
            ..Default::default()
        });
        let wm = ScriptedWorldModel(Box::new(|tool| Ok(format!("{tool} predicted"))));
        let mut env = testing::env(planner, None, tools.clone(), Some(Arc::new(wm)), 4);
        env.fork = Some(Fork::new(
            ForkOf {
                run_id: "r".into(),
                file: "a.jsonl".into(),
                step: 2,
            },
            vec![recorded(1, "s:a", json!({}), "a from the original")],
            None,
        ));
        (env, tools)
    }

    /// The steps of `events`' real calls, and whether each is a copy.
    fn calls(events: &[EventBody]) -> Vec<(u64, String, bool)> {
        events
            .iter()
            .filter_map(|e| match e {
                EventBody::ToolCalled {
                    step, tool, origin, ..
                } => Some((*step, tool.clone(), origin.is_some())),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn spiral_and_plan_exec_plan_on_from_the_history_and_number_their_steps_after_it() {
        for agent in ["spiral", "plan_exec"] {
            let planner = ScriptedChat::json_replies(vec![
                json!({"candidates": [{"action": "call", "tool": "s:b", "arguments": {}}],
                       "action": "call", "tool": "s:b", "arguments": {}}),
                json!({"candidates": [{"action": "finish", "answer": "done"}],
                       "action": "finish", "answer": "done"}),
            ]);
            let (env, tools) = forked(planner.clone());
            let mut events = Vec::new();
            env.fork.as_ref().unwrap().replay(&mut events).unwrap();
            let settings = Settings {
                iterations: 2,
                k: 1,
                alpha: 1.0,
                ..Settings::default()
            };
            if agent == "spiral" {
                spiral::run(&env, &mut events, &settings).await.unwrap();
            } else {
                plan_exec::run(&env, &mut events).await.unwrap();
            }
            assert_eq!(
                calls(&events),
                [(1, "s:a".into(), true), (2, "s:b".into(), false)],
                "{agent}: the history is not called again; the new call is step 2"
            );
            assert_eq!(tools.called(), ["s:b"], "{agent}");
            let first = planner.sent()[0].messages[1].content_str().to_string();
            assert!(
                first.contains("s:a") && first.contains("a from the original"),
                "{agent} plans from the history: {first}"
            );
        }
    }

    fn recorded(step: u64, tool: &str, arguments: Value, text: &str) -> OwnedCall {
        OwnedCall {
            step,
            seq: step * 10,
            tool: tool.into(),
            server: Some("s".into()),
            arguments,
            result: Observation {
                text: text.into(),
                ..Default::default()
            },
            error: None,
            latency_ms: 3,
        }
    }

    #[test]
    fn a_call_made_twice_gets_both_answers_in_order_then_the_last_again() {
        let recording = Recording::new(
            vec![
                recorded(1, "s:get", json!({"a": 1, "b": 2}), "first"),
                recorded(2, "s:set", json!({}), "set"),
                recorded(3, "s:get", json!({"b": 2, "a": 1}), "second"),
            ]
            .into(),
            OnMiss::Error,
        );
        let text = |r: Option<&OwnedCall>| r.map(|c| c.result.text.clone());
        // Canonical arguments: the keys' order does not matter.
        let args = json!({"b": 2, "a": 1});
        assert_eq!(text(recording.answer("s:get", &args)), Some("first".into()));
        assert_eq!(
            text(recording.answer("s:get", &args)),
            Some("second".into())
        );
        assert_eq!(
            text(recording.answer("s:get", &args)),
            Some("second".into())
        );
        assert_eq!(recording.answer("s:get", &json!({"a": 1})), None);
        assert_eq!(recording.answer("t:get", &args), None);
    }

    #[test]
    fn the_history_is_replayed_as_copies_that_name_their_origin_and_uses_its_answers() {
        let history = vec![recorded(1, "s:get", json!({}), "old")];
        let recording = Recording::new(
            vec![history[0].clone(), recorded(2, "s:get", json!({}), "newer")].into(),
            OnMiss::Error,
        );
        let fork = Fork::new(
            ForkOf {
                run_id: "r".into(),
                file: "runs/a.jsonl".into(),
                step: 2,
            },
            history,
            Some(recording),
        );
        let mut events = Vec::new();
        fork.replay(&mut events).unwrap();
        let [EventBody::ToolCalled { step, origin, .. }] = &events[..] else {
            panic!("{events:?}");
        };
        assert_eq!(*step, 1);
        assert_eq!(
            origin.as_deref(),
            Some(&Origin {
                run: "runs/a.jsonl".into(),
                seq: 10
            })
        );
        let again = fork.recording.as_ref().unwrap().answer("s:get", &json!({}));
        assert_eq!(again.map(|c| c.result.text.as_str()), Some("newer"));
    }
}
