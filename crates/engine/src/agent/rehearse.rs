//! Rehearsing a candidate before anything real runs: validate it against the tool's schema,
//! simulate it in the world model, evaluate it (SPIRAL's base reward, mixed with the critic's
//! score), and record it. SPIRAL-Exec's search and ReAct-Plan-Exec's chain both rehearse
//! through [`rehearse`] and [`record`], so every agent records the same thing the same way:
//!
//! - an invalid call gets a `node_simulated` from [`VALIDATOR`] (never the world model);
//! - a world-model failure is an `error` event from `world_model`, and the node is
//!   [`Verdict::NotSimulated`]: no prediction, never in fidelity, never in a plan;
//! - a prediction's `node_simulated` carries the world model's tokens.
//!
//! [`Rehearser`] is the real [`SearchEnv`]: the planner, world model and critic roles.
//!
//! The one rehearse step, validate → simulate → route → evaluate → record (route:
//! under `go_real_below`, a read-only tool's unsure prediction is grounded by the real call,
//! `SearchEnv::ground`, another tool's makes the node risky and scales its reward by the
//! confidence), and the one table of base rewards; `predict`, the one way a world model is asked about a call (its
//! `llm_call` events and tokens with it). A world-model failure is an `error` event and a
//! `not_simulated` node.
//! `Rehearser` is the real `SearchEnv`: the run's `Env` (planner, critic, tools, budget, stop) and
//! the world model; its stop check is `Env::should_stop`. Used by SPIRAL's search,
//! by Plan-Exec's chain and (with its own small `SearchEnv`) by `cosmos proxy`. Each LLM call it makes is a `Flight` while it waits: one dropped by a
//! stop or the time budget is kept, and `Rehearser::record_cut` records it through
//! `Env::record_cut_llm`, as ReAct records its own cut calls. What a rehearsal has done so far
//! (LLM calls answered, its prediction, a grounded real call) is noted by node as it goes
//! (`SearchEnv::note`) until it is recorded, so a rehearsal dropped mid-way still writes it,
//! first, in `record_cut`: the run never says a call it made was not made.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use serde_json::Value;

use super::ports::EventSink;
use super::prompt::{self, Setting, Turn};
use super::search_env::{Answer, Critique, Proposal, SearchEnv, Stopped};
pub use super::search_env::{Grounded, Prediction};
use super::settings::Settings;
use super::{Env, llm_call_event, usage_event};
use super::{planner, real_call};
use crate::world_model::{
    Confidence, HistoryStep, MemberPrediction, SimRequest, WorldModel, tokens_of,
};
use cosmos_trajectory::event::{
    Action, EventBody, NodeId, Observation, PredictionRecord, Role, Route, ToolInfo, VALIDATOR,
    Verdict, own_tool_name,
};

/// SPIRAL's base reward of a verdict (the one table of them).
pub fn base_reward(v: Verdict) -> f64 {
    match v {
        Verdict::Finish => 1.0,
        Verdict::Valid => 0.1,
        Verdict::DeadEnd => -0.5,
        Verdict::Invalid => -1.0,
        // Nothing is known about the step: neither rewarded nor punished.
        Verdict::NotSimulated => 0.0,
    }
}

/// A world model asked about one call: its prediction or why it failed, the `llm_call` events
/// of its own LLM call, and the tokens that call spent (a failed one's too).
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// The prediction, or the failure's message.
    pub answer: Result<Prediction, String>,
    /// The world model's `llm_call` events.
    pub events: Vec<EventBody>,
    /// Tokens spent, whatever the answer.
    pub spent: u64,
}

/// Asks `world_model` to predict `tool` called with `arguments` after `history`: the one way a
/// prediction is asked, by the rehearsing agents (`Rehearser`) and by `cosmos proxy`. A tool
/// not in `tools` is a failure, never a guess. `start_states` holds each sandboxed server's
/// state at the run's start, from which the tool's server's state before the call is told
/// ([`crate::world_model::belief`]).
pub async fn predict(
    world_model: &dyn WorldModel,
    tools: &[ToolInfo],
    user_request: &str,
    history: &[HistoryStep],
    tool: &str,
    arguments: &Value,
    start_states: &BTreeMap<String, Value>,
) -> Predicted {
    let Some(info) = tools.iter().find(|t| t.name == tool) else {
        return Predicted {
            answer: Err(format!("unknown tool {tool}")),
            events: Vec::new(),
            spent: 0,
        };
    };
    let state = start_states
        .iter()
        .find(|(server, _)| own_tool_name(tool, server).is_some())
        .and_then(|(server, start)| crate::world_model::belief(Some(start), history, server));
    let request = SimRequest {
        tool: info,
        arguments,
        user_request,
        history,
        state: state.as_ref(),
    };
    match world_model.simulate(request).await {
        Ok(sim) => {
            let tokens = sim.tokens();
            Predicted {
                events: sim.llm.iter().map(usage_event).collect(),
                spent: tokens.unwrap_or(0),
                answer: Ok(Prediction {
                    observation: sim.observation,
                    tokens,
                    confidence: sim.confidence,
                    members: sim.members,
                    predicted_state: sim.predicted_state,
                }),
            }
        }
        Err(f) => Predicted {
            spent: tokens_of(&f.llm).unwrap_or(0),
            events: f.llm.iter().map(usage_event).collect(),
            answer: Err(f.message),
        },
    }
}

/// What `node_simulated` records: a prediction, or the validator's rejection.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulated {
    /// The predicted (or rejected) result.
    pub observation: Observation,
    /// The world model's name, or [`VALIDATOR`].
    pub source: String,
    /// Time it took.
    pub latency_ms: u64,
    /// Tokens spent.
    pub tokens: Option<u64>,
    /// The world model's confidence (a validator's rejection has none).
    pub confidence: Option<Confidence>,
    /// An ensemble's members' predictions.
    pub members: Vec<MemberPrediction>,
    /// The server's state after the call, when the world model tracks state.
    pub predicted_state: Option<Value>,
}

/// One rehearsed candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Rehearsal {
    /// Why the base reward is what it is.
    pub verdict: Verdict,
    /// The prediction (or rejection) when there is one.
    pub simulated: Option<Simulated>,
    /// The critic's score, when it ran.
    pub critique: Option<Critique>,
    /// `alpha·base + (1−alpha)·critic`, or base alone.
    pub reward: f64,
    /// No path goes on from here.
    pub terminal: bool,
    /// Events on the way, in order: the world model's and the critic's LLM calls, and an
    /// `error` when the world model failed.
    pub events: Vec<EventBody>,
    /// Routing: the real result that replaced an unsure prediction of a read-only tool.
    pub grounded: Option<Grounded>,
    /// Routing: the prediction was unsure and its tool not read-only, so nothing real was
    /// called; the node rests on a guess (its reward is scaled by the confidence).
    pub risky: bool,
    /// Routing by a file: whether the prediction was trusted (its tool's threshold met); a
    /// trusted one counts as sure along a path, an untrusted one as nothing.
    pub sure: Option<bool>,
    /// How routing treated the prediction, when the run routes (recorded with it).
    pub route: Option<Route>,
    /// Routing's horizon: the product of confidences along the path here, when it fell below
    /// `go_real_below` and the search imagines no further (set by the search, which knows the
    /// path; [`Rehearsal::stop_at_horizon`]).
    pub horizon: Option<f64>,
}

impl Rehearsal {
    /// The predicted observation, when the world model gave one (not the validator's).
    /// The predicted state of the tool's server after the call, when the world model gave one
    /// and the call did not go real.
    pub fn predicted_state(&self) -> Option<Arc<Value>> {
        if self.grounded.is_some() {
            return None;
        }
        self.simulated
            .as_ref()
            .and_then(|s| s.predicted_state.clone())
            .map(Arc::new)
    }

    /// The prediction (none for a validator's rejection).
    pub fn prediction(&self) -> Option<&Observation> {
        self.simulated
            .as_ref()
            .filter(|s| s.source != VALIDATOR)
            .map(|s| &s.observation)
    }

    /// The observation the next state starts from: the real result when the call went real,
    /// else the prediction or the validator's error.
    pub fn observation(&self) -> Option<&Observation> {
        match &self.grounded {
            Some(g) => Some(&g.observation),
            None => self.simulated.as_ref().map(|s| &s.observation),
        }
    }

    /// How much this step's result may be trusted when multiplied along a path: 1 for a real
    /// (grounded) result and for a step that predicts nothing (a finish, a rejection, the depth
    /// limit's dead end: no imagination goes on from them); else the prediction's confidence,
    /// 0 without one (unsure).
    pub fn trust(&self) -> f64 {
        if self.grounded.is_some() || self.verdict != Verdict::Valid {
            1.0
        } else if let Some(sure) = self.sure {
            if sure { 1.0 } else { 0.0 }
        } else {
            self.confidence().unwrap_or(0.0)
        }
    }

    /// Routing's short horizon: with `trust_before` the product of trust along the path to
    /// the parent, a valid step whose product falls below `threshold` ends the path here for
    /// the search (terminal, not a dead end), recording the product. Returns the product.
    pub fn stop_at_horizon(&mut self, trust_before: f64, threshold: Option<f64>) -> f64 {
        let product = trust_before * self.trust();
        if let Some(threshold) = threshold
            && self.verdict == Verdict::Valid
            && !self.terminal
            && product < threshold
        {
            self.terminal = true;
            self.horizon = Some(product);
        }
        product
    }

    /// The world model's confidence in its prediction, when it gave one.
    pub fn confidence(&self) -> Option<f64> {
        self.simulated
            .as_ref()
            .and_then(|s| s.confidence.as_ref())
            .map(|c| c.value)
    }
}

/// Rehearses `action` taken after `history`, as node `node` at tree depth `depth`. A valid
/// call at `settings.max_depth` is a dead end; with `alpha` = 1 the critic is not asked. What
/// it has done so far is noted with `env` at each step ([`SearchEnv::note`]).
pub async fn rehearse(
    env: &dyn SearchEnv,
    settings: &Settings,
    history: &[HistoryStep],
    action: &Action,
    (node, depth): (NodeId, u32),
) -> Rehearsal {
    let mut events = Vec::new();
    let mut grounded = None;
    let mut risky = false;
    let mut sure = None;
    let mut route = None;
    let (verdict, simulated) = match action {
        Action::Finish { .. } => (Verdict::Finish, None),
        Action::ToolCall { tool, arguments } => {
            if let Some(why) = env.invalid(tool, arguments) {
                // Penalised and recorded, never simulated, never criticised.
                let rejected = Simulated {
                    observation: Observation {
                        text: why,
                        is_error: true,
                        ..Default::default()
                    },
                    source: VALIDATOR.into(),
                    latency_ms: 0,
                    tokens: None,
                    confidence: None,
                    members: Vec::new(),
                    predicted_state: None,
                };
                return evaluated(settings, Verdict::Invalid, Some(rejected), None, events);
            }
            let start = Instant::now();
            let (result, sim_events) = env.simulate(history, tool, arguments).await;
            events.extend(sim_events);
            match result {
                Ok(p) => {
                    // The prediction's own time, before any real call routing makes.
                    let latency_ms = start.elapsed().as_millis() as u64;
                    let simulated = Simulated {
                        observation: p.observation,
                        source: env.world_model_name(),
                        latency_ms,
                        tokens: p.tokens,
                        confidence: p.confidence,
                        members: p.members,
                        predicted_state: p.predicted_state,
                    };
                    // Routing: an unsure prediction (or one without a confidence) of a
                    // read-only tool is replaced by the real call; of any other tool, nothing
                    // real is called and the node is risky.
                    let confidence = simulated.confidence.as_ref().map(|c| c.value);
                    let unsure = match (env.routing_file(), env.go_real_below()) {
                        (Some(file), _) => {
                            let trusted = file.trusts(tool, confidence);
                            sure = Some(trusted);
                            Some(!trusted)
                        }
                        (None, Some(x)) => Some(confidence.is_none_or(|c| c < x)),
                        (None, None) => None,
                    };
                    let read_only = env.read_only(tool);
                    route = unsure.map(|unsure| match (unsure, read_only) {
                        (false, true) => Route::Saved,
                        (false, false) => Route::Trusted,
                        (true, true) => Route::Grounded,
                        (true, false) => Route::Risky,
                    });
                    let unsure = unsure == Some(true);
                    let grounding = (unsure && read_only).then_some(tool.as_str());
                    note(env, node, grounding, || {
                        found(node, &events, Some(&simulated), None, route)
                    });
                    if unsure && read_only {
                        let (real, real_events) = env.ground(tool, arguments).await;
                        events.extend(real_events);
                        grounded = real;
                        note(env, node, None, || {
                            found(node, &events, Some(&simulated), grounded.as_ref(), route)
                        });
                    } else if unsure {
                        risky = true;
                    }
                    let seen = grounded
                        .as_ref()
                        .map_or(&simulated.observation, |g| &g.observation);
                    let verdict = if seen.is_error || depth >= settings.max_depth {
                        Verdict::DeadEnd
                    } else {
                        Verdict::Valid
                    };
                    (verdict, Some(simulated))
                }
                Err(message) => {
                    events.push(EventBody::Error {
                        source: cosmos_trajectory::event::ErrorSource::WorldModel,
                        name: Some(env.world_model_name()),
                        message,
                        stderr_tail: None,
                        step: None,
                    });
                    note(env, node, None, || found(node, &events, None, None, None));
                    return evaluated(settings, Verdict::NotSimulated, None, None, events);
                }
            }
        }
    };
    let critique = if settings.alpha < 1.0 {
        let observation = grounded
            .as_ref()
            .map(|g| &g.observation)
            .or(simulated.as_ref().map(|s| &s.observation));
        let (critique, critic_events) = env.critique(history, action, observation).await;
        events.extend(critic_events);
        note(env, node, None, || {
            found(node, &events, simulated.as_ref(), grounded.as_ref(), route)
        });
        critique
    } else {
        None
    };
    let mut r = evaluated(settings, verdict, simulated, critique, events);
    if risky {
        // A plan resting on a guess is worth its confidence's share (none: nothing).
        r.reward *= r.confidence().unwrap_or(0.0);
        r.risky = true;
    }
    r.grounded = grounded;
    r.sure = sure;
    r.route = route;
    r
}

fn evaluated(
    settings: &Settings,
    verdict: Verdict,
    simulated: Option<Simulated>,
    critique: Option<Critique>,
    events: Vec<EventBody>,
) -> Rehearsal {
    let base = base_reward(verdict);
    let reward = match &critique {
        Some(c) => settings.alpha * base + (1.0 - settings.alpha) * c.score.clamp(0.0, 1.0),
        None => base,
    };
    Rehearsal {
        verdict,
        simulated,
        critique,
        reward,
        terminal: verdict != Verdict::Valid,
        events,
        grounded: None,
        risky: false,
        sure: None,
        route: None,
        horizon: None,
    }
}

/// Records a rehearsal of `node`: its events, its `node_simulated` (when there is a
/// prediction or a rejection), its `node_grounded` (when routing called the tool for real) and
/// its `node_evaluated`.
pub fn record(sink: &mut dyn EventSink, node: NodeId, r: &Rehearsal) -> Result<()> {
    let so_far = found(
        node,
        &r.events,
        r.simulated.as_ref(),
        r.grounded.as_ref(),
        r.route,
    );
    for event in so_far {
        sink.emit(event)?;
    }
    sink.emit(EventBody::NodeEvaluated {
        node,
        verdict: r.verdict,
        base_reward: base_reward(r.verdict),
        critic_reward: r.critique.as_ref().map(|c| c.score),
        critic_reason: r.critique.as_ref().map(|c| c.reason.clone()),
        reward: r.reward,
        terminal: r.terminal,
        horizon: r.horizon,
    })
}

/// Notes with `env` what the rehearsal of `node` has done so far, built only for an environment
/// that keeps notes (the toy and proxy environments of a big search pay nothing).
fn note(
    env: &dyn SearchEnv,
    node: NodeId,
    grounding: Option<&str>,
    so_far: impl FnOnce() -> Vec<EventBody>,
) {
    if env.keeps_notes() {
        env.note(node, so_far(), grounding);
    }
}

/// What a rehearsal of `node` has found, as its record writes it before the verdict: its
/// events, its `node_simulated` and its `node_grounded`. The one builder of both events, for a
/// finished rehearsal ([`record`]) and one a stop may still cut off ([`SearchEnv::note`]).
fn found(
    node: NodeId,
    events: &[EventBody],
    simulated: Option<&Simulated>,
    grounded: Option<&Grounded>,
    route: Option<Route>,
) -> Vec<EventBody> {
    let mut out = events.to_vec();
    let confidence = simulated.and_then(|s| s.confidence.as_ref());
    if let Some(s) = simulated {
        out.push(EventBody::NodeSimulated {
            node,
            route,
            prediction: PredictionRecord {
                world_model: s.source.clone(),
                observation: s.observation.clone(),
                latency_ms: s.latency_ms,
                tokens: s.tokens,
                confidence: confidence.map(|c| c.value),
                confidence_source: confidence.map(|c| c.source.clone()),
                members: s.members.clone(),
                predicted_state: s.predicted_state.clone().map(Box::new),
            },
        });
    }
    if let Some(g) = grounded {
        out.push(EventBody::NodeGrounded {
            node,
            tool: g.tool.clone(),
            server: g.server.clone(),
            observation: g.observation.clone(),
            latency_ms: g.latency_ms,
            error: g.error.clone(),
            confidence: confidence.map(|c| c.value),
            state_change: g.state_change.clone(),
            origin: g.origin.clone(),
        });
    }
    out
}

/// The real models a rehearsal and a search work with: the run's planner and critic roles,
/// tools, budget and stop signal (all from its [`Env`]), and the world model.
pub struct Rehearser<'a> {
    env: &'a Env,
    world_model: Arc<dyn WorldModel>,
    /// Real steps before the rehearsal starts (an execution-time revision's).
    real_steps: usize,
    /// Tokens the rehearsals so far spent (world model and critic), and how many there were:
    /// their mean is what the next one is expected to cost.
    rehearsal_tokens: std::sync::atomic::AtomicU64,
    rehearsals: std::sync::atomic::AtomicU64,
    /// LLM calls a stop or the time budget dropped before they answered.
    cut: std::sync::Mutex<Vec<CutCall>>,
    /// The model the world model asks, when it asks one (a call of it can be cut off).
    world_model_llm: Option<String>,
    /// What each rehearsal not yet recorded has done so far, by node ([`SearchEnv::note`]).
    unrecorded: std::sync::Mutex<BTreeMap<NodeId, Unrecorded>>,
}

/// A rehearsal's record so far, and the real call it is waiting on (tool, since when).
struct Unrecorded {
    so_far: Vec<EventBody>,
    grounding: Option<(String, Instant)>,
}

/// An LLM call that never answered: its role, model and start.
type CutCall = (Role, String, Instant);

/// An LLM call of a rehearsal in flight. Dropped before [`Flight::landed`] (its future
/// dropped by a stop or the time budget), it joins the rehearser's cut calls, which the agent
/// records as ReAct records its own cut calls: the run never says a call it made was not made.
struct Flight<'r> {
    cut: &'r std::sync::Mutex<Vec<CutCall>>,
    call: Option<CutCall>,
}

impl Flight<'_> {
    /// The call answered (successfully or not): it is recorded with its answer.
    fn landed(mut self) {
        self.call = None;
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            self.cut.lock().expect("cut calls lock").push(call);
        }
    }
}

impl<'a> Rehearser<'a> {
    /// Rehearsals in `env` with `world_model`, after `real_steps` real steps.
    pub fn new(env: &'a Env, world_model: Arc<dyn WorldModel>, real_steps: usize) -> Self {
        let described = serde_json::to_value(world_model.describe()).unwrap_or_default();
        Self {
            env,
            world_model,
            real_steps,
            rehearsal_tokens: Default::default(),
            rehearsals: Default::default(),
            cut: Default::default(),
            world_model_llm: llm_model(&described),
            unrecorded: Default::default(),
        }
    }

    /// Marks an LLM call of `role` to `model` as started.
    fn flight(&self, role: Role, model: String) -> Flight<'_> {
        Flight {
            cut: &self.cut,
            call: Some((role, model, Instant::now())),
        }
    }

    /// Records what the rehearsals that `end` (a stop, the time budget) cut off had done (the
    /// LLM calls that answered, their predictions, the real calls made; by node), then the LLM
    /// calls it cut off, once each.
    pub fn record_cut(&self, sink: &mut dyn EventSink, end: &super::End) -> Result<()> {
        let unrecorded = std::mem::take(&mut *self.unrecorded.lock().expect("unrecorded lock"));
        for (node, Unrecorded { so_far, grounding }) in unrecorded {
            let confidence = so_far.iter().find_map(|e| match e {
                EventBody::NodeSimulated {
                    prediction: PredictionRecord { confidence, .. },
                    ..
                } => *confidence,
                _ => None,
            });
            for event in so_far {
                sink.emit(event)?;
            }
            // The real call the end cut off, said as a step's cut call is (`real_call`).
            if let Some((tool, started)) = grounding {
                let why = end.error.as_deref().unwrap_or("stopped");
                let message = format!(
                    "cut off after {:.1}s: {why}",
                    started.elapsed().as_secs_f64()
                );
                sink.emit(EventBody::NodeGrounded {
                    node,
                    tool,
                    server: None,
                    observation: Observation {
                        text: message.clone(),
                        is_error: true,
                        ..Default::default()
                    },
                    latency_ms: started.elapsed().as_millis() as u64,
                    error: Some(message),
                    confidence,
                    state_change: None,
                    origin: None,
                })?;
            }
        }
        let cut = std::mem::take(&mut *self.cut.lock().expect("cut calls lock"));
        for (role, model, started) in cut {
            self.env.record_cut_llm(sink, role, &model, started, end)?;
        }
        Ok(())
    }

    /// Counts `tokens` a rehearsal spent (its simulation or its critique).
    fn spent(&self, tokens: u64) {
        self.env.meter.spend(tokens);
        self.rehearsal_tokens
            .fetch_add(tokens, std::sync::atomic::Ordering::Relaxed);
    }

    fn setting(&self) -> Setting {
        Setting::Rehearsal {
            real_steps: self.real_steps,
        }
    }
}

impl SearchEnv for Rehearser<'_> {
    fn go_real_below(&self) -> Option<f64> {
        self.env.go_real_below
    }

    fn routing_file(&self) -> Option<&crate::metrics::routing_file::RoutingFile> {
        self.env.routing.as_deref()
    }

    fn read_only(&self, tool: &str) -> bool {
        // The annotations the servers gave when this run started them.
        self.env
            .tools
            .iter()
            .find(|t| t.name == tool)
            .is_some_and(ToolInfo::read_only)
    }

    fn ground<'a>(&'a self, tool: &'a str, arguments: &'a Value) -> Answer<'a, Option<Grounded>> {
        Box::pin(async move {
            // Through the one path a step's call takes too (`real_call`): a fork's recording
            // first, else the server, bounded by the run's stop and time budget. A grounded
            // call cut off is recorded with what cut it; the search stops at its next check.
            let grounded = if let Some((file, recorded)) =
                real_call::from_recording(self.env, tool, arguments)
            {
                Grounded {
                    tool: tool.to_string(),
                    server: recorded.server.clone(),
                    observation: recorded.result.clone(),
                    latency_ms: recorded.latency_ms,
                    error: recorded.error.clone(),
                    // Replayed, not made: the fork's own state did not change.
                    state_change: None,
                    origin: Some(Box::new(cosmos_trajectory::event::Origin {
                        run: file.to_string(),
                        seq: recorded.seq,
                    })),
                }
            } else {
                let made = real_call::make(self.env, tool, arguments, None).await;
                Grounded {
                    tool: tool.to_string(),
                    server: made.server,
                    observation: made.outcome.result,
                    latency_ms: made.outcome.latency.as_millis() as u64,
                    error: made.outcome.error,
                    state_change: made.outcome.state_change,
                    origin: None,
                }
            };
            (Some(grounded), Vec::new())
        })
    }

    fn propose<'a>(
        &'a self,
        history: &'a [HistoryStep],
        k: usize,
        feedback: Option<&'a str>,
    ) -> Answer<'a, Result<Proposal, String>> {
        Box::pin(async move {
            let turn = Turn {
                request: &self.env.task.request,
                history,
                setting: self.setting(),
                k,
                rejected: feedback,
            };
            let env = self.env;
            let planner = &env.roles.planner;
            let model = planner.endpoint().model.clone();
            let flight = self.flight(Role::Planner, model.clone());
            let asked = planner::ask(planner, &env.tools, &env.functions, &turn).await;
            flight.landed();
            match asked {
                Ok(reply) => {
                    env.meter.spend(reply.completion.tokens());
                    let mut events =
                        vec![llm_call_event(Role::Planner, &model, Ok(&reply.completion))];
                    events.extend(reply.fallback_event());
                    let mut proposal = Proposal::default();
                    for candidate in reply.candidates {
                        match candidate {
                            Ok(action) => proposal.actions.push(action),
                            Err(rejection) => {
                                events.push(rejection.event());
                                proposal.rejected.push(rejection.detail);
                            }
                        }
                    }
                    (Ok(proposal), events)
                }
                Err(e) => {
                    // A reply that could not be used still cost its tokens.
                    env.meter.spend(e.tokens());
                    (
                        Err(format!("planner failed: {e}")),
                        vec![llm_call_event(Role::Planner, &model, Err(&e))],
                    )
                }
            }
        })
    }

    fn invalid(&self, tool: &str, arguments: &Value) -> Option<String> {
        let catalog = &self.env.catalog;
        let check = catalog.check(tool, arguments);
        (!check.valid_name || !check.schema_ok).then(|| {
            catalog
                .explain(tool, arguments)
                .unwrap_or_else(|| "arguments do not match the schema".into())
        })
    }

    fn simulate<'a>(
        &'a self,
        history: &'a [HistoryStep],
        tool: &'a str,
        arguments: &'a Value,
    ) -> Answer<'a, Result<Prediction, String>> {
        Box::pin(async move {
            // Only a world model that asks an LLM has a call to cut.
            let flight = self
                .world_model_llm
                .clone()
                .map(|model| self.flight(Role::WorldModel, model));
            let predicted = predict(
                self.world_model.as_ref(),
                &self.env.tools,
                &self.env.task.request,
                history,
                tool,
                arguments,
                &self.env.start_states,
            )
            .await;
            if let Some(flight) = flight {
                flight.landed();
            }
            // A failed simulation's tokens (a reply that was not JSON) count too.
            self.spent(predicted.spent);
            if predicted.answer.is_ok() {
                self.rehearsals
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            (predicted.answer, predicted.events)
        })
    }

    fn critique<'a>(
        &'a self,
        history: &'a [HistoryStep],
        action: &'a Action,
        observation: Option<&'a Observation>,
    ) -> Answer<'a, Option<Critique>> {
        Box::pin(async move {
            let messages = prompt::critic(
                &self.env.task.request,
                history,
                self.setting(),
                action,
                observation,
            );
            let schema = serde_json::json!({"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "reason": {"type": "string"}}, "required": ["score"]});
            let critic = &self.env.roles.critic;
            let model = critic.endpoint().model.clone();
            let flight = self.flight(Role::Critic, model.clone());
            let answered = critic.complete_json(&messages, "critique", &schema).await;
            flight.landed();
            match answered {
                Ok((v, c)) => {
                    self.spent(c.tokens());
                    let critique =
                        v["score"]
                            .as_f64()
                            .filter(|s| s.is_finite())
                            .map(|s| Critique {
                                score: s.clamp(0.0, 1.0),
                                reason: v["reason"].as_str().unwrap_or_default().to_string(),
                            });
                    (critique, vec![llm_call_event(Role::Critic, &model, Ok(&c))])
                }
                // Without the critic the base reward stands alone.
                Err(e) => {
                    self.spent(e.tokens());
                    (None, vec![llm_call_event(Role::Critic, &model, Err(&e))])
                }
            }
        })
    }

    fn should_stop(&self) -> Option<Stopped> {
        if self.env.stopped() {
            return Some(Stopped::Interrupted);
        }
        self.env
            .meter
            .over()
            .map(|limit| Stopped::Budget(limit.message))
    }

    /// As many as the tokens left cover at the mean cost of the rehearsals so far (all of them
    /// before the first, whose cost is unknown).
    fn affordable(&self, n: usize) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        let done = self.rehearsals.load(Relaxed);
        let spent = self.rehearsal_tokens.load(Relaxed);
        if done == 0 || spent == 0 {
            return n;
        }
        let mean = spent.div_ceil(done);
        let left = self.env.meter.tokens_left();
        n.min((left / mean) as usize)
    }

    fn world_model_name(&self) -> String {
        self.world_model.name()
    }

    fn keeps_notes(&self) -> bool {
        true
    }

    fn note(&self, node: NodeId, so_far: Vec<EventBody>, grounding: Option<&str>) {
        let grounding = grounding.map(|tool| (tool.to_string(), Instant::now()));
        self.unrecorded
            .lock()
            .expect("unrecorded lock")
            .insert(node, Unrecorded { so_far, grounding });
    }

    fn recorded(&self, node: NodeId) {
        self.unrecorded
            .lock()
            .expect("unrecorded lock")
            .remove(&node);
    }
}

/// The model a world model asks, from what it says of itself (its `model`, or the one of the
/// world model it wraps); `None` for one that asks no LLM.
fn llm_model(described: &Value) -> Option<String> {
    match described.get("model") {
        Some(Value::String(model)) => Some(model.clone()),
        _ => described.get("inner").and_then(llm_model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Proposal, Stopped};
    use crate::world_model::Confidence;

    /// A search environment whose world model is 0.5 sure of everything, with `read_only`
    /// tools and a real server that answers `real`.
    struct Unsure {
        read_only: bool,
    }

    impl SearchEnv for Unsure {
        fn propose<'a>(
            &'a self,
            _: &'a [HistoryStep],
            _: usize,
            _: Option<&'a str>,
        ) -> Answer<'a, Result<Proposal, String>> {
            Box::pin(async { (Ok(Proposal::default()), Vec::new()) })
        }
        fn invalid(&self, _: &str, _: &Value) -> Option<String> {
            None
        }
        fn simulate<'a>(
            &'a self,
            _: &'a [HistoryStep],
            _: &'a str,
            _: &'a Value,
        ) -> Answer<'a, Result<Prediction, String>> {
            Box::pin(async {
                let prediction = Prediction {
                    observation: Observation {
                        text: "guess".into(),
                        ..Default::default()
                    },
                    tokens: None,
                    confidence: Confidence::new(0.5, "self"),
                    members: Vec::new(),
                    predicted_state: None,
                };
                (Ok(prediction), Vec::new())
            })
        }
        fn critique<'a>(
            &'a self,
            _: &'a [HistoryStep],
            _: &'a Action,
            _: Option<&'a Observation>,
        ) -> Answer<'a, Option<Critique>> {
            Box::pin(async { (None, Vec::new()) })
        }
        fn should_stop(&self) -> Option<Stopped> {
            None
        }
        fn world_model_name(&self) -> String {
            "unsure".into()
        }
        fn go_real_below(&self) -> Option<f64> {
            Some(0.9)
        }
        fn read_only(&self, _: &str) -> bool {
            self.read_only
        }
        fn ground<'a>(&'a self, tool: &'a str, _: &'a Value) -> Answer<'a, Option<Grounded>> {
            Box::pin(async move {
                let grounded = Grounded {
                    tool: tool.to_string(),
                    server: Some("s".into()),
                    observation: Observation {
                        text: "real".into(),
                        ..Default::default()
                    },
                    latency_ms: 3,
                    error: None,
                    state_change: None,
                    origin: None,
                };
                (Some(grounded), Vec::new())
            })
        }
    }

    fn call() -> Action {
        Action::ToolCall {
            tool: "s:t".into(),
            arguments: serde_json::json!({}),
        }
    }

    #[tokio::test]
    async fn an_unsure_read_only_prediction_goes_real_and_the_search_goes_on_from_the_real_result()
    {
        let settings = Settings::chain();
        let r = rehearse(&Unsure { read_only: true }, &settings, &[], &call(), (1, 1)).await;
        assert_eq!(r.observation().unwrap().text, "real");
        assert_eq!(r.prediction().unwrap().text, "guess");
        assert!(!r.risky);
        assert_eq!(r.reward, base_reward(Verdict::Valid));
        let mut events: Vec<EventBody> = Vec::new();
        record(&mut events, 1, &r).unwrap();
        let kinds: Vec<&str> = events.iter().map(EventBody::kind).collect();
        assert_eq!(kinds, ["node_simulated", "node_grounded", "node_evaluated"]);
    }

    #[tokio::test]
    async fn an_unsure_prediction_of_another_tool_is_risky_and_worth_its_confidence() {
        let settings = Settings::chain();
        let r = rehearse(
            &Unsure { read_only: false },
            &settings,
            &[],
            &call(),
            (1, 1),
        )
        .await;
        assert!(r.risky);
        assert!(r.grounded.is_none());
        assert_eq!(r.observation().unwrap().text, "guess");
        assert!((r.reward - 0.5 * base_reward(Verdict::Valid)).abs() < 1e-12);
    }

    /// What a rehearsal noted before a stop or the time budget dropped it is written by
    /// `record_cut` (a real call it was waiting on as cut off, with the prediction's
    /// confidence); what was recorded since is not written again.
    #[test]
    fn a_dropped_rehearsal_writes_what_it_did_and_a_recorded_one_nothing() {
        use crate::agent::testing::{self, ScriptedChat, ScriptedTools, ScriptedWorldModel};
        let tools = ScriptedTools::new(&["s:a"], |_, _| Observation::default());
        let world_model: Arc<dyn WorldModel> =
            Arc::new(ScriptedWorldModel(Box::new(|_| Ok("x".into()))));
        let env = testing::env(
            ScriptedChat::json_replies(Vec::new()),
            None,
            tools,
            Some(world_model.clone()),
            5,
        );
        let rehearser = Rehearser::new(&env, world_model, 0);
        let simulated = Simulated {
            observation: Observation::of_text("guess", false),
            source: "scripted".into(),
            latency_ms: 2,
            tokens: None,
            confidence: Confidence::new(0.3, "self"),
            members: Vec::new(),
            predicted_state: None,
        };
        let noted = found(4, &[], Some(&simulated), None, Some(Route::Grounded));
        rehearser.note(4, noted.clone(), Some("s:a"));
        rehearser.note(5, noted, None);
        rehearser.recorded(5);
        let mut events: Vec<EventBody> = Vec::new();
        let end = super::super::End::out_of_time("time budget of 4s spent", "searching");
        rehearser.record_cut(&mut events, &end).unwrap();
        let kinds: Vec<&str> = events.iter().map(EventBody::kind).collect();
        assert_eq!(kinds, ["node_simulated", "node_grounded"]);
        let EventBody::NodeGrounded {
            node,
            tool,
            server,
            observation,
            error,
            confidence,
            ..
        } = &events[1]
        else {
            unreachable!("checked by kind");
        };
        assert_eq!((*node, tool.as_str(), server), (4, "s:a", &None));
        let error = error.as_deref().unwrap();
        assert!(error.starts_with("cut off after "), "{error}");
        assert!(
            error.ends_with(": time budget of 4s spent while searching"),
            "{error}"
        );
        assert!(observation.is_error && observation.text == error);
        assert_eq!(*confidence, Some(0.3));
        // Written once: a second cut has nothing left to write.
        let mut again: Vec<EventBody> = Vec::new();
        rehearser.record_cut(&mut again, &end).unwrap();
        assert!(again.is_empty());
    }
}
