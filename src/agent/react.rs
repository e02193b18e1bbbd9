//! ReAct (the baseline, no world model): think, call a real tool, observe, until the
//! planner finishes or a limit is hit.

use anyhow::Result;

use super::execute::{PlannedCall, call};
use super::recorder::Recorder;
use super::{End, Env, answer, planner_turn};
use crate::trajectory::event::{Action, EventBody, Phase};
use crate::world_model::HistoryStep;

/// Runs ReAct to the end.
pub async fn run(env: &mut Env, rec: &mut Recorder) -> Result<End> {
    rec.emit(EventBody::Phase { phase: Phase::Plan })?;
    let mut real: Vec<HistoryStep> = Vec::new();
    let mut final_answer = None;
    let mut limit = None;
    for step in 1..=env.budget.max_steps as u64 {
        if let Some(why) = env.over_budget() {
            limit = Some(why);
            break;
        }
        let decision = match planner_turn(
            env,
            rec,
            &real,
            "You call real tools and see their real results.",
            "real results",
        )
        .await?
        {
            Ok(d) => d,
            Err(end) => return Ok(end),
        };
        match decision.action {
            Action::Finish { answer } => {
                final_answer = answer;
                break;
            }
            Action::ToolCall { tool, arguments } => {
                let planned = PlannedCall {
                    node: None,
                    tool,
                    arguments,
                };
                match call(env, rec, step, &planned).await? {
                    Some(s) => real.push(s),
                    None => return Ok(End::interrupted()),
                }
            }
        }
        if step as usize == env.budget.max_steps {
            limit = Some(format!("step limit of {} reached", env.budget.max_steps));
        }
    }
    if let Some(why) = limit {
        rec.emit(EventBody::Error {
            source: "agent".into(),
            name: None,
            message: why,
            stderr_tail: None,
        })?;
    }
    match final_answer {
        // The planner's own answer is ReAct's answer; the summarizer writes one only when
        // the planner stopped without one.
        Some(text) if !text.trim().is_empty() => {
            rec.emit(EventBody::Phase {
                phase: Phase::Answer,
            })?;
            rec.emit(EventBody::Answer { text })?;
            Ok(End::completed())
        }
        _ => answer::answer(env, rec, &real).await,
    }
}
