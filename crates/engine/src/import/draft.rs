//! One imported run as it is being read: the header, the events in order, and what the source
//! did not record. Every reader builds its runs here, so every format maps turns, calls and
//! answers the same way.
//!
//! Is the one builder: times become `t_ms` from the first time seen (an event without
//! one keeps its place and marks times unrecorded), an MCP name in Claude Code's form becomes
//! `SERVER:TOOL`, results are capped as cosmos caps any result, a call without a result gets
//! `NO_RESULT`, and `finish` lists what the source never recorded. Its events are the run, held
//! until written: memory is the largest session or sample.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use cosmos_trajectory::event::{
    AgentInfo, AgentKind, EventBody, Header, ModelInfo, NO_RESULT, Observation, Role, RunStatus,
    Source, TaskInfo, ToolInfo, Totals,
};
use cosmos_trajectory::fnv::fnv1a;
use cosmos_trajectory::writer::file_safe;

use crate::mcp::server::MAX_RESULT_BYTES;

/// A run read from another program's file: its header and its events, `run_finished` last.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The header, with its [`Source`].
    pub header: Header,
    /// `(t_ms, body)` in the order they happened.
    pub events: Vec<(u64, EventBody)>,
}

/// One tool call as a source recorded it.
#[derive(Debug, Clone, Default)]
pub struct Call {
    /// The tool's name in the source (`mcp__time__get_current_time`, `get_current_time`).
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
    /// Its result, when one came.
    pub result: Option<Observation>,
    /// Why it failed, when the source says.
    pub error: Option<String>,
    /// How long it took, when the source says.
    pub latency_ms: Option<u64>,
    /// When it was made, when the source says.
    pub at: Option<DateTime<Utc>>,
}

/// An MCP tool's cosmos name from Claude Code's (`mcp__SERVER__TOOL` → `SERVER:TOOL`), with its
/// server; any other name is kept as it is, without a server.
pub fn mcp_tool_name(name: &str) -> (String, Option<String>) {
    let parts = name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .filter(|(server, tool)| !server.is_empty() && !tool.is_empty());
    match parts {
        Some((server, tool)) => (format!("{server}:{tool}"), Some(server.to_string())),
        None => (name.to_string(), None),
    }
}

/// A run being read.
#[derive(Debug)]
pub struct Draft {
    header: Header,
    source: Source,
    events: Vec<(u64, EventBody)>,
    /// The time `t_ms` counts from: the header's start, else the first time seen.
    start: Option<DateTime<Utc>>,
    /// The latest `t_ms` given, for events the source gives no time (their order is kept).
    last_t_ms: u64,
    untimed: bool,
    no_latency: bool,
    no_tokens: bool,
    /// Calls whose source named their server (`mcp__SERVER__TOOL`, a span's server).
    served: u64,
    steps: u64,
    answered: bool,
    /// The first user message was met (it is the request; later ones are notes).
    asked: bool,
}

impl Draft {
    /// A run of `source` (its format, file and id) on a task called `task_id`, started at
    /// `started` when the source says.
    pub fn new(source: Source, task_id: &str, started: Option<DateTime<Utc>>) -> Self {
        // The same session of the same file is the same run however often it is imported,
        // and however its path was typed (`./f.json`, `f.json`, through a link).
        let file = std::fs::canonicalize(&source.file)
            .map_or_else(|_| source.file.clone(), |p| p.display().to_string());
        let run_id = format!(
            "import-{}-{}-{:08x}",
            source.format,
            file_safe(&source.id, 80),
            fnv1a(format!("{file}\n{}", source.id).as_bytes()) as u32
        );
        let mut header = Header::new(
            run_id,
            TaskInfo {
                id: task_id.to_string(),
                source: Some(source.file.clone()),
                ..TaskInfo::default()
            },
            AgentInfo {
                kind: AgentKind::External,
                settings: [("imported_from".to_string(), json!(source.format))].into(),
            },
            ModelInfo::default(),
        );
        header.started_at = started;
        Self {
            header,
            source,
            events: Vec::new(),
            start: started,
            last_t_ms: 0,
            untimed: false,
            no_latency: false,
            no_tokens: false,
            served: 0,
            steps: 0,
            answered: false,
            asked: false,
        }
    }

    /// Starts from a header cosmos itself wrote (an ATIF export of a cosmos run), keeping its
    /// run id, task, agent and settings; the source is still said.
    pub fn with_header(mut self, header: Header) -> Self {
        self.start = self.start.or(header.started_at);
        self.header = header;
        self
    }

    /// The header so far, to add what the source says of the run (tools, servers, roles).
    pub fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }

    /// The source's record so far, to say what was skipped.
    pub fn skipped(&mut self, line: impl Into<String>) {
        self.source.skipped.push(line.into());
    }

    /// The model that made the run, when the source names it (the first one named counts).
    pub fn model(&mut self, model: &str) {
        if !model.is_empty() && self.header.planner.model.is_empty() {
            self.header.planner.model = model.to_string();
            self.source.model.get_or_insert_with(|| model.to_string());
        }
    }

    /// The agent that made the run, as the source names it.
    pub fn agent(&mut self, agent: impl Into<String>) {
        self.source.agent = Some(agent.into());
    }

    /// Adds the source's tool catalogue (names as the source gives them).
    pub fn tools(&mut self, tools: impl IntoIterator<Item = ToolInfo>) {
        for mut tool in tools {
            tool.name = mcp_tool_name(&tool.name).0;
            if self.header.tool(&tool.name).is_none() {
                self.header.tools.push(tool);
            }
        }
    }

    /// The time of an event, in ms from the start; an event without one keeps its place.
    pub fn at(&mut self, at: Option<DateTime<Utc>>) -> u64 {
        let Some(at) = at else {
            self.untimed = true;
            return self.last_t_ms;
        };
        let start = *self.start.get_or_insert(at);
        let t_ms = u64::try_from((at - start).num_milliseconds()).unwrap_or(0);
        self.last_t_ms = self.last_t_ms.max(t_ms);
        t_ms
    }

    /// A message from the user: the first is the task's request, a later one a note in the
    /// run's place (a multi-turn session).
    pub fn user(&mut self, at: Option<DateTime<Utc>>, text: &str) {
        let t_ms = self.at(at);
        let first = !std::mem::replace(&mut self.asked, true);
        if first && self.header.task.request.is_empty() {
            self.header.task.request = text.to_string();
        } else if !(first && self.header.task.request == text) {
            self.note(t_ms, "user", text);
        }
    }

    /// A message that is not the agent's (the system prompt, a later user message), kept as
    /// a note where it came.
    pub fn note(&mut self, t_ms: u64, who: &str, text: &str) {
        self.events.push((
            t_ms,
            EventBody::Annotation {
                node: None,
                event: None,
                text: text.to_string(),
                who: format!("{who} (imported)"),
            },
        ));
    }

    /// A verdict the source recorded of the run (an Inspect scorer's score): an event of its
    /// own (`source_scored`), kept as the source said it.
    pub fn scored(&mut self, at: Option<DateTime<Utc>>, score: Score) {
        let t_ms = self.at(at);
        let passed = passed_by(&score.value);
        self.events.push((
            t_ms,
            EventBody::SourceScored {
                scorer: score.scorer,
                value: score.value,
                passed,
                answer: score.answer,
                explanation: score.explanation,
                target: score.target,
            },
        ));
    }

    /// One model turn: an LLM call of the planner with its tokens and its reply (`reply` is
    /// the assistant's message as cosmos records messages).
    pub fn turn(&mut self, turn: Turn) {
        let t_ms = self.at(turn.at);
        if turn.prompt_tokens.is_none() && turn.completion_tokens.is_none() {
            self.no_tokens = true;
        }
        if turn.latency_ms.is_none() {
            self.no_latency = true;
        }
        let model = turn.model.unwrap_or_default();
        self.model(&model);
        let model = if model.is_empty() {
            self.header.planner.model.clone()
        } else {
            model
        };
        self.events.push((
            t_ms,
            EventBody::LlmCall {
                role: Role::Planner,
                model,
                prompt_tokens: turn.prompt_tokens.unwrap_or(0),
                completion_tokens: turn.completion_tokens.unwrap_or(0),
                tokens_estimated: false,
                latency_ms: turn.latency_ms.unwrap_or(0),
                error: turn.error,
                messages: Some(Box::new(json!([turn.reply]))),
            },
        ));
    }

    /// One real tool call. A call the source has no result for is kept with [`NO_RESULT`] as
    /// its error, never given one.
    pub fn call(&mut self, call: Call) -> u64 {
        let t_ms = self.at(call.at);
        if call.latency_ms.is_none() {
            self.no_latency = true;
        }
        self.steps += 1;
        let (tool, server) = mcp_tool_name(&call.name);
        self.served += u64::from(server.is_some() || tool.contains(':'));
        let error = match (&call.result, call.error) {
            (_, Some(error)) => Some(error),
            (None, None) => Some(NO_RESULT.to_string()),
            (Some(_), None) => None,
        };
        let mut result = call.result.unwrap_or_default();
        result.cap_text(MAX_RESULT_BYTES);
        self.events.push((
            t_ms,
            EventBody::ToolCalled {
                step: self.steps,
                tool,
                server,
                arguments: Box::new(call.arguments),
                result,
                latency_ms: call.latency_ms.unwrap_or(0),
                node: None,
                error,
                origin: None,
                state_change: None,
            },
        ));
        self.steps
    }

    /// The agent's final answer.
    pub fn answer(&mut self, at: Option<DateTime<Utc>>, text: &str) {
        let t_ms = self.at(at);
        self.answered = true;
        self.events.push((
            t_ms,
            EventBody::Answer {
                text: text.to_string(),
            },
        ));
    }

    /// An event cosmos itself recorded (from an ATIF export's extras), at its own time.
    pub fn event(&mut self, t_ms: u64, body: EventBody) {
        if let EventBody::ToolCalled { step, .. } = &body {
            self.steps = self.steps.max(*step);
        }
        if matches!(body, EventBody::Answer { .. }) {
            self.answered = true;
        }
        self.last_t_ms = self.last_t_ms.max(t_ms);
        self.events.push((t_ms, body));
    }

    /// How many real calls so far.
    pub fn calls(&self) -> u64 {
        self.steps
    }

    /// The run, ended with `run_finished`: completed when it answered, failed otherwise
    /// (`failure` says why, when the source does; a run that just stops says so). `ended`
    /// is the source's own ending, when it is one cosmos recorded.
    pub fn finish(mut self, failure: Option<String>, ended: Option<Ended>) -> Imported {
        let unrecorded = [
            (self.untimed, Source::TIMES),
            (self.no_latency, Source::LATENCIES),
            (self.no_tokens, Source::TOKENS),
            (self.header.tools.is_empty(), Source::TOOLS),
            // Calls, none of which named its server: how many servers is unknown, not 0.
            (self.steps > 0 && self.served == 0, Source::SERVERS),
        ];
        self.source.unrecorded = unrecorded
            .iter()
            .filter(|(missing, _)| *missing)
            .map(|(_, name)| name.to_string())
            .collect();
        self.header.started_at = self.header.started_at.or(self.start);
        self.header.source = Some(self.source);
        let t_ms = ended.as_ref().map_or(self.last_t_ms, |e| e.t_ms);
        let body = match ended {
            Some(ended) => EventBody::RunFinished {
                status: ended.status,
                error: ended.error,
                ending: ended.ending,
                totals: Totals::default(),
                end_digest: ended.end_digest,
                state_match: ended.state_match,
            },
            None => {
                let (status, error) = match (failure, self.answered) {
                    (Some(why), _) => (RunStatus::Failed, Some(why)),
                    (None, true) => (RunStatus::Completed, None),
                    (None, false) => (
                        RunStatus::Failed,
                        Some("the source ends without an answer".to_string()),
                    ),
                };
                EventBody::RunFinished {
                    status,
                    error,
                    ending: Some(cosmos_trajectory::event::Ending::SourceEnded),
                    totals: Totals::default(),
                    end_digest: Default::default(),
                    state_match: Default::default(),
                }
            }
        };
        // Judgements follow `run_finished`; everything else comes before it.
        let judged_from = self
            .events
            .iter()
            .position(|(_, body)| matches!(body, EventBody::JudgeScored { .. }))
            .unwrap_or(self.events.len());
        self.events.insert(judged_from, (t_ms, body));
        Imported {
            header: self.header,
            events: self.events,
        }
    }
}

/// How a run cosmos recorded ended, as its exported `run_finished` says.
#[derive(Debug, Clone)]
pub struct Ended {
    /// When it ended.
    pub t_ms: u64,
    /// Its status.
    pub status: RunStatus,
    /// Its error.
    pub error: Option<String>,
    /// Its ending.
    pub ending: Option<cosmos_trajectory::event::Ending>,
    /// Its end digests.
    pub end_digest: std::collections::BTreeMap<String, String>,
    /// Its state match.
    pub state_match: std::collections::BTreeMap<String, cosmos_trajectory::event::StateMatch>,
}

/// One model turn as a source recorded it.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// When it was made.
    pub at: Option<DateTime<Utc>>,
    /// The model, when named (else the run's).
    pub model: Option<String>,
    /// Prompt tokens, when counted.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, when counted.
    pub completion_tokens: Option<u64>,
    /// How long it took, when said.
    pub latency_ms: Option<u64>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// The assistant's message: `{"role":"assistant","content":…,"tool_calls"?:[…]}`.
    pub reply: Value,
}

/// The text of a content value as sources write it: a string, or a list of parts whose text
/// parts are joined (other parts become a placeholder, as cosmos records MCP results).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|part| match part {
                Value::String(text) => text.clone(),
                _ => match part.get("text").and_then(Value::as_str) {
                    Some(text) => text.to_string(),
                    None => format!(
                        "[{}]",
                        part.get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("content")
                    ),
                },
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A source's timestamp (RFC 3339; one without an offset is read as UTC).
pub fn timestamp(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|t| t.and_utc())
        })
}

/// A verdict a source recorded: who scored, the value as written, and what the scorer read.
#[derive(Debug, Clone)]
pub struct Score {
    /// The scorer (`includes`, `model_graded_qa`).
    pub scorer: String,
    /// The value as written (`"C"`, `"I"`, `0.5`).
    pub value: Value,
    /// The answer the scorer read.
    pub answer: Option<String>,
    /// The scorer's explanation.
    pub explanation: Option<String>,
    /// The target scored against.
    pub target: Option<Value>,
}

impl Score {
    /// A score in Inspect's shape (`{value, answer?, explanation?}`) by `scorer`, scored
    /// against `target`.
    pub fn of_inspect(scorer: &str, score: &Value, target: Option<&Value>) -> Self {
        let text = |key: &str| score.get(key).and_then(Value::as_str).map(str::to_string);
        Self {
            scorer: scorer.to_string(),
            value: score.get("value").cloned().unwrap_or(Value::Null),
            answer: text("answer"),
            explanation: text("explanation"),
            target: target.filter(|t| !t.is_null()).cloned(),
        }
    }
}

/// What a score's value says of the run, by Inspect's conventions: `C` (correct) or a 1 or
/// `true` passed it; `I` (incorrect), `N` (no answer), a 0 or `false` failed it; `P`
/// (partial), a number between and anything else say neither.
pub fn passed_by(value: &Value) -> Option<bool> {
    match value {
        Value::String(v) => match v.as_str() {
            "C" => Some(true),
            "I" | "N" => Some(false),
            _ => None,
        },
        Value::Bool(b) => Some(*b),
        Value::Number(n) => {
            let x = n.as_f64()?;
            if x == 1.0 {
                Some(true)
            } else if x == 0.0 {
                Some(false)
            } else {
                None
            }
        }
        _ => None,
    }
}
