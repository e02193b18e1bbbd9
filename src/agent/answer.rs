//! The final answer, written by the summarizer role from the real observations.

use anyhow::Result;

use super::ports::EventSink;
use super::{End, Env, prompt};
use crate::trajectory::event::{EventBody, Phase, Role};
use crate::world_model::HistoryStep;

/// Writes the answer phase: one summarizer call, then the `answer` event.
pub async fn answer(env: &Env, sink: &mut dyn EventSink, real: &[HistoryStep]) -> Result<End> {
    sink.emit(EventBody::Phase {
        phase: Phase::Answer,
    })?;
    let messages = prompt::answer(&env.task.request, real);
    let client = env.roles.summarizer.clone();
    let Some(result) = env.or_stop(client.complete_text(&messages)).await else {
        return Ok(End::interrupted());
    };
    env.record_llm(
        sink,
        Role::Summarizer,
        result.as_ref(),
        &client.endpoint().model,
    )?;
    match result {
        Ok(c) => {
            sink.emit(EventBody::Answer { text: c.text })?;
            Ok(End::completed())
        }
        Err(e) => Ok(End::failed(format!("summarizer failed: {e}"))),
    }
}
