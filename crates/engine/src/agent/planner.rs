//! The planner role: given the request, the tools and the steps so far, the next action or
//! up to K candidates (a tool call or finish). Asked for JSON with the tool names as an enum
//! (what makes small local models usable), or through native tool calls when the endpoint is
//! set to them. A reply that is no usable decision is a [`Rejection`], recorded as such and
//! never taken as a finish.
//!
//! Asks for the next action or K candidates in the role's mode; the decision
//! schema (`decision_schema`: one `anyOf` branch per legal decision, each tool's own input schema
//! made grammar-safe by `grammar_schema`; `flat_decision_schema` when the endpoint refuses it,
//! through `LlmClient::complete_json_or`); `FunctionNames` (injective, ≤ 64 characters,
//! collisions refused at start). Malformed replies, and replies that are not JSON or were cut,
//! become `Rejection`s (`decision_rejected` events), never a finish.

use serde_json::{Value, json};

use super::prompt::{self, Turn};
use crate::llm::chat::{Completion, LlmError};
use crate::llm::chat_wire::ToolCall;
use crate::llm::client::LlmClient;
use cosmos_trajectory::event::{Action, DecisionProblem, EventBody, ToolInfo};

/// Longest part of an unreadable reply kept in its `decision_rejected`.
const REJECTED_REPLY_CHARS: usize = 4_000;

use super::function_names::FunctionNames;

/// A planner reply that is no usable decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// What is wrong.
    pub problem: DecisionProblem,
    /// The same, in words (told to the planner on its next turn).
    pub detail: String,
    /// The reply as given.
    pub reply: Value,
}

impl Rejection {
    /// A rejection of `reply`.
    pub fn new(problem: DecisionProblem, detail: impl Into<String>, reply: Value) -> Self {
        Self {
            problem,
            detail: detail.into(),
            reply,
        }
    }

    /// Its `decision_rejected` event.
    pub fn event(&self) -> EventBody {
        EventBody::DecisionRejected {
            problem: self.problem,
            detail: self.detail.clone(),
            reply: self.reply.clone(),
        }
    }
}

/// One candidate of a reply: an action, or why the reply gave none.
pub type Candidate = std::result::Result<Action, Rejection>;

/// What the planner answered, and what the call cost.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The candidates, best first (one for a decision).
    pub candidates: Vec<Candidate>,
    /// The LLM call.
    pub completion: Completion,
    /// The endpoint refused the per-tool decision schema on this call: from now on it gets
    /// the flat one.
    pub refused_schema: bool,
}

impl Reply {
    /// The event that records a refused per-tool schema, when this call found it refused.
    pub fn fallback_event(&self) -> Option<EventBody> {
        self.refused_schema.then(|| EventBody::Error {
            source: cosmos_trajectory::event::ErrorSource::Llm,
            name: Some("planner".into()),
            message: "the endpoint refused the per-tool decision schema; decisions are asked \
                      with the flat schema (tool names only) from here on"
                .into(),
            stderr_tail: None,
            step: None,
        })
    }
}

/// Asks the planner for `turn.k` candidates (1: the next action), in the endpoint's mode.
pub async fn ask(
    client: &LlmClient,
    tools: &[ToolInfo],
    functions: &FunctionNames,
    turn: &Turn<'_>,
) -> std::result::Result<Reply, LlmError> {
    if client.uses_tools() {
        let messages = prompt::planner_conversation(functions, turn);
        let completion = client
            .complete_with_tools(messages, functions.specs(tools))
            .await?;
        let mut candidates: Vec<Candidate> = completion
            .tool_calls
            .iter()
            .take(turn.k.max(1))
            .map(|call| parse_tool_call(call, functions))
            .collect();
        if candidates.is_empty() {
            // A reply in text is the answer, as with every function-calling client.
            candidates.push(Ok(Action::Finish {
                answer: Some(completion.text.clone()).filter(|t| !t.trim().is_empty()),
            }));
        }
        return Ok(Reply {
            candidates,
            completion,
            refused_schema: false,
        });
    }
    let refused_before = client.refused_rich_schema();
    let messages = prompt::planner_json(tools, turn);
    let schema = reply_schema(decision_schema(tools), turn.k);
    let flat = reply_schema(flat_decision_schema(tools), turn.k);
    let name = if turn.k > 1 {
        "candidates"
    } else {
        "next_action"
    };
    let (value, completion) = match client
        .complete_json_or(&messages, name, &schema, &flat)
        .await
    {
        Ok(answered) => answered,
        // A reply that came back but is no JSON (or was cut at the token cap) is a rejected
        // decision, told to the planner on its next try; an endpoint failure is an error.
        Err(e) if e.reply.is_some() => {
            let completion = *e.reply.clone().expect("checked");
            let rejection = unusable(&e, &completion);
            return Ok(Reply {
                candidates: vec![Err(rejection)],
                completion,
                refused_schema: !refused_before && client.refused_rich_schema(),
            });
        }
        Err(e) => return Err(e),
    };
    // A model asked for a list that answers with one action still counts.
    let items: Vec<Value> = match value.get("candidates").and_then(Value::as_array) {
        Some(list) if turn.k > 1 => list.clone(),
        _ => vec![value.clone()],
    };
    if items.is_empty() {
        return Ok(Reply {
            candidates: vec![Err(Rejection::new(
                DecisionProblem::NoAction,
                "the reply proposed no candidate",
                value,
            ))],
            completion,
            refused_schema: !refused_before && client.refused_rich_schema(),
        });
    }
    Ok(Reply {
        candidates: items
            .iter()
            .take(turn.k.max(1))
            .map(parse_decision)
            .collect(),
        completion,
        refused_schema: !refused_before && client.refused_rich_schema(),
    })
}

/// The JSON schema of a decision whose branches are the legal decisions: `finish` with an
/// answer, or `call` with one tool's exact name and that tool's own input schema for its
/// arguments. A decoder that enforces it (llama.cpp, vLLM, Ollama) can only produce decisions
/// that parse to a call of a real tool with arguments its schema admits (within the keywords
/// `grammar_schema` keeps).
pub fn decision_schema(tools: &[ToolInfo]) -> Value {
    let mut branches = vec![json!({
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "action": {"enum": ["finish"]},
            "answer": {"type": "string"}
        },
        "required": ["action", "answer"]
    })];
    branches.extend(tools.iter().map(|t| {
        let root = t.input_schema.value();
        let arguments = match grammar_schema(root, root, 0) {
            Value::Object(mut o) => {
                // Arguments are always an object, whatever the tool's schema leaves open.
                o.entry("type").or_insert_with(|| json!("object"));
                Value::Object(o)
            }
            _ => json!({"type": "object"}),
        };
        json!({
            "type": "object",
            "properties": {
                "thought": {"type": "string"},
                "action": {"enum": ["call"]},
                "tool": {"enum": [t.name]},
                "arguments": arguments
            },
            "required": ["action", "tool", "arguments"]
        })
    }));
    json!({"anyOf": branches})
}

/// The flat schema of a decision (tool names as an enum, arguments any object): what is sent
/// when an endpoint refuses [`decision_schema`].
pub fn flat_decision_schema(tools: &[ToolInfo]) -> Value {
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "action": {"type": "string", "enum": ["call", "finish"]},
            "tool": {"type": "string", "enum": names},
            "arguments": {"type": "object"},
            "answer": {"type": "string"}
        },
        "required": ["action"]
    })
}

/// The schema of a reply of up to `k` decisions (one decision when `k` is 1).
fn reply_schema(decision: Value, k: usize) -> Value {
    if k > 1 {
        json!({
            "type": "object",
            "properties": {"candidates": {"type": "array", "items": decision, "minItems": 1, "maxItems": k}},
            "required": ["candidates"]
        })
    } else {
        decision
    }
}

/// Keywords that constrain values and that the schema-to-grammar converters of llama.cpp and
/// vLLM (xgrammar, outlines) read; the rest (titles, descriptions, defaults, `not`, `if`…) is
/// dropped, which only widens what a decoder admits.
const GRAMMAR_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "required",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
];

/// Deepest `$ref` chain inlined; deeper (a recursive schema) admits any value.
const MAX_REF_DEPTH: usize = 8;

/// A tool's input schema as a decoder's grammar can hold it inside a decision: local `$ref`s
/// inlined (the decision is a new root, so `#/$defs/…` would point nowhere), `oneOf` as
/// `anyOf`, only [`GRAMMAR_KEYWORDS`] and the structural keywords kept.
pub fn grammar_schema(schema: &Value, root: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        // `true`, `false` and anything malformed: any value (a broken schema is the server's).
        return if *schema == Value::Bool(false) {
            schema.clone()
        } else {
            json!({})
        };
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        return match target {
            Some(target) if depth < MAX_REF_DEPTH => grammar_schema(target, root, depth + 1),
            _ => json!({}),
        };
    }
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        let kept = match key.as_str() {
            k if GRAMMAR_KEYWORDS.contains(&k) => value.clone(),
            "properties" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, p)| (name.clone(), grammar_schema(p, root, depth)))
                        .collect(),
                ),
                _ => continue,
            },
            "items" | "additionalProperties" => match value {
                Value::Bool(_) => value.clone(),
                _ => grammar_schema(value, root, depth),
            },
            "prefixItems" | "allOf" => match value {
                Value::Array(list) => list
                    .iter()
                    .map(|s| grammar_schema(s, root, depth))
                    .collect(),
                _ => continue,
            },
            "anyOf" | "oneOf" => match value {
                Value::Array(list) => {
                    let list: Vec<Value> = list
                        .iter()
                        .map(|s| grammar_schema(s, root, depth))
                        .collect();
                    out.insert("anyOf".into(), Value::Array(list));
                    continue;
                }
                _ => continue,
            },
            _ => continue,
        };
        out.insert(key.clone(), kept);
    }
    Value::Object(out)
}

/// The rejection of a reply that could not be read as JSON.
fn unusable(error: &LlmError, reply: &Completion) -> Rejection {
    // The client's error says what went wrong; the planner is told how to mend it.
    let (problem, detail) = if reply.cut {
        (DecisionProblem::Cut, format!("{error}; answer shorter"))
    } else {
        (DecisionProblem::NotJson, format!("{error}"))
    };
    // The reply as text, its start only: the detail says what went wrong.
    let text: String = reply.text.chars().take(REJECTED_REPLY_CHARS).collect();
    Rejection::new(problem, detail, Value::String(text))
}

/// Reads a decision out of the model's JSON. Lenient where the intent is clear (arguments
/// sent as a JSON string, an action implied by a tool or an answer), never where it is not.
pub fn parse_decision(value: &Value) -> Candidate {
    let reject = |problem, detail: &str| Err(Rejection::new(problem, detail, value.clone()));
    let tool = value["tool"].as_str().filter(|t| !t.trim().is_empty());
    let action = value["action"].as_str().unwrap_or_default();
    match (action, tool) {
        ("call", Some(tool)) | ("", Some(tool)) => match arguments(&value["arguments"]) {
            Some(arguments) => Ok(Action::ToolCall {
                tool: tool.to_string(),
                arguments,
            }),
            None => reject(
                DecisionProblem::BadArguments,
                "the arguments are not a JSON object",
            ),
        },
        ("call", None) => reject(
            DecisionProblem::NoTool,
            "\"action\": \"call\" names no tool",
        ),
        ("finish", _) => Ok(Action::Finish {
            answer: value["answer"].as_str().map(str::to_string),
        }),
        ("", None) if value["answer"].is_string() => Ok(Action::Finish {
            answer: value["answer"].as_str().map(str::to_string),
        }),
        _ => reject(
            DecisionProblem::NoAction,
            "the reply is neither a call nor a finish",
        ),
    }
}

/// A native tool call as an action.
fn parse_tool_call(call: &ToolCall, functions: &FunctionNames) -> Candidate {
    let reply = serde_json::to_value(call).unwrap_or(Value::Null);
    // A function no tool has is a call of an unknown tool, as a JSON decision naming one is:
    // ReAct makes it (and it fails, as in MCP-Bench), a rehearsal's validator rejects it.
    let tool = functions
        .tool(&call.function.name)
        .unwrap_or(&call.function.name);
    match arguments(&call.arguments()) {
        Some(arguments) => Ok(Action::ToolCall {
            tool: tool.to_string(),
            arguments,
        }),
        None => Err(Rejection::new(
            DecisionProblem::BadArguments,
            "the arguments are not a JSON object",
            reply,
        )),
    }
}

/// Arguments as an object: absent means none; a JSON string holding an object is accepted
/// (some models send them so); anything else is not arguments.
fn arguments(value: &Value) -> Option<Value> {
    match value {
        Value::Null => Some(json!({})),
        Value::Object(_) => Some(value.clone()),
        Value::String(s) if s.trim().is_empty() => Some(json!({})),
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::function_names::MAX_FUNCTION_NAME;

    fn tool(name: &str) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: String::new(),
            input_schema: cosmos_trajectory::event::ToolSchema::new(json!({})),
            ..Default::default()
        }
    }

    #[test]
    fn decisions_parse_leniently_where_the_intent_is_clear() {
        assert_eq!(
            parse_decision(&json!({"action": "call", "tool": "t:x", "arguments": "{\"a\": 1}"})),
            Ok(Action::ToolCall {
                tool: "t:x".into(),
                arguments: json!({"a": 1})
            })
        );
        assert_eq!(
            parse_decision(&json!({"thought": "done", "action": "finish", "answer": "42"})),
            Ok(Action::Finish {
                answer: Some("42".into())
            })
        );
        assert_eq!(
            parse_decision(&json!({"answer": "42"})),
            Ok(Action::Finish {
                answer: Some("42".into())
            })
        );
    }

    #[test]
    fn malformed_decisions_are_rejections_never_a_finish() {
        let problem = |v: Value| parse_decision(&v).unwrap_err().problem;
        assert_eq!(problem(json!({"action": "call"})), DecisionProblem::NoTool);
        assert_eq!(
            problem(json!({"action": "call", "tool": ""})),
            DecisionProblem::NoTool
        );
        assert_eq!(
            problem(json!({"action": "call", "tool": "t:x", "arguments": [1]})),
            DecisionProblem::BadArguments
        );
        assert_eq!(
            problem(json!({"action": "call", "tool": "t:x", "arguments": "nope"})),
            DecisionProblem::BadArguments
        );
        assert_eq!(problem(json!({"thought": "hm"})), DecisionProblem::NoAction);
        let r = parse_decision(&json!({"action": "call"})).unwrap_err();
        assert_eq!(r.reply, json!({"action": "call"}));
    }

    #[test]
    fn function_names_are_injective_and_short() {
        let names = FunctionNames::new(&[tool("Time MCP:convert_time"), tool("a:b")]).unwrap();
        assert_eq!(
            names.function("Time MCP:convert_time"),
            "Time_MCP_convert_time"
        );
        assert_eq!(
            names.tool("Time_MCP_convert_time"),
            Some("Time MCP:convert_time")
        );
        let err = FunctionNames::new(&[tool("Time MCP:now"), tool("Time_MCP:now")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"Time MCP:now\"") && err.contains("\"Time_MCP:now\""),
            "{err}"
        );
        let long_a = format!("{}:a", "s".repeat(80));
        let long_b = format!("{}:b", "s".repeat(80));
        let names = FunctionNames::new(&[tool(&long_a), tool(&long_b)]).unwrap();
        let (fa, fb) = (names.function(&long_a), names.function(&long_b));
        assert!(fa.len() <= MAX_FUNCTION_NAME && fb.len() <= MAX_FUNCTION_NAME);
        assert_ne!(fa, fb);
        assert_eq!(names.tool(fb), Some(long_b.as_str()));
    }

    #[test]
    fn native_calls_map_back_to_their_tool_and_bad_arguments_are_rejected() {
        let names = FunctionNames::new(&[tool("Time MCP:now")]).unwrap();
        let ok = ToolCall::new("1", "Time_MCP_now", &json!({"tz": "UTC"}));
        assert_eq!(
            parse_tool_call(&ok, &names),
            Ok(Action::ToolCall {
                tool: "Time MCP:now".into(),
                arguments: json!({"tz": "UTC"})
            })
        );
        let unknown = ToolCall::new("2", "nope", &json!({}));
        assert_eq!(
            parse_tool_call(&unknown, &names),
            Ok(Action::ToolCall {
                tool: "nope".into(),
                arguments: json!({})
            }),
            "an unknown function is an unknown tool's call, for the validator or the host"
        );
        let bad = ToolCall::new("3", "Time_MCP_now", &json!([1, 2]));
        assert_eq!(
            parse_tool_call(&bad, &names).unwrap_err().problem,
            DecisionProblem::BadArguments
        );
    }
}
