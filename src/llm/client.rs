//! An OpenAI-compatible chat-completions client over reqwest (vLLM, Ollama, llama.cpp,
//! OpenAI, OpenRouter…): retries with exponential backoff and jitter on 429, 5xx and
//! timeouts, honouring `Retry-After`; token usage from the response or estimated.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};

use super::config::{Endpoint, OutputMode};
use super::json::extract_json;

/// Longest wait a `Retry-After` may ask for before we give up on the endpoint.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// First backoff; doubled each retry, plus up to 50% jitter.
const BASE_BACKOFF: Duration = Duration::from_millis(500);

/// One chat message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: "system",
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: "user",
            content: content.into(),
        }
    }
}

/// What came back, with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant's text.
    pub text: String,
    /// Native tool calls: (name, arguments).
    pub tool_calls: Vec<(String, Value)>,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// The endpoint gave no usage; counts are estimates (4 characters a token).
    pub estimated: bool,
    /// Wall time including retries.
    pub latency: Duration,
    /// The messages sent and the reply, when the endpoint records them.
    pub messages: Option<Value>,
}

/// A failed call with what it cost, so the caller can still record it.
#[derive(Debug)]
pub struct LlmError {
    /// Why.
    pub error: anyhow::Error,
    /// Wall time spent.
    pub latency: Duration,
    /// The messages sent (and a reply that could not be used), when the endpoint records them.
    pub messages: Option<Value>,
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for LlmError {}

/// JSON output rungs: which `response_format` the endpoint accepted last.
const RUNG_SCHEMA: u8 = 0;
const RUNG_OBJECT: u8 = 1;
const RUNG_TEXT: u8 = 2;

/// A client for one endpoint.
#[derive(Debug)]
pub struct LlmClient {
    http: reqwest::Client,
    endpoint: Endpoint,
    json_rung: AtomicU8,
}

impl LlmClient {
    /// A client for `endpoint`.
    pub fn new(endpoint: Endpoint) -> Self {
        let http = reqwest::Client::builder()
            .timeout(endpoint.timeout)
            .build()
            .unwrap_or_default();
        Self {
            http,
            endpoint,
            json_rung: AtomicU8::new(RUNG_SCHEMA),
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Asks for a JSON value matching `schema`. Uses native tools when the endpoint's output
    /// mode says so and `tools` are given; otherwise climbs down the JSON ladder.
    pub async fn complete_json(
        &self,
        messages: &[Message],
        schema_name: &str,
        schema: &Value,
    ) -> Result<(Value, Completion), LlmError> {
        let start = Instant::now();
        let mut rung = self.json_rung.load(Ordering::Relaxed);
        loop {
            let format = match rung {
                RUNG_SCHEMA => Some(
                    json!({"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema, "strict": false}}),
                ),
                RUNG_OBJECT => Some(json!({"type": "json_object"})),
                _ => None,
            };
            let mut messages = messages.to_vec();
            if rung != RUNG_SCHEMA {
                // Without a schema the model must be told the shape.
                messages.push(Message::user(format!(
                    "Answer with one JSON value only, matching this JSON Schema:\n{schema}"
                )));
            }
            let mut body = self.body(&messages);
            if let Some(f) = format {
                body["response_format"] = f;
            }
            match self.send(body).await {
                Ok(mut c) => {
                    self.json_rung.store(rung, Ordering::Relaxed);
                    c.latency = start.elapsed();
                    c.messages = self.exchange(&messages, Some(&c));
                    return match extract_json(&c.text) {
                        Some(v) => Ok((v, c)),
                        None => Err(LlmError {
                            error: anyhow!("the model's reply is not JSON: {}", snippet(&c.text)),
                            latency: start.elapsed(),
                            messages: c.messages,
                        }),
                    };
                }
                // An endpoint that rejects the format (400/422) gets the next rung down.
                Err(e) if rung < RUNG_TEXT && is_format_rejection(&e) => rung += 1,
                Err(error) => {
                    return Err(LlmError {
                        error,
                        latency: start.elapsed(),
                        messages: self.exchange(&messages, None),
                    });
                }
            }
        }
    }

    /// A call with native tools; the model may answer with text or tool calls.
    pub async fn complete_with_tools(
        &self,
        messages: &[Message],
        tools: &[Value],
    ) -> Result<Completion, LlmError> {
        let start = Instant::now();
        let mut body = self.body(messages);
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.to_vec());
        }
        self.send(body)
            .await
            .map(|mut c| {
                c.latency = start.elapsed();
                c.messages = self.exchange(messages, Some(&c));
                c
            })
            .map_err(|error| LlmError {
                error,
                latency: start.elapsed(),
                messages: self.exchange(messages, None),
            })
    }

    /// A plain text completion.
    pub async fn complete_text(&self, messages: &[Message]) -> Result<Completion, LlmError> {
        self.complete_with_tools(messages, &[]).await
    }

    /// The messages sent and the reply (if one came), as chat messages; `None` unless the
    /// endpoint records messages.
    fn exchange(&self, messages: &[Message], reply: Option<&Completion>) -> Option<Value> {
        if !self.endpoint.record_messages {
            return None;
        }
        let mut all = wire(messages);
        if let Some(c) = reply {
            let mut assistant = json!({"role": "assistant", "content": c.text});
            if !c.tool_calls.is_empty() {
                assistant["tool_calls"] = c
                    .tool_calls
                    .iter()
                    .map(|(name, arguments)| json!({"name": name, "arguments": arguments}))
                    .collect();
            }
            all.push(assistant);
        }
        Some(Value::Array(all))
    }

    /// True when the endpoint is set to native tool calls.
    pub fn uses_tools(&self) -> bool {
        self.endpoint.output == OutputMode::Tools
    }

    fn body(&self, messages: &[Message]) -> Value {
        json!({
            "model": self.endpoint.model,
            "messages": wire(messages),
            "temperature": self.endpoint.temperature,
            "max_tokens": self.endpoint.max_tokens,
        })
    }

    /// One logical call: retried on 429, 5xx, timeouts and connection errors.
    async fn send(&self, body: Value) -> Result<Completion> {
        let url = format!("{}/chat/completions", self.endpoint.base_url);
        let prompt_chars: usize = body["messages"].as_array().map_or(0, |m| {
            m.iter()
                .map(|x| x["content"].as_str().map_or(0, str::len))
                .sum()
        });
        let mut attempt = 0u32;
        loop {
            let mut req = self.http.post(&url).json(&body);
            if let Some(key) = &self.endpoint.api_key {
                req = req.bearer_auth(key);
            }
            let outcome = req.send().await;
            let retry_after = match outcome {
                Ok(resp) if resp.status().is_success() => {
                    let bytes = resp
                        .bytes()
                        .await
                        .map_err(|e| anyhow!("reading the reply from {url}: {e}"))?;
                    return parse_reply(&bytes, prompt_chars);
                }
                Ok(resp) => {
                    let status = resp.status();
                    let header = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|s| s.trim().parse::<f64>().ok());
                    let text = resp.text().await.unwrap_or_default();
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    if !retryable || attempt >= self.endpoint.max_retries {
                        let tries = if retryable {
                            format!(" after {} attempts", attempt + 1)
                        } else {
                            String::new()
                        };
                        bail!(HttpStatus {
                            status: status.as_u16(),
                            message: format!(
                                "{url} answered HTTP {status}{tries}: {}",
                                snippet(&text)
                            )
                        });
                    }
                    if let Some(secs) = header
                        && Duration::from_secs_f64(secs.max(0.0)) > MAX_RETRY_AFTER
                    {
                        bail!("{url} asked to retry after {secs:.0}s (HTTP {status}); giving up");
                    }
                    header.map(|s| Duration::from_secs_f64(s.max(0.0)))
                }
                Err(e) => {
                    if attempt >= self.endpoint.max_retries
                        || !(e.is_timeout() || e.is_connect() || e.is_request())
                    {
                        let kind = if e.is_timeout() {
                            "timed out"
                        } else {
                            "failed"
                        };
                        bail!(
                            "request to {url} {kind} after {} attempts: {e}",
                            attempt + 1
                        );
                    }
                    None
                }
            };
            let backoff = retry_after.unwrap_or_else(|| {
                let base = BASE_BACKOFF * 2u32.pow(attempt.min(6));
                base + base.mul_f64(fastrand::f64() * 0.5)
            });
            tracing::warn!(%url, attempt, ?backoff, "LLM call failed; retrying");
            tokio::time::sleep(backoff).await;
            attempt += 1;
        }
    }
}

/// An HTTP error status, kept so the JSON ladder can tell a rejected format from others.
#[derive(Debug)]
struct HttpStatus {
    status: u16,
    message: String,
}

impl std::fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HttpStatus {}

fn is_format_rejection(e: &anyhow::Error) -> bool {
    e.downcast_ref::<HttpStatus>()
        .is_some_and(|s| matches!(s.status, 400 | 422))
}

fn parse_reply(bytes: &[u8], prompt_chars: usize) -> Result<Completion> {
    let v: Value = serde_json::from_slice(bytes).map_err(|_| {
        anyhow!(
            "the endpoint's reply is not JSON: {}",
            snippet(&String::from_utf8_lossy(bytes))
        )
    })?;
    let message = v["choices"][0]["message"].as_object().ok_or_else(|| {
        anyhow!(
            "the endpoint's reply has no choices[0].message: {}",
            snippet(&v.to_string())
        )
    })?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let name = c["function"]["name"].as_str()?.to_string();
            // Arguments arrive as a JSON string by the spec; some servers send an object.
            let args = match &c["function"]["arguments"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
                other => other.clone(),
            };
            Some((name, args))
        })
        .collect();
    let usage = &v["usage"];
    let (prompt_tokens, completion_tokens, estimated) = match (
        usage["prompt_tokens"].as_u64(),
        usage["completion_tokens"].as_u64(),
    ) {
        (Some(p), Some(c)) => (p, c, false),
        _ => (
            prompt_chars.div_ceil(4) as u64,
            text.len().div_ceil(4) as u64,
            true,
        ),
    };
    Ok(Completion {
        text,
        tool_calls,
        prompt_tokens,
        completion_tokens,
        estimated,
        latency: Duration::ZERO,
        messages: None,
    })
}

/// Messages as the chat-completions API (and a recorded `llm_call`) writes them.
fn wire(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect()
}

fn snippet(s: &str) -> String {
    let s: String = s.chars().take(300).collect();
    s.replace(['\n', '\r'], " ")
}
