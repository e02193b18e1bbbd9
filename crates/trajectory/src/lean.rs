//! What a pass over a run's totals, and an opened run, need of each event: decoded without
//! its large texts.
//!
//! `report` reads every line of every run but aggregates only counts, times, token usage and
//! the few simulations a real call executes; an opened run (`super::run::Run`) keeps in
//! memory only what its indices, the fold, the jumps and the metrics read, and reads an event
//! back from the file when a view shows it. The search kinds (`node_added`,
//! `node_simulated`, `node_evaluated`, `backpropagated`) with `llm_call` and `phase` are
//! nearly every line of a SPIRAL run, and a simulation's observation is most of its bytes. So
//! those kinds are decoded here through their mirrors (`mirror.rs`: straight from the rest of
//! the line's map, no buffering) with strings held as `JsonString`s: every field checked by
//! its real type, but strings only checked, not copied. A simulation's observation is not
//! kept at all: `report` and the run view read its line back from the file when they need it
//! (a real call pairs with it, a view shows it).
//!
//! The rule that keeps this honest: a line is taken here only when the full decoder
//! ([`super::reader::parse_event_str`]) would take it too. Anything this module is unsure of
//! (another key order, another kind, an unknown field, a `\u` escape in a string) steps aside
//! to the full decoder, and a test holds the two to the same verdict on every field of every
//! kind dropped, nulled, duplicated and given the wrong type.
//!
//! What a totals pass (`report`) and an opened run need of the search kinds,
//! `llm_call` and `phase` (nearly every line of a SPIRAL run): node ids, verdicts, rewards,
//! paths, usage (`LlmFacts`); every other kind is kept whole. Decoded from the rest of the
//! line's map without buffering: every field checked by its real type, long strings checked
//! but not copied. Nothing of a simulation's observation is kept (`Brief`): `report` and the
//! run view read its line back from the file when they need it. Invariant: it takes a line only when the full decoder would,
//! and reads it the same; anything it is unsure of steps aside to the full decoder
//! (`tests/trajectory/lean_reading.rs` mutates every field of every kind to hold this). Decodes through
//! `mirror.rs`.

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess};
use serde::{Deserialize, de};
use serde_json::value::RawValue;

use super::checked::AnyJson;
use super::envelope::{self, KindBody};
use super::event::{Action, ActionKind, Event, EventBody, NodeId, Phase, Role, VALIDATOR, Verdict};
use super::mirror::{
    ActionLine, BackpropagatedLine, LlmCallLine, NodeAddedLine, NodeEvaluatedLine,
    NodeSimulatedLine, PhaseLine,
};
use crate::event::PredictionRecord;

/// The kinds read lean; every other kind is read in full.
pub use super::mirror::KINDS;

/// What one LLM call contributes to a run's usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmFacts {
    /// The role.
    pub role: Role,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Counts were estimated.
    pub estimated: bool,
    /// The call failed.
    pub failed: bool,
}

/// One event as a pass over totals or an opened run needs it. Nothing of a simulation's
/// observation is kept: whoever needs it reads its line back from the file.
#[derive(Debug, Clone, PartialEq)]
pub struct LeanEvent {
    /// Sequence number.
    pub seq: u64,
    /// Milliseconds since the run started.
    pub t_ms: u64,
    /// What the event says, as far as totals, indices and the fold go.
    pub body: LeanBody,
}

/// What an opened run keeps of each event in memory (`super::run::Run`): a lean event
/// without its observation. The texts stay in the file and are read back when shown.
pub type Brief = LeanEvent;

/// The parts of an event a lean read keeps.
#[derive(Debug, Clone, PartialEq)]
pub enum LeanBody {
    /// `phase`.
    Phase(Phase),
    /// `llm_call`: its role and usage.
    LlmCall(LlmFacts),
    /// `node_added`.
    NodeAdded {
        /// The new node.
        node: NodeId,
        /// Its parent.
        parent: Option<NodeId>,
        /// Its depth.
        depth: u32,
        /// Which action leads into it; `None` for a search's root.
        action: Option<ActionKind>,
    },
    /// `node_simulated`.
    NodeSimulated {
        /// The node.
        node: NodeId,
        /// The simulation is a validator's rejection, not a prediction.
        by_validator: bool,
        /// The world model's confidence, when it gave one.
        confidence: Option<f64>,
        /// How routing treated it, when the run routes.
        route: Option<crate::event::Route>,
    },
    /// `node_evaluated`.
    NodeEvaluated {
        /// The node.
        node: NodeId,
        /// Why the base reward is what it is.
        verdict: Verdict,
        /// The reward.
        reward: f64,
        /// The search imagined no further from it (routing's short horizon).
        horizon: bool,
    },
    /// `backpropagated`.
    Backpropagated {
        /// Node ids from the root down.
        path: Box<[NodeId]>,
        /// The value added along it.
        value: f64,
    },
    /// Any other event, whole (boxed: rare, and large beside the others).
    Full(Box<Event>),
}

impl LeanEvent {
    /// The lean view of a whole event (a kind not read lean is kept whole).
    pub fn of(event: Event) -> Self {
        Self::split(event).0
    }

    /// The lean view of a whole event, and the event back when that view does not hold it
    /// (so an owner that keeps events whole keeps each one once).
    pub fn split(event: Event) -> (Self, Option<Event>) {
        let (seq, t_ms) = (event.seq, event.t_ms);
        match LeanBody::lean(&event.body) {
            Some(body) => (Self { seq, t_ms, body }, Some(event)),
            None => {
                let body = LeanBody::Full(Box::new(event));
                (Self { seq, t_ms, body }, None)
            }
        }
    }

    /// The lean view of an event that stays with its owner (a kind not read lean is copied).
    pub fn copied(event: &Event) -> Self {
        Self {
            seq: event.seq,
            t_ms: event.t_ms,
            body: LeanBody::lean(&event.body)
                .unwrap_or_else(|| LeanBody::Full(Box::new(event.clone()))),
        }
    }

    /// The event, when it is kept whole.
    pub fn whole(&self) -> Option<&Event> {
        match &self.body {
            LeanBody::Full(event) => Some(event),
            _ => None,
        }
    }

    /// The `kind` name.
    pub fn kind(&self) -> &str {
        match &self.body {
            LeanBody::Phase(_) => "phase",
            LeanBody::LlmCall(_) => "llm_call",
            LeanBody::NodeAdded { .. } => "node_added",
            LeanBody::NodeSimulated { .. } => "node_simulated",
            LeanBody::NodeEvaluated { .. } => "node_evaluated",
            LeanBody::Backpropagated { .. } => "backpropagated",
            LeanBody::Full(event) => event.body.kind(),
        }
    }

    /// The tree node this event is about, as [`EventBody::node`] says.
    pub fn node(&self) -> Option<NodeId> {
        match &self.body {
            LeanBody::NodeAdded { node, .. }
            | LeanBody::NodeSimulated { node, .. }
            | LeanBody::NodeEvaluated { node, .. } => Some(*node),
            LeanBody::Backpropagated { path, .. } => path.last().copied(),
            LeanBody::Full(event) => event.body.node(),
            LeanBody::Phase(_) | LeanBody::LlmCall(_) => None,
        }
    }

    /// True when the event concerns node `id`: it is about it, passes through it
    /// (`backpropagated`) or plans it (`plan_selected`).
    pub fn touches(&self, id: NodeId) -> bool {
        match &self.body {
            LeanBody::Backpropagated { path, .. } => path.contains(&id),
            LeanBody::Full(event) => match &event.body {
                EventBody::PlanSelected { nodes, .. } => nodes.contains(&id),
                body => body.node() == Some(id),
            },
            _ => self.node() == Some(id),
        }
    }

    /// True for events that mark a failure, as [`EventBody::is_failure`] says.
    pub fn is_failure(&self) -> bool {
        match &self.body {
            LeanBody::LlmCall(call) => call.failed,
            LeanBody::Full(event) => event.body.is_failure(),
            _ => false,
        }
    }

    /// True for events that may follow `run_finished` (see [`super::reader::is_judgement`]).
    pub fn is_judgement(&self) -> bool {
        match &self.body {
            LeanBody::Phase(phase) => *phase == Phase::Judge,
            LeanBody::LlmCall(call) => call.role == Role::Judge,
            LeanBody::Full(event) => super::event::is_judgement(&event.body),
            _ => false,
        }
    }
}

impl LeanBody {
    /// The lean body of a kind read lean, or `None` for one kept whole.
    fn lean(body: &EventBody) -> Option<Self> {
        Some(match body {
            EventBody::Phase { phase } => LeanBody::Phase(*phase),
            EventBody::LlmCall {
                role,
                prompt_tokens,
                completion_tokens,
                tokens_estimated,
                error,
                ..
            } => LeanBody::LlmCall(LlmFacts {
                role: *role,
                prompt_tokens: *prompt_tokens,
                completion_tokens: *completion_tokens,
                estimated: *tokens_estimated,
                failed: error.is_some(),
            }),
            EventBody::NodeAdded {
                node,
                parent,
                depth,
                action,
                ..
            } => LeanBody::NodeAdded {
                node: *node,
                parent: *parent,
                depth: *depth,
                action: action.as_ref().map(Action::kind),
            },
            EventBody::NodeSimulated {
                node,
                route,
                prediction:
                    PredictionRecord {
                        world_model,
                        confidence,
                        ..
                    },
                ..
            } => LeanBody::NodeSimulated {
                node: *node,
                by_validator: world_model == VALIDATOR,
                confidence: *confidence,
                route: *route,
            },
            EventBody::NodeEvaluated {
                node,
                verdict,
                reward,
                horizon,
                ..
            } => LeanBody::NodeEvaluated {
                node: *node,
                verdict: *verdict,
                reward: *reward,
                horizon: horizon.is_some(),
            },
            EventBody::Backpropagated { path, value } => LeanBody::Backpropagated {
                path: path.as_slice().into(),
                value: *value,
            },
            _ => return None,
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
                let e = read::<LlmCallLine<JsonString<'de>, AnyJson>, _>(rest)?;
                LeanBody::LlmCall(LlmFacts {
                    role: e.role,
                    prompt_tokens: e.prompt_tokens,
                    completion_tokens: e.completion_tokens,
                    estimated: e.tokens_estimated,
                    failed: e.error.is_some(),
                })
            }
            "node_added" => {
                let e = read::<NodeAddedLine<JsonString<'de>, AnyJson>, _>(rest)?;
                LeanBody::NodeAdded {
                    node: e.node,
                    parent: e.parent,
                    depth: e.depth,
                    action: e.action.map(|a| match a {
                        ActionLine::ToolCall { .. } => ActionKind::ToolCall,
                        ActionLine::Finish { .. } => ActionKind::Finish,
                    }),
                }
            }
            "node_simulated" => {
                let e = read::<NodeSimulatedLine<JsonString<'de>, AnyJson>, _>(rest)?;
                LeanBody::NodeSimulated {
                    node: e.node,
                    by_validator: e.world_model.is_validator(),
                    confidence: e.confidence,
                    route: e.route,
                }
            }
            "node_evaluated" => {
                let e = read::<NodeEvaluatedLine<JsonString<'de>>, _>(rest)?;
                LeanBody::NodeEvaluated {
                    node: e.node,
                    verdict: e.verdict,
                    reward: e.reward,
                    horizon: e.horizon.is_some(),
                }
            }
            "backpropagated" => {
                let e = read::<BackpropagatedLine<NodePath>, _>(rest)?;
                LeanBody::Backpropagated {
                    path: e.path.0,
                    value: e.value,
                }
            }
            _ => return Err(de::Error::custom("not a lean kind")),
        })
    }
}

/// A `backpropagated` event's path, allocated once at its length: a list decoded into a
/// `Vec` grows and is then shrunk to a box, two trips to the allocator more per event.
struct NodePath(Box<[NodeId]>);

impl<'de> Deserialize<'de> for NodePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Ids;
        impl<'de> de::Visitor<'de> for Ids {
            type Value = Box<[NodeId]>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of node ids")
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut ids: A) -> Result<Self::Value, A::Error> {
                // A path is as long as the tree is deep: nearly always within the stack's room.
                let mut near = [0; 16];
                for (n, room) in near.iter_mut().enumerate() {
                    match ids.next_element()? {
                        Some(id) => *room = id,
                        None => return Ok(near[..n].into()),
                    }
                }
                let mut all = near.to_vec();
                while let Some(id) = ids.next_element()? {
                    all.push(id);
                }
                Ok(all.into_boxed_slice())
            }
        }
        d.deserialize_seq(Ids).map(NodePath)
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
        // (A backslash search: building a substring searcher per string costs more than the
        // search. An escaped backslash before a `u` steps aside too, which is only slower.)
        let bytes = text.as_bytes();
        if memchr::memchr_iter(b'\\', bytes).any(|i| bytes.get(i + 1) == Some(&b'u')) {
            return Err(de::Error::custom("a \\u escape: read in full"));
        }
        Ok(Self(raw))
    }
}
