//! The final answer, written by the summarizer role from the real observations.

use anyhow::Result;

use super::ports::EventSink;
use super::{End, Env, prompt};
use crate::world_model::HistoryStep;
use cosmos_trajectory::event::{EventBody, Phase, Role};

/// Writes the answer phase: one summarizer call, then the `answer` event. With the budget
/// spent there is no summarizer call: the run fails, saying why.
pub async fn answer(env: &Env, sink: &mut dyn EventSink, real: &[HistoryStep]) -> Result<End> {
    if let Some(why) = env.meter.over() {
        return Ok(End::failed(format!("no answer written: {why}")).ending(why.ending));
    }
    sink.emit(EventBody::Phase {
        phase: Phase::Answer,
    })?;
    let messages = prompt::answer(&env.task.request, real);
    let client = env.roles.summarizer.clone();
    let started = std::time::Instant::now();
    let result = match env
        .bounded(client.complete_text(&messages))
        .await
        .or_end("the summarizer wrote the answer")
    {
        Ok(result) => result,
        Err(end) => {
            let model = &client.endpoint().model;
            env.record_cut_llm(sink, Role::Summarizer, model, started, &end)?;
            return Ok(end);
        }
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
