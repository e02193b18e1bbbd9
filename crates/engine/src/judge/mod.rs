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
//!
//! # Parity with MCP-Bench's judge
//!
//! `cosmos judge` is MCP-Bench's LLM judge (github.com/Accenture/mcp-bench, Apache-2.0,
//! `benchmark/evaluator.py`, class `LLMJudge`, as of commit 09e5233), so its scores are comparable
//! with MCP-Bench's and the paper's. Its prompt is written in our own words; every fact in it comes
//! from MCP-Bench, as follows.
//!
//! **Evidence** (`crates/engine/src/judge/evidence.rs`):
//!
//! | fact | MCP-Bench |
//! |---|---|
//! | the task the agent saw (`task.request`, MCP-Bench's `fuzzy_description`) | `_generate_randomized_prompt`, `task` |
//! | the concrete task, marked as unseen by the agent, whose vaguer version it got (`task.reference`, `task_description`) | `concrete_task_description` (`benchmark/runner.py`, `_prepare_task_execution`) |
//! | the dependency analysis, marked as unseen by the agent (`task.dependency_analysis`) | `dependency_analysis` (`enable_dependency_analysis_ref_for_eval`) |
//! | every available tool, grouped by server, with its description (cut at 500 characters) | `_format_available_tools` |
//! | the execution summary: rounds, calls, how many succeeded and failed, which tools; then each round's call (tool, server, arguments) and its result or error | `_create_execution_summary` over the executor's round summaries (`agent/executor.py`, `_update_state`) |
//! | the total number of rounds and the final answer | `total_rounds`, `final_solution` |
//!
//! Where cosmos differs, and why:
//!
//! - **One call per round.** MCP-Bench's executor runs a round's calls in parallel; every cosmos
//!   agent makes one real call at a time, so every call is a round of its own, and the judge is told
//!   the rounds as they were.
//! - **Long results are cut, not summarised.** MCP-Bench's executor has its LLM summarise a result
//!   over 1,000 tokens (characters / 4) and keeps 4,000 characters of the summary (1,000 of an
//!   error); cosmos keeps the first 4,000 characters (1,000 of an error) of the recorded result and
//!   says it was cut and from how many tokens. MCP-Bench does the same cut when its summary fails.
//! - **Input shapes.** cosmos also lists each tool's input
//!   schema (cut at 500 characters). MCP-Bench's judge shows names and descriptions only.
//! - **Compression.** When the endpoint says a request is longer than its context (MCP-Bench's
//!   phrases in `_is_token_limit_error`, and llama.cpp's and vLLM's), the execution history is
//!   shortened once, by the judge's model, to about 10,000 tokens, keeping what MCP-Bench's
//!   `compress_for_judge` keeps (every call with its server and exact arguments, the results and
//!   errors that show progress, the order, success or failure, the reasoning, every value, whatever
//!   shows the task done or not); if that fails it is cut to 40,000 characters, saying so. The trial
//!   is asked again; `judging.evidence.compressed` records it. (With stability trials on, MCP-Bench
//!   itself never reaches its compression: each failed trial is skipped and the error it re-raises,
//!   "All stability evaluations failed", holds none of the phrases.)
//!
//! **Rubric** (`crates/engine/src/judge/rubric.rs`; MCP-Bench's `evaluation_dimensions` and the scoring section of
//! `_generate_randomized_prompt`):
//!
//! - three headline groups of two sub-dimensions: task completion (task fulfillment, grounding),
//!   tool usage (tool appropriateness, parameter accuracy), planning effectiveness and efficiency
//!   (dependency awareness, parallelism and efficiency);
//! - per sub-dimension, bands of the share of its items done without fault: 1–3 for 10–30%,
//!   4–6 for 40–60%, 7–8 for 70–80%, 9–10 for 90–100% (requirements met; claims grounded in tool
//!   output; tools that were the best choice; calls with correct and complete arguments; dependency
//!   chains carried out); parallelism and efficiency by redundant calls and parallel work: 1–3 over
//!   70% redundant or under 30% parallel; 4–6 40–60% either; 7–8 20–30% redundant and 70–80%
//!   parallel; 9–10 under 10% redundant and 90–100% parallel;
//! - the defect rate (defects / opportunities) mapped to a score: 0–10% → 9–10, 10–30% → 7–9,
//!   30–50% → 5–7, 50–70% → 3–5, 70–100% → 0–3 (so a score can be 0: replies are taken in 0–10);
//! - what counts as without fault (best tool, ideal arguments, no redundancy, every failure
//!   recovered, parallel where possible and fewest rounds, no padding), proportions not counts,
//!   normalised by complexity, the worked proportions (19/20 → 9, 16/20 → 8, 12/20 → 6, 8/20 → 4;
//!   9/10 parallel → 9 … 4/10 → 4; 95/100 arguments → 9 … 40/100 → 4);
//! - task completion and tool usage against the concrete task; planning by the share of
//!   dependencies handled; format only when the task the agent saw asks for one;
//! - calibration: most executions score 4–6, 8 and above is exceptional, 4–5 without strong
//!   evidence, faults first, check again before anything above 7, more servers earn nothing;
//! - the reply: each sub-dimension's reasoning first, then the six scores (the schema lists them in
//!   that order).
//!
//! **Trials** (MCP-Bench's stability testing, `enable_judge_stability`, `_perform_evaluation` and
//! `_calculate_average_scores`): `--trials N` sends N requests; each shows the three groups, the
//! sub-dimensions within each and the bands within each in an order drawn from its seed (MCP-Bench
//! shuffles the same three). A trial that fails is recorded and skipped, and the scores are the mean
//! per sub-dimension over the trials that answered (MCP-Bench's rule); the reasoning kept is the
//! first answering trial's. The headline scores are then `task_completion = mean(task_fulfillment,
//! grounding)`, `tool_selection = mean(tool_appropriateness, parameter_accuracy)`, `planning =
//! mean(dependency_awareness, parallelism_efficiency)`, and `overall` their mean. MCP-Bench's
//! default is stability on with five trials (`--mcp-bench`); cosmos's is one (`[judge] trials`).
//! The seeds come from fastrand 2's generator: the order each trial used is recorded beside its
//! seed, so a file says what its judge saw even if a later version draws other orders.
//!
//! **The judge's own spread.** A run's score is a mean of its trials; the trials' sample variance
//! is kept per run (`metrics.judge.trial_variance`), the group's intervals take it into account
//! (docs/report-format.md, "Intervals"), and `judge_spread` shows, per sub-dimension and headline score, the standard
//! deviation between runs beside the judge's own between trials.
//!
//! **Parity, measured.** `scripts/judge-parity.py --mcp-bench YOUR_CHECKOUT RUNS…` imports
//! MCP-Bench's code from your own checkout (nothing of it is copied here) and, for each run, builds
//! MCP-Bench's judge request with MCP-Bench's code (the executor's round summaries, the judge's
//! execution summary and randomised prompt) and cosmos's with `cosmos judge --print-prompts`, then
//! prints which facts each holds; with `--score --config cosmos.toml` both judges also score each
//! run with the `judge` role's endpoint and the script prints per-dimension means, their mean
//! difference and how often they agree.
//!
//! Measured on the twelve runs of `sample_runs/` (2026-12-02, MCP-Bench at commit 09e5233, seed 1,
//! one trial per judge, the local model of `scripts/local-model.sh` as both judges with completions
//! capped at 1,000 tokens):
//!
//! - **Facts.** Every fact MCP-Bench's request held, cosmos's held too, on every run: the task the
//!   agent saw, the concrete task, the dependency analysis, all 188 tool listings, all 36 calls
//!   with their arguments and results, the round count, the success count, the answer, the six
//!   sub-dimensions, the bands, the defect-rate mapping, the calibration rules and reasoning before
//!   scores. cosmos's also held 160 of the 176 tools' input fields (MCP-Bench's none; the other 16
//!   lie past the 500-character cut of a long schema).
//! - **Scores** (11 runs; the twelfth's cosmos reply hit the 1,000-token cap and was recorded as
//!   the judge's error): this 1.5B model gives one score to all six sub-dimensions of a run, so the
//!   table is one row: MCP-Bench's judge 8.82 on average, cosmos's 6.91, a mean difference of
//!   −1.91; within one point on 6 of 11 runs, equal on 2. MCP-Bench's mean includes a run it scored
//!   0 on every dimension, and cosmos's judge gave 4, the calibration's default, on five runs where
//!   MCP-Bench's gave 8–10. With a model this small the difference says more about how each prompt
//!   is worded than about the rubric; the measurement is the script's to repeat with the model the
//!   paper used.

pub(crate) mod evidence;
pub(crate) mod rubric;

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
