//! World models (docs/design.md, "World models", BYOWM): anything that predicts a tool's
//! result from the call, the user's request and the history so far. Agents hold a
//! `dyn WorldModel` and never know which one they have.
//!
//! The `WorldModel` trait (`simulate`, `name`, `describe`) and six implementations, one file each
//! (`llm.rs`, `memory.rs`, `traces.rs`, `command.rs`, `cached.rs`, `ensemble.rs`): `llm`,
//! `memory` (the trace store, `TransitionBuffer`, of recorded real calls, recalled), `traces`
//! (results predicted field by field by rules fitted on the same store), `command` (JSON lines to a process in
//! its own `mcp::process_group::ProcessGroup`, so a timeout kills the whole group and so does
//! cosmos's own death; an exchange dropped half-way retires its process, whose late reply could
//! otherwise answer the next request; a reply line read to 4 MiB at most;
//! protocol in `docs/world-models.md`), `cached` (a wrapper) and `ensemble` (members asked at once;
//! the answer picked by `Pick`, the confidence their agreement by `metrics::fidelity::compare`, each
//! member's prediction or error kept in `Simulation::members`, and every member's LLM calls in
//! `Simulation::llm`). A prediction's text is capped like
//! a tool result (`Observation::cap_text`, the one cap). Agents hold `Arc<dyn WorldModel>`. `mod.rs` also holds `HistoryStep`
//! and `history_lines`, the one way every prompt (planner, critic, summarizer, `llm` world model)
//! quotes the steps so far, and `belief`, the one way a world model's `state` section is made (a
//! sandbox's start state moved on by each step's recorded change or predicted state, by the one
//! fold of a server's state, `mcp::state_view::fold_step`, over the calls `state_view::is_servers`
//! says are the server's; agents reach it through `agent::rehearse::predict`, wm-eval, export and
//! the views through `wm_eval::StateFold` and `state_view::around_call`). A world model predicts (`Simulation`, with its `Confidence` when it
//! gives one: memory's `Recall::confidence` mapping, the LLM's own `confidence` field, a command's)
//! or fails (`SimFailure`); the agents never turn a failure into a prediction, and nothing makes up
//! a confidence: `rehearse::record` and wm-eval write what the world model gave. `named.rs` resolves a world model's name (the
//! built-in `none`/`llm`/`memory`/`traces`/`command`, or a `[world_models.NAME]` table of `cosmos.toml`, whose
//! `llm` endpoints come from `llm::endpoints` like a role's, and whose `ensemble` members are resolved
//! by name, none an ensemble) and builds it; a memory world model (or an ensemble with one) can be
//! built without one run's calls (leave one run out), for evaluating calls of that run (as can
//! `traces`, and an `llm` shown recorded examples).
//!
//! # How each kind gives its confidence
//!
//! | kind | confidence | source |
//! |---|---|---|
//! | `memory` | The recorded call it recalls: the same tool with the same arguments is 0.9 times the share of that call's recordings that hold the result it gives (a result recorded twice alike, and once otherwise, gives 0.6); another call of the same tool is 0.1 plus 0.6 times how alike the two calls' arguments are (`memory::similarity`: one minus the mean distance over their keys, equal values 0 apart, two numbers `|a − b| / (|a| + |b|)`, anything else 1; at most 0.7: its values are another call's). A tool it never saw is no prediction at all. | `recall` |
//! | `traces` | The weakest field's: a field a rule gives (a copy of an argument, a multiple or affine map of a numeric argument, a constant, a text template; or the same call's recorded result) is `(k+1)/(k+2)` where `k` counts the recorded calls that check the rule beyond the fewest that determine it (for the same call, times the share of its recordings that agree); a field taken from the nearest recorded call is `0.1 + 0.6 ×` its similarity (see `traces.rs`). | `rules`, `neighbour` |
//! | `llm` | With `logprobs = true` in its table, the endpoint is asked for the reply's token log-probabilities, and when they come the confidence is their geometric mean probability, `exp(mean log-probability)` over the reply's tokens (an endpoint that sends none falls back to the next rule). Otherwise the model's own word: the reply's schema asks for `confidence`, "how likely it is that the real server sends back this content"; a reply without one (or outside [0, 1]) has none. | `logprobs`, `self` |
//! | `command` | Whatever the command's reply says (`confidence`, `confidence_source`), else none. | `command`, or its word |
//! | `cached` | The wrapped model's, remembered with its answer. | the wrapped model's |
//! | `ensemble` | The members' agreement: the mean two-way fidelity between the predictions of each pair of members that answered; none when only one did (see "Ensembles"). | `agreement` |

pub(crate) mod cached;
pub(crate) mod command;
pub(crate) mod ensemble;
pub(crate) mod llm;
pub(crate) mod memory;
pub(crate) mod named;
pub(crate) mod traces;

pub use command::CommandWorldModel;
pub use llm::{Grounding, simulation_messages, simulation_reply};
pub use named::{BuiltInOptions, KeepAlive, resolve};

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use cosmos_trajectory::event::{Observation, StateChange, StateFields, ToolInfo, WorldModelInfo};

/// A step already taken (simulated in planning, or real), given as context.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistoryStep {
    /// Namespaced tool.
    pub tool: String,
    /// Arguments.
    pub arguments: Value,
    /// What it returned (or was predicted to).
    pub observation: Observation,
    /// A real step's change to its server's sandboxed state, when that was watched.
    pub state_change: Option<Arc<StateChange>>,
    /// A simulated step's predicted state of its server after it, when the world model gave
    /// one.
    pub predicted_state: Option<Arc<Value>>,
}

/// The state of `server` before the next call, as far as `history` tells from `start` (the
/// state the run began with, as fields): each step on that server moves it on, a real step by
/// its recorded change, a simulated one to its predicted state (a step that tells nothing of
/// the state leaves it as it was). `None` when nothing is known (no start state, a step whose
/// change was cut, a predicted state that is no object) or the state is over
/// `state_view::STATE_BYTES` as JSON (no prompt is given a state that big): the one way a
/// world model's `state` section is made, in a run and in wm-eval alike.
pub fn belief(start: Option<&Value>, history: &[HistoryStep], server: &str) -> Option<Value> {
    let state = history
        .iter()
        .filter(|h| crate::mcp::state_view::is_servers(&h.tool, server))
        .fold(belief_start(start), belief_step);
    belief_shown(state.as_ref())
}

/// The belief before any step: the start state's fields, when it is an object.
pub fn belief_start(start: Option<&Value>) -> Option<StateFields> {
    match start {
        Some(Value::Object(m)) => Some(m.clone().into_iter().collect()),
        _ => None,
    }
}

/// The belief moved on by one step on its server (see [`belief`]): the one fold,
/// `mcp::state_view::fold_step`.
pub fn belief_step(state: Option<StateFields>, step: &HistoryStep) -> Option<StateFields> {
    crate::mcp::state_view::fold_step(
        state,
        step.state_change.as_deref(),
        step.predicted_state.as_deref(),
    )
}

/// The belief as a prompt is given it: `None` when unknown or over
/// `state_view::STATE_BYTES` as JSON.
pub fn belief_shown(state: Option<&StateFields>) -> Option<Value> {
    let state = Value::Object(state?.clone().into_iter().collect());
    (state.to_string().len() <= crate::mcp::state_view::STATE_BYTES).then_some(state)
}

/// The most steps a prompt quotes: the latest, so a prompt stays bounded however long the run
/// (an imported session may hold hundreds of calls); the agents' own runs stop far sooner.
pub const QUOTED_STEPS: usize = 50;

/// The steps as every prompt quotes them, one a line: `1. tool {arguments} -> [error] text`,
/// each result and each call's arguments cut to `max_chars` characters (with `…`); of a long
/// history only the latest [`QUOTED_STEPS`], after a line saying how many came before.
pub fn history_lines(history: &[HistoryStep], max_chars: usize) -> String {
    let cut = |text: &str| {
        let mut kept: String = text.chars().take(max_chars).collect();
        if kept.len() < text.len() {
            kept.push('…');
        }
        kept
    };
    let left_out = history.len().saturating_sub(QUOTED_STEPS);
    let mut out = String::new();
    if left_out > 0 {
        out.push_str(&format!("({left_out} earlier steps left out)\n"));
    }
    for (i, h) in history.iter().enumerate().skip(left_out) {
        let err = if h.observation.is_error {
            " [error]"
        } else {
            ""
        };
        out.push_str(&format!(
            "{}. {} {} ->{err} {}\n",
            i + 1,
            h.tool,
            cut(&h.arguments.to_string()),
            cut(&h.observation.text)
        ));
    }
    out
}

/// What a world model is asked.
#[derive(Debug, Clone, Copy)]
pub struct SimRequest<'a> {
    /// The tool, with its description and input schema.
    pub tool: &'a ToolInfo,
    /// The call's arguments.
    pub arguments: &'a Value,
    /// The user's request.
    pub user_request: &'a str,
    /// The steps before this one.
    pub history: &'a [HistoryStep],
    /// The state of the tool's server before the call as fields (its sandbox's start state
    /// moved on by the steps before: [`belief`]), when known; a world model that tracks state
    /// returns the state after as its `predicted_state`.
    pub state: Option<&'a Value>,
}

/// An LLM call a world model made, for the trajectory's `llm_call` event.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmUsage {
    /// Model.
    pub model: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Counts were estimated.
    pub estimated: bool,
    /// Wall time.
    pub latency: Duration,
    /// The call's error, if it failed.
    pub error: Option<String>,
    /// The messages and reply, when the endpoint records them.
    pub messages: Option<serde_json::Value>,
}

impl LlmUsage {
    /// Prompt and completion tokens together.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// How sure a world model is of one prediction, and how it knows (docs/world-models.md, "When
/// to trust a prediction").
#[derive(Debug, Clone, PartialEq)]
pub struct Confidence {
    /// In [0, 1].
    pub value: f64,
    /// How it knows: `recall`, `self`, `logprobs`, `command`, `agreement`.
    pub source: String,
}

impl Confidence {
    /// `value` from `source`, when it is a number in [0, 1]; anything else is no confidence
    /// (nothing invents or clamps one).
    pub fn new(value: f64, source: &str) -> Option<Self> {
        (0.0..=1.0).contains(&value).then(|| Self {
            value,
            source: source.to_string(),
        })
    }
}

/// A prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// The predicted result.
    pub observation: Observation,
    /// Wall time of the prediction.
    pub latency: Duration,
    /// The LLM calls behind it (one for `llm`; each member's for an ensemble).
    pub llm: Vec<LlmUsage>,
    /// How sure the world model is, when it says.
    pub confidence: Option<Confidence>,
    /// An ensemble's members, each with its own prediction or error (empty for any other
    /// world model).
    pub members: Vec<MemberPrediction>,
    /// The state of the tool's server after the call as fields, when the world model tracks
    /// state and was given the state before ([`SimRequest::state`]).
    pub predicted_state: Option<Value>,
    /// How sure it is of each leaf of a JSON result (path as `fidelity::leaves` writes it),
    /// when it knows field by field (`traces`); an ensemble's `per_field` pick reads it.
    pub field_confidence: Vec<(String, f64)>,
}

impl Simulation {
    /// A prediction of a world model that is no ensemble.
    pub fn new(
        observation: Observation,
        latency: Duration,
        llm: Option<LlmUsage>,
        confidence: Option<Confidence>,
    ) -> Self {
        Self {
            observation,
            latency,
            llm: llm.into_iter().collect(),
            confidence,
            members: Vec::new(),
            predicted_state: None,
            field_confidence: Vec::new(),
        }
    }

    /// Tokens its LLM calls spent; `None` when it made none.
    pub fn tokens(&self) -> Option<u64> {
        tokens_of(&self.llm)
    }
}

/// Tokens spent by `calls`; `None` when there were none.
pub fn tokens_of(calls: &[LlmUsage]) -> Option<u64> {
    (!calls.is_empty()).then(|| calls.iter().map(LlmUsage::tokens).sum())
}

/// A world model that could not answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SimFailure {
    /// Why.
    pub message: String,
    /// The LLM calls made on the way (an ensemble's members' too).
    pub llm: Vec<LlmUsage>,
}

impl SimFailure {
    /// A failure with no LLM call behind it.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            llm: Vec::new(),
        }
    }
}

/// What one member of an ensemble made of a call, as recorded beside the ensemble's answer.
pub type MemberPrediction = cosmos_trajectory::event::MemberPrediction;

/// The BYOWM contract: `simulate(tool_call, user_request, context) -> observation`, a name
/// and a `to_dict` description.
pub trait WorldModel: Send + Sync {
    /// Short name for tables (`llm`, `memory`, `command`, `cached(llm)`).
    fn name(&self) -> String;
    /// Self-description recorded in the trajectory header (`to_dict`).
    fn describe(&self) -> WorldModelInfo;
    /// Predicts the result of a call.
    fn simulate<'a>(
        &'a self,
        request: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>>;
}

/// A world model's `to_dict`: its name and some recorded details.
pub fn describe<'a>(
    name: String,
    details: impl IntoIterator<Item = (&'a str, Value)>,
) -> WorldModelInfo {
    WorldModelInfo {
        name,
        details: details
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    }
}

/// Arguments in a canonical text form (keys sorted), for matching and caching.
pub use cosmos_trajectory::canonical::canonical;

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::FieldChange;
    use serde_json::json;

    #[test]
    fn a_prompts_history_is_bounded_however_long_the_run_and_however_big_a_call() {
        let step = |i: usize, arguments: Value| HistoryStep {
            tool: "s:write".into(),
            arguments,
            observation: Observation {
                text: format!("result {i} {}", "x".repeat(10_000)),
                ..Default::default()
            },
            ..Default::default()
        };
        let huge = json!({"content": "y".repeat(1_000_000)});
        let history: Vec<HistoryStep> = (0..500).map(|i| step(i, huge.clone())).collect();
        let quoted = history_lines(&history, 100);
        let lines: Vec<&str> = quoted.lines().collect();
        assert_eq!(lines.len(), QUOTED_STEPS + 1);
        assert_eq!(lines[0], "(450 earlier steps left out)");
        assert!(lines[1].starts_with("451. s:write "), "{}", lines[1]);
        assert!(lines.last().unwrap().starts_with("500. "));
        // Each line: its number and tool, then at most 100 characters (and `…`) twice.
        assert!(
            lines.iter().all(|l| l.chars().count() < 240),
            "{}",
            lines[1]
        );
        assert!(quoted.len() < 64 * 1024, "{} bytes", quoted.len());
        // A short history is quoted whole, its texts uncut.
        let short = history_lines(&[step(0, json!({"a": 1}))][..], 20_000);
        assert!(short.starts_with("1. s:write {\"a\":1} -> result 0 "));
        assert!(!short.contains('…'));
    }

    fn real(tool: &str, name: &str, after: Option<Value>, cut: bool) -> HistoryStep {
        let mut change = StateChange {
            fields_changed: 1,
            cut,
            ..Default::default()
        };
        change.fields.insert(
            name.into(),
            FieldChange {
                before: None,
                after,
            },
        );
        HistoryStep {
            tool: tool.into(),
            state_change: Some(Arc::new(change)),
            ..Default::default()
        }
    }

    #[test]
    fn the_belief_moves_on_by_real_changes_and_predictions_of_its_own_server() {
        let start = json!({"item/a": 1});
        let predicted = HistoryStep {
            tool: "shop:write_query".into(),
            predicted_state: Some(Arc::new(json!({"item/a": 1, "item/p": 9}))),
            ..Default::default()
        };
        let history = [
            real("shop:write_query", "item/b", Some(json!(2)), false),
            // Another server's change is not this one's.
            real("files:write_file", "x.txt", Some(json!("x")), false),
            // A read that says nothing of the state.
            HistoryStep {
                tool: "shop:read_query".into(),
                ..Default::default()
            },
        ];
        assert_eq!(
            belief(Some(&start), &history, "shop"),
            Some(json!({"item/a": 1, "item/b": 2}))
        );
        // A prediction replaces the belief; a real change after it moves that on.
        let history = [
            predicted.clone(),
            real("shop:write_query", "item/a", None, false),
        ];
        assert_eq!(
            belief(Some(&start), &history, "shop"),
            Some(json!({"item/p": 9}))
        );
        // A cut change leaves the state unknown; so does no start.
        let cut = [real("shop:write_query", "item/b", Some(json!(2)), true)];
        assert_eq!(belief(Some(&start), &cut, "shop"), None);
        assert_eq!(belief(None, &[], "shop"), None);
        // A state too big for a prompt is not given.
        let big = json!({"blob": "x".repeat(crate::mcp::state_view::STATE_BYTES)});
        assert_eq!(belief(Some(&big), &[], "shop"), None);
    }
}
