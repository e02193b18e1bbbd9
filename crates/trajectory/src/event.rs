//! The event types of a trajectory file: one header line, then one event per line.
//!
//! The schema is documented in `docs/trajectory-format.md`; change both together.
//!
//! The schema. Header (`run_started`) and every event kind. Large values that most
//! lines lack (structured content, a call's arguments, recorded messages, judge scores) are
//! boxed: every event is as large as the largest kind, and a run holds up to a million. Changing it means
//! changing `docs/trajectory-format.md` in the same commit (`tests/trajectory/format_doc.rs` parses every
//! example there).
//!
//! Also holds the one rule for showing an ending: `Totals::clean` (a clean finish is
//! the only success; the browser's colour and `f`, and the sweep view's, all take it) and
//! `Totals::marks` (`⊣steps`, `⊣no finish`, `✗N`, `?N`); `tui/overlays/help.rs`'s test holds the
//! legend to every mark.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who answered a proxy client's call ([`EventBody::Routed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnsweredBy {
    /// The world model's prediction went back to the client: no server saw the call.
    WorldModel,
    /// The real server answered.
    Real,
}

/// The `error` of a recorded call whose result never came because its source ends before it
/// (an imported session cut off mid-call): the call is kept, never given a result.
pub const NO_RESULT: &str = "no result recorded: the source ends before this call answered";

/// The `format` value every trajectory header carries.
pub const FORMAT_NAME: &str = "mcp-cosmos-trajectory";
/// The newest format version this build writes and reads. Version 2 lets a run from another
/// program leave out what its source never recorded (see [`Source`]); every version 1 file is a
/// valid version 2 file.
pub const FORMAT_VERSION: u32 = 2;

/// The `world_model` name of a `node_simulated` that records a validator's rejection (an
/// unknown tool or schema-invalid arguments) rather than a world model's prediction; it never
/// counts in fidelity.
pub const VALIDATOR: &str = "validator";

pub use super::tool_schema::ToolSchema;

/// Identifier of a search-tree node, unique within one run.
pub type NodeId = u64;

/// The first line of every trajectory: who made the run, on what, with which settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// The format version the file was written with.
    pub version: u32,
    /// Always `run_started`: the header is also the first event.
    pub kind: String,
    /// Unique id of this run.
    pub run_id: String,
    /// When the run started; absent only for a run imported from a source that does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    /// Version of mcp-cosmos that wrote the file.
    pub tool_version: String,
    /// The task being solved.
    pub task: TaskInfo,
    /// Which agent ran and with what settings.
    pub agent: AgentInfo,
    /// The planner model (the model whose plans are being judged); absent (an empty model)
    /// for an imported run whose source names no model.
    #[serde(default, skip_serializing_if = "ModelInfo::is_unknown")]
    pub planner: ModelInfo,
    /// Models of the other roles (world_model, critic, summarizer, judge), by role name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, ModelInfo>,
    /// The world model's self-description (`to_dict`); `None` for agents without one.
    #[serde(default)]
    pub world_model: Option<WorldModelInfo>,
    /// The MCP servers the run connected to.
    #[serde(default)]
    pub servers: Vec<ServerInfo>,
    /// The tool catalogue offered to the agent, with input schemas.
    #[serde(default)]
    pub tools: Vec<ToolInfo>,
    /// True for generated test data; such files never belong in `sample_runs/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synthetic: bool,
    /// The configuration's name, when one was given (a sweep's `[[configs]] name`, or `cosmos
    /// run --label`): the report groups runs by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The run this one was forked from (`cosmos fork`), and at which step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_of: Option<ForkOf>,
    /// Where an imported run came from (`cosmos import`): another program's trajectory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
}

/// Where an imported run came from, and what its source did not record. A field the source
/// lacks is absent from the run, never made up; the views show `—` for it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Source {
    /// The source's format: `atif`, `inspect` or `otlp`.
    pub format: String,
    /// The file it was read from, as given.
    pub file: String,
    /// The session, sample or trace in that file this run is.
    pub id: String,
    /// The agent that made it, as the source names it (`claude-code 2.0.1`, an Inspect solver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The model that made it, as the source names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the source never recorded, so the run's values for it mean nothing: some of
    /// `t_ms` (when things happened), `latency_ms` (how long calls took), `tokens`, `tools`
    /// (no catalogue to check calls against).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecorded: Vec<String>,
    /// What was read but has no place in a cosmos run, one line each (a later user message,
    /// a step of a kind cosmos does not know).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// What an imported run's source did not record, as the metrics take it: each `true` makes
/// the figures that rest on it unknown (`—`), never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Unrecorded {
    /// No times: wall time and phases.
    pub times: bool,
    /// No token counts.
    pub tokens: bool,
    /// No tool catalogue: valid names, schema compliance, valid-call failures.
    pub tools: bool,
    /// No call named its server: the servers used and cross-server coordination.
    pub servers: bool,
}

impl Unrecorded {
    /// From a header's `source.unrecorded` list.
    pub fn of_list(list: &[String]) -> Self {
        let has = |what: &str| list.iter().any(|u| u == what);
        Self {
            times: has(Source::TIMES),
            tokens: has(Source::TOKENS),
            tools: has(Source::TOOLS),
            servers: has(Source::SERVERS),
        }
    }
}

/// How a run was made, the one sentence for it: imported from another program's file (its
/// `source`: format, file, id there), recorded by `cosmos proxy` (another agent, no source),
/// or run by cosmos's own agent.
pub fn made_by(kind: AgentKind, source: Option<(&str, &str, &str)>) -> String {
    match (source, kind) {
        (Some((format, file, id)), _) => {
            let unit = match format {
                "inspect" => "sample",
                "otlp" => "trace",
                _ => "session",
            };
            format!("imported from {format} {file}, {unit} {id}")
        }
        (None, AgentKind::External) => {
            "recorded by cosmos proxy: a client's own agent planned and called".to_string()
        }
        (None, AgentKind::WmEval) => "made by cosmos wm-eval".to_string(),
        (None, kind) => format!("run by cosmos ({})", kind.as_str()),
    }
}

impl Source {
    /// `unrecorded`'s name for event times.
    pub const TIMES: &'static str = "t_ms";
    /// `unrecorded`'s name for call latencies.
    pub const LATENCIES: &'static str = "latency_ms";
    /// `unrecorded`'s name for token counts.
    pub const TOKENS: &'static str = "tokens";
    /// `unrecorded`'s name for the tool catalogue (the source listed no tools, so no call's
    /// name or arguments can be checked against one).
    pub const TOOLS: &'static str = "tools";
    /// `unrecorded`'s name for the servers of calls (the source names tools alone, as
    /// Inspect does: how many servers a run used is unknown).
    pub const SERVERS: &'static str = "servers";

    /// True when the source recorded `what` (one of the names above).
    pub fn recorded(&self, what: &str) -> bool {
        !self.unrecorded.iter().any(|u| u == what)
    }
}

/// Where a forked run branched off: the original run and the first step the fork decided
/// afresh (the steps before it are the original's, replayed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOf {
    /// The original's `run_id`.
    pub run_id: String,
    /// The original's file, as it was given to `cosmos fork`.
    pub file: String,
    /// The first step the fork decided afresh.
    pub step: u64,
}

impl Header {
    /// A header with the current format name, version and tool version filled in.
    pub fn new(
        run_id: impl Into<String>,
        task: TaskInfo,
        agent: AgentInfo,
        planner: ModelInfo,
    ) -> Self {
        Self {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            kind: "run_started".to_string(),
            run_id: run_id.into(),
            started_at: Some(Utc::now()),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            task,
            agent,
            planner,
            roles: BTreeMap::new(),
            world_model: None,
            servers: Vec::new(),
            tools: Vec::new(),
            synthetic: false,
            label: None,
            fork_of: None,
            source: None,
        }
    }

    /// What the run's source did not record, for the metrics.
    pub fn unrecorded(&self) -> Unrecorded {
        self.source
            .as_ref()
            .map_or_else(Unrecorded::default, |s| Unrecorded::of_list(&s.unrecorded))
    }

    /// True unless the run was imported from a source that did not record `what` (a
    /// [`Source`] name): a view shows `—` for a value that means nothing.
    pub fn recorded(&self, what: &str) -> bool {
        self.source.as_ref().is_none_or(|s| s.recorded(what))
    }

    /// When the run started, in `format`, or `—` when its source did not say.
    pub fn started_shown(&self, format: &str) -> String {
        self.started_at
            .map_or_else(|| "—".to_string(), |t| t.format(format).to_string())
    }

    /// The planner's model, when the run names one.
    pub fn planner_model(&self) -> Option<&str> {
        Some(self.planner.model.as_str()).filter(|m| !m.is_empty())
    }

    /// The task's request, when the run has one (an imported run may not).
    pub fn request(&self) -> Option<&str> {
        Some(self.task.request.as_str()).filter(|r| !r.is_empty())
    }

    /// The catalogue's tool of this (namespaced) name.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// True when the tool's server annotated it destructive (the explorer marks its calls).
    pub fn destructive(&self, tool: &str) -> bool {
        self.tool(tool).is_some_and(ToolInfo::destructive)
    }

    /// How the run was made, as every view says it ([`made_by`]).
    pub fn made_by(&self) -> String {
        made_by(
            self.agent.kind,
            self.source
                .as_ref()
                .map(|s| (s.format.as_str(), s.file.as_str(), s.id.as_str())),
        )
    }

    /// The world model's name, or `none`.
    pub fn world_model_name(&self) -> &str {
        self.world_model
            .as_ref()
            .map_or("none", |w| w.name.as_str())
    }

    /// What a listing's planner column says: the planner's model (an imported run's, as its
    /// source names it), or `—` for a proxy session.
    pub fn planner_label(&self) -> String {
        // A proxy session's planner is its client's own agent, of which cosmos knows nothing;
        // the client's name is in the agent column (`external: NAME`).
        // An imported run's model is its source's own word.
        let knows = self.agent.kind != AgentKind::External || self.source.is_some();
        match self.planner_model() {
            Some(model) if knows => model.to_string(),
            _ => "—".to_string(),
        }
    }

    /// What a listing's agent column says: the agent's name, or for another program's agent
    /// recorded by `cosmos proxy`, `external: <client>` (an imported run: its source's agent).
    pub fn agent_label(&self) -> String {
        let client = (self.agent.kind == AgentKind::External)
            .then(|| {
                let imported = self.source.as_ref().and_then(|s| s.agent.as_deref());
                imported.or_else(|| self.agent.settings.get("client")?.get("name")?.as_str())
            })
            .flatten();
        match client {
            Some(name) => format!("external: {name}"),
            None => self.agent.kind.as_str().to_string(),
        }
    }

    /// What a listing's world-model column says: the world model's name, or for a wm-eval
    /// file the world models it compares (`memory+qwen`).
    pub fn world_model_label(&self) -> String {
        let compared = (self.agent.kind == AgentKind::WmEval)
            .then(|| self.agent.settings.get("names")?.as_array())
            .flatten();
        match compared {
            Some(names) => names
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("+"),
            None => self.world_model_name().to_string(),
        }
    }
}

/// The task a run solves.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskInfo {
    /// Task id (MCP-Bench `task_id`).
    pub id: String,
    /// What the agent is asked (MCP-Bench `fuzzy_description`); absent (empty) only for an
    /// imported run whose source has no task or user message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub request: String,
    /// The judge's reference (MCP-Bench `task_description`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// How the task's tool calls depend on each other (MCP-Bench `dependency_analysis`), shown
    /// to the judge, never to the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_analysis: Option<String>,
    /// How many tool calls the reference solution makes, when known; anchors Execution Quality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_call_count: Option<u32>,
    /// Where the task came from (file path or benchmark name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The state the task should leave, by server: the fields checked, each with its expected
    /// value (`null`: the field must be gone), scored as `run_finished`'s `state_match`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub expected_state: BTreeMap<String, serde_json::Map<String, Value>>,
}

/// The three agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// Think, call a real tool, observe; no world model.
    React,
    /// ReAct against the world model to plan, then execute the plan for real.
    PlanExec,
    /// Monte Carlo tree search over the world model, then execute the best plan.
    Spiral,
    /// Not an agent: `cosmos wm-eval`, world models simulating recorded real calls.
    WmEval,
    /// Another program's agent, recorded by `cosmos proxy` (its client's name and version are
    /// in the settings).
    External,
}

impl AgentKind {
    /// The short name used on the command line and in file names.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::React => "react",
            AgentKind::PlanExec => "plan_exec",
            AgentKind::Spiral => "spiral",
            AgentKind::WmEval => "wm_eval",
            AgentKind::External => "external",
        }
    }
}

/// Which agent ran and with what settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// The agent.
    pub kind: AgentKind,
    /// Every setting the agent used (iterations, depth, c, K, alpha, budgets…).
    #[serde(default)]
    pub settings: BTreeMap<String, Value>,
}

impl AgentInfo {
    /// The settings key of routing's threshold.
    pub const GO_REAL_BELOW: &'static str = "go_real_below";

    /// The settings key of a routing file's record (`--routing`).
    pub const ROUTING: &'static str = "routing";

    /// Routing's threshold, when the run routed (`--go-real-below`).
    pub fn go_real_below(&self) -> Option<f64> {
        self.settings
            .get(Self::GO_REAL_BELOW)
            .and_then(Value::as_f64)
    }

    /// The run routed: by one threshold (`--go-real-below`) or by a routing file
    /// (`--routing`).
    pub fn routes(&self) -> bool {
        self.go_real_below().is_some()
            || self
                .settings
                .get(Self::ROUTING)
                .is_some_and(Value::is_object)
    }
}

/// An LLM endpoint as recorded: never its key.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Model name as sent to the endpoint.
    #[serde(default)]
    pub model: String,
    /// Base URL of the endpoint, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

impl ModelInfo {
    /// True when no model is named (an imported run whose source names none).
    pub fn is_unknown(&self) -> bool {
        self.model.is_empty() && self.base_url.is_none()
    }
}

/// A world model's self-description (`to_dict` in the paper).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorldModelInfo {
    /// Short name shown in tables (`llm`, `memory`, `cached(llm)`…).
    pub name: String,
    /// Everything else the world model wants recorded.
    #[serde(flatten)]
    pub details: BTreeMap<String, Value>,
}

/// Read by hand: serde's `flatten` buffers the whole map before reading it, and every header
/// has one. Same rules: `name` once and a string, anything else into `details`.
impl<'de> Deserialize<'de> for WorldModelInfo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = WorldModelInfo;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a world model's description")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<WorldModelInfo, A::Error> {
                let (mut name, mut details) = (None, BTreeMap::new());
                while let Some(key) = map.next_key::<String>()? {
                    if key == "name" {
                        if name.is_some() {
                            return Err(serde::de::Error::duplicate_field("name"));
                        }
                        name = Some(map.next_value::<String>()?);
                    } else {
                        details.insert(key, map.next_value::<Value>()?);
                    }
                }
                let name = name.ok_or_else(|| serde::de::Error::missing_field("name"))?;
                Ok(WorldModelInfo { name, details })
            }
        }
        d.deserialize_map(Fields)
    }
}

/// A confidence as a file gives it: a number in [0, 1], or none (the format says anything else
/// is none: a 2, a -1 or a 1e308 is no confidence, never binned as one). What is read as none is
/// noted for the reader on this thread ([`take_dropped_confidences`]), which warns of it.
pub fn unit_confidence<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let given = Option::<f64>::deserialize(d)?;
    Ok(given.and_then(|c| {
        if c.is_finite() && (0.0..=1.0).contains(&c) {
            Some(c)
        } else {
            DROPPED_CONFIDENCES.with(|d| {
                let (n, first) = d.get();
                d.set((n + 1, if n == 0 { c } else { first }));
            });
            None
        }
    }))
}

thread_local! {
    /// How many confidences outside [0, 1] this thread read as none since last asked, and the
    /// first of them.
    static DROPPED_CONFIDENCES: std::cell::Cell<(u32, f64)> = const { std::cell::Cell::new((0, 0.0)) };
}

/// How many confidences outside [0, 1] this thread has read as none since it last asked, and
/// the first of them; none when there were none.
pub fn take_dropped_confidences() -> Option<(u32, f64)> {
    let (n, first) = DROPPED_CONFIDENCES.with(|d| d.replace((0, 0.0)));
    (n > 0).then_some((n, first))
}

/// An MCP server as recorded in the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Name from the MCP config.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command (stdio) or URL (http); never environment values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Its process served other runs of a sweep before or after this one (a stateless server
    /// shared by a worker's cells).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    /// The digest of its state at the run's start, when it was given a fresh copy of its seed
    /// (`"cosmos": {"state": ...}`; `mcp::state_tree::digest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_digest: Option<String>,
    /// Its state at the start as fields (`mcp::state_view`), when it was read and is at most
    /// 64 KiB: a world model's first belief of the state, and what wm-eval replays changes on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_state: Option<Box<Value>>,
    /// What cosmos took out of the seed's copy before the run because it names a program git
    /// would run (a hook, `core.fsmonitor`, an alias…; `mcp::seed_git`), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seed_removed: Vec<String>,
    /// The MCP protocol version cosmos and the server agreed on (`2026-07-28`: the stateless
    /// era, found by `server/discover`; earlier dates: the `initialize` handshake). Absent in
    /// runs made before it was recorded, and for a server that never connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// A server's state as named fields (`mcp::state_view` reads one; docs/trajectory-format.md,
/// "State as fields").
pub type StateFields = BTreeMap<String, Value>;

/// How a real call changed its server's sandboxed state (`mcp::state_view::change`): none
/// recorded means the state was not watched (no sandbox, or too big to read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateChange {
    /// How many fields the call added, removed or altered (0: it changed nothing).
    pub fields_changed: u32,
    /// The changed fields, each before and after (absent: no such field), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, FieldChange>,
    /// Some changed fields are left out to keep the record small (16 KiB); the count is whole.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// In a wm-eval file's copy of the call: the server's whole state after it, as fields,
    /// when the source run let it be known (its start state moved on by every change before),
    /// so a predicted state can be scored against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Box<Value>>,
}

impl StateChange {
    /// True when the call changed the state.
    pub fn changed(&self) -> bool {
        self.fields_changed > 0
    }
}

/// How a run's end state matches its task's expected state on one server
/// (`metrics::state_match::score`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateMatch {
    /// Fields the task checks.
    pub checked: u32,
    /// Of those, the ones the end state has as expected.
    pub matched: u32,
    /// The fields that did not match, by name (the first 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<String>,
    /// Why the end state could not be read, when it could not (nothing then matched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One field's value before and after a call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// Before the call; absent when the call made the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// After the call; absent when the call removed the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// Least time between two recorded progress reports of one call: a server that reports every
/// millisecond fills no file.
pub const PROGRESS_EVERY_MS: u64 = 250;

/// How a recorded real call compares with the same call made today (`cosmos recheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Drift {
    /// Today's result is the recorded one (fidelity 1).
    Same,
    /// It differs (its fidelity says how much); a call that failed and now works is here too.
    Changed,
    /// It worked, and now fails.
    NowFails,
    /// Its server is not in the MCP config, does not start, or no longer offers the tool.
    ServerGone,
}

impl Drift {
    /// Its name in files and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Drift::Same => "same",
            Drift::Changed => "changed",
            Drift::NowFails => "now_fails",
            Drift::ServerGone => "server_gone",
        }
    }
}

/// One recorded call made again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecheckedCall {
    /// The `tool_called` step.
    pub step: u64,
    /// The tool.
    pub tool: String,
    /// How today's result compares.
    pub drift: Drift,
    /// Fidelity of today's result to the recorded one (the one fidelity function, the recorded
    /// result in the place of the prediction), when there is a result today.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<f64>,
    /// Today's result, when it is not the recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Box<Observation>>,
    /// Why the call could not be made, or its transport error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One tool of the catalogue.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Namespaced name, `server:tool`.
    pub name: String,
    /// The tool's description from its server.
    #[serde(default)]
    pub description: String,
    /// The tool's JSON Schema for its arguments (shared: every run's catalogue and every
    /// prompt refer to it without copying it; decoded only when looked into).
    #[serde(default)]
    pub input_schema: ToolSchema,
    /// The JSON Schema of its structured result, when the server declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Box<Value>>,
    /// The server's hints about the tool (`readOnlyHint`, `destructiveHint`…), as it sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Box<Value>>,
    /// Its name for people (`title`), when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its `icons`, as the server listed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Box<Value>>,
    /// Its `_meta`, as the server listed it.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Box<Value>>,
}

/// A namespaced tool's own name when it belongs to `server` (`server:tool`; a server's name
/// may hold a `:` itself, so the server is matched whole).
pub fn own_tool_name<'a>(tool: &'a str, server: &str) -> Option<&'a str> {
    tool.strip_prefix(server)?.strip_prefix(':')
}

impl ToolInfo {
    /// One of the server's boolean hints about the tool (`readOnlyHint`, `destructiveHint`,
    /// `idempotentHint`, `openWorldHint`), when it gave it.
    pub fn hint(&self, name: &str) -> Option<bool> {
        self.annotations.as_deref()?.get(name)?.as_bool()
    }

    /// True when its server annotated it read-only: calling it changes nothing.
    pub fn read_only(&self) -> bool {
        self.hint("readOnlyHint") == Some(true)
    }

    /// True when its server annotated it destructive: a call may delete or overwrite things.
    pub fn destructive(&self) -> bool {
        !self.read_only() && self.hint("destructiveHint") == Some(true)
    }

    /// Why calling it for real needs a person's yes, or `None` for a read-only tool.
    pub fn risk(&self) -> Option<&'static str> {
        if self.read_only() {
            None
        } else if self.destructive() {
            Some("its server annotates it destructive: it may delete or overwrite things")
        } else {
            Some("its server does not annotate it read-only: it may change things")
        }
    }
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the run, starting at 1 (the header is 0).
    pub seq: u64,
    /// Milliseconds since the run started (absent, read as 0, in a run imported from a source
    /// without times: its header's `source.unrecorded` says `t_ms`).
    #[serde(default)]
    pub t_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub body: EventBody,
}

/// The phases of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Phase 1: planning (ReAct's whole loop, or the search over the world model).
    Plan,
    /// Phase 2: executing the plan on the real servers.
    Execute,
    /// Writing the final answer.
    Answer,
    /// Scoring by the judge.
    Judge,
}

impl Phase {
    /// All phases in run order.
    pub const ALL: [Phase; 4] = [Phase::Plan, Phase::Execute, Phase::Answer, Phase::Judge];
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Plan => "plan",
            Phase::Execute => "execute",
            Phase::Answer => "answer",
            Phase::Judge => "judge",
        }
    }
}

/// The LLM roles; each can have its own endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Proposes the next action.
    Planner,
    /// Predicts tool results.
    WorldModel,
    /// Scores simulated states during search.
    Critic,
    /// Writes the final answer.
    Summarizer,
    /// Scores the finished run.
    Judge,
}

impl Role {
    /// All roles.
    pub const ALL: [Role; 5] = [
        Role::Planner,
        Role::WorldModel,
        Role::Critic,
        Role::Summarizer,
        Role::Judge,
    ];
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Planner => "planner",
            Role::WorldModel => "world_model",
            Role::Critic => "critic",
            Role::Summarizer => "summarizer",
            Role::Judge => "judge",
        }
    }
    /// Index into per-role arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What an agent proposes at a node: call a tool, or finish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Call `tool` (namespaced `server:tool`) with `arguments`.
    ToolCall {
        /// Namespaced tool name.
        tool: String,
        /// Arguments as JSON.
        #[serde(default)]
        arguments: Value,
    },
    /// Stop and answer.
    Finish {
        /// A draft answer, when the planner gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
    },
}

/// A world model's prediction of a call, as both prediction events record it (`node_simulated`
/// for a plan's node, `call_simulated` for a recorded or forked step): the fields once, inline in
/// each event's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictionRecord {
    /// Name of the world model that answered.
    pub world_model: String,
    /// The predicted result.
    pub observation: Observation,
    /// Latency of the simulation.
    pub latency_ms: u64,
    /// Tokens spent, when the world model uses an LLM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// How sure the world model said it was, in [0, 1], when it said; none when it gave no
    /// figure (routing then counts the prediction as unsure).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "unit_confidence"
    )]
    pub confidence: Option<f64>,
    /// How the world model knows its confidence: `recall` (memory), `self` (an LLM's own word),
    /// `logprobs`, `command`, `agreement` (an ensemble), as the world model says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence_source: Option<String>,
    /// An ensemble's members, each with its prediction or its error; the observation above is
    /// the one the ensemble picked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberPrediction>,
    /// The world model's belief of the tool's server's state after the call, as fields, when it
    /// tracks state (it was given the state before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_state: Option<Box<Value>>,
}

/// One member of an ensemble world model (`members` of `node_simulated` and `call_simulated`):
/// its prediction, or the error it gave instead (never both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberPrediction {
    /// The member, by its name.
    pub world_model: String,
    /// Its prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<Observation>,
    /// Why it gave none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its latency.
    pub latency_ms: u64,
    /// Its own confidence, when it gave one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "unit_confidence"
    )]
    pub confidence: Option<f64>,
    /// How it knows its confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence_source: Option<String>,
}

/// A tool result, real or simulated, in MCP's shape reduced to what we compare.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Observation {
    /// The text content items joined by newlines (images etc. become a placeholder).
    #[serde(default)]
    pub text: String,
    /// `structuredContent`, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Box<Value>>,
    /// MCP `isError`.
    #[serde(default)]
    pub is_error: bool,
    /// Bytes cut from `text` because the result was too large to record whole.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Observation {
    /// An observation of `text` alone: a result, or a failure when `is_error`.
    pub fn of_text(text: impl Into<String>, is_error: bool) -> Self {
        Self {
            text: text.into(),
            is_error,
            ..Default::default()
        }
    }

    /// Cuts `text` to at most `max` bytes (on a character boundary), counting what was cut in
    /// `truncated_bytes`: the one cap on tool results and predictions.
    pub fn cap_text(&mut self, max: usize) {
        if self.text.len() > max {
            let mut end = max;
            while !self.text.is_char_boundary(end) {
                end -= 1;
            }
            self.truncated_bytes += (self.text.len() - end) as u64;
            self.text.truncate(end);
        }
    }
}

/// Where a copied call was recorded first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The run file.
    pub run: String,
    /// The call's `seq` there.
    pub seq: u64,
}

/// What failed, in an `error` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSource {
    /// An MCP server (with its stderr tail).
    Server,
    /// An LLM endpoint (a role's, or the judge's).
    Llm,
    /// The world model: it could not predict (never a prediction).
    WorldModel,
    /// The agent: a limit reached, a search or chain cut short.
    Agent,
    /// A fork: a call the recording does not hold, with `--on-miss error`.
    Fork,
    /// The trajectory file: a shown event that is no longer in it.
    Trajectory,
    /// The OpenTelemetry export, live.
    Otel,
    /// A source this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

impl ErrorSource {
    /// As written in the file.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorSource::Server => "server",
            ErrorSource::Llm => "llm",
            ErrorSource::WorldModel => "world_model",
            ErrorSource::Agent => "agent",
            ErrorSource::Fork => "fork",
            ErrorSource::Trajectory => "trajectory",
            ErrorSource::Otel => "otel",
            ErrorSource::Other(other) => other,
        }
    }
}

impl std::fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How routing treated a prediction made while planning (`node_simulated`'s `route`), in a
/// run that routes (`--go-real-below` or `--routing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Trusted, and its tool is read-only: the real call routing would otherwise have made
    /// while planning was saved.
    Saved,
    /// Trusted; its tool is not read-only, so routing would not have called it anyway.
    Trusted,
    /// Unsure, and its tool is read-only: called for real while planning (`node_grounded`
    /// follows).
    Grounded,
    /// Unsure, and its tool is not read-only: nothing real was called; the node rests on a
    /// guess.
    Risky,
}

impl Route {
    /// The prediction was trusted.
    pub fn trusted(self) -> bool {
        matches!(self, Route::Saved | Route::Trusted)
    }
}

/// The verdict behind a node's base reward (SPIRAL's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A finish action: +1.0.
    Finish,
    /// A call to an existing tool with schema-valid arguments: +0.1.
    Valid,
    /// A path that cannot continue (world model error, depth limit): −0.5.
    DeadEnd,
    /// An unknown tool or schema-invalid arguments: −1.0.
    Invalid,
    /// The world model failed (an `error` event from `world_model` says why): no prediction,
    /// so the node is terminal, scores 0 and is never part of a plan.
    NotSimulated,
}

impl Verdict {
    /// Whether a node of this verdict may be part of a plan (`None`: not yet rehearsed). Never
    /// one the world model could not simulate (unknown) or a call its schema rejected (known
    /// to fail). The agent's plan and the explorer's account of it both ask this.
    pub fn may_be_planned(verdict: Option<Verdict>) -> bool {
        !matches!(verdict, Some(Verdict::NotSimulated | Verdict::Invalid))
    }
}

/// Why a planner reply was not a usable decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionProblem {
    /// `"action": "call"` without a tool.
    NoTool,
    /// A tool that no server offers. Written by older ReAct runs, which did not call it; runs
    /// now call it and record the failed call (as MCP-Bench does), and the metrics read an old
    /// ReAct run's rejection as that failed call.
    UnknownTool,
    /// Arguments that are not a JSON object.
    BadArguments,
    /// Neither a call nor a finish.
    NoAction,
    /// The reply is not JSON at all.
    NotJson,
    /// The reply stopped at the token cap before its JSON ended.
    Cut,
}

/// What brought a run to its end, beside its status (which keeps MCP-Bench's meaning: a
/// `completed` run ended with an answer, whether or not the planner got to finish).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// The planner decided to finish (ReAct's finish; a plan whose path reached a finish).
    PlannerFinished,
    /// The search used its iterations and no path reached a finish: the best path ran.
    SearchExhausted,
    /// The step limit stopped the agent before the planner finished.
    StepLimit,
    /// The token budget stopped the agent.
    TokenLimit,
    /// The wall-time budget stopped the agent.
    TimeLimit,
    /// The search (or Plan-Exec's chain) stopped early: the planner or the world model failed.
    SearchEndedEarly,
    /// The plan had no call: nothing was executed, though the planner never finished.
    NoCallPlanned,
    /// A stop (the UI's stop key, Ctrl-C, SIGTERM, SIGHUP) ended the run before its agent did.
    Interrupted,
    /// The client of `cosmos proxy` ended its session (an external agent's run).
    ClientClosed,
    /// The client of `cosmos proxy` sent nothing for the proxy's idle bound with nothing in
    /// flight, so the proxy closed the session's file (the client, coming back, gets a new
    /// session). Its wall time ends at its last event before the close. (Written
    /// `client_idle` by the build that introduced it.)
    #[serde(alias = "client_idle")]
    IdleExpired,
    /// An imported run (`cosmos import`): another program's agent ran it, and its file ends
    /// here; the status says whether it answered.
    SourceEnded,
}

impl Ending {
    /// Every ending, in the order tables list them.
    pub const ALL: [Ending; 11] = [
        Ending::PlannerFinished,
        Ending::SearchExhausted,
        Ending::StepLimit,
        Ending::TokenLimit,
        Ending::TimeLimit,
        Ending::SearchEndedEarly,
        Ending::NoCallPlanned,
        Ending::Interrupted,
        Ending::ClientClosed,
        Ending::IdleExpired,
        Ending::SourceEnded,
    ];

    /// Its name in files and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Ending::PlannerFinished => "planner_finished",
            Ending::SearchExhausted => "search_exhausted",
            Ending::StepLimit => "step_limit",
            Ending::TokenLimit => "token_limit",
            Ending::TimeLimit => "time_limit",
            Ending::SearchEndedEarly => "search_ended_early",
            Ending::NoCallPlanned => "no_call_planned",
            Ending::Interrupted => "interrupted",
            Ending::ClientClosed => "client_closed",
            Ending::IdleExpired => "idle_expired",
            Ending::SourceEnded => "source_ended",
        }
    }

    /// The run did not end the way its agent is meant to: a limit, a search cut short, or
    /// no call at all. (A search that used its iterations is how SPIRAL ends.)
    pub fn went_wrong(self) -> bool {
        !matches!(
            self,
            Ending::PlannerFinished
                | Ending::SearchExhausted
                | Ending::ClientClosed
                | Ending::IdleExpired
                | Ending::SourceEnded
        )
    }

    /// The run's ending once `later` has happened too: the first thing that went wrong stays
    /// the cause; until something has, the later ending is the one that counts.
    pub fn then(self, later: Ending) -> Ending {
        if self.went_wrong() { self } else { later }
    }

    /// A clean finish: the planner finished, or (a proxy session) its client ended it or left
    /// it. Every
    /// view takes this one rule: only a clean ending is drawn as a success, every other one
    /// carries a [`Ending::mark`] (or, for a stop, its status) and is where `f` stops.
    pub fn clean(self) -> bool {
        matches!(
            self,
            Ending::PlannerFinished
                | Ending::ClientClosed
                | Ending::IdleExpired
                | Ending::SourceEnded
        )
    }

    /// The run's wall time ends at its last event before `run_finished`, not at it: the time
    /// between was the proxy waiting on a client that had gone quiet, no work of the run's.
    pub fn wall_ends_before_finish(self) -> bool {
        self == Ending::IdleExpired
    }

    /// A few words for a status column (the browser's legend explains each): empty for a clean finish ([`Ending::clean`]), and for a
    /// stop, which the status names (`interrupted`).
    pub fn mark(self) -> &'static str {
        match self {
            Ending::PlannerFinished
            | Ending::ClientClosed
            | Ending::IdleExpired
            | Ending::SourceEnded => "",
            Ending::SearchExhausted => "⊣no finish",
            Ending::StepLimit => "⊣steps",
            Ending::TokenLimit => "⊣tokens",
            Ending::TimeLimit => "⊣time",
            Ending::SearchEndedEarly => "⊣early",
            Ending::NoCallPlanned => "⊣no call",
            // The status says it: `interrupted`.
            Ending::Interrupted => "",
        }
    }
}

/// Why a search stopped (`search_finished`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchStop {
    /// Its iterations ran out.
    Iterations,
    /// Nothing was left to expand: the root is a dead end, or every path is settled.
    Exhausted,
    /// The run's token or time budget, or a stop request.
    Budget,
    /// The planner's endpoint failed.
    PlannerFailed,
    /// An expansion could simulate none of its calls.
    WorldModelFailed,
    /// A stop (the UI's stop key, a signal) cut it off mid-way.
    Interrupted,
}

impl SearchStop {
    /// Its name in files.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchStop::Iterations => "iterations",
            SearchStop::Exhausted => "exhausted",
            SearchStop::Budget => "budget",
            SearchStop::PlannerFailed => "planner_failed",
            SearchStop::WorldModelFailed => "world_model_failed",
            SearchStop::Interrupted => "interrupted",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The agent answered.
    Completed,
    /// The run stopped on an error.
    Failed,
    /// Stopped by the user (Ctrl-C, SIGTERM, the UI's stop key).
    Interrupted,
}

impl RunStatus {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// One MCP-Bench rubric dimension: a score (0–10) and the judge's reasoning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionScore {
    /// 0 to 10 (MCP-Bench's bands run 1–10; its defect-rate mapping reaches 0). With trials,
    /// the mean over the trials that answered.
    pub score: f64,
    /// Why (with trials, the first answering trial's reasoning, as MCP-Bench keeps it).
    #[serde(default)]
    pub reason: String,
}

/// The six MCP-Bench rubric sub-dimensions, as replies and files name them, in order.
pub const DIMENSION_NAMES: [&str; 6] = [
    "task_fulfillment",
    "grounding",
    "tool_appropriateness",
    "parameter_accuracy",
    "dependency_awareness",
    "parallelism_efficiency",
];

/// Something per MCP-Bench rubric sub-dimension, in MCP-Bench's order (two per headline score).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Dimensions<T> {
    /// Did the answer fulfil the task (task completion).
    pub task_fulfillment: T,
    /// Is the answer grounded in tool results (task completion).
    pub grounding: T,
    /// Were the right tools chosen (tool selection).
    pub tool_appropriateness: T,
    /// Were the arguments right (tool selection).
    pub parameter_accuracy: T,
    /// Were dependencies between calls respected (planning).
    pub dependency_awareness: T,
    /// Were calls parallel and few (planning).
    pub parallelism_efficiency: T,
}

impl<T> Dimensions<T> {
    /// Builds each dimension from its name, in [`DIMENSION_NAMES`] order.
    pub fn try_from_fn<E>(mut f: impl FnMut(&'static str) -> Result<T, E>) -> Result<Self, E> {
        let [a, b, c, d, e, g] = DIMENSION_NAMES;
        Ok(Self {
            task_fulfillment: f(a)?,
            grounding: f(b)?,
            tool_appropriateness: f(c)?,
            parameter_accuracy: f(d)?,
            dependency_awareness: f(e)?,
            parallelism_efficiency: f(g)?,
        })
    }

    /// Builds each dimension from its name.
    pub fn from_fn(mut f: impl FnMut(&'static str) -> T) -> Self {
        match Self::try_from_fn::<std::convert::Infallible>(|name| Ok(f(name))) {
            Ok(d) => d,
        }
    }

    /// The dimension called `name`, when there is one.
    pub fn get(&self, name: &str) -> Option<&T> {
        self.named()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    /// Each dimension with its name, in order.
    pub fn named(&self) -> [(&'static str, &T); 6] {
        let [a, b, c, d, e, g] = DIMENSION_NAMES;
        [
            (a, &self.task_fulfillment),
            (b, &self.grounding),
            (c, &self.tool_appropriateness),
            (d, &self.parameter_accuracy),
            (e, &self.dependency_awareness),
            (g, &self.parallelism_efficiency),
        ]
    }

    /// Every dimension mapped.
    pub fn map<U>(&self, mut f: impl FnMut(&T) -> U) -> Dimensions<U> {
        Dimensions {
            task_fulfillment: f(&self.task_fulfillment),
            grounding: f(&self.grounding),
            tool_appropriateness: f(&self.tool_appropriateness),
            parameter_accuracy: f(&self.parameter_accuracy),
            dependency_awareness: f(&self.dependency_awareness),
            parallelism_efficiency: f(&self.parallelism_efficiency),
        }
    }
}

/// The six MCP-Bench rubric dimensions, each scored with its reasoning.
pub type JudgeScores = Dimensions<DimensionScore>;

impl JudgeScores {
    /// The six scores alone.
    pub fn values(&self) -> Dimensions<f64> {
        self.map(|d| d.score)
    }
}

/// How a judgement was made: the evidence the judge saw and every trial it was asked
/// (`judge_scored.judging`; absent in files judged before trials existed: one trial).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judging {
    /// The rubric's version (`crate::judge::RUBRIC`).
    pub rubric: String,
    /// The seed every trial's order is drawn from (trial `i` uses `seed + i`).
    pub seed: u64,
    /// Every trial asked, in order, answered or not.
    pub trials: Vec<JudgeTrial>,
    /// Sample standard deviation of each dimension over the trials that answered (the judge's
    /// own spread); `None` under two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Dimensions<f64>>,
    /// What the judge was shown.
    pub evidence: JudgeEvidence,
}

impl Judging {
    /// The trials that answered.
    pub fn answered(&self) -> impl Iterator<Item = &Dimensions<f64>> {
        self.trials.iter().filter_map(|t| t.scores.as_ref())
    }
}

/// A `judge_scored` event's parts, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct JudgeRecord<'a> {
    /// The judge's model.
    pub model: &'a str,
    /// The (averaged) scores.
    pub scores: &'a JudgeScores,
    /// How they were made; `None` in older files (one trial).
    pub judging: Option<&'a Judging>,
}

impl EventBody {
    /// The judgement, when this is a `judge_scored`.
    pub fn judge_record(&self) -> Option<JudgeRecord<'_>> {
        match self {
            EventBody::JudgeScored {
                model,
                scores,
                judging,
            } => Some(JudgeRecord {
                model,
                scores,
                judging: judging.as_deref(),
            }),
            _ => None,
        }
    }
}

/// One request to the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeTrial {
    /// The seed its order was drawn from.
    pub seed: u64,
    /// The rubric as it was shown: each headline group's dimensions, in order, each with its
    /// bands in order (`task_fulfillment: 7-8 1-3 9-10 4-6`).
    pub order: Vec<String>,
    /// Its scores, when it answered with all six.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scores: Option<Dimensions<f64>>,
    /// Why it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The facts the judge's request held.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct JudgeEvidence {
    /// The concrete task (MCP-Bench's `task_description`) was shown beside the request.
    pub concrete_task: bool,
    /// The task's dependency analysis was shown.
    pub dependency_analysis: bool,
    /// How many available tools were listed.
    pub tools: u32,
    /// Execution rounds (cosmos makes one real call per round).
    pub rounds: u64,
    /// The execution history was too long for the judge's context and was compressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compressed: Option<Compression>,
}

/// A compressed execution history: its size before and after, in MCP-Bench's estimate of
/// tokens (characters / 4), and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compression {
    /// Estimated tokens before.
    pub from_tokens: u64,
    /// Estimated tokens after.
    pub to_tokens: u64,
    /// `llm` (the judge's model summarised it) or `truncated` (that failed; cut to fit).
    pub by: String,
}

/// Totals written into `run_finished`, so a folder can be listed from first and last lines.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Number of events after the header, including `run_finished`.
    pub events: u64,
    /// Real tool calls.
    pub tool_calls: u64,
    /// Real tool calls that returned an error.
    pub tool_errors: u64,
    /// Search-tree nodes.
    pub nodes: u64,
    /// LLM calls over all roles.
    pub llm_calls: u64,
    /// Prompt plus completion tokens over all roles.
    pub tokens: u64,
    /// Wall time of the run.
    pub wall_ms: u64,
    /// Mean simulation fidelity over executed steps, when any step had a simulation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<f64>,
    /// Planner replies that were no usable decision (`decision_rejected`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rejected_decisions: u64,
    /// A proxy client's calls the world model answered (`routed`): none is in `tool_calls`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub simulated_answers: u64,
    /// Scores its source recorded that failed the run (`source_scored`, an imported sample
    /// scored incorrect): a run so scored is no clean finish.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub source_failed: u64,
    /// What brought the run to its end, by the metrics: the ending `run_finished` records, or
    /// for an older file what its `agent` errors tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<Ending>,
    /// The version of the metric definitions these totals were computed with
    /// (`metrics::run::METRICS_VERSION`); 0 in files written before totals had one. A view
    /// shows totals of another version only after computing them again from the events.
    #[serde(default)]
    pub metrics_version: u32,
    /// In a wm-eval file: the head of its leaderboard (the world model with the best mean
    /// fidelity over the calls every world model simulated), so a listing can show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader: Option<Leader>,
}

/// The verdicts a run's source recorded of it (`source_scored`), counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceTally {
    /// Scores recorded.
    pub scored: u64,
    /// Scores that failed the run (an Inspect `I`, a 0).
    pub failed: u64,
    /// Scores that passed it.
    pub passed: u64,
}

impl SourceTally {
    /// Counts one score.
    pub fn add(&mut self, passed: Option<bool>) {
        self.scored += 1;
        match passed {
            Some(true) => self.passed += 1,
            Some(false) => self.failed += 1,
            None => {}
        }
    }
}

impl Totals {
    /// The one rule for how a finished run is shown: a clean finish (completed, a clean
    /// [`Ending`], no failed real call, no rejected planner reply, no score of its source that
    /// failed it) is drawn as a success;
    /// anything else is marked ([`Totals::marks`]), coloured as something that went wrong, and
    /// is where `f` stops, in the browser and the sweep view alike.
    pub fn clean(&self, status: RunStatus) -> bool {
        status == RunStatus::Completed
            && self.tool_errors == 0
            && self.rejected_decisions == 0
            && self.source_failed == 0
            && self.ending.is_none_or(Ending::clean)
    }

    /// What went wrong on the way, in marks: the ending's (`⊣steps`), `✗N` for failed real
    /// calls, `?N` for planner replies that were no usable decision; empty for a clean finish.
    pub fn marks(&self) -> String {
        let mut marks = Vec::new();
        if let Some(mark) = self.ending.map(Ending::mark).filter(|m| !m.is_empty()) {
            marks.push(mark.to_string());
        }
        if self.tool_errors > 0 {
            marks.push(format!("✗{}", self.tool_errors));
        }
        if self.rejected_decisions > 0 {
            marks.push(format!("?{}", self.rejected_decisions));
        }
        if self.source_failed > 0 {
            marks.push(format!("≠{}", self.source_failed));
        }
        marks.join(" ")
    }
}

/// Which nodes a plan rule chose among.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPool {
    /// The `finish` nodes of the search: paths that reached a finish.
    Finished,
    /// No path finished: every node of the search that may be planned.
    EveryNode,
}

/// How a search's plan rule chose its plan: the pool and its best nodes with the values the
/// rule read, recorded when it chose, so an explanation never re-derives the choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanChoice {
    /// The nodes the rule chose among.
    pub pool: PlanPool,
    /// How many nodes the pool held.
    pub pool_size: u64,
    /// The pool's best nodes in the rule's order (the chosen one first; among equal scores
    /// the order the rule broke the tie in), at most [`PlanChoice::RANKED`].
    pub ranked: Vec<RankedNode>,
}

impl PlanChoice {
    /// How many of the pool's best nodes a choice records.
    pub const RANKED: usize = 12;

    /// Scores within this of the best are tied (floating-point noise is no preference:
    /// 0.05000000000000001 does not beat 0.05); a tie goes to the earlier node.
    pub const TIE: f64 = 1e-9;
}

/// One node of a plan rule's pool, with the values the rule read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankedNode {
    /// The node.
    pub node: NodeId,
    /// Its mean value Q.
    pub q: f64,
    /// Its visits N.
    pub visits: u32,
}

/// The head of a wm-eval leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leader {
    /// The world model.
    pub world_model: String,
    /// Its mean fidelity.
    pub fidelity: f64,
    /// How many world models were compared.
    pub of: u32,
}

/// Every event kind after the header. Unknown kinds are kept as [`EventBody::Unknown`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventBody {
    /// The run entered a phase.
    Phase {
        /// Which phase.
        phase: Phase,
    },
    /// Who answered a `cosmos proxy` client's call (hybrid, shadow and simulate sessions): the
    /// world model or the real server, and why it went real, as the result's `_meta` told the
    /// client.
    Routed {
        /// The call's node.
        node: NodeId,
        /// Who answered.
        answered_by: AnsweredBy,
        /// Why the real server answered: `unsure` (under the threshold), `no_prediction`,
        /// `not_read_only`, `shadow` (a shadow session: every call goes real); absent when the
        /// world model answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
        /// The world model's confidence in its prediction, when it gave one.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "unit_confidence"
        )]
        confidence: Option<f64>,
        /// The threshold the call was held to: the session's `--go-real-below`, or its tool's
        /// in the `--routing` file (absent: the file never trusts the tool, or no routing).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<f64>,
    },
    /// One chat-completions call.
    LlmCall {
        /// Which role made it.
        role: Role,
        /// Model name.
        model: String,
        /// Prompt tokens (absent, read as 0, when `source.unrecorded` says `tokens`).
        #[serde(default)]
        prompt_tokens: u64,
        /// Completion tokens.
        #[serde(default)]
        completion_tokens: u64,
        /// True when the endpoint gave no usage and the counts are estimates.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        tokens_estimated: bool,
        /// Wall time of the call including retries (absent when `source.unrecorded` says
        /// `latency_ms`).
        #[serde(default)]
        latency_ms: u64,
        /// Error, if the call failed after its retries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The messages, only when recording them was asked for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        messages: Option<Box<Value>>,
    },
    /// A search-tree node was created.
    NodeAdded {
        /// The new node.
        node: NodeId,
        /// Its parent; `None` for the root.
        #[serde(default)]
        parent: Option<NodeId>,
        /// Depth (root = 0).
        depth: u32,
        /// The action that leads into this node; `None` for the root.
        #[serde(default)]
        action: Option<Action>,
        /// The planner's prior for this candidate, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prior: Option<f64>,
    },
    /// The world model simulated a node's action.
    NodeSimulated {
        /// The node.
        node: NodeId,
        /// The prediction (or the validator's rejection, from `validator`).
        #[serde(flatten)]
        prediction: PredictionRecord,
        /// How routing treated the prediction, in a run that routes (absent otherwise, and in
        /// files written before it was recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        route: Option<Route>,
    },
    /// A node's reward was computed.
    NodeEvaluated {
        /// The node.
        node: NodeId,
        /// Why the base reward is what it is.
        verdict: Verdict,
        /// SPIRAL's base reward.
        base_reward: f64,
        /// The critic's score in [0, 1], when a critic ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        critic_reward: Option<f64>,
        /// The critic's reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        critic_reason: Option<String>,
        /// `alpha·base + (1−alpha)·critic`, or base alone without a critic.
        reward: f64,
        /// True when the node ends a path (finish, dead end, depth limit, the horizon).
        #[serde(default)]
        terminal: bool,
        /// Routing's short-horizon imagination: the product of the confidences along the path
        /// to this node (a real, grounded result counting as 1) fell below `go_real_below`
        /// here, so the search imagines no further down this path (the node is terminal for
        /// the search, not a dead end; SPIRAL goes on from its real result once executed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        horizon: Option<f64>,
    },
    /// A value was added along a path, root first; each node on it gains one visit.
    Backpropagated {
        /// Node ids from the root down.
        path: Vec<NodeId>,
        /// The value added to each node's sum.
        value: f64,
    },
    /// A search ended: what its iterations did and why it stopped.
    SearchFinished {
        /// The search's root node.
        root: NodeId,
        /// Iterations started.
        iterations: u64,
        /// Iterations that added nodes (widenings included).
        expanded: u64,
        /// Iterations that revisited a finished path, its reward counted again.
        revisited: u64,
        /// Expansions of a node whose children were all dead ends.
        #[serde(default)]
        widened: u64,
        /// Times the planner was asked again after a reply with no usable candidate.
        #[serde(default)]
        retried: u64,
        /// Iterations whose expansion added nothing.
        #[serde(default)]
        fruitless: u64,
        /// Why it stopped.
        stopped: SearchStop,
        /// The reason in words, when there is more to say.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The plan chosen for execution.
    PlanSelected {
        /// The plan's nodes from the root's child down (each one a tool call or finish).
        nodes: Vec<NodeId>,
        /// `best_mean`, `most_visited` or `chain` (ReAct-Plan-Exec).
        rule: String,
        /// How the rule chose, as the search saw it when it chose (a search's plan; absent
        /// for a chain and in files written before choices were recorded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        choice: Option<Box<PlanChoice>>,
        /// The plan's nodes that rest on a prediction less sure than the run's
        /// `go_real_below` of a tool not annotated read-only (never called while planning).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        risky: Vec<NodeId>,
    },
    /// During planning, the real result of a read-only tool's call in place of a prediction
    /// less sure than the run's `go_real_below` (routing): written after the node's
    /// `node_simulated`, which stays its prediction; the search goes on from this result.
    NodeGrounded {
        /// The node.
        node: NodeId,
        /// The tool.
        tool: String,
        /// The server that answered, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        /// The real result.
        observation: Observation,
        /// Latency of the real call.
        latency_ms: u64,
        /// A transport error, a timeout.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The prediction's confidence that sent it real (none when it gave none).
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "unit_confidence"
        )]
        confidence: Option<f64>,
        /// How the call changed its server's sandboxed state, when that was watched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state_change: Option<Box<StateChange>>,
        /// Where a fork's recording answered it (`--tools recorded`) instead of a server.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<Box<Origin>>,
    },
    /// A real tool call.
    ToolCalled {
        /// 1-based step number among real calls.
        step: u64,
        /// Namespaced tool name as the agent asked for it.
        tool: String,
        /// The server that served it, when the name resolved.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        /// Arguments as sent.
        #[serde(default)]
        arguments: Box<Value>,
        /// The real result; absent (empty) when none came: then `error` says why (an imported
        /// session that was cut off says [`NO_RESULT`]).
        #[serde(default)]
        result: Observation,
        /// Latency of the call (absent, read as 0, when the run's `source.unrecorded` says
        /// `latency_ms`).
        #[serde(default)]
        latency_ms: u64,
        /// The plan node this call executes, to pair it with its simulation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<NodeId>,
        /// Transport or protocol error (timeout, server died, unknown tool).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Where the call was recorded first, when this is a copy (in a wm-eval file).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<Box<Origin>>,
        /// How the call changed its server's sandboxed state, when that was watched.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state_change: Option<Box<StateChange>>,
    },
    /// A world model's simulation of the call of step `step`: in a wm-eval file, of that
    /// step's real call, in the context it had; in a fork (`--on-miss world-model`), in place of
    /// a call the recording did not hold, which was never made for real (it names the call).
    CallSimulated {
        /// The `tool_called` step it predicts, or the fork's step it stands for.
        step: u64,
        /// The tool, in a fork (a wm-eval file names it in the `tool_called`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// The arguments, in a fork.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments: Option<Box<Value>>,
        /// The prediction.
        #[serde(flatten)]
        prediction: PredictionRecord,
    },
    /// In a wm-eval file with decisions: the planner's next action after step `step`, given
    /// the real result (`given` is `real`) or a world model's simulation of it (`given` names
    /// the world model).
    PlannerDecided {
        /// The `tool_called` step.
        step: u64,
        /// `real`, or the world model whose simulation the planner saw.
        given: String,
        /// The decision: `call TOOL {arguments}`, `finish`, or `rejected` (no usable decision).
        decision: String,
    },
    /// After the run, a person probed a node: a named world model simulated the node's call
    /// in the node's context (`cosmos replay`, `p`).
    NodeProbed {
        /// The node.
        node: NodeId,
        /// The world model, by name.
        world_model: String,
        /// The prediction, when it made one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        observation: Option<Observation>,
        /// Why it could not, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Latency of the simulation.
        latency_ms: u64,
        /// Tokens spent, when the world model uses an LLM.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
    },
    /// After the run, a person had a node's call made for real (`cosmos replay`, `P`, after a
    /// question naming the server and the call).
    ProbeCalled {
        /// The node.
        node: NodeId,
        /// Namespaced tool.
        tool: String,
        /// The server that served it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        /// Arguments as sent.
        #[serde(default)]
        arguments: Box<Value>,
        /// The real result; absent (empty) when none came: then `error` says why (an imported
        /// session that was cut off says [`NO_RESULT`]).
        #[serde(default)]
        result: Observation,
        /// Latency of the call (absent, read as 0, when the run's `source.unrecorded` says
        /// `latency_ms`).
        #[serde(default)]
        latency_ms: u64,
        /// Transport or protocol error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A person's note on a node or an event ("this is where it went wrong"), appended to a
    /// finished run through its one writer (`A` in the explorer).
    Annotation {
        /// The node it is about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<NodeId>,
        /// The event it is about, by its `seq`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        event: Option<u64>,
        /// The note.
        text: String,
        /// Who wrote it (`COSMOS_USER`, else `USER`).
        who: String,
    },
    /// The final answer.
    Answer {
        /// Its text.
        text: String,
    },
    /// Scores from the judge.
    JudgeScored {
        /// Judge model.
        model: String,
        /// The six dimensions (with trials, each the mean over the trials that answered).
        scores: Box<JudgeScores>,
        /// The evidence shown and every trial; absent in older files (one trial).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judging: Option<Box<Judging>>,
    },
    /// A verdict the run's source recorded of it (an imported Inspect sample's score): kept
    /// as the source said it, apart from cosmos's own judge (never merged with it).
    SourceScored {
        /// The scorer, as the source names it (`includes`, `model_graded_qa`).
        scorer: String,
        /// The value as the source wrote it (`"C"`, `"I"`, `0.5`, an object).
        value: Value,
        /// What the value says of the run, by the source's conventions: passed (`C`, 1),
        /// failed (`I`, `N`, 0), or neither (partial credit, a number between, an object).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        passed: Option<bool>,
        /// The answer the scorer read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        /// The scorer's explanation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        explanation: Option<String>,
        /// The target the run was scored against.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Value>,
    },
    /// Something outside the agent failed (a server, an endpoint); the run may go on.
    Error {
        /// What failed.
        source: ErrorSource,
        /// The name of the failing part (server name, role).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// One-line message.
        message: String,
        /// The last lines the failing process wrote to stderr.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stderr_tail: Option<String>,
        /// The step the failure belongs to, where it belongs to one (a wm-eval file's world
        /// model that could not simulate the call of that step). Absent in older files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<u64>,
    },
    /// The run ended.
    RunFinished {
        /// How.
        status: RunStatus,
        /// Why it failed, if it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// What brought it to its end, when the agent ran (absent in older files).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ending: Option<Ending>,
        /// Totals for listing without parsing the body.
        totals: Totals,
        /// Each sandboxed server's state digest at the end, by server (see
        /// `ServerInfo::start_digest`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        end_digest: BTreeMap<String, String>,
        /// How the end state matches the task's `expected_state`, by server
        /// (`metrics::state_match`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        state_match: BTreeMap<String, StateMatch>,
    },
    /// The planner's reply was not a usable decision (a call without a tool, an unknown tool,
    /// arguments that are not an object): recorded with the reply, never taken as a finish.
    DecisionRejected {
        /// What was wrong with it.
        problem: DecisionProblem,
        /// The same, in words.
        detail: String,
        /// The reply as the model gave it (the decision's JSON, or the native tool call).
        reply: Value,
    },
    /// A server's progress report on the real call of step `step` while it ran
    /// (`notifications/progress`), at most one per [`PROGRESS_EVERY_MS`] of a call.
    CallProgress {
        /// The `tool_called` step the call will be.
        step: u64,
        /// The tool.
        tool: String,
        /// Progress so far.
        progress: f64,
        /// The total, when the server knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What the server said it is doing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A server's request for input (MCP elicitation) while the call of step `step` ran, and
    /// the answer it got.
    Elicitation {
        /// The `tool_called` step the call will be.
        step: u64,
        /// The tool.
        tool: String,
        /// What the server asked, in its words.
        message: String,
        /// The form's schema (`requestedSchema`), or `{"url": …}` for a page to open.
        #[serde(default)]
        requested: Box<Value>,
        /// `accept`, `decline` or `cancel`.
        action: String,
        /// What was sent back, when accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Box<Value>>,
        /// Why it was answered so (the policy, or the person).
        reason: String,
        /// How long the answer took, when a person (or the proxy's client) was asked: time
        /// that is not the agent's, left out of the phase it fell in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waited_ms: Option<u64>,
    },
    /// The run's recorded real calls made again against today's servers (`cosmos recheck`),
    /// appended after `run_finished`: how far each has drifted.
    Recheck {
        /// When the calls were made again.
        at: DateTime<Utc>,
        /// Each call made again (or that could not be), in the run's order.
        calls: Vec<RecheckedCall>,
        /// Steps left alone: their tools are not annotated read-only (`--all` makes them too).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<u64>,
    },
    /// A prompt a `cosmos proxy` client got (`prompts/get`): `asked` holds `name` and
    /// `arguments`, the result the messages' text.
    PromptGot(Exchange),
    /// A resource a `cosmos proxy` client read (`resources/read`): `asked` holds `uri`, the
    /// result the contents' text (a blob as its size).
    ResourceRead(Exchange),
    /// A server's request for a sampled message, put to the `cosmos proxy` client whose call was
    /// in flight (`sampling/createMessage`): `asked` holds the request's parameters, the result
    /// the client's reply (its text; `structured` the whole reply), or the error that declined it.
    Sampled(Exchange),
    /// A server's log message passed to a `cosmos proxy` client (`notifications/message`):
    /// `asked` holds `level` and `logger`, the result the message's data as text.
    ServerLog(Exchange),
    /// An event kind this build does not know (written by a newer version); kept, not fatal.
    #[serde(skip)]
    Unknown {
        /// The `kind` field.
        kind: String,
        /// The whole line.
        raw: Value,
    },
}

/// What passed between a `cosmos proxy` client and a server beside tool calls (prompt gets,
/// resource reads, samplings, log messages): not a step of the run, counted by no metric.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Exchange {
    /// The server.
    pub server: String,
    /// What was asked (or said), as the kind's doc line names it.
    #[serde(default)]
    pub asked: Box<Value>,
    /// What came back, capped as a tool's result is.
    #[serde(default)]
    pub result: Observation,
    /// How long it took (0 for a notification).
    #[serde(default)]
    pub latency_ms: u64,
    /// Why nothing came back, when nothing did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The own name a resource read goes by where it stands as a tool call (a world model's
/// memory, wm-eval): `SERVER:resources/read`, with the one argument `uri`.
pub const RESOURCE_READ_TOOL: &str = "resources/read";

impl Exchange {
    /// A resource read (`resource_read`) as the read-only tool call it stands for, so world
    /// models learn and predict it like one: the tool, its arguments (`{"uri": …}`) and the real
    /// result (a failure as an error result). `None` when `asked` names no URI.
    pub fn as_read_call(&self) -> Option<(ToolInfo, Value, Observation)> {
        let uri = self.asked.get("uri")?.as_str()?;
        let tool = ToolInfo {
            name: format!("{}:{RESOURCE_READ_TOOL}", self.server),
            description: format!(
                "Reads the resource at `uri` from the {} server (MCP resources/read).",
                self.server
            ),
            input_schema: ToolSchema::new(serde_json::json!({
                "type": "object",
                "properties": {"uri": {"type": "string"}},
                "required": ["uri"],
            })),
            output_schema: None,
            annotations: Some(Box::new(serde_json::json!({"readOnlyHint": true}))),
            ..Default::default()
        };
        let real = match &self.error {
            Some(e) => Observation {
                text: e.clone(),
                is_error: true,
                ..Default::default()
            },
            None => self.result.clone(),
        };
        Some((tool, serde_json::json!({ "uri": uri }), real))
    }
}

/// Every kind name [`EventBody`] knows, so the reader can tell unknown from malformed.
pub const KNOWN_KINDS: &[&str] = &[
    "phase",
    "llm_call",
    "node_added",
    "node_simulated",
    "node_evaluated",
    "backpropagated",
    "plan_selected",
    "node_grounded",
    "search_finished",
    "tool_called",
    "answer",
    "judge_scored",
    "error",
    "decision_rejected",
    "call_simulated",
    "planner_decided",
    "node_probed",
    "probe_called",
    "run_finished",
    "annotation",
    "recheck",
    "call_progress",
    "elicitation",
    "prompt_got",
    "resource_read",
    "sampled",
    "server_log",
];

impl EventBody {
    /// The root node `#0` of a tree or chain (no action).
    pub fn root() -> Self {
        EventBody::NodeAdded {
            node: 0,
            parent: None,
            depth: 0,
            action: None,
            prior: None,
        }
    }

    /// The `kind` name.
    pub fn kind(&self) -> &str {
        match self {
            EventBody::Phase { .. } => "phase",
            EventBody::LlmCall { .. } => "llm_call",
            EventBody::NodeAdded { .. } => "node_added",
            EventBody::NodeSimulated { .. } => "node_simulated",
            EventBody::NodeEvaluated { .. } => "node_evaluated",
            EventBody::Backpropagated { .. } => "backpropagated",
            EventBody::PlanSelected { .. } => "plan_selected",
            EventBody::NodeGrounded { .. } => "node_grounded",
            EventBody::SearchFinished { .. } => "search_finished",
            EventBody::ToolCalled { .. } => "tool_called",
            EventBody::Answer { .. } => "answer",
            EventBody::JudgeScored { .. } => "judge_scored",
            EventBody::SourceScored { .. } => "source_scored",
            EventBody::Error { .. } => "error",
            EventBody::DecisionRejected { .. } => "decision_rejected",
            EventBody::CallSimulated { .. } => "call_simulated",
            EventBody::PlannerDecided { .. } => "planner_decided",
            EventBody::NodeProbed { .. } => "node_probed",
            EventBody::ProbeCalled { .. } => "probe_called",
            EventBody::RunFinished { .. } => "run_finished",
            EventBody::Annotation { .. } => "annotation",
            EventBody::Recheck { .. } => "recheck",
            EventBody::Routed { .. } => "routed",
            EventBody::CallProgress { .. } => "call_progress",
            EventBody::Elicitation { .. } => "elicitation",
            EventBody::PromptGot(_) => "prompt_got",
            EventBody::ResourceRead(_) => "resource_read",
            EventBody::Sampled(_) => "sampled",
            EventBody::ServerLog(_) => "server_log",
            EventBody::Unknown { kind, .. } => kind,
        }
    }

    /// The tree node this event is about, if any (for "next event of the selected node").
    pub fn node(&self) -> Option<NodeId> {
        match self {
            EventBody::NodeAdded { node, .. }
            | EventBody::NodeSimulated { node, .. }
            | EventBody::NodeEvaluated { node, .. }
            | EventBody::NodeProbed { node, .. }
            | EventBody::NodeGrounded { node, .. }
            | EventBody::Routed { node, .. }
            | EventBody::ProbeCalled { node, .. } => Some(*node),
            EventBody::Annotation { node, .. } => *node,
            EventBody::Backpropagated { path, .. } => path.last().copied(),
            EventBody::ToolCalled { node, .. } => *node,
            _ => None,
        }
    }

    /// True for events that mark a failure: an erroring real call, an error, a failed run.
    pub fn is_failure(&self) -> bool {
        match self {
            EventBody::ToolCalled { result, error, .. } => result.is_error || error.is_some(),
            EventBody::LlmCall { error, .. } => error.is_some(),
            EventBody::Error { .. } | EventBody::DecisionRejected { .. } => true,
            EventBody::RunFinished { status, .. } => *status != RunStatus::Completed,
            EventBody::PromptGot(x) | EventBody::ResourceRead(x) | EventBody::Sampled(x) => {
                x.error.is_some() || x.result.is_error
            }
            _ => false,
        }
    }
}

/// Which [`Action`] a node's is, without its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    /// A tool call.
    ToolCall,
    /// Finish.
    Finish,
}

impl Action {
    /// Which action this is.
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::ToolCall { .. } => ActionKind::ToolCall,
            Action::Finish { .. } => ActionKind::Finish,
        }
    }

    /// The tool name for a call, `None` for finish.
    pub fn tool(&self) -> Option<&str> {
        match self {
            Action::ToolCall { tool, .. } => Some(tool),
            Action::Finish { .. } => None,
        }
    }
}

/// Events that may follow `run_finished`: `cosmos judge`'s phase, call, scores or error, a
/// person's probes of a node (their tokens inside them: never the run's cost) and notes, and
/// `cosmos recheck`'s findings.
pub fn is_judgement(body: &EventBody) -> bool {
    matches!(
        body,
        EventBody::Phase {
            phase: Phase::Judge
        } | EventBody::LlmCall {
            role: Role::Judge,
            ..
        } | EventBody::JudgeScored { .. }
            | EventBody::Error { .. }
            | EventBody::NodeProbed { .. }
            | EventBody::ProbeCalled { .. }
            | EventBody::Recheck { .. }
            | EventBody::Annotation { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_source_reads_as_written_and_an_unknown_one_is_kept() {
        for (source, text) in [
            (ErrorSource::WorldModel, "world_model"),
            (ErrorSource::Otel, "otel"),
            (ErrorSource::Other("judge2".into()), "judge2"),
        ] {
            let json = serde_json::to_string(&source).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<ErrorSource>(&json).unwrap(), source);
            assert_eq!(source.as_str(), text);
        }
    }

    #[test]
    fn every_ending_but_a_clean_finish_is_marked_and_not_clean() {
        for ending in Ending::ALL {
            let totals = Totals {
                ending: Some(ending),
                ..Default::default()
            };
            assert_eq!(
                totals.clean(RunStatus::Completed),
                ending.clean(),
                "{ending:?}"
            );
            // A stop is named by its status (`interrupted`), every other ending by its mark.
            if ending != Ending::Interrupted {
                assert_eq!(totals.marks().is_empty(), ending.clean(), "{ending:?}");
            }
        }
        assert!(!Ending::SearchExhausted.clean());
        let failed_call = Totals {
            tool_calls: 2000,
            tool_errors: 1,
            ending: Some(Ending::PlannerFinished),
            ..Default::default()
        };
        assert!(!failed_call.clean(RunStatus::Completed));
        assert_eq!(failed_call.marks(), "✗1");
    }

    #[test]
    fn a_world_models_description_reads_as_it_is_written() {
        let info = WorldModelInfo {
            name: "cached(llm)".into(),
            details: BTreeMap::from([
                ("model".to_string(), Value::from("m")),
                ("hits".to_string(), Value::from(3)),
            ]),
        };
        let text = serde_json::to_string(&info).unwrap();
        assert_eq!(text, r#"{"name":"cached(llm)","hits":3,"model":"m"}"#);
        assert_eq!(serde_json::from_str::<WorldModelInfo>(&text).unwrap(), info);
        let refused = |text: &str| serde_json::from_str::<WorldModelInfo>(text).unwrap_err();
        assert!(
            refused(r#"{"model":"m"}"#)
                .to_string()
                .contains("missing field `name`")
        );
        assert!(
            refused(r#"{"name":"a","name":"b"}"#)
                .to_string()
                .contains("duplicate field `name`")
        );
        assert!(
            refused(r#"{"name":3}"#)
                .to_string()
                .contains("invalid type")
        );
        assert!(
            refused(r#"{"name":"a","x":1e999}"#)
                .to_string()
                .contains("out of range")
        );
    }
}
