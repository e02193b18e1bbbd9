//! The one view of a recorded real call (`tool_called`) that every reader takes: the metrics,
//! a recheck, a fork's recording, wm-eval, the judge, the exports and the explorer read a call
//! through [`RecordedCall::of`] rather than each matching the event's fields by hand. A reader
//! that keeps calls beyond their events (a recheck's list, a fork's recording) keeps
//! [`OwnedCall`]s, made by [`RecordedCall::owned`].

use serde_json::Value;

use super::event::{EventBody, NodeId, Observation, Origin, StateChange};

/// A `tool_called` event's call, borrowed from the event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordedCall<'a> {
    /// The step it was (numbered from 1 in the run that holds it).
    pub step: u64,
    /// The namespaced tool as called.
    pub tool: &'a str,
    /// The server that answered, when one did.
    pub server: Option<&'a str>,
    /// The arguments sent.
    pub arguments: &'a Value,
    /// The result.
    pub result: &'a Observation,
    /// How long it took, in milliseconds.
    pub latency_ms: u64,
    /// The plan node it executed, when it executed one.
    pub node: Option<NodeId>,
    /// A transport error, a timeout or a cut-off.
    pub error: Option<&'a str>,
    /// Where it was first recorded, when this is a copy (a fork's history, a wm-eval file).
    pub origin: Option<&'a Origin>,
    /// How it changed its server's sandboxed state, when a sandbox watched it.
    pub state_change: Option<&'a StateChange>,
}

impl<'a> RecordedCall<'a> {
    /// The call a `tool_called` event records; `None` for any other event.
    pub fn of(body: &'a EventBody) -> Option<Self> {
        match body {
            EventBody::ToolCalled {
                step,
                tool,
                server,
                arguments,
                result,
                latency_ms,
                node,
                error,
                origin,
                state_change,
            } => Some(Self {
                step: *step,
                tool,
                server: server.as_deref(),
                arguments,
                result,
                latency_ms: *latency_ms,
                node: *node,
                error: error.as_deref(),
                origin: origin.as_deref(),
                state_change: state_change.as_deref(),
            }),
            _ => None,
        }
    }

    /// The call failed: its result is an error, or it never answered (a transport error).
    pub fn failed(&self) -> bool {
        self.result.is_error || self.error.is_some()
    }

    /// Whether it changed its server's state, when a sandbox watched it.
    pub fn changed_state(&self) -> Option<bool> {
        self.state_change.map(StateChange::changed)
    }

    /// A copy of a call made elsewhere (no metric counts it as this run's).
    pub fn is_copy(&self) -> bool {
        self.origin.is_some()
    }

    /// What the call gave back, as every fidelity compares a prediction with it: its result,
    /// marked an error when the call failed outside the tool (a transport error, a timeout).
    pub fn observed(&self) -> Observation {
        Observation {
            is_error: self.failed(),
            ..self.result.clone()
        }
    }
}

/// A recorded call held on its own, with its line's `seq`: what a recheck calls again and a
/// fork's recording answers from.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedCall {
    /// Its line's `seq` in the run that holds it.
    pub seq: u64,
    /// Its step there.
    pub step: u64,
    /// The namespaced tool.
    pub tool: String,
    /// The server that answered, when one did.
    pub server: Option<String>,
    /// The arguments sent.
    pub arguments: Value,
    /// The result.
    pub result: Observation,
    /// A transport error, a timeout or a cut-off.
    pub error: Option<String>,
    /// How long it took, in milliseconds.
    pub latency_ms: u64,
}

impl RecordedCall<'_> {
    /// This call held on its own, its line's `seq` being `seq`.
    pub fn owned(&self, seq: u64) -> OwnedCall {
        OwnedCall {
            seq,
            step: self.step,
            tool: self.tool.to_string(),
            server: self.server.map(str::to_string),
            arguments: self.arguments.clone(),
            result: self.result.clone(),
            error: self.error.map(str::to_string),
            latency_ms: self.latency_ms,
        }
    }
}

impl OwnedCall {
    /// Its copy in another run (a fork's history or a fork's answer from its recording), as
    /// step `step` (executing `node`, when a plan's): a `tool_called` whose origin is this
    /// call's line in `file`, which changed no state of the run it is copied into.
    pub fn copied(&self, file: &str, step: u64, node: Option<NodeId>) -> EventBody {
        EventBody::ToolCalled {
            step,
            tool: self.tool.clone(),
            server: self.server.clone(),
            arguments: Box::new(self.arguments.clone()),
            result: self.result.clone(),
            latency_ms: self.latency_ms,
            node,
            error: self.error.clone(),
            origin: Some(Box::new(Origin {
                run: file.to_string(),
                seq: self.seq,
            })),
            state_change: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_called_event_reads_as_its_call_and_any_other_as_none() {
        let body = EventBody::ToolCalled {
            step: 2,
            tool: "s:t".into(),
            server: Some("s".into()),
            arguments: Box::new(serde_json::json!({"a": 1})),
            result: Observation::of_text("boom", true),
            latency_ms: 7,
            node: Some(3),
            error: None,
            origin: None,
            state_change: None,
        };
        let call = RecordedCall::of(&body).unwrap();
        assert_eq!((call.step, call.tool, call.server), (2, "s:t", Some("s")));
        assert!(call.failed() && !call.is_copy());
        assert_eq!(call.changed_state(), None);
        assert_eq!(
            RecordedCall::of(&EventBody::Answer { text: "x".into() }),
            None
        );
        // Held on its own and copied into another run, it says where it came from.
        let copy = call.owned(40).copied("a.jsonl", 1, None);
        let copied = RecordedCall::of(&copy).unwrap();
        assert_eq!(
            (copied.step, copied.tool, copied.result),
            (1, "s:t", call.result)
        );
        assert_eq!(
            copied.origin.map(|o| (o.run.as_str(), o.seq)),
            Some(("a.jsonl", 40))
        );
        assert!(copied.is_copy() && copied.failed());
    }
}
