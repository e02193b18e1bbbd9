//! SPIRAL-Exec: phase 1 is the Monte Carlo tree search of [`super::mcts`] over the world
//! model, with the planner proposing K candidates per expansion and the critic scoring
//! them; phase 2 runs the best plan on the real servers; then the summarizer answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Result;
use serde_json::{Value, json};

use super::execute::{PlannedCall, execute_plan};
use super::mcts::{self, Answer, Critique, SearchEnv, Settings, Stopped};
use super::recorder::Recorder;
use super::{End, Env, answer, llm_call_event, planner, usage_event};
use crate::llm::client::{Completion, LlmClient, Message};
use crate::trajectory::catalog::ToolCatalog;
use crate::trajectory::event::{Action, EventBody, NodeId, Observation, Phase, Role, ToolInfo};
use crate::world_model::{HistoryStep, SimRequest, WorldModel};

/// The real environment of the search: the planner, world model and critic roles.
struct SpiralEnv<'a> {
    planner: Arc<LlmClient>,
    critic: Arc<LlmClient>,
    world_model: Arc<dyn WorldModel>,
    tools: &'a [ToolInfo],
    catalog: &'a ToolCatalog,
    request: &'a str,
    stop: tokio::sync::watch::Receiver<bool>,
    tokens: AtomicU64,
    max_tokens: u64,
    deadline: Instant,
}

impl SpiralEnv<'_> {
    fn count(&self, c: &Completion) {
        self.tokens
            .fetch_add(c.prompt_tokens + c.completion_tokens, Ordering::Relaxed);
    }
}

impl SearchEnv for SpiralEnv<'_> {
    fn propose<'a>(
        &'a self,
        history: &'a [HistoryStep],
        k: usize,
    ) -> Answer<'a, Result<Vec<Action>, String>> {
        Box::pin(async move {
            let mode = "Tool results you see are predictions of a world model. Propose several different next actions, best first.";
            let mut user = planner::user_prompt(self.request, history, "predicted results");
            user.push_str(&format!(
                "\nGive up to {k} different candidate actions: {{\"candidates\": [action, …]}}."
            ));
            let messages = [
                Message::system(planner::system_prompt(self.tools, mode)),
                Message::user(user),
            ];
            let schema = json!({
                "type": "object",
                "properties": {"candidates": {"type": "array", "items": planner::decision_schema(self.tools), "minItems": 1, "maxItems": k}},
                "required": ["candidates"]
            });
            let model = self.planner.endpoint().model.clone();
            match self
                .planner
                .complete_json(&messages, "candidates", &schema)
                .await
            {
                Ok((value, c)) => {
                    self.count(&c);
                    let event = llm_call_event(Role::Planner, &model, Ok(&c));
                    // A model that answers with one action instead of a list still counts.
                    let items: Vec<Value> = match value.get("candidates").and_then(Value::as_array)
                    {
                        Some(list) => list.clone(),
                        None => vec![value],
                    };
                    (
                        Ok(items.iter().map(|v| planner::parse_decision(v).0).collect()),
                        vec![event],
                    )
                }
                Err(e) => (
                    Err(format!("planner failed: {e}")),
                    vec![llm_call_event(Role::Planner, &model, Err(&e))],
                ),
            }
        })
    }

    fn invalid(&self, tool: &str, arguments: &Value) -> Option<String> {
        let check = self.catalog.check(tool, arguments);
        (!check.schema_ok).then(|| {
            self.catalog
                .explain(tool, arguments)
                .unwrap_or_else(|| "arguments do not match the schema".into())
        })
    }

    fn simulate<'a>(
        &'a self,
        history: &'a [HistoryStep],
        tool: &'a str,
        arguments: &'a Value,
    ) -> Answer<'a, Result<Observation, String>> {
        Box::pin(async move {
            let Some(info) = self.tools.iter().find(|t| t.name == tool) else {
                return (Err(format!("unknown tool {tool}")), vec![]);
            };
            let req = SimRequest {
                tool: info,
                arguments,
                user_request: self.request,
                history,
            };
            match self.world_model.simulate(req).await {
                Ok(sim) => {
                    let events: Vec<EventBody> = sim.llm.iter().map(usage_event).collect();
                    if let Some(u) = &sim.llm {
                        self.tokens
                            .fetch_add(u.prompt_tokens + u.completion_tokens, Ordering::Relaxed);
                    }
                    (Ok(sim.observation), events)
                }
                Err(f) => {
                    let events: Vec<EventBody> = f.llm.iter().map(usage_event).collect();
                    (Err(f.message), events)
                }
            }
        })
    }

    fn critique<'a>(
        &'a self,
        history: &'a [HistoryStep],
        action: &'a Action,
        observation: Option<&'a Observation>,
    ) -> Answer<'a, Option<Critique>> {
        Box::pin(async move {
            let mut user = planner::user_prompt(self.request, history, "predicted results");
            let step = match action {
                Action::ToolCall { tool, arguments } => format!(
                    "Next step: call {tool} {arguments}, predicted to return: {}",
                    observation.map_or("", |o| o.text.as_str())
                ),
                Action::Finish { answer } => format!(
                    "Next step: finish with the answer: {}",
                    answer
                        .as_deref()
                        .unwrap_or("(to be written from the results)")
                ),
            };
            user = user.replace(
                "Reply with the next action as JSON",
                "Ignore the reply format above",
            );
            user.push_str(&format!("\n{step}\nHow much does this step advance solving the request? Reply as JSON {{\"score\": a number from 0 to 1, \"reason\": \"…\"}}."));
            let messages = [
                Message::system("You are a strict critic of an agent's plan."),
                Message::user(user),
            ];
            let schema = json!({"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "reason": {"type": "string"}}, "required": ["score"]});
            let model = self.critic.endpoint().model.clone();
            match self
                .critic
                .complete_json(&messages, "critique", &schema)
                .await
            {
                Ok((v, c)) => {
                    self.count(&c);
                    let event = llm_call_event(Role::Critic, &model, Ok(&c));
                    let critique = v["score"].as_f64().map(|s| Critique {
                        score: s.clamp(0.0, 1.0),
                        reason: v["reason"].as_str().unwrap_or_default().to_string(),
                    });
                    (critique, vec![event])
                }
                // Without the critic the base reward stands alone.
                Err(e) => (None, vec![llm_call_event(Role::Critic, &model, Err(&e))]),
            }
        })
    }

    fn should_stop(&self) -> Option<String> {
        if *self.stop.borrow() {
            return Some("stopped by the user".into());
        }
        let used = self.tokens.load(Ordering::Relaxed);
        if used >= self.max_tokens {
            return Some(format!("token budget of {} spent", self.max_tokens));
        }
        (Instant::now() >= self.deadline).then(|| "time budget spent".to_string())
    }

    fn world_model_name(&self) -> String {
        self.world_model.name()
    }
}

/// Runs SPIRAL-Exec to the end.
pub async fn run(env: &mut Env, rec: &mut Recorder, settings: &Settings) -> Result<End> {
    let Some(world_model) = env.world_model.clone() else {
        return Ok(End::failed(
            "SPIRAL-Exec needs a world model (--world-model llm|memory|command)",
        ));
    };
    rec.emit(EventBody::Phase { phase: Phase::Plan })?;
    let search_env = SpiralEnv {
        planner: env.planner.clone(),
        critic: env.critic.clone(),
        world_model,
        tools: &env.tools,
        catalog: &env.catalog,
        request: &env.task.request,
        stop: env.stop.clone(),
        tokens: AtomicU64::new(0),
        max_tokens: env.budget.max_tokens,
        deadline: Instant::now() + env.budget.max_wall,
    };
    let mut write_error = None;
    let (tree, stopped) = mcts::search(&search_env, settings, &mut |body| {
        if write_error.is_none()
            && let Err(e) = rec.emit(body)
        {
            write_error = Some(e);
        }
    })
    .await;
    let spent = search_env.tokens.load(Ordering::Relaxed);
    drop(search_env);
    env.add_tokens(spent);
    if let Some(e) = write_error {
        return Err(e);
    }
    match stopped {
        Stopped::Budget(why) if env.stopped() => {
            let _ = why;
            return Ok(End::interrupted());
        }
        Stopped::PlannerFailed(e) if tree.nodes.len() == 1 => return Ok(End::failed(e)),
        Stopped::PlannerFailed(e) | Stopped::Budget(e) => {
            rec.emit(EventBody::Error {
                source: "agent".into(),
                name: None,
                message: format!("search stopped early: {e}"),
                stderr_tail: None,
            })?;
        }
        Stopped::Done | Stopped::Exhausted => {}
    }
    let plan = tree.plan(settings.plan_rule);
    rec.emit(EventBody::PlanSelected {
        nodes: plan.iter().map(|&i| i as NodeId).collect(),
        rule: settings.plan_rule.as_str().into(),
    })?;
    let calls: Vec<PlannedCall> = plan
        .iter()
        .filter_map(|&i| match &tree.nodes[i].action {
            Some(Action::ToolCall { tool, arguments }) => Some(PlannedCall {
                node: Some(i as NodeId),
                tool: tool.clone(),
                arguments: arguments.clone(),
            }),
            _ => None,
        })
        .collect();
    rec.emit(EventBody::Phase {
        phase: Phase::Execute,
    })?;
    let real = match execute_plan(env, rec, &calls).await? {
        Ok(real) => real,
        Err(end) => return Ok(end),
    };
    answer::answer(env, rec, &real).await
}
