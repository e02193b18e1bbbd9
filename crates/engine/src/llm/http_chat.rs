//! The chat-model port over HTTP: an OpenAI-compatible chat-completions endpoint (vLLM,
//! Ollama, llama.cpp, OpenAI, OpenRouter…) through reqwest, retried with exponential backoff
//! and jitter on 429, 5xx and timeouts, honouring `Retry-After`; usage estimated when absent.
//!
//! The port over reqwest: bounded retries with backoff and jitter on 429, 5xx and
//! timeouts, `Retry-After` honoured (absurd values give up instead of waiting); usage estimated
//! and marked when absent; reply bodies capped at 16 MiB, error bodies read to 64 KiB, reply
//! text at 1 MiB; the chat path appended to the base URL's path (never its query), and the URL
//! named in messages without userinfo or query. TLS is rustls with
//! ring (no C crypto library to build); `install_tls_provider` picks it once per process.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use futures::future::BoxFuture;

use super::chat::{ChatModel, Completion, LlmError};
use super::chat_wire::{ChatRequest, ChatResponse, ChoiceLogprobs};
use super::endpoints::Endpoint;

/// Longest wait a `Retry-After` may ask for before we give up on the endpoint.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// First backoff; doubled each retry, plus up to 50% jitter.
const BASE_BACKOFF: Duration = Duration::from_millis(500);
/// Largest reply body read; a longer one is refused (a 260 MB reply once became a 272 MB
/// trajectory line that no reader accepts).
pub const MAX_REPLY_BYTES: usize = 16 << 20;
/// Longest reply text kept, as tool results are capped; the rest is cut with a marker.
pub const MAX_REPLY_TEXT: usize = 1 << 20;
/// Most of an error reply's body read (for its message): an endpoint that answers 500 with
/// 300 MB is read no further.
const MAX_ERROR_BODY: usize = 64 << 10;

/// A real endpoint.
#[derive(Debug)]
pub struct HttpChat {
    http: reqwest::Client,
    endpoint: Endpoint,
}

/// rustls needs its crypto provider chosen once per process (ring: see Cargo.toml); a second
/// install is a no-op.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl HttpChat {
    /// A client for `endpoint`.
    pub fn new(endpoint: Endpoint) -> Self {
        install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(endpoint.timeout)
            .build()
            .unwrap_or_default();
        Self { http, endpoint }
    }

    /// One logical call: retried on 429, 5xx, timeouts and connection errors.
    async fn send(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let start = Instant::now();
        let fail = |error: anyhow::Error, status: Option<u16>| LlmError {
            status,
            ..LlmError::new(error, start.elapsed())
        };
        if self.endpoint.base_url.is_empty() {
            // Nothing is sent anywhere: there is no address, and no default public one.
            return Err(fail(
                anyhow!(
                    "no endpoint address: set base_url in the role's [roles.NAME] table or in \
                     [default] of the --config file, or OPENAI_BASE_URL"
                ),
                None,
            ));
        }
        let (url, shown) = match chat_url(&self.endpoint.base_url) {
            Ok(url) => url,
            Err(e) => return Err(fail(e, None)),
        };
        // Messages and logs name the endpoint without its credentials.
        let url = url.as_str();
        let shown = shown.as_str();
        let prompt_chars: usize = request.messages.iter().map(|m| m.content_str().len()).sum();
        let mut attempt = 0u32;
        loop {
            let mut req = self.http.post(url).json(request);
            if let Some(key) = &self.endpoint.api_key {
                req = req.bearer_auth(key);
            }
            let retry_after = match req.send().await {
                Ok(mut resp) if resp.status().is_success() => {
                    let mut bytes = Vec::new();
                    while let Some(chunk) = resp.chunk().await.map_err(|e| {
                        let e = e.without_url();
                        fail(anyhow!("reading the reply from {shown}: {e}"), None)
                    })? {
                        if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
                            return Err(fail(
                                anyhow!(
                                    "{shown} sent a reply over {} MiB; refused",
                                    MAX_REPLY_BYTES >> 20
                                ),
                                None,
                            ));
                        }
                        bytes.extend_from_slice(&chunk);
                    }
                    return parse_reply(&bytes, prompt_chars).map_err(|e| fail(e, None));
                }
                Ok(resp) => {
                    let status = resp.status();
                    let retry_after = resp
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|s| s.trim().parse::<f64>().ok());
                    let text = read_capped(resp, MAX_ERROR_BODY).await;
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    if !retryable || attempt >= self.endpoint.max_retries {
                        let tries = if retryable {
                            format!(" after {} attempts", attempt + 1)
                        } else {
                            String::new()
                        };
                        return Err(fail(
                            anyhow!("{shown} answered HTTP {status}{tries}: {}", snippet(&text)),
                            Some(status.as_u16()),
                        ));
                    }
                    match retry_after {
                        None => None,
                        // `inf`, `1e20` or a minute and more: not worth waiting for.
                        Some(secs) => match Duration::try_from_secs_f64(secs.max(0.0)) {
                            Ok(wait) if wait <= MAX_RETRY_AFTER => Some(wait),
                            _ => {
                                return Err(fail(
                                    anyhow!(
                                        "{shown} asked to retry after {secs}s (HTTP {status}); giving up"
                                    ),
                                    Some(status.as_u16()),
                                ));
                            }
                        },
                    }
                }
                Err(e) => {
                    let e = e.without_url();
                    if attempt >= self.endpoint.max_retries
                        || !(e.is_timeout() || e.is_connect() || e.is_request())
                    {
                        let tries = attempt + 1;
                        let why = if e.is_connect() {
                            // reqwest says only "error sending request"; the cause is below.
                            format!(
                                "cannot connect to {shown} ({}) after {tries} attempts; the \
                                 address is base_url in [default] or the role's [roles.NAME] \
                                 of the --config file, or OPENAI_BASE_URL",
                                root_cause(&e)
                            )
                        } else if e.is_timeout() {
                            format!("request to {shown} timed out after {tries} attempts")
                        } else {
                            format!(
                                "request to {shown} failed after {tries} attempts: {}",
                                root_cause(&e)
                            )
                        };
                        return Err(fail(anyhow!(why), None));
                    }
                    None
                }
            };
            let backoff = retry_after.unwrap_or_else(|| {
                let base = BASE_BACKOFF * 2u32.pow(attempt.min(6));
                base + base.mul_f64(fastrand::f64() * 0.5)
            });
            tracing::warn!(url = %shown, attempt, ?backoff, "LLM call failed; retrying");
            tokio::time::sleep(backoff).await;
            attempt += 1;
        }
    }
}

impl ChatModel for HttpChat {
    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.send(request))
    }
}

/// The innermost cause of an error (`Connection refused (os error 111)` under reqwest's
/// "error sending request"), lower-cased at its head as it follows other words.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let text = cause.to_string();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

/// The chat-completions URL of an endpoint's base URL, its path appended to the base's path
/// (never to its query: `…/v1?key=K` gives `…/v1/chat/completions?key=K`), and the same
/// without credentials (userinfo, query) for messages.
fn chat_url(base: &str) -> anyhow::Result<(reqwest::Url, String)> {
    let mut url = reqwest::Url::parse(base).map_err(|e| {
        // The text itself may hold a key: say what is wrong, not what it says.
        anyhow!("the endpoint's base_url is not a URL ({e})")
    })?;
    url.path_segments_mut()
        .map_err(|()| anyhow!("the endpoint's base_url cannot take a path"))?
        .pop_if_empty()
        .extend(["chat", "completions"]);
    // Named in messages as the one recogniser shows a URL: userinfo and query values hidden.
    let shown = cosmos_trajectory::redact::url_shown(url.as_str()).0;
    Ok((url, shown))
}

/// At most `cap` bytes of a reply's body, as text: the rest is never read.
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < cap {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let room = cap - bytes.len();
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn parse_reply(bytes: &[u8], prompt_chars: usize) -> anyhow::Result<Completion> {
    let reply: ChatResponse = serde_json::from_slice(bytes).map_err(|e| {
        anyhow!(
            "the endpoint's reply is not a chat completion ({e}): {}",
            snippet(&String::from_utf8_lossy(bytes))
        )
    })?;
    let choice = reply
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("the endpoint's reply has no choices"))?;
    let (message, cut) = (
        choice.message,
        choice.finish_reason.as_deref() == Some("length"),
    );
    let mean_logprob = choice.logprobs.as_ref().and_then(ChoiceLogprobs::mean);
    let mut text = message.content.unwrap_or_default();
    if text.len() > MAX_REPLY_TEXT {
        let mut end = MAX_REPLY_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let cut = text.len() - end;
        text.truncate(end);
        text.push_str(&format!(
            "\n[cut by mcp-cosmos: {cut} more bytes of the model's reply]"
        ));
    }
    let (prompt_tokens, completion_tokens, estimated) = match reply.usage {
        Some(super::chat_wire::Usage {
            prompt_tokens: Some(p),
            completion_tokens: Some(c),
        }) => (p, c, false),
        _ => (
            prompt_chars.div_ceil(4) as u64,
            text.len().div_ceil(4) as u64,
            true,
        ),
    };
    Ok(Completion {
        text,
        tool_calls: message.tool_calls,
        prompt_tokens,
        completion_tokens,
        estimated,
        latency: Duration::ZERO,
        messages: None,
        cut,
        mean_logprob,
    })
}

/// The start of a long text, on one line, for error messages.
pub fn snippet(s: &str) -> String {
    let s: String = s.chars().take(300).collect();
    s.replace(['\n', '\r'], " ")
}
