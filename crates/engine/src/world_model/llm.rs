//! The `llm` world model: an LLM prompted to act as the MCP server. Any OpenAI-compatible
//! endpoint works, so a dedicated world model (Arctic-AWM on vLLM, say) is just another
//! endpoint. When recorded calls of the same tool are available, one is shown as an
//! example of the real result's shape (small models invent shapes otherwise).

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::memory::TransitionBuffer;
use super::{LlmUsage, SimFailure, SimRequest, Simulation, WorldModel, history_lines};
use crate::llm::chat_wire::Message;
use crate::llm::client::LlmClient;
use cosmos_trajectory::event::{Observation, WorldModelInfo};

/// Longest history observation quoted in the prompt.
const HISTORY_CHARS: usize = 1_500;

/// An LLM acting as the server.
#[derive(Clone)]
pub struct LlmWorldModel {
    client: Arc<LlmClient>,
    examples: Option<Arc<TransitionBuffer>>,
    /// The run whose calls it must not be shown (leave one run out), if any.
    excluded: Option<u32>,
}

impl LlmWorldModel {
    /// A world model on `client`, with optional recorded examples.
    pub fn new(client: Arc<LlmClient>, examples: Option<Arc<TransitionBuffer>>) -> Self {
        Self {
            client,
            examples,
            excluded: None,
        }
    }

    /// The same model, never shown a call recorded in `run` as an example (for evaluating
    /// calls of `run`: it would otherwise be shown the very result it is asked for). `None`
    /// when it has no examples to leave out.
    pub fn without(&self, run: &std::path::Path) -> Option<Self> {
        let examples = self.examples.as_ref()?;
        Some(Self {
            excluded: examples.source_of(run),
            ..self.clone()
        })
    }

    fn prompt(&self, req: &SimRequest<'_>) -> Vec<Message> {
        let example = self
            .examples
            .as_ref()
            .and_then(|b| b.example(&req.tool.name, self.excluded));
        simulation_messages(req, example)
    }
}

/// The messages the `llm` world model sends to simulate a call: the one builder of its input,
/// also what `cosmos export transitions` writes as a training example's input (there without
/// a recorded example of the tool, which a trained world model should not need).
pub fn simulation_messages(
    req: &SimRequest<'_>,
    example: Option<(&Value, &Observation)>,
) -> Vec<Message> {
    // The fixed part first, so servers with a prompt cache reuse it.
    // Nothing here is a sample answer a small model could copy: the reply's shape is
    // described in words, and the schema carries the rest.
    let system = "You simulate an MCP server. Given a tool's description, its input schema and the \
        arguments of a call, reply with what the real server would return for exactly this \
        call, as a JSON object with these fields: is_error, true when the server would reject \
        the call or fail; content, the text the server would send back (when the tool \
        returns JSON, that JSON written as a string), with the values this call asks about; \
        and confidence, a number from 0 to 1, how likely it is that the real server sends \
        back this content (low when you guess values you cannot know). \
        When the arguments are invalid for the tool, set is_error and give the server's error \
        message as content. Do not describe the result and do not explain.";
    let mut user = format!(
        "Tool: {}\nDescription: {}\nInput schema: {}\nArguments: {}\n",
        req.tool.name, req.tool.description, req.tool.input_schema, req.arguments
    );
    if let Some((arguments, observation)) = example {
        user.push_str(&format!(
            "A real result of this tool (for its shape), for arguments {}: {}\n",
            arguments,
            observation
                .text
                .chars()
                .take(HISTORY_CHARS)
                .collect::<String>()
        ));
    }
    user.push_str(&format!("The user's request: {}\n", req.user_request));
    if !req.history.is_empty() {
        user.push_str("Calls so far:\n");
        user.push_str(&history_lines(req.history, HISTORY_CHARS));
    }
    if let Some(state) = req.state {
        // The state section: the belief before the call, to be given back moved on by it.
        user.push_str(&format!(
            "The server's state before this call, as a JSON object of fields: {state}\n\
             Also reply with predicted_state: the server's state after this call, as the same \
             kind of object, every field kept, the ones this call changes changed, added or \
             removed.\n"
        ));
    }
    vec![Message::system(system), Message::user(user)]
}

/// What the `llm` world model is asked to reply for a call with this real result: the
/// training target of a transition.
pub fn simulation_reply(real: &Observation) -> Value {
    json!({"is_error": real.is_error, "content": real.text})
}

impl WorldModel for LlmWorldModel {
    fn name(&self) -> String {
        "llm".into()
    }

    fn describe(&self) -> WorldModelInfo {
        let e = self.client.endpoint();
        let examples = self.examples.as_ref().map_or(0, |b| b.len());
        let mut details = vec![
            ("model", json!(e.model)),
            ("base_url", json!(e.base_url)),
            ("temperature", json!(e.temperature)),
            ("examples_from_memory", json!(examples)),
        ];
        if e.logprobs {
            details.push(("logprobs", json!(true)));
        }
        super::describe(self.name(), details)
    }

    fn simulate<'a>(
        &'a self,
        req: SimRequest<'a>,
    ) -> BoxFuture<'a, Result<Simulation, SimFailure>> {
        Box::pin(async move {
            let start = Instant::now();
            // `confidence` is asked for, not required: a model that gives none records none.
            let mut schema = json!({
                "type": "object",
                "properties": {
                    "is_error": {"type": "boolean"},
                    "content": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1}
                },
                "required": ["is_error", "content"]
            });
            // Given a state, the state after is part of the answer (a constrained decoder
            // leaves out what is optional).
            if req.state.is_some() {
                schema["properties"]["predicted_state"] = json!({"type": "object"});
                schema["required"] = json!(["is_error", "content", "predicted_state"]);
            }
            let model = self.client.endpoint().model.clone();
            match self
                .client
                .complete_json(&self.prompt(&req), "tool_result", &schema)
                .await
            {
                Ok((value, c)) => {
                    let content = match &value["content"] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    let mut observation = Observation {
                        text: content,
                        is_error: value["is_error"].as_bool().unwrap_or(false),
                        ..Default::default()
                    };
                    // Capped like a tool result.
                    observation.cap_text(crate::mcp::server::MAX_RESULT_BYTES);
                    let llm = LlmUsage {
                        model,
                        prompt_tokens: c.prompt_tokens,
                        completion_tokens: c.completion_tokens,
                        estimated: c.estimated,
                        latency: c.latency,
                        error: None,
                        messages: c.messages,
                    };
                    // From the reply's token log-probabilities when the endpoint gave them (the
                    // geometric mean of its tokens' probabilities, `logprobs`); else the
                    // model's own word (`self`); none when it gave no number in [0, 1].
                    let confidence = match c.mean_logprob {
                        Some(mean) => super::Confidence::new(mean.exp(), "logprobs"),
                        None => value
                            .get("confidence")
                            .and_then(Value::as_f64)
                            .and_then(|c| super::Confidence::new(c, "self")),
                    };
                    let mut simulation =
                        Simulation::new(observation, start.elapsed(), Some(llm), confidence);
                    // Only an object is a state; anything else is no prediction of one.
                    simulation.predicted_state = req
                        .state
                        .and(value.get("predicted_state"))
                        .filter(|s| s.is_object())
                        .cloned();
                    Ok(simulation)
                }
                Err(e) => Err(SimFailure {
                    // A reply cut at the token cap: say what to change too.
                    message: if e.reply.as_deref().is_some_and(|r| r.cut) {
                        format!(
                            "world model LLM failed: {e}; raise max_tokens of the world \
                             model's role"
                        )
                    } else {
                        format!("world model LLM failed: {e}")
                    },
                    llm: vec![LlmUsage {
                        model,
                        // A reply that was not JSON still cost what the endpoint reported.
                        prompt_tokens: e.spent().0,
                        completion_tokens: e.spent().1,
                        estimated: e.reply.is_none() || e.spent().2,
                        latency: e.latency,
                        error: Some(e.to_string()),
                        messages: e.messages,
                    }],
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::endpoints::Endpoint;
    use cosmos_trajectory::event::ToolInfo;

    #[test]
    fn the_prompt_offers_nothing_to_copy_and_its_markers_are_known_to_fidelity() {
        let endpoint = Endpoint {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key: None,
            temperature: 0.0,
            max_tokens: 64,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            output: Default::default(),
            record_messages: false,
            logprobs: false,
        };
        let wm = LlmWorldModel::new(Arc::new(LlmClient::new(endpoint)), None);
        let tool = ToolInfo {
            name: "Time MCP:convert_time".into(),
            description: "Convert time".into(),
            input_schema: cosmos_trajectory::event::ToolSchema::new(json!({"type": "object"})),
            ..Default::default()
        };
        let args = json!({"time": "09:00"});
        let req = SimRequest {
            tool: &tool,
            arguments: &args,
            user_request: "What time is it in Tokyo?",
            history: &[],
            state: None,
        };
        let text: String = wm
            .prompt(&req)
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect::<Vec<_>>()
            .join("\n")
            .to_lowercase();
        for marker in crate::metrics::fidelity::PROMPT_MARKERS {
            assert!(text.contains(marker), "{marker:?} is in the prompt");
        }
        assert!(!text.contains('<'), "no <placeholder> to copy: {text}");
        assert!(!text.contains("text result"), "{text}");
    }
}
