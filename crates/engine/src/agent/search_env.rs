//! What the search needs from the world, and what the world answers: the contract between
//! SPIRAL's search ([`super::mcts`]) and the models behind it ([`super::rehearse`]'s
//! `Rehearser`, or a test's toy environment). A leaf: both sides build on it.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::world_model::{Confidence, HistoryStep, MemberPrediction};
use cosmos_trajectory::event::{Action, EventBody, NodeId, Observation, SearchStop};

/// A critic's judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct Critique {
    /// In [0, 1].
    pub score: f64,
    /// Why.
    pub reason: String,
}

/// An answer from the environment, with the events it produced on the way (its LLM calls).
pub type Answer<'a, T> = BoxFuture<'a, (T, Vec<EventBody>)>;

/// What the planner proposed for one state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Proposal {
    /// The usable candidates, best first.
    pub actions: Vec<Action>,
    /// Why each unusable one was rejected (their `decision_rejected` events are emitted too).
    pub rejected: Vec<String>,
}

/// What the search needs from the world. Events the environment itself produces (its LLM
/// calls, rejected candidates) go into the `Vec<EventBody>` each call returns, in order.
pub trait SearchEnv: Send + Sync {
    /// Up to `k` next actions from a state, the planner told `feedback` (why its last reply
    /// was not usable, or which children are dead ends); `Err` when the planner failed.
    fn propose<'a>(
        &'a self,
        history: &'a [HistoryStep],
        k: usize,
        feedback: Option<&'a str>,
    ) -> Answer<'a, Result<Proposal, String>>;
    /// Why a call is invalid (unknown tool, arguments failing the schema), if it is.
    fn invalid(&self, tool: &str, arguments: &serde_json::Value) -> Option<String>;
    /// The world model's prediction of a call; `Err` when the world model failed.
    fn simulate<'a>(
        &'a self,
        history: &'a [HistoryStep],
        tool: &'a str,
        arguments: &'a serde_json::Value,
    ) -> Answer<'a, Result<Prediction, String>>;
    /// The critic's score of taking `action` (with its predicted observation) from `history`.
    fn critique<'a>(
        &'a self,
        history: &'a [HistoryStep],
        action: &'a Action,
        observation: Option<&'a Observation>,
    ) -> Answer<'a, Option<Critique>>;
    /// Why the search must stop now (a stop request, a spent token or time budget), checked
    /// each iteration.
    fn should_stop(&self) -> Option<Stopped>;
    /// How many of `n` candidates the run's remaining budget can still rehearse (they run at
    /// once, so the budget is not checked between them). All of them by default.
    fn affordable(&self, n: usize) -> usize {
        n
    }
    /// The world model's name, for `node_simulated`.
    fn world_model_name(&self) -> String;
    /// Routing: the confidence below which a prediction is not trusted (`None`: every one is).
    fn go_real_below(&self) -> Option<f64> {
        None
    }
    /// Routing by a file: each tool held to its own threshold (in place of `go_real_below`).
    fn routing_file(&self) -> Option<&crate::metrics::routing_file::RoutingFile> {
        None
    }
    /// The tool's server annotates it read-only today (so it may be called while planning).
    fn read_only(&self, _tool: &str) -> bool {
        false
    }
    /// The real call of a read-only tool made while planning, in place of an unsure
    /// prediction; `None` where no real server is within reach.
    fn ground<'a>(
        &'a self,
        _tool: &'a str,
        _arguments: &'a serde_json::Value,
    ) -> Answer<'a, Option<Grounded>> {
        Box::pin(async { (None, Vec::new()) })
    }
    /// What the record of node `node`'s rehearsal would write so far (the LLM calls that
    /// answered, the prediction, a real call made), and the tool it is now calling for real
    /// (`grounding`), kept until [`SearchEnv::recorded`]: a search cut off by a stop or the
    /// time budget drops its rehearsals in flight, and what they did must still reach the run.
    fn note(&self, _node: NodeId, _so_far: Vec<EventBody>, _grounding: Option<&str>) {}
    /// Whether [`SearchEnv::note`] keeps anything (else the notes are not even built).
    fn keeps_notes(&self) -> bool {
        false
    }
    /// Node `node`'s rehearsal is recorded: its note is no longer needed.
    fn recorded(&self, _node: NodeId) {}
}

/// A world model's prediction of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// The predicted result.
    pub observation: Observation,
    /// Tokens the world model spent on it, when it uses an LLM.
    pub tokens: Option<u64>,
    /// How sure the world model is, when it says.
    pub confidence: Option<Confidence>,
    /// An ensemble's members' predictions (empty for any other world model).
    pub members: Vec<MemberPrediction>,
    /// The server's state after the call, when the world model tracks state.
    pub predicted_state: Option<Value>,
}

/// The real result of a read-only tool's call made while planning, in place of an unsure
/// prediction (routing; `node_grounded`).
#[derive(Debug, Clone, PartialEq)]
pub struct Grounded {
    /// The tool.
    pub tool: String,
    /// The server that answered.
    pub server: Option<String>,
    /// Its result.
    pub observation: Observation,
    /// Time it took.
    pub latency_ms: u64,
    /// A transport error, a timeout.
    pub error: Option<String>,
    /// How the call changed its server's sandboxed state, when that was watched.
    pub state_change: Option<Box<cosmos_trajectory::event::StateChange>>,
    /// Where a fork's recording answered it (`--tools recorded`), instead of a server.
    pub origin: Option<Box<cosmos_trajectory::event::Origin>>,
}

/// Why the search stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Stopped {
    /// All iterations ran.
    Done,
    /// Nothing left to expand (the root is a dead end, or every path is settled and skipped).
    Exhausted,
    /// A budget or stop request.
    Budget(String),
    /// The planner's endpoint failed.
    PlannerFailed(String),
    /// An expansion could simulate none of its calls: the world model failed for each.
    WorldModelFailed(String),
    /// A stop request (the UI's stop key, a signal), between iterations or mid-way.
    Interrupted,
}

impl Stopped {
    /// How `search_finished` names it.
    pub fn stop(&self) -> SearchStop {
        match self {
            Stopped::Done => SearchStop::Iterations,
            Stopped::Exhausted => SearchStop::Exhausted,
            Stopped::Budget(_) => SearchStop::Budget,
            Stopped::PlannerFailed(_) => SearchStop::PlannerFailed,
            Stopped::WorldModelFailed(_) => SearchStop::WorldModelFailed,
            Stopped::Interrupted => SearchStop::Interrupted,
        }
    }

    /// The reason in words, when there is one beyond the name.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Stopped::Done | Stopped::Exhausted => None,
            Stopped::Interrupted => Some("stopped by the user"),
            Stopped::Budget(why) | Stopped::PlannerFailed(why) | Stopped::WorldModelFailed(why) => {
                Some(why)
            }
        }
    }
}
