//! A sweep's spec (TOML) and the cells it makes: each (task, configuration, repeat) with an id
//! derived from its content and the `cosmos run` arguments that run it, all checked before
//! anything starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde::Deserialize;

use crate::cli::run::RunArgs;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    mcp_config: PathBuf,
    #[serde(default)]
    config: Option<PathBuf>,
    #[serde(default = "one")]
    repeats: usize,
    /// Judge every finished cell with `config`'s judge role and `[judge]` settings.
    #[serde(default)]
    judge: bool,
    /// Servers of `mcp_config` that hold no state between calls: each worker starts them once
    /// for all its cells (beside those whose entry says `"cosmos": {"shared": true}`).
    #[serde(default)]
    shared_servers: Vec<String>,
    tasks: Vec<TaskSet>,
    configs: Vec<toml::Table>,
}

fn one() -> usize {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSet {
    file: PathBuf,
    #[serde(default)]
    ids: Vec<String>,
}

/// One (task, configuration, repeat).
#[derive(Debug, Clone)]
pub struct Cell {
    /// Derived from the task, the configuration's settings and the repeat.
    pub id: String,
    /// The task.
    pub task_id: String,
    /// The configuration's name.
    pub config: String,
    /// 1-based.
    pub repeat: usize,
    /// `cosmos run` arguments for it.
    pub(super) args: Vec<String>,
    /// A rough relative cost, to balance shards.
    pub(super) cost: f64,
}

impl Cell {
    /// Adds `cosmos run` arguments that are not part of the cell's identity (where its run is
    /// also sent).
    pub fn add_args(&mut self, args: Vec<String>) {
        self.args.extend(args);
    }

    /// The run file's name.
    pub fn file_name(&self) -> String {
        let clean = |s: &str| cosmos_trajectory::writer::file_safe(s, 60);
        format!(
            "{}_{}_{}_r{}.jsonl",
            self.id,
            clean(&self.task_id),
            clean(&self.config),
            self.repeat
        )
    }
}

/// A stable id for a cell's content (FNV-1a, 48 bits shown).
fn fingerprint(text: &str) -> String {
    let h = cosmos_trajectory::fnv::fnv1a(text.as_bytes());
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

/// The spec file, read (within a config file's cap) and parsed.
fn read_spec(spec_path: &Path) -> Result<Spec> {
    let text = cosmos_trajectory::small_file::read_string_within(
        spec_path,
        cosmos_trajectory::small_file::CONFIG_BYTES,
    )
    .with_context(|| format!("reading {}", spec_path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", spec_path.display()))
}

/// The servers the spec names as stateless (`shared_servers`), each checked to be a server of
/// its MCP config that cosmos starts.
pub fn shared_servers(spec_path: &Path) -> Result<Vec<String>> {
    let spec = read_spec(spec_path)?;
    if !spec.shared_servers.is_empty() {
        let base = spec_path.parent().unwrap_or(Path::new("."));
        let mcp = cosmos_engine::mcp::McpConfig::load(&base.join(&spec.mcp_config))?;
        for name in &spec.shared_servers {
            let server = mcp.get(name).context("in shared_servers")?;
            if server.transport_name() != "stdio" {
                bail!(
                    "shared_servers: \"{name}\" is a \"url\" server, already one process for \
                     every run; only servers cosmos starts are shared"
                );
            }
        }
    }
    Ok(spec.shared_servers)
}

/// When the spec asks for its cells to be judged: the configuration file whose judge role
/// and `[judge]` settings judge them (`None` when the spec names none: the environment's).
pub fn judging(spec_path: &Path) -> Result<Option<Option<PathBuf>>> {
    let spec = read_spec(spec_path)?;
    let base = spec_path.parent().unwrap_or(Path::new("."));
    Ok(spec.judge.then(|| spec.config.map(|c| base.join(c))))
}

/// The cells of a spec, in spec order, and the tasks left out (a task set without `ids` takes
/// every task whose servers the MCP config has; the others are listed with why).
pub fn cells(spec_path: &Path) -> Result<(Vec<Cell>, Vec<String>)> {
    let spec = read_spec(spec_path)?;
    let base = spec_path.parent().unwrap_or(Path::new("."));
    if spec.repeats == 0 {
        bail!("repeats = 0: nothing to run");
    }
    let mut names = std::collections::BTreeSet::new();
    for (c, config) in spec.configs.iter().enumerate() {
        let name = config
            .get("name")
            .and_then(|v| v.as_str())
            .with_context(|| format!("[[configs]] number {}: needs name = \"…\"", c + 1))?;
        if !names.insert(name) {
            bail!("two [[configs]] are named {name:?}");
        }
    }
    let mcp = cosmos_engine::mcp::McpConfig::load(&base.join(&spec.mcp_config))?;
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for set in &spec.tasks {
        let file = base.join(&set.file);
        let ids = if set.ids.is_empty() {
            let mut ids = Vec::new();
            for task in cosmos_engine::task::load(&file)? {
                let missing: Vec<&str> = task
                    .servers
                    .iter()
                    .filter(|s| mcp.get(s).is_err())
                    .map(String::as_str)
                    .collect();
                if missing.is_empty() {
                    ids.push(task.id);
                } else {
                    skipped.push(format!(
                        "{} (needs {}, not in {})",
                        task.id,
                        missing.join(", "),
                        spec.mcp_config.display()
                    ));
                }
            }
            ids
        } else {
            set.ids.clone()
        };
        for task_id in ids {
            for config in &spec.configs {
                let name = config
                    .get("name")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                let mut args = vec![
                    "run".to_string(),
                    "--no-tui".into(),
                    "--mcp-config".into(),
                    base.join(&spec.mcp_config).display().to_string(),
                    "--task".into(),
                    file.display().to_string(),
                    "--task-id".into(),
                    task_id.clone(),
                    "--label".into(),
                    name.clone(),
                ];
                if let Some(cfg) = &spec.config {
                    args.extend(["--config".into(), base.join(cfg).display().to_string()]);
                }
                let mut settings = BTreeMap::new();
                for (key, value) in config.iter().filter(|(k, _)| k.as_str() != "name") {
                    settings.insert(key.clone(), value.to_string());
                    let flag = format!("--{}", key.replace('_', "-"));
                    let paths = matches!(key.as_str(), "memory_from" | "config" | "routing");
                    let text = |v: &toml::Value| match v {
                        toml::Value::String(s) if paths => base.join(s).display().to_string(),
                        toml::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    match value {
                        toml::Value::Boolean(true) => args.push(flag),
                        toml::Value::Boolean(false) => {}
                        toml::Value::Array(items) => {
                            for item in items {
                                args.extend([flag.clone(), text(item)]);
                            }
                        }
                        other => args.extend([flag, text(other)]),
                    }
                }
                let agent = config.get("agent").and_then(|v| v.as_str()).unwrap_or("");
                let iterations = config
                    .get("iterations")
                    .and_then(|v| v.as_integer())
                    .unwrap_or(50) as f64;
                let cost = match agent {
                    "react" => 1.0,
                    "plan-exec" | "plan_exec" => 2.0,
                    _ => 1.0 + iterations / 5.0,
                };
                for repeat in 1..=spec.repeats {
                    let content = format!(
                        "{}|{task_id}|{}|{repeat}",
                        set.file.display(),
                        serde_json::to_string(&settings).unwrap_or_default()
                    );
                    out.push(Cell {
                        id: fingerprint(&content),
                        task_id: task_id.clone(),
                        config: name.clone(),
                        repeat,
                        args: args.clone(),
                        cost,
                    });
                }
            }
        }
    }
    // Every cell's arguments are checked before anything starts.
    for cell in &out {
        parse_run(&cell.args)
            .with_context(|| format!("[[configs]] {:?} for task {}", cell.config, cell.task_id))?;
    }
    Ok((out, skipped))
}

#[derive(Parser)]
struct RunLine {
    #[command(flatten)]
    run: RunArgs,
}

pub(super) fn parse_run(args: &[String]) -> Result<RunArgs> {
    let mut line = vec!["cosmos".to_string()];
    line.extend(args.iter().skip(1).cloned());
    Ok(RunLine::try_parse_from(line)
        .map_err(|e| anyhow::anyhow!("{}", e.to_string().trim()))?
        .run)
}
