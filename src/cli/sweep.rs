//! `cosmos sweep SPEC.toml`: the paper's experiment as one command. A spec names tasks,
//! configurations (an agent, a world model and `cosmos run`'s flags with underscores) and
//! repeats; each (task, configuration, repeat) is a cell with an id derived from its content,
//! and its run file is named after it. Rerunning the same spec into the same folder starts only
//! the cells without a finished run (a torn or interrupted one is set aside, not overwritten);
//! a cell whose servers would not start is retried with backoff; an agent's failure is a result.
//! `--shard I/N` takes a deterministic share, balanced by expected cost.
//!
//! ```toml
//! mcp_config = "mcp.json"
//! config = "cosmos.toml"      # optional: endpoints per role, [world_models.NAME]
//! repeats = 2
//! [[tasks]]
//! file = "tasks.json"
//! ids = ["time_mcp_000", "unit_converter_000"]   # optional: every task of the file
//! [[configs]]
//! name = "react"
//! agent = "react"
//! max_steps = 2
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use futures::StreamExt;
use serde::Deserialize;

use super::run::{RunArgs, prepare_or_stop};
use crate::agent::session;
use crate::sanitize::inert;
use crate::trajectory::event::RunStatus;
use crate::trajectory::listing::RunSummary;

/// `cosmos sweep` options.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The sweep's spec (TOML; paths in it are relative to it).
    pub spec: PathBuf,
    /// Folder for the runs (default: `runs/<spec name>` beside the spec).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cells run at once.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// This process's share of the cells: `I/N` (1-based), or `auto` (a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX with --shards N, or a Slurm array's SLURM_ARRAY_TASK_ID and
    /// SLURM_ARRAY_TASK_COUNT).
    #[arg(long)]
    pub shard: Option<String>,
    /// Shards, for `--shard auto` under Kubernetes.
    #[arg(long)]
    pub shards: Option<usize>,
    /// List the cells and their state (done, incomplete, missing) instead of running.
    #[arg(long)]
    pub status: bool,
    /// One progress line per cell (the only output so far: the live matrix view is not built).
    #[arg(long)]
    pub no_tui: bool,
    /// Print a cluster job that runs the sweep in `--shards N` shards instead of running it:
    /// `k8s` (an Indexed Job) or `slurm` (an `sbatch --array` script).
    #[arg(long, value_name = "k8s|slurm")]
    pub emit: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    mcp_config: PathBuf,
    #[serde(default)]
    config: Option<PathBuf>,
    #[serde(default = "one")]
    repeats: usize,
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
    args: Vec<String>,
    /// A rough relative cost, to balance shards.
    cost: f64,
}

impl Cell {
    /// The run file's name.
    pub fn file_name(&self) -> String {
        let clean = |s: &str| crate::trajectory::writer::file_safe(s, 60);
        format!(
            "{}_{}_{}_r{}.jsonl",
            self.id,
            clean(&self.task_id),
            clean(&self.config),
            self.repeat
        )
    }
}

/// FNV-1a, 64 bits: a stable id for a cell's content (not for security).
fn fingerprint(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", h & 0xffff_ffff_ffff)
}

/// The cells of a spec, in spec order.
pub fn cells(spec_path: &Path) -> Result<Vec<Cell>> {
    let text = std::fs::read_to_string(spec_path)
        .with_context(|| format!("reading {}", spec_path.display()))?;
    let spec: Spec =
        toml::from_str(&text).with_context(|| format!("parsing {}", spec_path.display()))?;
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
    let mut out = Vec::new();
    for set in &spec.tasks {
        let file = base.join(&set.file);
        let ids = if set.ids.is_empty() {
            crate::task::load(&file)?
                .into_iter()
                .map(|task| task.id)
                .collect()
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
                ];
                if let Some(cfg) = &spec.config {
                    args.extend(["--config".into(), base.join(cfg).display().to_string()]);
                }
                let mut settings = BTreeMap::new();
                for (key, value) in config.iter().filter(|(k, _)| k.as_str() != "name") {
                    settings.insert(key.clone(), value.to_string());
                    let flag = format!("--{}", key.replace('_', "-"));
                    let paths = matches!(key.as_str(), "memory_from" | "config");
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
    Ok(out)
}

#[derive(Parser)]
struct RunLine {
    #[command(flatten)]
    run: RunArgs,
}

fn parse_run(args: &[String]) -> Result<RunArgs> {
    let mut line = vec!["cosmos".to_string()];
    line.extend(args.iter().skip(1).cloned());
    Ok(RunLine::try_parse_from(line)
        .map_err(|e| anyhow::anyhow!("{}", e.to_string().trim()))?
        .run)
}

/// This process's share of `cells`: assigned by expected cost, heaviest first to the least
/// loaded shard (the same on every shard, so shards never overlap).
pub fn shard(cells: Vec<Cell>, index: usize, count: usize) -> Vec<Cell> {
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by(|&a, &b| cells[b].cost.total_cmp(&cells[a].cost).then(a.cmp(&b)));
    let mut load = vec![0.0_f64; count];
    let mut owner = vec![0; cells.len()];
    for i in order {
        let s = (0..count)
            .min_by(|&x, &y| load[x].total_cmp(&load[y]).then(x.cmp(&y)))
            .unwrap_or(0);
        load[s] += cells[i].cost;
        owner[i] = s;
    }
    cells
        .into_iter()
        .enumerate()
        .filter(|(i, _)| owner[*i] == index)
        .map(|(_, c)| c)
        .collect()
}

fn which_shard(args: &SweepArgs) -> Result<Option<(usize, usize)>> {
    let Some(shard) = &args.shard else {
        return Ok(None);
    };
    let env_num = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let (index, count) = if shard == "auto" {
        if let (Some(i), Some(n)) = (
            env_num("SLURM_ARRAY_TASK_ID"),
            env_num("SLURM_ARRAY_TASK_COUNT"),
        ) {
            (i, n)
        } else if let Some(i) = env_num("JOB_COMPLETION_INDEX") {
            let n = args
                .shards
                .context("--shard auto under a Kubernetes Indexed Job needs --shards N")?;
            (i, n)
        } else {
            bail!(
                "--shard auto: neither SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT nor JOB_COMPLETION_INDEX is set"
            );
        }
    } else {
        let (i, n) = shard.split_once('/').context("--shard I/N, e.g. 1/4")?;
        let i: usize = i.trim().parse().context("--shard I/N: I is a number")?;
        let n: usize = n.trim().parse().context("--shard I/N: N is a number")?;
        if i == 0 || i > n {
            bail!("--shard {i}/{n}: I runs from 1 to N");
        }
        (i - 1, n)
    };
    if count == 0 || index >= count {
        bail!("shard {index} of {count}: out of range");
    }
    Ok(Some((index, count)))
}

/// A cell's state on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// A finished run (completed or failed: an agent's failure is a result).
    Done(RunStatus),
    /// A file without a usable end (torn, interrupted, unreadable): to set aside and run again.
    Incomplete(String),
    /// No file.
    Missing,
}

/// The state of `cell` in `out`.
pub fn state(out: &Path, cell: &Cell) -> State {
    let path = out.join(cell.file_name());
    if !path.exists() {
        return State::Missing;
    }
    let summary = RunSummary::read(&path);
    match summary.finished.as_ref().map(|f| f.status) {
        Some(s @ (RunStatus::Completed | RunStatus::Failed)) => State::Done(s),
        _ => State::Incomplete(summary.status_label().to_string()),
    }
}

/// Runs (or lists, or emits) a sweep.
pub fn run(args: SweepArgs) -> Result<ExitCode> {
    let all = cells(&args.spec)?;
    if let Some(engine) = &args.emit {
        print!("{}", emit(engine, &args)?);
        return Ok(ExitCode::SUCCESS);
    }
    let total = all.len();
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .spec
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().to_string());
        args.spec
            .parent()
            .unwrap_or(Path::new("."))
            .join("runs")
            .join(stem)
    });
    let mine = match which_shard(&args)? {
        Some((i, n)) => shard(all, i, n),
        None => all,
    };
    if args.status {
        let mut counts = BTreeMap::new();
        for cell in &mine {
            let s = state(&out, cell);
            let label = match &s {
                State::Done(st) => format!("done ({})", st.as_str()),
                State::Incomplete(why) => format!("incomplete ({why})"),
                State::Missing => "missing".into(),
            };
            *counts
                .entry(label.split(' ').next().unwrap_or("").to_string())
                .or_insert(0) += 1;
            println!(
                "{}  {:<24} {:<20} r{}  {label}",
                cell.id,
                inert(&cell.task_id),
                inert(&cell.config),
                cell.repeat
            );
        }
        println!(
            "{} cell(s) here of {total}: {}",
            mine.len(),
            counts
                .iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let todo: Vec<Cell> = mine
        .iter()
        .filter(|c| !matches!(state(&out, c), State::Done(_)))
        .cloned()
        .collect();
    eprintln!(
        "cosmos: sweep {}: {} cell(s) here ({} done already, {} to run), {} at once, into {}",
        args.spec.display(),
        mine.len(),
        mine.len() - todo.len(),
        todo.len(),
        args.jobs.max(1),
        out.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let failed_infra = runtime.block_on(run_cells(&out, todo, args.jobs.max(1)))?;
    Ok(if failed_infra > 0 {
        eprintln!(
            "cosmos: {failed_infra} cell(s) could not run (see above); rerun the sweep to try them again"
        );
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Tries for a cell whose infrastructure fails (servers that would not start).
const TRIES: u32 = 3;

async fn run_cells(out: &Path, todo: Vec<Cell>, jobs: usize) -> Result<usize> {
    let signals = session::stop_on_signals();
    let started = Instant::now();
    let n = todo.len();
    let mut done = 0usize;
    let mut failed = 0usize;
    let mut results = futures::stream::iter(todo.into_iter().map(|cell| {
        let stop = signals.rx.clone();
        async move {
            let result = run_cell(out, &cell, stop).await;
            (cell, result)
        }
    }))
    .buffer_unordered(jobs);
    while let Some((cell, result)) = results.next().await {
        done += 1;
        let elapsed = started.elapsed().as_secs_f64();
        let eta = elapsed / done as f64 * (n - done) as f64;
        let what = match result {
            Ok(outcome) => format!("{} · {}", outcome.status.as_str(), outcome.path.display()),
            Err(e) => {
                failed += 1;
                format!("could not run: {e:#}")
            }
        };
        println!(
            "{}",
            inert(&format!(
                "[{done}/{n}] {} {} × {} r{}: {what} · {:.0}s left",
                cell.id, cell.task_id, cell.config, cell.repeat, eta
            ))
        );
        if *signals.signalled.borrow() {
            break;
        }
    }
    Ok(failed)
}

async fn run_cell(
    out: &Path,
    cell: &Cell,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<session::Outcome> {
    let path = out.join(cell.file_name());
    let mut last = None;
    for attempt in 0..TRIES {
        set_aside(&path)?;
        let mut spec = parse_run(&cell.args)?.spec()?;
        spec.out_dir = out.to_path_buf();
        spec.file_name = Some(cell.file_name());
        match prepare_or_stop(&spec, stop.clone()).await {
            Ok(Some(prepared)) => {
                let outcome = session::execute(prepared, None, None).await?;
                let infra = outcome.status == RunStatus::Failed
                    && outcome
                        .error
                        .as_deref()
                        .is_some_and(|e| e.contains("no MCP server could be started"));
                if !infra {
                    return Ok(outcome);
                }
                last = Some(anyhow::anyhow!("{}", outcome.error.unwrap_or_default()));
            }
            Ok(None) => bail!("stopped"),
            Err(e) => last = Some(e),
        }
        // Infrastructure, not the agent: wait and try again.
        if attempt + 1 < TRIES {
            tokio::time::sleep(Duration::from_secs(2u64.pow(attempt + 1))).await;
        }
    }
    // Not a result: kept aside, so the next run of the sweep tries the cell again.
    set_aside(&path)?;
    Err(last.unwrap_or_else(|| anyhow::anyhow!("failed")))
}

/// Moves a cell's unfinished run out of the way (never overwritten, never read as a run).
fn set_aside(path: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let aside = path.with_extension(format!("jsonl.set-aside-{stamp}"));
    std::fs::rename(path, &aside).with_context(|| format!("setting {} aside", path.display()))?;
    eprintln!(
        "cosmos: {} did not finish; set aside as {}",
        path.display(),
        aside.display()
    );
    Ok(())
}

/// A cluster job running the sweep in `--shards N` shards, each `--shard auto`, all writing
/// into one shared folder (`/runs` in the job; the `--out` folder under Slurm).
fn emit(engine: &str, args: &SweepArgs) -> Result<String> {
    let shards = args
        .shards
        .context("--emit needs --shards N: how many shards the job runs")?;
    if shards == 0 {
        bail!("--shards 0: at least one");
    }
    let spec = args.spec.display().to_string();
    let stem = crate::trajectory::writer::file_safe(
        &args
            .spec
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().to_lowercase()),
        40,
    )
    .replace('_', "-");
    let jobs = args.jobs.max(1);
    match engine {
        "k8s" => Ok(format!(
            "# A Kubernetes Indexed Job: {shards} pods, each one shard of the sweep (cosmos sweep --shard auto
# reads JOB_COMPLETION_INDEX). Build an image of this repository with its MCP servers installed
# (scripts/install-test-servers.sh), and give it a ReadWriteMany volume for the runs.
apiVersion: batch/v1
kind: Job
metadata:
  name: cosmos-sweep-{stem}
spec:
  completionMode: Indexed
  completions: {shards}
  parallelism: {shards}
  backoffLimitPerIndex: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: cosmos
          image: mcp-cosmos:latest
          workingDir: /work
          command: [\"cosmos\", \"sweep\", \"{spec}\", \"--shard\", \"auto\", \"--shards\", \"{shards}\", \"--jobs\", \"{jobs}\", \"--no-tui\", \"--out\", \"/runs\"]
          volumeMounts:
            - name: runs
              mountPath: /runs
      volumes:
        - name: runs
          persistentVolumeClaim:
            claimName: cosmos-runs
"
        )),
        "slurm" => Ok(format!(
            "#!/bin/bash
# A Slurm array of {shards} tasks, each one shard of the sweep (cosmos sweep --shard auto reads
# SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT). Submit from the repository on a shared
# file system: sbatch this-file.sh
#SBATCH --job-name=cosmos-sweep-{stem}
#SBATCH --array=0-{last}
#SBATCH --cpus-per-task=2
#SBATCH --output=cosmos-sweep-{stem}-%a.log
set -euo pipefail
exec cosmos sweep '{spec}' --shard auto --jobs {jobs} --no-tui --out '{out}'
",
            last = shards - 1,
            out = args
                .out
                .as_ref()
                .map_or_else(|| format!("runs/{stem}"), |o| o.display().to_string()),
        )),
        other => bail!("--emit {other}: k8s or slurm"),
    }
}
