//! Scripted ports for driving whole agents in process: a chat model whose replies a closure
//! writes from the request it is sent, a tool host, and a world model. The end-to-end tests
//! (`tests/engine_*.rs`) drive the same agents against real servers and a real HTTP endpoint.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::anyhow;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::ports::ToolHost;
use super::{Budget, Env, Roles};
use crate::llm::chat::{ChatModel, Completion, LlmError};
use crate::llm::chat_wire::{ChatRequest, Speaker, ToolCall};
use crate::llm::client::LlmClient;
use crate::llm::endpoints::{Endpoint, OutputMode};
use crate::mcp::server::CallOutcome;
use crate::task::Task;
use crate::world_model::{LlmUsage, SimFailure, SimRequest, Simulation, WorldModel};
use cosmos_trajectory::event::{EventBody, Observation, ToolInfo, WorldModelInfo};

type Script = dyn Fn(&ChatRequest) -> Result<Completion, LlmError> + Send + Sync;
type Answerer = dyn Fn(&str, &Value) -> Observation + Send + Sync;
type Predictor = dyn Fn(&str) -> Result<String, String> + Send + Sync;

/// A chat model that answers each request with what its script says, and keeps the requests.
pub struct ScriptedChat {
    endpoint: Endpoint,
    script: Box<Script>,
    /// Every request it was sent, in order.
    pub requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedChat {
    /// A model in `output` mode answering with `script`.
    pub fn new(
        output: OutputMode,
        script: impl Fn(&ChatRequest) -> Result<Completion, LlmError> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            endpoint: Endpoint {
                base_url: "scripted".into(),
                model: "scripted".into(),
                api_key: None,
                temperature: 0.0,
                max_tokens: 256,
                timeout: Duration::from_secs(1),
                max_retries: 0,
                output,
                record_messages: false,
                logprobs: false,
            },
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// A JSON-mode model that replies with `replies` in turn (the last one again after that).
    pub fn json_replies(replies: Vec<Value>) -> Arc<Self> {
        let next = Mutex::new(0usize);
        Self::new(OutputMode::Json, move |_| {
            let mut i = next.lock().unwrap();
            let reply = &replies[(*i).min(replies.len() - 1)];
            *i += 1;
            Ok(text(&reply.to_string()))
        })
    }

    /// A model that always fails, as an endpoint nobody listens on.
    pub fn down() -> Arc<Self> {
        Self::new(OutputMode::Json, |_| {
            Err(LlmError::new(anyhow!("connection refused"), Duration::ZERO))
        })
    }

    /// The requests it was sent.
    pub fn sent(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl ChatModel for ScriptedChat {
    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Completion, LlmError>> {
        self.requests.lock().unwrap().push(request.clone());
        let reply = (self.script)(request);
        Box::pin(async move { reply })
    }
}

/// A text reply with usage.
pub fn text(s: &str) -> Completion {
    Completion {
        text: s.to_string(),
        prompt_tokens: 10,
        completion_tokens: 5,
        ..Completion::default()
    }
}

/// A reply that calls functions.
pub fn calls(calls: Vec<ToolCall>) -> Completion {
    Completion {
        tool_calls: calls,
        ..text("")
    }
}

/// The function names the assistant messages of a request have already called.
pub fn called_functions(request: &ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Speaker::Assistant)
        .flat_map(|m| m.tool_calls.iter().map(|c| c.function.name.clone()))
        .collect()
}

/// Tools whose calls a closure answers.
pub struct ScriptedTools {
    tools: Vec<ToolInfo>,
    answer: Box<Answerer>,
    /// Every call made: (tool, arguments).
    pub calls: Mutex<Vec<(String, Value)>>,
}

impl ScriptedTools {
    /// Tools named `names` (each taking any object), answered by `answer`.
    pub fn new(
        names: &[&str],
        answer: impl Fn(&str, &Value) -> Observation + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            tools: names
                .iter()
                .map(|n| ToolInfo {
                    name: n.to_string(),
                    description: format!("the tool {n}"),
                    input_schema: cosmos_trajectory::event::ToolSchema::new(
                        json!({"type": "object"}),
                    ),
                    ..Default::default()
                })
                .collect(),
            answer: Box::new(answer),
            calls: Mutex::new(Vec::new()),
        })
    }

    /// The tools called, in order.
    pub fn called(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(t, _)| t.clone())
            .collect()
    }
}

impl ToolHost for ScriptedTools {
    fn tools(&self) -> Vec<ToolInfo> {
        self.tools.clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Value,
        _on_progress: crate::mcp::server::OnProgress<'a>,
    ) -> BoxFuture<'a, (Option<String>, CallOutcome)> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.to_string(), arguments.clone()));
        // As the real pool: a tool no server offers is a failed call with no server.
        if !self.tools.iter().any(|t| t.name == tool) {
            return Box::pin(async move { (None, crate::mcp::pool::unknown_tool(tool)) });
        }
        let result = (self.answer)(tool, arguments);
        let server = tool.split(':').next().map(str::to_string);
        Box::pin(async move {
            (
                server,
                CallOutcome {
                    result,
                    error: None,
                    latency: Duration::ZERO,
                    server_died: None,
                    reply: None,
                    elicited: Vec::new(),
                    state_change: None,
                    input_required: None,
                    refused: None,
                },
            )
        })
    }
}

/// A world model whose predictions a closure makes (`Err` for a failure).
pub struct ScriptedWorldModel(pub Box<Predictor>);

impl WorldModel for ScriptedWorldModel {
    fn name(&self) -> String {
        "scripted".into()
    }
    fn describe(&self) -> WorldModelInfo {
        crate::world_model::describe(self.name(), [])
    }
    fn simulate<'a>(
        &'a self,
        request: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
        let usage = LlmUsage {
            model: "wm".into(),
            prompt_tokens: 20,
            completion_tokens: 3,
            estimated: false,
            latency: Duration::ZERO,
            error: None,
            messages: None,
        };
        let out = match (self.0)(&request.tool.name) {
            Ok(text) => Ok(Simulation::new(
                Observation {
                    text,
                    ..Default::default()
                },
                Duration::ZERO,
                Some(usage),
                None,
            )),
            Err(message) => Err(SimFailure {
                message,
                llm: vec![LlmUsage {
                    error: Some("down".into()),
                    prompt_tokens: 0,
                    completion_tokens: 0,
                    ..usage
                }],
            }),
        };
        Box::pin(async move { out })
    }
}

/// An environment over scripted ports: `planner` for every role unless `critic` is given.
pub fn env(
    planner: Arc<ScriptedChat>,
    critic: Option<Arc<ScriptedChat>>,
    tools: Arc<ScriptedTools>,
    world_model: Option<Arc<dyn WorldModel>>,
    max_steps: usize,
) -> Env {
    let planner = Arc::new(LlmClient::over(planner));
    let critic = critic.map_or(planner.clone(), |c| Arc::new(LlmClient::over(c)));
    let (_, stop) = watch::channel(false);
    Env::new(
        Task {
            id: "t".into(),
            request: "do the task".into(),
            ..Task::default()
        },
        tools,
        Roles {
            planner: planner.clone(),
            critic,
            summarizer: planner,
        },
        world_model,
        Budget {
            max_steps,
            ..Budget::default()
        },
        stop,
    )
    .expect("distinct function names")
}

/// The kinds of `events`, in order (for compact assertions).
pub fn kinds(events: &[EventBody]) -> Vec<&str> {
    events.iter().map(EventBody::kind).collect()
}
