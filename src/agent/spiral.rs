//! SPIRAL-Exec: phase 1 is the Monte Carlo tree search of [`super::mcts`] over the world
//! model, with the planner proposing K candidates per expansion and the critic scoring
//! them; phase 2 runs the best plan on the real servers; then the summarizer answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Result;
use serde_json::{Value, json};

use super::execute::{self, PlannedCall};
use super::mcts::{self, Answer, Critique, Origin, SearchEnv, Settings, Stopped, Tree};
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
    /// Steps before the search's root that really ran (a revision's).
    real_steps: usize,
}

impl SpiralEnv<'_> {
    /// How the prompt names the steps' results: a revision starts from real ones.
    fn observed(&self) -> String {
        match self.real_steps {
            0 => "predicted results".into(),
            n => format!("results of steps 1-{n} are real, later ones predicted"),
        }
    }

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
            let mut user = planner::user_prompt(self.request, history, &self.observed());
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
            let mut user = planner::user_prompt(self.request, history, &self.observed());
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
///
/// With execution-time revision on, a real call that fails ends phase 2 early: a new search
/// (the same settings, the run's remaining token and time budget) starts from the real steps
/// taken, the failed one included so the planner sees the real error, and hangs under the
/// failed node in the tree; its plan runs next. At most `settings.revisions` times, and
/// never past the run's step budget.
pub async fn run(env: &mut Env, rec: &mut Recorder, settings: &Settings) -> Result<End> {
    let Some(world_model) = env.world_model.clone() else {
        return Ok(End::failed(
            "SPIRAL-Exec needs a world model (--world-model llm|memory|command)",
        ));
    };
    let mut origin = Origin::default();
    let mut revisions_left = settings.revisions;
    // The real steps, and the run's node ids of the path they executed (the plan so far).
    let mut real: Vec<HistoryStep> = Vec::new();
    let mut path: Vec<NodeId> = Vec::new();
    loop {
        rec.emit(EventBody::Phase { phase: Phase::Plan })?;
        let search_settings = Settings {
            // The real steps already spent part of the depth.
            max_depth: settings.max_depth.saturating_sub(real.len() as u32).max(1),
            ..*settings
        };
        let tree = match search(env, rec, &world_model, &search_settings, &origin).await? {
            Ok(tree) => tree,
            Err(end) => return Ok(end),
        };
        if origin.anchor.is_some() {
            path.push(origin.id(0));
        }
        let plan = tree.plan(settings.plan_rule);
        path.extend(plan.iter().map(|&i| origin.id(i)));
        rec.emit(EventBody::PlanSelected {
            nodes: path.clone(),
            rule: settings.plan_rule.as_str().into(),
        })?;
        // Each call with the tree index of its node, where a revision would hang.
        let calls: Vec<(PlannedCall, usize)> = plan
            .iter()
            .filter_map(|&i| match &tree.nodes[i].action {
                Some(Action::ToolCall { tool, arguments }) => Some((
                    PlannedCall {
                        node: Some(origin.id(i)),
                        tool: tool.clone(),
                        arguments: arguments.clone(),
                    },
                    i,
                )),
                _ => None,
            })
            .collect();
        rec.emit(EventBody::Phase {
            phase: Phase::Execute,
        })?;
        let mut failed_at = None;
        for (planned, i) in &calls {
            let step = real.len() as u64 + 1;
            let Some(done) = execute::call(env, rec, step, planned).await? else {
                return Ok(End::interrupted());
            };
            let failed = done.observation.is_error;
            real.push(done);
            // A revision needs budget left to search with.
            if failed
                && revisions_left > 0
                && real.len() < env.budget.max_steps
                && env.over_budget().is_none()
            {
                failed_at = Some(*i);
                break;
            }
        }
        let Some(failed) = failed_at else {
            break;
        };
        revisions_left -= 1;
        // The plan so far ends at the failed node; the revision hangs under it.
        let failed_id = origin.id(failed);
        if let Some(at) = path.iter().position(|&n| n == failed_id) {
            path.truncate(at + 1);
        }
        origin = Origin {
            history: real.clone(),
            first_id: origin.id(tree.nodes.len()),
            anchor: Some((failed_id, origin.depth(tree.nodes[failed].depth))),
        };
    }
    answer::answer(env, rec, &real).await
}

/// One search (the first, or a revision) with the budget the run has left. `Err` is how the
/// run ended when the search could not give a plan.
async fn search(
    env: &mut Env,
    rec: &mut Recorder,
    world_model: &Arc<dyn WorldModel>,
    settings: &Settings,
    origin: &Origin,
) -> Result<Result<Tree, End>> {
    let search_env = SpiralEnv {
        planner: env.planner.clone(),
        critic: env.critic.clone(),
        world_model: world_model.clone(),
        tools: &env.tools,
        catalog: &env.catalog,
        request: &env.task.request,
        stop: env.stop.clone(),
        tokens: AtomicU64::new(0),
        max_tokens: env.tokens_left(),
        deadline: env.deadline(),
        real_steps: origin.history.len(),
    };
    let mut write_error = None;
    let (tree, stopped) = mcts::search_from(&search_env, settings, origin, &mut |body| {
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
    match &stopped {
        Stopped::Budget(_) if env.stopped() => return Ok(Err(End::interrupted())),
        // Nothing to execute and nothing executed yet: the run failed.
        Stopped::PlannerFailed(e) if tree.nodes.len() == 1 && origin.anchor.is_none() => {
            return Ok(Err(End::failed(e.clone())));
        }
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
    Ok(Ok(tree))
}
