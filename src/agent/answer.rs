//! The final answer, written by the summarizer role from the real observations.

use anyhow::Result;

use super::recorder::Recorder;
use super::{End, Env};
use crate::llm::client::Message;
use crate::trajectory::event::{EventBody, Phase, Role};
use crate::world_model::HistoryStep;

/// Longest observation quoted to the summarizer.
const OBSERVATION_CHARS: usize = 4_000;

/// Writes the answer phase: one summarizer call, then the `answer` event.
pub async fn answer(env: &mut Env, rec: &mut Recorder, real: &[HistoryStep]) -> Result<End> {
    rec.emit(EventBody::Phase {
        phase: Phase::Answer,
    })?;
    let mut user = format!("Request: {}\n\nTool results:\n", env.task.request);
    if real.is_empty() {
        user.push_str("(no tool was called)\n");
    }
    for (i, s) in real.iter().enumerate() {
        let text: String = s.observation.text.chars().take(OBSERVATION_CHARS).collect();
        let err = if s.observation.is_error {
            " [error]"
        } else {
            ""
        };
        user.push_str(&format!(
            "{}. {} {} ->{err} {}\n",
            i + 1,
            s.tool,
            s.arguments,
            text
        ));
    }
    user.push_str("\nWrite the final answer to the request, using only these results. Say plainly what could not be done.");
    let messages = [
        Message::system("You write the final answer of an agent from its tool results."),
        Message::user(user),
    ];
    let client = env.summarizer.clone();
    let Some(result) = env.or_stop(client.complete_text(&messages)).await else {
        return Ok(End::interrupted());
    };
    let model = client.endpoint().model.clone();
    env.record_llm(rec, Role::Summarizer, result.as_ref(), &model)?;
    match result {
        Ok(c) => {
            rec.emit(EventBody::Answer { text: c.text })?;
            Ok(End::completed())
        }
        Err(e) => Ok(End::failed(format!("summarizer failed: {e}"))),
    }
}
