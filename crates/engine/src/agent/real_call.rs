//! The one path by which an agent's call reaches a server ([`make`], bounded by the run's stop
//! and time budget) and by which a fork's recording stands in for one ([`from_recording`]): a
//! step's call (`execute::call`: each ReAct turn, each call of a plan) and a call grounded while
//! planning (`rehearse`) alike, so a fork with `--tools recorded` answers both from its
//! recording. `tests/architecture/layers.rs` holds that no other agent file calls the tool host.

use serde_json::Value;

use super::{Bounded, End, Env};
use crate::mcp::server::{CallOutcome, OnProgress};
use cosmos_trajectory::recorded_call::OwnedCall;

/// A real call as made: the server that answered, the outcome, and how the run ends when a
/// stop or the time budget cut the call off (its outcome then says so).
pub(super) struct Made {
    pub server: Option<String>,
    pub outcome: CallOutcome,
    pub end: Option<End>,
}

/// The one place an agent's call reaches a server (a step's call here, a grounded call in
/// `rehearse`): bounded by the run's stop and time budget like every other wait of the run.
pub(super) async fn make<'a>(
    env: &'a Env,
    tool: &'a str,
    arguments: &'a Value,
    on_progress: OnProgress<'a>,
) -> Made {
    let started = std::time::Instant::now();
    match env
        .bounded(env.host.call(tool, arguments, on_progress))
        .await
    {
        Bounded::Done((server, outcome)) => Made {
            server,
            outcome,
            end: None,
        },
        cut => {
            let (why, end) = match cut {
                Bounded::OutOfTime(why) => (
                    why.clone(),
                    End::failed(format!("{why} during a tool call")),
                ),
                _ => ("stopped".to_string(), End::interrupted()),
            };
            let message = format!(
                "cut off after {:.1}s: {why}",
                started.elapsed().as_secs_f64()
            );
            Made {
                server: None,
                outcome: CallOutcome::failure(message, started.elapsed()),
                end: Some(end),
            }
        }
    }
}

/// The answer a fork's recording (`--tools recorded`) holds for this call, with the recorded
/// run's file: the one place a recording stands in for a server (steps and grounded calls).
pub(super) fn from_recording<'e>(
    env: &'e Env,
    tool: &str,
    arguments: &Value,
) -> Option<(&'e str, &'e OwnedCall)> {
    let fork = env.fork.as_ref()?;
    let recorded = fork.recording.as_ref()?.answer(tool, arguments)?;
    Some((fork.of.file.as_str(), recorded))
}
