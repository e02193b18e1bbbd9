//! Field-for-field mirrors of the `EventBody` variants that make up nearly every line of a
//! SPIRAL run (`phase`, `llm_call`, `node_added`, `node_simulated`, `node_evaluated`,
//! `backpropagated`) and of `tool_called` and `call_simulated` (most of a small run's bytes),
//! decoded from the rest of a line's map after its envelope: plain structs, so serde reads them
//! in one pass, where the internally tagged `EventBody` first buffers the whole map.
//!
//! They are generic over how a string is held: `String` gives the full event
//! ([`super::envelope`], the reader's fast path), a checked-but-unread JSON string gives the
//! lean one ([`super::lean`], what `report` reads). Names, types and defaults are those of
//! `EventBody`; a field they do not know (a second `kind` included) is refused, so the line goes
//! to the general decoder, which reads unknown fields more strictly than skipping them would.
//! `tests/trajectory/lean_reading.rs` holds every path to the same verdict on mutated lines. A field added
//! to one of these variants is added here too.
//!
//! Field-for-field mirrors of the six `EventBody` variants that are nearly every line
//! of a SPIRAL run, and of `tool_called` and `call_simulated` (most of a small run's bytes)
//! (plain structs, so serde does not buffer the map as it does for the internally tagged enum),
//! generic over how strings are held: `String` for the full event, a checked raw
//! string for `lean.rs`. Invariant: a mirror refuses what it does not know, so the general path
//! decides; `tests/trajectory/lean_reading.rs` mutates every field of every mirrored kind and holds all
//! three paths to one verdict. A field added to one of those variants goes into its mirror too.

use crate::event::StateChange;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess};
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::Value;

use super::event::{
    Action, EventBody, MemberPrediction, NodeId, Observation, Origin, Phase, PredictionRecord,
    Role, Verdict,
};

/// `phase`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseLine {
    pub phase: Phase,
}

/// `llm_call`. `A` holds any JSON value: `Value` for the full event, a check that builds
/// nothing for the lean one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmCallLine<S, A = Value> {
    pub role: Role,
    pub model: S,
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub tokens_estimated: bool,
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default = "none")]
    pub error: Option<S>,
    #[serde(default = "none")]
    pub messages: Option<A>,
}

/// `node_added`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeAddedLine<S, A = Value> {
    pub node: NodeId,
    #[serde(default)]
    pub parent: Option<NodeId>,
    pub depth: u32,
    #[serde(default = "none")]
    pub action: Option<ActionLine<S, A>>,
    #[serde(default)]
    pub prior: Option<f64>,
}

/// `node_simulated`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSimulatedLine<S, A = Value> {
    pub node: NodeId,
    pub world_model: S,
    pub observation: ObservationLine<S, A>,
    pub latency_ms: u64,
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::event::unit_confidence")]
    pub confidence: Option<f64>,
    #[serde(default = "none")]
    pub confidence_source: Option<S>,
    #[serde(default)]
    pub members: Vec<MemberPrediction>,
    #[serde(default = "none")]
    pub predicted_state: Option<A>,
    #[serde(default)]
    pub route: Option<crate::event::Route>,
}

/// [`Observation`]; `text` is `None` when absent (it must be a string when present).
/// `structured` is `A`, as in [`LlmCallLine`].
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "S: Deserialize<'de>, A: Deserialize<'de>")
)]
pub struct ObservationLine<S, A = Value> {
    #[serde(default = "none", deserialize_with = "present")]
    pub text: Option<S>,
    #[serde(default = "none")]
    pub structured: Option<A>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default)]
    pub truncated_bytes: u64,
}

/// `tool_called`: few per run, but a real result is often most of a small run's bytes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCalledLine<S> {
    pub step: u64,
    pub tool: S,
    #[serde(default = "none")]
    pub server: Option<S>,
    #[serde(default)]
    pub arguments: Value,
    #[serde(default = "no_result")]
    pub result: ObservationLine<S>,
    #[serde(default)]
    pub latency_ms: u64,
    #[serde(default)]
    pub node: Option<NodeId>,
    #[serde(default = "none")]
    pub error: Option<S>,
    #[serde(default)]
    pub origin: Option<Box<Origin>>,
    #[serde(default)]
    pub state_change: Option<Box<StateChange>>,
}

/// `call_simulated`: a world model's prediction of a real call, as long as the real result.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSimulatedLine<S> {
    pub step: u64,
    #[serde(default = "none")]
    pub tool: Option<S>,
    #[serde(default)]
    pub arguments: Option<Box<Value>>,
    pub world_model: S,
    pub observation: ObservationLine<S>,
    pub latency_ms: u64,
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default, deserialize_with = "crate::event::unit_confidence")]
    pub confidence: Option<f64>,
    #[serde(default = "none")]
    pub confidence_source: Option<S>,
    #[serde(default)]
    pub members: Vec<MemberPrediction>,
    #[serde(default)]
    pub predicted_state: Option<Box<Value>>,
}

impl From<ObservationLine<String>> for Observation {
    fn from(line: ObservationLine<String>) -> Self {
        Observation {
            text: line.text.unwrap_or_default(),
            structured: line.structured.map(Box::new),
            is_error: line.is_error,
            truncated_bytes: line.truncated_bytes,
        }
    }
}

/// `node_evaluated`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEvaluatedLine<S> {
    pub node: NodeId,
    pub verdict: Verdict,
    pub base_reward: f64,
    #[serde(default)]
    pub critic_reward: Option<f64>,
    #[serde(default = "none")]
    pub critic_reason: Option<S>,
    pub reward: f64,
    #[serde(default)]
    pub terminal: bool,
    #[serde(default)]
    pub horizon: Option<f64>,
}

/// `backpropagated`; `path` is `Vec<NodeId>` for the full event, anything that checks the list for the lean one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackpropagatedLine<P> {
    pub path: P,
    pub value: f64,
}

/// An [`Action`] with its `type` first, as written; another order steps aside.
pub enum ActionLine<S, A = Value> {
    /// `tool_call`.
    ToolCall {
        /// Namespaced tool name.
        tool: S,
        /// Arguments as JSON; `None` when absent or `null`.
        arguments: Option<A>,
    },
    /// `finish`.
    Finish {
        /// A draft answer.
        answer: Option<S>,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallLine<S, A> {
    tool: S,
    #[serde(default = "Option::default")]
    arguments: Option<A>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishLine<S> {
    #[serde(default = "none")]
    answer: Option<S>,
}

impl<'de, S: Deserialize<'de>, A: Deserialize<'de>> Deserialize<'de> for ActionLine<S, A> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TypeFirst<S, A>(std::marker::PhantomData<(S, A)>);
        impl<'de, S: Deserialize<'de>, A: Deserialize<'de>> de::Visitor<'de> for TypeFirst<S, A> {
            type Value = ActionLine<S, A>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an action")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                if map.next_key::<&'de str>()? != Some("type") {
                    return Err(de::Error::custom("type is not first"));
                }
                let rest = |map| MapAccessDeserializer::new(map);
                match map.next_value::<&'de str>()? {
                    "tool_call" => {
                        ToolCallLine::deserialize(rest(map)).map(|a| ActionLine::ToolCall {
                            tool: a.tool,
                            arguments: a.arguments,
                        })
                    }
                    "finish" => FinishLine::deserialize(rest(map))
                        .map(|a| ActionLine::Finish { answer: a.answer }),
                    _ => Err(de::Error::custom("not an action type")),
                }
            }
        }
        d.deserialize_map(TypeFirst(std::marker::PhantomData))
    }
}

/// `None` for a missing field (serde's own default needs `S: Default`).
fn none<T>() -> Option<T> {
    None
}

/// A field that is `None` when absent but, like a `String` with a default, must be a string
/// when present (`null` included).
fn present<'de, S: Deserialize<'de>, D: Deserializer<'de>>(d: D) -> Result<Option<S>, D::Error> {
    S::deserialize(d).map(Some)
}

/// The kinds read lean (`super::lean`): every mirrored kind but the last `FULL_ONLY`.
pub const KINDS: &[&str] = MIRRORED.split_at(MIRRORED.len() - FULL_ONLY).0;

/// How many of [`MIRRORED`]'s kinds, at its end, only the full decoder reads through a mirror
/// (`report` keeps their observations and arguments whole).
const FULL_ONLY: usize = 2;

/// The kinds the full decoder reads through a mirror: the lean ones, then `tool_called` and
/// `call_simulated`.
pub const MIRRORED: &[&str] = &[
    "phase",
    "llm_call",
    "node_added",
    "node_simulated",
    "node_evaluated",
    "backpropagated",
    "tool_called",
    "call_simulated",
];

/// The full event body of a mirrored kind (one of [`MIRRORED`]) from the rest of its map.
pub fn full_body<'de, A: MapAccess<'de>>(kind: &str, rest: A) -> Result<EventBody, A::Error> {
    fn read<'de, T: DeserializeOwned, A: MapAccess<'de>>(rest: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(rest))
    }
    match kind {
        "phase" => read::<PhaseLine, _>(rest).map(|e| EventBody::Phase { phase: e.phase }),
        "llm_call" => read::<LlmCallLine<String>, _>(rest).map(|e| EventBody::LlmCall {
            role: e.role,
            model: e.model,
            prompt_tokens: e.prompt_tokens,
            completion_tokens: e.completion_tokens,
            tokens_estimated: e.tokens_estimated,
            latency_ms: e.latency_ms,
            error: e.error,
            messages: e.messages.map(Box::new),
        }),
        "node_added" => read::<NodeAddedLine<String>, _>(rest).map(|e| EventBody::NodeAdded {
            node: e.node,
            parent: e.parent,
            depth: e.depth,
            action: e.action.map(|a| match a {
                ActionLine::ToolCall { tool, arguments } => Action::ToolCall {
                    tool,
                    arguments: arguments.unwrap_or_default(),
                },
                ActionLine::Finish { answer } => Action::Finish { answer },
            }),
            prior: e.prior,
        }),
        "node_simulated" => {
            read::<NodeSimulatedLine<String>, _>(rest).map(|e| EventBody::NodeSimulated {
                node: e.node,
                prediction: PredictionRecord {
                    world_model: e.world_model,
                    observation: e.observation.into(),
                    latency_ms: e.latency_ms,
                    tokens: e.tokens,
                    confidence: e.confidence,
                    confidence_source: e.confidence_source,
                    members: e.members,
                    predicted_state: e.predicted_state.map(Box::new),
                },
                route: e.route,
            })
        }
        "tool_called" => read::<ToolCalledLine<String>, _>(rest).map(|e| EventBody::ToolCalled {
            step: e.step,
            tool: e.tool,
            server: e.server,
            arguments: Box::new(e.arguments),
            result: e.result.into(),
            latency_ms: e.latency_ms,
            node: e.node,
            error: e.error,
            origin: e.origin,
            state_change: e.state_change,
        }),
        "call_simulated" => {
            read::<CallSimulatedLine<String>, _>(rest).map(|e| EventBody::CallSimulated {
                step: e.step,
                tool: e.tool,
                arguments: e.arguments,
                prediction: PredictionRecord {
                    world_model: e.world_model,
                    observation: e.observation.into(),
                    latency_ms: e.latency_ms,
                    tokens: e.tokens,
                    confidence: e.confidence,
                    confidence_source: e.confidence_source,
                    members: e.members,
                    predicted_state: e.predicted_state,
                },
            })
        }
        "node_evaluated" => {
            read::<NodeEvaluatedLine<String>, _>(rest).map(|e| EventBody::NodeEvaluated {
                node: e.node,
                verdict: e.verdict,
                base_reward: e.base_reward,
                critic_reward: e.critic_reward,
                critic_reason: e.critic_reason,
                reward: e.reward,
                terminal: e.terminal,
                horizon: e.horizon,
            })
        }
        "backpropagated" => {
            read::<BackpropagatedLine<Vec<NodeId>>, _>(rest).map(|e| EventBody::Backpropagated {
                path: e.path,
                value: e.value,
            })
        }
        _ => Err(de::Error::custom("not a mirrored kind")),
    }
}

/// An absent `result` (an imported call whose result never came), as `Observation::default`.
fn no_result<S, A>() -> ObservationLine<S, A> {
    ObservationLine {
        text: None,
        structured: None,
        is_error: false,
        truncated_bytes: 0,
    }
}
