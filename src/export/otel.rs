//! OpenTelemetry export: a run as one trace, over OTLP/HTTP, in the GenAI semantic conventions
//! (`invoke_agent`, `chat`, `execute_tool`) with MCP attributes, and what no convention has
//! yet: every simulated call as an `execute_tool` span marked `cosmos.simulated`, linked from
//! its real twin, and the search tree as spans. docs/export.md lists every span and attribute.
//!
//! [`Trace`] is the one mapping from events to spans; a file (`cosmos export otel`) and a live
//! run (`cosmos run --otel-endpoint`, [`Live`]) both feed it. Span times come from the
//! trajectory's clock (`started_at` + `t_ms`), so an old run keeps its real durations.
//! Prompts, arguments and results are sent only with `--content`, always redacted.
//! Memory: open spans (the run, its phase, nodes not yet evaluated) and, per node of the
//! search in progress, a few words (`NodeFacts`: span id, tool, visits, value) and its
//! simulation's observation until the search is over, for the real twin's fidelity.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result, bail};
use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider,
};
use opentelemetry::{Context, KeyValue, Value as OtelValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    SdkTracer, SdkTracerProvider, SpanData, SpanExporter, SpanProcessor,
};
use serde_json::Value;

use crate::metrics::run::{CallRecord, StepFacts};
use crate::trajectory::catalog::ToolCatalog;
use crate::trajectory::event::{
    Action, Event, EventBody, Header, NodeId, Observation, RunStatus, VALIDATOR,
};
use crate::trajectory::reader::EventStream;
use crate::trajectory::redact::Redactor;

/// Spans sent per OTLP request.
const BATCH: usize = 512;
/// How long one OTLP request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Events a live export holds while the exporter is behind; beyond it they are dropped and
/// counted, so the agent never waits for a collector.
const LIVE_QUEUE: usize = 4096;
/// A live export sends what has ended after this long without a new event.
const LIVE_FLUSH: Duration = Duration::from_millis(500);
/// ... and at least this often while events keep coming.
const LIVE_FLUSH_AT_LEAST: Duration = Duration::from_secs(2);
/// The longest a finished run waits for its last spans to be taken: a receiver that accepts
/// and never answers holds the exit no longer (the spans still on their way are counted lost).
pub const LIVE_FINISH: Duration = Duration::from_secs(2);

/// Where and how spans are sent.
#[derive(Clone)]
pub struct Target {
    /// The OTLP/HTTP traces URL (ends in `/v1/traces`).
    pub url: String,
    /// Extra HTTP headers (an API key for the receiver): `--header`, then the standard
    /// `OTEL_EXPORTER_OTLP_TRACES_HEADERS` or `OTEL_EXPORTER_OTLP_HEADERS` (which win, as the
    /// exporter applies them last), so every request, the first check's too, carries them.
    pub headers: Vec<(String, String)>,
    /// Send prompts, arguments and results (redacted).
    pub content: bool,
}

impl Target {
    /// A target from `--endpoint`: a base URL gets `/v1/traces` added (Phoenix
    /// `http://localhost:6006`, Langfuse `https://…/api/public/otel`); a URL that already
    /// ends in it is used as given. `headers` are `K=V`.
    pub fn new(endpoint: &str, headers: &[String], content: bool) -> Result<Self> {
        let parsed = reqwest::Url::parse(endpoint)
            .with_context(|| format!("--endpoint {endpoint:?} is not a URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            bail!("--endpoint {endpoint:?}: OTLP/HTTP needs an http or https URL");
        }
        let url = if parsed.path().trim_end_matches('/').ends_with("/v1/traces") {
            endpoint.to_string()
        } else {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        };
        let headers = headers
            .iter()
            .map(|h| match h.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
                _ => bail!("--header {h:?}: expected NAME=VALUE"),
            })
            .collect::<Result<_>>()?;
        let from_env = std::env::var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_HEADERS"))
            .ok();
        Ok(Self {
            url,
            headers: with_env_headers(headers, from_env.as_deref()),
            content,
        })
    }

    /// The URL with any credentials in it hidden, for messages.
    pub fn shown(&self) -> String {
        // The one way a URL is shown: userinfo and query values hidden.
        crate::trajectory::redact::url_shown(&self.url).0
    }
}

/// Without credentials or header values: a `{:?}` may reach a log.
impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.shown())
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("content", &self.content)
            .finish()
    }
}

/// `headers` with those of an `OTEL_EXPORTER_OTLP_*HEADERS` value (`k1=v1,k2=v2`, values
/// percent-encoded) put over them; a pair without `=` is skipped, as the exporter skips it.
fn with_env_headers(
    mut headers: Vec<(String, String)>,
    env: Option<&str>,
) -> Vec<(String, String)> {
    for pair in env.unwrap_or_default().split(',') {
        let Some((name, value)) = pair.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8_lossy()
            .into_owned();
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        headers.push((name.to_string(), value));
    }
    headers
}

/// What an export sent and what the receiver refused.
#[derive(Debug, Default)]
pub struct Delivery {
    /// Spans handed to the exporter.
    pub spans: u64,
    /// Spans in requests the receiver refused or that failed.
    pub failed: u64,
    /// The first failure, in words.
    pub first_error: Option<String>,
}

impl Delivery {
    /// What did not arrive at `shown` (the receiver, as messages name it), if anything.
    pub fn problem(&self, shown: &str) -> Option<String> {
        (self.failed > 0).then(|| {
            format!(
                "{} of {} span(s) did not reach {shown}: {}",
                self.failed,
                self.spans,
                self.first_error.as_deref().unwrap_or("unknown error")
            )
        })
    }
}

/// Sends ended spans in batches of [`BATCH`] from a thread of its own, one batch being sent
/// while the next is built: an export waits for the receiver (at most [`IN_FLIGHT`] batches
/// queued) instead of dropping spans. The live path puts its own bounded queue in front, so
/// the agent never waits.
#[derive(Debug)]
struct Batcher {
    pending: Mutex<Vec<SpanData>>,
    to_sender: SyncSender<Job>,
}

/// Batches queued for the sending thread beyond the one it is sending.
const IN_FLIGHT: usize = 2;

/// What the sending thread is asked to do.
enum Job {
    Batch(Vec<SpanData>),
    /// Answer once everything before has been sent.
    Flush(SyncSender<()>),
}

impl Batcher {
    fn start(exporter: opentelemetry_otlp::SpanExporter, delivery: Arc<Mutex<Delivery>>) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(IN_FLIGHT);
        std::thread::Builder::new()
            .name("otlp-send".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Batch(batch) => {
                            let n = batch.len() as u64;
                            let result = futures::executor::block_on(exporter.export(batch));
                            let mut d = delivery.lock().expect("delivery lock");
                            d.spans += n;
                            if let Err(e) = result {
                                d.failed += n;
                                d.first_error.get_or_insert_with(|| e.to_string());
                            }
                        }
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .expect("starting the OTLP sending thread");
        Self {
            pending: Mutex::new(Vec::with_capacity(BATCH)),
            to_sender: tx,
        }
    }

    fn send(&self, batch: Vec<SpanData>) {
        if !batch.is_empty() {
            let _ = self.to_sender.send(Job::Batch(batch));
        }
    }

    /// Sends what is pending and waits until every batch so far has been sent.
    fn flush(&self) {
        let batch = std::mem::take(&mut *self.pending.lock().expect("pending lock"));
        self.send(batch);
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        if self.to_sender.send(Job::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

impl SpanProcessor for Batcher {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        let full = {
            let mut pending = self.pending.lock().expect("pending lock");
            pending.push(span);
            (pending.len() >= BATCH)
                .then(|| std::mem::replace(&mut *pending, Vec::with_capacity(BATCH)))
        };
        if let Some(batch) = full {
            self.send(batch);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.flush();
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        self.flush();
        Ok(())
    }
}

/// A tracer provider that sends to `target` and counts what it delivered in `delivery`.
fn provider(target: &Target, delivery: Arc<Mutex<Delivery>>) -> Result<SdkTracerProvider> {
    // The exporter's reqwest client uses the same TLS provider as the LLM client.
    crate::llm::http::install_tls_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(target.url.clone())
        .with_timeout(REQUEST_TIMEOUT)
        .with_headers(target.headers.iter().cloned().collect())
        .build()
        .with_context(|| format!("an OTLP exporter for {}", target.shown()))?;
    let batcher = Batcher::start(exporter, delivery);
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batcher)
        // A search's span carries one event per node; a long run's one per note.
        .with_max_events_per_span(1 << 20)
        .with_max_links_per_span(1024)
        .with_resource(
            Resource::builder_empty()
                .with_attributes([
                    KeyValue::new("service.name", "mcp-cosmos"),
                    KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                ])
                .build(),
        )
        .build();
    Ok(provider)
}

/// What is kept of a node of the search in progress: small, as a search holds up to 10^5.
#[derive(Debug, Default)]
struct NodeFacts {
    /// Its span, for children (in the run's one trace).
    span: Option<SpanId>,
    /// The tool it calls (an index into `Trace::tools`), `None` for a finish or a root.
    tool: Option<u32>,
    /// Its simulation's span and observation, for the real twin's link and fidelity.
    simulated: Option<Box<(SpanId, Observation)>>,
    /// Visits and value summed by backpropagation.
    visits: u32,
    value: f64,
}

/// The one mapping from a run's events to spans.
pub struct Trace {
    tracer: SdkTracer,
    started: SystemTime,
    content: bool,
    redactor: Redactor,
    catalog: ToolCatalog,
    provider_name: String,
    root: Context,
    phase: Option<Context>,
    /// Nodes of the search in progress (cleared when the next search starts).
    nodes: HashMap<NodeId, NodeFacts>,
    /// Node spans not yet ended (a node's span ends at its evaluation).
    open_nodes: HashMap<NodeId, Context>,
    /// Tool names, each once.
    tools: Vec<String>,
    trace_id: TraceId,
    /// When the search in progress added its first node.
    search_started: Option<u64>,
    /// ReAct's latest simulation per step, for the real call's link and fidelity.
    step_simulation: Option<(u64, SpanContext, Observation)>,
    last_ms: u64,
}

fn attr(key: &'static str, value: impl Into<OtelValue>) -> KeyValue {
    KeyValue::new(key, value)
}

/// An enum's name as the trajectory writes it.
fn name_of<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

impl Trace {
    /// Starts the run's trace (its `invoke_agent` span) from its header.
    pub fn new(header: &Header, tracer: SdkTracer, content: bool, redactor: Redactor) -> Self {
        let started = SystemTime::from(header.started_at);
        let agent = header.agent.kind.as_str();
        let mut attrs = vec![
            attr("gen_ai.operation.name", "invoke_agent"),
            attr("gen_ai.agent.name", agent.to_string()),
            attr("gen_ai.agent.id", header.run_id.clone()),
            attr("gen_ai.request.model", header.planner.model.clone()),
            attr("openinference.span.kind", "AGENT"),
            attr("cosmos.run.id", header.run_id.clone()),
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
    fn span_context(&self, span_id: SpanId) -> SpanContext {
        SpanContext::new(
            self.trace_id,
            span_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        )
    }

    /// A context whose parent is the span `span_id` of this trace.
    fn under(&self, span_id: SpanId) -> Context {
        Context::new().with_remote_span_context(self.span_context(span_id))
    }

    fn tool_index(&mut self, tool: &str) -> u32 {
        match self.tools.iter().rposition(|t| t == tool) {
            Some(i) => i as u32,
            None => {
                self.tools.push(tool.to_string());
                (self.tools.len() - 1) as u32
            }
        }
    }

    fn at(&self, t_ms: u64) -> SystemTime {
        self.started + Duration::from_millis(t_ms)
    }

    /// The context new spans go under: the phase, else the run.
    fn parent(&self) -> &Context {
        self.phase.as_ref().unwrap_or(&self.root)
    }

    /// Starts and (with `end`) ends a span under `parent`.
    fn span(
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

    /// Ends the span of `cx` at `t_ms`, failed (its status an error, the reason redacted)
    /// when `failed` says why.
    fn end(&self, cx: &Context, t_ms: u64, failed: Option<&str>) {
        let span = cx.span();
        if let Some(why) = failed {
            span.set_status(Status::error(redacted_text(&self.redactor, why)));
        }
        span.end_with_timestamp(self.at(t_ms));
    }

    fn content_json(&self, value: &Value) -> String {
        let mut value = value.clone();
        self.redactor.redact(&mut value);
        value.to_string()
    }

    fn observation_json(&self, observation: &Observation) -> String {
        self.content_json(&serde_json::to_value(observation).unwrap_or(Value::Null))
    }

    /// Turns one event into spans, span events or attributes.
    pub fn event(&mut self, event: &Event) {
        let t = event.t_ms;
        self.last_ms = self.last_ms.max(t);
        match &event.body {
            EventBody::Phase { phase } => {
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
            EventBody::LlmCall {
                role,
                model,
                prompt_tokens,
                completion_tokens,
                tokens_estimated,
                latency_ms,
                error,
                messages,
            } => {
                let mut attrs = vec![
                    attr("gen_ai.operation.name", "chat"),
                    attr("gen_ai.provider.name", self.provider_name.clone()),
                    attr("gen_ai.request.model", model.clone()),
                    attr("gen_ai.usage.input_tokens", *prompt_tokens as i64),
                    attr("gen_ai.usage.output_tokens", *completion_tokens as i64),
                    attr("cosmos.role", name_of(role)),
                    attr("cosmos.tokens_estimated", *tokens_estimated),
                    attr("openinference.span.kind", "LLM"),
                    attr("llm.model_name", model.clone()),
                    attr("llm.token_count.prompt", *prompt_tokens as i64),
                    attr("llm.token_count.completion", *completion_tokens as i64),
                    attr(
                        "llm.token_count.total",
                        (*prompt_tokens + *completion_tokens) as i64,
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
            EventBody::NodeAdded {
                node,
                parent,
                depth,
                action,
                prior,
            } => {
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
            EventBody::NodeSimulated {
                node,
                world_model,
                observation,
                latency_ms,
                tokens,
            } => {
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
                let mut attrs = self.simulation_attrs(&tool, world_model, observation, *tokens);
                attrs.push(attr("cosmos.node.id", *node as i64));
                let cx = self.span(
                    format!("execute_tool {tool}"),
                    &parent,
                    t.saturating_sub(*latency_ms),
                    attrs,
                    Vec::new(),
                );
                self.end(&cx, t, None);
                let id = cx.span().span_context().span_id();
                if world_model != VALIDATOR
                    && let Some(n) = self.nodes.get_mut(node)
                {
                    n.simulated = Some(Box::new((id, observation.clone())));
                }
            }
            EventBody::CallSimulated {
                step,
                world_model,
                observation,
                latency_ms,
                tokens,
            } => {
                let attrs = {
                    let mut a = self.simulation_attrs("", world_model, observation, *tokens);
                    a.push(attr("cosmos.step", *step as i64));
                    a
                };
                let cx = self.span(
                    "execute_tool (simulated)".to_string(),
                    self.parent(),
                    t.saturating_sub(*latency_ms),
                    attrs,
                    Vec::new(),
                );
                self.end(&cx, t, None);
                self.step_simulation =
                    Some((*step, cx.span().span_context().clone(), observation.clone()));
            }
            EventBody::NodeEvaluated {
                node,
                verdict,
                base_reward,
                critic_reward,
                reward,
                terminal,
                ..
            } => {
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
            EventBody::Backpropagated { path, value } => {
                for id in path {
                    let n = self.nodes.entry(*id).or_default();
                    n.visits = n.visits.saturating_add(1);
                    n.value += value;
                }
            }
            EventBody::SearchFinished {
                root,
                iterations,
                expanded,
                revisited,
                widened,
                retried,
                fruitless,
                stopped,
                ..
            } => {
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
            EventBody::PlanSelected { nodes, rule, .. } => {
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
            EventBody::ToolCalled {
                step,
                tool,
                server,
                arguments,
                result,
                latency_ms,
                node,
                error,
                ..
            } => {
                let simulated = match node {
                    Some(n) => self
                        .nodes
                        .get(n)
                        .and_then(|n| n.simulated.as_deref())
                        .map(|(id, o)| (self.span_context(*id), o.clone())),
                    None => self
                        .step_simulation
                        .as_ref()
                        .filter(|(s, ..)| s == step)
                        .map(|(_, sc, o)| (sc.clone(), o.clone())),
                };
                let facts = StepFacts::new(
                    &self.catalog,
                    CallRecord {
                        tool,
                        server: server.as_deref(),
                        arguments,
                        result,
                        error: error.as_deref(),
                    },
                    simulated.as_ref().map(|(_, o)| o),
                );
                let mut attrs = self.real_call_attrs(tool, arguments, result, error.is_some());
                attrs.extend([
                    attr("gen_ai.tool.call.id", format!("step-{step}")),
                    attr("cosmos.step", *step as i64),
                ]);
                if let Some(s) = server {
                    attrs.push(attr("cosmos.server", s.clone()));
                }
                if let Some(n) = node {
                    attrs.push(attr("cosmos.node.id", *n as i64));
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
                    t.saturating_sub(*latency_ms),
                    attrs,
                    links,
                );
                let failed = match error {
                    Some(e) => Some(e.as_str()),
                    None => result.is_error.then_some("the tool returned an error"),
                };
                self.end(&cx, t, failed);
            }
            EventBody::NodeProbed {
                node,
                world_model,
                observation,
                error,
                latency_ms,
                tokens,
            } => {
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
                let cx = self.span(
                    format!("probe #{node}"),
                    &self.root,
                    t.saturating_sub(*latency_ms),
                    attrs,
                    Vec::new(),
                );
                self.end(&cx, t, None);
            }
            EventBody::ProbeCalled {
                node,
                tool,
                arguments,
                result,
                latency_ms,
                error,
                ..
            } => {
                let mut attrs = self.real_call_attrs(tool, arguments, result, error.is_some());
                attrs.extend([
                    attr("cosmos.probe", true),
                    attr("cosmos.node.id", *node as i64),
                ]);
                let cx = self.span(
                    format!("execute_tool {tool}"),
                    &self.root,
                    t.saturating_sub(*latency_ms),
                    attrs,
                    Vec::new(),
                );
                self.end(&cx, t, None);
            }
            EventBody::Annotation {
                node,
                event,
                text,
                who,
            } => {
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
            EventBody::Error {
                source,
                name,
                message,
                ..
            } => {
                let mut attrs = vec![
                    attr("exception.type", source.clone()),
                    attr("exception.message", redacted_text(&self.redactor, message)),
                ];
                if let Some(n) = name {
                    attrs.push(attr("cosmos.error.name", n.clone()));
                }
                self.parent()
                    .span()
                    .add_event_with_timestamp("exception", self.at(t), attrs);
            }
            EventBody::DecisionRejected {
                problem, detail, ..
            } => {
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
            EventBody::Answer { text } => {
                if self.content {
                    self.root
                        .span()
                        .set_attribute(attr("cosmos.answer", redacted_text(&self.redactor, text)));
                }
            }
            EventBody::JudgeScored { model, scores, .. } => {
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
            EventBody::RunFinished {
                status,
                error,
                ending,
                totals,
            } => {
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
            EventBody::PlannerDecided { .. } | EventBody::Unknown { .. } => {}
        }
    }

    /// What every span of a real call carries: the GenAI and MCP names, the error's type,
    /// and with `--content` the arguments and the result.
    fn real_call_attrs(
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

    fn simulation_attrs(
        &self,
        tool: &str,
        world_model: &str,
        observation: &Observation,
        tokens: Option<u64>,
    ) -> Vec<KeyValue> {
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
        if let Some(tokens) = tokens {
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

    fn end_phase(&mut self, t: u64) {
        if let Some(cx) = self.phase.take() {
            cx.span().end_with_timestamp(self.at(t));
        }
    }

    /// Ends node spans never evaluated (a search cut short).
    fn close_nodes(&mut self, t: u64) {
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
fn provider_name(base_url: Option<&str>) -> String {
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

fn redacted_text(redactor: &Redactor, text: &str) -> String {
    redactor
        .redact_str(text)
        .unwrap_or_else(|| text.to_string())
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
    let tracer = provider.tracer("mcp-cosmos");
    let mut trace = Trace::new(stream.header(), tracer, target.content, redactor.clone());
    while let Some(event) = stream.next_event()? {
        trace.event(&event);
    }
    trace.finish();
    provider
        .force_flush()
        .map_err(|e| anyhow::anyhow!("flushing spans: {e}"))?;
    let _ = provider.shutdown();
    let problems = stream.problems().iter().map(|p| p.to_string()).collect();
    let delivery = std::mem::take(&mut *delivery.lock().expect("delivery lock"));
    Ok((delivery, problems))
}

/// A live run's export: events go into a bounded queue and a thread of its own turns them
/// into spans and sends them, so the agent never waits; when the queue is full an event is
/// dropped and counted. Trouble (a receiver that cannot be reached or refuses spans, events
/// dropped) reaches the run through [`LiveTap`] as `error` events.
pub struct Live {
    queue: Option<SyncSender<Event>>,
    shared: Arc<Shared>,
    worker: Option<std::thread::JoinHandle<()>>,
    /// Says when the export thread has ended.
    finished: Receiver<()>,
    target: Target,
}

/// What the export thread and the run's tap share.
#[derive(Debug, Default)]
struct Shared {
    /// Filled by the sending thread as batches go out.
    delivery: Arc<Mutex<Delivery>>,
    /// Events dropped because the queue was full.
    dropped: AtomicU64,
    /// Trouble not yet recorded in the run.
    trouble: Mutex<Vec<String>>,
}

/// The run's side of a live export: hands each event to the export thread.
pub struct LiveTap {
    queue: SyncSender<Event>,
    shared: Arc<Shared>,
    /// Trouble already recorded: failed deliveries, dropped events.
    told_failure: bool,
    told_drop: bool,
    shown: String,
}

impl Live {
    /// Starts the export of the run whose header is `header`; the tap goes to the run's
    /// recorder, the `Live` is finished after the run. `checked` is what [`reachable`] said,
    /// asked before the run starts so a receiver that is down is in the trajectory however
    /// short the run is.
    pub fn start(
        header: &Header,
        target: Target,
        redactor: Redactor,
        checked: std::result::Result<(), String>,
    ) -> Result<(Self, LiveTap)> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Event>(LIVE_QUEUE);
        let shared = Arc::new(Shared::default());
        if let Err(why) = checked {
            shared.trouble.lock().expect("trouble lock").push(format!(
                "cannot send spans to {}: {why}; the run goes on, its trajectory is whole",
                target.shown()
            ));
        }
        let (ended, finished) = std::sync::mpsc::sync_channel::<()>(1);
        let worker = {
            let header = header.clone();
            let target = target.clone();
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("otel-export".into())
                .spawn(move || {
                    live_worker(&header, &target, redactor, &shared, rx);
                    let _ = ended.send(());
                })
                .context("starting the OpenTelemetry export thread")?
        };
        let tap = LiveTap {
            queue: tx.clone(),
            shared: Arc::clone(&shared),
            told_failure: false,
            told_drop: false,
            shown: target.shown(),
        };
        Ok((
            Self {
                queue: Some(tx),
                shared,
                worker: Some(worker),
                finished,
                target,
            },
            tap,
        ))
    }

    /// Ends the trace and waits for the last spans to be sent (the run's tap must be gone),
    /// [`LIVE_FINISH`] at most; says what was lost, if anything (`None` when everything
    /// arrived).
    pub fn finish(mut self) -> Option<String> {
        self.queue.take();
        let mut problems = Vec::new();
        match self.finished.recv_timeout(LIVE_FINISH) {
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                if let Some(worker) = self.worker.take() {
                    let _ = worker.join();
                }
            }
            // The thread is left to its request; the process does not wait for it.
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => problems.push(format!(
                "{} did not take the last spans within {} s; they were not exported",
                self.target.shown(),
                LIVE_FINISH.as_secs()
            )),
        }
        let delivery = std::mem::take(&mut *self.shared.delivery.lock().expect("delivery lock"));
        let dropped = self.shared.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            problems.push(format!(
                "{dropped} event(s) were not exported: the exporter fell behind"
            ));
        }
        problems.extend(delivery.problem(&self.target.shown()));
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}

impl crate::agent::ports::Tap for LiveTap {
    fn source(&self) -> &'static str {
        "otel"
    }

    fn see(&mut self, event: &Event) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.queue.try_send(event.clone())
        {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn trouble(&mut self) -> Vec<String> {
        let mut out = std::mem::take(&mut *self.shared.trouble.lock().expect("trouble lock"));
        if !self.told_failure {
            let delivery = self.shared.delivery.lock().expect("delivery lock");
            if let Some(problem) = delivery.problem(&self.shown) {
                self.told_failure = true;
                out.push(format!(
                    "{problem}; the run goes on, its trajectory is whole"
                ));
            }
        }
        if !self.told_drop && self.shared.dropped.load(Ordering::Relaxed) > 0 {
            self.told_drop = true;
            out.push(
                "the OpenTelemetry exporter fell behind; some events were not exported".into(),
            );
        }
        out
    }
}

/// Asks the receiver whether it takes OTLP at all (an empty export request, at most 3 s), so
/// a receiver that is down is said at the start of the run, not at its end. Async, so the
/// cells of a sweep that share a runtime do not wait on each other's check.
pub async fn reachable(target: &Target) -> std::result::Result<(), String> {
    crate::llm::http::install_tls_provider();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client
        .post(&target.url)
        .header("content-type", "application/x-protobuf")
        .body(Vec::new());
    for (k, v) in &target.headers {
        request = request.header(k, v);
    }
    match request.send().await {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!("it answered {}", r.status())),
        // reqwest names the URL without its credentials.
        Err(e) => Err(format!("{:#}", anyhow::Error::new(e))),
    }
}

fn live_worker(
    header: &Header,
    target: &Target,
    redactor: Redactor,
    shared: &Shared,
    events: Receiver<Event>,
) {
    let provider = match provider(target, shared.delivery.clone()) {
        Ok(p) => p,
        Err(e) => {
            shared
                .trouble
                .lock()
                .expect("trouble lock")
                .push(format!("{e:#}"));
            // Drain the queue so the run never blocks on it.
            for _ in events {}
            return;
        }
    };
    let tracer = provider.tracer("mcp-cosmos");
    let mut trace = Trace::new(header, tracer, target.content, redactor);
    let mut flushed = std::time::Instant::now();
    loop {
        match events.recv_timeout(LIVE_FLUSH) {
            Ok(event) => trace.event(&event),
            // Quiet for a while: what has ended so far goes out, so the run shows as it runs.
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = provider.force_flush();
                flushed = std::time::Instant::now();
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // A run that is never quiet still shows up every few seconds.
        if flushed.elapsed() >= LIVE_FLUSH_AT_LEAST {
            let _ = provider.force_flush();
            flushed = std::time::Instant::now();
        }
    }
    trace.finish();
    let _ = provider.force_flush();
    let _ = provider.shutdown();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_gets_the_traces_path_once_and_credentials_stay_out_of_messages() {
        let url = |e: &str| Target::new(e, &[], false).unwrap().url;
        assert_eq!(
            url("http://localhost:6006"),
            "http://localhost:6006/v1/traces"
        );
        assert_eq!(
            url("http://localhost:6006/"),
            "http://localhost:6006/v1/traces"
        );
        assert_eq!(
            url("https://cloud.langfuse.com/api/public/otel"),
            "https://cloud.langfuse.com/api/public/otel/v1/traces"
        );
        assert_eq!(url("http://h:4318/v1/traces"), "http://h:4318/v1/traces");
        let t = Target::new(
            "http://me:pw@h:4318",
            &["Authorization=Basic x=y".into()],
            true,
        )
        .unwrap();
        assert_eq!(
            t.headers,
            [("Authorization".to_string(), "Basic x=y".to_string())]
        );
        assert!(!t.shown().contains("pw"), "{}", t.shown());
        // A key in the query is hidden too, as every target shows a URL.
        let q = Target::new(
            "http://h:4318/v1/traces?api_key=zz-query-key-1234",
            &[],
            false,
        )
        .unwrap();
        assert!(!q.shown().contains("zz-query-key"), "{}", q.shown());
        assert!(Target::new("http://h", &["=v".into()], false).is_err());
    }

    #[test]
    fn headers_from_the_environment_are_decoded_and_win() {
        let given = vec![
            ("Authorization".to_string(), "from-the-command".to_string()),
            ("x-team".to_string(), "a".to_string()),
        ];
        let merged = with_env_headers(
            given.clone(),
            Some("authorization=Bearer%20sk-env-1, x-other = b ,broken,=empty"),
        );
        assert_eq!(
            merged,
            vec![
                ("x-team".to_string(), "a".to_string()),
                ("authorization".to_string(), "Bearer sk-env-1".to_string()),
                ("x-other".to_string(), "b".to_string()),
            ]
        );
        assert_eq!(with_env_headers(given.clone(), None), given);
        let target = Target::new(
            "https://me:pw-123@h/v1/traces",
            &["authorization=Bearer sk-cmd-1".into()],
            false,
        )
        .unwrap();
        let shown = format!("{target:?}");
        assert!(
            !shown.contains("sk-cmd-1")
                && !shown.contains("pw-123")
                && shown.contains("authorization"),
            "{shown}"
        );
    }

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

    #[test]
    fn a_delivery_says_what_did_not_arrive_and_nothing_when_all_did() {
        let mut d = Delivery {
            spans: 10,
            ..Delivery::default()
        };
        assert_eq!(d.problem("R"), None);
        d.failed = 4;
        d.first_error = Some("refused".into());
        assert_eq!(
            d.problem("R").unwrap(),
            "4 of 10 span(s) did not reach R: refused"
        );
    }
}
