//! A role's client: a layer over any [`ChatModel`] that gets structured output out of it.
//! With `output = "json"` it climbs down the JSON ladder (`json_schema` → `json_object` →
//! JSON parsed out of text, the rung that worked remembered); with `output = "tools"` it makes
//! the model call one function whose parameters are the schema, so a tools-only endpoint
//! serves every role. It also records each call's messages when the endpoint asks for it.
//!
//! `LlmClient`, the layer every role uses over any `ChatModel`: the JSON ladder
//! (`json_schema` → `json_object` → JSON parsed out of text, remembered per client), or, with
//! `output = "tools"`, a forced function call whose parameters are the schema; records messages
//! when the endpoint asks for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

use anyhow::anyhow;
use serde_json::Value;

use super::chat::{ChatModel, Completion, LlmError};
use super::chat_wire::{
    ChatRequest, JsonSchemaFormat, Message, ResponseFormat, ToolCall, ToolChoice, ToolSpec,
};
use super::endpoints::{Endpoint, OutputMode};
use super::http_chat::{HttpChat, snippet};
use super::json::extract_json;

/// JSON output rungs: which `response_format` the endpoint accepted last.
const RUNG_SCHEMA: u8 = 0;
const RUNG_OBJECT: u8 = 1;
const RUNG_TEXT: u8 = 2;

/// A role's client.
pub struct LlmClient {
    model: Arc<dyn ChatModel>,
    json_rung: AtomicU8,
    /// The endpoint refused a rich schema once: [`LlmClient::complete_json_or`] sends the plain
    /// one from then on.
    rich_refused: AtomicBool,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient")
            .field("endpoint", self.endpoint())
            .finish()
    }
}

impl LlmClient {
    /// A client for a real HTTP endpoint.
    pub fn new(endpoint: Endpoint) -> Self {
        Self::over(Arc::new(HttpChat::new(endpoint)))
    }

    /// A client over any chat model (a scripted one in tests).
    pub fn over(model: Arc<dyn ChatModel>) -> Self {
        Self {
            model,
            json_rung: AtomicU8::new(RUNG_SCHEMA),
            rich_refused: AtomicBool::new(false),
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        self.model.endpoint()
    }

    /// True when the endpoint is set to native tool calls.
    pub fn uses_tools(&self) -> bool {
        self.endpoint().output == OutputMode::Tools
    }

    /// Asks for a JSON object matching `schema`: a forced function call in tools mode,
    /// otherwise down the JSON ladder.
    pub async fn complete_json(
        &self,
        messages: &[Message],
        schema_name: &str,
        schema: &Value,
    ) -> Result<(Value, Completion), LlmError> {
        self.complete_json_or(messages, schema_name, schema, schema)
            .await
    }

    /// As [`LlmClient::complete_json`], with a `rich` schema that a JSON-schema endpoint may
    /// refuse (a grammar converter that cannot hold it): then `plain` is sent, now and from
    /// then on ([`LlmClient::refused_rich_schema`] says so). The lower rungs and tools mode
    /// describe `plain`.
    pub async fn complete_json_or(
        &self,
        messages: &[Message],
        schema_name: &str,
        rich: &Value,
        plain: &Value,
    ) -> Result<(Value, Completion), LlmError> {
        if self.uses_tools() {
            return self
                .complete_as_function(messages, schema_name, plain)
                .await;
        }
        let start = Instant::now();
        let mut rung = self.json_rung.load(Ordering::Relaxed);
        loop {
            let mut messages = messages.to_vec();
            let schema = if self.rich_refused.load(Ordering::Relaxed) {
                plain
            } else {
                rich
            };
            let response_format = match rung {
                RUNG_SCHEMA => Some(ResponseFormat::JsonSchema {
                    json_schema: JsonSchemaFormat {
                        name: schema_name.into(),
                        schema: schema.clone(),
                        strict: false,
                    },
                }),
                RUNG_OBJECT => Some(ResponseFormat::JsonObject),
                _ => None,
            };
            if rung != RUNG_SCHEMA {
                // Without a schema the model must be told the shape.
                messages.push(Message::user(format!(
                    "Answer with one JSON value only, matching this JSON Schema:\n{plain}"
                )));
            }
            let request = ChatRequest {
                response_format,
                ..self.request(messages)
            };
            match self.send(&request, start).await {
                Ok(c) => {
                    self.json_rung.store(rung, Ordering::Relaxed);
                    return match extract_json(&c.text) {
                        Some(v) => Ok((v, c)),
                        // Cut short, the reply is no JSON because of the cap, not the model.
                        None if c.cut => Err(LlmError::unusable(
                            anyhow!(
                                "the reply stopped at the token cap ({} tokens) before its JSON \
                                 ended",
                                c.completion_tokens
                            ),
                            c,
                        )),
                        None => Err(LlmError::unusable(
                            anyhow!("the model's reply is not JSON: {}", snippet(&c.text)),
                            c,
                        )),
                    };
                }
                // A refused rich schema is tried again plain, at the same rung.
                Err(e)
                    if rung == RUNG_SCHEMA
                        && schema != plain
                        && e.is_format_rejection()
                        && !self.rich_refused.swap(true, Ordering::Relaxed) =>
                {
                    tracing::warn!(
                        "{} refused the {schema_name} schema ({e}); sending the plain one",
                        self.endpoint().model
                    );
                }
                // An endpoint that rejects the format (400/422) gets the next rung down.
                Err(e) if rung < RUNG_TEXT && e.is_format_rejection() => rung += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// True once the endpoint refused a rich schema and the plain one is sent instead.
    pub fn refused_rich_schema(&self) -> bool {
        self.rich_refused.load(Ordering::Relaxed)
    }

    /// The model must call the function `name` whose parameters are `schema`; its arguments
    /// are the answer.
    async fn complete_as_function(
        &self,
        messages: &[Message],
        name: &str,
        schema: &Value,
    ) -> Result<(Value, Completion), LlmError> {
        let start = Instant::now();
        let request = ChatRequest {
            tools: vec![ToolSpec::function(
                name,
                "Give your answer as this function's arguments.",
                schema.clone(),
            )],
            tool_choice: Some(ToolChoice::function(name)),
            ..self.request(messages.to_vec())
        };
        let c = self.send(&request, start).await?;
        match c.tool_calls.iter().find(|t| t.function.name == name) {
            Some(call) if call.arguments().is_object() => Ok((call.arguments(), c)),
            _ => Err(LlmError::unusable(
                anyhow!(
                    "the model did not call {name} with an object: {}",
                    snippet(&c.text)
                ),
                c,
            )),
        }
    }

    /// A call offering `tools`; the model may answer with text or tool calls.
    pub async fn complete_with_tools(
        &self,
        messages: Vec<Message>,
        tools: Vec<ToolSpec>,
    ) -> Result<Completion, LlmError> {
        let request = ChatRequest {
            tools,
            ..self.request(messages)
        };
        self.send(&request, Instant::now()).await
    }

    /// A plain text completion.
    pub async fn complete_text(&self, messages: &[Message]) -> Result<Completion, LlmError> {
        self.send(&self.request(messages.to_vec()), Instant::now())
            .await
    }

    fn request(&self, messages: Vec<Message>) -> ChatRequest {
        let e = self.endpoint();
        ChatRequest {
            model: e.model.clone(),
            messages,
            temperature: e.temperature,
            max_tokens: e.max_tokens,
            response_format: None,
            tools: Vec::new(),
            tool_choice: None,
            logprobs: e.logprobs,
        }
    }

    /// Sends one request; the latency counts from `start` (the ladder's first rung).
    async fn send(&self, request: &ChatRequest, start: Instant) -> Result<Completion, LlmError> {
        match self.model.chat(request).await {
            Ok(mut c) => {
                c.latency = start.elapsed();
                c.messages = self.exchange(&request.messages, Some((&c.text, &c.tool_calls)));
                Ok(c)
            }
            Err(mut e) => {
                e.latency = start.elapsed();
                e.messages = self.exchange(&request.messages, None);
                Err(e)
            }
        }
    }

    /// The messages sent and the reply (if one came), as chat messages; `None` unless the
    /// endpoint records messages.
    fn exchange(&self, messages: &[Message], reply: Option<(&str, &[ToolCall])>) -> Option<Value> {
        if !self.endpoint().record_messages {
            return None;
        }
        let mut all = messages.to_vec();
        if let Some((text, calls)) = reply {
            all.push(Message {
                content: Some(text.to_string()),
                ..Message::tool_calls(calls.to_vec())
            });
        }
        serde_json::to_value(all).ok()
    }
}
