//! Probing a node of a recorded run (`cosmos replay`, `p` and `P` on a tree node): a named world
//! model simulates the node's call in the node's context (the task's request and the steps on
//! the path to it, with the observations the search had), or the call is made for real against
//! its server. Either is appended to the run's file after `run_finished` as an event of its own
//! (`node_probed`, `probe_called`), like the judge's, so it replays and validates; the probe's
//! tokens stay in its event and never count as the run's cost. A person's note (`A`, an
//! `annotation`) is appended the same way, through the same writer.
//!
//! A node's call simulated by a named world model in the node's context (the path's observations),
//! or made for real against its one server; appended to the file after `run_finished`
//! (`node_probed`, `probe_called`: `trajectory::reader::is_judgement` lets them follow it). The
//! explorer runs these as background work (`ProbeJob::Simulate`, `ProbeJob::Real`) after a picker or a
//! question (`tui/overlays/picker.rs`, `confirm::ConfirmCall`). A person's note (`annotate`, an
//! `annotation` event; `ProbeJob::Annotate` from `A`) is appended through the same writer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::config::Config;
use crate::mcp::mcp_json::McpConfig;
use crate::mcp::pool::{McpPool, Timeouts};
use crate::world_model::named::{self, BuiltInOptions};
use crate::world_model::{HistoryStep, SimRequest, tokens_of};
use cosmos_trajectory::event::{Action, Event, EventBody, NodeId, Observation, Role, ToolInfo};
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::writer::Writer;

/// Where probes find their world models and servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeSetup {
    /// `cosmos.toml`: endpoints and `[world_models.NAME]`.
    pub config: Option<PathBuf>,
    /// The MCP servers, for calls made for real.
    pub mcp_config: Option<PathBuf>,
}

/// Why a call for real cannot be made, before anyone is asked to confirm one.
const NO_SERVERS: &str =
    "calls for real need the servers: open the run with `cosmos replay FILE --mcp-config mcp.json`";

impl ProbeSetup {
    /// Why `P` cannot make a call for real (no MCP config), if it cannot.
    pub fn cannot_call_for_real(&self) -> Option<&'static str> {
        self.mcp_config.is_none().then_some(NO_SERVERS)
    }

    /// The world models a person can pick: the built-in `llm` when its role has an endpoint,
    /// `memory` (the runs beside the probed one), then the config's named ones. A config that
    /// cannot be read is an error naming it, never a shorter list.
    pub fn world_models(&self) -> Result<Vec<String>> {
        let config = Config::load(self.config.as_deref())?;
        let mut names = vec!["memory".to_string()];
        if !config.llm.endpoint(Role::WorldModel).base_url.is_empty() {
            names.insert(0, "llm".to_string());
        }
        names.extend(config.world_models.keys().cloned());
        Ok(names)
    }
}

/// The call a node stands for, with the steps on its path (their observations as the search had
/// them: simulated, or real when executed).
fn node_call(run: &Run, node: NodeId) -> Result<(String, serde_json::Value, Vec<HistoryStep>)> {
    let slot = run
        .slot_of(node)
        .with_context(|| format!("no node #{node} in this run"))?;
    let call_of = |slot: u32| match &run.event(run.nodes()[slot as usize].added_at as usize).body {
        EventBody::NodeAdded {
            action: Some(Action::ToolCall { tool, arguments }),
            ..
        } => Some((tool.clone(), arguments.clone())),
        _ => None,
    };
    let (tool, arguments) =
        call_of(slot).with_context(|| format!("node #{node} is not a tool call"))?;
    let mut path = Vec::new();
    let mut at = run.nodes()[slot as usize].parent;
    while let Some(s) = at {
        path.push(s);
        at = run.nodes()[s as usize].parent;
    }
    path.reverse();
    let state = cosmos_trajectory::fold::TreeState::fold(run, run.len());
    let history = path
        .into_iter()
        .filter_map(|s| {
            let (tool, arguments) = call_of(s)?;
            let real = real_of(run, run.nodes()[s as usize].id);
            let simulated = state
                .node(s)
                .and_then(|d| run.simulated_observation(d.simulated));
            Some(HistoryStep {
                tool,
                arguments,
                observation: real.or(simulated)?,
                ..Default::default()
            })
        })
        .collect();
    Ok((tool, arguments, history))
}

fn tool_info(run: &Run, tool: &str) -> ToolInfo {
    run.header
        .tools
        .iter()
        .find(|t| t.name == tool)
        .cloned()
        .unwrap_or_else(|| ToolInfo {
            name: tool.to_string(),
            description: String::new(),
            input_schema: cosmos_trajectory::event::ToolSchema::new(serde_json::json!({})),
            ..Default::default()
        })
}

/// Simulates node `node` of the run at `path` with the world model `name`, and appends the
/// result (a prediction or the failure) to the file.
pub async fn simulate(path: &Path, node: NodeId, name: &str, setup: &ProbeSetup) -> Result<Event> {
    let run = Run::open(path)?;
    let (tool, arguments, history) = node_call(&run, node)?;
    let mut config = Config::load(setup.config.as_deref())?;
    let folder = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let options = BuiltInOptions {
        memory_from: vec![folder],
        command: None,
        command_timeout: Duration::from_secs(60),
        cached: false,
        converted: Default::default(),
    };
    let named = named::resolve(name, &mut config, &options)?
        .context("`none` is not a world model to probe with")?;
    let built = named.build()?;
    // A memory world model must not answer from this very run.
    let model = built.for_calls_of(path);
    let info = tool_info(&run, &tool);
    let request = SimRequest {
        tool: &info,
        arguments: &arguments,
        user_request: &run.header.task.request,
        history: &history,
        // A probe asks about a node's call without the run's state: the belief would need the
        // node's whole path replayed on the header's start state.
        state: None,
    };
    let start = std::time::Instant::now();
    let body = match model.simulate(request).await {
        Ok(sim) => EventBody::NodeProbed {
            node,
            world_model: name.to_string(),
            tokens: sim.tokens(),
            observation: Some(sim.observation),
            error: None,
            latency_ms: sim.latency.as_millis() as u64,
        },
        Err(failure) => EventBody::NodeProbed {
            node,
            world_model: name.to_string(),
            observation: None,
            error: Some(failure.message),
            latency_ms: start.elapsed().as_millis() as u64,
            tokens: tokens_of(&failure.llm),
        },
    };
    append(
        path,
        &run,
        Redactor::with_secrets(config.llm.secrets()),
        body,
    )
}

/// Makes node `node`'s call for real against its server (started from `setup.mcp_config` for
/// this call only), and appends the result to the file.
pub async fn call_for_real(path: &Path, node: NodeId, setup: &ProbeSetup) -> Result<Event> {
    let run = Run::open(path)?;
    let (tool, arguments, _) = node_call(&run, node)?;
    let mcp_path = setup.mcp_config.as_deref().context(NO_SERVERS)?;
    let mcp = McpConfig::load(mcp_path)?;
    let server = mcp
        .servers
        .iter()
        .find(|s| cosmos_trajectory::event::own_tool_name(&tool, &s.name).is_some())
        .with_context(|| format!("no server in {} offers {tool}", mcp_path.display()))?
        .clone();
    // A stateful server answers a probe on a fresh copy of its state.
    let mut servers = [server];
    let _sandboxes = crate::mcp::sandbox::prepare(&mut servers)?;
    let [server] = servers;
    let (pool, failures) =
        McpPool::connect(std::slice::from_ref(&server), Timeouts::default()).await;
    if let Some(f) = failures.first() {
        bail!("server {} did not start: {}", server.name, f.message);
    }
    let (served_by, outcome) = pool.call(&tool, &arguments).await;
    pool.shutdown().await;
    let body = EventBody::ProbeCalled {
        node,
        tool,
        server: served_by,
        arguments: Box::new(arguments),
        result: outcome.result,
        latency_ms: outcome.latency.as_millis() as u64,
        error: outcome.error,
    };
    append(
        path,
        &run,
        Redactor::with_secrets(mcp.secrets.iter().cloned()),
        body,
    )
}

/// Appends a person's note (an `annotation` event) to a finished run, with the endpoints'
/// keys redacted from its text, at the run's clock `t_ms`.
pub fn annotate(path: &Path, note: EventBody, t_ms: u64, setup: &ProbeSetup) -> Result<Event> {
    if !matches!(note, EventBody::Annotation { .. }) {
        bail!("only an annotation is appended as a note");
    }
    // A config that cannot be read stops the note: its keys could not be kept out of it.
    let secrets = Config::load(setup.config.as_deref())?.llm.secrets();
    let mut writer = Writer::append(path, Redactor::with_secrets(secrets))?;
    writer.write(t_ms, note)
}

/// Who writes a note: `COSMOS_USER`, else the login name, else `someone`.
pub fn who() -> String {
    ["COSMOS_USER", "USER", "USERNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "someone".to_string())
}

fn append(path: &Path, run: &Run, redactor: Redactor, body: EventBody) -> Result<Event> {
    let mut writer = Writer::append(path, redactor)?;
    let t_ms = run.briefs().last().map_or(0, |e| e.t_ms);
    writer.write(t_ms, body)
}

/// The real result a probe's simulation is compared with: the node's real call, if made.
pub fn real_of(run: &Run, node: NodeId) -> Option<Observation> {
    let slot = run.slot_of(node)?;
    run.steps()
        .iter()
        .rev()
        .find(|s| s.node == Some(slot))
        .and_then(|s| {
            cosmos_trajectory::recorded_call::RecordedCall::of(&run.event(s.event as usize).body)
                .map(|call| call.result.clone())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_llm_world_model_is_offered_only_with_an_endpoint_and_real_calls_only_with_servers() {
        let dir = tempfile::tempdir().unwrap();
        let with = dir.path().join("with.toml");
        std::fs::write(
            &with,
            "[roles.world_model]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        )
        .unwrap();
        let setup = ProbeSetup {
            config: Some(with),
            mcp_config: None,
        };
        assert_eq!(setup.world_models().unwrap(), ["llm", "memory"]);
        assert_eq!(setup.cannot_call_for_real(), Some(NO_SERVERS));
        let without = dir.path().join("without.toml");
        std::fs::write(&without, "[default]\nmodel = \"m\"\n").unwrap();
        let setup = ProbeSetup {
            config: Some(without),
            mcp_config: Some(dir.path().join("mcp.json")),
        };
        assert_eq!(setup.cannot_call_for_real(), None);
        // Only the environment could still give the role an address.
        let offered = setup.world_models().unwrap();
        assert_eq!(
            offered.contains(&"llm".to_string()),
            std::env::var("OPENAI_BASE_URL").is_ok_and(|u| !u.is_empty()),
            "{offered:?}"
        );
    }

    #[test]
    fn a_config_that_cannot_be_read_is_said_not_swallowed() {
        let dir = tempfile::tempdir().unwrap();
        let broken = dir.path().join("broken.toml");
        std::fs::write(&broken, "[world_models.x\nkind = ").unwrap();
        let setup = ProbeSetup {
            config: Some(broken),
            mcp_config: None,
        };
        let err = format!("{:#}", setup.world_models().unwrap_err());
        assert!(err.contains("broken.toml"), "{err}");
    }

    #[test]
    fn only_an_annotation_is_appended_as_a_note_and_nothing_else_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        std::fs::write(&path, "").unwrap();
        let not_a_note = EventBody::Answer {
            text: "sneaked in".into(),
        };
        let err = annotate(&path, not_a_note, 0, &ProbeSetup::default()).unwrap_err();
        assert!(err.to_string().contains("only an annotation"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }
}
