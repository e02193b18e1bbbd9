//! What the judge is shown of a run (docs/report-format.md, "The judge"), the facts MCP-Bench's
//! `LLMJudge` is given: the task the agent saw, the concrete task and the dependency analysis
//! (both marked as unseen by the agent), every available tool grouped by server, an execution
//! summary (counts, then each round's calls and results), the number of rounds and the final
//! answer.
//!
//! cosmos makes one real call at a time, so every call is a round of its own. Results are
//! quoted whole up to MCP-Bench's summary threshold (1,000 tokens of 4 characters); a longer
//! result is cut to its first 4,000 characters (an error to 1,000), where MCP-Bench's agent has
//! an LLM summarise it first, and the line says how long it was.
//!
//! What the judge is shown of a run, MCP-Bench's facts: the task the agent saw, the
//! concrete task and dependency analysis (from the header, or `--tasks` for older files), every
//! tool by server, the execution summary round by round (one call per round), the answer.

use crate::task::Task;
use cosmos_trajectory::event::JudgeEvidence;
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::run::Run;

/// MCP-Bench's estimate of tokens: characters / 4.
pub const CHARS_PER_TOKEN: usize = 4;
/// Results up to this many tokens are quoted whole (MCP-Bench `content_summary_threshold`).
const WHOLE_TOKENS: usize = 1_000;
/// A longer result keeps this many characters (MCP-Bench `content_truncate_length`).
const RESULT_CHARS: usize = 4_000;
/// A longer error keeps this many characters (MCP-Bench `error_truncate_length`).
const ERROR_CHARS: usize = 1_000;
/// A tool's description keeps this many characters (as MCP-Bench lists tools).
const DESCRIPTION_CHARS: usize = 500;
/// A tool's input schema keeps this many characters.
const SCHEMA_CHARS: usize = 500;

/// The evidence for one run.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// What the agent was asked.
    pub request: String,
    /// The concrete task, when known.
    pub concrete: Option<String>,
    /// The task's dependency analysis, when known.
    pub dependency_analysis: Option<String>,
    /// The available tools, grouped by server.
    pub tools: String,
    /// How many tools.
    pub tool_count: u32,
    /// The counts line of the execution summary.
    pub counts: String,
    /// Each round's calls and results (what compression shortens).
    pub history: String,
    /// Rounds.
    pub rounds: u64,
    /// The final answer.
    pub answer: String,
}

impl Evidence {
    /// The evidence of `run`; `task` (from `cosmos judge --tasks`) fills in the concrete task
    /// and the dependency analysis when the run's header lacks them (files recorded before the
    /// header kept the analysis).
    pub fn of(run: &Run, task: Option<&Task>) -> Self {
        let header = &run.header.task;
        let concrete = header
            .reference
            .clone()
            .or_else(|| task.and_then(|t| t.reference.clone()));
        let dependency_analysis = header
            .dependency_analysis
            .clone()
            .or_else(|| task.and_then(|t| t.dependency_analysis.clone()));
        let (tools, tool_count) = tool_list(run);
        let (counts, history, rounds) = execution(run);
        Self {
            request: header.request.clone(),
            concrete,
            dependency_analysis,
            tools,
            tool_count,
            counts,
            history,
            rounds,
            answer: run
                .answer_at(run.len())
                .unwrap_or("(no answer)")
                .to_string(),
        }
    }

    /// The facts recorded in the judgement.
    pub fn facts(&self) -> JudgeEvidence {
        JudgeEvidence {
            concrete_task: self.concrete.is_some(),
            dependency_analysis: self.dependency_analysis.is_some(),
            tools: self.tool_count,
            rounds: self.rounds,
            compressed: None,
        }
    }

    /// The evidence as the prompt shows it.
    pub fn text(&self) -> String {
        let mut s = String::from(
            "# The evidence\nScore only from what follows; the agent saw the task and the tools, \
             nothing else here.\n\n",
        );
        match &self.concrete {
            Some(concrete) => s.push_str(&format!(
                "## Task the agent was given\n{}\n\n## Concrete task (for judging only)\nThe \
                 agent never saw this version; it saw only the vaguer one above, and a different \
                 reading of that may still be valid.\n{concrete}\n\n",
                self.request
            )),
            None => s.push_str(&format!("## Task\n{}\n\n", self.request)),
        }
        if let Some(analysis) = &self.dependency_analysis {
            s.push_str(&format!(
                "## Dependency analysis (for judging only)\nWritten when the task was made, to \
                 show how its tool calls depend on each other; the agent never saw it.\n\
                 {analysis}\n\n"
            ));
        }
        s.push_str(&format!(
            "## Available tools ({})\n{}\n\n## Execution summary\n{}\n{}\n## Total rounds\n{}\n\n\
             ## Final answer\n{}\n",
            self.tool_count, self.tools, self.counts, self.history, self.rounds, self.answer
        ));
        s
    }
}

/// The run's tool catalogue grouped by server (sorted), each tool with its description and
/// the shape of its input; and how many tools.
fn tool_list(run: &Run) -> (String, u32) {
    let mut by_server: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for t in &run.header.tools {
        let (server, name) = t.name.split_once(':').unwrap_or(("(no server)", &t.name));
        let description = match t.description.trim() {
            "" => "(no description)".to_string(),
            d => first_chars(&d.replace('\n', " "), DESCRIPTION_CHARS),
        };
        let schema = first_chars(&t.input_schema.to_string(), SCHEMA_CHARS);
        by_server.entry(server).or_default().push(format!(
            "  - {server}:{name}: {description}\n    input: {schema}"
        ));
    }
    if by_server.is_empty() {
        return ("(none)".into(), 0);
    }
    let mut out = Vec::new();
    for (server, tools) in &by_server {
        out.push(format!("[{server}] ({} tools)", tools.len()));
        out.extend(tools.iter().cloned());
    }
    (out.join("\n"), run.header.tools.len() as u32)
}

/// The counts line, each round's lines, and the number of rounds.
fn execution(run: &Run) -> (String, String, u64) {
    let (mut ok, mut failed) = (Vec::new(), Vec::new());
    let mut history = String::new();
    let mut rounds = 0;
    // A fork's replayed history included: its answer rests on those results too.
    for at in run.calls_with_replayed() {
        let event = run.event(at as usize);
        let Some(RecordedCall {
            tool,
            server,
            arguments,
            result,
            error,
            ..
        }) = RecordedCall::of(&event.body)
        else {
            continue;
        };
        rounds += 1;
        let server = server.unwrap_or("an unknown server");
        let succeeded = !result.is_error && error.is_none();
        let text = match error {
            Some(e) if result.text.is_empty() => e,
            _ => result.text.as_str(),
        };
        let quoted = quote(text, if succeeded { RESULT_CHARS } else { ERROR_CHARS });
        history.push_str(&format!(
            "Round {rounds}: `{tool}` on {server} with arguments {arguments} {}. {}: {quoted}\n",
            if succeeded { "succeeded" } else { "failed" },
            if succeeded { "Result" } else { "Error" },
        ));
        if succeeded { &mut ok } else { &mut failed }.push(tool.to_string());
    }
    if rounds == 0 {
        return ("No tool was called.".into(), String::new(), 0);
    }
    let mut counts = format!(
        "Rounds: {rounds}; calls: {}; succeeded: {}; failed: {}",
        ok.len() + failed.len(),
        ok.len(),
        failed.len()
    );
    if !ok.is_empty() {
        counts.push_str(&format!("; succeeded: {}", ok.join(", ")));
    }
    if !failed.is_empty() {
        counts.push_str(&format!("; failed: {}", failed.join(", ")));
    }
    (counts, history, rounds)
}

/// `text` whole when it is at most MCP-Bench's threshold, else its first `keep` characters
/// saying how long it was.
fn quote(text: &str, keep: usize) -> String {
    let tokens = text.len() / CHARS_PER_TOKEN;
    if tokens <= WHOLE_TOKENS {
        return text.to_string();
    }
    format!(
        "(cut from about {tokens} tokens) {}",
        first_chars(text, keep)
    )
}

/// The first `n` characters of `text`, with `…` when it had more.
pub fn first_chars(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_results_are_cut_and_say_so_short_ones_are_whole() {
        assert_eq!(quote("short", RESULT_CHARS), "short");
        let long = "x".repeat(10_000);
        let q = quote(&long, RESULT_CHARS);
        assert!(q.starts_with("(cut from about 2500 tokens) "));
        assert_eq!(q.chars().filter(|c| *c == 'x').count(), RESULT_CHARS);
        assert_eq!(first_chars("héllo", 2), "hé…");
        assert_eq!(first_chars("hé", 2), "hé");
    }
}
