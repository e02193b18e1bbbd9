//! One-line descriptions of events and actions, for the timeline and progress lines.
//! The text is not yet safe to print: callers pass it through their sanitiser.
//!
//! One-line descriptions of events, nodes and calls (the timeline, progress
//! lines, the tree's rows), not yet safe to print: callers sanitise them. `fnv.rs`: FNV-1a, the
//! hash that is the same on every machine (function names, cell ids, dataset splits).
//! `canonical.rs`: JSON as text with its keys sorted (call matching, caches, state field names).

use std::collections::HashMap;

use super::event::{Action, AnsweredBy, Event, EventBody, Header, NodeId, Source};
use super::lean::{Brief, LeanBody};
use crate::event::PredictionRecord;
use crate::recorded_call::RecordedCall;

/// `tool(args)` for a call, `finish` for a finish.
pub fn action_label(action: &Action) -> String {
    match action {
        Action::ToolCall { tool, arguments } => call_label(tool, arguments),
        Action::Finish { .. } => "finish".to_string(),
    }
}

/// A short label of what a `node_added` event adds: its action; "root" for a search's root;
/// "revision" for the root of a search started again after a failed real call (it has a
/// parent but no action).
pub fn node_label(body: &EventBody) -> String {
    match body {
        EventBody::NodeAdded {
            action: Some(a), ..
        } => action_label(a),
        EventBody::NodeAdded {
            parent: Some(_), ..
        } => "↻ revision".to_string(),
        _ => "root".to_string(),
    }
}

/// The tree's shorter form of [`node_label`]: a call's argument values without their keys,
/// since sibling candidates differ in values and a row has little room.
pub fn compact_node_label(body: &EventBody) -> String {
    match body {
        EventBody::NodeAdded {
            action: Some(Action::ToolCall { tool, arguments }),
            ..
        } => compact_call_label(tool, arguments),
        other => node_label(other),
    }
}

/// `tool(v, …)`: a call's argument values without their keys.
pub fn compact_call_label(tool: &str, arguments: &serde_json::Value) -> String {
    args_label(tool, arguments, false)
}

/// What the children of one node call, gathered once so each child's row can be told apart
/// from its siblings without reading them all again (a node may have tens of thousands).
#[derive(Debug, Clone, Default)]
pub struct SiblingCalls {
    /// Per tool: how many children call it, and per argument how its values go.
    tools: HashMap<String, ToolCalls>,
}

#[derive(Debug, Clone, Default)]
struct ToolCalls {
    calls: usize,
    arguments: HashMap<String, ArgumentValues>,
}

/// The values one argument takes over the calls of one tool.
#[derive(Debug, Clone)]
struct ArgumentValues {
    first: serde_json::Value,
    /// Calls that give it.
    given: usize,
    /// Some call gives another value than the first.
    varies: bool,
}

impl SiblingCalls {
    /// Gathers one more child's call (its `node_added` body).
    pub fn add(&mut self, child: &EventBody) {
        let EventBody::NodeAdded {
            action: Some(Action::ToolCall { tool, arguments }),
            ..
        } = child
        else {
            return;
        };
        let of_tool = self.tools.entry(tool.clone()).or_default();
        of_tool.calls += 1;
        for (key, value) in arguments.as_object().into_iter().flatten() {
            match of_tool.arguments.get_mut(key) {
                Some(seen) => {
                    seen.given += 1;
                    seen.varies |= seen.first != *value;
                }
                None => {
                    of_tool.arguments.insert(
                        key.clone(),
                        ArgumentValues {
                            first: value.clone(),
                            given: 1,
                            varies: false,
                        },
                    );
                }
            }
        }
    }

    /// For a child's call when a sibling calls the same tool: `tool(…v, …)` with only the
    /// values of the arguments that differ from some sibling's (another value, or none), so
    /// narrow rows still tell siblings apart. `None` when no sibling calls that tool or every
    /// argument differs anyway. `node` must be one of the children gathered.
    pub fn distinguishing_label(&self, node: &EventBody) -> Option<String> {
        let EventBody::NodeAdded {
            action: Some(Action::ToolCall { tool, arguments }),
            ..
        } = node
        else {
            return None;
        };
        let of_tool = self.tools.get(tool).filter(|t| t.calls > 1)?;
        // The node gives `key`, so another value among the calls, or a call without it, is
        // a sibling's.
        label_of_differing(tool, arguments.as_object()?, |key, _| {
            of_tool
                .arguments
                .get(key)
                .is_none_or(|v| v.varies || v.given < of_tool.calls)
        })
    }
}

/// `tool(…v, …)` with the values of the arguments `differs` picks; `None` when it picks none
/// of them or all.
fn label_of_differing(
    tool: &str,
    arguments: &serde_json::Map<String, serde_json::Value>,
    differs: impl Fn(&str, &serde_json::Value) -> bool,
) -> Option<String> {
    let differing: Vec<String> = arguments
        .iter()
        .filter(|(key, value)| differs(key, value))
        .map(|(_, v)| match v {
            serde_json::Value::String(s) => cut(s, 24),
            other => cut(&other.to_string(), 24),
        })
        .collect();
    if differing.is_empty() || differing.len() == arguments.len() {
        return None;
    }
    let short_tool = tool.rsplit_once(':').map_or(tool, |(_, t)| t);
    Some(format!("{short_tool}(…{})", differing.join(", ")))
}

/// A short `tool(k=v, …)` label.
pub fn call_label(tool: &str, arguments: &serde_json::Value) -> String {
    args_label(tool, arguments, true)
}

fn args_label(tool: &str, arguments: &serde_json::Value, keys: bool) -> String {
    let args = match arguments.as_object() {
        Some(map) => map
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if keys {
                    format!("{k}={}", cut(&v, 24))
                } else {
                    cut(&v, 24)
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
        None => cut(&arguments.to_string(), 40),
    };
    format!("{tool}({args})")
}

/// [`summary`] of an event from its brief alone, for the kinds whose brief holds all the
/// summary shows (so a view over many events reads fewer of them back from the file).
pub fn brief_summary(brief: &Brief, latencies: Latencies) -> Option<String> {
    match &brief.body {
        LeanBody::Phase(phase) => Some(phase.as_str().to_string()),
        LeanBody::Backpropagated { path, value } => Some(backpropagated(*value, path)),
        LeanBody::Full(event) => Some(summary(event, latencies)),
        _ => None,
    }
}

/// `+0.50 along #0→#3→#7`.
fn backpropagated(value: f64, path: &[NodeId]) -> String {
    let path: Vec<String> = path.iter().map(|n| format!("#{n}")).collect();
    format!("{value:+.2} along {}", path.join("→"))
}

/// What a search's iterations did and why it stopped, from its `search_finished`.
pub fn search_accounting(body: &EventBody) -> Option<String> {
    let EventBody::SearchFinished {
        iterations,
        expanded,
        revisited,
        widened,
        retried,
        fruitless,
        stopped,
        detail,
        ..
    } = body
    else {
        return None;
    };
    let mut s = format!("{iterations} iterations: {expanded} expanded, {revisited} revisited");
    for (n, what) in [
        (widened, "widened"),
        (retried, "retried"),
        (fruitless, "fruitless"),
    ] {
        if *n > 0 {
            s.push_str(&format!(", {n} {what}"));
        }
    }
    s.push_str(&format!(" · stopped: {}", stopped.as_str()));
    if let Some(d) = detail {
        s.push_str(&format!(" ({d})"));
    }
    Some(s)
}

/// A proxied exchange in one line: the server, what (and the `asked` field named `key`), how
/// long, and what came back.
fn exchange(what: &str, key: &str, x: &crate::event::Exchange, timed: Latencies) -> String {
    let named = x
        .asked
        .get(key)
        .and_then(|v| v.as_str())
        .map_or(String::new(), |v| format!(" {v}"));
    let outcome = match &x.error {
        Some(e) => format!("ERROR {e}"),
        None if x.result.is_error => format!("ERROR {}", x.result.text),
        None => x.result.text.clone(),
    };
    format!(
        "{} {what}{named} {} → {outcome}",
        x.server,
        timed.ms(x.latency_ms)
    )
}

/// A one-line description of an event.
/// `latencies`: whether the run's were measured ([`Latencies::of`] its header).
pub fn summary(event: &Event, latencies: Latencies) -> String {
    let timed = latencies;
    match &event.body {
        EventBody::Phase { phase } => phase.as_str().to_string(),
        EventBody::LlmCall {
            role,
            model,
            prompt_tokens,
            completion_tokens,
            latency_ms,
            error,
            tokens_estimated,
            ..
        } => {
            // An imported turn whose source counted no tokens or kept no time shows `—`.
            let tokens = if *prompt_tokens == 0 && *completion_tokens == 0 && !tokens_estimated {
                "— tok".to_string()
            } else {
                format!("{prompt_tokens}+{completion_tokens} tok")
            };
            let failed = error
                .as_ref()
                .map_or(String::new(), |e| format!(" ERROR {e}"));
            format!(
                "{} {model} {tokens} {}{failed}",
                role.as_str(),
                timed.ms(*latency_ms)
            )
        }
        EventBody::NodeAdded { node, parent, .. } => format!(
            "#{node} ← {} {}",
            parent.map_or("—".into(), |p| format!("#{p}")),
            node_label(&event.body)
        ),
        EventBody::PlannerDecided {
            step,
            given,
            decision,
        } => format!("after step {step}, given {given}: {decision}"),
        body @ (EventBody::NodeProbed { .. } | EventBody::ProbeCalled { .. }) => {
            probe_summary(body).unwrap_or_default()
        }
        body @ (EventBody::CallSimulated { .. } | EventBody::NodeSimulated { .. }) => {
            simulation_summary(body).unwrap_or_default()
        }
        EventBody::NodeEvaluated {
            node,
            verdict,
            reward,
            critic_reward,
            ..
        } => format!(
            "#{node} {verdict:?} reward {reward:.2}{}",
            critic_reward.map_or(String::new(), |c| format!(" (critic {c:.2})"))
        ),
        EventBody::Backpropagated { path, value } => backpropagated(*value, path),
        body @ EventBody::SearchFinished { .. } => search_accounting(body).unwrap_or_default(),
        EventBody::PlanSelected {
            nodes, rule, risky, ..
        } => {
            let path = |ns: &[NodeId], sep: &str| {
                ns.iter()
                    .map(|n| format!("#{n}"))
                    .collect::<Vec<_>>()
                    .join(sep)
            };
            let risky = if risky.is_empty() {
                String::new()
            } else {
                format!(" · risky: {} rest on unsure predictions", path(risky, ", "))
            };
            format!("{rule}: {}{risky}", path(nodes, "→"))
        }
        body @ EventBody::NodeGrounded { .. } => simulation_summary(body).unwrap_or_default(),
        EventBody::ToolCalled { .. } => RecordedCall::of(&event.body)
            .map_or_else(String::new, |call| call_summary(&call, timed)),
        EventBody::Answer { text } => text.clone(),
        EventBody::PromptGot(x) => exchange("prompt", "name", x, timed),
        EventBody::ResourceRead(x) => exchange("read", "uri", x, timed),
        EventBody::Sampled(x) => exchange("sampling asked", "", x, timed),
        EventBody::ServerLog(x) => format!(
            "{} log {}: {}",
            x.server,
            x.asked.get("level").and_then(|l| l.as_str()).unwrap_or("?"),
            x.result.text
        ),
        EventBody::Recheck { at, calls, skipped } => recheck_summary(at, calls, skipped),
        EventBody::Routed {
            node,
            answered_by,
            why,
            confidence,
            threshold,
        } => routed_summary(*node, *answered_by, why.as_deref(), *confidence, *threshold),
        EventBody::CallProgress {
            step,
            tool,
            progress,
            total,
            message,
        } => {
            let said = message
                .as_deref()
                .map_or(String::new(), |m| format!(": {m}"));
            // The bar first: a narrow pane keeps it.
            format!("{step}. {} {tool}{said}", progress_text(*progress, *total))
        }
        EventBody::Elicitation {
            step,
            tool,
            message,
            action,
            reason,
            ..
        } => format!("{step}. {tool} asked for input ({message}): {action}, {reason}"),
        EventBody::Annotation {
            node,
            event,
            text,
            who,
        } => {
            let on = match (node, event) {
                (Some(n), _) => format!("on #{n}"),
                (None, Some(seq)) => format!("on event {seq}"),
                (None, None) => "on the run".to_string(),
            };
            format!("note {on} by {who}: {text}")
        }
        EventBody::JudgeScored { model, judging, .. } => match judging.as_deref() {
            Some(j) if j.trials.len() > 1 => format!(
                "by {model}, mean of {} of {} trials",
                j.answered().count(),
                j.trials.len()
            ),
            _ => format!("by {model}"),
        },
        EventBody::SourceScored {
            scorer,
            value,
            passed,
            ..
        } => format!(
            "the source's {scorer} scored {}",
            source_verdict(value, *passed)
        ),
        EventBody::Error {
            source,
            name,
            message,
            ..
        } => {
            format!(
                "{source}{}: {message}",
                name.as_ref().map_or(String::new(), |n| format!(" {n}"))
            )
        }
        EventBody::DecisionRejected { detail, reply, .. } => {
            format!("planner reply rejected: {detail}: {reply}")
        }
        EventBody::RunFinished { status, error, .. } => {
            format!(
                "{}{}",
                status.as_str(),
                error.as_ref().map_or(String::new(), |e| format!(": {e}"))
            )
        }
        EventBody::Unknown { kind, .. } => format!("(unknown kind {kind})"),
    }
}

/// A probe in one line: a node asked again of a world model, or called for real.
fn probe_summary(body: &EventBody) -> Option<String> {
    Some(match body {
        EventBody::NodeProbed {
            node,
            world_model,
            observation,
            error,
            ..
        } => match (observation, error) {
            (Some(o), _) => format!(
                "#{node} probed with {world_model}{}: {}",
                if o.is_error { " (error)" } else { "" },
                o.text
            ),
            (None, e) => format!(
                "#{node} probed with {world_model}: failed: {}",
                e.as_deref().unwrap_or("")
            ),
        },
        EventBody::ProbeCalled {
            node,
            tool,
            arguments,
            result,
            error,
            ..
        } => format!(
            "#{node} called for real: {}{} {}",
            call_label(tool, arguments),
            if result.is_error || error.is_some() {
                " ✗"
            } else {
                ""
            },
            error.as_deref().unwrap_or(&result.text)
        ),
        _ => return None,
    })
}

/// A prediction in one line: a fork's call or a node answered by a world model, or a node's
/// prediction checked for real.
fn simulation_summary(body: &EventBody) -> Option<String> {
    Some(match body {
        EventBody::CallSimulated {
            step,
            tool,
            arguments,
            prediction:
                PredictionRecord {
                    world_model,
                    observation,
                    ..
                },
            ..
        } => format!(
            "step {step}{} by {world_model}{}: {}",
            match (tool, arguments) {
                (Some(tool), Some(arguments)) => format!(" {}", call_label(tool, arguments)),
                (Some(tool), None) => format!(" {tool}"),
                _ => String::new(),
            },
            if observation.is_error { " (error)" } else { "" },
            observation.text
        ),
        EventBody::NodeSimulated {
            node,
            prediction:
                PredictionRecord {
                    world_model,
                    observation,
                    ..
                },
            ..
        } => format!(
            "#{node} by {world_model}{}: {}",
            if observation.is_error { " (error)" } else { "" },
            observation.text
        ),
        EventBody::NodeGrounded {
            node,
            tool,
            observation,
            error,
            confidence,
            ..
        } => format!(
            "#{node} went real: {tool} (prediction's confidence {}) -> {}{}",
            confidence.map_or("none".to_string(), confidence_cut),
            if observation.is_error || error.is_some() {
                "[error] "
            } else {
                ""
            },
            crate::sanitize::one_line(&observation.text, 80)
        ),
        _ => return None,
    })
}

/// A real call in one line: its step, whether it is a copy, the call, how long it took, whether
/// it changed its server's state, and its outcome.
fn call_summary(call: &RecordedCall, timed: Latencies) -> String {
    let outcome = match call.error {
        Some(e) => format!("ERROR {e}"),
        None if call.result.is_error => format!("ERROR {}", call.result.text),
        None => call.result.text.clone(),
    };
    // A copy of a call recorded elsewhere (a fork's history, a wm-eval file) was not made by
    // this run: said first, so no reader takes it for a new real call.
    let replayed = if call.is_copy() { " (replayed)" } else { "" };
    // A call that changed its server's state is marked before its result.
    let changed = match call.state_change.map(|c| c.fields_changed) {
        Some(0) | None => String::new(),
        Some(n) => format!(" ✎ {n} field{}", if n == 1 { "" } else { "s" }),
    };
    // A copy's 0 is no measurement: a wm-eval file's copies keep no latency.
    let timed = if call.is_copy() && call.latency_ms == 0 {
        Latencies::Unrecorded
    } else {
        timed
    };
    format!(
        "{}.{replayed} {} {}{changed} → {outcome}",
        call.step,
        call_label(call.tool, call.arguments),
        timed.ms(call.latency_ms)
    )
}

/// The first `n` characters, with `…` when cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n).collect::<String>() + "…"
    }
}

/// A call's progress in a few columns: `▰▰▰▱▱ 3/5` with a total, `3 so far` without.
pub fn progress_text(progress: f64, total: Option<f64>) -> String {
    const CELLS: usize = 10;
    match total.filter(|t| *t > 0.0) {
        Some(total) => {
            let done = ((progress / total).clamp(0.0, 1.0) * CELLS as f64).round() as usize;
            format!(
                "{}{} {progress}/{total}",
                "▰".repeat(done),
                "▱".repeat(CELLS - done)
            )
        }
        None => format!("{progress} so far"),
    }
}

/// What a recheck found, in a line: `rechecked on 2026-12-02 16:30 UTC: 2 of 7 calls changed
/// (1 now fails), 3 skipped`.
pub fn recheck_summary(
    at: &chrono::DateTime<chrono::Utc>,
    calls: &[crate::event::RecheckedCall],
    skipped: &[u64],
) -> String {
    use crate::event::Drift;
    let count = |d: Drift| calls.iter().filter(|c| c.drift == d).count();
    // A call whose server is gone was not made again: it neither changed nor held.
    let gone = count(Drift::ServerGone);
    let made = calls.len() - gone;
    let differ = made - count(Drift::Same);
    let now_fail = count(Drift::NowFails);
    let detail = if now_fail > 0 {
        format!(" ({now_fail} now fail)")
    } else {
        String::new()
    };
    let gone = if gone > 0 {
        format!(", {gone} not made (server gone)")
    } else {
        String::new()
    };
    let left = if skipped.is_empty() {
        String::new()
    } else {
        format!(", {} skipped (not read-only)", skipped.len())
    };
    format!(
        "rechecked on {}: {differ} of {made} calls changed{detail}{gone}{left}",
        at.format("%Y-%m-%d %H:%M UTC"),
    )
}

/// A confidence as a line shows it: two decimals, cut, never rounded, so it never reads above
/// what it was (0.8963 is `0.89`, not `0.90` beside a `go_real_below` of 0.9 that it was under).
pub fn confidence_cut(c: f64) -> String {
    format!("{:.2}", (c * 100.0).floor() / 100.0)
}

/// Who answered a proxy client's call, and against what threshold.
fn routed_summary(
    node: NodeId,
    answered_by: AnsweredBy,
    why: Option<&str>,
    confidence: Option<f64>,
    threshold: Option<f64>,
) -> String {
    // Figures as written: a threshold rounded up would misstate what was trusted.
    let against = match (confidence, threshold) {
        (Some(c), Some(t)) => format!(" (confidence {c} {} {t})", if c >= t { "≥" } else { "<" }),
        (Some(c), None) => format!(" (confidence {c})"),
        (None, _) => String::new(),
    };
    match answered_by {
        AnsweredBy::WorldModel => format!("#{node} answered by the world model{against}"),
        AnsweredBy::Real => format!(
            "#{node} went real: {}{against}",
            why.unwrap_or("the real server answered")
        ),
    }
}

/// Whether a run's latencies were measured: an imported run's source may have kept none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latencies {
    /// Measured: a 0 is a call too fast for a whole millisecond.
    Measured,
    /// Not recorded by the run's source: every 0 means nothing.
    Unrecorded,
}

impl Latencies {
    /// As the run's header says.
    pub fn of(header: &Header) -> Self {
        if header.recorded(Source::LATENCIES) {
            Self::Measured
        } else {
            Self::Unrecorded
        }
    }

    /// A latency as shown: `— ms` where none was measured; `<1 ms` for a measured call too fast
    /// for a whole millisecond (recorded as 0), which is no missing value.
    fn ms(self, ms: u64) -> String {
        match (self, ms) {
            (Self::Unrecorded, _) => "— ms".to_string(),
            (Self::Measured, 0) => "<1 ms".to_string(),
            (Self::Measured, ms) => format!("{ms} ms"),
        }
    }
}

/// A source's score in a few words: its value as written, and what it says (`I: incorrect`).
pub fn source_verdict(value: &serde_json::Value, passed: Option<bool>) -> String {
    let value = match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match passed {
        Some(true) => format!("{value}: passed"),
        Some(false) => format!("{value}: failed"),
        None => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recheck_counts_a_call_whose_server_is_gone_as_not_made_never_as_changed() {
        use crate::event::{Drift, RecheckedCall};
        let call = |step, drift| RecheckedCall {
            step,
            tool: "t:x".into(),
            drift,
            fidelity: None,
            result: None,
            error: None,
        };
        let at = chrono::DateTime::UNIX_EPOCH;
        let calls = [
            call(1, Drift::Same),
            call(2, Drift::Changed),
            call(3, Drift::NowFails),
            call(4, Drift::ServerGone),
            call(5, Drift::ServerGone),
        ];
        assert_eq!(
            recheck_summary(&at, &calls, &[6]),
            "rechecked on 1970-01-01 00:00 UTC: 2 of 3 calls changed (1 now fail), \
             2 not made (server gone), 1 skipped (not read-only)"
        );
    }

    /// A sibling's label found by comparing it with every other sibling, one by one.
    fn label_by_comparing(node: usize, children: &[EventBody]) -> Option<String> {
        let EventBody::NodeAdded {
            action: Some(Action::ToolCall { tool, arguments }),
            ..
        } = &children[node]
        else {
            return None;
        };
        let others: Vec<&serde_json::Value> = (0..children.len())
            .filter(|&i| i != node)
            .filter_map(|i| match &children[i] {
                EventBody::NodeAdded {
                    action: Some(Action::ToolCall { tool: t, arguments }),
                    ..
                } if t == tool => Some(arguments),
                _ => None,
            })
            .collect();
        if others.is_empty() {
            return None;
        }
        label_of_differing(tool, arguments.as_object()?, |k, v| {
            others.iter().any(|o| o.get(k) != Some(v))
        })
    }

    proptest::proptest! {
        /// Gathered once, the calls label each sibling as comparing it with every other does.
        #[test]
        fn sibling_labels_gathered_once_are_those_found_by_comparing(
            calls in proptest::collection::vec(
                (0..3usize, proptest::collection::vec((0..3usize, 0..3u8), 0..4)),
                1..12,
            )
        ) {
            let children: Vec<EventBody> = calls
                .iter()
                .map(|(tool, arguments)| {
                    let arguments: serde_json::Map<String, serde_json::Value> = arguments
                        .iter()
                        .map(|(k, v)| (format!("k{k}"), serde_json::json!(format!("v{v}"))))
                        .collect();
                    added(
                        Some(0),
                        Some(Action::ToolCall {
                            tool: format!("srv:t{tool}"),
                            arguments: serde_json::Value::Object(arguments),
                        }),
                    )
                })
                .chain([added(Some(0), None)])
                .collect();
            let mut gathered = SiblingCalls::default();
            children.iter().for_each(|child| gathered.add(child));
            for (i, child) in children.iter().enumerate() {
                proptest::prop_assert_eq!(
                    gathered.distinguishing_label(child),
                    label_by_comparing(i, &children)
                );
            }
        }
    }

    fn added(parent: Option<u64>, action: Option<Action>) -> EventBody {
        EventBody::NodeAdded {
            node: 9,
            parent,
            depth: 1,
            action,
            prior: None,
        }
    }

    #[test]
    fn node_labels_tell_roots_revisions_and_actions_apart() {
        assert_eq!(node_label(&added(None, None)), "root");
        assert!(node_label(&added(Some(3), None)).contains("revision"));
        let finish = Action::Finish { answer: None };
        assert_eq!(node_label(&added(Some(3), Some(finish))), "finish");
        let call = Action::ToolCall {
            tool: "time:convert_time".into(),
            arguments: serde_json::json!({"time": "09:00", "target_timezone": "Asia/Tokyo"}),
        };
        assert_eq!(
            node_label(&added(Some(3), Some(call.clone()))),
            "time:convert_time(time=09:00, target_timezone=Asia/Tokyo)"
        );
        assert_eq!(
            compact_node_label(&added(Some(3), Some(call))),
            "time:convert_time(09:00, Asia/Tokyo)"
        );
        assert_eq!(compact_node_label(&added(None, None)), "root");
    }

    /// Every kind a brief can summarise is summarised as the whole event is, and the others
    /// say they cannot.
    #[test]
    fn a_brief_summary_is_the_summary_of_its_event() {
        use crate::synthetic::{self, Spec};
        let spec = Spec {
            nodes: 300,
            seed: 5,
            ..Spec::default()
        };
        let latencies = Latencies::of(&synthetic::header(&spec));
        let mut summarised = std::collections::BTreeSet::new();
        for (seq, body) in synthetic::events(&spec) {
            let event = Event { seq, t_ms: 0, body };
            if let Some(said) = brief_summary(&Brief::copied(&event), latencies) {
                assert_eq!(said, summary(&event, latencies), "{event:?}");
                summarised.insert(event.body.kind().to_string());
            }
        }
        for kind in ["phase", "backpropagated", "answer"] {
            assert!(
                summarised.contains(kind),
                "{kind} not seen in {summarised:?}"
            );
        }
        let added = Event {
            seq: 1,
            t_ms: 0,
            body: added(None, None),
        };
        assert_eq!(brief_summary(&Brief::copied(&added), latencies), None);
    }

    /// A measured call under a millisecond is recorded as 0 and shown as `<1 ms`; a run whose
    /// source kept no latencies, or a copy recorded with none, shows `— ms`.
    #[test]
    fn a_call_too_fast_for_a_millisecond_is_no_missing_latency() {
        use crate::event::Observation;
        let call = |latency_ms| Event {
            seq: 1,
            t_ms: 0,
            body: EventBody::ToolCalled {
                step: 1,
                tool: "s:t".into(),
                server: Some("s".into()),
                arguments: Box::new(serde_json::json!({})),
                result: Observation {
                    text: "ok".into(),
                    ..Default::default()
                },
                latency_ms,
                node: None,
                error: None,
                origin: None,
                state_change: None,
            },
        };
        let own = crate::synthetic::header(&crate::synthetic::Spec::default());
        let mut imported = own.clone();
        imported.source = Some(Source {
            unrecorded: vec![Source::LATENCIES.to_string()],
            ..Default::default()
        });
        let (measured, unrecorded) = (Latencies::of(&own), Latencies::of(&imported));
        assert_eq!(
            (measured, unrecorded),
            (Latencies::Measured, Latencies::Unrecorded)
        );
        assert!(summary(&call(0), measured).contains("<1 ms"));
        assert!(summary(&call(7), measured).contains(" 7 ms"));
        assert!(summary(&call(0), unrecorded).contains("— ms"));
        // A copy (a wm-eval file's, which keeps no latency) with 0 measured nothing.
        let mut copy = call(0);
        if let EventBody::ToolCalled { origin, .. } = &mut copy.body {
            *origin = Some(Box::new(crate::event::Origin {
                run: "a.jsonl".into(),
                seq: 3,
            }));
        }
        assert!(summary(&copy, measured).contains("— ms"));
    }
}
