//! Every prompt an agent sends: the planner's (as JSON instructions, or as a native
//! function-calling conversation), the critic's and the summarizer's. Each quotes the steps
//! through the one history formatter, [`history_lines`], or as tool messages.
//!
//! Every prompt: the planner's as JSON instructions or as a function-calling
//! conversation (assistant `tool_calls` + `tool` results), the critic's, the summarizer's; all
//! quote history through `world_model::history_lines`.

use crate::llm::chat_wire::{Message, ToolCall};
use crate::world_model::{HistoryStep, history_lines};
use cosmos_trajectory::event::{Action, Observation, ToolInfo};

use super::function_names::FunctionNames;

/// Longest observation quoted back to the planner and the critic.
const OBSERVATION_CHARS: usize = 2_000;
/// Longest observation quoted to the summarizer.
const ANSWER_OBSERVATION_CHARS: usize = 4_000;

/// What the steps so far are: real results, or a rehearsal in the world model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// Real tool calls (ReAct).
    Real,
    /// Planning against the world model; the first `real_steps` results are real (an
    /// execution-time revision starts from them).
    Rehearsal {
        /// Steps before the predicted ones that really ran.
        real_steps: usize,
    },
}

impl Setting {
    /// What the system prompt says about results.
    fn mode(self) -> &'static str {
        match self {
            Setting::Real => "You call real tools and see their real results.",
            Setting::Rehearsal { .. } => {
                "Tool results you see are predictions of a world model; you are writing a plan \
                 that will be run on the real tools afterwards."
            }
        }
    }

    /// How the history's results are named.
    fn observed(self) -> String {
        match self {
            Setting::Real => "real results".into(),
            Setting::Rehearsal { real_steps: 0 } => "predicted results".into(),
            Setting::Rehearsal { real_steps: n } => {
                format!("results of steps 1-{n} are real, later ones predicted")
            }
        }
    }
}

/// What one turn of the planner asks for.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// The user's request.
    pub request: &'a str,
    /// The steps so far.
    pub history: &'a [HistoryStep],
    /// Real or rehearsed.
    pub setting: Setting,
    /// Candidates wanted (1: the next action).
    pub k: usize,
    /// Why the last reply was rejected, so the model can correct it.
    pub rejected: Option<&'a str>,
}

const DECISION_FORMAT: &str = "Reply with the next action as JSON: {\"thought\": \"…\", \"action\": \"call\" or \"finish\", \"tool\": \"server:tool\", \"arguments\": {…}, \"answer\": \"… (when finishing)\"}";

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

fn system(setting: Setting) -> String {
    format!(
        "You are an agent that solves the user's request with tools of MCP servers. {}\n\
         Each turn, choose one action: call one tool, or finish with the answer when the \
         observations are enough. Use exact tool names and arguments that match the input schema.",
        setting.mode()
    )
}

/// The request and the steps so far, as text.
fn state(request: &str, history: &[HistoryStep], setting: Setting) -> String {
    let mut s = format!("Request: {request}\n");
    if history.is_empty() {
        s.push_str("No tool has been called yet.\n");
    } else {
        s.push_str(&format!("Steps so far ({}):\n", setting.observed()));
        s.push_str(&history_lines(history, OBSERVATION_CHARS));
    }
    s
}

/// The planner's prompt when it answers in JSON: the tools listed in the system prompt (fixed
/// per task and first, so prompt caches reuse it), the state and the reply format.
pub fn planner_json(tools: &[ToolInfo], turn: &Turn<'_>) -> Vec<Message> {
    let mut user = state(turn.request, turn.history, turn.setting);
    if let Some(why) = turn.rejected {
        user.push_str(&format!("Your last reply was rejected: {why}.\n"));
    }
    user.push_str(DECISION_FORMAT);
    if turn.k > 1 {
        user.push_str(&format!(
            "\nPropose up to {} different candidate actions, best first: {{\"candidates\": [action, …]}}.",
            turn.k
        ));
    }
    vec![
        Message::system(format!(
            "{}\nTools:\n{}",
            system(turn.setting),
            tool_lines(tools)
        )),
        Message::user(user),
    ]
}

/// The planner's prompt with native tool calls: each earlier step is an assistant tool call
/// answered by a `tool` message, as every function-calling client sends them.
pub fn planner_conversation(functions: &FunctionNames, turn: &Turn<'_>) -> Vec<Message> {
    let mut messages = vec![
        Message::system(format!(
            "{} Answer in text, without calling a tool, when you are done.",
            system(turn.setting)
        )),
        Message::user(format!("Request: {}", turn.request)),
    ];
    for (i, step) in turn.history.iter().enumerate() {
        let id = format!("call_{}", i + 1);
        messages.push(Message::tool_calls(vec![ToolCall::new(
            id.clone(),
            functions.function(&step.tool),
            &step.arguments,
        )]));
        messages.push(Message::tool_result(id, tool_message(&step.observation)));
    }
    let mut note = String::new();
    if matches!(turn.setting, Setting::Rehearsal { .. }) && !turn.history.is_empty() {
        note.push_str(&format!(
            "(The tool results above are {}.) ",
            turn.setting.observed()
        ));
    }
    if let Some(why) = turn.rejected {
        note.push_str(&format!("Your last reply was rejected: {why}. "));
    }
    if turn.k > 1 {
        note.push_str(&format!(
            "Propose up to {} different next actions: call up to {} tools at once, each call one \
             alternative, best first; or answer in text to finish.",
            turn.k, turn.k
        ));
    }
    if !note.is_empty() {
        messages.push(Message::user(note.trim_end()));
    }
    messages
}

fn tool_message(o: &Observation) -> String {
    let text: String = o.text.chars().take(OBSERVATION_CHARS).collect();
    if o.is_error {
        format!("[error] {text}")
    } else {
        text
    }
}

/// The critic's prompt: the state, the step to score, and what to reply.
pub fn critic(
    request: &str,
    history: &[HistoryStep],
    setting: Setting,
    action: &Action,
    predicted: Option<&Observation>,
) -> Vec<Message> {
    let step = match action {
        Action::ToolCall { tool, arguments } => format!(
            "Next step: call {tool} {arguments}, predicted to return: {}",
            predicted.map_or(String::new(), tool_message)
        ),
        Action::Finish { answer } => format!(
            "Next step: finish with the answer: {}",
            answer
                .as_deref()
                .unwrap_or("(to be written from the results)")
        ),
    };
    vec![
        Message::system("You are a strict critic of an agent's plan."),
        Message::user(format!(
            "{}{step}\nHow much does this step advance solving the request? Reply as JSON \
             {{\"score\": a number from 0 to 1, \"reason\": \"…\"}}.",
            state(request, history, setting)
        )),
    ]
}

/// The summarizer's prompt: the request and the real results.
pub fn answer(request: &str, real: &[HistoryStep]) -> Vec<Message> {
    let mut user = format!("Request: {request}\n\nTool results:\n");
    if real.is_empty() {
        user.push_str("(no tool was called)\n");
    }
    user.push_str(&history_lines(real, ANSWER_OBSERVATION_CHARS));
    user.push_str(
        "\nWrite the final answer to the request, using only these results. Say plainly what \
         could not be done.",
    );
    vec![
        Message::system("You write the final answer of an agent from its tool results."),
        Message::user(user),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::chat_wire::Speaker;
    use serde_json::json;

    fn step(tool: &str, text: &str, is_error: bool) -> HistoryStep {
        HistoryStep {
            tool: tool.into(),
            arguments: json!({"x": 1}),
            observation: Observation {
                text: text.into(),
                is_error,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn the_conversation_pairs_each_call_with_its_result() {
        let tools = vec![ToolInfo {
            name: "Time MCP:now".into(),
            description: String::new(),
            input_schema: cosmos_trajectory::event::ToolSchema::new(json!({})),
            ..Default::default()
        }];
        let names = FunctionNames::new(&tools).unwrap();
        let history = [
            step("Time MCP:now", "12:00", false),
            step("Time MCP:now", "bad", true),
        ];
        let m = planner_conversation(
            &names,
            &Turn {
                request: "r",
                history: &history,
                setting: Setting::Real,
                k: 1,
                rejected: None,
            },
        );
        let roles: Vec<Speaker> = m.iter().map(|m| m.role).collect();
        use Speaker::*;
        assert_eq!(roles, [System, User, Assistant, Tool, Assistant, Tool]);
        assert_eq!(m[2].tool_calls[0].function.name, "Time_MCP_now");
        assert_eq!(m[3].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(m[5].content_str(), "[error] bad");
    }

    #[test]
    fn the_json_prompt_says_what_was_rejected_and_which_results_are_real() {
        let history = [step("t:a", "1", false)];
        let m = planner_json(
            &[],
            &Turn {
                request: "r",
                history: &history,
                setting: Setting::Rehearsal { real_steps: 1 },
                k: 3,
                rejected: Some("a call without a tool"),
            },
        );
        let user = m[1].content_str();
        assert!(user.contains("results of steps 1-1 are real, later ones predicted"));
        assert!(user.contains("Your last reply was rejected: a call without a tool."));
        assert!(user.contains("up to 3 different candidate actions"));
    }
}
