//! Agents (DESIGN.md, "Agents"): ReAct, ReAct-Plan-Exec, the phase-2 executor and answer
//! synthesis. An agent sees its environment (`Env`) and writes events through a
//! `Recorder`; it never draws.

pub mod answer;
pub mod execute;
pub mod mcts;
pub mod plan_exec;
pub mod planner;
pub mod react;
pub mod recorder;
pub mod session;
pub mod spiral;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::sync::watch;

use self::recorder::Recorder;
use crate::llm::client::{Completion, LlmClient, LlmError};
use crate::mcp::pool::McpPool;
use crate::task::Task;
use crate::trajectory::catalog::ToolCatalog;
use crate::trajectory::event::{EventBody, Role, RunStatus, ToolInfo};
use crate::world_model::{LlmUsage, WorldModel};

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

/// Everything an agent works with.
pub struct Env {
    /// The task.
    pub task: Task,
    /// The real servers.
    pub pool: McpPool,
    /// Their tools.
    pub tools: Vec<ToolInfo>,
    /// The tools with compiled schemas.
    pub catalog: ToolCatalog,
    /// The planner role.
    pub planner: Arc<LlmClient>,
    /// The summarizer role.
    pub summarizer: Arc<LlmClient>,
    /// The critic role (SPIRAL-Exec).
    pub critic: Arc<LlmClient>,
    /// The world model, for agents that rehearse.
    pub world_model: Option<Arc<dyn WorldModel>>,
    /// Limits.
    pub budget: Budget,
    /// Becomes true when the run must stop (Ctrl-C, SIGTERM, the UI's stop key).
    pub stop: watch::Receiver<bool>,
    started: Instant,
    tokens: u64,
}

impl Env {
    /// An environment; the budget clock starts now.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        task: Task,
        pool: McpPool,
        planner: Arc<LlmClient>,
        summarizer: Arc<LlmClient>,
        critic: Arc<LlmClient>,
        world_model: Option<Arc<dyn WorldModel>>,
        budget: Budget,
        stop: watch::Receiver<bool>,
    ) -> Self {
        let tools = pool.tools();
        let catalog = ToolCatalog::new(&tools);
        Self {
            task,
            pool,
            tools,
            catalog,
            planner,
            summarizer,
            critic,
            world_model,
            budget,
            stop,
            started: Instant::now(),
            tokens: 0,
        }
    }

    /// True once a stop was asked for.
    pub fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Which budget is spent, if any.
    pub fn over_budget(&self) -> Option<String> {
        if self.tokens >= self.budget.max_tokens {
            return Some(format!("token budget of {} spent", self.budget.max_tokens));
        }
        if self.started.elapsed() >= self.budget.max_wall {
            return Some(format!(
                "time budget of {}s spent",
                self.budget.max_wall.as_secs()
            ));
        }
        None
    }

    /// Tokens left in the budget.
    pub fn tokens_left(&self) -> u64 {
        self.budget.max_tokens.saturating_sub(self.tokens)
    }

    /// When the time budget runs out.
    pub fn deadline(&self) -> Instant {
        self.started + self.budget.max_wall
    }

    /// Counts tokens spent outside `record_llm` (the search keeps its own count).
    pub fn add_tokens(&mut self, tokens: u64) {
        self.tokens += tokens;
    }

    /// Runs `fut` unless a stop comes first (then `None`).
    pub async fn or_stop<F: Future>(&self, fut: F) -> Option<F::Output> {
        let mut stop = self.stop.clone();
        if *stop.borrow() {
            return None;
        }
        tokio::select! {
            out = fut => Some(out),
            _ = stop.wait_for(|s| *s) => None,
        }
    }

    /// Records an LLM call of `role`, successful or not, and counts its tokens.
    pub fn record_llm(
        &mut self,
        rec: &mut Recorder,
        role: Role,
        result: Result<&Completion, &LlmError>,
        model: &str,
    ) -> Result<()> {
        if let Ok(c) = result {
            self.tokens += c.prompt_tokens + c.completion_tokens;
        }
        let body = llm_call_event(role, model, result);
        rec.emit(body)?;
        Ok(())
    }

    /// Records a world model's LLM call.
    pub fn record_world_model_llm(&mut self, rec: &mut Recorder, usage: &LlmUsage) -> Result<()> {
        self.tokens += usage.prompt_tokens + usage.completion_tokens;
        rec.emit(usage_event(usage))?;
        Ok(())
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
            Err(e) => (
                0,
                0,
                false,
                e.latency,
                Some(e.to_string()),
                e.messages.clone(),
            ),
        };
    EventBody::LlmCall {
        role,
        model: model.to_string(),
        prompt_tokens,
        completion_tokens,
        tokens_estimated,
        latency_ms: latency.as_millis() as u64,
        error,
        messages,
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
        messages: usage.messages.clone(),
    }
}

/// Asks the planner for the next action and records the call. `Err` carries how the run
/// ends when there is no decision (a stop, or the planner failing).
pub async fn planner_turn(
    env: &mut Env,
    rec: &mut Recorder,
    history: &[crate::world_model::HistoryStep],
    mode: &str,
    observed: &str,
) -> Result<std::result::Result<planner::Decision, End>> {
    let client = env.planner.clone();
    let decided = env
        .or_stop(planner::decide(
            &client,
            &env.tools,
            &env.task.request,
            history,
            mode,
            observed,
        ))
        .await;
    let Some(decided) = decided else {
        return Ok(Err(End::interrupted()));
    };
    env.record_llm(
        rec,
        Role::Planner,
        decided.as_ref().map(|d| &d.completion),
        &client.endpoint().model,
    )?;
    Ok(decided.map_err(|e| End::failed(format!("planner failed: {e}"))))
}

/// How an agent's run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct End {
    /// The status for `run_finished`.
    pub status: RunStatus,
    /// Why, when not completed.
    pub error: Option<String>,
}

impl End {
    /// Completed.
    pub fn completed() -> Self {
        Self {
            status: RunStatus::Completed,
            error: None,
        }
    }
    /// Interrupted by a stop.
    pub fn interrupted() -> Self {
        Self {
            status: RunStatus::Interrupted,
            error: Some("stopped by the user".into()),
        }
    }
    /// Failed.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            status: RunStatus::Failed,
            error: Some(error.into()),
        }
    }
}
