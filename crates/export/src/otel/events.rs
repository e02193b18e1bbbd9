//! One function per event kind: what each event of a run becomes in its trace.

use opentelemetry::Value as OtelValue;
use opentelemetry::trace::{Link, Status, TraceContextExt};
use serde_json::Value;

use cosmos_metrics::run::StepFacts;
use cosmos_trajectory::event::{Action, Event, EventBody, NodeId, RunStatus, VALIDATOR};
use cosmos_trajectory::recorded_call::RecordedCall;

use super::trace::{Trace, attr, name_of, redacted_text};

impl Trace {
    /// A `phase` event.
    pub(super) fn on_phase(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::Phase { phase } = &event.body else {
            return;
        };
        self.end_phase(t);
        let name = phase.as_str();
        let cx = self.span(
            name.to_string(),
            &self.root,
            t,
            vec![
                attr("cosmos.phase", name),
                attr("openinference.span.kind", "CHAIN"),
            ],
            Vec::new(),
        );
        self.phase = Some(cx);
    }

    /// An `llm_call` event.
    pub(super) fn on_llm_call(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::LlmCall {
            role,
            model,
            prompt_tokens,
            completion_tokens,
            tokens_estimated,
            latency_ms,
            error,
            messages,
        } = &event.body
        else {
            return;
        };
        let mut attrs = vec![
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.provider.name", self.provider_name.clone()),
            attr("gen_ai.request.model", model.clone()),
            attr("gen_ai.usage.input_tokens", count(*prompt_tokens)),
            attr("gen_ai.usage.output_tokens", count(*completion_tokens)),
            attr("cosmos.role", name_of(role)),
            attr("cosmos.tokens_estimated", *tokens_estimated),
            attr("openinference.span.kind", "LLM"),
            attr("llm.model_name", model.clone()),
            attr("llm.token_count.prompt", count(*prompt_tokens)),
            attr("llm.token_count.completion", count(*completion_tokens)),
            attr(
                "llm.token_count.total",
                count(prompt_tokens.saturating_add(*completion_tokens)),
            ),
        ];
        if let Some(e) = error {
            attrs.push(attr("error.type", "llm_error"));
            if self.content {
                attrs.push(attr("cosmos.error", redacted_text(&self.redactor, e)));
            }
        }
        if self.content
            && let Some(messages) = messages
        {
            attrs.push(attr("gen_ai.input.messages", self.content_json(messages)));
        }
        let cx = self.span(
            format!("chat {model}"),
            self.parent(),
            t.saturating_sub(*latency_ms),
            attrs,
            Vec::new(),
        );
        self.end(&cx, t, error.as_deref());
    }

    /// A `node_added` event.
    pub(super) fn on_node_added(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::NodeAdded {
            node,
            parent,
            depth,
            action,
            prior,
        } = &event.body
        else {
            return;
        };
        if parent.is_none() {
            // A new search: the last one's nodes are done with.
            self.close_nodes(t);
            self.nodes.clear();
            self.search_started = Some(t);
        }
        self.search_started.get_or_insert(t);
        let parent_cx = parent
            .and_then(|p| self.nodes.get(&p))
            .and_then(|n| n.span)
            .map(|id| self.under(id))
            .unwrap_or_else(|| self.parent().clone());
        let mut attrs = vec![
            attr("cosmos.node.id", *node as i64),
            attr("cosmos.node.depth", *depth as i64),
            attr("openinference.span.kind", "CHAIN"),
        ];
        if let Some(p) = parent {
            attrs.push(attr("cosmos.node.parent", *p as i64));
        }
        if let Some(p) = prior {
            attrs.push(attr("cosmos.node.prior", *p));
        }
        let tool = match action {
            Some(Action::ToolCall { tool, arguments }) => {
                attrs.push(attr("gen_ai.tool.name", tool.clone()));
                if self.content {
                    attrs.push(attr(
                        "gen_ai.tool.call.arguments",
                        self.content_json(arguments),
                    ));
                }
                Some(self.tool_index(tool))
            }
            Some(Action::Finish { .. }) => {
                attrs.push(attr("cosmos.node.action", "finish"));
                None
            }
            None => {
                attrs.push(attr("cosmos.node.action", "root"));
                None
            }
        };
        let cx = self.span(
            format!("search_node #{node}"),
            &parent_cx,
            t,
            attrs,
            Vec::new(),
        );
        let span = Some(cx.span().span_context().span_id());
        self.open_nodes.insert(*node, cx);
        let facts = self.nodes.entry(*node).or_default();
        facts.span = span;
        facts.tool = tool;
    }

    /// A `node_simulated` event.
    pub(super) fn on_node_simulated(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::NodeSimulated {
            node, prediction, ..
        } = &event.body
        else {
            return;
        };
        let (tool, parent) = match self.nodes.get(node) {
            Some(n) => (
                n.tool
                    .map_or("finish", |i| self.tools[i as usize].as_str())
                    .to_string(),
                self.open_nodes
                    .get(node)
                    .cloned()
                    .or_else(|| n.span.map(|id| self.under(id))),
            ),
            None => ("unknown".to_string(), None),
        };
        let parent = parent.unwrap_or_else(|| self.parent().clone());
        let mut attrs = self.simulation_attrs(&tool, prediction);
        attrs.push(attr("cosmos.node.id", *node as i64));
        let cx = self.closed_span(
            format!("execute_tool {tool}"),
            &parent,
            t.saturating_sub(prediction.latency_ms),
            t,
            attrs,
        );
        let id = cx.span().span_context().span_id();
        if prediction.world_model != VALIDATOR
            && let Some(n) = self.nodes.get_mut(node)
        {
            n.simulated = Some(Box::new((id, prediction.observation.clone())));
        }
    }

    /// A `call_simulated` event.
    pub(super) fn on_call_simulated(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::CallSimulated {
            step, prediction, ..
        } = &event.body
        else {
            return;
        };
        let attrs = {
            let mut a = self.simulation_attrs("", prediction);
            a.push(attr("cosmos.step", *step as i64));
            a
        };
        let cx = self.closed_span(
            "execute_tool (simulated)".to_string(),
            self.parent(),
            t.saturating_sub(prediction.latency_ms),
            t,
            attrs,
        );
        let observation = prediction.observation.clone();
        self.step_simulation = Some((*step, cx.span().span_context().clone(), observation));
    }

    /// A `node_evaluated` event.
    pub(super) fn on_node_evaluated(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::NodeEvaluated {
            node,
            verdict,
            base_reward,
            critic_reward,
            reward,
            terminal,
            ..
        } = &event.body
        else {
            return;
        };
        if let Some(cx) = self.open_nodes.remove(node) {
            let span = cx.span();
            span.set_attribute(attr("cosmos.node.verdict", name_of(verdict)));
            span.set_attribute(attr("cosmos.node.base_reward", *base_reward));
            span.set_attribute(attr("cosmos.node.reward", *reward));
            span.set_attribute(attr("cosmos.node.terminal", *terminal));
            if let Some(c) = critic_reward {
                span.set_attribute(attr("cosmos.node.critic_reward", *c));
            }
            span.end_with_timestamp(self.at(t));
        }
    }

    /// A `backpropagated` event.
    pub(super) fn on_backpropagated(&mut self, event: &Event) {
        let EventBody::Backpropagated { path, value } = &event.body else {
            return;
        };
        for id in path {
            let n = self.nodes.entry(*id).or_default();
            n.visits = n.visits.saturating_add(1);
            n.value += value;
        }
    }

    /// A `search_finished` event.
    pub(super) fn on_search_finished(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::SearchFinished {
            root,
            iterations,
            expanded,
            revisited,
            widened,
            retried,
            fruitless,
            stopped,
            ..
        } = &event.body
        else {
            return;
        };
        let start = self.search_started.unwrap_or(t);
        let cx = self.span(
            "search".to_string(),
            self.parent(),
            start,
            vec![
                attr("cosmos.search.root", *root as i64),
                attr("cosmos.search.iterations", *iterations as i64),
                attr("cosmos.search.expanded", *expanded as i64),
                attr("cosmos.search.revisited", *revisited as i64),
                attr("cosmos.search.widened", *widened as i64),
                attr("cosmos.search.retried", *retried as i64),
                attr("cosmos.search.fruitless", *fruitless as i64),
                attr("cosmos.search.stopped", stopped.as_str()),
                attr("openinference.span.kind", "CHAIN"),
            ],
            Vec::new(),
        );
        let mut ids: Vec<&NodeId> = self.nodes.keys().collect();
        ids.sort();
        for id in ids {
            let n = &self.nodes[id];
            let mean = if n.visits > 0 {
                n.value / n.visits as f64
            } else {
                0.0
            };
            cx.span().add_event_with_timestamp(
                "cosmos.node",
                self.at(t),
                vec![
                    attr("cosmos.node.id", *id as i64),
                    attr("cosmos.node.visits", n.visits as i64),
                    attr("cosmos.node.value", mean),
                ],
            );
        }
        self.end(&cx, t, None);
        self.close_nodes(t);
    }

    /// A `plan_selected` event.
    pub(super) fn on_plan_selected(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::PlanSelected { nodes, rule, .. } = &event.body else {
            return;
        };
        let ids: Vec<i64> = nodes.iter().map(|n| *n as i64).collect();
        self.parent().span().add_event_with_timestamp(
            "cosmos.plan_selected",
            self.at(t),
            vec![
                attr("cosmos.plan.nodes", OtelValue::Array(ids.into())),
                attr("cosmos.plan.rule", rule.clone()),
            ],
        );
    }

    /// A `tool_called` event.
    pub(super) fn on_tool_called(&mut self, event: &Event) {
        let t = event.t_ms;
        // The call as the metrics read it (the one reading of a `tool_called`).
        let Some(call) = RecordedCall::of(&event.body) else {
            return;
        };
        let RecordedCall {
            step,
            tool,
            server,
            arguments,
            result,
            latency_ms,
            node,
            error,
            ..
        } = call;
        let simulated = match node {
            Some(n) => self
                .nodes
                .get(&n)
                .and_then(|n| n.simulated.as_deref())
                .map(|(id, o)| (self.span_context(*id), o.clone())),
            None => self
                .step_simulation
                .as_ref()
                .filter(|(s, ..)| *s == step)
                .map(|(_, sc, o)| (sc.clone(), o.clone())),
        };
        let facts = StepFacts::new(
            &self.catalog,
            call,
            // The span reports the call's fidelity; its confidence is the simulation span's.
            simulated.as_ref().map(|(_, o)| (o, None)),
        );
        let mut attrs = self.real_call_attrs(tool, arguments, result, error.is_some());
        attrs.extend([
            attr("gen_ai.tool.call.id", format!("step-{step}")),
            attr("cosmos.step", step as i64),
        ]);
        if let Some(s) = server {
            attrs.push(attr("cosmos.server", s.to_string()));
        }
        if let Some(n) = node {
            attrs.push(attr("cosmos.node.id", n as i64));
        }
        if let Some(f) = &facts.fidelity {
            attrs.push(attr("cosmos.fidelity", f.score));
        }
        if let Some((sc, _)) = &simulated {
            // The link says it too; not every receiver's API shows links.
            attrs.push(attr("cosmos.simulation.span_id", sc.span_id().to_string()));
        }
        let links = simulated
            .map(|(sc, _)| vec![Link::new(sc, vec![attr("cosmos.link", "simulation")], 0)])
            .unwrap_or_default();
        let cx = self.span(
            format!("execute_tool {tool}"),
            self.parent(),
            t.saturating_sub(latency_ms),
            attrs,
            links,
        );
        let failed = match error {
            Some(e) => Some(e),
            None => result.is_error.then_some("the tool returned an error"),
        };
        self.end(&cx, t, failed);
    }

    /// A `node_probed` event.
    pub(super) fn on_node_probed(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::NodeProbed {
            node,
            world_model,
            observation,
            error,
            latency_ms,
            tokens,
        } = &event.body
        else {
            return;
        };
        let mut attrs = vec![
            attr("cosmos.probe", true),
            attr("cosmos.simulated", true),
            attr("cosmos.world_model", world_model.clone()),
            attr("cosmos.node.id", *node as i64),
            attr("openinference.span.kind", "TOOL"),
        ];
        if let Some(tokens) = tokens {
            attrs.push(attr("cosmos.world_model.tokens", *tokens as i64));
        }
        if error.is_some() {
            attrs.push(attr("error.type", "world_model_failed"));
        }
        if self.content
            && let Some(o) = observation
        {
            attrs.push(attr("gen_ai.tool.call.result", self.observation_json(o)));
        }
        self.closed_span(
            format!("probe #{node}"),
            &self.root,
            t.saturating_sub(*latency_ms),
            t,
            attrs,
        );
    }

    /// A `probe_called` event.
    pub(super) fn on_probe_called(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::ProbeCalled {
            node,
            tool,
            arguments,
            result,
            latency_ms,
            error,
            ..
        } = &event.body
        else {
            return;
        };
        let mut attrs = self.real_call_attrs(tool, arguments, result, error.is_some());
        attrs.extend([
            attr("cosmos.probe", true),
            attr("cosmos.node.id", *node as i64),
        ]);
        self.closed_span(
            format!("execute_tool {tool}"),
            &self.root,
            t.saturating_sub(*latency_ms),
            t,
            attrs,
        );
    }

    /// An `annotation` event.
    pub(super) fn on_annotation(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::Annotation {
            node,
            event,
            text,
            who,
        } = &event.body
        else {
            return;
        };
        let mut attrs = vec![
            attr(
                "cosmos.annotation.text",
                redacted_text(&self.redactor, text),
            ),
            attr("cosmos.annotation.who", who.clone()),
        ];
        if let Some(n) = node {
            attrs.push(attr("cosmos.node.id", *n as i64));
        }
        if let Some(seq) = event {
            attrs.push(attr("cosmos.annotation.event", *seq as i64));
        }
        self.root
            .span()
            .add_event_with_timestamp("cosmos.annotation", self.at(t), attrs);
    }

    /// A `source_scored` event: the source's verdict, a span event on the run (never merged
    /// with cosmos's own judge).
    pub(super) fn on_source_scored(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::SourceScored {
            scorer,
            value,
            passed,
            ..
        } = &event.body
        else {
            return;
        };
        let value = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let mut attrs = vec![
            attr("cosmos.source_score.scorer", scorer.clone()),
            attr("cosmos.source_score.value", value),
        ];
        if let Some(passed) = passed {
            attrs.push(attr("cosmos.source_score.passed", *passed));
        }
        self.root
            .span()
            .add_event_with_timestamp("cosmos.source_score", self.at(t), attrs);
    }

    /// An `error` event.
    pub(super) fn on_error(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::Error {
            source,
            name,
            message,
            ..
        } = &event.body
        else {
            return;
        };
        let mut attrs = vec![
            attr("exception.type", source.to_string()),
            attr("exception.message", redacted_text(&self.redactor, message)),
        ];
        if let Some(n) = name {
            attrs.push(attr("cosmos.error.name", n.clone()));
        }
        self.parent()
            .span()
            .add_event_with_timestamp("exception", self.at(t), attrs);
    }

    /// A `decision_rejected` event.
    pub(super) fn on_decision_rejected(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::DecisionRejected {
            problem, detail, ..
        } = &event.body
        else {
            return;
        };
        self.parent().span().add_event_with_timestamp(
            "cosmos.decision_rejected",
            self.at(t),
            vec![
                attr("cosmos.decision.problem", name_of(problem)),
                attr(
                    "cosmos.decision.detail",
                    redacted_text(&self.redactor, detail),
                ),
            ],
        );
    }

    /// An `answer` event.
    pub(super) fn on_answer(&mut self, event: &Event) {
        let EventBody::Answer { text } = &event.body else {
            return;
        };
        if self.content {
            self.root
                .span()
                .set_attribute(attr("cosmos.answer", redacted_text(&self.redactor, text)));
        }
    }

    /// A `judge_scored` event.
    pub(super) fn on_judge_scored(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::JudgeScored { model, scores, .. } = &event.body else {
            return;
        };
        let value = serde_json::to_value(scores).unwrap_or(Value::Null);
        self.root.span().add_event_with_timestamp(
            "cosmos.judge_scored",
            self.at(t),
            vec![
                attr("cosmos.judge.model", model.clone()),
                attr("cosmos.judge.scores", value.to_string()),
            ],
        );
    }

    /// A `run_finished` event.
    pub(super) fn on_run_finished(&mut self, event: &Event) {
        let t = event.t_ms;
        let EventBody::RunFinished {
            status,
            error,
            ending,
            totals,
            ..
        } = &event.body
        else {
            return;
        };
        self.end_phase(t);
        self.close_nodes(t);
        let span = self.root.span();
        span.set_attribute(attr("cosmos.run.status", status.as_str()));
        if let Some(e) = ending {
            span.set_attribute(attr("cosmos.run.ending", name_of(e)));
        }
        span.set_attribute(attr("cosmos.run.tool_calls", totals.tool_calls as i64));
        span.set_attribute(attr("cosmos.run.tool_errors", totals.tool_errors as i64));
        if *status != RunStatus::Completed {
            let why = error.clone().unwrap_or_else(|| status.as_str().to_string());
            span.set_status(Status::error(redacted_text(&self.redactor, &why)));
        }
    }
}

/// A token count as OTLP's signed integer: at most `i64::MAX` (a larger count would turn
/// negative).
fn count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}
