//! The judge (docs/design.md, "Judge"): MCP-Bench's rubric over an LLM endpoint. Six dimensions
//! scored 1–10 with reasons, from the task's reference, the request, the real tool calls
//! and the final answer. `cosmos judge` appends the result to the run's own file.

use serde_json::{Value, json};

use crate::llm::chat::{Completion, LlmError};
use crate::llm::client::LlmClient;
use crate::llm::wire::Message;
use crate::trajectory::event::{DimensionScore, EventBody, JudgeScores};
use crate::trajectory::run::Run;

/// Longest tool result quoted to the judge.
const RESULT_CHARS: usize = 1_500;

/// The six dimensions, as the judge names them.
pub const DIMENSIONS: [&str; 6] = [
    "task_fulfillment",
    "grounding",
    "tool_appropriateness",
    "parameter_accuracy",
    "dependency_awareness",
    "parallelism_efficiency",
];

/// The rubric prompt for a run.
pub fn prompt(run: &Run) -> Vec<Message> {
    let system = "You are an impartial judge of an AI agent that used tools of MCP servers. Score the agent \
        from 1 (worst) to 10 (best) on six dimensions, each with a one-sentence reason:\n\
        - task_fulfillment: how completely the final answer fulfils the task.\n\
        - grounding: how well the answer is supported by the tool results (no invented facts).\n\
        - tool_appropriateness: whether the tools chosen suit each step.\n\
        - parameter_accuracy: whether the arguments were correct and complete.\n\
        - dependency_awareness: whether calls that depend on earlier results came after them and used them.\n\
        - parallelism_efficiency: whether the agent avoided redundant calls and did no more than needed.\n\
        Reply as JSON: {\"task_fulfillment\": {\"score\": n, \"reason\": \"…\"}, …}.";
    let h = &run.header;
    let mut user = format!(
        "Task reference (what a full solution does):\n{}\n\nUser request:\n{}\n\nTool calls made:\n",
        h.task
            .reference
            .as_deref()
            .unwrap_or("(none given; judge against the request)"),
        h.task.request
    );
    let steps = run.steps();
    if steps.is_empty() {
        user.push_str("(none)\n");
    }
    for s in steps {
        if let EventBody::ToolCalled {
            step,
            tool,
            arguments,
            result,
            error,
            ..
        } = &run.event(s.event as usize).body
        {
            let text: String = result.text.chars().take(RESULT_CHARS).collect();
            let status = if result.is_error || error.is_some() {
                "ERROR"
            } else {
                "ok"
            };
            user.push_str(&format!(
                "{step}. {tool} {arguments} -> [{status}] {text}\n"
            ));
        }
    }
    user.push_str(&format!(
        "\nFinal answer:\n{}\n",
        run.answer_at(run.len()).unwrap_or("(no answer)")
    ));
    vec![Message::system(system), Message::user(user)]
}

/// The JSON schema of the judge's reply.
pub fn schema() -> Value {
    let dim = json!({"type": "object", "properties": {"score": {"type": "number", "minimum": 1, "maximum": 10}, "reason": {"type": "string"}}, "required": ["score"]});
    let props: serde_json::Map<String, Value> = DIMENSIONS
        .iter()
        .map(|d| (d.to_string(), dim.clone()))
        .collect();
    json!({"type": "object", "properties": props, "required": DIMENSIONS})
}

/// Reads the six scores; every dimension must be there with a number in 1..=10.
pub fn parse(value: &Value) -> Result<JudgeScores, String> {
    let dim = |name: &str| -> Result<DimensionScore, String> {
        let d = &value[name];
        let score = d["score"]
            .as_f64()
            .or_else(|| d.as_f64())
            .ok_or_else(|| format!("the judge gave no score for {name}"))?;
        if !(1.0..=10.0).contains(&score) {
            return Err(format!("the judge's {name} score {score} is outside 1–10"));
        }
        Ok(DimensionScore {
            score,
            reason: d["reason"].as_str().unwrap_or_default().to_string(),
        })
    };
    Ok(JudgeScores {
        task_fulfillment: dim("task_fulfillment")?,
        grounding: dim("grounding")?,
        tool_appropriateness: dim("tool_appropriateness")?,
        parameter_accuracy: dim("parameter_accuracy")?,
        dependency_awareness: dim("dependency_awareness")?,
        parallelism_efficiency: dim("parallelism_efficiency")?,
    })
}

/// Scores a run: the completion (for its `llm_call` event) and the scores or why there are none.
pub async fn judge(
    client: &LlmClient,
    run: &Run,
) -> (Result<Completion, LlmError>, Result<JudgeScores, String>) {
    match client
        .complete_json(&prompt(run), "judgement", &schema())
        .await
    {
        Ok((value, c)) => {
            let scores = parse(&value);
            (Ok(c), scores)
        }
        Err(e) => {
            let msg = e.to_string();
            (Err(e), Err(msg))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scores_and_refuses_out_of_range() {
        let mut v = json!({});
        for d in DIMENSIONS {
            v[d] = json!({"score": 7, "reason": "fine"});
        }
        assert_eq!(parse(&v).unwrap().grounding.score, 7.0);
        v["grounding"] = json!({"score": 11});
        assert!(parse(&v).unwrap_err().contains("outside 1–10"));
        v["grounding"] = json!(4);
        assert_eq!(
            parse(&v).unwrap().grounding.score,
            4.0,
            "a bare number is accepted"
        );
        v.as_object_mut().unwrap().remove("grounding");
        assert!(parse(&v).unwrap_err().contains("no score for grounding"));
    }
}
