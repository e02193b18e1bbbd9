//! The planner role: given the request, the tools and the steps so far, the next action
//! (a tool call or finish). Asked for JSON with the tool names as an enum, which is what
//! makes small local models usable; native tool calls when the endpoint is set to them.

use serde_json::{Value, json};

use crate::llm::client::{Completion, LlmClient, LlmError, Message};
use crate::trajectory::event::{Action, ToolInfo};
use crate::world_model::HistoryStep;

/// Longest observation quoted back to the planner.
const OBSERVATION_CHARS: usize = 2_000;

/// What the planner decided, and what the call cost.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The action.
    pub action: Action,
    /// The planner's reasoning, if it gave any.
    pub thought: Option<String>,
    /// The LLM call.
    pub completion: Completion,
}

/// Tools as the prompt lists them.
fn tool_lines(tools: &[ToolInfo]) -> String {
    tools
        .iter()
        .map(|t| {
            format!(
                "- {}: {}\n  input schema: {}",
                t.name,
                t.description.replace('\n', " "),
                t.input_schema
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The system prompt (fixed per task, first, so prompt caches reuse it).
pub fn system_prompt(tools: &[ToolInfo], mode: &str) -> String {
    format!(
        "You are an agent that solves the user's request with tools of MCP servers. \
         {mode}\nEach turn, choose one action: call one tool, or finish with the answer when the \
         observations are enough. Use exact tool names and arguments that match the input schema.\n\
         Tools:\n{}",
        tool_lines(tools)
    )
}

/// The user turn: request and steps so far.
pub fn user_prompt(request: &str, history: &[HistoryStep], observed: &str) -> String {
    let mut s = format!("Request: {request}\n");
    if history.is_empty() {
        s.push_str("No tool has been called yet.\n");
    } else {
        s.push_str(&format!("Steps so far ({observed}):\n"));
        for (i, h) in history.iter().enumerate() {
            let text: String = h.observation.text.chars().take(OBSERVATION_CHARS).collect();
            let err = if h.observation.is_error {
                " [error]"
            } else {
                ""
            };
            s.push_str(&format!(
                "{}. {} {} ->{err} {}\n",
                i + 1,
                h.tool,
                h.arguments,
                text
            ));
        }
    }
    s.push_str("Reply with the next action as JSON: {\"thought\": \"…\", \"action\": \"call\" or \"finish\", \"tool\": \"server:tool\", \"arguments\": {…}, \"answer\": \"… (when finishing)\"}");
    s
}

/// The JSON schema of a decision, with the tool names as an enum.
pub fn decision_schema(tools: &[ToolInfo]) -> Value {
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

/// Reads a decision out of the model's JSON. A call naming no tool is a finish with no answer.
pub fn parse_decision(value: &Value) -> (Action, Option<String>) {
    let thought = value["thought"].as_str().map(str::to_string);
    let action = value["action"].as_str().unwrap_or_default();
    let tool = value["tool"].as_str().filter(|t| !t.is_empty());
    match (action, tool) {
        ("call", Some(tool)) | ("", Some(tool)) => {
            let arguments = match &value["arguments"] {
                Value::Null => json!({}),
                // Some models send the arguments as a JSON string.
                Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| json!({})),
                other => other.clone(),
            };
            (
                Action::ToolCall {
                    tool: tool.to_string(),
                    arguments,
                },
                thought,
            )
        }
        _ => (
            Action::Finish {
                answer: value["answer"].as_str().map(str::to_string),
            },
            thought,
        ),
    }
}

/// OpenAI function names allow only `[A-Za-z0-9_-]`; `server:tool` is mapped and back.
fn function_name(tool: &str) -> String {
    tool.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Asks the planner for the next action.
pub async fn decide(
    client: &LlmClient,
    tools: &[ToolInfo],
    request: &str,
    history: &[HistoryStep],
    mode: &str,
    observed: &str,
) -> Result<Decision, LlmError> {
    let messages = vec![
        Message::system(system_prompt(tools, mode)),
        Message::user(user_prompt(request, history, observed)),
    ];
    if client.uses_tools() {
        let functions: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": function_name(&t.name), "description": t.description, "parameters": t.input_schema}}))
            .collect();
        let c = client.complete_with_tools(&messages, &functions).await?;
        let action = match c.tool_calls.first() {
            Some((name, args)) => {
                let tool = tools
                    .iter()
                    .find(|t| function_name(&t.name) == *name)
                    .map_or(name.clone(), |t| t.name.clone());
                Action::ToolCall {
                    tool,
                    arguments: args.clone(),
                }
            }
            None => Action::Finish {
                answer: Some(c.text.clone()).filter(|t| !t.is_empty()),
            },
        };
        return Ok(Decision {
            action,
            thought: None,
            completion: c,
        });
    }
    let (value, completion) = client
        .complete_json(&messages, "next_action", &decision_schema(tools))
        .await?;
    let (action, thought) = parse_decision(&value);
    Ok(Decision {
        action,
        thought,
        completion,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_parse_leniently() {
        let (a, _) =
            parse_decision(&json!({"action": "call", "tool": "t:x", "arguments": "{\"a\": 1}"}));
        assert_eq!(
            a,
            Action::ToolCall {
                tool: "t:x".into(),
                arguments: json!({"a": 1})
            }
        );
        let (a, t) =
            parse_decision(&json!({"thought": "done", "action": "finish", "answer": "42"}));
        assert_eq!(
            (a, t.as_deref()),
            (
                Action::Finish {
                    answer: Some("42".into())
                },
                Some("done")
            )
        );
        assert_eq!(
            parse_decision(&json!({"action": "call"})).0,
            Action::Finish { answer: None }
        );
        assert_eq!(
            function_name("Time MCP:convert_time"),
            "Time_MCP_convert_time"
        );
    }
}
