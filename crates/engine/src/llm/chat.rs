//! The chat-model port: one chat-completions call, typed. The HTTP client implements it for
//! real endpoints; tests implement it with scripted replies. Everything above (the JSON
//! ladder, tools mode, recording messages) is a layer over it: [`super::client::LlmClient`].
//!
//! The **chat-model port** (`ChatModel`: one typed call), `Completion`, `LlmError`
//! (with the HTTP status, its latency and, when recorded, the messages).

use std::time::Duration;

use futures::future::BoxFuture;

use super::chat_wire::{ChatRequest, ToolCall};
use super::endpoints::Endpoint;

/// One call to a chat model.
pub trait ChatModel: Send + Sync {
    /// The endpoint's settings (model, output mode, limits).
    fn endpoint(&self) -> &Endpoint;
    /// Sends `request` (retrying as the model sees fit) and returns the reply.
    fn chat<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Completion, LlmError>>;
}

/// What came back, with what it cost.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The assistant's text.
    pub text: String,
    /// Native tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// The endpoint gave no usage; counts are estimates (4 characters a token).
    pub estimated: bool,
    /// Wall time including retries.
    pub latency: Duration,
    /// The messages sent and the reply, when the endpoint records them.
    pub messages: Option<serde_json::Value>,
    /// The reply stopped at the token cap (`finish_reason: "length"`), so it may be incomplete.
    pub cut: bool,
    /// The mean log-probability of the reply's tokens, when the endpoint gave them
    /// ([`crate::llm::chat_wire::ChoiceLogprobs::mean`]).
    pub mean_logprob: Option<f64>,
}

impl Completion {
    /// Prompt and completion tokens together.
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// A failed call with what it cost, so the caller can still record it.
#[derive(Debug)]
pub struct LlmError {
    /// Why.
    pub error: anyhow::Error,
    /// The HTTP status the endpoint answered with, when it answered with an error status.
    pub status: Option<u16>,
    /// Wall time spent.
    pub latency: Duration,
    /// The messages sent (and a reply that could not be used), when the endpoint records them.
    pub messages: Option<serde_json::Value>,
    /// A reply that came back but could not be used (not JSON, no function call): the endpoint
    /// generated it, so its tokens were spent and are counted.
    pub reply: Option<Box<Completion>>,
}

/// How endpoints say a request was longer than their context: MCP-Bench's phrases
/// (`_is_token_limit_error`), and llama.cpp's and vLLM's.
const CONTEXT_OVERFLOW: [&str; 8] = [
    "maximum context length",
    "context length",
    "token limit",
    "too many tokens",
    "exceeds maximum",
    "requested too many tokens",
    "context size",
    "context window",
];

impl LlmError {
    /// A failure without a status.
    pub fn new(error: anyhow::Error, latency: Duration) -> Self {
        Self {
            error,
            status: None,
            latency,
            messages: None,
            reply: None,
        }
    }

    /// A reply that came back and could not be used, with why.
    pub fn unusable(error: anyhow::Error, reply: Completion) -> Self {
        Self {
            messages: reply.messages.clone(),
            latency: reply.latency,
            reply: Some(Box::new(reply)),
            ..Self::new(error, Default::default())
        }
    }

    /// Tokens the endpoint generated before the call failed (0 when nothing came back).
    pub fn tokens(&self) -> u64 {
        let (prompt, completion, _) = self.spent();
        prompt + completion
    }

    /// Prompt tokens, completion tokens and whether they were estimated, of what the endpoint
    /// generated before the call failed (0 when nothing came back).
    pub fn spent(&self) -> (u64, u64, bool) {
        self.reply.as_ref().map_or((0, 0, false), |c| {
            (c.prompt_tokens, c.completion_tokens, c.estimated)
        })
    }

    /// True when the endpoint refused the request's shape (400 or 422): the JSON ladder then
    /// tries the next output mode down.
    pub fn is_format_rejection(&self) -> bool {
        matches!(self.status, Some(400 | 422)) && !self.is_context_overflow()
    }

    /// The endpoint said the request was longer than its context (a 400 like a refused
    /// format, which must not send the JSON ladder down a rung).
    pub fn is_context_overflow(&self) -> bool {
        let message = self.to_string().to_lowercase();
        CONTEXT_OVERFLOW.iter().any(|p| message.contains(p))
    }
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for LlmError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_overflow_is_not_a_refused_format() {
        let with = |message: &str| LlmError {
            status: Some(400),
            ..LlmError::new(anyhow::anyhow!("HTTP 400: {message}"), Duration::ZERO)
        };
        let overflow = with("This model's maximum context length is 8192 tokens");
        assert!(overflow.is_context_overflow() && !overflow.is_format_rejection());
        let llama = with("the request exceeds the available context size");
        assert!(llama.is_context_overflow());
        let format = with("response_format json_schema is not supported");
        assert!(format.is_format_rejection() && !format.is_context_overflow());
    }
}
