//! `cosmos wm-eval` (docs/world-models.md, "Evaluating world models"): every real tool call
//! recorded in some runs (a fork's replayed calls aside: they are context, their original
//! run's calls) is simulated by each of several named world models, in the context the
//! agent had (the task's request and the real steps before it), and scored against the real
//! result with the one fidelity. The paper behind mcp-cosmos only saw world models through the
//! agents' final scores; here the planner's randomness is out of the comparison.
//!
//! A `memory` world model is evaluated leave one run out: it never sees the run the call comes
//! from. The simulations are written as a trajectory of their own (agent kind `wm_eval`: each
//! recorded call copied as `tool_called` with its origin, each simulation a `call_simulated`
//! of that step, each failure an `error` from `world_model`), so `validate`, `replay` and
//! `report` read it; the leaderboard (`metrics::leaderboard`) is the written file's, read back
//! by [`filed::Filed`] as the explorer reads it, and printed.
//!
//! `cosmos wm-eval`: reads the real calls of some runs (and a proxied client's resource reads, as
//! the read-only tool `SERVER:resources/read`: `Exchange::as_read_call`, which `memory` uses too)
//! with their context (request, real steps
//! before), has each named world model simulate each (concurrently, cached per world model; a
//! `memory` one built without the call's own run), writes a `wm_eval` trajectory (copied
//! `tool_called` with `origin`, `call_simulated`, `error` from `world_model`), each simulation as
//! it completes (the file is created first, so an unwritable folder fails before any cost), and
//! returns the `metrics::leaderboard` (pure aggregation: fidelity means and intervals clustered by
//! run, error prediction, paired intervals) of the file it wrote, read back by `wm_eval/filed.rs`
//! (`Filed::read`: each call with each world model's verdict and predicted state, what the real
//! call did to its state (`StateEffect`), a failure tied to the call by its `step`), the one reading
//! the explorer's world-model view takes too. A copied call's `state_change` carries the real state
//! after it (`after`), so predicted states are scored from the file alone. A stop ends the file `interrupted`; a rerun takes the
//! simulations earlier wm-eval files in the folder hold (keyed by origin and world model). It sits
//! above `agent` (it records world-model LLM calls with `agent::usage_event`).

pub(crate) mod filed;

pub use filed::{Filed, Verdict, leader_of};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::agent::usage_event;
use crate::config::Config;
use crate::metrics::leaderboard::Leaderboard;
use crate::metrics::run::RunAccumulator;
use crate::world_model::cached::CachedWorldModel;
use crate::world_model::named::{self, Built, BuiltInOptions};
use crate::world_model::{HistoryStep, SimFailure, SimRequest, Simulation};
use cosmos_trajectory::event::{
    AgentInfo, AgentKind, EventBody, Header, ModelInfo, Observation, Origin, PredictionRecord,
    RunStatus, StateChange, StateFields, TaskInfo, ToolInfo,
};
use cosmos_trajectory::reader::{EventStream, collect_files};
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::writer::Writer;

/// A recorded call (read through `RecordedCall`, or a proxied resource read) with the context it
/// was made in: what a world model is asked to predict.
#[derive(Debug, Clone)]
pub struct CallInContext {
    /// The run it comes from.
    pub run: PathBuf,
    /// The run as a file records it ([`crate::mcp::shown_location`]: a run converted from
    /// another program's file lives in a folder removed at exit, and is named by the file the
    /// person gave).
    pub shown: Arc<str>,
    /// Its `seq` there.
    pub seq: u64,
    /// The tool, with its description and schema from the run's header.
    pub tool: ToolInfo,
    /// The server that served it.
    pub server: Option<String>,
    /// Its arguments.
    pub arguments: Value,
    /// The real result (a transport error is an error result with its message).
    pub real: Observation,
    /// The task's id.
    pub task: Arc<str>,
    /// The task's request.
    pub request: Arc<str>,
    /// The tools the run's agent was offered (what the planner may choose from).
    pub tools: Arc<Vec<ToolInfo>>,
    /// How the call changed its server's sandboxed state, when the run watched it.
    pub state_change: Option<Arc<StateChange>>,
    /// Its server's state at the run's start, when the run recorded it.
    pub start_state: Option<Arc<Value>>,
    /// The run's real steps; this call's context is the first `before` of them.
    history: Arc<Vec<HistoryStep>>,
    before: usize,
}

/// A call as read, before its run's history is complete.
struct Recorded {
    seq: u64,
    tool: ToolInfo,
    server: Option<String>,
    arguments: Value,
    real: Observation,
    before: usize,
    state_change: Option<Arc<StateChange>>,
    start_state: Option<Arc<Value>>,
}

impl CallInContext {
    /// Its server's real state after the call, given the state before it ([`StateFold`]),
    /// when that and the change are known.
    pub fn state_after(&self, before: Option<&Value>) -> Option<StateFields> {
        let Some(Value::Object(before)) = before else {
            return None;
        };
        let before: StateFields = before.clone().into_iter().collect();
        crate::mcp::state_view::apply(&before, self.state_change.as_deref()?)
    }

    /// The real steps before this call.
    pub fn history(&self) -> &[HistoryStep] {
        &self.history[..self.before]
    }
}

/// Each recorded call's server's real state before it, as its run recorded it (the start
/// state moved on by the calls before: [`crate::world_model::belief`]), folded on from the
/// call asked before: calls asked in file order cost one step each, so a run of n calls is
/// folded in O(n), not O(n²). A call earlier than the last one asked (or of another run)
/// starts its server's fold again from the run's start.
#[derive(Default)]
pub struct StateFold {
    /// The run folded.
    run: Option<PathBuf>,
    /// Per server: how many of the run's steps are folded in, and the state after them.
    servers: BTreeMap<String, (usize, Option<StateFields>)>,
}

impl StateFold {
    /// The state of `call`'s server before it; `None` when unknown or too big for a prompt.
    pub fn before(&mut self, call: &CallInContext) -> Option<Value> {
        let server = call.server.as_deref()?;
        if self.run.as_deref() != Some(call.run.as_path()) {
            self.run = Some(call.run.clone());
            self.servers.clear();
        }
        let (done, state) = self
            .servers
            .entry(server.to_string())
            .or_insert_with(|| (0, None));
        if *done > call.before || (*done == 0 && state.is_none()) {
            *done = 0;
            *state = crate::world_model::belief_start(call.start_state.as_deref());
        }
        for step in &call.history[*done..call.before] {
            if crate::mcp::state_view::is_servers(&step.tool, server) {
                *state = crate::world_model::belief_step(state.take(), step);
            }
        }
        *done = call.before;
        crate::world_model::belief_shown(state.as_ref())
    }
}

/// Every real call in the runs under `paths` (wm-eval files themselves are skipped), in file
/// order; and the files skipped, with why.
pub fn recorded_calls(paths: &[PathBuf]) -> Result<(Vec<CallInContext>, Vec<String>)> {
    let found = collect_files(paths)?;
    let mut skipped = found.skipped;
    let mut calls = Vec::new();
    for file in found.files {
        match EventStream::open(&file) {
            // Its calls are copies of the runs it evaluated: evaluated there, never again.
            Ok(stream) if stream.header().agent.kind == AgentKind::WmEval => skipped.push(format!(
                "{}: a wm-eval file, whose calls are copies of the runs it evaluated: give \
                 those runs",
                file.display()
            )),
            Ok(stream) => calls.extend(calls_of_run(&file, stream)?),
            Err(e) => skipped.push(format!("{e:#}")),
        }
    }
    Ok((calls, skipped))
}

/// The calls of the run at `file` to evaluate, each with the run's steps before it.
fn calls_of_run(file: &Path, mut stream: EventStream) -> Result<Vec<CallInContext>> {
    let header = stream.header().clone();
    let tools: BTreeMap<&str, &ToolInfo> =
        header.tools.iter().map(|t| (t.name.as_str(), t)).collect();
    let request: Arc<str> = header.task.request.as_str().into();
    let task: Arc<str> = header.task.id.as_str().into();
    let run_tools = Arc::new(header.tools.clone());
    let mut steps = Vec::new();
    let mut run_calls = Vec::new();
    // Each sandboxed server's state at the run's start.
    let starts: BTreeMap<String, Arc<Value>> = header
        .servers
        .iter()
        .filter_map(|s| {
            Some((
                s.name.clone(),
                Arc::new((**s.start_state.as_ref()?).clone()),
            ))
        })
        .collect();
    while let Some(event) = stream.next_event()? {
        let (info, server, arguments, real, state_change) =
            if let Some(call) = RecordedCall::of(&event.body) {
                // A copy (a fork's replayed history) is context for the calls after it, but
                // not a call to evaluate: it is its original run's, evaluated there, and a
                // `memory` world model built without this file would recall it from there.
                if call.is_copy() {
                    steps.push(HistoryStep {
                        tool: call.tool.to_string(),
                        arguments: call.arguments.clone(),
                        observation: call.observed(),
                        state_change: call.state_change.map(|c| Arc::new(c.clone())),
                        predicted_state: None,
                    });
                    continue;
                }
                (
                    tool_info(&tools, call.tool),
                    call.server.map(str::to_string),
                    call.arguments.clone(),
                    call.observed(),
                    call.state_change.cloned(),
                )
            } else if let EventBody::ResourceRead(read) = event.body {
                // A proxied client's resource read is a read-only call world models may predict.
                let Some((info, arguments, real)) = read.as_read_call() else {
                    continue;
                };
                (info, Some(read.server), arguments, real, None)
            } else {
                continue;
            };
        let tool = info.name.clone();
        let start_state = server.as_ref().and_then(|s| starts.get(s)).cloned();
        let state_change = state_change.map(Arc::new);
        run_calls.push(Recorded {
            seq: event.seq,
            tool: info,
            server,
            arguments: arguments.clone(),
            real: real.clone(),
            before: steps.len(),
            state_change: state_change.clone(),
            start_state,
        });
        steps.push(HistoryStep {
            tool,
            arguments,
            observation: real,
            state_change,
            predicted_state: None,
        });
    }
    let history = Arc::new(steps);
    let shown: Arc<str> = crate::mcp::shown_location(file, &header).into();
    Ok(run_calls
        .into_iter()
        .map(|r| CallInContext {
            run: file.to_path_buf(),
            shown: shown.clone(),
            seq: r.seq,
            tool: r.tool,
            server: r.server,
            arguments: r.arguments,
            real: r.real,
            task: task.clone(),
            request: request.clone(),
            tools: run_tools.clone(),
            state_change: r.state_change,
            start_state: r.start_state,
            history: history.clone(),
            before: r.before,
        })
        .collect())
}

/// The run's catalogue entry for `tool`; a tool it does not list is known by its name alone.
fn tool_info(tools: &BTreeMap<&str, &ToolInfo>, tool: &str) -> ToolInfo {
    tools.get(tool).map_or_else(
        || ToolInfo {
            name: tool.to_string(),
            description: String::new(),
            input_schema: cosmos_trajectory::event::ToolSchema::new(json!({})),
            ..Default::default()
        },
        |t| (*t).clone(),
    )
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct EvalSpec {
    /// World models by name (built in or `[world_models.NAME]`), in the leaderboard's order.
    pub world_models: Vec<String>,
    /// `cosmos.toml`.
    pub config: Option<PathBuf>,
    /// What the built-in names are made of.
    pub options: BuiltInOptions,
    /// Simulations at once.
    pub concurrency: usize,
    /// Folder for the wm-eval file.
    pub out_dir: PathBuf,
    /// The runs the calls came from (recorded in the header).
    pub runs: Vec<PathBuf>,
    /// Decision fidelity: ask the planner role for its next action given the real result and
    /// given each simulation.
    pub decision: bool,
    /// The fidelity a prediction needs to count as good for calibration.
    pub good_fidelity: f64,
}

/// A routing file's text, with each tool's recalibration or why it has none.
#[derive(Debug)]
pub struct Routing {
    /// The file's TOML.
    pub text: String,
    /// Per tool, its curve ([`crate::metrics::recalibration`]) or why none was fitted.
    pub recalibrated: Vec<(
        String,
        Result<crate::metrics::recalibration::Fitted, String>,
    )>,
    /// Predictions the thresholds trust (at or above their tool's threshold, of tools trusted).
    pub trusted: usize,
    /// Predictions judged (with a confidence), over every tool.
    pub judged: usize,
}

/// Per tool, a threshold with a guarantee for world model `name` over the calls of the
/// wm-eval file at `path` (`metrics::routing_bound`) and a recalibration of its confidence
/// (`metrics::recalibration`): the routing file.
pub fn routing(
    path: &Path,
    name: &str,
    target_error: f64,
    delta: f64,
    runs: &[PathBuf],
) -> Result<Routing> {
    use crate::metrics::recalibration::cross_fitted;
    use crate::metrics::routing_bound::{choose, judged_by_tool, routing_file};
    let filed =
        Filed::read(&Run::open(path).with_context(|| format!("reading {}", path.display()))?);
    let w = filed
        .names
        .iter()
        .position(|n| n == name)
        .with_context(|| format!("{} has no world model {name}", path.display()))?;
    let judged = judged_by_tool(&filed.table(), w, filed.good_fidelity);
    let choices: std::collections::BTreeMap<String, _> = judged
        .iter()
        .map(|(tool, judged)| (tool.clone(), choose(judged, target_error, delta)))
        .collect();
    let recalibrated: Vec<_> = judged
        .iter()
        .map(|(tool, judged)| (tool.clone(), cross_fitted(judged)))
        .collect();
    let curves = recalibrated
        .iter()
        .zip(judged.values())
        .filter_map(|((tool, fitted), judged)| {
            let seen = judged.iter().map(|j| j.confidence).collect();
            Some((tool.clone(), (*fitted.as_ref().ok()?, seen)))
        })
        .collect();
    let runs: Vec<String> = runs.iter().map(|r| r.display().to_string()).collect();
    let judged_calls = judged.values().map(Vec::len).sum();
    let trusted = choices
        .values()
        .map(|choice| match *choice {
            crate::metrics::routing_bound::Choice::Trusted { n, .. } => n,
            crate::metrics::routing_bound::Choice::Untrusted { .. } => 0,
        })
        .sum();
    Ok(Routing {
        trusted,
        judged: judged_calls,
        text: routing_file(
            name,
            target_error,
            delta,
            filed.good_fidelity,
            &runs,
            &choices,
            &curves,
        ),
        recalibrated,
    })
}

/// The evaluation's result.
#[derive(Debug)]
pub struct Evaluation {
    /// The leaderboard (of the calls every world model got to, when stopped early).
    pub board: Leaderboard,
    /// The wm-eval file written.
    pub path: PathBuf,
    /// A stop came before every simulation was done: the file ends `interrupted`.
    pub interrupted: bool,
    /// Simulations taken from earlier wm-eval files in the same folder instead of made again.
    pub reused: usize,
    /// World models that failed on every call they were asked (an endpoint down, a command
    /// that cannot start): name, calls, and the first failure's message (which names the
    /// endpoint or command).
    pub silent: Vec<(String, usize, String)>,
}

/// A simulation an earlier wm-eval file in the output folder holds, by the call it simulated
/// (its origin run and `seq`) and the world model's name.
type Earlier = std::collections::HashMap<(String, u64, String), Simulation>;

/// The successful simulations of earlier wm-eval files in `dir` (interrupted ones included), so
/// a rerun after a stop does not pay for them again. Failures are tried again.
fn earlier_simulations(dir: &Path, names: &[String]) -> Earlier {
    let mut found = Earlier::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(mut stream) = cosmos_trajectory::reader::EventStream::open(&path) else {
            continue;
        };
        if stream.header().agent.kind != cosmos_trajectory::event::AgentKind::WmEval {
            continue;
        }
        let mut origin_of: std::collections::HashMap<u64, (String, u64)> = Default::default();
        while let Ok(Some(event)) = stream.next_event() {
            match event.body {
                EventBody::ToolCalled {
                    step,
                    origin: Some(origin),
                    ..
                } => {
                    origin_of.insert(step, (origin.run, origin.seq));
                }
                EventBody::CallSimulated {
                    step,
                    prediction:
                        PredictionRecord {
                            world_model,
                            observation,
                            latency_ms,
                            tokens,
                            confidence,
                            confidence_source,
                            members,
                            predicted_state,
                            ..
                        },
                    ..
                } if names.contains(&world_model) => {
                    if let Some((run, seq)) = origin_of.get(&step) {
                        // The recorded cost, as one estimated call (it is not written again).
                        let llm = tokens.map(|t| crate::world_model::LlmUsage {
                            model: world_model.clone(),
                            prompt_tokens: 0,
                            completion_tokens: t,
                            estimated: true,
                            latency: std::time::Duration::from_millis(latency_ms),
                            error: None,
                            messages: None,
                        });
                        found.insert(
                            (run.clone(), *seq, world_model),
                            Simulation {
                                observation,
                                latency: std::time::Duration::from_millis(latency_ms),
                                llm: llm.into_iter().collect(),
                                confidence: confidence.and_then(|c| {
                                    crate::world_model::Confidence::new(
                                        c,
                                        confidence_source.as_deref().unwrap_or(""),
                                    )
                                }),
                                members,
                                predicted_state: predicted_state.map(|s| *s),
                                field_confidence: Vec::new(),
                            },
                        );
                    }
                }
                _ => {}
            }
        }
    }
    found
}

/// A world model ready to evaluate, with its name.
struct Contender {
    name: String,
    built: Built,
}

/// The planner's decisions after each of `calls` calls, given the real result and each world
/// model's simulation, with the LLM calls that made them, all at `t_ms`.
fn write_decisions(
    writer: &mut Writer,
    decisions: &Decisions,
    calls: usize,
    names: &[String],
    t_ms: u64,
) -> Result<()> {
    for c in 0..calls {
        let step = c as u64 + 1;
        for (given, decision, llm_event) in decisions.of_call(c, names) {
            writer.write(t_ms, llm_event)?;
            if let Some(decision) = decision {
                writer.write(
                    t_ms,
                    EventBody::PlannerDecided {
                        step,
                        given,
                        decision,
                    },
                )?;
            }
        }
    }
    Ok(())
}

/// The world models `spec` names, each named once and built.
fn contenders(spec: &EvalSpec, config: &mut Config) -> Result<Vec<Contender>> {
    if spec.world_models.is_empty() {
        bail!("name at least one world model: --world-model NAME (repeatable)");
    }
    let mut seen = BTreeSet::new();
    for name in &spec.world_models {
        if !seen.insert(name) {
            bail!("world model {name:?} is named twice");
        }
    }
    let mut contenders = Vec::new();
    for name in &spec.world_models {
        let named = named::resolve(name, config, &spec.options)?
            .context("`none` is not a world model to evaluate")?;
        let built = named
            .build()
            .with_context(|| format!("building world model {name}"))?;
        contenders.push(Contender {
            name: name.clone(),
            built,
        });
    }
    Ok(contenders)
}

/// The wm-eval file for `names` in the output folder, its writer redacting the endpoints'
/// secrets.
fn create_file(
    spec: &EvalSpec,
    config: &Config,
    header: &Header,
    names: &[String],
) -> Result<(PathBuf, Writer)> {
    std::fs::create_dir_all(&spec.out_dir)
        .with_context(|| format!("creating {}", spec.out_dir.display()))?;
    let path = spec.out_dir.join(format!(
        "{}_wm-eval_{}.jsonl",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"),
        names
            .iter()
            .map(|n| cosmos_trajectory::writer::file_safe(n, 40))
            .collect::<Vec<_>>()
            .join("+")
    ));
    let redactor = Redactor::with_secrets(
        config
            .llm
            .secrets()
            .into_iter()
            .chain(Redactor::environment_secrets()),
    );
    let writer = Writer::create(&path, header, redactor, Some(RunAccumulator::tally(header)))
        .with_context(|| format!("the wm-eval file in {}", spec.out_dir.display()))?;
    Ok((path, writer))
}

/// The world models that predicted nothing at all: each with how many calls it failed and the
/// first failure's why.
fn silent_models(filed: &Filed, names: &[String]) -> Vec<(String, usize, String)> {
    names
        .iter()
        .enumerate()
        .filter_map(|(w, name)| {
            let verdicts: Vec<&Verdict> = filed
                .calls
                .iter()
                .map(|c| &c.verdicts[w])
                .filter(|v| !matches!(v, Verdict::Missing))
                .collect();
            let first = verdicts.iter().find_map(|v| match v {
                Verdict::Failed(why) => Some(why.clone()),
                _ => None,
            })?;
            verdicts
                .iter()
                .all(|v| matches!(v, Verdict::Failed(_)))
                .then(|| (name.clone(), verdicts.len(), first))
        })
        .collect()
}

/// Simulates every call with every world model and writes the wm-eval file, each simulation
/// as it completes. A `stop` ends it within a moment: the file ends `interrupted` with what
/// was done, and a rerun into the same folder reuses those simulations.
pub async fn evaluate(
    spec: &EvalSpec,
    calls: &[CallInContext],
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Evaluation> {
    if calls.is_empty() {
        bail!("no real tool calls in the runs given: nothing to simulate");
    }
    let mut config = Config::load(spec.config.as_deref())?;
    let contenders = contenders(spec, &mut config)?;
    // The simulation cache per world model: the same call in the same context once.
    let cached: Vec<Arc<dyn crate::world_model::WorldModel>> = contenders
        .iter()
        .map(|c| {
            Arc::new(CachedWorldModel::new(c.built.model.clone()))
                as Arc<dyn crate::world_model::WorldModel>
        })
        .collect();

    let names: Vec<String> = contenders.iter().map(|c| c.name.clone()).collect();
    // The file first: an output folder that cannot be written is found before any simulation
    // is paid for.
    let header = header(spec, &contenders, calls);
    let earlier = earlier_simulations(&spec.out_dir, &names);
    let (path, mut writer) = create_file(spec, &config, &header, &names)?;

    let start = std::time::Instant::now();
    let mut reused = 0;
    // Each call's state before it, folded on call by call as the jobs are made (in file
    // order); its state after, for the call's copy, waits until that copy is written.
    let mut fold = StateFold::default();
    let afters: std::sync::Mutex<BTreeMap<usize, StateFields>> = Default::default();
    let afters = &afters;
    let jobs = calls.iter().enumerate().flat_map(|(c, call)| {
        let contenders = &contenders;
        let cached = &cached;
        let names = &names;
        let earlier = &earlier;
        let state = Arc::new(fold.before(call));
        if let Some(after) = call.state_after(state.as_ref().as_ref()) {
            afters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(c, after);
        }
        (0..contenders.len()).map(move |w| {
            let state = state.clone();
            let model = if contenders[w].built.reads_runs() {
                // Leave one run out: never predicted from its own recording.
                contenders[w].built.for_calls_of(&call.run)
            } else {
                cached[w].clone()
            };
            let done = earlier
                .get(&(call.shown.to_string(), call.seq, names[w].clone()))
                .cloned();
            async move {
                let (result, from_before) = match done {
                    Some(sim) => (Ok(sim), true),
                    None => {
                        let request = SimRequest {
                            tool: &call.tool,
                            arguments: &call.arguments,
                            user_request: &call.request,
                            history: call.history(),
                            state: state.as_ref().as_ref(),
                        };
                        (model.simulate(request).await, false)
                    }
                };
                (c, w, result, from_before)
            }
        })
    });
    let mut pending = futures::stream::iter(jobs).buffer_unordered(spec.concurrency.max(1));
    // Each simulation is written as it completes; a call's copy goes first, at its first one.
    let mut copied = vec![false; calls.len()];
    let mut sims: Vec<(usize, usize, Result<Simulation, SimFailure>)> = Vec::new();
    let mut interrupted = false;
    loop {
        let next = tokio::select! {
            biased;
            Ok(_) = stop.wait_for(|s| *s) => {
                interrupted = true;
                break;
            }
            next = pending.next() => next,
        };
        let Some((c, w, result, from_before)) = next else {
            break;
        };
        reused += usize::from(from_before);
        let call = &calls[c];
        let step = c as u64 + 1;
        let at = start.elapsed().as_millis() as u64;
        if !copied[c] {
            copied[c] = true;
            let after = afters.lock().unwrap_or_else(|p| p.into_inner()).remove(&c);
            writer.write(at, copy_of(call, step, after))?;
        }
        write_simulation(
            &mut writer,
            (at, step),
            names[w].as_str(),
            &result,
            from_before,
        )?;
        // Kept only for the planner's decisions; the leaderboard is read back from the file.
        if spec.decision {
            sims.push((c, w, result));
        }
    }
    drop(pending);
    sims.sort_by_key(|(c, w, _)| (*c, *w));
    let decisions = if spec.decision && !interrupted {
        decide(&config.llm, calls, &sims, spec.concurrency).await
    } else {
        Decisions::default()
    };
    let last_t = start.elapsed().as_millis() as u64;
    write_decisions(&mut writer, &decisions, calls.len(), &names, last_t)?;
    // The leaderboard is the written file's, read back as the explorer reads it: what is
    // printed, recorded as the leader and drawn is one record (redaction and caps included).
    let filed =
        Filed::read(&Run::open(&path).with_context(|| format!("reading back {}", path.display()))?);
    let board = filed.leaderboard();
    // A world model that predicted nothing at all is said, with why, not a row of zeros.
    let silent = silent_models(&filed, &names);
    writer.write(
        start.elapsed().as_millis() as u64,
        finished(interrupted, filed::leader_of(&board), &silent),
    )?;
    Ok(Evaluation {
        board,
        path,
        interrupted,
        reused,
        silent,
    })
}

/// The wm-eval file's `run_finished`: completed, stopped by the user, or failed when a world model
/// predicted nothing at all; its leaderboard's leader in its totals.
fn finished(
    interrupted: bool,
    leader: Option<cosmos_trajectory::event::Leader>,
    silent: &[(String, usize, String)],
) -> EventBody {
    // A world model that predicted nothing at all fails the evaluation (the command exits 1):
    // the file says so too, so no view draws it as a success.
    let failed = silent
        .first()
        .map(|(name, calls, why)| format!("{name} predicted none of its {calls} call(s): {why}"));
    EventBody::RunFinished {
        status: if interrupted {
            RunStatus::Interrupted
        } else if failed.is_some() {
            RunStatus::Failed
        } else {
            RunStatus::Completed
        },
        error: if interrupted {
            Some("stopped by the user".to_string())
        } else {
            failed
        },
        ending: None,
        totals: cosmos_trajectory::event::Totals {
            leader,
            ..Default::default()
        },
        end_digest: Default::default(),
        state_match: Default::default(),
    }
}

/// A recorded call copied into the wm-eval file as step `step`, with where it came from.
fn copy_of(call: &CallInContext, step: u64, after: Option<StateFields>) -> EventBody {
    EventBody::ToolCalled {
        step,
        tool: call.tool.name.clone(),
        server: call.server.clone(),
        arguments: Box::new(call.arguments.clone()),
        result: call.real.clone(),
        latency_ms: 0,
        node: None,
        error: None,
        origin: Some(Box::new(Origin {
            run: call.shown.to_string(),
            seq: call.seq,
        })),
        state_change: call.state_change.as_deref().map(|change| {
            Box::new(StateChange {
                after: after.map(|s| Box::new(Value::Object(s.into_iter().collect()))),
                ..change.clone()
            })
        }),
    }
}

/// Writes what world model `name` did with the call of `step` at time `at` (its LLM usage
/// first, unless the simulation was `reused` from an earlier file, where its cost was
/// recorded). It is scored when the file is read back ([`Filed`]).
fn write_simulation(
    writer: &mut Writer,
    (at, step): (u64, u64),
    name: &str,
    result: &Result<Simulation, SimFailure>,
    reused: bool,
) -> Result<()> {
    match result {
        Ok(sim) => {
            for usage in sim.llm.iter().filter(|_| !reused) {
                writer.write(at, usage_event(usage))?;
            }
            writer.write(
                at,
                EventBody::CallSimulated {
                    step,
                    tool: None,
                    arguments: None,
                    prediction: PredictionRecord {
                        world_model: name.to_string(),
                        observation: sim.observation.clone(),
                        latency_ms: sim.latency.as_millis() as u64,
                        tokens: sim.tokens(),
                        confidence: sim.confidence.as_ref().map(|c| c.value),
                        confidence_source: sim.confidence.as_ref().map(|c| c.source.clone()),
                        members: sim.members.clone(),
                        predicted_state: sim.predicted_state.clone().map(Box::new),
                    },
                },
            )?;
            Ok(())
        }
        Err(failure) => {
            for usage in &failure.llm {
                writer.write(at, usage_event(usage))?;
            }
            writer.write(
                at,
                EventBody::Error {
                    source: cosmos_trajectory::event::ErrorSource::WorldModel,
                    name: Some(name.to_string()),
                    message: format!("step {step}: {}", failure.message),
                    stderr_tail: None,
                    step: Some(step),
                },
            )?;
            Ok(())
        }
    }
}

/// The planner's decisions after each call: given the real result (`None`) and given each world
/// model's simulation (`Some(w)`), with the LLM call behind each.
#[derive(Default)]
struct Decisions {
    /// (call, world model or the real result) → (the decision, if one was had; its llm_call).
    by: std::collections::HashMap<Given, (Option<String>, EventBody)>,
}

/// A call, and the world model whose simulation the planner was given (`None`: the real result).
type Given = (usize, Option<usize>);

impl Decisions {
    /// A call's decisions, the real result's first: (given, decision, llm_call event).
    fn of_call(&self, call: usize, names: &[String]) -> Vec<(String, Option<String>, EventBody)> {
        std::iter::once(None)
            .chain((0..names.len()).map(Some))
            .filter_map(|w| {
                let (decision, event) = self.by.get(&(call, w))?;
                let given = w.map_or_else(|| "real".to_string(), |w| names[w].clone());
                Some((given, decision.clone(), event.clone()))
            })
            .collect()
    }
}

/// A planner's reply as a comparable decision.
fn decision_of(reply: &crate::agent::planner::Reply) -> String {
    use cosmos_trajectory::event::Action;
    match reply.candidates.first() {
        Some(Ok(Action::ToolCall { tool, arguments })) => {
            format!("call {tool} {}", crate::world_model::canonical(arguments))
        }
        Some(Ok(Action::Finish { .. })) => "finish".into(),
        _ => "rejected".into(),
    }
}

/// Asks the planner role, for every call, what it would do next given the real result and
/// given each world model's simulation of it (concurrently).
async fn decide(
    llm: &crate::llm::endpoints::LlmConfig,
    calls: &[CallInContext],
    results: &[(usize, usize, Result<Simulation, SimFailure>)],
    concurrency: usize,
) -> Decisions {
    use crate::agent::FunctionNames;
    use crate::agent::planner::ask;
    use crate::agent::prompt::{Setting, Turn};
    use cosmos_trajectory::event::Role;
    let planner = crate::llm::client::LlmClient::new(llm.endpoint(Role::Planner).clone());
    let model = planner.endpoint().model.clone();
    // The steps before call `c`, then the call with `observation` as its result.
    let given = |c: usize, observation: &Observation| {
        let call = &calls[c];
        let mut history = call.history().to_vec();
        history.push(HistoryStep {
            tool: call.tool.name.clone(),
            arguments: call.arguments.clone(),
            observation: observation.clone(),
            ..Default::default()
        });
        history
    };
    let mut jobs: Vec<(usize, Option<usize>, Vec<HistoryStep>)> = (0..calls.len())
        .map(|c| (c, None, given(c, &calls[c].real)))
        .collect();
    for (c, w, result) in results {
        if let Ok(sim) = result {
            jobs.push((*c, Some(*w), given(*c, &sim.observation)));
        }
    }
    let planner = &planner;
    let model = &model;
    let answers: Vec<(Given, (Option<String>, EventBody))> =
        futures::stream::iter(jobs.into_iter().map(|(c, w, history)| async move {
            let call = &calls[c];
            let Ok(functions) = FunctionNames::new(&call.tools) else {
                return None;
            };
            let turn = Turn {
                request: &call.request,
                history: &history,
                setting: Setting::Real,
                k: 1,
                rejected: None,
            };
            let answer = match ask(planner, &call.tools, &functions, &turn).await {
                Ok(reply) => (
                    Some(decision_of(&reply)),
                    crate::agent::llm_call_event(Role::Planner, model, Ok(&reply.completion)),
                ),
                Err(e) => (
                    None,
                    crate::agent::llm_call_event(Role::Planner, model, Err(&e)),
                ),
            };
            Some(((c, w), answer))
        }))
        .buffer_unordered(concurrency.max(1))
        .filter_map(|a| async move { a })
        .collect()
        .await;
    Decisions {
        by: answers.into_iter().collect(),
    }
}

/// The wm-eval file's header: the world models (each one's description) and the runs.
fn header(spec: &EvalSpec, contenders: &[Contender], calls: &[CallInContext]) -> Header {
    let mut settings = BTreeMap::new();
    settings.insert("good_fidelity".to_string(), json!(spec.good_fidelity));
    // The names the events use, in the leaderboard's order.
    settings.insert(
        "names".to_string(),
        json!(
            contenders
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
        ),
    );
    settings.insert(
        "world_models".to_string(),
        Value::Array(
            contenders
                .iter()
                .map(|c| serde_json::to_value(c.built.model.describe()).unwrap_or(Value::Null))
                .collect(),
        ),
    );
    settings.insert(
        "runs".to_string(),
        json!(
            spec.runs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        ),
    );
    settings.insert("concurrency".to_string(), json!(spec.concurrency));
    settings.insert("leave_one_run_out".to_string(), json!(["memory"]));
    let mut header = Header::new(
        format!(
            "{}-wm-eval",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
        ),
        TaskInfo {
            id: "wm-eval".into(),
            request: format!(
                "{} world model(s) simulating {} recorded real call(s)",
                contenders.len(),
                calls.len()
            ),
            source: Some(
                spec.runs
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            ..Default::default()
        },
        AgentInfo {
            kind: AgentKind::WmEval,
            settings,
        },
        ModelInfo {
            model: "none".into(),
            base_url: None,
        },
    );
    let mut tools: BTreeMap<&str, &ToolInfo> = BTreeMap::new();
    for call in calls {
        tools.entry(&call.tool.name).or_insert(&call.tool);
    }
    header.tools = tools.into_values().cloned().collect();
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stop that never comes (its sender is gone).
    fn never_stopped() -> tokio::sync::watch::Receiver<bool> {
        tokio::sync::watch::channel(false).1
    }
    use cosmos_trajectory::synthetic::{self, Spec};

    /// The fold gives every call the state `belief` gives it from the start, asked in order,
    /// out of order and across two runs.
    #[test]
    fn the_state_fold_agrees_with_folding_from_the_start_whatever_the_order() {
        let change = |field: &str, qty: u64| {
            Arc::new(StateChange {
                fields_changed: 1,
                fields: [(
                    field.to_string(),
                    cosmos_trajectory::event::FieldChange {
                        before: Some(json!(qty)),
                        after: Some(json!(qty + 1)),
                    },
                )]
                .into_iter()
                .collect(),
                ..Default::default()
            })
        };
        let start = Arc::new(json!({"a": 0, "b": 0}));
        let steps: Vec<HistoryStep> = (0..9u64)
            .map(|i| HistoryStep {
                tool: if i % 3 == 2 {
                    "other:x".into()
                } else {
                    "kv:add".into()
                },
                arguments: json!({}),
                state_change: (i % 3 != 2).then(|| change(if i % 2 == 0 { "a" } else { "b" }, i)),
                ..Default::default()
            })
            .collect();
        let history = Arc::new(steps);
        let calls: Vec<CallInContext> = ["one", "two"]
            .iter()
            .flat_map(|run| {
                let history = history.clone();
                let start = start.clone();
                (0..9usize).map(move |before| CallInContext {
                    run: PathBuf::from(run),
                    shown: (*run).into(),
                    seq: before as u64 + 1,
                    tool: ToolInfo {
                        name: history[before].tool.clone(),
                        ..Default::default()
                    },
                    server: Some(if before % 3 == 2 { "other" } else { "kv" }.into()),
                    arguments: json!({}),
                    real: Observation::default(),
                    task: "t".into(),
                    request: "r".into(),
                    tools: Arc::default(),
                    state_change: history[before].state_change.clone(),
                    start_state: (before % 3 != 2).then(|| start.clone()),
                    history: history.clone(),
                    before,
                })
            })
            .collect();
        let expected = |call: &CallInContext| {
            crate::world_model::belief(
                call.start_state.as_deref(),
                call.history(),
                call.server.as_deref().unwrap(),
            )
        };
        let mut fold = StateFold::default();
        for order in [
            (0..calls.len()).collect::<Vec<_>>(),
            vec![5, 2, 7, 1, 17, 9, 8, 0, 16, 3],
        ] {
            for i in order {
                assert_eq!(fold.before(&calls[i]), expected(&calls[i]), "call {i}");
            }
        }
        assert_eq!(fold.before(&calls[7]).unwrap(), json!({"a": 7, "b": 4}));
    }

    /// A run file with real calls `(tool, arguments, result)`.
    fn write_run(dir: &std::path::Path, name: &str, calls: &[(&str, Value, &str)]) -> PathBuf {
        let calls: Vec<_> = calls
            .iter()
            .map(|(tool, arguments, text)| (*tool, arguments.clone(), *text, None))
            .collect();
        write_calls(dir, name, &calls)
    }

    /// A run file with real calls `(tool, arguments, result, origin)` (a copy has an origin).
    fn write_calls(
        dir: &std::path::Path,
        name: &str,
        calls: &[(&str, Value, &str, Option<Origin>)],
    ) -> PathBuf {
        let path = dir.join(name);
        let mut header = synthetic::header(&Spec::default());
        header.synthetic = false;
        header.agent.kind = AgentKind::React;
        header.task.request = "convert times".into();
        let mut w = Writer::create(&path, &header, Redactor::new(), None).unwrap();
        for (i, (tool, arguments, text, origin)) in calls.iter().enumerate() {
            w.write(
                i as u64,
                EventBody::ToolCalled {
                    step: i as u64 + 1,
                    tool: tool.to_string(),
                    server: None,
                    arguments: Box::new(arguments.clone()),
                    result: Observation {
                        text: text.to_string(),
                        ..Default::default()
                    },
                    latency_ms: 1,
                    node: None,
                    error: None,
                    origin: origin.clone().map(Box::new),
                    state_change: None,
                },
            )
            .unwrap();
        }
        path
    }

    #[test]
    fn a_forks_replayed_history_is_context_but_never_evaluated_again() {
        let dir = tempfile::tempdir().unwrap();
        let original = write_run(
            dir.path(),
            "a.jsonl",
            &[("t:convert", json!({"to": "Asia/Tokyo"}), "18:00")],
        );
        // The fork: the original's call copied (with its origin), then a call of its own.
        let copy = Origin {
            run: original.display().to_string(),
            seq: 1,
        };
        write_calls(
            dir.path(),
            "b.jsonl",
            &[
                (
                    "t:convert",
                    json!({"to": "Asia/Tokyo"}),
                    "18:00",
                    Some(copy),
                ),
                ("t:convert", json!({"to": "Europe/Oslo"}), "10:00", None),
            ],
        );
        let (calls, skipped) = recorded_calls(&[dir.path().to_path_buf()]).unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        let evaluated: Vec<(&str, &Value)> = calls
            .iter()
            .map(|c| (c.run.file_name().unwrap().to_str().unwrap(), &c.arguments))
            .collect();
        assert_eq!(
            evaluated,
            [
                ("a.jsonl", &json!({"to": "Asia/Tokyo"})),
                ("b.jsonl", &json!({"to": "Europe/Oslo"}))
            ],
            "the copy is the original's call, evaluated once, from its own run"
        );
        assert_eq!(
            calls[1].history().len(),
            1,
            "the fork's own call had the replayed call before it"
        );
        assert_eq!(calls[1].history()[0].observation.text, "18:00");
    }

    #[tokio::test]
    async fn memory_never_predicts_a_call_from_its_own_run() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        // Tokyo is recorded only in run a; London in both.
        write_run(
            &runs,
            "a.jsonl",
            &[
                (
                    "t:convert",
                    json!({"to": "Europe/London"}),
                    r#"{"zone":"Europe/London","hour":9}"#,
                ),
                (
                    "t:convert",
                    json!({"to": "Asia/Tokyo"}),
                    r#"{"zone":"Asia/Tokyo","hour":18}"#,
                ),
                ("t:weather", json!({"city": "Oslo"}), "snow"),
            ],
        );
        write_run(
            &runs,
            "b.jsonl",
            &[(
                "t:convert",
                json!({"to": "Europe/London"}),
                r#"{"zone":"Europe/London","hour":9}"#,
            )],
        );
        let (calls, skipped) = recorded_calls(std::slice::from_ref(&runs)).unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        assert_eq!(calls.len(), 4);
        assert_eq!(
            calls[1].history().len(),
            1,
            "the Tokyo call had London's before it"
        );
        let spec = EvalSpec {
            world_models: vec!["memory".into()],
            config: None,
            options: BuiltInOptions {
                memory_from: vec![runs.clone()],
                ..Default::default()
            },
            concurrency: 2,
            out_dir: dir.path().join("out"),
            runs: vec![runs.clone()],
            decision: false,
            good_fidelity: 0.9,
        };
        let evaluation = evaluate(&spec, &calls, never_stopped()).await.unwrap();
        let row = &evaluation.board.world_models[0];
        assert_eq!(row.calls, 4);
        // The weather tool was recorded only in a: nothing to predict it from, a failure
        // (never its own recording, which would score 1).
        assert_eq!((row.n, row.failed), (3, 1));
        // London from a is predicted from b's London (exact), and the other way round; Tokyo
        // is only in a, so from b's London: the right shape, the wrong values, not a 1.
        let text = std::fs::read_to_string(&evaluation.path).unwrap();
        let sims: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["kind"] == "call_simulated")
            .collect();
        assert_eq!(sims.len(), 3);
        assert!(
            sims[1]["observation"]["text"]
                .as_str()
                .unwrap()
                .contains("London")
        );
        let fidelity = row.fidelity.unwrap().mean;
        assert!(fidelity < 1.0, "Tokyo is not a perfect match: {fidelity}");
        assert!(
            text.contains("\"origin\":{\"run\":"),
            "each copy names its origin"
        );
        assert!(
            text.contains("no recorded call of t:weather"),
            "the failure is an error event"
        );
        // The file is a trajectory the readers take.
        let run = cosmos_trajectory::run::Run::open(&evaluation.path).unwrap();
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        assert_eq!(run.header.agent.kind, AgentKind::WmEval);
    }

    #[tokio::test]
    async fn mistakes_are_clear_errors_before_any_simulation() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        write_run(&runs, "a.jsonl", &[("t:convert", json!({"to": "x"}), "{}")]);
        let (calls, _) = recorded_calls(std::slice::from_ref(&runs)).unwrap();
        let spec = |names: &[&str]| EvalSpec {
            world_models: names.iter().map(|n| n.to_string()).collect(),
            config: None,
            options: BuiltInOptions {
                memory_from: vec![runs.clone()],
                ..Default::default()
            },
            concurrency: 1,
            out_dir: dir.path().join("out"),
            runs: vec![runs.clone()],
            decision: false,
            good_fidelity: 0.9,
        };
        for (names, calls, expected) in [
            (&[][..], &calls[..], "at least one world model"),
            (&["memory", "memory"][..], &calls[..], "named twice"),
            (&["none"][..], &calls[..], "not a world model to evaluate"),
            (&["memory"][..], &[][..], "no real tool calls"),
        ] {
            let e = format!(
                "{:#}",
                evaluate(&spec(names), calls, never_stopped())
                    .await
                    .unwrap_err()
            );
            assert!(e.contains(expected), "{e}");
        }
        assert!(!dir.path().join("out").exists(), "nothing written");
    }
}
