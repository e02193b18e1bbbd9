//! Named world models: the built-in names (`llm`, `memory`, `command`) and the
//! `[world_models.NAME]` tables of `cosmos.toml`, resolved and built. `cosmos run
//! --world-model NAME` and `cosmos wm-eval --world-model NAME…` both come here.
//!
//! ```toml
//! [world_models.qwen]
//! kind = "llm"                 # with the keys of a [roles.*] table
//! base_url = "http://127.0.0.1:8080/v1"
//! model = "qwen2.5-coder-1.5b"
//! examples_from = ["sample_runs"]   # optional: recorded runs it is grounded in
//! examples = 5                 # the nearest recorded calls shown (default 5)
//! cached = true
//!
//! [world_models.recorded]
//! kind = "memory"              # or "traces": rules fitted on the recorded calls
//! from = ["sample_runs"]
//!
//! [world_models.mine]
//! kind = "command"
//! command = "python3 my_world_model.py"
//! timeout_s = 30
//! env = ["MY_MODEL_KEY"]       # optional: variables of cosmos's environment it is given
//!
//! [world_models.both]
//! kind = "ensemble"
//! members = ["recorded", "qwen"]  # named world models (built-in names too), not ensembles
//! pick = "closest"             # or "most_confident", "first", "per_field"
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;

use super::cached::CachedWorldModel;
use super::command::CommandWorldModel;
use super::ensemble::{EnsembleWorldModel, Pick};
use super::llm::LlmWorldModel;
use super::memory::{MemoryWorldModel, TransitionBuffer};
use super::traces::TracesWorldModel;
use super::{SimFailure, SimRequest, Simulation, WorldModel};
use crate::config::Config;
use crate::llm::client::LlmClient;
use crate::llm::endpoints::Endpoint;
use cosmos_trajectory::event::{Role, WorldModelInfo};

/// The names that need no table.
pub const BUILT_IN: [&str; 5] = crate::config::BUILT_IN_WORLD_MODELS;

/// What a world model is made of.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// An LLM acting as the server.
    Llm {
        /// Its endpoint.
        endpoint: Endpoint,
        /// Recorded runs it is grounded in (examples, facts, a draft).
        examples_from: Vec<PathBuf>,
        /// Recorded calls shown, at most.
        examples: usize,
    },
    /// Recorded real calls, recalled.
    Memory {
        /// Folders or files of recorded runs.
        from: Vec<PathBuf>,
    },
    /// Recorded real calls, predicted field by field by the rules they support.
    Traces {
        /// Folders or files of recorded runs.
        from: Vec<PathBuf>,
    },
    /// An external process speaking JSON lines.
    Command {
        /// Its command line (`sh -c`).
        command: String,
        /// Time one simulation may take.
        timeout: Duration,
        /// Variables of cosmos's environment it is given beyond the short list every child
        /// gets (`env = ["NAME", …]` in its table).
        env: Vec<String>,
    },
    /// Several named world models asked at once (`world_model::ensemble`).
    Ensemble {
        /// Its members, resolved (none is an ensemble).
        members: Vec<Named>,
        /// How it picks its answer.
        pick: Pick,
    },
}

/// A world model by name, ready to build.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    /// The name runs and tables show.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Simulate the same call in the same context only once.
    pub cached: bool,
}

/// What the command line says about the built-in names.
#[derive(Debug, Clone, Default)]
pub struct BuiltInOptions {
    /// `--memory-from`: runs for `memory` (and examples for `llm`).
    pub memory_from: Vec<PathBuf>,
    /// `--world-model-command`.
    pub command: Option<String>,
    /// Time a `command` simulation may take.
    pub command_timeout: Duration,
    /// `--cache-world-model`.
    pub cached: bool,
    /// Other programs' files among `memory_from`, converted to runs: kept while the options
    /// live (their private folder goes with them).
    pub converted: KeepAlive,
}

/// Something that must live as long as what holds it (the private folder of runs converted
/// from other programs' files), held without the world models knowing what it is.
#[derive(Clone, Default)]
pub struct KeepAlive(Option<Arc<dyn std::any::Any + Send + Sync>>);

impl KeepAlive {
    /// Keeps `value` alive while this (or a clone) lives.
    pub fn new(value: impl std::any::Any + Send + Sync) -> Self {
        Self(Some(Arc::new(value)))
    }
}

impl std::fmt::Debug for KeepAlive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "KeepAlive(held)"
        } else {
            "KeepAlive(none)"
        })
    }
}

/// Resolves `name`: a built-in name (`none` gives `None`), else a `[world_models.NAME]` table of
/// `config`. An unknown name is an error that lists the names there are.
pub fn resolve(name: &str, config: &mut Config, options: &BuiltInOptions) -> Result<Option<Named>> {
    if let Some(table) = config.world_models.get(name).cloned() {
        return from_table(name, table, config, options).map(Some);
    }
    let tables = &config.world_models;
    let kind = match name {
        "none" => return Ok(None),
        "llm" => Kind::Llm {
            endpoint: config.llm.endpoint(Role::WorldModel).clone(),
            examples_from: options.memory_from.clone(),
            examples: super::llm::DEFAULT_EXAMPLES,
        },
        "memory" | "traces" => {
            if options.memory_from.is_empty() {
                bail!("--world-model {name} needs --memory-from DIR (recorded runs)");
            }
            let from = options.memory_from.clone();
            if name == "memory" {
                Kind::Memory { from }
            } else {
                Kind::Traces { from }
            }
        }
        "command" => Kind::Command {
            command: options
                .command
                .clone()
                .context("--world-model command needs --world-model-command CMD")?,
            timeout: options.command_timeout,
            env: Vec::new(),
        },
        other => {
            let mut known: Vec<String> = BUILT_IN.iter().map(|s| s.to_string()).collect();
            known.extend(tables.keys().cloned());
            bail!(
                "no world model named {other:?}: built in are none, llm, memory, traces, command{}",
                if tables.is_empty() {
                    format!(
                        "; name your own in {} under [world_models.NAME]",
                        config.name()
                    )
                } else {
                    format!(
                        "; {} names {}",
                        config.name(),
                        tables.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
            )
        }
    };
    Ok(Some(Named {
        name: name.to_string(),
        kind,
        cached: options.cached,
    }))
}

fn from_table(
    name: &str,
    mut table: toml::Table,
    config: &mut Config,
    options: &BuiltInOptions,
) -> Result<Named> {
    let label = format!("[world_models.{name}]");
    let base = config.dir().to_path_buf();
    // Paths in the file are relative to the file.
    let paths = |table: &mut toml::Table, key: &str| -> Result<Vec<PathBuf>> {
        match table.remove(key) {
            None => Ok(Vec::new()),
            Some(v) => {
                let list: Vec<String> = v
                    .try_into()
                    .with_context(|| format!("{label} {key}: a list of paths"))?;
                Ok(list.into_iter().map(|p| base.join(p)).collect())
            }
        }
    };
    let kind: String = table
        .remove("kind")
        .with_context(|| {
            format!(
                "{label}: needs kind = \"llm\", \"memory\", \"traces\", \"command\" or \"ensemble\""
            )
        })?
        .try_into()
        .with_context(|| format!("{label} kind: a string"))?;
    let cached = match table.remove("cached") {
        Some(v) => v
            .try_into()
            .with_context(|| format!("{label} cached: true or false"))?,
        None => false,
    };
    let kind = match kind.as_str() {
        "llm" => {
            let examples_from = paths(&mut table, "examples_from")?;
            let examples = examples_of(&mut table, &label)?;
            Kind::Llm {
                endpoint: config.llm.endpoint_from(table, &label)?,
                examples_from,
                examples,
            }
        }
        "memory" | "traces" => {
            let from = paths(&mut table, "from")?;
            if from.is_empty() {
                bail!("{label}: a {kind} world model needs from = [\"runs/\", …]");
            }
            let extra: Vec<&String> = table.keys().collect();
            if !extra.is_empty() {
                bail!("{label}: unknown keys {extra:?} ({kind} takes from, cached)");
            }
            if kind == "memory" {
                Kind::Memory { from }
            } else {
                Kind::Traces { from }
            }
        }
        "command" => {
            let command: String = table
                .remove("command")
                .with_context(|| format!("{label}: needs command = \"…\""))?
                .try_into()
                .with_context(|| format!("{label} command: a string"))?;
            let timeout_s: f64 = match table.remove("timeout_s") {
                Some(v) => v
                    .try_into()
                    .with_context(|| format!("{label} timeout_s: seconds"))?,
                None => 60.0,
            };
            if !(0.05..=86_400.0).contains(&timeout_s) {
                bail!("{label} timeout_s = {timeout_s}: must be seconds from 0.05 to 86400");
            }
            let env: Vec<String> = match table.remove("env") {
                Some(v) => v
                    .try_into()
                    .with_context(|| format!("{label} env: a list of variable names"))?,
                None => Vec::new(),
            };
            let extra: Vec<&String> = table.keys().collect();
            if !extra.is_empty() {
                bail!(
                    "{label}: unknown keys {extra:?} (command takes command, timeout_s, env, cached)"
                );
            }
            Kind::Command {
                command,
                timeout: Duration::from_secs_f64(timeout_s),
                env,
            }
        }
        "ensemble" => ensemble_from(name, &label, table, config, options)?,
        other => bail!(
            "{label} kind = {other:?}: must be \"llm\", \"memory\", \"traces\", \"command\" or \"ensemble\""
        ),
    };
    Ok(Named {
        name: name.to_string(),
        kind,
        cached,
    })
}

/// An llm table's `examples`: how many recorded calls it is shown (0 to 50; 5 without one).
fn examples_of(table: &mut toml::Table, label: &str) -> Result<usize> {
    let Some(v) = table.remove("examples") else {
        return Ok(super::llm::DEFAULT_EXAMPLES);
    };
    let n: i64 = v
        .try_into()
        .with_context(|| format!("{label} examples: how many recorded calls to show (0 to 50)"))?;
    if !(0..=50).contains(&n) {
        bail!("{label} examples = {n}: must be 0 to 50");
    }
    Ok(n as usize)
}

/// An ensemble's table (its `kind` taken): its members, each a world model of its own name,
/// resolved now, and its `pick`.
fn ensemble_from(
    name: &str,
    label: &str,
    mut table: toml::Table,
    config: &mut Config,
    options: &BuiltInOptions,
) -> Result<Kind> {
    let members: Vec<String> = table
        .remove("members")
        .with_context(|| format!("{label}: needs members = [\"a\", \"b\", …]"))?
        .try_into()
        .with_context(|| format!("{label} members: a list of world model names"))?;
    let pick = match table.remove("pick") {
        None => Pick::default(),
        Some(v) => {
            let named: String = v
                .try_into()
                .with_context(|| format!("{label} pick: a string"))?;
            let names: Vec<&str> = Pick::ALL.iter().map(|(n, _)| *n).collect();
            Pick::named(&named).with_context(|| {
                format!(
                    "{label} pick = {named:?}: must be one of {}",
                    names.join(", ")
                )
            })?
        }
    };
    let extra: Vec<&String> = table.keys().collect();
    if !extra.is_empty() {
        bail!("{label}: unknown keys {extra:?} (ensemble takes members, pick, cached)");
    }
    let mut distinct = members.clone();
    distinct.sort();
    distinct.dedup();
    if distinct.len() < 2 || distinct.len() != members.len() {
        bail!("{label} members: two or more different world models (given {members:?})");
    }
    let mut resolved = Vec::with_capacity(members.len());
    for member in &members {
        // Checked before resolving: an ensemble among the members could name this one.
        let nested = config
            .world_models
            .get(member)
            .and_then(|t| t.get("kind"))
            .and_then(toml::Value::as_str)
            == Some("ensemble");
        if member == name || nested {
            bail!("{label} members: {member:?} is an ensemble; an ensemble's members are not");
        }
        let named = resolve(member, config, options)
            .with_context(|| format!("{label} member {member:?}"))?
            .with_context(|| format!("{label} members: \"none\" predicts nothing"))?;
        resolved.push(named);
    }
    Ok(Kind::Ensemble {
        members: resolved,
        pick,
    })
}

impl Named {
    /// Builds the world model (a memory one reads its runs now).
    pub fn build(&self) -> Result<Built> {
        let memory = |from: &[PathBuf]| -> Result<Option<Arc<TransitionBuffer>>> {
            if from.is_empty() {
                return Ok(None);
            }
            Ok(Some(Arc::new(TransitionBuffer::from_runs(from)?)))
        };
        let (inner, memory_model): (Arc<dyn WorldModel>, Option<ReadsRuns>) = match &self.kind {
            Kind::Llm {
                endpoint,
                examples_from,
                examples,
            } => {
                let model = LlmWorldModel::new(
                    Arc::new(LlmClient::new(endpoint.clone())),
                    memory(examples_from)?,
                    *examples,
                );
                let reads = (!examples_from.is_empty()).then(|| ReadsRuns::Llm(model.clone()));
                (Arc::new(model), reads)
            }
            Kind::Memory { from } | Kind::Traces { from } => {
                let buffer = memory(from)?.unwrap_or_default();
                if buffer.is_empty() {
                    bail!(
                        "world model {}: no real tool calls under {} to predict from",
                        self.name,
                        from.iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                if matches!(self.kind, Kind::Traces { .. }) {
                    let model = TracesWorldModel::new(buffer);
                    (Arc::new(model.clone()), Some(ReadsRuns::Traces(model)))
                } else {
                    let model = MemoryWorldModel::new(buffer);
                    (Arc::new(model.clone()), Some(ReadsRuns::Memory(model)))
                }
            }
            Kind::Command {
                command,
                timeout,
                env,
            } => (
                Arc::new(CommandWorldModel::new(command.clone(), *timeout).with_env(env)),
                None,
            ),
            Kind::Ensemble { members, pick } => {
                let members = members
                    .iter()
                    .map(Named::build)
                    .collect::<Result<Vec<_>>>()?;
                let models = members.iter().map(|m| m.model.clone()).collect();
                let model = EnsembleWorldModel::new(self.name.clone(), models, *pick);
                return Ok(Built {
                    model: self.wrap(Arc::new(model)),
                    memory: None,
                    members,
                    named: self.clone(),
                    per_run: Default::default(),
                });
            }
        };
        Ok(Built {
            model: self.wrap(inner),
            memory: memory_model,
            members: Vec::new(),
            named: self.clone(),
            per_run: Default::default(),
        })
    }

    /// `inner` under this name, cached if asked.
    fn wrap(&self, inner: Arc<dyn WorldModel>) -> Arc<dyn WorldModel> {
        // An ensemble is built under its own name already.
        let named: Arc<dyn WorldModel> = if BUILT_IN.contains(&self.name.as_str())
            || matches!(self.kind, Kind::Ensemble { .. })
        {
            inner
        } else {
            Arc::new(Renamed {
                name: self.name.clone(),
                inner,
            })
        };
        if self.cached {
            Arc::new(CachedWorldModel::new(named))
        } else {
            named
        }
    }
}

/// A built world model.
pub struct Built {
    /// The model.
    pub model: Arc<dyn WorldModel>,
    /// For a world model that reads recorded runs (memory; llm with examples), the model
    /// itself, to leave one run out in evaluations.
    memory: Option<ReadsRuns>,
    /// For an ensemble, its members, built.
    members: Vec<Built>,
    named: Named,
    /// [`Built::for_calls_of`]'s models, by run.
    per_run: std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<dyn WorldModel>>>,
}

/// A world model that reads recorded runs, which must leave out the run whose calls it is
/// asked to predict.
#[derive(Clone)]
enum ReadsRuns {
    /// Recalls recorded results.
    Memory(MemoryWorldModel),
    /// Is shown a recorded result of the tool as an example.
    Llm(LlmWorldModel),
    /// Fits rules on recorded results.
    Traces(TracesWorldModel),
}

impl Built {
    /// True for a world model that reads recorded runs (memory; llm shown recorded examples),
    /// or an ensemble with one: evaluated leave one run out.
    pub fn reads_runs(&self) -> bool {
        self.memory.is_some() || self.members.iter().any(Built::reads_runs)
    }

    /// The model for predicting calls recorded in `run`: one that reads runs, without that
    /// run's own calls (it would otherwise score itself, or be shown the answer), an ensemble
    /// of its members so; any other model as it is.
    /// Made once per run and kept (a run's calls share its rules, its cache, its lookups).
    pub fn for_calls_of(&self, run: &Path) -> Arc<dyn WorldModel> {
        if let Some(model) = self.per_run.lock().ok().and_then(|m| m.get(run).cloned()) {
            return model;
        }
        let model = self.leaving_out(run);
        if let Ok(mut kept) = self.per_run.lock() {
            kept.insert(run.to_path_buf(), model.clone());
        }
        model
    }

    fn leaving_out(&self, run: &Path) -> Arc<dyn WorldModel> {
        match (&self.memory, &self.named.kind) {
            (Some(ReadsRuns::Memory(memory)), _) => self.named.wrap(Arc::new(memory.without(run))),
            (Some(ReadsRuns::Traces(traces)), _) => self.named.wrap(Arc::new(traces.without(run))),
            (Some(ReadsRuns::Llm(llm)), _) => match llm.without(run) {
                Some(llm) => self.named.wrap(Arc::new(llm)),
                None => self.model.clone(),
            },
            (None, Kind::Ensemble { pick, .. }) if self.reads_runs() => {
                let members = self.members.iter().map(|m| m.for_calls_of(run)).collect();
                self.named.wrap(Arc::new(EnsembleWorldModel::new(
                    self.named.name.clone(),
                    members,
                    *pick,
                )))
            }
            (None, _) => self.model.clone(),
        }
    }
}

/// A world model under the name its user gave it; its own name goes in the details.
struct Renamed {
    name: String,
    inner: Arc<dyn WorldModel>,
}

impl WorldModel for Renamed {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn describe(&self) -> WorldModelInfo {
        let mut info = self.inner.describe();
        info.details.insert("kind".into(), json!(info.name));
        info.name = self.name.clone();
        info
    }

    fn simulate<'a>(
        &'a self,
        request: SimRequest<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Simulation, SimFailure>> {
        self.inner.simulate(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cosmos.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn tables_resolve_with_defaults_and_relative_paths() {
        let (dir, path) = config(
            "[default]\nmodel = \"base\"\n\
             [world_models.qwen]\nkind = \"llm\"\nbase_url = \"http://127.0.0.1:9/v1/\"\ntemperature = 0.3\ncached = true\n\
             [world_models.rec]\nkind = \"memory\"\nfrom = [\"runs\"]\n\
             [world_models.mine]\nkind = \"command\"\ncommand = \"./wm\"\ntimeout_s = 5\n",
        );
        let mut llm = Config::load(Some(&path)).unwrap();
        let options = BuiltInOptions::default();
        let qwen = resolve("qwen", &mut llm, &options).unwrap().unwrap();
        match &qwen.kind {
            Kind::Llm { endpoint, .. } => {
                assert_eq!(endpoint.base_url, "http://127.0.0.1:9/v1");
                assert_eq!(endpoint.model, "base", "from [default]");
                assert_eq!(endpoint.temperature, 0.3);
            }
            other => panic!("{other:?}"),
        }
        assert!(qwen.cached);
        let rec = resolve("rec", &mut llm, &options).unwrap().unwrap();
        assert_eq!(
            rec.kind,
            Kind::Memory {
                from: vec![dir.path().join("runs")]
            }
        );
        let mine = resolve("mine", &mut llm, &options).unwrap().unwrap();
        assert!(
            matches!(mine.kind, Kind::Command { timeout, .. } if timeout == Duration::from_secs(5))
        );
        assert_eq!(resolve("none", &mut llm, &options).unwrap(), None);
    }

    #[test]
    fn mistakes_are_clear_errors() {
        let err = |text: &str, name: &str| {
            let (_dir, path) = config(text);
            let loaded = Config::load(Some(&path))
                .and_then(|mut config| resolve(name, &mut config, &BuiltInOptions::default()));
            format!("{:#}", loaded.unwrap_err())
        };
        assert!(err("", "qwen").contains("no world model named \"qwen\""));
        assert!(
            err("[world_models.a]\nkind = \"memory\"\nfrom = [\"x\"]\n", "b").contains("names a")
        );
        assert!(
            err("[world_models.a]\nkind = \"llm\"\nmodle = \"x\"\n", "a")
                .contains("[world_models.a]")
        );
        assert!(err("[world_models.a]\nkind = \"oracle\"\n", "a").contains("must be \"llm\""));
        assert!(err("[world_models.a]\nkind = \"memory\"\n", "a").contains("needs from"));
        assert!(
            err(
                "[world_models.llm]\nkind = \"memory\"\nfrom = [\"x\"]\n",
                "llm"
            )
            .contains("built-in name")
        );
        assert!(err("", "memory").contains("--memory-from"));
        assert!(err("", "traces").contains("--world-model traces needs --memory-from"));
        assert!(
            err("[world_models.a]\nkind = \"traces\"\n", "a")
                .contains("a traces world model needs from")
        );
        assert!(
            err("[world_models.a]\nkind = \"llm\"\nexamples = 99\n", "a")
                .contains("examples = 99: must be 0 to 50")
        );
        assert!(
            err(
                "[world_models.a]\nkind = \"llm\"\nexamples = \"five\"\n",
                "a"
            )
            .contains("examples: how many")
        );
        assert!(
            err("[world_models.qwen-1.5b]\nkind = \"llm\"\n", "qwen-1.5b")
                .contains("[world_models.\"qwen-1.5b\"]")
        );
    }

    #[test]
    fn a_named_world_model_records_its_name_and_kind() {
        let named = Named {
            name: "mine".into(),
            kind: Kind::Command {
                command: "true".into(),
                timeout: Duration::from_secs(1),
                env: Vec::new(),
            },
            cached: false,
        };
        let built = named.build().unwrap();
        assert_eq!(built.model.name(), "mine");
        let info = built.model.describe();
        assert_eq!(info.name, "mine");
        assert_eq!(info.details["kind"], json!("command"));
    }

    #[test]
    fn an_ensemble_resolves_its_members_and_refuses_what_cannot_be_one() {
        let (_dir, path) = config(
            "[world_models.rec]\nkind = \"memory\"\nfrom = [\"runs\"]\n\
             [world_models.mine]\nkind = \"command\"\ncommand = \"./wm\"\n\
             [world_models.both]\nkind = \"ensemble\"\nmembers = [\"rec\", \"mine\"]\npick = \"most_confident\"\n",
        );
        let mut loaded = Config::load(Some(&path)).unwrap();
        let both = resolve("both", &mut loaded, &BuiltInOptions::default())
            .unwrap()
            .unwrap();
        match &both.kind {
            Kind::Ensemble { members, pick } => {
                let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
                assert_eq!(names, ["rec", "mine"]);
                assert_eq!(*pick, Pick::MostConfident);
            }
            other => panic!("{other:?}"),
        }
        let err = |text: &str| {
            let (_dir, path) = config(text);
            let loaded = Config::load(Some(&path))
                .and_then(|mut config| resolve("e", &mut config, &BuiltInOptions::default()));
            format!("{:#}", loaded.unwrap_err())
        };
        let cmd = "[world_models.a]\nkind = \"command\"\ncommand = \"x\"\n";
        assert!(err("[world_models.e]\nkind = \"ensemble\"\n").contains("needs members"));
        assert!(
            err(&format!(
                "{cmd}[world_models.e]\nkind = \"ensemble\"\nmembers = [\"a\"]\n"
            ))
            .contains("two or more different")
        );
        assert!(
            err(&format!(
                "{cmd}[world_models.e]\nkind = \"ensemble\"\nmembers = [\"a\", \"a\"]\n"
            ))
            .contains("two or more different")
        );
        // Itself, or another ensemble, among its members: refused before it could loop.
        assert!(
            err(&format!(
                "{cmd}[world_models.e]\nkind = \"ensemble\"\nmembers = [\"a\", \"e\"]\n"
            ))
            .contains("an ensemble's members are not")
        );
        assert!(
            err(&format!(
                "{cmd}[world_models.f]\nkind = \"ensemble\"\nmembers = [\"a\", \"e\"]\n\
                 [world_models.e]\nkind = \"ensemble\"\nmembers = [\"a\", \"f\"]\n"
            ))
            .contains("an ensemble's members are not")
        );
        assert!(
            err(&format!(
                "{cmd}[world_models.e]\nkind = \"ensemble\"\nmembers = [\"a\", \"none\"]\n"
            ))
            .contains("\"none\" predicts nothing")
        );
        assert!(
            err(&format!(
                "{cmd}[world_models.e]\nkind = \"ensemble\"\nmembers = [\"a\", \"zz\"]\n"
            ))
            .contains("no world model named \"zz\"")
        );
        assert!(
            err(&format!(
                "{cmd}[world_models.b]\nkind = \"command\"\ncommand = \"y\"\n\
                 [world_models.e]\nkind = \"ensemble\"\nmembers = [\"a\", \"b\"]\npick = \"vote\"\n"
            ))
            .contains("must be one of closest, most_confident, first")
        );
    }
}
