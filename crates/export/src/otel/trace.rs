//! The one mapping from events to spans ([`Trace`]): its state, the helpers every span is
//! made with, and the dispatch of each event to its kind's function (`events.rs`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result};
use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider,
};
use opentelemetry::{Context, KeyValue, Value as OtelValue};
use opentelemetry_sdk::trace::SdkTracer;
use serde_json::Value;

use cosmos_trajectory::catalog::ToolCatalog;
use cosmos_trajectory::event::{
    Event, EventBody, Header, NodeId, Observation, PredictionRecord, VALIDATOR,
};
use cosmos_trajectory::reader::EventStream;
use cosmos_trajectory::redact::Redactor;

use super::sending::provider;
use super::target::{Delivery, Target};

/// What is kept of a node of the search in progress: small, as a search holds up to 10^5.
#[derive(Debug, Default)]
pub(super) struct NodeFacts {
    /// Its span, for children (in the run's one trace).
    pub(super) span: Option<SpanId>,
    /// The tool it calls (an index into `Trace::tools`), `None` for a finish or a root.
    pub(super) tool: Option<u32>,
    /// Its simulation's span and observation, for the real twin's link and fidelity.
    pub(super) simulated: Option<Box<(SpanId, Observation)>>,
    /// Visits and value summed by backpropagation.
    pub(super) visits: u32,
    pub(super) value: f64,
}

/// The one mapping from a run's events to spans.
pub struct Trace {
    pub(super) tracer: SdkTracer,
    pub(super) started: SystemTime,
    pub(super) content: bool,
    pub(super) redactor: Redactor,
    pub(super) catalog: ToolCatalog,
    pub(super) provider_name: String,
    pub(super) root: Context,
    pub(super) phase: Option<Context>,
    /// Nodes of the search in progress (cleared when the next search starts).
    pub(super) nodes: HashMap<NodeId, NodeFacts>,
    /// Node spans not yet ended (a node's span ends at its evaluation).
    pub(super) open_nodes: HashMap<NodeId, Context>,
    /// Tool names, each once.
    pub(super) tools: Vec<String>,
    pub(super) trace_id: TraceId,
    /// When the search in progress added its first node.
    pub(super) search_started: Option<u64>,
    /// ReAct's latest simulation per step, for the real call's link and fidelity.
    pub(super) step_simulation: Option<(u64, SpanContext, Observation)>,
    pub(super) last_ms: u64,
}

pub(super) fn attr(key: &'static str, value: impl Into<OtelValue>) -> KeyValue {
    KeyValue::new(key, value)
}

/// An enum's name as the trajectory writes it.
pub(super) fn name_of<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

impl Trace {
    /// Starts the run's trace (its `invoke_agent` span) from its header.
    pub fn new(header: &Header, tracer: SdkTracer, content: bool, redactor: Redactor) -> Self {
        // A run whose source gave no start time starts at the epoch: its spans keep their order and
        // lengths, and `cosmos.times_unrecorded` says the dates mean nothing.
        let started = header
            .started_at
            .map_or(SystemTime::UNIX_EPOCH, SystemTime::from);
        let agent = header.agent.kind.as_str();
        let mut attrs = vec![
            attr("gen_ai.operation.name", "invoke_agent"),
            attr("gen_ai.agent.name", agent.to_string()),
            attr("gen_ai.agent.id", header.run_id.clone()),
            attr("gen_ai.request.model", header.planner.model.clone()),
            attr("openinference.span.kind", "AGENT"),
            attr("cosmos.run.id", header.run_id.clone()),
            attr(
                "cosmos.times_unrecorded",
                !header.recorded(cosmos_trajectory::event::Source::TIMES),
            ),
            attr("cosmos.task.id", header.task.id.clone()),
            attr("cosmos.agent.kind", agent.to_string()),
            attr(
                "cosmos.world_model",
                header
                    .world_model
                    .as_ref()
                    .map_or_else(|| "none".to_string(), |w| w.name.clone()),
            ),
            attr(
                "cosmos.servers",
                header
                    .servers
                    .iter()
                    .map(|s| s.name.clone())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        for (key, value) in &header.agent.settings {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            attrs.push(KeyValue::new(format!("cosmos.agent.settings.{key}"), text));
        }
        if content {
            attrs.push(attr(
                "cosmos.task.request",
                redacted_text(&redactor, &header.task.request),
            ));
        }
        let provider_name = provider_name(header.planner.base_url.as_deref());
        let span = tracer
            .span_builder(format!("invoke_agent {agent}"))
            .with_kind(SpanKind::Internal)
            .with_start_time(started)
            .with_attributes(attrs)
            .start_with_context(&tracer, &Context::new());
        let root = Context::new().with_span(span);
        let trace_id = root.span().span_context().trace_id();
        Self {
            tracer,
            started,
            content,
            redactor,
            catalog: ToolCatalog::new(&header.tools),
            provider_name,
            root,
            phase: None,
            nodes: HashMap::new(),
            open_nodes: HashMap::new(),
            tools: Vec::new(),
            trace_id,
            search_started: None,
            step_simulation: None,
            last_ms: 0,
        }
    }

    /// The span `span_id` of this trace, for a parent or a link (ended or not).
    pub(super) fn span_context(&self, span_id: SpanId) -> SpanContext {
        SpanContext::new(
            self.trace_id,
            span_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        )
    }

    /// A context whose parent is the span `span_id` of this trace.
    pub(super) fn under(&self, span_id: SpanId) -> Context {
        Context::new().with_remote_span_context(self.span_context(span_id))
    }

    pub(super) fn tool_index(&mut self, tool: &str) -> u32 {
        match self.tools.iter().rposition(|t| t == tool) {
            Some(i) => i as u32,
            None => {
                self.tools.push(tool.to_string());
                (self.tools.len() - 1) as u32
            }
        }
    }

    pub(super) fn at(&self, t_ms: u64) -> SystemTime {
        self.started + Duration::from_millis(t_ms)
    }

    /// The context new spans go under: the phase, else the run.
    pub(super) fn parent(&self) -> &Context {
        self.phase.as_ref().unwrap_or(&self.root)
    }

    /// Starts and (with `end`) ends a span under `parent`.
    pub(super) fn span(
        &self,
        name: String,
        parent: &Context,
        start_ms: u64,
        attrs: Vec<KeyValue>,
        links: Vec<Link>,
    ) -> Context {
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Internal)
            .with_start_time(self.at(start_ms))
            .with_attributes(attrs)
            .with_links(links)
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// A span already over: from `start_ms` to `end_ms`, under `parent`, without links; its
    /// context, for its id.
    pub(super) fn closed_span(
        &self,
        name: String,
        parent: &Context,
        start_ms: u64,
        end_ms: u64,
        attrs: Vec<KeyValue>,
    ) -> Context {
        let cx = self.span(name, parent, start_ms, attrs, Vec::new());
        self.end(&cx, end_ms, None);
        cx
    }

    /// Ends the span of `cx` at `t_ms`, failed (its status an error, the reason redacted)
    /// when `failed` says why.
    pub(super) fn end(&self, cx: &Context, t_ms: u64, failed: Option<&str>) {
        let span = cx.span();
        if let Some(why) = failed {
            span.set_status(Status::error(redacted_text(&self.redactor, why)));
        }
        span.end_with_timestamp(self.at(t_ms));
    }

    pub(super) fn content_json(&self, value: &Value) -> String {
        let mut value = value.clone();
        self.redactor.redact(&mut value);
        value.to_string()
    }

    pub(super) fn observation_json(&self, observation: &Observation) -> String {
        self.content_json(&serde_json::to_value(observation).unwrap_or(Value::Null))
    }

    /// Turns one event into spans, span events or attributes.
    pub fn event(&mut self, event: &Event) {
        self.last_ms = self.last_ms.max(event.t_ms);
        match &event.body {
            EventBody::Phase { .. } => self.on_phase(event),
            EventBody::LlmCall { .. } => self.on_llm_call(event),
            EventBody::NodeAdded { .. } => self.on_node_added(event),
            EventBody::NodeSimulated { .. } => self.on_node_simulated(event),
            EventBody::CallSimulated { .. } => self.on_call_simulated(event),
            EventBody::NodeEvaluated { .. } => self.on_node_evaluated(event),
            EventBody::Backpropagated { .. } => self.on_backpropagated(event),
            EventBody::SearchFinished { .. } => self.on_search_finished(event),
            EventBody::PlanSelected { .. } => self.on_plan_selected(event),
            EventBody::ToolCalled { .. } => self.on_tool_called(event),
            EventBody::NodeProbed { .. } => self.on_node_probed(event),
            EventBody::ProbeCalled { .. } => self.on_probe_called(event),
            EventBody::Annotation { .. } => self.on_annotation(event),
            EventBody::Error { .. } => self.on_error(event),
            EventBody::DecisionRejected { .. } => self.on_decision_rejected(event),
            EventBody::Answer { .. } => self.on_answer(event),
            EventBody::JudgeScored { .. } => self.on_judge_scored(event),
            EventBody::SourceScored { .. } => self.on_source_scored(event),
            EventBody::RunFinished { .. } => self.on_run_finished(event),
            // A recheck is about today's servers; progress is the call's span's own time; a
            // request for input is part of the call (its record is the trajectory's).
            // A grounded call is planning's: its span would need a node's place (not yet).
            // A proxy's prompt gets, resource reads, samplings and log messages are not yet
            // exported (the trajectory holds them); nor is who answered a proxy's call (its
            // spans say simulated or real already).
            EventBody::PlannerDecided { .. }
            | EventBody::Routed { .. }
            | EventBody::PromptGot(_)
            | EventBody::ResourceRead(_)
            | EventBody::Sampled(_)
            | EventBody::ServerLog(_)
            | EventBody::NodeGrounded { .. }
            | EventBody::Recheck { .. }
            | EventBody::CallProgress { .. }
            | EventBody::Elicitation { .. }
            | EventBody::Unknown { .. } => {}
        }
    }

    /// What every span of a real call carries: the GenAI and MCP names, the error's type,
    /// and with `--content` the arguments and the result.
    pub(super) fn real_call_attrs(
        &self,
        tool: &str,
        arguments: &Value,
        result: &Observation,
        failed: bool,
    ) -> Vec<KeyValue> {
        let mut attrs = vec![
            attr("gen_ai.operation.name", "execute_tool"),
            attr("gen_ai.tool.name", tool.to_string()),
            attr("gen_ai.tool.type", "function"),
            attr("mcp.method.name", "tools/call"),
            attr("openinference.span.kind", "TOOL"),
            attr("tool.name", tool.to_string()),
            attr("cosmos.simulated", false),
        ];
        if result.is_error {
            attrs.push(attr("error.type", "tool_error"));
        } else if failed {
            attrs.push(attr("error.type", "call_failed"));
        }
        if self.content {
            attrs.push(attr(
                "gen_ai.tool.call.arguments",
                self.content_json(arguments),
            ));
            attrs.push(attr(
                "gen_ai.tool.call.result",
                self.observation_json(result),
            ));
        }
        attrs
    }

    pub(super) fn simulation_attrs(
        &self,
        tool: &str,
        prediction: &PredictionRecord,
    ) -> Vec<KeyValue> {
        let PredictionRecord {
            world_model,
            observation,
            tokens,
            ..
        } = prediction;
        let mut attrs = vec![
            attr("gen_ai.operation.name", "execute_tool"),
            attr("mcp.method.name", "tools/call"),
            attr("openinference.span.kind", "TOOL"),
            attr("cosmos.simulated", true),
            attr("cosmos.world_model", world_model.to_string()),
            attr("cosmos.simulated.is_error", observation.is_error),
        ];
        if !tool.is_empty() {
            attrs.push(attr("gen_ai.tool.name", tool.to_string()));
            attrs.push(attr("tool.name", tool.to_string()));
        }
        if world_model == VALIDATOR {
            attrs.push(attr("cosmos.simulated.by_validator", true));
        }
        if let Some(tokens) = *tokens {
            attrs.push(attr("cosmos.world_model.tokens", tokens as i64));
        }
        if self.content {
            attrs.push(attr(
                "gen_ai.tool.call.result",
                self.observation_json(observation),
            ));
        }
        attrs
    }

    pub(super) fn end_phase(&mut self, t: u64) {
        if let Some(cx) = self.phase.take() {
            cx.span().end_with_timestamp(self.at(t));
        }
    }

    /// Ends node spans never evaluated (a search cut short).
    pub(super) fn close_nodes(&mut self, t: u64) {
        let at = self.at(t);
        for (_, cx) in self.open_nodes.drain() {
            cx.span().end_with_timestamp(at);
        }
    }

    /// Ends every span still open (the run's at its last event).
    pub fn finish(mut self) {
        let t = self.last_ms;
        self.end_phase(t);
        self.close_nodes(t);
        self.root.span().end_with_timestamp(self.at(t));
    }
}

/// `gen_ai.provider.name` from an endpoint: the well-known hosts by name, else the
/// protocol every endpoint here speaks (`openai`, as the conventions name OpenAI-compatible).
pub(super) fn provider_name(base_url: Option<&str>) -> String {
    let host = base_url
        .and_then(|u| reqwest::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    match host.as_str() {
        h if h.ends_with("anthropic.com") => "anthropic",
        h if h.ends_with("googleapis.com") => "gcp.gemini",
        h if h.ends_with("mistral.ai") => "mistral_ai",
        h if h.ends_with("groq.com") => "groq",
        h if h.ends_with("deepseek.com") => "deepseek",
        _ => "openai",
    }
    .to_string()
}

pub(super) fn redacted_text(redactor: &Redactor, text: &str) -> String {
    redactor
        .redact_str(text)
        .unwrap_or_else(|| text.to_string())
}

/// Feeds every event of `stream` to one trace of `provider` and flushes its spans: the one
/// loop behind sending (`export_file`) and writing (`file::write_run`) a run.
pub(super) fn feed(
    stream: &mut EventStream,
    provider: &opentelemetry_sdk::trace::SdkTracerProvider,
    content: bool,
    redactor: &Redactor,
) -> Result<()> {
    let tracer = provider.tracer("mcp-cosmos");
    let mut trace = Trace::new(stream.header(), tracer, content, redactor.clone());
    while let Some(event) = stream.next_event()? {
        trace.event(&event);
    }
    trace.finish();
    provider
        .force_flush()
        .map_err(|e| anyhow::anyhow!("flushing spans: {e}"))
}

/// Exports one run file as one trace; problems reading it (torn or corrupt lines) are skipped
/// and returned in words.
pub fn export_file(
    path: &Path,
    target: &Target,
    redactor: &Redactor,
) -> Result<(Delivery, Vec<String>)> {
    let mut stream =
        EventStream::open(path).with_context(|| format!("opening {}", path.display()))?;
    let delivery = Arc::new(Mutex::new(Delivery::default()));
    let provider = provider(target, delivery.clone())?;
    feed(&mut stream, &provider, target.content, redactor)?;
    let _ = provider.shutdown();
    let problems = stream.problems().iter().map(|p| p.to_string()).collect();
    let delivery = std::mem::take(&mut *delivery.lock().expect("delivery lock"));
    Ok((delivery, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_provider_is_named_by_its_host_else_openai() {
        assert_eq!(
            provider_name(Some("https://api.anthropic.com/v1")),
            "anthropic"
        );
        assert_eq!(
            provider_name(Some("https://api.groq.com/openai/v1")),
            "groq"
        );
        assert_eq!(provider_name(Some("http://127.0.0.1:8080/v1")), "openai");
        assert_eq!(provider_name(None), "openai");
    }
}
