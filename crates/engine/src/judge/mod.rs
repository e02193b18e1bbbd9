//! The judge (docs/design.md, "Judge"; docs/report-format.md, "The judge"): MCP-Bench's LLM
//! judge over the judge role. It is shown MCP-Bench's evidence (`evidence.rs`) and MCP-Bench's
//! rubric in the project's words (`rubric.rs`), once per trial, each trial with its own seeded
//! order of the rubric; the six scores are averaged over the trials that answered, as
//! MCP-Bench's stability trials are. A history too long for the judge's context is compressed
//! as MCP-Bench does. `cosmos judge` appends the result to the run's own file.
//!
//! - `mod.rs`: `judge()` asks the trials, compresses the history once when the endpoint says it
//!   overflowed (`LlmError::is_context_overflow`), and averages per sub-dimension (`average`).
//!   `cli/judge.rs` appends a `phase`, an `llm_call` per request and `judge_scored` to the run's
//!   file with `Writer::append`; `trajectory::reader::is_judgement` names the only kinds allowed
//!   after `run_finished`. What the metrics make of a judgement (headline scores, the trials'
//!   variance) is `metrics::run::JudgeSummary`; the group's intervals take that variance
//!   (`stats::Estimate::of_noisy`), and `metrics::group::JudgeSpread` puts the judge's own spread
//!   beside the runs'.

pub mod evidence;
pub mod rubric;

use crate::llm::chat::{Completion, LlmError};
use crate::llm::chat_wire::Message;
use crate::llm::client::LlmClient;
use crate::task::Task;
use cosmos_trajectory::event::{
    Compression, DimensionScore, Dimensions, JudgeScores, JudgeTrial, Judging,
};
use cosmos_trajectory::run::Run;

pub use evidence::Evidence;
pub use rubric::{DIMENSIONS, RUBRIC};

/// MCP-Bench's number of stability trials (`evaluation.judge_stability_runs`).
pub const MCP_BENCH_TRIALS: u32 = 5;
/// The most trials one judgement asks for.
pub const MAX_TRIALS: u32 = 20;
/// The size a compressed history aims at, in tokens (MCP-Bench `compress_for_judge`).
const COMPRESSED_TOKENS: usize = 10_000;
/// How runs are judged (`cosmos judge --trials/--seed`, `[judge]` in cosmos.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Requests per run, each with its own order of the rubric.
    pub trials: u32,
    /// The seed of the first trial's order (trial `i` uses `seed + i`); drawn at random and
    /// recorded when not given.
    pub seed: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            trials: 1,
            seed: None,
        }
    }
}

impl Settings {
    /// Each trial's seed: the given seed (else one drawn now) plus the trial's index, for at
    /// most [`MAX_TRIALS`] trials. The first is the judgement's recorded `seed`.
    pub fn trial_seeds(&self) -> Vec<u64> {
        let seed = self.seed.unwrap_or_else(|| fastrand::u64(..));
        (0..self.trials.clamp(1, MAX_TRIALS))
            .map(|i| seed.wrapping_add(u64::from(i)))
            .collect()
    }
}

/// The messages of the trial drawn from `seed`, and the rubric's order in it.
pub fn prompt(evidence: &Evidence, seed: u64) -> (Vec<Message>, Vec<String>) {
    let (rubric, order) = rubric::section(seed);
    let user = format!("{}\n# The rubric\n{rubric}", evidence.text());
    (
        vec![Message::system(rubric::SYSTEM), Message::user(user)],
        order,
    )
}

/// What judging one run came to.
pub struct Judgement {
    /// Every request sent, in order (trials and a compression), for their `llm_call` events.
    pub calls: Vec<Result<Completion, LlmError>>,
    /// The averaged scores and how they were made, or why there are none.
    pub outcome: Result<(JudgeScores, Judging), String>,
}

/// Judges `run` with `settings.trials` requests; `task` fills in what an older header lacks.
pub async fn judge(
    client: &LlmClient,
    run: &Run,
    task: Option<&Task>,
    settings: Settings,
) -> Judgement {
    let seeds = settings.trial_seeds();
    let mut evidence = Evidence::of(run, task);
    let mut facts = evidence.facts();
    let schema = rubric::schema();
    let mut calls = Vec::new();
    let mut trials = Vec::new();
    let mut scored: Vec<JudgeScores> = Vec::new();
    for &trial_seed in &seeds {
        // Each break carries the rubric order of the request last sent.
        let (scores, error, order) = loop {
            let (messages, order) = prompt(&evidence, trial_seed);
            match client.complete_json(&messages, "judgement", &schema).await {
                Ok((value, completion)) => {
                    calls.push(Ok(completion));
                    match rubric::parse(&value) {
                        Ok(s) => break (Some(s), None, order),
                        Err(e) => break (None, Some(e), order),
                    }
                }
                Err(e) => {
                    let message = e.to_string();
                    let overflowed = e.is_context_overflow();
                    calls.push(Err(e));
                    // Compressed once at most: a second overflow is the trial's failure.
                    let shorter = if facts.compressed.is_none() && overflowed {
                        compress(client, &evidence.history).await
                    } else {
                        None
                    };
                    let Some((history, how, call)) = shorter else {
                        break (None, Some(message), order);
                    };
                    calls.extend(call);
                    evidence.history = history;
                    facts.compressed = Some(how);
                }
            }
        };
        trials.push(JudgeTrial {
            seed: trial_seed,
            order,
            scores: scores.as_ref().map(JudgeScores::values),
            error,
        });
        scored.extend(scores);
    }
    let outcome = match average(&scored) {
        Some((scores, spread)) => Ok((
            scores,
            Judging {
                rubric: RUBRIC.to_string(),
                seed: seeds[0],
                trials,
                spread,
                evidence: facts,
            },
        )),
        None => Err(match trials.iter().find_map(|t| t.error.as_deref()) {
            Some(e) if trials.len() > 1 => {
                format!("all {} trials failed; the first: {e}", trials.len())
            }
            Some(e) => e.to_string(),
            None => "the judge gave no scores".into(),
        }),
    };
    Judgement { calls, outcome }
}

/// The mean of each dimension over the trials (with the first trial's reasoning, as MCP-Bench
/// keeps its first evaluation's text) and, with two or more, each dimension's sample standard
/// deviation.
pub fn average(trials: &[JudgeScores]) -> Option<(JudgeScores, Option<Dimensions<f64>>)> {
    let first = trials.first()?;
    let column = |name: &str| -> Vec<f64> {
        trials
            .iter()
            .filter_map(|t| t.get(name).map(|d| d.score))
            .collect()
    };
    let scores = Dimensions::from_fn(|name| {
        let values = column(name);
        DimensionScore {
            score: values.iter().sum::<f64>() / values.len() as f64,
            reason: first
                .get(name)
                .map(|d| d.reason.clone())
                .unwrap_or_default(),
        }
    });
    let spread = (trials.len() >= 2).then(|| {
        Dimensions::from_fn(|name| crate::metrics::stats::sd(&column(name)).unwrap_or(0.0))
    });
    Some((scores, spread))
}

/// Shortens the execution history to about [`COMPRESSED_TOKENS`] with the judge's model, or
/// by cutting it when that fails (as MCP-Bench's `compress_for_judge`); `None` when it is
/// already that short (nothing to gain). Returns the history, how, and the request sent.
async fn compress(
    client: &LlmClient,
    history: &str,
) -> Option<(String, Compression, Option<Result<Completion, LlmError>>)> {
    let from_tokens = history.len() / evidence::CHARS_PER_TOKEN;
    if from_tokens <= COMPRESSED_TOKENS {
        return None;
    }
    let messages = [
        Message::system(
            "You shorten an AI agent's execution history so that a judge can still score the \
             agent from it.",
        ),
        Message::user(format!(
            "Shorten this execution history to about {COMPRESSED_TOKENS} tokens. Keep every \
             tool call with its server and its exact arguments; the results and errors that \
             show progress; the order of the rounds; whether each call succeeded; the reasons \
             behind the agent's decisions; every number, value and finding; and anything that \
             shows whether the task was done.\n\nExecution history:\n{history}\n\nShortened \
             history:"
        )),
    ];
    let sent = client.complete_text(&messages).await;
    let (text, by) = match &sent {
        Ok(c) if !c.text.trim().is_empty() => (c.text.trim().to_string(), "llm"),
        _ => {
            let kept =
                evidence::first_chars(history, COMPRESSED_TOKENS * evidence::CHARS_PER_TOKEN);
            (
                format!("{kept}\n[cut to fit the judge's context]"),
                "truncated",
            )
        }
    };
    let how = Compression {
        from_tokens: from_tokens as u64,
        to_tokens: (text.len() / evidence::CHARS_PER_TOKEN) as u64,
        by: by.into(),
    };
    Some((text, how, Some(sent)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(values: [f64; 6], reason: &str) -> JudgeScores {
        let mut next = values.into_iter();
        Dimensions::from_fn(|_| DimensionScore {
            score: next.next().unwrap(),
            reason: reason.into(),
        })
    }

    #[test]
    fn trials_average_per_dimension_with_the_first_reasoning_and_their_spread() {
        // Hand-worked: five trials of task fulfillment 4, 5, 6, 5, 5 → mean 5, sd √0.5.
        let trials = [
            scores([4.0, 6.0, 7.0, 5.0, 3.0, 2.0], "first"),
            scores([5.0, 6.0, 7.0, 5.0, 3.0, 2.0], "second"),
            scores([6.0, 6.0, 8.0, 5.0, 4.0, 2.0], "third"),
            scores([5.0, 6.0, 8.0, 5.0, 4.0, 2.0], "fourth"),
            scores([5.0, 6.0, 5.0, 5.0, 1.0, 2.0], "fifth"),
        ];
        let (mean, spread) = average(&trials).unwrap();
        assert_eq!(mean.task_fulfillment.score, 5.0);
        assert_eq!(mean.task_fulfillment.reason, "first");
        assert_eq!(mean.tool_appropriateness.score, 7.0);
        assert_eq!(mean.dependency_awareness.score, 3.0);
        let spread = spread.unwrap();
        assert!((spread.task_fulfillment - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(spread.grounding, 0.0);
        assert!(
            average(&trials[..1]).unwrap().1.is_none(),
            "one trial has no spread"
        );
        assert!(average(&[]).is_none());
    }
}
