//! The `llm` world model: an LLM prompted to act as the MCP server. Any OpenAI-compatible
//! endpoint works, so a dedicated world model (Arctic-AWM on vLLM, say) is just another
//! endpoint. Given recorded runs (`examples_from`), it is grounded in the trace store: shown
//! the `examples` (default 5) recorded calls of the tool nearest to this one, from other runs
//! (small models invent shapes and values otherwise), the fields the `traces` world model's
//! rules determine as facts to keep, and `traces`' prediction as a draft.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::memory::TransitionBuffer;
use super::traces::TracesWorldModel;
use super::{LlmUsage, SimFailure, SimRequest, Simulation, WorldModel, history_lines};
use crate::llm::chat_wire::Message;
use crate::llm::client::LlmClient;
use cosmos_trajectory::event::{Observation, WorldModelInfo};

/// Longest history observation quoted in the prompt.
const HISTORY_CHARS: usize = 1_500;

/// Recorded calls shown by default (`examples` of a `[world_models.NAME]` table).
pub const DEFAULT_EXAMPLES: usize = 5;

/// An LLM acting as the server.
#[derive(Clone)]
pub struct LlmWorldModel {
    client: Arc<LlmClient>,
    /// The trace store it is grounded in, and the rules fitted on it.
    grounding: Option<(Arc<TransitionBuffer>, TracesWorldModel)>,
    /// Recorded calls shown, at most.
    examples: usize,
    /// The run whose calls it must not be shown (leave one run out), if any.
    excluded: Option<u32>,
}

/// What the recordings give a prompt for one call.
#[derive(Debug, Default)]
pub struct Grounding<'a> {
    /// The nearest recorded calls of the tool (arguments, result), nearest first.
    pub examples: Vec<(&'a Value, &'a Observation)>,
    /// Result fields the recordings' rules determine (path, value): facts to keep.
    pub facts: Vec<(String, Value)>,
    /// The `traces` world model's prediction, as a draft.
    pub draft: Option<Observation>,
}

impl LlmWorldModel {
    /// A world model on `client`, grounded in recorded calls when given (`examples` of them
    /// shown at most).
    pub fn new(
        client: Arc<LlmClient>,
        store: Option<Arc<TransitionBuffer>>,
        examples: usize,
    ) -> Self {
        Self {
            client,
            grounding: store.map(|s| (s.clone(), TracesWorldModel::new(s))),
            examples,
            excluded: None,
        }
    }

    /// The same model, never shown a call recorded in `run` (for evaluating calls of `run`:
    /// it would otherwise be shown the very result it is asked for). `None` when it has no
    /// recordings to leave out.
    pub fn without(&self, run: &std::path::Path) -> Option<Self> {
        let (store, _) = self.grounding.as_ref()?;
        self.leaving_out(store.source_of(run))
    }

    /// The same model without the calls of the `run`th source read, when given.
    fn leaving_out(&self, run: Option<u32>) -> Option<Self> {
        let (store, traces) = self.grounding.as_ref()?;
        Some(Self {
            grounding: Some((store.clone(), traces.leaving_out(run))),
            excluded: run,
            ..self.clone()
        })
    }

    fn prompt(&self, req: &SimRequest<'_>) -> Vec<Message> {
        let Some((store, traces)) = &self.grounding else {
            return simulation_messages(req, &Grounding::default());
        };
        let examples = store
            .nearest(&req.tool.name, req.arguments, self.excluded, self.examples)
            .into_iter()
            .map(|c| (&c.arguments, &c.observation))
            .collect();
        let (draft, facts) = match traces.draft(&req.tool.name, req.arguments, req.state) {
            Some((draft, facts)) => (Some(draft), facts),
            None => (None, Vec::new()),
        };
        simulation_messages(
            req,
            &Grounding {
                examples,
                facts,
                draft,
            },
        )
    }
}

/// The messages the `llm` world model sends to simulate a call: the one builder of its input,
/// also what `cosmos export transitions` writes as a training example's input (there with no
/// grounding, which a trained world model should not need).
pub fn simulation_messages(req: &SimRequest<'_>, grounding: &Grounding<'_>) -> Vec<Message> {
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
    let cut = |text: &str| text.chars().take(HISTORY_CHARS).collect::<String>();
    if !grounding.examples.is_empty() {
        user.push_str("Real results of this tool for the recorded calls nearest to this one:\n");
        for (arguments, observation) in &grounding.examples {
            let error = if observation.is_error { "[error] " } else { "" };
            user.push_str(&format!(
                "- arguments {arguments}: {error}{}\n",
                cut(&observation.text)
            ));
        }
    }
    if !grounding.facts.is_empty() {
        user.push_str("Fields of the result the recordings determine for this call (keep them):");
        for (path, value) in &grounding.facts {
            user.push_str(&format!(" {path} = {value};"));
        }
        user.push('\n');
    }
    if let Some(draft) = &grounding.draft {
        let error = if draft.is_error { "[error] " } else { "" };
        user.push_str(&format!(
            "A draft from the recordings (correct what is wrong, keep what is right): {error}{}\n",
            cut(&draft.text)
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
        let recorded = self.grounding.as_ref().map_or(0, |(b, _)| b.len());
        let mut details = vec![
            ("model", json!(e.model)),
            ("base_url", json!(e.base_url)),
            ("temperature", json!(e.temperature)),
            ("examples_from_memory", json!(recorded)),
        ];
        if recorded > 0 {
            details.push(("examples", json!(self.examples)));
        }
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

    /// An endpoint no prompt test sends to.
    fn endpoint() -> Endpoint {
        Endpoint {
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
        }
    }

    #[test]
    fn the_prompt_offers_nothing_to_copy_and_its_markers_are_known_to_fidelity() {
        let endpoint = endpoint();
        let wm = LlmWorldModel::new(Arc::new(LlmClient::new(endpoint)), None, DEFAULT_EXAMPLES);
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

    /// Grounded in a store, the prompt shows the nearest recorded calls (at most `examples`),
    /// the fields the rules determine as facts and the draft, and nothing of the run left out.
    #[test]
    fn a_grounded_prompt_shows_the_nearest_calls_facts_and_a_draft_from_other_runs() {
        let endpoint = endpoint();
        let mut store = TransitionBuffer::default();
        for (run, v) in [1.0, 2.0, 3.0, 50.0].iter().enumerate() {
            let result = json!({"value": v, "tripled": v * 3.0});
            store.add_recorded(
                "s:triple",
                json!({"value": v}),
                Observation {
                    text: result.to_string(),
                    structured: Some(Box::new(result)),
                    ..Default::default()
                },
                run as u32,
            );
        }
        let wm = LlmWorldModel::new(Arc::new(LlmClient::new(endpoint)), Some(Arc::new(store)), 2);
        let tool = ToolInfo {
            name: "s:triple".into(),
            ..Default::default()
        };
        let args = json!({"value": 4.0});
        let req = SimRequest {
            tool: &tool,
            arguments: &args,
            user_request: "triple 4",
            history: &[],
            state: None,
        };
        let said = wm.prompt(&req)[1].content_str().to_string();
        assert!(said.contains("- arguments {\"value\":3.0}"), "{said}");
        assert!(said.contains("- arguments {\"value\":2.0}"), "{said}");
        assert!(
            !said.contains("- arguments {\"value\":1.0}"),
            "two at most: {said}"
        );
        assert!(said.contains("/tripled = 12.0;"), "{said}");
        assert!(said.contains("/value = 4.0;"), "{said}");
        assert!(said.contains("A draft from the recordings"), "{said}");
        // Left out, run 2 (value 3) is neither an example nor a check of the rules.
        let left = wm.leaving_out(Some(2)).unwrap();
        let said = left.prompt(&req)[1].content_str().to_string();
        assert!(!said.contains("{\"value\":3.0}"), "{said}");
    }
}
