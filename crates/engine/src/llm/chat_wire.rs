//! The OpenAI chat-completions wire format, typed: what we send and what we read back.
//! Only the fields mcp-cosmos uses; unknown fields in replies are ignored.
//!
//! The OpenAI chat-completions wire format, typed (messages with tool calls and tool
//! results, `response_format`, functions, `tool_choice`, `logprobs`, replies, usage; a reply's
//! token log-probabilities reduced to their mean by `ChoiceLogprobs::mean`).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// Instructions.
    System,
    /// The user (or the agent speaking for it).
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering an assistant's tool call.
    Tool,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Speaker,
    /// The text (an assistant that only calls tools may have none).
    #[serde(default)]
    pub content: Option<String>,
    /// An assistant's tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn text(role: Speaker, content: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::text(Speaker::System, content)
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::text(Speaker::User, content)
    }
    /// An assistant message that calls tools.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Self {
            role: Speaker::Assistant,
            content: None,
            tool_calls: calls,
            tool_call_id: None,
        }
    }
    /// A tool's result for the call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(id.into()),
            ..Self::text(Speaker::Tool, content)
        }
    }
    /// The text, or "" when there is none.
    pub fn content_str(&self) -> &str {
        self.content.as_deref().unwrap_or_default()
    }
}

/// A tool call, as an assistant message carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which the `tool` message answering it repeats.
    #[serde(default)]
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".into()
}

impl ToolCall {
    /// A call of `name` with JSON `arguments`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        Self {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.to_string(),
            },
        }
    }

    /// The arguments parsed; text that is not JSON comes back as a JSON string.
    pub fn arguments(&self) -> Value {
        serde_json::from_str(&self.function.arguments)
            .unwrap_or_else(|_| Value::String(self.function.arguments.clone()))
    }
}

/// A function call's name and arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// Arguments as JSON text (the spec); an endpoint that sends an object is accepted too.
    #[serde(default, deserialize_with = "json_text")]
    pub arguments: String,
}

fn json_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// A function offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function.
    pub function: FunctionSpec,
}

/// A function's name, description and JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionSpec {
    /// Its name (`[A-Za-z0-9_-]`, at most 64 characters).
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
}

impl ToolSpec {
    /// A function.
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> Self {
        Self {
            kind: "function",
            function: FunctionSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }
}

/// `response_format`: the JSON-output modes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Output that follows a JSON Schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: JsonSchemaFormat,
    },
    /// Any JSON object.
    JsonObject,
}

/// The schema of [`ResponseFormat::JsonSchema`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonSchemaFormat {
    /// A name for it.
    pub name: String,
    /// The schema.
    pub schema: Value,
    /// Strict mode (off: small local servers reject strict schemas with optional fields).
    pub strict: bool,
}

/// `tool_choice`: make the model call one named function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolChoice {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Which.
    pub function: ToolChoiceName,
}

/// The function [`ToolChoice`] names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolChoiceName {
    /// Its name.
    pub name: String,
}

impl ToolChoice {
    /// Call `name`.
    pub fn function(name: impl Into<String>) -> Self {
        Self {
            kind: "function",
            function: ToolChoiceName { name: name.into() },
        }
    }
}

/// A request body. `model`, `temperature` and `max_tokens` come from the endpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// Model name.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Sampling temperature.
    pub temperature: f64,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// JSON output mode, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Functions the model may call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// A function the model must call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Ask for the reply's token log-probabilities.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub logprobs: bool,
}

/// A reply body.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatResponse {
    /// The choices; we read the first.
    pub choices: Vec<Choice>,
    /// Token usage, when the endpoint reports it.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// One choice of a reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Choice {
    /// The assistant's message.
    pub message: ReplyMessage,
    /// Why generation stopped (`stop`, `length`, `tool_calls`), when the endpoint says.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// The reply's token log-probabilities, when asked for and given.
    #[serde(default)]
    pub logprobs: Option<ChoiceLogprobs>,
}

/// `choices[].logprobs`: one entry per token of the reply's content.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChoiceLogprobs {
    /// The content's tokens (absent or `null` for a reply with none).
    #[serde(default)]
    pub content: Option<Vec<TokenLogprob>>,
}

/// One token's log-probability.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TokenLogprob {
    /// Natural log of its probability.
    pub logprob: f64,
}

impl ChoiceLogprobs {
    /// The mean log-probability of the content's tokens; `None` without tokens or with one
    /// that is not a finite number at most 0.
    pub fn mean(&self) -> Option<f64> {
        let tokens = self.content.as_deref().filter(|t| !t.is_empty())?;
        let valid = tokens
            .iter()
            .all(|t| t.logprob.is_finite() && t.logprob <= 0.0);
        valid.then(|| tokens.iter().map(|t| t.logprob).sum::<f64>() / tokens.len() as f64)
    }
}

/// The assistant's message in a reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ReplyMessage {
    /// Its text.
    #[serde(default)]
    pub content: Option<String>,
    /// Its tool calls.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub tool_calls: Vec<ToolCall>,
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ToolCall>, D::Error> {
    Ok(Option::<Vec<ToolCall>>::deserialize(d)?.unwrap_or_default())
}

/// Token usage.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_log_probability_is_of_valid_tokens_only() {
        let of = |lps: &[f64]| ChoiceLogprobs {
            content: Some(
                lps.iter()
                    .map(|&logprob| TokenLogprob { logprob })
                    .collect(),
            ),
        };
        assert_eq!(of(&[-0.1, -0.3]).mean(), Some(-0.2));
        assert_eq!(of(&[]).mean(), None);
        assert_eq!(of(&[-0.1, 0.5]).mean(), None, "a probability above 1");
        assert_eq!(of(&[f64::NEG_INFINITY]).mean(), None);
        assert_eq!(ChoiceLogprobs { content: None }.mean(), None);
        let reply: ChatResponse = serde_json::from_str(
            r#"{"choices":[{"message":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":-0.5,"top_logprobs":[]}]}}]}"#,
        )
        .unwrap();
        assert_eq!(
            reply.choices[0].logprobs.as_ref().unwrap().mean(),
            Some(-0.5)
        );
        let without: ChatResponse =
            serde_json::from_str(r#"{"choices":[{"message":{"content":"x"},"logprobs":null}]}"#)
                .unwrap();
        assert!(without.choices[0].logprobs.is_none());
    }
    use serde_json::json;

    #[test]
    fn a_conversation_with_tool_calls_has_the_wire_shape() {
        let messages = vec![
            Message::user("hi"),
            Message::tool_calls(vec![ToolCall::new("call_1", "f", &json!({"a": 1}))]),
            Message::tool_result("call_1", "ok"),
        ];
        assert_eq!(
            serde_json::to_value(&messages).unwrap(),
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "content": "ok", "tool_call_id": "call_1"}
            ])
        );
    }

    #[test]
    fn replies_accept_object_arguments_and_null_tool_calls() {
        let r: ChatResponse = serde_json::from_value(json!({"choices": [{"message": {"content": "x", "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": {"a": 1}}}]}}]})).unwrap();
        assert_eq!(
            r.choices[0].message.tool_calls[0].arguments(),
            json!({"a": 1})
        );
        let r: ChatResponse = serde_json::from_value(json!({"choices": [{"message": {"content": "x", "tool_calls": null}}], "usage": {"prompt_tokens": 3}})).unwrap();
        assert!(r.choices[0].message.tool_calls.is_empty());
        assert_eq!(r.usage.unwrap().completion_tokens, None);
        let call = ToolCall::new("1", "f", &json!(null));
        assert_eq!(call.arguments(), Value::Null);
        let mut bad = call.clone();
        bad.function.arguments = "not json".into();
        assert_eq!(bad.arguments(), json!("not json"));
    }
}
