//! A wm-eval file read back: each recorded call with what every world model did with it, and
//! the leaderboard over them. `cosmos wm-eval` takes its leaderboard from the file it has just
//! written, and the explorer's world-model view from the file it opens, both through
//! [`Filed::read`], so what is printed and what is drawn come from one record.

use std::collections::HashMap;

use serde_json::Value;

use crate::metrics::fidelity::{self, Fidelity};
use crate::metrics::leaderboard::{self, CallResult, Leaderboard, Outcome, StateEffect};
use cosmos_trajectory::event::{
    EventBody, Leader, Observation, Origin, PredictionRecord, StateFields,
};
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;

/// What one world model did with one recorded call, as the file says.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Its prediction, its score against the real result, the tokens it spent, and its
    /// confidence when it gave one.
    Simulated(Observation, Fidelity, u64, Option<f64>),
    /// It could not simulate, and why (the `error` event's message).
    Failed(String),
    /// The file holds nothing of it: the run was stopped before the world model got to the
    /// call. Not a failure.
    Missing,
}

/// One recorded call of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct FiledCall {
    /// Its step in the file (each call copied into a wm-eval file has a step of its own).
    pub step: u64,
    /// The namespaced tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// The real result.
    pub real: Observation,
    /// Where the call was recorded first, when the file says.
    pub origin: Option<Origin>,
    /// One verdict per world model, in [`Filed::names`]' order.
    pub verdicts: Vec<Verdict>,
    /// Each world model's predicted state after the call, when it gave one (same order).
    pub predicted_states: Vec<Option<Value>>,
    /// What the real call did to its server's state.
    pub effect: StateEffect,
    /// The real state after the call, as fields, when the source run let it be known.
    pub state_after: Option<StateFields>,
}

impl FiledCall {
    /// A predicted state's agreement with the real state after the call, when both are known.
    pub fn state_fidelity(&self, predicted: Option<&Value>) -> Option<f64> {
        let predicted: StateFields = predicted?.as_object()?.clone().into_iter().collect();
        Some(crate::mcp::state_view::agreement(
            &predicted,
            self.state_after.as_ref()?,
        ))
    }
}

/// A wm-eval file read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Filed {
    /// The world models, in the order the file names them.
    pub names: Vec<String>,
    /// The recorded calls, in step order.
    pub calls: Vec<FiledCall>,
    /// World-model failures the file holds but does not tie to a call it copied (no step, or a
    /// step the file has no call for): said, never dropped in silence.
    pub unplaced_failures: usize,
    /// The leader `cosmos wm-eval` wrote into `run_finished`, when the file is finished.
    pub recorded_leader: Option<Leader>,
    /// The fidelity a prediction needs to count as good for calibration (the header's
    /// `good_fidelity`, as `cosmos wm-eval --good-fidelity` recorded it).
    pub good_fidelity: f64,
    /// The planner's decisions (`--decision`): (step, given) → decision.
    decided: HashMap<(u64, String), String>,
}

impl Filed {
    /// Reads a wm-eval run. Simulations and failures are tied to their call by `step` (a failure
    /// of an older file by its message's `step N:` prefix, which wm-eval has always written):
    /// world models finish in any order, so the call copied last is not the one that failed.
    pub fn read(run: &Run) -> Self {
        let names: Vec<String> = run
            .header
            .agent
            .settings
            .get("names")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut calls: Vec<FiledCall> = Vec::new();
        let mut by_step: HashMap<u64, usize> = HashMap::new();
        let mut decided = HashMap::new();
        let mut unplaced_failures = 0;
        let mut recorded_leader = None;
        let world_model = |name: &str| names.iter().position(|n| n == name);
        // Every kind read here is kept whole by the run (none is one of the search kinds).
        for event in run.briefs().iter().filter_map(|b| b.whole()) {
            if let Some(call) = RecordedCall::of(&event.body) {
                by_step.insert(call.step, calls.len());
                let info = run.header.tools.iter().find(|t| t.name == call.tool);
                let effect = StateEffect {
                    fields_changed: call.state_change.map(|c| c.fields_changed),
                    read_only: info.and_then(|t| t.hint("readOnlyHint")),
                    destructive: info.and_then(|t| t.hint("destructiveHint")) == Some(true),
                };
                let state_after = call
                    .state_change
                    .and_then(|c| c.after.as_deref())
                    .and_then(Value::as_object)
                    .map(|m| m.clone().into_iter().collect());
                calls.push(FiledCall {
                    step: call.step,
                    tool: call.tool.to_string(),
                    arguments: call.arguments.clone(),
                    real: call.result.clone(),
                    origin: call.origin.cloned(),
                    verdicts: vec![Verdict::Missing; names.len()],
                    predicted_states: vec![None; names.len()],
                    effect,
                    state_after,
                });
                continue;
            }
            match &event.body {
                EventBody::PlannerDecided {
                    step,
                    given,
                    decision,
                } => {
                    decided.insert((*step, given.clone()), decision.clone());
                }
                EventBody::CallSimulated {
                    step,
                    prediction:
                        PredictionRecord {
                            world_model: name,
                            observation,
                            tokens,
                            confidence,
                            predicted_state,
                            ..
                        },
                    ..
                } => {
                    if let (Some(&c), Some(w)) = (by_step.get(step), world_model(name)) {
                        let call = &mut calls[c];
                        call.predicted_states[w] = predicted_state.as_deref().cloned();
                        let score = fidelity::compare(observation, &call.real);
                        call.verdicts[w] = Verdict::Simulated(
                            observation.clone(),
                            score,
                            tokens.unwrap_or(0),
                            *confidence,
                        );
                    }
                }
                EventBody::Error {
                    source,
                    name: Some(name),
                    message,
                    step,
                    ..
                } if *source == cosmos_trajectory::event::ErrorSource::WorldModel => {
                    let step = step.or_else(|| step_of_message(message));
                    match (step.and_then(|s| by_step.get(&s)), world_model(name)) {
                        (Some(&c), Some(w)) => {
                            calls[c].verdicts[w] = Verdict::Failed(message.clone())
                        }
                        _ => unplaced_failures += 1,
                    }
                }
                EventBody::RunFinished { totals, .. } => {
                    recorded_leader = totals.leader.clone();
                }
                _ => {}
            }
        }
        let good_fidelity = run
            .header
            .agent
            .settings
            .get("good_fidelity")
            .and_then(Value::as_f64)
            .unwrap_or(crate::metrics::calibration::GOOD_FIDELITY);
        Self {
            names,
            calls,
            unplaced_failures,
            recorded_leader,
            good_fidelity,
            decided,
        }
    }

    /// The leaderboard's table: the calls every world model got to (a stopped file has calls
    /// some never reached, which are no failures), as `cosmos wm-eval` counts them.
    pub fn table(&self) -> Vec<CallResult> {
        self.calls
            .iter()
            .filter(|c| !c.verdicts.iter().any(|v| matches!(v, Verdict::Missing)))
            .map(|c| CallResult {
                tool: c.tool.clone(),
                source: c.origin.as_ref().map(|o| o.run.clone()).unwrap_or_default(),
                real_error: c.real.is_error,
                effect: c.effect,
                outcomes: c
                    .verdicts
                    .iter()
                    .zip(&self.names)
                    .zip(&c.predicted_states)
                    .map(|((v, name), predicted)| match v {
                        Verdict::Simulated(o, f, tokens, confidence) => Outcome::Simulated {
                            fidelity: *f,
                            predicted_error: o.is_error,
                            tokens: *tokens,
                            same_decision: self.same_decision(c.step, name),
                            confidence: *confidence,
                            state_fidelity: c.state_fidelity(predicted.as_ref()),
                        },
                        _ => Outcome::Failed,
                    })
                    .collect(),
            })
            .collect()
    }

    /// The leaderboard over [`Filed::table`].
    pub fn leaderboard(&self) -> Leaderboard {
        leaderboard::leaderboard(&self.names, &self.table(), self.good_fidelity)
    }

    /// Given `name`'s simulation of the call of `step`, the planner decided as it did given the
    /// real result; `None` when either decision is missing.
    fn same_decision(&self, step: u64, name: &str) -> Option<bool> {
        let real = self.decided.get(&(step, "real".to_string()))?;
        let simulated = self.decided.get(&(step, name.to_string()))?;
        Some(real == simulated)
    }
}

/// The leader of a leaderboard: the world model of the highest mean fidelity (the first of
/// equals), as `run_finished` records it.
pub fn leader_of(board: &Leaderboard) -> Option<Leader> {
    board
        .world_models
        .iter()
        .filter_map(|w| w.fidelity.map(|f| (w, f.mean)))
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
        .map(|(w, fidelity)| Leader {
            world_model: w.name.clone(),
            fidelity,
            of: board.world_models.len() as u32,
        })
}

/// The step an older file's failure message names (`step N: …`).
fn step_of_message(message: &str) -> Option<u64> {
    message
        .strip_prefix("step ")?
        .split(':')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_failure_is_tied_to_the_step_its_message_names() {
        assert_eq!(
            step_of_message("step 12: memory world model: none"),
            Some(12)
        );
        assert_eq!(step_of_message("memory world model: step 1"), None);
        assert_eq!(step_of_message("step x: nothing"), None);
    }
}
