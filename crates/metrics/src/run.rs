//! Per-run metrics, computed from small per-step and per-call facts so that the same
//! formulas serve a streaming pass (`report`), a loaded run at any cursor (the explorer)
//! and the recorder's totals.
//!
//! Per-run metrics from small per-step (`StepFacts`) facts, LLM usage by role (each
//! call's `LlmFacts` summed by `add_usage`) and rejected-decision facts. One formula
//! (`compute`) serves three callers: the streaming `RunAccumulator` (`report`, which hands it
//! briefs with their line spans, so a simulation is kept as where its line lies and read back
//! from the file only when a real call pairs with it; and the writer's `run_finished` totals as
//! a `Tally`), and `RunFacts::at(run, k, tree)`
//! (the explorer: facts that grow beside a loaded `Run`, taken as prefixes; LLM usage from a
//! sum kept every 1024 calls plus the calls since, read from the run's briefs). Run tokens are the agent's; the judge's are apart. A validator's rejection never
//! counts in fidelity. A step carries its paired prediction's confidence, so `unsure_calls`
//! (calls a plan rested on a prediction below `unsure_below`) is counted by `compute` too; a
//! `idle_expired` session's wall time ends at its last event before `run_finished`
//! (`Ending::wall_ends_before_finish`). The rule-based rates are MCP-Bench's, term for term
//! (docs/report-format.md has each definition beside MCP-Bench's). `METRICS_VERSION` is written
//! into every `run_finished`; a view shows stored totals only of this version and computes older
//! ones again (the browser's `RecountJob`, a sweep's finished cell): raise it whenever
//! `compute` changes meaning. A run's `ending` (what brought it to its end: the planner's finish,
//! a limit, a search cut short, no call) is `run_finished`'s, set by the agent through
//! `agent::End`; an older file's is read from its `agent` errors (`legacy_ending`). `tests/reports/one_number.rs` holds every view's state to `report --per-run`;
//! `tests/explorer/view_truth.rs` holds what the screen shows (figures parsed back from TestBackend
//! frames of the browser, run view, wm-eval view and compare, over every sample run and over
//! generated runs) to the report's JSON and to the file's own lines. Every bounded figure is
//! written by `metrics/figure.rs` (never `100%` or `0` unless exact).
//!
//! # MCP-Bench's rule-based metrics, side by side
//!
//! MCP-Bench (Accenture/mcp-bench) computes these in `benchmark/evaluator.py`
//! (`_calculate_tool_accuracy_metrics`, `_calculate_server_utilization_metrics`) over the executor's
//! `execution_results` (`agent/executor.py`, `_execute_planned_tools`): one result per planned tool
//! that named a tool, executed or not, with `success`, `tool`, `server` and `parameters`. A tool no
//! server offers is a result with `success: false` ("Tool '…' not found") and no server; an exception
//! during the call (a timeout) is `success: false` with the tool's server. cosmos's results are the
//! run's `tool_called` events: ReAct calls a tool no server offers and records the failed call (no
//! server), as MCP-Bench does; in an older ReAct file such a decision was written as a
//! `decision_rejected` (`unknown_tool`) instead, and is counted as that failed call. In SPIRAL-Exec
//! and ReAct-Plan-Exec a rejected candidate is never executed, so it is no result (MCP-Bench has no
//! rehearsal; its plans are executed as planned). Per run:
//!
//! | metric | MCP-Bench's definition | no calls | cosmos |
//! |---|---|---|---|
//! | `tool_call_success_rate` (MCP-Bench's `execution_success_rate`) | results with `success` / all results | `None` (left out of averages) | the same |
//! | `valid_tool_name_rate` | results whose tool is in the available tools / all results | `None` | the same |
//! | `input_schema_compliance` | results with a valid name whose parameters validate (`jsonschema.validate`; an empty schema passes, a schema that raises fails) / results with a valid name; **0.0** when no result had a valid name | `None` | the same (a schema that does not compile fails; the agent's validator still lets such calls through) |
//! | `valid_call_failure_rate` | results with a valid name that failed / results with a valid name; 0.0 when none had a valid name | `None` | the same |
//! | `planning_json_compliance` | planned tools (dict entries of a parsed plan) that have a `tool` / all planned tools; **1.0** when none were planned | 1.0 | planned calls: search and chain nodes whose action is a call, ReAct's calls, and rejected replies that were calls (`no_tool`, `unknown_tool`, `bad_arguments`); those with a tool / all. A reply that is not JSON, or neither a call nor a finish, is MCP-Bench's format failure, which it retries and does not count; cosmos counts it in `rejected_decisions` |
//! | `server_count` | distinct non-empty `server` among the results | 0 | distinct servers among `tool_called` (for a call with a valid name that was cut off, its tool's server) |
//! | `cross_server_coordination` | `server_count > 1` | false | the same; per group, the share of runs (with calls) that did |
//!
//! Group values are means over the runs that have the metric, as MCP-Bench averages, with the
//! intervals above. cosmos adds `rejected_decisions`, `tokens`, `fidelity`, Execution Quality
//! anchored, and the outcome counts.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};

use super::fidelity::{self, Fidelity};
use cosmos_trajectory::catalog::ToolCatalog;
use cosmos_trajectory::event::{
    Action, ActionKind, AgentKind, AnsweredBy, DecisionProblem, Dimensions, Ending, Event,
    EventBody, Header, JudgeRecord, NodeId, Observation, Phase, PredictionRecord, Role, Route,
    RunStatus, SourceTally, Totals, Unrecorded, VALIDATOR,
};
use cosmos_trajectory::fold::TreeState;
use cosmos_trajectory::lean::{Brief, LeanBody};
use cosmos_trajectory::reader::LineSpan;
use cosmos_trajectory::recorded_call::RecordedCall;
use cosmos_trajectory::report_header::ReportHeader;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::writer::Tally;

/// What a real tool call contributes to the metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepFacts {
    /// The call failed (`isError` or a transport error).
    pub is_error: bool,
    /// The tool name was in the catalogue.
    pub valid_name: bool,
    /// The arguments validated against the tool's schema, as MCP-Bench checks them (a schema
    /// that does not compile fails every call).
    pub schema_ok: bool,
    /// The server the call went to (a hash of its name): the recorded one, or for a tool in
    /// the catalogue whose call was cut off, the server its name is under.
    pub server: Option<u64>,
    /// Simulated vs real, when the step executes a node the world model simulated.
    pub fidelity: Option<Fidelity>,
    /// That prediction's confidence, when the world model gave one.
    pub confidence: Option<f64>,
    /// Whether routing trusted that prediction, when the run recorded how it routed it
    /// (`node_simulated`'s `route`).
    pub trusted: Option<bool>,
    /// Whether the call changed its server's state, when a sandbox watched it.
    pub state_changed: Option<bool>,
}

impl StepFacts {
    /// Facts of one `tool_called` event; `simulated` is its plan node's prediction, with its
    /// confidence when it had one.
    pub fn new(
        catalog: &ToolCatalog,
        call: RecordedCall<'_>,
        simulated: Option<(&Observation, Option<f64>)>,
    ) -> Self {
        let state_changed = call.changed_state();
        let RecordedCall {
            tool,
            server,
            arguments,
            ..
        } = call;
        let check = catalog.check(tool, arguments);
        // A valid `SERVER:TOOL` name says its server; a bare tool name says none (taking the
        // tool for its server counted two tools of one server as two servers).
        let server = server
            .or_else(|| {
                check
                    .valid_name
                    .then(|| tool.split_once(':').map(|(server, _)| server))
                    .flatten()
            })
            .map(server_hash);
        let is_error = call.failed();
        let real = call.observed();
        Self {
            is_error,
            valid_name: check.valid_name,
            schema_ok: check.schema_ok && !check.schema_broken,
            server,
            fidelity: simulated.map(|(sim, _)| fidelity::compare(sim, &real)),
            confidence: simulated.and_then(|(_, c)| c),
            trusted: None,
            state_changed,
        }
    }
}

fn server_hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// The version of the metric definitions. `run_finished` totals carry the version that wrote
/// them; a view shows stored totals only when they are of this version and recomputes them
/// from the events otherwise (older files keep the figures of the formulas of their day).
/// Raise it whenever `compute` or a fact it reads changes meaning.
pub const METRICS_VERSION: u32 = 3;

pub use cosmos_trajectory::lean::LlmFacts;

/// LLM usage of one role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RoleUsage {
    /// Calls.
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Calls whose counts were estimated.
    pub estimated_calls: u64,
    /// Calls that failed.
    pub failed_calls: u64,
}

/// Mean fidelity over a run's executed steps that had a simulation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FidelitySummary {
    /// Steps compared.
    pub steps: u64,
    /// Mean overall score.
    pub score: f64,
    /// Mean error agreement.
    pub error_agreement: f64,
    /// Mean structural agreement over the steps where both were JSON.
    pub structure: Option<f64>,
    /// Mean value agreement over the steps where both were JSON.
    pub values: Option<f64>,
    /// Mean token F1.
    pub token_f1: f64,
    /// Mean score over the steps whose call changed its server's state (a sandbox saw a field
    /// change); `None` when there were none.
    #[serde(default)]
    pub changed_state: Option<f64>,
    /// Mean score over the steps whose call a sandbox saw change nothing.
    #[serde(default)]
    pub unchanged_state: Option<f64>,
}

/// A judgement folded into MCP-Bench's three headline scores (`_calculate_average_scores`:
/// each the mean of its two sub-dimensions, each of those the mean over the trials).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSummary {
    /// The judge's model.
    pub model: String,
    /// mean(task fulfillment, grounding).
    pub task_completion: f64,
    /// mean(tool appropriateness, parameter accuracy).
    pub tool_selection: f64,
    /// mean(dependency awareness, parallelism and efficiency).
    pub planning_effectiveness: f64,
    /// Mean of the three above.
    pub overall: f64,
    /// The six sub-dimension scores.
    pub dimensions: Dimensions<f64>,
    /// How many trials the scores are the mean of (1 for a judgement that recorded none).
    pub trials: u32,
    /// The judge's own variance over this run's trials (sample variance); `None` under two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_variance: Option<JudgeVariance>,
}

/// Sample variances over one run's judge trials.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JudgeVariance {
    /// Per sub-dimension.
    pub dimensions: Dimensions<f64>,
    /// Of the headline scores, each trial's taken from its own sub-dimensions.
    pub task_completion: f64,
    /// As above.
    pub tool_selection: f64,
    /// As above.
    pub planning_effectiveness: f64,
    /// As above.
    pub overall: f64,
}

/// MCP-Bench's three headline scores and the overall from six sub-dimension scores.
fn headline(d: &Dimensions<f64>) -> [f64; 4] {
    let task_completion = (d.task_fulfillment + d.grounding) / 2.0;
    let tool_selection = (d.tool_appropriateness + d.parameter_accuracy) / 2.0;
    let planning = (d.dependency_awareness + d.parallelism_efficiency) / 2.0;
    [
        task_completion,
        tool_selection,
        planning,
        (task_completion + tool_selection + planning) / 3.0,
    ]
}

impl JudgeSummary {
    /// Folds a judgement.
    pub fn of(record: JudgeRecord<'_>) -> Self {
        let dimensions = record.scores.values();
        let [
            task_completion,
            tool_selection,
            planning_effectiveness,
            overall,
        ] = headline(&dimensions);
        let trials: Vec<Dimensions<f64>> = record
            .judging
            .map(|j| j.answered().copied().collect())
            .unwrap_or_default();
        let variance = |values: Vec<f64>| super::stats::sd(&values).map_or(0.0, |sd| sd * sd);
        let trial_variance = (trials.len() >= 2).then(|| {
            let heads: Vec<[f64; 4]> = trials.iter().map(headline).collect();
            let head = |i: usize| variance(heads.iter().map(|h| h[i]).collect());
            JudgeVariance {
                dimensions: Dimensions::from_fn(|name| {
                    variance(trials.iter().filter_map(|t| t.get(name).copied()).collect())
                }),
                task_completion: head(0),
                tool_selection: head(1),
                planning_effectiveness: head(2),
                overall: head(3),
            }
        });
        Self {
            model: record.model.to_string(),
            task_completion,
            tool_selection,
            planning_effectiveness,
            overall,
            dimensions,
            trials: (trials.len() as u32).max(1),
            trial_variance,
        }
    }
}

/// Everything measured about one run (up to a cursor, or whole).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunMetrics {
    /// Real tool calls.
    pub tool_calls: u64,
    /// Calls without error / calls (MCP-Bench's `execution_success_rate`); `None` with no calls.
    pub tool_call_success_rate: Option<f64>,
    /// Calls to tools in the catalogue / calls; `None` with no calls.
    pub valid_tool_name_rate: Option<f64>,
    /// Calls whose arguments validate / calls with a valid name, 0 when no call had a valid
    /// name (as MCP-Bench); `None` with no calls.
    pub input_schema_compliance: Option<f64>,
    /// Failed calls among calls with a valid name / calls with a valid name, 0 when none had
    /// a valid name (as MCP-Bench); `None` with no calls.
    pub valid_call_failure_rate: Option<f64>,
    /// Planned calls that named a tool / planned calls; 1 when nothing was planned (as
    /// MCP-Bench, which counts the entries of its plans).
    pub planning_json_compliance: Option<f64>,
    /// Distinct servers called (MCP-Bench's `server_count`).
    pub server_count: u64,
    /// Wall time per phase, milliseconds, in [`Phase::ALL`] order, without the time spent
    /// waiting for someone to answer a server's question (`waiting_ms`).
    pub phase_ms: [u64; 4],
    /// Time spent waiting for a person (or the proxy's client) to answer servers'
    /// questions (elicitation), milliseconds: part of the wall time, no phase's.
    #[serde(default)]
    pub waiting_ms: u64,
    /// Wall time from start to the last event.
    pub wall_ms: u64,
    /// The run's source did not record times (an imported run; its header's
    /// `source.unrecorded` says `t_ms`): `wall_ms` and `phase_ms` mean nothing, and every view
    /// shows `—` for them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub times_unrecorded: bool,
    /// The run's source counted no tokens (`source.unrecorded` says `tokens`): every token
    /// figure means nothing, and every view shows `—` for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_unrecorded: bool,
    /// The run's source named no call's server (`source.unrecorded` says `servers`):
    /// `server_count` and cross-server coordination mean nothing, and every view shows `—`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub servers_unrecorded: bool,
    /// Scores the run's source recorded of it (`source_scored`, an Inspect sample's
    /// scorers), apart from cosmos's own judge.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub source_scored: u64,
    /// Of those, the scores that failed it (`I`, 0).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub source_failed: u64,
    /// Of those, the scores that passed it (`C`, 1).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub source_passed: u64,
    /// Real calls made while planning in place of unsure predictions (routing's
    /// `node_grounded`): real traffic, though none is one of the run's steps.
    #[serde(default)]
    pub grounded_calls: u64,
    /// A proxy client's calls the world model answered (`routed`, hybrid and simulate
    /// sessions): answered, though no server saw them, so none is one of `tool_calls`.
    #[serde(default)]
    pub simulated_answers: u64,
    /// Real calls of the agent's plan that rested on an unsure prediction: one below
    /// [`unsure_below`] or with no confidence. `None` for an agent that plans on no
    /// predictions (ReAct, a proxy session, an evaluation).
    #[serde(default)]
    pub unsure_calls: Option<u64>,
    /// In a run that routes: predictions routing trusted (a planner's, or a hybrid proxy
    /// session's answers by the world model). `None` for a run that does not route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_predictions: Option<u64>,
    /// In a run that routes: real calls routing saved (a planner's trusted predictions of
    /// read-only tools, which it would otherwise have called; a proxy's answers by the world
    /// model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_calls_saved: Option<u64>,
    /// In a planner's run that routes: trusted predictions its plan then called for real and
    /// found poor (fidelity under [`fidelity::GOOD_FIDELITY`]). `None` where no
    /// later real call checks them (a proxy session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_poor: Option<u64>,
    /// World to real ([`world_to_real`]): the share of a planner's real calls that went as
    /// simulated, in order, up to the first that did not. `None` for an agent that plans on no
    /// predictions (ReAct, a proxy session, an evaluation) or a run none of whose calls was
    /// simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w2r: Option<f64>,
    /// The real call (from 1) where the plan first went otherwise than simulated, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w2r_divergence: Option<u64>,
    /// LLM usage per role, in [`Role::ALL`] order.
    pub llm: [RoleUsage; 5],
    /// Search-tree nodes added.
    pub nodes: u64,
    /// Fidelity over executed steps with a simulation.
    pub fidelity: Option<FidelitySummary>,
    /// Judge scores, when the run was judged.
    pub judge: Option<JudgeSummary>,
    /// How the run ended; `None` while running or after a crash.
    pub status: Option<RunStatus>,
    /// The run produced an answer.
    pub answered: bool,
    /// Planner replies that were no usable decision.
    pub rejected_decisions: u64,
    /// What brought the run to its end (`None` while running, or when an older file does not
    /// tell).
    pub ending: Option<Ending>,
    /// How the end state matches the task's expected state: matched fields over checked ones
    /// ([`crate::state_match::rate`]); `None` when the task checks no state.
    #[serde(default)]
    pub state_match: Option<f64>,
}

impl RunMetrics {
    /// The agent's usage: every role but the judge, which evaluates the run afterwards and is
    /// no part of its cost.
    fn agent_roles(&self) -> impl Iterator<Item = &RoleUsage> {
        Role::ALL
            .iter()
            .zip(&self.llm)
            .filter(|(role, _)| is_the_agents(**role))
            .map(|(_, usage)| usage)
    }

    /// Tokens the agent spent (every role but the judge); at most `u64::MAX`
    /// ([`RunMetrics::tokens_saturated`] says when a sum reached it).
    pub fn tokens(&self) -> u64 {
        self.agent_roles().fold(0u64, |sum, r| {
            sum.saturating_add(r.prompt_tokens.saturating_add(r.completion_tokens))
        })
    }

    /// Tokens the judge spent scoring the run (apart from the run's own cost).
    pub fn judge_tokens(&self) -> u64 {
        let judge = &self.llm[Role::Judge.index()];
        judge.prompt_tokens.saturating_add(judge.completion_tokens)
    }

    /// True when a token sum reached `u64::MAX` (a source that recorded an absurd count): the
    /// figures shown are then the largest count, not the sum.
    pub fn tokens_saturated(&self) -> bool {
        let saturated = |r: &RoleUsage| {
            r.prompt_tokens.checked_add(r.completion_tokens).is_none()
                || r.prompt_tokens == u64::MAX
                || r.completion_tokens == u64::MAX
        };
        self.llm.iter().any(saturated) || self.tokens() == u64::MAX
    }

    /// The agent's LLM calls (every role but the judge).
    pub fn llm_calls(&self) -> u64 {
        self.agent_roles().map(|r| r.calls).sum()
    }

    /// True when some token counts were estimated.
    pub fn tokens_estimated(&self) -> bool {
        self.llm.iter().any(|r| r.estimated_calls > 0)
    }

    /// More than one server was called (MCP-Bench's `cross_server_coordination`).
    pub fn cross_server_coordination(&self) -> bool {
        self.server_count > 1
    }

    /// Real calls that failed.
    pub fn tool_errors(&self) -> u64 {
        self.tool_calls
            - self
                .tool_call_success_rate
                .map_or(0, |r| (r * self.tool_calls as f64).round() as u64)
    }

    /// The run's outcome as every view writes it (the browser's rule, `Totals::marks` and
    /// `Totals::clean`): its status (`incomplete` before `run_finished`) with what went wrong
    /// on the way (`completed ⊣steps ✗2`), and whether it is a clean success.
    pub fn outcome(&self) -> (String, bool) {
        let Some(status) = self.status else {
            return ("incomplete".to_string(), false);
        };
        let totals = self.totals(0);
        let marks = totals.marks();
        let text = if marks.is_empty() {
            status.as_str().to_string()
        } else {
            format!("{} {marks}", status.as_str())
        };
        (text, totals.clean(status))
    }

    /// The totals line for `run_finished`.
    pub fn totals(&self, events: u64) -> Totals {
        Totals {
            events,
            tool_calls: self.tool_calls,
            tool_errors: self.tool_errors(),
            nodes: self.nodes,
            llm_calls: self.llm_calls(),
            tokens: self.tokens(),
            wall_ms: self.wall_ms,
            fidelity: self.fidelity.map(|f| f.score),
            rejected_decisions: self.rejected_decisions,
            simulated_answers: self.simulated_answers,
            source_failed: self.source_failed,
            ending: self.ending,
            metrics_version: METRICS_VERSION,
            leader: None,
        }
    }
}

/// The ingredients of [`RunMetrics`], as prefixes of a run.
pub struct MetricsInput<'a> {
    /// Real calls so far.
    pub steps: &'a [StepFacts],
    /// LLM usage by role so far (calls summed by [`add_usage`]).
    pub llm: [RoleUsage; 5],
    /// Phase changes so far with their times.
    pub phases: &'a [(Phase, u64)],
    /// Each answered question's time and how long its answer took (elicitation's
    /// `waited_ms`).
    pub waits: &'a [(u64, u64)],
    /// Real calls made while planning (`node_grounded`) so far.
    pub grounded: u64,
    /// Client calls the world model answered (`routed`) so far.
    pub simulated_answers: u64,
    /// [`unsure_below`] of the run.
    pub unsure_below: Option<f64>,
    /// How the run routed so far, when it routes.
    pub routed: Option<RouteTally>,
    /// Time of the last event so far.
    pub end_ms: u64,
    /// The verdicts the run's source recorded of it so far.
    pub source: SourceTally,
    /// What the run's source did not record (an imported run).
    pub unrecorded: Unrecorded,
    /// Nodes added so far.
    pub nodes: u64,
    /// The latest judgement so far.
    pub judge: Option<JudgeRecord<'a>>,
    /// The status so far.
    pub status: Option<RunStatus>,
    /// An answer was given so far.
    pub answered: bool,
    /// Rejected planner replies so far.
    pub rejected: &'a [DecisionProblem],
    /// Planned calls accepted so far: search or chain nodes whose action is a call, and
    /// ReAct's calls (made as decided).
    pub planned_calls: u64,
    /// The run is ReAct's, whose decision is its call: an older ReAct run recorded a call of a
    /// tool no server offers as a rejected decision instead of a failed call, and it counts as
    /// the failed call MCP-Bench records.
    pub decisions_are_calls: bool,
    /// The ending `run_finished` recorded, when it did.
    pub recorded_ending: Option<Ending>,
    /// The state match `run_finished` recorded ([`crate::state_match::rate`]), when
    /// the task checks its end state.
    pub state_match: Option<f64>,
    /// The first ending an `agent` error tells, for files written before `run_finished`
    /// recorded one ([`legacy_ending`]).
    pub told_ending: Option<Ending>,
}

/// What an `agent` error message written by this project's agents says ended the run (a limit,
/// a search or chain cut short); how an older file, whose `run_finished` has no ending, is read.
pub fn legacy_ending(message: &str) -> Option<Ending> {
    let starts = |p: &str| message.starts_with(p);
    if starts("step limit of") {
        Some(Ending::StepLimit)
    } else if starts("token budget of") {
        Some(Ending::TokenLimit)
    } else if starts("time budget of") {
        Some(Ending::TimeLimit)
    } else if starts("search stopped early") || starts("planning stopped at step") {
        Some(Ending::SearchEndedEarly)
    } else {
        None
    }
}

/// The agent error's ending, if `body` is one.
fn told_ending(body: &EventBody) -> Option<Ending> {
    match body {
        EventBody::Error {
            source, message, ..
        } if *source == cosmos_trajectory::event::ErrorSource::Agent => legacy_ending(message),
        _ => None,
    }
}

/// True when a rejected decision counts as a real call: in an older ReAct run (see
/// [`MetricsInput::decisions_are_calls`]), a decision naming a tool no server offers is the
/// "not found" call MCP-Bench records. Every count of a run's calls uses this rule.
pub fn rejection_is_a_call(problem: DecisionProblem, decisions_are_calls: bool) -> bool {
    decisions_are_calls && problem == DecisionProblem::UnknownTool
}

/// Whether a run by `agent` counts a rejected decision as a call ([`rejection_is_a_call`]).
pub fn decisions_are_calls(agent: AgentKind) -> bool {
    agent == AgentKind::React
}

/// What routing did in a run that routes: predictions trusted and real calls saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteTally {
    /// Predictions trusted.
    pub trusted: u64,
    /// Real calls saved.
    pub saved: u64,
    /// A planner's: its plan's real calls check trusted predictions later (a proxy's
    /// answers are never checked).
    pub checked_later: bool,
}

impl RouteTally {
    /// A planner's tally so far: of the predictions recorded routed `trusted` and `saved`.
    fn planner(trusted: u64, saved: u64) -> Self {
        Self {
            trusted,
            saved,
            checked_later: true,
        }
    }

    /// A proxy session's: every answer by the world model is a trusted prediction and a real
    /// call saved.
    fn proxy(answers: u64) -> Self {
        Self {
            trusted: answers,
            saved: answers,
            checked_later: false,
        }
    }

    /// The tally of a run by `agent` that routes (`routes`), with its counts so far; a
    /// planner's only once a prediction recorded its route (`recorded`: a file written before
    /// routes were recorded does not say, and its counts are unknown, not 0).
    fn of(
        agent: AgentKind,
        routes: bool,
        recorded: bool,
        [trusted, saved, answers]: [u64; 3],
    ) -> Option<Self> {
        match agent {
            _ if !routes => None,
            AgentKind::PlanExec | AgentKind::Spiral => {
                recorded.then(|| Self::planner(trusted, saved))
            }
            AgentKind::External => Some(Self::proxy(answers)),
            AgentKind::React | AgentKind::WmEval => None,
        }
    }
}

/// Counts a prediction's route into `trusted` and `saved`.
fn count_route(route: Option<Route>, trusted: &mut u64, saved: &mut u64) {
    if let Some(route) = route {
        *trusted += u64::from(route.trusted());
        *saved += u64::from(route == Route::Saved);
    }
}

/// The confidence below which a prediction is unsure, for runs that routed without a
/// threshold of their own.
pub const UNSURE_BELOW: f64 = 0.5;

/// The confidence below which a real call of `agent`'s plan rested on an unsure prediction
/// ([`RunMetrics::unsure_calls`]): the run's own routing threshold (`go_real_below`), else
/// [`UNSURE_BELOW`]; `None` for an agent that does not plan on predictions.
pub fn unsure_below(agent: AgentKind, go_real_below: Option<f64>) -> Option<f64> {
    matches!(agent, AgentKind::PlanExec | AgentKind::Spiral)
        .then(|| go_real_below.unwrap_or(UNSURE_BELOW))
}

/// True for the roles whose calls are the run's own cost: every role but the judge, which
/// scores the run afterwards. The run's tokens, wherever they are shown, count only these.
pub fn is_the_agents(role: Role) -> bool {
    role != Role::Judge
}

/// How many LLM calls apart [`RunFacts`] keeps a sum of the usage so far.
const USAGE_EVERY: usize = 1024;

/// Adds one LLM call to usage by role.
pub fn add_usage(usage: &mut [RoleUsage; 5], call: &LlmFacts) {
    let u = &mut usage[call.role.index()];
    u.calls += 1;
    // Saturating: a source's absurd count must not wrap the sum to a small one.
    u.prompt_tokens = u.prompt_tokens.saturating_add(call.prompt_tokens);
    u.completion_tokens = u.completion_tokens.saturating_add(call.completion_tokens);
    u.estimated_calls += u64::from(call.estimated);
    u.failed_calls += u64::from(call.failed);
}

/// Computes the metrics of a run prefix: MCP-Bench's rule-based metrics over its calls
/// (`docs/report-format.md` has each definition beside MCP-Bench's).
pub fn compute(input: &MetricsInput<'_>) -> RunMetrics {
    let steps = input.steps;
    let count = |p: DecisionProblem| input.rejected.iter().filter(|r| **r == p).count();
    let unknown_tools = count(DecisionProblem::UnknownTool);
    let legacy_calls = input
        .rejected
        .iter()
        .filter(|p| rejection_is_a_call(**p, input.decisions_are_calls))
        .count();
    let calls = steps.len() + legacy_calls;
    let rate = |num: usize, den: usize| (den > 0).then(|| num as f64 / den as f64);
    // MCP-Bench: with calls but none valid, compliance and failure rate are 0, not undefined.
    let of_valid = |num: usize, den: usize| (calls > 0).then(|| rate(num, den).unwrap_or(0.0));
    let ok = steps.iter().filter(|s| !s.is_error).count();
    let valid = steps.iter().filter(|s| s.valid_name).count();
    let compliant = steps.iter().filter(|s| s.valid_name && s.schema_ok).count();
    let valid_failed = steps.iter().filter(|s| s.valid_name && s.is_error).count();
    let mut servers: Vec<u64> = steps.iter().filter_map(|s| s.server).collect();
    servers.sort_unstable();
    servers.dedup();
    // Planned calls: every accepted call, and every rejected reply that was a call (with a
    // tool, however bad); those without a tool are the ones MCP-Bench finds non-compliant.
    let no_tool = count(DecisionProblem::NoTool);
    let named = input.planned_calls as usize + unknown_tools + count(DecisionProblem::BadArguments);

    let mut phase_ms = [0u64; 4];
    for (i, (phase, start)) in input.phases.iter().enumerate() {
        let end = input.phases.get(i + 1).map_or(input.end_ms, |(_, t)| *t);
        phase_ms[*phase as usize] += end.saturating_sub(*start);
    }
    // Waiting for an answer is nobody's planning or executing: it comes out of the phase
    // the question fell in.
    for &(at, waited) in input.waits {
        if let Some(i) = input
            .phases
            .partition_point(|(_, s)| *s <= at)
            .checked_sub(1)
        {
            let phase = &mut phase_ms[input.phases[i].0 as usize];
            *phase = phase.saturating_sub(waited);
        }
    }

    // A source that listed no tools (an imported run) leaves no name or arguments checkable.
    let checkable = !input.unrecorded.tools;
    // Only an agent that plans on predictions has a plan to hold against reality.
    let plans = input.unsure_below.map(|_| ());
    let w2r = world_to_real(steps);
    RunMetrics {
        tool_calls: calls as u64,
        tool_call_success_rate: rate(ok, calls),
        valid_tool_name_rate: rate(valid, calls).filter(|_| checkable),
        input_schema_compliance: of_valid(compliant, valid).filter(|_| checkable),
        valid_call_failure_rate: of_valid(valid_failed, valid).filter(|_| checkable),
        planning_json_compliance: Some(rate(named, named + no_tool).unwrap_or(1.0)),
        server_count: servers.len() as u64,
        phase_ms,
        waiting_ms: input.waits.iter().map(|(_, w)| w).sum(),
        wall_ms: input.end_ms,
        times_unrecorded: input.unrecorded.times,
        tokens_unrecorded: input.unrecorded.tokens,
        servers_unrecorded: input.unrecorded.servers,
        source_scored: input.source.scored,
        source_failed: input.source.failed,
        source_passed: input.source.passed,
        grounded_calls: input.grounded,
        simulated_answers: input.simulated_answers,
        unsure_calls: input.unsure_below.map(|below| unsure_calls(steps, below)),
        trusted_predictions: input.routed.map(|r| r.trusted),
        real_calls_saved: input.routed.map(|r| r.saved),
        trusted_poor: input
            .routed
            .filter(|r| r.checked_later)
            .map(|_| trusted_poor(steps)),
        w2r: plans.and(w2r.map(|(share, _)| share)),
        w2r_divergence: plans.and(w2r.and_then(|(_, at)| at)),
        llm: input.llm,
        nodes: input.nodes,
        fidelity: summarize_fidelity(
            steps
                .iter()
                .filter_map(|s| Some((s.fidelity.as_ref()?, s.state_changed))),
        ),
        judge: input.judge.map(JudgeSummary::of),
        status: input.status,
        answered: input.answered,
        rejected_decisions: input.rejected.len() as u64,
        // A stopped run ended by the stop, whatever an older file's agent wrote beside it.
        ending: match input.status {
            Some(RunStatus::Interrupted) => Some(Ending::Interrupted),
            status => status.and(input.recorded_ending.or(input.told_ending)),
        },
        state_match: input.state_match,
    }
}

/// Real calls that rested on an unsure prediction ([`RunMetrics::unsure_calls`]): as routing
/// recorded it, else (a file written before routes were recorded) under `below`.
fn unsure_calls(steps: &[StepFacts], below: f64) -> u64 {
    steps
        .iter()
        .filter(|s| {
            s.fidelity.is_some()
                && match s.trusted {
                    Some(trusted) => !trusted,
                    None => s.confidence.is_none_or(|c| c < below),
                }
        })
        .count() as u64
}

/// Trusted predictions the real call found poor ([`RunMetrics::trusted_poor`]).
fn trusted_poor(steps: &[StepFacts]) -> u64 {
    steps
        .iter()
        .filter(|s| {
            s.trusted == Some(true)
                && s.fidelity
                    .as_ref()
                    .is_some_and(|f| f.score < fidelity::GOOD_FIDELITY)
        })
        .count() as u64
}

/// World to real (decision-oriented evaluation): of the real calls, in order, how many went as
/// simulated before the first that did not — a call with no prediction, or whose prediction
/// scored under [`fidelity::GOOD_FIDELITY`] (a real error where none was predicted scores 0) —
/// as a share of all the calls, and that first call's number (from 1). `None` when no call
/// was simulated.
pub fn world_to_real(steps: &[StepFacts]) -> Option<(f64, Option<u64>)> {
    if steps.iter().all(|s| s.fidelity.is_none()) {
        return None;
    }
    let went = steps
        .iter()
        .take_while(|s| {
            s.fidelity
                .as_ref()
                .is_some_and(|f| f.score >= fidelity::GOOD_FIDELITY)
        })
        .count();
    let divergence = (went < steps.len()).then_some(went as u64 + 1);
    Some((went as f64 / steps.len() as f64, divergence))
}

fn summarize_fidelity<'a>(
    items: impl Iterator<Item = (&'a Fidelity, Option<bool>)>,
) -> Option<FidelitySummary> {
    let (items, changed): (Vec<&Fidelity>, Vec<Option<bool>>) = items.unzip();
    if items.is_empty() {
        return None;
    }
    // The mean score of the steps whose call did (or did not) change its server's state.
    let score_where = |want: bool| {
        let vals: Vec<f64> = items
            .iter()
            .zip(&changed)
            .filter(|(_, c)| **c == Some(want))
            .map(|(f, _)| f.score)
            .collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    };
    let n = items.len() as f64;
    let mean_opt = |get: fn(&Fidelity) -> Option<f64>| {
        let vals: Vec<f64> = items.iter().filter_map(|f| get(f)).collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    };
    Some(FidelitySummary {
        steps: items.len() as u64,
        score: items.iter().map(|f| f.score).sum::<f64>() / n,
        error_agreement: items.iter().map(|f| f.error_agreement).sum::<f64>() / n,
        structure: mean_opt(|f| f.structure),
        values: mean_opt(|f| f.values),
        token_f1: items.iter().map(|f| f.token_f1).sum::<f64>() / n,
        changed_state: score_where(true),
        unchanged_state: score_where(false),
    })
}

/// The metric facts of a loaded [`Run`], grown beside it: one [`StepFacts`] per real call
/// (aligned with [`Run::steps`]), where each LLM call is (its [`LlmFacts`] are in the run's
/// briefs) and the usage before every 1,024th call (`USAGE_EVERY`). Like the run's own
/// indices it only appends, so a live run costs one fact per new event.
#[derive(Debug, Default)]
pub struct RunFacts {
    steps: Vec<StepFacts>,
    llm: Vec<u32>,
    /// Usage by role before LLM call `USAGE_EVERY · i`, at `i`.
    usage_before: Vec<[RoleUsage; 5]>,
    usage: [RoleUsage; 5],
    rejected: Vec<(u32, DecisionProblem)>,
    /// Event index of every accepted planned call (see [`MetricsInput::planned_calls`]).
    planned: Vec<u32>,
    /// Event index and ending of every `agent` error that tells one.
    told: Vec<(u32, Ending)>,
    /// Event index of every question someone answered, and beside it (same order) its time
    /// and wait: a prefix of `waits` is what [`MetricsInput::waits`] takes, with no copy.
    wait_events: Vec<u32>,
    waits: Vec<(u64, u64)>,
    /// Steps paired with a prediction that came after them, and that prediction's event.
    late: Vec<(u32, u32)>,
    /// Event index of every real call made while planning (`node_grounded`).
    grounded: Vec<u32>,
    /// Event index of every client call the world model answered (`routed`).
    answered_by_model: Vec<u32>,
    /// Event index of every prediction routing trusted, and of those that saved a real call.
    trusted: Vec<u32>,
    saved: Vec<u32>,
    /// Event index of the first prediction that recorded its route.
    first_route: Option<u32>,
    synced: usize,
}

impl RunFacts {
    /// The facts of every event of `run`.
    pub fn of(run: &Run) -> Self {
        let mut facts = Self::default();
        facts.sync(run);
        facts
    }

    /// Takes in the events appended to `run` since the last call.
    pub fn sync(&mut self, run: &Run) {
        for (idx, brief) in run.briefs().iter().enumerate().skip(self.synced) {
            let body = match &brief.body {
                LeanBody::LlmCall(call) => {
                    if self.llm.len().is_multiple_of(USAGE_EVERY) {
                        self.usage_before.push(self.usage);
                    }
                    self.llm.push(idx as u32);
                    add_usage(&mut self.usage, call);
                    continue;
                }
                LeanBody::NodeAdded {
                    action: Some(ActionKind::ToolCall),
                    ..
                } => {
                    self.planned.push(idx as u32);
                    continue;
                }
                // A prediction that came after its real call: that call's facts again.
                LeanBody::NodeSimulated { route, .. } => {
                    let route = *route;
                    if route.is_some() && self.first_route.is_none() {
                        self.first_route = Some(idx as u32);
                    }
                    if route.is_some_and(Route::trusted) {
                        self.trusted.push(idx as u32);
                    }
                    if route == Some(Route::Saved) {
                        self.saved.push(idx as u32);
                    }
                    if let Some(i) = run.late_prediction_of(idx as u32)
                        && i < self.steps.len()
                    {
                        self.steps[i] = step_facts(run, i);
                        self.late.push((i as u32, idx as u32));
                    }
                    continue;
                }
                LeanBody::Full(event) => &event.body,
                _ => continue,
            };
            if let Some(call) = RecordedCall::of(body) {
                // A replayed call (a fork's history) was not made by this run.
                if !call.is_copy() {
                    if call.node.is_none() {
                        self.planned.push(idx as u32);
                    }
                    let i = self.steps.len();
                    if let Some(e) = run.steps()[i].simulated.filter(|&e| e > idx as u32) {
                        self.late.push((i as u32, e));
                    }
                    self.steps.push(step_facts(run, i));
                }
                continue;
            }
            match body {
                EventBody::DecisionRejected { problem, .. } => {
                    self.rejected.push((idx as u32, *problem));
                }
                EventBody::Elicitation {
                    waited_ms: Some(waited),
                    ..
                } => {
                    self.wait_events.push(idx as u32);
                    self.waits.push((brief.t_ms, *waited));
                }
                EventBody::NodeGrounded { .. } => self.grounded.push(idx as u32),
                EventBody::Routed {
                    answered_by: AnsweredBy::WorldModel,
                    ..
                } => self.answered_by_model.push(idx as u32),
                other => {
                    if let Some(ending) = told_ending(other) {
                        self.told.push((idx as u32, ending));
                    }
                }
            }
        }
        self.synced = run.len();
    }

    /// The facts of real call `i` (in [`Run::steps`] order).
    pub fn step(&self, i: usize) -> Option<&StepFacts> {
        self.steps.get(i)
    }

    /// The metrics at cursor `k` (events `0..k`), with `tree` folded to `k`.
    pub fn at(&self, run: &Run, k: usize, tree: &TreeState) -> RunMetrics {
        let k = k.min(run.len());
        let steps = &self.steps[..run.steps_at(k).len().min(self.steps.len())];
        // A prediction past the cursor has not come yet at it.
        let before_late: Vec<StepFacts>;
        let steps = if self
            .late
            .iter()
            .any(|&(i, e)| (i as usize) < steps.len() && e as usize >= k)
        {
            let mut owned = steps.to_vec();
            for &(i, e) in &self.late {
                if (i as usize) < owned.len() && e as usize >= k {
                    owned[i as usize].fidelity = None;
                }
            }
            before_late = owned;
            &before_late[..]
        } else {
            steps
        };
        // The usage before the nearest checkpoint, plus the few calls after it.
        let llm_end = self.llm.partition_point(|&e| (e as usize) < k);
        // (A prefix of exactly a multiple of calls has no checkpoint yet past its end.)
        let checkpoint = (llm_end / USAGE_EVERY).min(self.usage_before.len().saturating_sub(1));
        let mut llm = self
            .usage_before
            .get(checkpoint)
            .copied()
            .unwrap_or_default();
        for &e in &self.llm[checkpoint * USAGE_EVERY..llm_end] {
            if let LeanBody::LlmCall(call) = &run.brief(e as usize).body {
                add_usage(&mut llm, call);
            }
        }
        let phases: Vec<(Phase, u64)> = run.phases_at(k).collect();
        let rejected_end = self.rejected.partition_point(|(e, _)| (*e as usize) < k);
        let rejected: Vec<DecisionProblem> = self.rejected[..rejected_end]
            .iter()
            .map(|(_, p)| *p)
            .collect();
        // The run's wall time ends at `run_finished`, not at a judgement appended later.
        let finish_index = run.finish_index_at(k);
        let finish = run.finish_at(k);
        let (recorded_ending, state_match) = match finish.map(|f| &f.body) {
            Some(EventBody::RunFinished {
                ending,
                state_match,
                ..
            }) => (*ending, super::state_match::rate(state_match)),
            _ => (None, None),
        };
        let last_before = |i: usize| i.checked_sub(1).map_or(0, |i| run.brief(i).t_ms);
        let end_ms = match (finish_index, finish) {
            (Some(i), Some(finish)) => wall_end(finish.t_ms, last_before(i), recorded_ending),
            _ => last_before(k),
        };
        let told_ending = self
            .told
            .first()
            .filter(|(e, _)| (*e as usize) < k)
            .map(|(_, ending)| *ending);
        let waits = &self.waits[..self.wait_events.partition_point(|&e| (e as usize) < k)];
        compute(&MetricsInput {
            steps,
            llm,
            phases: &phases,
            waits,
            unsure_below: unsure_below(run.header.agent.kind, run.header.agent.go_real_below()),
            routed: RouteTally::of(
                run.header.agent.kind,
                run.header.agent.routes(),
                self.first_route.is_some_and(|e| (e as usize) < k),
                [
                    self.trusted.partition_point(|&e| (e as usize) < k) as u64,
                    self.saved.partition_point(|&e| (e as usize) < k) as u64,
                    self.answered_by_model
                        .partition_point(|&e| (e as usize) < k) as u64,
                ],
            ),
            grounded: self.grounded.partition_point(|&e| (e as usize) < k) as u64,
            simulated_answers: self
                .answered_by_model
                .partition_point(|&e| (e as usize) < k) as u64,
            end_ms,
            nodes: tree.visible_nodes() as u64,
            judge: run.judge_at(k),
            status: run.status_at(k),
            answered: run.answered_at(k),
            rejected: &rejected,
            planned_calls: self.planned.partition_point(|&e| (e as usize) < k) as u64,
            decisions_are_calls: decisions_are_calls(run.header.agent.kind),
            recorded_ending,
            state_match,
            told_ending,
            source: run.source_tally_at(k),
            unrecorded: run.header.unrecorded(),
        })
    }
}

/// The facts of `run`'s real call `i`, compared with the prediction it pairs with
/// ([`cosmos_trajectory::run::StepRef::simulated`]; a validator's rejection is none).
fn step_facts(run: &Run, i: usize) -> StepFacts {
    let step = run.steps()[i];
    let event = run.event(step.event as usize);
    let call = RecordedCall::of(&event.body).expect("a step is a tool_called event");
    let simulated = step
        .simulated
        .and_then(|e| match run.brief(e as usize).body {
            LeanBody::NodeSimulated {
                by_validator: false,
                confidence,
                route,
                ..
            } => Some((run.simulated_observation(e)?, confidence, route)),
            _ => None,
        });
    let mut facts = StepFacts::new(
        run.catalog(),
        call,
        simulated.as_ref().map(|(o, c, _)| (o, *c)),
    );
    facts.trusted = simulated
        .and_then(|(_, _, route)| route)
        .map(Route::trusted);
    facts
}

/// The metrics of a whole loaded run.
pub fn of_run(run: &Run) -> RunMetrics {
    RunFacts::of(run).at(run, run.len(), &TreeState::fold(run, run.len()))
}

/// A validator's rejection is recorded as a prediction, but it is not the world model's:
/// it never counts in fidelity.
fn is_validator(body: &EventBody) -> bool {
    matches!(body, EventBody::NodeSimulated { prediction, .. } if prediction.world_model == VALIDATOR)
}

/// A node's simulation as an accumulator keeps it. Small: a big run keeps one per node.
enum Simulation {
    /// From an event read in full.
    Decoded(Box<Observation>),
    /// Only where its line lies: read back from the file when a real call pairs with it.
    At(LineSpan),
    /// A validator's rejection: no prediction, yet the node's latest simulation.
    Rejected,
}

impl Simulation {
    /// Node `node`'s observation. One that cannot be had (a line that cannot be read back,
    /// as when the file was rewritten since) counts as no simulation, and is logged.
    fn observation(&self, node: NodeId, file: Option<&ReadBack>) -> Option<Cow<'_, Observation>> {
        match self {
            Simulation::Rejected => None,
            Simulation::Decoded(o) => Some(Cow::Borrowed(o)),
            Simulation::At(span) => match file.map(|f| f.observation(*span, node)) {
                Some(Ok(o)) => Some(Cow::Owned(o)),
                Some(Err(e)) => {
                    tracing::warn!("node {node}'s simulation could not be read back: {e}");
                    None
                }
                None => {
                    tracing::warn!("node {node}'s simulation has no file to be read back from");
                    None
                }
            },
        }
    }
}

/// The run's file, which simulations kept as spans are read back from; opened when a real
/// call first pairs with one.
struct ReadBack {
    path: PathBuf,
    file: OnceLock<Result<std::fs::File, String>>,
}

impl ReadBack {
    /// The observation of node `node`'s `node_simulated` line at `span`.
    fn observation(&self, span: LineSpan, node: NodeId) -> Result<Observation, String> {
        let file = self.file.get_or_init(|| {
            cosmos_trajectory::reader::open_regular(&self.path).map_err(|e| format!("{e:#}"))
        });
        let file = file.as_ref().map_err(Clone::clone)?;
        let line = span
            .read_from(file)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        match cosmos_trajectory::reader::parse_event(&line)
            .map_err(|e| e.to_string())?
            .body
        {
            EventBody::NodeSimulated {
                node: read,
                prediction: PredictionRecord { observation, .. },
                ..
            } if read == node => Ok(observation),
            other => Err(format!(
                "{}: found {} where node {node}'s simulation was (rewritten since?)",
                self.path.display(),
                other.kind()
            )),
        }
    }
}

/// Computes a run's metrics from a stream of events without keeping them. Holds the
/// simulated observation of every node (needed to pair with real calls) and one small
/// fact per call.
pub struct RunAccumulator {
    catalog: Arc<ToolCatalog>,
    /// What the header says its source did not record.
    unrecorded: Unrecorded,
    /// Fx: node ids are not chosen by an adversary.
    simulated: FxHashMap<NodeId, Simulation>,
    /// Where simulations kept as spans are read back from ([`RunAccumulator::take_at`]).
    read_back: Option<ReadBack>,
    steps: Vec<StepFacts>,
    llm: [RoleUsage; 5],
    phases: Vec<(Phase, u64)>,
    /// Each answered question's time and wait ([`MetricsInput::waits`]).
    waits: Vec<(u64, u64)>,
    /// Real calls made before their node had a simulation, by node: its step and the call.
    awaiting: FxHashMap<NodeId, (usize, Box<Event>)>,
    /// Real calls made while planning (`node_grounded`).
    grounded: u64,
    /// Client calls the world model answered (`routed`).
    simulated_answers: u64,
    /// Each node's latest prediction's confidence and route, when it had either.
    predictions: FxHashMap<NodeId, (Option<f64>, Option<Route>)>,
    /// Predictions routing trusted, and of those the ones that saved a real call.
    trusted: u64,
    saved: u64,
    /// Some prediction recorded its route.
    route_recorded: bool,
    /// The run routes ([`cosmos_trajectory::event::AgentInfo::routes`]).
    routes_run: bool,
    /// The agent.
    agent: AgentKind,
    /// [`unsure_below`] of the run.
    unsure_below: Option<f64>,
    end_ms: u64,
    nodes: u64,
    /// The latest `judge_scored`, kept whole.
    judge: Option<EventBody>,
    /// The source's verdicts so far.
    source: SourceTally,
    status: Option<RunStatus>,
    answered: bool,
    rejected: Vec<DecisionProblem>,
    planned_calls: u64,
    decisions_are_calls: bool,
    /// When `run_finished` was written: the end of the run's wall time (a judgement appended
    /// afterwards is not the run's time).
    finished_ms: Option<u64>,
    state_match: Option<f64>,
    recorded_ending: Option<Ending>,
    told_ending: Option<Ending>,
}

impl RunAccumulator {
    /// An accumulator for a run with this header.
    pub fn new(header: &Header) -> Self {
        let mut accumulator = Self::with(
            Arc::new(ToolCatalog::new(&header.tools)),
            header.agent.kind,
            header.agent.go_real_below(),
        );
        accumulator.routes_run = header.agent.routes();
        accumulator.unrecorded = header.unrecorded();
        accumulator
    }

    /// An accumulator for a run whose header was read for a totals pass.
    pub fn of_report(header: &ReportHeader) -> Self {
        let mut accumulator = Self::with(header.tools.clone(), header.agent, header.go_real_below);
        accumulator.routes_run = header.routes;
        accumulator.unrecorded = header.unrecorded;
        accumulator
    }

    /// This accumulator, reading the simulations [`RunAccumulator::take_at`] keeps as spans
    /// back from the run's file at `path` when a real call pairs with one.
    pub fn reading_back(mut self, path: PathBuf) -> Self {
        self.read_back = Some(ReadBack {
            path,
            file: OnceLock::new(),
        });
        self
    }

    fn with(catalog: Arc<ToolCatalog>, agent: AgentKind, go_real_below: Option<f64>) -> Self {
        Self {
            catalog,
            simulated: FxHashMap::default(),
            predictions: FxHashMap::default(),
            trusted: 0,
            saved: 0,
            route_recorded: false,
            routes_run: go_real_below.is_some(),
            agent,
            unsure_below: unsure_below(agent, go_real_below),
            read_back: None,
            steps: Vec::new(),
            llm: [RoleUsage::default(); 5],
            phases: Vec::new(),
            waits: Vec::new(),
            awaiting: FxHashMap::default(),
            grounded: 0,
            simulated_answers: 0,
            end_ms: 0,
            nodes: 0,
            judge: None,
            source: SourceTally::default(),
            status: None,
            answered: false,
            rejected: Vec::new(),
            planned_calls: 0,
            decisions_are_calls: decisions_are_calls(agent),
            finished_ms: None,
            state_match: None,
            recorded_ending: None,
            told_ending: None,
            unrecorded: Unrecorded::default(),
        }
    }

    /// Takes into account one event read lean (`EventStream::next_brief`), whose line lies
    /// at `span`, keeping what it needs of it without copying: a simulation is kept as its
    /// span and read back (see [`RunAccumulator::reading_back`]) when a real call pairs with
    /// it. A big run simulates many nodes for each real call, so this keeps a report's memory
    /// to a few bytes per node.
    pub fn take_at(&mut self, event: Brief, span: LineSpan) {
        // A whole event's time is taken by `push` (which needs the time before it).
        if !matches!(event.body, LeanBody::Full(_)) {
            self.end_ms = self.end_ms.max(event.t_ms);
        }
        match event.body {
            LeanBody::Phase(phase) => self.phases.push((phase, event.t_ms)),
            LeanBody::LlmCall(call) => add_usage(&mut self.llm, &call),
            LeanBody::NodeAdded { action, .. } => {
                self.nodes += 1;
                self.planned_calls += u64::from(action == Some(ActionKind::ToolCall));
            }
            LeanBody::NodeSimulated {
                node,
                by_validator,
                confidence,
                route,
            } => self.simulated(
                node,
                (!by_validator).then_some(Simulation::At(span)),
                confidence,
                route,
            ),
            LeanBody::NodeEvaluated { .. } | LeanBody::Backpropagated { .. } => {}
            LeanBody::Full(event) => {
                if let EventBody::NodeSimulated {
                    node,
                    route,
                    prediction:
                        PredictionRecord {
                            observation,
                            world_model,
                            confidence,
                            ..
                        },
                    ..
                } = event.body
                {
                    self.end_ms = self.end_ms.max(event.t_ms);
                    self.simulated(
                        node,
                        (world_model != VALIDATOR)
                            .then(|| Simulation::Decoded(Box::new(observation))),
                        confidence,
                        route,
                    );
                } else {
                    self.push(&event);
                }
            }
        }
    }

    /// Keeps node `node`'s latest simulation (with its confidence) for a real call to pair
    /// with; a validator's rejection (`None`) is no prediction.
    fn simulated(
        &mut self,
        node: NodeId,
        simulation: Option<Simulation>,
        confidence: Option<f64>,
        route: Option<Route>,
    ) {
        let simulation = simulation.unwrap_or(Simulation::Rejected);
        match (confidence, route) {
            (None, None) => self.predictions.remove(&node),
            said => self.predictions.insert(node, said),
        };
        count_route(route, &mut self.trusted, &mut self.saved);
        self.route_recorded |= route.is_some();
        // A real call made before its node had any simulation pairs with this one.
        if let Some((i, call)) = self.awaiting.remove(&node) {
            let read_back = self.read_back.as_ref();
            let sim = simulation.observation(node, read_back);
            if let Some(call) = RecordedCall::of(&call.body) {
                self.steps[i] =
                    StepFacts::new(&self.catalog, call, sim.as_deref().map(|o| (o, confidence)));
                self.steps[i].trusted = route.map(Route::trusted);
            }
        }
        self.simulated.insert(node, simulation);
    }

    /// Takes one event into account.
    pub fn push(&mut self, event: &Event) {
        let before_ms = self.end_ms;
        self.end_ms = self.end_ms.max(event.t_ms);
        if let Some(call) = RecordedCall::of(&event.body) {
            // A replayed call (a fork's history) was not made by this run.
            if !call.is_copy() {
                self.real_call(event, call);
            }
            return;
        }
        match &event.body {
            EventBody::Phase { phase } => self.phases.push((*phase, event.t_ms)),
            EventBody::LlmCall { .. } => {
                if let LeanBody::LlmCall(call) = Brief::copied(event).body {
                    add_usage(&mut self.llm, &call);
                }
            }
            EventBody::NodeAdded { action, .. } => {
                self.nodes += 1;
                self.planned_calls += u64::from(matches!(action, Some(Action::ToolCall { .. })));
            }
            EventBody::NodeSimulated {
                node,
                route,
                prediction:
                    PredictionRecord {
                        observation,
                        confidence,
                        ..
                    },
                ..
            } => self.simulated(
                *node,
                (!is_validator(&event.body))
                    .then(|| Simulation::Decoded(Box::new(observation.clone()))),
                *confidence,
                *route,
            ),
            EventBody::Answer { .. } => self.answered = true,
            EventBody::DecisionRejected { problem, .. } => self.rejected.push(*problem),
            EventBody::Elicitation {
                waited_ms: Some(waited),
                ..
            } => self.waits.push((event.t_ms, *waited)),
            EventBody::NodeGrounded { .. } => self.grounded += 1,
            EventBody::Routed {
                answered_by: AnsweredBy::WorldModel,
                ..
            } => self.simulated_answers += 1,
            EventBody::JudgeScored { .. } => self.judge = Some(event.body.clone()),
            EventBody::SourceScored { passed, .. } => self.source.add(*passed),
            EventBody::RunFinished {
                status,
                ending,
                state_match,
                ..
            } => {
                self.status = Some(*status);
                self.finished_ms = Some(wall_end(event.t_ms, before_ms, *ending));
                self.recorded_ending = *ending;
                self.state_match = super::state_match::rate(state_match);
            }
            other => {
                if self.told_ending.is_none() {
                    self.told_ending = told_ending(other);
                }
            }
        }
    }

    /// One of this run's real calls: its facts, with its node's prediction when it had one.
    fn real_call(&mut self, event: &Event, call: RecordedCall<'_>) {
        let node = call.node;
        self.planned_calls += u64::from(node.is_none());
        // A call whose node has no simulation yet waits for the node's next one (a shadowing
        // proxy writes the real call before a late prediction).
        if let Some(n) = node
            && !self.simulated.contains_key(&n)
        {
            self.awaiting
                .insert(n, (self.steps.len(), Box::new(event.clone())));
        }
        let sim = node.and_then(|n| {
            let read_back = self.read_back.as_ref();
            let observation = self.simulated.get(&n)?.observation(n, read_back)?;
            let (confidence, _) = self.predictions.get(&n).copied().unwrap_or_default();
            Some((observation, confidence))
        });
        let mut facts = StepFacts::new(
            &self.catalog,
            call,
            sim.as_ref().map(|(o, c)| (o.as_ref(), *c)),
        );
        facts.trusted = node
            .filter(|_| sim.is_some())
            .and_then(|n| self.predictions.get(&n)?.1)
            .map(Route::trusted);
        self.steps.push(facts);
    }

    /// A boxed accumulator for a writer to fill `run_finished` totals from.
    pub fn tally(header: &Header) -> Box<dyn Tally> {
        Box::new(Self::new(header))
    }

    /// The metrics so far.
    pub fn metrics(&self) -> RunMetrics {
        compute(&MetricsInput {
            steps: &self.steps,
            llm: self.llm,
            phases: &self.phases,
            waits: &self.waits,
            unsure_below: self.unsure_below,
            routed: RouteTally::of(
                self.agent,
                self.routes_run,
                self.route_recorded,
                [self.trusted, self.saved, self.simulated_answers],
            ),
            grounded: self.grounded,
            simulated_answers: self.simulated_answers,
            end_ms: self.finished_ms.unwrap_or(self.end_ms),
            nodes: self.nodes,
            judge: self.judge.as_ref().and_then(EventBody::judge_record),
            status: self.status,
            answered: self.answered,
            rejected: &self.rejected,
            planned_calls: self.planned_calls,
            decisions_are_calls: self.decisions_are_calls,
            recorded_ending: self.recorded_ending,
            state_match: self.state_match,
            told_ending: self.told_ending,
            source: self.source,
            unrecorded: self.unrecorded,
        })
    }
}

impl Tally for RunAccumulator {
    fn push(&mut self, event: &Event) {
        RunAccumulator::push(self, event);
    }

    fn totals(&self, events: u64, t_ms: u64) -> Totals {
        let mut metrics = self.metrics();
        metrics.wall_ms = metrics.wall_ms.max(t_ms);
        metrics.totals(events)
    }
}

/// For serde: a count of 0 is left out of what is written.
fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// Where a run's wall time ends: at its `run_finished` (`finished_ms`), or, for an ending
/// whose last stretch was no work of the run's ([`Ending::wall_ends_before_finish`]), at the
/// event before it (`before_ms`).
fn wall_end(finished_ms: u64, before_ms: u64, ending: Option<Ending>) -> u64 {
    if ending.is_some_and(Ending::wall_ends_before_finish) {
        before_ms
    } else {
        finished_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosmos_trajectory::event::JudgeScores;

    /// World to real counts the calls that went as simulated up to the first that did not (a
    /// poor prediction, or none), whatever comes after; a run with no simulated call has none.
    #[test]
    fn world_to_real_stops_at_the_first_call_that_went_otherwise() {
        let step = |score: Option<f64>| StepFacts {
            is_error: false,
            valid_name: true,
            schema_ok: true,
            server: None,
            fidelity: score.map(|score| Fidelity {
                score,
                ..fidelity::compare(
                    &cosmos_trajectory::event::Observation::of_text("a", false),
                    &cosmos_trajectory::event::Observation::of_text("a", false),
                )
            }),
            confidence: None,
            trusted: None,
            state_changed: None,
        };
        let good = step(Some(0.95));
        let poor = step(Some(0.3));
        let unsimulated = step(None);
        assert_eq!(world_to_real(&[good, good, good, good]), Some((1.0, None)));
        assert_eq!(
            world_to_real(&[good, poor, good, good]),
            Some((0.25, Some(2)))
        );
        assert_eq!(
            world_to_real(&[good, good, unsimulated, good]),
            Some((0.5, Some(3)))
        );
        assert_eq!(world_to_real(&[poor, good]), Some((0.0, Some(1))));
        assert_eq!(world_to_real(&[unsimulated, unsimulated]), None);
        assert_eq!(world_to_real(&[]), None);
    }

    /// Hardening VI: a source's absurd token count never wraps a sum to a small number: the
    /// sums stop at the largest count, and the metrics say they did.
    #[test]
    fn token_sums_saturate_and_say_so() {
        let mut m = RunMetrics::default();
        let call = |prompt_tokens| LlmFacts {
            role: Role::Planner,
            prompt_tokens,
            completion_tokens: 5,
            estimated: false,
            failed: false,
        };
        add_usage(&mut m.llm, &call(10));
        assert_eq!(m.tokens(), 15);
        assert!(!m.tokens_saturated());
        add_usage(&mut m.llm, &call(u64::MAX));
        add_usage(&mut m.llm, &call(7));
        assert_eq!(m.tokens(), u64::MAX);
        assert!(m.tokens_saturated());
    }

    /// A report's reading (simulations kept as spans, read back from the file when a call
    /// pairs with one) gives the metrics of pushing every event; a file rewritten since reads
    /// back as no simulation, never as another node's.
    #[test]
    fn simulations_read_back_from_the_file_give_the_metrics_of_pushing_events() {
        use cosmos_trajectory::reader::EventStream;
        use cosmos_trajectory::synthetic::{self, Spec};
        let spec = Spec {
            nodes: 300,
            seed: 3,
            ..Spec::default()
        };
        let header = synthetic::header(&spec);
        let mut pushed = RunAccumulator::new(&header);
        for (i, (t_ms, body)) in synthetic::events(&spec).into_iter().enumerate() {
            pushed.push(&Event {
                seq: i as u64 + 1,
                t_ms,
                body,
            });
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        synthetic::write(&path, &spec, RunAccumulator::tally).unwrap();
        let read = |path: &std::path::Path| {
            let mut stream = EventStream::<ReportHeader>::open_as(path).unwrap();
            let mut acc =
                RunAccumulator::of_report(stream.header()).reading_back(path.to_path_buf());
            while let Some((event, span)) = stream.next_brief().unwrap() {
                acc.take_at(event, span);
            }
            acc
        };
        let acc = read(&path);
        // The file ends with the writer's `run_finished` (status, ending, its time), which the
        // pushed events lack: those are set aside.
        let (mut want, mut got) = (pushed.metrics(), acc.metrics());
        (want.status, got.status) = (None, None);
        (want.ending, got.ending) = (None, None);
        (want.wall_ms, got.wall_ms) = (0, 0);
        (want.phase_ms, got.phase_ms) = Default::default();
        assert!(
            want.fidelity.is_some(),
            "the run pairs simulations with calls"
        );
        assert_eq!(got.fidelity, want.fidelity);
        assert_eq!(got, want);

        // Read with the calls held back, then paired after `change` has changed the file.
        let paired_after = |change: &dyn Fn(&std::path::Path)| {
            let mut stream = EventStream::<ReportHeader>::open_as(&path).unwrap();
            let mut acc = RunAccumulator::of_report(stream.header()).reading_back(path.clone());
            let mut calls = Vec::new();
            while let Some((event, span)) = stream.next_brief().unwrap() {
                match event.body {
                    LeanBody::Full(ref e) if matches!(e.body, EventBody::ToolCalled { .. }) => {
                        calls.push((event, span))
                    }
                    _ => acc.take_at(event, span),
                }
            }
            change(&path);
            for (event, span) in calls {
                acc.take_at(event, span);
            }
            acc.metrics()
        };
        let text = std::fs::read_to_string(&path).unwrap();
        // Rewritten: every span now lands on other lines.
        let rewritten =
            paired_after(&|path| std::fs::write(path, format!("{{}}\n{text}")).unwrap());
        assert_eq!(rewritten.fidelity, None, "no call paired with a simulation");
        // Deleted: the calls count, with no simulation.
        std::fs::write(&path, &text).unwrap();
        let deleted = paired_after(&|path| std::fs::remove_file(path).unwrap());
        assert_eq!(deleted.fidelity, None, "no call paired with a simulation");
        assert_eq!(deleted.tool_calls, want.tool_calls);
    }

    /// A recorded call of `x:y` on server `x`.
    fn recorded<'a>(
        arguments: &'a serde_json::Value,
        result: &'a Observation,
        error: Option<&'a str>,
        state_change: Option<&'a StateChange>,
    ) -> RecordedCall<'a> {
        RecordedCall {
            step: 1,
            tool: "x:y",
            server: Some("x"),
            arguments,
            result,
            latency_ms: 1,
            node: None,
            error,
            origin: None,
            state_change,
        }
    }

    use cosmos_trajectory::event::{DimensionScore, StateChange};

    fn step(is_error: bool, valid_name: bool, schema_ok: bool) -> StepFacts {
        StepFacts {
            is_error,
            valid_name,
            schema_ok,
            server: valid_name.then_some(1),
            state_changed: None,
            fidelity: None,
            confidence: None,
            trusted: None,
        }
    }

    fn input<'a>(
        steps: &'a [StepFacts],
        llm: &'a [LlmFacts],
        phases: &'a [(Phase, u64)],
    ) -> MetricsInput<'a> {
        let mut usage = [RoleUsage::default(); 5];
        for call in llm {
            add_usage(&mut usage, call);
        }
        MetricsInput {
            steps,
            llm: usage,
            phases,
            waits: &[],
            grounded: 0,
            simulated_answers: 0,
            unsure_below: None,
            routed: None,
            end_ms: 1000,
            nodes: 0,
            judge: None,
            status: None,
            answered: false,
            rejected: &[],
            planned_calls: steps.len() as u64,
            decisions_are_calls: false,
            recorded_ending: None,
            state_match: None,
            told_ending: None,
            source: SourceTally::default(),
            unrecorded: Unrecorded::default(),
        }
    }

    /// A plan's call rests on an unsure prediction when its confidence is under the run's
    /// threshold or it gave none; a call with no prediction (replanned, ReAct's) rests on none;
    /// an agent that plans on no predictions has no such count.
    #[test]
    fn calls_resting_on_unsure_predictions_are_counted_against_the_threshold() {
        let with = |confidence: Option<f64>| StepFacts {
            fidelity: Some(fidelity::compare(
                &Observation::default(),
                &Observation::default(),
            )),
            confidence,
            ..step(false, true, true)
        };
        let steps = [
            with(Some(0.9)),
            with(Some(0.6)),
            with(Some(0.59)),
            with(None),
            step(false, true, true),
        ];
        let count = |below| {
            compute(&MetricsInput {
                unsure_below: below,
                ..input(&steps, &[], &[])
            })
            .unsure_calls
        };
        assert_eq!(count(Some(0.6)), Some(2));
        assert_eq!(count(Some(0.95)), Some(4));
        assert_eq!(count(None), None);
        assert_eq!(unsure_below(AgentKind::Spiral, Some(0.6)), Some(0.6));
        assert_eq!(unsure_below(AgentKind::PlanExec, None), Some(UNSURE_BELOW));
        assert_eq!(unsure_below(AgentKind::React, Some(0.6)), None);
        assert_eq!(unsure_below(AgentKind::External, None), None);
    }

    /// A routed plan's call rests on what routing recorded: trusted or not, whatever the
    /// confidence; of the trusted, those whose real result differs enough are poor. A proxy's
    /// trusted answers are never checked.
    #[test]
    fn routing_as_recorded_decides_unsure_trusted_and_poor() {
        let with = |trusted: Option<bool>, same: bool| StepFacts {
            fidelity: Some(fidelity::compare(
                &Observation::of_text("{\"a\": 1}", false),
                &Observation::of_text(if same { "{\"a\": 1}" } else { "{\"b\": 2}" }, false),
            )),
            confidence: Some(0.2),
            trusted,
            ..step(false, true, true)
        };
        let steps = [
            with(Some(true), true),
            with(Some(true), false),
            with(Some(false), false),
            with(None, true),
        ];
        let planner = compute(&MetricsInput {
            unsure_below: Some(0.5),
            routed: RouteTally::of(AgentKind::Spiral, true, true, [7, 5, 0]),
            ..input(&steps, &[], &[])
        });
        // Recorded untrusted, and unrecorded under the threshold: two.
        assert_eq!(planner.unsure_calls, Some(2));
        assert_eq!(planner.trusted_predictions, Some(7));
        assert_eq!(planner.real_calls_saved, Some(5));
        assert_eq!(planner.trusted_poor, Some(1));
        let proxy = compute(&MetricsInput {
            routed: RouteTally::of(AgentKind::External, true, false, [0, 0, 3]),
            ..input(&steps, &[], &[])
        });
        assert_eq!(proxy.trusted_predictions, Some(3));
        assert_eq!(proxy.real_calls_saved, Some(3));
        assert_eq!(proxy.trusted_poor, None);
        assert_eq!(
            RouteTally::of(AgentKind::Spiral, false, true, [7, 5, 0]),
            None
        );
        assert_eq!(
            RouteTally::of(AgentKind::React, true, true, [7, 5, 0]),
            None
        );
        // A file written before routes were recorded: unknown, not none.
        assert_eq!(
            RouteTally::of(AgentKind::Spiral, true, false, [0, 0, 0]),
            None
        );
    }

    #[test]
    fn rates_hand_worked() {
        // 4 calls: 1 error; 3 valid names; of those 2 schema-valid.
        let steps = [
            step(false, true, true),
            step(true, true, false),
            step(false, true, true),
            step(false, false, false),
        ];
        let m = compute(&input(&steps, &[], &[]));
        assert_eq!(m.tool_calls, 4);
        assert_eq!(m.tool_call_success_rate, Some(0.75));
        assert_eq!(m.valid_tool_name_rate, Some(0.75));
        assert_eq!(m.input_schema_compliance, Some(2.0 / 3.0));
        assert_eq!(m.tool_errors(), 1);
    }

    #[test]
    fn an_old_react_runs_unknown_tool_is_mcp_benchs_failed_call_hand_worked() {
        // 2 real calls with valid names, and 3 rejected replies: no tool, an unknown tool,
        // arguments that are not an object. In an old ReAct run the unknown tool was the
        // call MCP-Bench records as failed ("not found"): calls 3, success 2/3, valid names
        // 2/3, compliance 2/2, valid-call failures 0/2. Planned calls with a tool: 2 + 1 + 1
        // of 5 planned (the one without a tool is MCP-Bench's non-compliant entry): 4/5.
        let steps = [step(false, true, true), step(false, true, true)];
        let rejected = [
            DecisionProblem::NoTool,
            DecisionProblem::UnknownTool,
            DecisionProblem::BadArguments,
        ];
        let react = compute(&MetricsInput {
            rejected: &rejected,
            decisions_are_calls: true,
            ..input(&steps, &[], &[])
        });
        assert_eq!(react.rejected_decisions, 3);
        assert_eq!(react.tool_calls, 3);
        assert_eq!(react.tool_call_success_rate, Some(2.0 / 3.0));
        assert_eq!(react.valid_tool_name_rate, Some(2.0 / 3.0));
        assert_eq!(react.input_schema_compliance, Some(1.0));
        assert_eq!(react.valid_call_failure_rate, Some(0.0));
        assert_eq!(react.planning_json_compliance, Some(0.8));
        assert_eq!(react.tool_errors(), 1);
        assert_eq!(react.totals(10).rejected_decisions, 3);
        // In a search the rejected candidate was never called: no call, no failure.
        let spiral = compute(&MetricsInput {
            rejected: &rejected,
            ..input(&steps, &[], &[])
        });
        assert_eq!(spiral.tool_calls, 2);
        assert_eq!(spiral.tool_call_success_rate, Some(1.0));
        assert_eq!(spiral.valid_tool_name_rate, Some(1.0));
        assert_eq!(spiral.planning_json_compliance, Some(0.8));
    }

    #[test]
    fn calls_with_no_valid_name_have_zero_compliance_as_mcp_bench() {
        // Two calls of unknown tools: MCP-Bench gives 0.0 (not undefined) for the rates over
        // valid calls, and 0 servers.
        let steps = [step(true, false, false), step(true, false, false)];
        let m = compute(&input(&steps, &[], &[]));
        assert_eq!(m.tool_call_success_rate, Some(0.0));
        assert_eq!(m.valid_tool_name_rate, Some(0.0));
        assert_eq!(m.input_schema_compliance, Some(0.0));
        assert_eq!(m.valid_call_failure_rate, Some(0.0));
        assert_eq!(m.server_count, 0);
        assert!(!m.cross_server_coordination());
    }

    #[test]
    fn zero_calls_have_no_rates() {
        let m = compute(&input(&[], &[], &[]));
        assert_eq!(m.tool_calls, 0);
        assert_eq!(m.tool_call_success_rate, None);
        assert_eq!(m.valid_tool_name_rate, None);
        assert_eq!(m.input_schema_compliance, None);
        assert_eq!(m.valid_call_failure_rate, None);
        assert_eq!(
            m.planning_json_compliance,
            Some(1.0),
            "MCP-Bench's value with no plan"
        );
        assert_eq!(m.server_count, 0);
        assert_eq!(m.fidelity, None);
    }

    #[test]
    fn phases_run_until_the_next_phase_or_the_end() {
        let phases = [
            (Phase::Plan, 0),
            (Phase::Execute, 600),
            (Phase::Answer, 900),
        ];
        let m = compute(&input(&[], &[], &phases));
        assert_eq!(m.phase_ms, [600, 300, 100, 0]);
    }

    #[test]
    fn time_spent_answering_a_server_is_no_phases() {
        let phases = [(Phase::Plan, 0), (Phase::Execute, 600)];
        // 250 ms answering during planning, 100 ms during execution.
        let waits = [(400, 250), (700, 100)];
        let m = compute(&MetricsInput {
            waits: &waits,
            ..input(&[], &[], &phases)
        });
        assert_eq!(m.phase_ms, [350, 300, 0, 0]);
        assert_eq!(m.waiting_ms, 350);
        assert_eq!(m.wall_ms, 1000);
    }

    #[test]
    fn tokens_per_role_and_missing_usage() {
        let llm = [
            LlmFacts {
                role: Role::Planner,
                prompt_tokens: 100,
                completion_tokens: 10,
                estimated: false,
                failed: false,
            },
            LlmFacts {
                role: Role::Planner,
                prompt_tokens: 50,
                completion_tokens: 5,
                estimated: true,
                failed: false,
            },
            LlmFacts {
                role: Role::Critic,
                prompt_tokens: 0,
                completion_tokens: 0,
                estimated: false,
                failed: true,
            },
        ];
        let m = compute(&input(&[], &llm, &[]));
        assert_eq!(m.llm[Role::Planner.index()].calls, 2);
        assert_eq!(m.llm[Role::Planner.index()].prompt_tokens, 150);
        assert_eq!(m.tokens(), 165);
        assert_eq!(m.llm_calls(), 3);
        assert!(m.tokens_estimated());
        assert_eq!(m.llm[Role::Critic.index()].failed_calls, 1);
    }

    #[test]
    fn judge_summary_hand_worked() {
        let d = |score| DimensionScore {
            score,
            reason: String::new(),
        };
        let s = JudgeScores {
            task_fulfillment: d(8.0),
            grounding: d(6.0),
            tool_appropriateness: d(9.0),
            parameter_accuracy: d(7.0),
            dependency_awareness: d(4.0),
            parallelism_efficiency: d(2.0),
        };
        let j = JudgeSummary::of(JudgeRecord {
            model: "judge",
            scores: &s,
            judging: None,
        });
        assert_eq!(
            (
                j.task_completion,
                j.tool_selection,
                j.planning_effectiveness,
                j.overall
            ),
            (7.0, 8.0, 3.0, 6.0)
        );
    }

    #[test]
    fn fidelity_means_only_over_simulated_steps() {
        let sim = Observation {
            text: "a b".into(),
            ..Default::default()
        };
        let real = Observation {
            text: "a c".into(),
            ..Default::default()
        };
        let cat = ToolCatalog::new(&[]);
        let args = serde_json::json!({});
        let call = recorded(&args, &real, None, None);
        let with = StepFacts::new(&cat, call, Some((&sim, None)));
        let without = StepFacts::new(&cat, call, None);
        let m = compute(&input(&[with, without], &[], &[]));
        let f = m.fidelity.unwrap();
        assert_eq!(f.steps, 1);
        // Plain text on both sides: the score is the token F1.
        assert_eq!(f.score, 0.5);
        assert_eq!(f.token_f1, 0.5);
    }

    /// Fidelity is also split by whether each call changed its server's state, as a sandbox
    /// saw it; a call no sandbox watched is in neither part.
    #[test]
    fn fidelity_is_split_by_what_the_call_did_to_the_state() {
        let text = |t: &str| Observation {
            text: t.into(),
            ..Default::default()
        };
        let cat = ToolCatalog::new(&[]);
        let args = serde_json::json!({});
        let real = text("a b");
        let (changed, unchanged) = (
            StateChange {
                fields_changed: 1,
                ..Default::default()
            },
            StateChange::default(),
        );
        let facts = |sim: &str, state_changed: Option<bool>| {
            let change = state_changed.map(|c| if c { &changed } else { &unchanged });
            let call = recorded(&args, &real, None, change);
            StepFacts::new(&cat, call, Some((&text(sim), None)))
        };
        let steps = [
            facts("a b", Some(false)),
            facts("a c", Some(true)),
            facts("z z", Some(true)),
            facts("a b", None),
        ];
        let f = compute(&input(&steps, &[], &[])).fidelity.unwrap();
        assert_eq!(f.steps, 4);
        assert_eq!(f.unchanged_state, Some(1.0));
        assert_eq!(f.changed_state, Some(0.25), "(0.5 + 0) / 2");
        let none = compute(&input(&[facts("a b", None)], &[], &[]))
            .fidelity
            .unwrap();
        assert_eq!((none.changed_state, none.unchanged_state), (None, None));
    }

    #[test]
    fn transport_error_counts_as_error_for_agreement() {
        let sim = Observation {
            text: "timeout".into(),
            is_error: true,
            ..Default::default()
        };
        let cat = ToolCatalog::new(&[]);
        let args = serde_json::json!({});
        let real = Observation::default();
        let call = RecordedCall {
            server: None,
            ..recorded(&args, &real, Some("timed out"), None)
        };
        let s = StepFacts::new(&cat, call, Some((&sim, None)));
        assert!(s.is_error);
        assert_eq!(s.fidelity.unwrap().error_agreement, 1.0);
    }
}
