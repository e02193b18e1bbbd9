//! What a pass over a run's totals needs of each event, decoded without its large texts.
//!
//! `report` reads every line of every run but aggregates only counts, times, token usage and
//! the few simulations a real call executes. The search kinds (`node_added`,
//! `node_simulated`, `node_evaluated`, `backpropagated`) with `llm_call` and `phase` are
//! nearly every line of a SPIRAL run, and a simulation's observation is most of its bytes. So
//! those kinds are decoded here straight from the rest of the line's map (no buffering), with
//! every field checked by its real type but long strings only checked, not copied: a
//! simulation's observation is kept as raw JSON and decoded when a real call pairs with it.
//!
//! The rule that keeps this honest: a line is taken here only when the full decoder
//! ([`super::reader::parse_event_str`]) would take it too. Anything this module is unsure of
//! (another key order, another kind, a `\u` escape in a skipped string, recorded messages)
//! steps aside to the full decoder, and a test holds the two to the same verdict on every
//! field of every kind dropped, nulled, duplicated and given the wrong type.

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess};
use serde::{Deserialize, de};
use serde_json::Value;
use serde_json::value::RawValue;

use super::envelope::{self, KindBody};
use super::event::{Event, EventBody, NodeId, Observation, Phase, Role, VALIDATOR, Verdict};

/// One event as a totals pass needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct LeanEvent {
    /// Sequence number.
    pub seq: u64,
    /// Milliseconds since the run started.
    pub t_ms: u64,
    /// What the event says, as far as totals go.
    pub body: LeanBody,
}

/// The parts of an event a totals pass reads.
#[derive(Debug, Clone, PartialEq)]
pub enum LeanBody {
    /// `phase`.
    Phase(Phase),
    /// `llm_call`: its role and usage.
    LlmCall {
        /// Which role made it.
        role: Role,
        /// Prompt tokens.
        prompt_tokens: u64,
        /// Completion tokens.
        completion_tokens: u64,
        /// The counts were estimated.
        tokens_estimated: bool,
        /// The call failed.
        failed: bool,
    },
    /// `node_added`.
    NodeAdded,
    /// `node_simulated`, its observation still raw.
    NodeSimulated {
        /// The node.
        node: NodeId,
        /// The simulation is a validator's rejection, not a prediction.
        by_validator: bool,
        /// The prediction, undecoded.
        observation: RawObservation,
    },
    /// `node_evaluated` or `backpropagated`: nothing but its time counts.
    Search,
    /// Any other event, decoded whole (boxed: rare, and large beside the others).
    Full(Box<EventBody>),
}

impl LeanEvent {
    /// The lean view of a whole event.
    pub fn of(event: Event) -> Self {
        Self {
            seq: event.seq,
            t_ms: event.t_ms,
            body: LeanBody::Full(Box::new(event.body)),
        }
    }

    /// True for events that may follow `run_finished` (see [`super::reader::is_judgement`]).
    pub fn is_judgement(&self) -> bool {
        match &self.body {
            LeanBody::Phase(phase) => *phase == Phase::Judge,
            LeanBody::LlmCall { role, .. } => *role == Role::Judge,
            LeanBody::Full(body) => super::reader::is_judgement(body),
            _ => false,
        }
    }
}

/// A simulated observation as it was written: its text a JSON string literal, decoded only
/// when a real call pairs with it.
#[derive(Debug, Clone, PartialEq)]
pub struct RawObservation {
    /// The `text` field as a JSON string literal (quotes and escapes included); `None` when
    /// absent.
    text: Option<Box<str>>,
    structured: Option<Value>,
    is_error: bool,
    truncated_bytes: u64,
}

impl RawObservation {
    /// The observation. The text was checked as a JSON string when the line was read, so this
    /// fails only if that check was wrong; then it says why.
    pub fn decode(&self) -> Result<Observation, serde_json::Error> {
        let text = match &self.text {
            Some(literal) => serde_json::from_str(literal)?,
            None => String::new(),
        };
        Ok(Observation {
            text,
            structured: self.structured.clone(),
            is_error: self.is_error,
            truncated_bytes: self.truncated_bytes,
        })
    }
}

/// The lean event of `text`, or `None` when the full decoder must read it.
pub fn parse(text: &str) -> Option<LeanEvent> {
    let (seq, t_ms, body) = envelope::parse_with::<LeanBody>(text)?;
    Some(LeanEvent { seq, t_ms, body })
}

impl<'de> KindBody<'de> for LeanBody {
    fn body<A: MapAccess<'de>>(kind: &'de str, rest: A) -> Result<Self, A::Error> {
        let rest = MapAccessDeserializer::new(rest);
        Ok(match kind {
            "phase" => {
                let e = PhaseLine::deserialize(rest)?;
                LeanBody::Phase(e.phase)
            }
            "llm_call" => {
                let e = LlmCallLine::deserialize(rest)?;
                if e.messages.is_some() {
                    // Recorded messages are any JSON; the full decoder checks them.
                    return Err(de::Error::custom("messages: read in full"));
                }
                LeanBody::LlmCall {
                    role: e.role,
                    prompt_tokens: e.prompt_tokens,
                    completion_tokens: e.completion_tokens,
                    tokens_estimated: e.tokens_estimated,
                    failed: e.error.is_some(),
                }
            }
            "node_added" => {
                NodeAddedLine::deserialize(rest)?;
                LeanBody::NodeAdded
            }
            "node_simulated" => {
                let e = NodeSimulatedLine::deserialize(rest)?;
                LeanBody::NodeSimulated {
                    node: e.node,
                    by_validator: e.world_model.is_validator(),
                    observation: RawObservation {
                        text: e.observation.text.map(|t| t.0.get().into()),
                        structured: e.observation.structured,
                        is_error: e.observation.is_error,
                        truncated_bytes: e.observation.truncated_bytes,
                    },
                }
            }
            "node_evaluated" => {
                NodeEvaluatedLine::deserialize(rest)?;
                LeanBody::Search
            }
            "backpropagated" => {
                BackpropagatedLine::deserialize(rest)?;
                LeanBody::Search
            }
            _ => return Err(de::Error::custom("not a lean kind")),
        })
    }
}

// The lines below mirror their `EventBody` variants field for field (names, types,
// defaults). They refuse fields they do not know: the full decoder reads those (its
// reading of a field it does not know is stricter than skipping it), and a second `kind`
// is one of them. Fields nothing reads are decoded only to be checked (hence `dead_code`).

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PhaseLine {
    phase: Phase,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmCallLine<'a> {
    role: Role,
    #[serde(borrow)]
    model: JsonString<'a>,
    prompt_tokens: u64,
    completion_tokens: u64,
    #[serde(default)]
    tokens_estimated: bool,
    latency_ms: u64,
    #[serde(default, borrow)]
    error: Option<JsonString<'a>>,
    #[serde(default, borrow)]
    messages: Option<&'a RawValue>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeAddedLine<'a> {
    node: NodeId,
    #[serde(default)]
    parent: Option<NodeId>,
    depth: u32,
    #[serde(default, borrow)]
    action: Option<ActionLine<'a>>,
    #[serde(default)]
    prior: Option<f64>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeSimulatedLine<'a> {
    node: NodeId,
    #[serde(borrow)]
    world_model: JsonString<'a>,
    #[serde(borrow)]
    observation: ObservationLine<'a>,
    latency_ms: u64,
    #[serde(default)]
    tokens: Option<u64>,
}

#[allow(dead_code)]
/// [`Observation`] with its text unread.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ObservationLine<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    text: Option<JsonString<'a>>,
    #[serde(default)]
    structured: Option<Value>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    truncated_bytes: u64,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeEvaluatedLine<'a> {
    node: NodeId,
    verdict: Verdict,
    base_reward: f64,
    #[serde(default)]
    critic_reward: Option<f64>,
    #[serde(default, borrow)]
    critic_reason: Option<JsonString<'a>>,
    reward: f64,
    #[serde(default)]
    terminal: bool,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BackpropagatedLine {
    path: NodeIds,
    value: f64,
}

/// An [`Action`](super::event::Action) with its `type` first (as written), checked and not kept; another order
/// steps aside.
#[allow(dead_code)]
enum ActionLine<'a> {
    ToolCall(ToolCallLine<'a>),
    Finish(FinishLine<'a>),
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallLine<'a> {
    #[serde(borrow)]
    tool: JsonString<'a>,
    #[serde(default)]
    arguments: Value,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishLine<'a> {
    #[serde(default, borrow)]
    answer: Option<JsonString<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ActionLine<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TypeFirst<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> de::Visitor<'de> for TypeFirst<'a> {
            type Value = ActionLine<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an action")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                if map.next_key::<&'de str>()? != Some("type") {
                    return Err(de::Error::custom("type is not first"));
                }
                let rest = |map| MapAccessDeserializer::new(map);
                match map.next_value::<&'de str>()? {
                    "tool_call" => ToolCallLine::deserialize(rest(map)).map(ActionLine::ToolCall),
                    "finish" => FinishLine::deserialize(rest(map)).map(ActionLine::Finish),
                    _ => Err(de::Error::custom("not an action type")),
                }
            }
        }
        d.deserialize_map(TypeFirst(std::marker::PhantomData))
    }
}

/// A list of node ids, checked and not kept.
struct NodeIds;

impl<'de> Deserialize<'de> for NodeIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ids;
        impl<'de> de::Visitor<'de> for Ids {
            type Value = NodeIds;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of node ids")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<NodeIds, A::Error> {
                while seq.next_element::<NodeId>()?.is_some() {}
                Ok(NodeIds)
            }
        }
        d.deserialize_seq(Ids)
    }
}

/// A JSON string, checked and left as written. One with a `\u` escape steps aside: whether
/// it decodes (a lone surrogate does not) is the full decoder's to say.
struct JsonString<'a>(&'a RawValue);

impl JsonString<'_> {
    /// True when the string is [`VALIDATOR`] (exact: a spelling with escapes would need a
    /// `\u`, which never gets here).
    fn is_validator(&self) -> bool {
        let text = self.0.get();
        text.len() == VALIDATOR.len() + 2 && &text[1..text.len() - 1] == VALIDATOR
    }
}

/// A field that defaults to `None` when absent but, like a `String` with a default, must be
/// a string when present (`null` included).
fn present<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<JsonString<'a>>, D::Error> {
    JsonString::deserialize(d).map(Some)
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonString<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'a RawValue>::deserialize(d)?;
        let text = raw.get();
        if !text.starts_with('"') {
            return Err(de::Error::custom("expected a string"));
        }
        if memchr::memmem::find(text.as_bytes(), b"\\u").is_some() {
            return Err(de::Error::custom("a \\u escape: read in full"));
        }
        Ok(Self(raw))
    }
}
