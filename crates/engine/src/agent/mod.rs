//! Agents (docs/design.md, "Agents"): ReAct, ReAct-Plan-Exec and SPIRAL-Exec over one
//! pipeline. An agent sees its environment (`Env`: the task, the ports, the budget) and writes
//! events to an [`ports::EventSink`]; it never draws.
//!
//! The pipeline's steps, each written once: `planner` decides or proposes, `rehearse`
//! validates, simulates, evaluates and records a candidate, `mcts` searches over rehearsals,
//! `execute` runs a plan on the real servers, `answer` writes the answer.
//!
//! Agents hold ports, never concrete clients: the chat model (`llm::chat::ChatModel`, inside each
//! role's `LlmClient`), the tool host and the event sink (`ports.rs`). `testing.rs` (tests only) has
//! scripted ports that drive whole agents in process.
//!
//! - `mod.rs`: `Env` (task, tool host, tools and function names, roles, world model, the budget
//!   `Meter`, the stop signal) with `bounded` (every await of a run ends at the earlier of its own
//!   end, a stop, and the run's remaining time; a stop cancels what is in flight) and the one
//!   place that builds `llm_call` events.
//!
//! # One pipeline
//!
//! - **decide / propose**: the next action or K candidates; in JSON mode the reply's schema has
//!   one branch per tool with its own input schema, so an enforcing decoder can only call a real
//!   tool; a reply that is no usable decision is `decision_rejected`, told to the planner, never a
//!   finish.
//! - **rehearse** (validate → simulate → route → evaluate → record): an invalid call gets the
//!   validator's verdict, never a simulation; a world-model failure is an `error` and
//!   `not_simulated` (never backpropagated, planned or scored); routing may check an unsure
//!   prediction of a read-only tool for real and records how it treated each (`route`).
//! - **execute**: the plan's calls for real, each linked to its node; routing's grounding is the
//!   one other real call (`node_grounded`, never a step). Both reach a server (or a fork's
//!   recording) through `real_call`, the one path, bounded by the run's stop and time budget.
//! - **budget**: one meter per run; time is a deadline every await respects, and what is in
//!   flight is cancelled and still recorded. **answer**: from the real results only.

pub(crate) mod answer;
pub(crate) mod execute;
pub(crate) mod fork;
pub(crate) mod function_names;
pub(crate) mod mcts;
pub(crate) mod plan_exec;
pub(crate) mod planner;
pub(crate) mod ports;
pub(crate) mod prompt;
pub(crate) mod react;
mod real_call;
pub(crate) mod recorder;
pub(crate) mod rehearse;
pub(crate) mod search_env;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod spiral;

pub use execute::{PlannedCall, record_call};
pub use fork::OnMiss;
pub use function_names::{FunctionNames, function_name};
pub use mcts::search;
pub use planner::{decision_schema, parse_decision};
pub use ports::{EventSink, Tap};
pub use recorder::{Hook, Recorder};
pub use rehearse::{Rehearsal, base_reward, predict, record as record_rehearsal, rehearse};
pub use search_env::{Answer, Critique, Prediction, Proposal, SearchEnv, Stopped};
pub use session::{
    NO_SERVER_STARTED, Outcome, Prepared, RunSpec, StopSignal, TaskSource, execute as execute_run,
    file_name as run_file_name, prepare as prepare_run, redactor as run_redactor, stop_on_signals,
};
pub use settings::{PlanRule, Settings, Settled};

#[cfg(test)]
mod endings;
#[cfg(test)]
mod testing;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::sync::watch;

use self::ports::ToolHost;
use crate::llm::chat::{Completion, LlmError};
use crate::llm::client::LlmClient;
use crate::task::Task;
use crate::world_model::{LlmUsage, WorldModel};
use cosmos_trajectory::catalog::ToolCatalog;
use cosmos_trajectory::event::{Ending, EventBody, Role, RunStatus, ToolInfo};

/// Limits on one run.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Most planning steps (ReAct turns, or plan length).
    pub max_steps: usize,
    /// Most tokens over all roles.
    pub max_tokens: u64,
    /// Most wall time.
    pub max_wall: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_steps: 12,
            max_tokens: 400_000,
            max_wall: Duration::from_secs(3_600),
        }
    }
}

/// What a run has spent against its [`Budget`]: the one place a budget is checked. Shared
/// (`Arc`) with the search, whose concurrent calls count their tokens here too.
#[derive(Debug)]
pub struct Meter {
    budget: Budget,
    started: Instant,
    tokens: AtomicU64,
}

impl Meter {
    /// A meter whose clock starts now.
    pub fn new(budget: Budget) -> Self {
        Self {
            budget,
            started: Instant::now(),
            tokens: AtomicU64::new(0),
        }
    }

    /// The budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Counts tokens spent.
    pub fn spend(&self, tokens: u64) {
        self.tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// Tokens left of the token budget.
    pub fn tokens_left(&self) -> u64 {
        self.budget
            .max_tokens
            .saturating_sub(self.tokens.load(Ordering::Relaxed))
    }

    /// Time left of the wall-time budget.
    pub fn time_left(&self) -> Duration {
        self.budget.max_wall.saturating_sub(self.started.elapsed())
    }

    /// What the time budget says once it has run out.
    pub fn out_of_time(&self) -> String {
        format!("time budget of {}s spent", self.budget.max_wall.as_secs())
    }

    /// Which budget is spent, if any.
    pub fn over(&self) -> Option<Limit> {
        if self.tokens.load(Ordering::Relaxed) >= self.budget.max_tokens {
            return Some(Limit {
                ending: Ending::TokenLimit,
                message: format!("token budget of {} spent", self.budget.max_tokens),
            });
        }
        if self.started.elapsed() >= self.budget.max_wall {
            return Some(Limit {
                ending: Ending::TimeLimit,
                message: self.out_of_time(),
            });
        }
        None
    }
}

/// A limit that stopped an agent: which one (as the run's ending) and in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// The ending it gives the run.
    pub ending: Ending,
    /// What happened, for the `agent` error event.
    pub message: String,
}

impl Limit {
    /// The step limit of `max_steps`, reached `while_` (e.g. "while planning"; may be empty).
    pub fn steps(max_steps: usize, while_: &str) -> Self {
        let sep = if while_.is_empty() { "" } else { " " };
        Self {
            ending: Ending::StepLimit,
            message: format!("step limit of {max_steps} reached{sep}{while_}"),
        }
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The LLM roles an agent talks to.
#[derive(Clone)]
pub struct Roles {
    /// Proposes actions.
    pub planner: Arc<LlmClient>,
    /// Scores rehearsed steps (SPIRAL-Exec).
    pub critic: Arc<LlmClient>,
    /// Writes the answer.
    pub summarizer: Arc<LlmClient>,
}

/// Everything an agent works with.
pub struct Env {
    /// The task.
    pub task: Task,
    /// The real tools.
    pub host: Arc<dyn ToolHost>,
    /// Their descriptions.
    pub tools: Vec<ToolInfo>,
    /// The tools with compiled schemas.
    pub catalog: ToolCatalog,
    /// Tool names as function names, for roles that call tools natively.
    pub functions: FunctionNames,
    /// The LLM roles.
    pub roles: Roles,
    /// The world model, for agents that rehearse.
    pub world_model: Option<Arc<dyn WorldModel>>,
    /// What the run has spent.
    pub meter: Arc<Meter>,
    /// Becomes true when the run must stop (Ctrl-C, SIGTERM, the UI's stop key).
    pub stop: watch::Receiver<bool>,
    /// When the run is a fork: the original's steps before the fork point and the recording
    /// that may answer its calls.
    pub fork: Option<fork::Fork>,
    /// Routing: below this confidence a read-only tool's prediction is replaced by the real
    /// call while planning (`mcts::Settings::go_real_below`).
    pub go_real_below: Option<f64>,
    /// Routing by a file (`--routing`): each tool's predictions held to its own threshold, a
    /// tool the file does not trust never trusted; in place of `go_real_below`.
    pub routing: Option<Arc<crate::metrics::routing_file::RoutingFile>>,
    /// Each sandboxed server's state at the run's start, as fields (the header's
    /// `start_state`): what a world model that tracks state is told first.
    pub start_states: std::collections::BTreeMap<String, serde_json::Value>,
}

impl Env {
    /// An environment; the budget clock starts now. With a planner that calls tools natively,
    /// fails when two tools would get the same function name (a call could reach the wrong
    /// server); in JSON mode function names are never used.
    pub fn new(
        task: Task,
        host: Arc<dyn ToolHost>,
        roles: Roles,
        world_model: Option<Arc<dyn WorldModel>>,
        budget: Budget,
        stop: watch::Receiver<bool>,
    ) -> Result<Self> {
        let tools = host.tools();
        let catalog = ToolCatalog::new(&tools);
        let functions = if roles.planner.uses_tools() {
            FunctionNames::new(&tools)?
        } else {
            FunctionNames::default()
        };
        Ok(Self {
            task,
            host,
            tools,
            catalog,
            functions,
            roles,
            world_model,
            meter: Arc::new(Meter::new(budget)),
            stop,
            fork: None,
            go_real_below: None,
            routing: None,
            start_states: Default::default(),
        })
    }

    /// The steps taken before the agent starts: a fork's history, else none.
    pub fn prior_steps(&self) -> Vec<crate::world_model::HistoryStep> {
        self.fork
            .as_ref()
            .map_or_else(Vec::new, fork::Fork::history_steps)
    }

    /// The budget.
    pub fn budget(&self) -> &Budget {
        self.meter.budget()
    }

    /// True once a stop was asked for.
    pub fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Why the run must stop now, if it must: a stop request or a spent budget.
    pub fn should_stop(&self) -> Option<String> {
        if self.stopped() {
            return Some("stopped by the user".into());
        }
        self.meter.over().map(|limit| limit.message)
    }

    /// Runs `fut` until it ends, a stop comes, or the run's time budget runs out, whichever
    /// is first: every await of a run goes through here, so a hung server or endpoint cannot
    /// outlive the budget, and a stop cancels what is in flight (dropping it).
    pub async fn bounded<F: Future>(&self, fut: F) -> Bounded<F::Output> {
        let mut stop = self.stop.clone();
        if *stop.borrow() {
            return Bounded::Stopped;
        }
        let left = self.meter.time_left();
        // A stop sender that is gone can never ask for a stop: only `Ok` stops, and the
        // work wins when it is ready at the same time.
        tokio::select! {
            biased;
            out = fut => Bounded::Done(out),
            Ok(_) = stop.wait_for(|s| *s) => Bounded::Stopped,
            () = tokio::time::sleep(left) => Bounded::OutOfTime(self.meter.out_of_time()),
        }
    }

    /// Records an LLM call of `role`, successful or not, and counts its tokens.
    pub fn record_llm(
        &self,
        sink: &mut dyn EventSink,
        role: Role,
        result: Result<&Completion, &LlmError>,
        model: &str,
    ) -> Result<()> {
        // Tokens spent are tokens counted, a reply that could not be used included.
        self.meter.spend(match result {
            Ok(c) => c.tokens(),
            Err(e) => e.tokens(),
        });
        sink.emit(llm_call_event(role, model, result))
    }

    /// Records an LLM call that a stop or the time budget cut off before it answered: the
    /// endpoint may have spent tokens it never reported, and the run must not say it made no
    /// call.
    pub fn record_cut_llm(
        &self,
        sink: &mut dyn EventSink,
        role: Role,
        model: &str,
        started: std::time::Instant,
        end: &End,
    ) -> Result<()> {
        let why = end.error.as_deref().unwrap_or("stopped");
        let cut = LlmError::new(
            anyhow::anyhow!(
                "cut off after {:.1}s ({why}): the tokens it spent are unknown",
                started.elapsed().as_secs_f64()
            ),
            started.elapsed(),
        );
        let mut event = llm_call_event(role, model, Err(&cut));
        // Its 0 tokens are no count: the endpoint never said.
        if let EventBody::LlmCall {
            tokens_estimated, ..
        } = &mut event
        {
            *tokens_estimated = true;
        }
        sink.emit(event)
    }

    /// Records an `agent` error (a limit reached, a search cut short).
    pub fn record_agent_error(&self, sink: &mut dyn EventSink, message: String) -> Result<()> {
        sink.emit(EventBody::Error {
            source: cosmos_trajectory::event::ErrorSource::Agent,
            name: None,
            message,
            stderr_tail: None,
            step: None,
        })
    }
}

/// How a [`Env::bounded`] await ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Bounded<T> {
    /// It finished.
    Done(T),
    /// A stop came first.
    Stopped,
    /// The run's time budget ran out first (the message says so).
    OutOfTime(String),
}

impl<T> Bounded<T> {
    /// The output, or how the run ends when there is none: interrupted by a stop, failed by
    /// the budget (`while` says what was cut off).
    pub fn or_end(self, while_: &str) -> std::result::Result<T, End> {
        match self {
            Bounded::Done(out) => Ok(out),
            Bounded::Stopped => Err(End::interrupted()),
            Bounded::OutOfTime(why) => Err(End::out_of_time(&why, while_)),
        }
    }
}

/// The `llm_call` event of a call that succeeded or failed.
pub fn llm_call_event(
    role: Role,
    model: &str,
    result: Result<&Completion, &LlmError>,
) -> EventBody {
    let (prompt_tokens, completion_tokens, tokens_estimated, latency, error, messages) =
        match result {
            Ok(c) => (
                c.prompt_tokens,
                c.completion_tokens,
                c.estimated,
                c.latency,
                None,
                c.messages.clone(),
            ),
            Err(e) => {
                // Tokens spent are tokens counted, whatever became of the reply.
                let (prompt, completion, estimated) = e.spent();
                (
                    prompt,
                    completion,
                    estimated,
                    e.latency,
                    Some(e.to_string()),
                    e.messages.clone(),
                )
            }
        };
    EventBody::LlmCall {
        role,
        model: model.to_string(),
        prompt_tokens,
        completion_tokens,
        tokens_estimated,
        latency_ms: latency.as_millis() as u64,
        error,
        messages: messages.map(Box::new),
    }
}

/// The `llm_call` event of a world model's own LLM call.
pub fn usage_event(usage: &LlmUsage) -> EventBody {
    EventBody::LlmCall {
        role: Role::WorldModel,
        model: usage.model.clone(),
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        tokens_estimated: usage.estimated,
        latency_ms: usage.latency.as_millis() as u64,
        error: usage.error.clone(),
        messages: usage.messages.clone().map(Box::new),
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{ScriptedChat, ScriptedTools};
    use super::*;
    use crate::llm::endpoints::OutputMode;
    use cosmos_trajectory::event::Observation;

    fn env_with(output: OutputMode) -> Result<Env> {
        let planner = Arc::new(LlmClient::over(ScriptedChat::new(output, |_| {
            Ok(Completion::default())
        })));
        let tools = ScriptedTools::new(&["Time MCP:now", "Time_MCP:now"], |_, _| {
            Observation::default()
        });
        let (_, stop) = watch::channel(false);
        let roles = Roles {
            planner: planner.clone(),
            critic: planner.clone(),
            summarizer: planner,
        };
        Env::new(Task::default(), tools, roles, None, Budget::default(), stop)
    }

    #[tokio::test]
    async fn the_longest_time_budget_neither_overflows_nor_cuts_anything() {
        let meter = Meter::new(Budget {
            max_wall: Duration::from_secs(u64::MAX),
            ..Budget::default()
        });
        assert_eq!(meter.over(), None);
        assert!(meter.time_left() > Duration::from_secs(1 << 60));
        let mut env = env_with(OutputMode::Json).unwrap();
        env.meter = Arc::new(meter);
        assert_eq!(env.bounded(async { 7 }).await, Bounded::Done(7));
        // And a spent budget cuts at once.
        env.meter = Arc::new(Meter::new(Budget {
            max_wall: Duration::ZERO,
            ..Budget::default()
        }));
        let cut = env.bounded(std::future::pending::<()>()).await;
        assert_eq!(cut, Bounded::OutOfTime("time budget of 0s spent".into()));
    }

    #[test]
    fn colliding_function_names_are_refused_only_when_the_planner_calls_tools() {
        assert!(env_with(OutputMode::Json).is_ok());
        let err = env_with(OutputMode::Tools).err().unwrap().to_string();
        assert!(
            err.contains("\"Time MCP:now\"") && err.contains("\"Time_MCP:now\""),
            "{err}"
        );
    }
}

/// How an agent's run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct End {
    /// The status for `run_finished`.
    pub status: RunStatus,
    /// Why, when not completed.
    pub error: Option<String>,
    /// What brought the run to its end, when the agent knows.
    pub ending: Option<Ending>,
}

impl End {
    /// Completed.
    pub fn completed() -> Self {
        Self {
            status: RunStatus::Completed,
            error: None,
            ending: None,
        }
    }
    /// Interrupted by a stop.
    pub fn interrupted() -> Self {
        Self {
            status: RunStatus::Interrupted,
            error: Some("stopped by the user".into()),
            ending: Some(Ending::Interrupted),
        }
    }
    /// Failed.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            status: RunStatus::Failed,
            error: Some(error.into()),
            ending: None,
        }
    }
    /// Failed by the time budget, `why` saying so and `while_` what it cut off.
    pub fn out_of_time(why: &str, while_: &str) -> Self {
        Self::failed(format!("{why} while {while_}")).ending(Ending::TimeLimit)
    }
    /// The same end, with what brought it about (kept when one is already set: the first
    /// cause found is the one recorded).
    pub fn ending(self, ending: Ending) -> Self {
        Self {
            ending: self.ending.or(Some(ending)),
            ..self
        }
    }
}
