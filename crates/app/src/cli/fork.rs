//! `cosmos fork RUN --at STEP`: a new run that takes the original's steps before STEP as its
//! own history (replayed, never called again) and decides afresh from there, with any of
//! `run`'s options changed. Its calls are real, or answered from the original's recording
//! (`--tools recorded`), a call the recording lacks going where `--on-miss` says.

use crate::cli::output::errln;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

use serde_json::Value;

use super::run::{AgentArg, PlanRuleArg, RunOptions, run_spec};
use cosmos_engine::agent::OnMiss;
use cosmos_engine::agent::TaskSource;
use cosmos_engine::fork_source::{Original, Tools};
use cosmos_trajectory::event::{AgentKind, Header};
use cosmos_trajectory::sanitize::inert;

/// Where the fork's calls go (`--tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolsArg {
    /// The real servers answer every call after the fork point.
    Real,
    /// A call the original made (same tool, same arguments) is answered from its recording,
    /// recorded as replayed; any other goes where --on-miss says.
    Recorded,
}

/// Where a call the recording lacks goes (`--on-miss`, with `--tools recorded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnMissArg {
    /// The fork ends there, failed, naming the call.
    Error,
    /// The real server answers it.
    Real,
    /// The world model answers it, recorded as a simulation that no real-call metric counts.
    WorldModel,
}

impl From<OnMissArg> for OnMiss {
    fn from(arg: OnMissArg) -> Self {
        match arg {
            OnMissArg::Error => OnMiss::Error,
            OnMissArg::Real => OnMiss::Real,
            OnMissArg::WorldModel => OnMiss::WorldModel,
        }
    }
}

/// `cosmos fork` options.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The run to fork.
    pub run: PathBuf,
    /// The first step the fork decides afresh; the steps before it are the original's,
    /// replayed (1 replays nothing).
    #[arg(long, value_name = "STEP")]
    pub at: u64,
    /// The agent [default: the original's].
    #[arg(long, value_enum)]
    pub agent: Option<AgentArg>,
    /// MCP servers (the original's are started by name); not needed with --tools recorded
    /// unless --on-miss real.
    #[arg(long)]
    pub mcp_config: Option<PathBuf>,
    /// Where calls after the fork point go.
    #[arg(long, value_enum, default_value = "real")]
    pub tools: ToolsArg,
    /// With --tools recorded: where a call the original never made goes.
    #[arg(long, value_enum)]
    pub on_miss: Option<OnMissArg>,
    /// The fork's file name in --out (the explorer names the fork it starts, to follow it);
    /// default `<time>_<task>_<agent>_<world model>.jsonl`.
    #[arg(long, hide = true)]
    pub file_name: Option<String>,
    /// Everything else, as `cosmos run` takes it; a SPIRAL fork of a SPIRAL run keeps the
    /// original's search settings unless given here.
    #[command(flatten)]
    pub options: RunOptions,
}

/// A SPIRAL fork of a SPIRAL run searches as the original did unless told otherwise: every
/// search setting not given on the command line is the original's, as its header records it.
fn inherit_search_settings(options: &mut RunOptions, header: &Header) {
    let s = &header.agent.settings;
    let count = |key: &str| s.get(key).and_then(Value::as_u64);
    let number = |key: &str| s.get(key).and_then(Value::as_f64);
    options.iterations = options
        .iterations
        .or(count("iterations").map(|v| v as usize));
    options.max_depth = options.max_depth.or(count("max_depth").map(|v| v as u32));
    options.exploration = options.exploration.or(number("c"));
    options.candidates = options.candidates.or(count("k").map(|v| v as usize));
    options.alpha = options.alpha.or(number("alpha"));
    options.concurrency = options
        .concurrency
        .or(count("concurrency").map(|v| v as usize));
    options.revisions = options.revisions.or(count("revisions").map(|v| v as usize));
    options.retries = options.retries.or(count("retries").map(|v| v as usize));
    options.widen = options.widen.or(count("widen").map(|v| v as u32));
    options.plan_rule = options
        .plan_rule
        .or(match s.get("plan_rule").and_then(Value::as_str) {
            Some("best_mean") => Some(PlanRuleArg::BestMean),
            Some("most_visited") => Some(PlanRuleArg::MostVisited),
            _ => None,
        });
    options.skip_settled |= s.get("settled").and_then(Value::as_str) == Some("skip");
}

/// Forks a run.
pub fn run(mut args: ForkArgs) -> Result<ExitCode> {
    let original = Original::read(&args.run)?;
    let tools = match (args.tools, args.on_miss) {
        (ToolsArg::Real, Some(_)) => {
            bail!("--on-miss is for --tools recorded: with real tools nothing is missed")
        }
        (ToolsArg::Real, None) => Tools::Real,
        (ToolsArg::Recorded, on_miss) => {
            Tools::Recorded(on_miss.map_or(OnMiss::Error, OnMiss::from))
        }
    };
    let plan = original.plan(args.at, tools)?;
    if let Some(first) = original.unreadable.first() {
        errln!(
            "cosmos: warning: {}: {} line(s) could not be read and were skipped (line {}: {}); \
             the history to step {} is whole",
            args.run.display(),
            original.unreadable.len(),
            first.line,
            cosmos_trajectory::sanitize::inert(&first.reason),
            args.at.saturating_sub(1)
        );
    }
    let agent = match (args.agent, original.header.agent.kind) {
        (Some(agent), _) => agent.into(),
        (None, kind @ (AgentKind::React | AgentKind::PlanExec | AgentKind::Spiral)) => kind,
        (None, kind) => bail!(
            "{} was recorded by {}, not by one of cosmos's agents: pass --agent",
            args.run.display(),
            kind.as_str()
        ),
    };
    if plan.offline.is_none() && args.mcp_config.is_none() {
        bail!(
            "the fork's calls reach real servers: pass --mcp-config (or --tools recorded with \
             --on-miss error|world-model to start none)"
        );
    }
    // The servers start fresh: what the replayed steps did to a server's state is not done
    // again. Said before the run, so nobody reads a stateful fork as a faithful one.
    if tools == Tools::Real {
        let changed: Vec<String> = plan
            .history()
            .iter()
            .filter(|c| !original.header.tool(&c.tool).is_some_and(|t| t.read_only()))
            .map(|c| format!("{}. {}", c.step, c.tool))
            .collect();
        if !changed.is_empty() {
            errln!(
                "{}",
                inert(&format!(
                    "cosmos: warning: the servers start fresh; these replayed steps may have \
                     changed a server's state in the original and are not made again: {} \
                     (--tools recorded answers the calls that follow from the recording)",
                    changed.join(", ")
                ))
            );
        }
    }
    if agent == AgentKind::Spiral && original.header.agent.kind == AgentKind::Spiral {
        inherit_search_settings(&mut args.options, &original.header);
    }
    // Routing is the original's too when the fork's agent rehearses, unless told otherwise:
    // its one threshold, or its routing file (read again, and refused if it changed since).
    let recorded_routing = original.header.agent.settings.get("routing").cloned();
    let inherits = matches!(agent, AgentKind::Spiral | AgentKind::PlanExec)
        && args.options.go_real_below.is_none()
        && args.options.routing.is_none();
    if inherits {
        args.options.go_real_below = original.header.agent.go_real_below();
        args.options.routing = recorded_routing
            .as_ref()
            .and_then(|r| r["file"].as_str())
            .map(PathBuf::from);
    }
    let task = TaskSource::Recorded {
        info: original.header.task.clone(),
        servers: original.servers(),
    };
    let mut spec = args.options.spec(agent, args.mcp_config.clone(), task)?;
    if let (true, Some(now), Some(then)) = (inherits, &spec.routing, &recorded_routing)
        && now.digest != then["digest"].as_str().unwrap_or_default()
    {
        anyhow::bail!(
            "the routing file {} changed since the original run used it (its digest was {}): \
             pass --routing FILE to route the fork by it as it is now",
            now.path,
            then["digest"].as_str().unwrap_or("not recorded")
        );
    }
    spec.fork = Some(plan);
    spec.file_name = args.file_name.clone();
    run_spec(spec, &args.options)
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use serde_json::json;

    use super::*;
    use cosmos_trajectory::synthetic::{self, Spec};

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        fork: ForkArgs,
    }

    #[test]
    fn a_spiral_fork_keeps_the_originals_search_settings_unless_given() {
        let mut header = synthetic::header(&Spec::default());
        header.agent.settings = [
            ("iterations", json!(7)),
            ("k", json!(2)),
            ("alpha", json!(0.25)),
            ("plan_rule", json!("most_visited")),
            ("settled", json!("skip")),
            ("revisions", json!(1)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let parsed =
            Line::try_parse_from(["cosmos", "run.jsonl", "--at", "2", "--candidates", "4"])
                .unwrap();
        let mut options = parsed.fork.options;
        inherit_search_settings(&mut options, &header);
        assert_eq!(options.iterations, Some(7));
        assert_eq!(options.candidates, Some(4), "given on the command line");
        assert_eq!(options.alpha, Some(0.25));
        assert_eq!(options.plan_rule, Some(PlanRuleArg::MostVisited));
        assert!(options.skip_settled);
        assert_eq!(options.revisions, Some(1));
        assert_eq!(options.max_depth, None, "not recorded: the defaults decide");
    }
}
