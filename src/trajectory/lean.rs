//! What a pass over a run's totals needs of each event, decoded without its large texts.
//!
//! `report` reads every line of every run but aggregates only counts, times, token usage and
//! the few simulations a real call executes. The search kinds (`node_added`,
//! `node_simulated`, `node_evaluated`, `backpropagated`) with `llm_call` and `phase` are
//! nearly every line of a SPIRAL run, and a simulation's observation is most of its bytes. So
//! those kinds are decoded here through their mirrors (`mirror.rs`: straight from the rest of
//! the line's map, no buffering) with strings held as `JsonString`s: every field checked by
//! its real type, but strings only checked, not copied; a simulation's observation is kept as
//! raw JSON and decoded when a real call pairs with it.
//!
//! The rule that keeps this honest: a line is taken here only when the full decoder
//! ([`super::reader::parse_event_str`]) would take it too. Anything this module is unsure of
//! (another key order, another kind, an unknown field, a `\u` escape in a string) steps aside
//! to the full decoder, and a test holds the two to the same verdict on every field of every
//! kind dropped, nulled, duplicated and given the wrong type.

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess};
use serde::{Deserialize, de};
use serde_json::Value;
use serde_json::value::RawValue;

use super::envelope::{self, KindBody};
use super::event::{Event, EventBody, NodeId, Observation, Phase, Role, VALIDATOR};
use super::mirror::{
    BackpropagatedLine, LlmCallLine, NodeAddedLine, NodeEvaluatedLine, NodeSimulatedLine, PhaseLine,
};

/// The kinds read lean; every other kind is read in full.
pub use super::mirror::KINDS;

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
            structured: self.structured.clone().map(Box::new),
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
        fn read<'de, T: Deserialize<'de>, A: MapAccess<'de>>(rest: A) -> Result<T, A::Error> {
            T::deserialize(MapAccessDeserializer::new(rest))
        }
        Ok(match kind {
            "phase" => LeanBody::Phase(read::<PhaseLine, _>(rest)?.phase),
            "llm_call" => {
                let e = read::<LlmCallLine<JsonString<'de>>, _>(rest)?;
                LeanBody::LlmCall {
                    role: e.role,
                    prompt_tokens: e.prompt_tokens,
                    completion_tokens: e.completion_tokens,
                    tokens_estimated: e.tokens_estimated,
                    failed: e.error.is_some(),
                }
            }
            "node_added" => {
                read::<NodeAddedLine<JsonString<'de>>, _>(rest)?;
                LeanBody::NodeAdded
            }
            "node_simulated" => {
                let e = read::<NodeSimulatedLine<JsonString<'de>>, _>(rest)?;
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
                read::<NodeEvaluatedLine<JsonString<'de>>, _>(rest)?;
                LeanBody::Search
            }
            "backpropagated" => {
                read::<BackpropagatedLine<NodeIds>, _>(rest)?;
                LeanBody::Search
            }
            _ => return Err(de::Error::custom("not a lean kind")),
        })
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
