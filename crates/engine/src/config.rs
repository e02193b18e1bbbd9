//! `cosmos.toml` (see cosmos.example.toml), read once into [`Config`]; every part takes its
//! section from it: the endpoints per role (`llm::endpoints::LlmConfig`), `[agent]` (SPIRAL's
//! search, typed by `agent::settings::Settings::from_config`), `[judge]` and `[world_models.NAME]`
//! (built by `world_model::named`). An error anywhere in the file is an error of the file,
//! named by its path, whichever part asked.
//!
//! `Config::load` reads the file once into one struct (unknown sections and keys refused, every
//! error naming the file) that every part takes its section from: `llm` (the endpoints),
//! `agent` (`agent::settings::Settings::from_config`), `judge` (`cosmos judge`, sweeps) and
//! `world_models` (`world_model::named`). `cosmos run` loads it once for the search settings and
//! the session (`RunSpec.config`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::llm::endpoints::{LlmConfig, RoleShape};
use cosmos_trajectory::event::Role;

/// World-model names that need no table (`none`, `llm`, `memory`, `command`): a table may not
/// take one.
pub const BUILT_IN_WORLD_MODELS: [&str; 5] = ["none", "llm", "memory", "traces", "command"];

/// The file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    default: RoleShape,
    #[serde(default)]
    roles: BTreeMap<Role, RoleShape>,
    #[serde(default)]
    agent: Option<toml::Table>,
    #[serde(default)]
    judge: JudgeTable,
    #[serde(default)]
    world_models: BTreeMap<String, toml::Table>,
}

/// `[judge]`: how `cosmos judge` (and a sweep with `judge = true`) judges when its command line
/// does not say.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeTable {
    /// Requests per run (`--trials`).
    pub trials: Option<u32>,
    /// Seed of the rubric orders (`--seed`).
    pub seed: Option<u64>,
}

/// `cosmos.toml`, read.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it was read from; `None` when no file was given (the environment alone).
    pub path: Option<PathBuf>,
    /// The endpoints per role.
    pub llm: LlmConfig,
    /// `[agent]` as written.
    pub agent: Option<toml::Table>,
    /// `[judge]`.
    pub judge: JudgeTable,
    /// `[world_models.NAME]` as written, each checked to be a table of its own.
    pub world_models: BTreeMap<String, toml::Table>,
}

impl Config {
    /// Reads `path`, or only the environment when `path` is `None`.
    pub fn load(path: Option<&Path>) -> Result<Self> {
        let text = match path {
            Some(p) => cosmos_trajectory::small_file::read_string_within(
                p,
                cosmos_trajectory::small_file::CONFIG_BYTES,
            )
            .with_context(|| format!("reading {}", p.display()))?,
            None => String::new(),
        };
        Self::from_text(&text, path, |k| std::env::var(k).ok())
    }

    /// Reads `text` as the file at `path`, with `env` for the environment.
    pub fn from_text(
        text: &str,
        path: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let name = shown(path);
        let file: File = toml::from_str(text).with_context(|| format!("parsing {name}"))?;
        for (model, table) in &file.world_models {
            // `[world_models.qwen-1.5b]` is the table `qwen-1` holding a table `5b`.
            if !table.contains_key("kind")
                && let Some((inner, _)) = table.iter().find(|(_, v)| v.is_table())
            {
                bail!(
                    "{name}: [world_models.{model}.{inner}] is a table inside a table: a name \
                     with a dot must be quoted, [world_models.\"{model}.{inner}\"]"
                );
            }
            if BUILT_IN_WORLD_MODELS.contains(&model.as_str()) {
                bail!("{name}: [world_models.{model}] takes a built-in name; choose another");
            }
        }
        if file.judge.trials == Some(0) {
            bail!("{name}: [judge] trials = 0: a judgement takes at least one trial");
        }
        let llm =
            LlmConfig::from_tables(file.default, &file.roles, env).with_context(|| name.clone())?;
        Ok(Self {
            path: path.map(Path::to_path_buf),
            llm,
            agent: file.agent,
            judge: file.judge,
            world_models: file.world_models,
        })
    }

    /// The folder paths in the file are relative to (the working folder without a file).
    pub fn dir(&self) -> &Path {
        self.path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."))
    }

    /// The file's name for messages: its path, or "cosmos.toml (--config)" without one.
    pub fn name(&self) -> String {
        shown(self.path.as_deref())
    }
}

/// A configuration file's name in messages.
fn shown(path: Option<&Path>) -> String {
    path.map_or("cosmos.toml (--config)".to_string(), |p| {
        p.display().to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Config> {
        Config::from_text(text, Some(Path::new("cosmos.toml")), env)
    }

    #[test]
    fn roles_inherit_defaults_and_environment() {
        let env = |k: &str| match k {
            "OPENAI_BASE_URL" => Some("http://planner/v1".to_string()),
            "OPENAI_API_KEY" => Some("k1".to_string()),
            "WM_KEY" => Some("k2".to_string()),
            _ => None,
        };
        let c = config(
            "[default]\nmodel = \"m\"\n[roles.world_model]\nbase_url = \"http://wm/v1/\"\nmodel = \"awm\"\napi_key_env = \"WM_KEY\"\n",
            env,
        )
        .unwrap();
        let p = c.llm.endpoint(Role::Planner);
        assert_eq!(
            (p.base_url.as_str(), p.model.as_str(), p.api_key.as_deref()),
            ("http://planner/v1", "m", Some("k1"))
        );
        let w = c.llm.endpoint(Role::WorldModel);
        assert_eq!(
            (w.base_url.as_str(), w.model.as_str(), w.api_key.as_deref()),
            ("http://wm/v1", "awm", Some("k2"))
        );
        assert_eq!(c.llm.secrets().len(), 5);
        assert!(config("[roles.nobody]\nmodel=\"x\"\n", |_| None).is_err());
    }

    #[test]
    fn numbers_out_of_range_are_named_with_their_table_and_key() {
        let err = |text: &str| format!("{:#}", config(text, |_| None).unwrap_err());
        assert!(
            err("[roles.critic]\ntimeout_s = inf\n")
                .ends_with("[roles.critic] timeout_s = inf: must be seconds from 0.05 to 86400")
        );
        assert!(
            err("[default]\ntimeout_s = 1e300\n")
                .ends_with("[default] timeout_s = 1e300: must be seconds from 0.05 to 86400")
        );
        assert!(err("[default]\ntemperature = nan\n").contains("temperature = NaN"));
        assert!(
            err("[default]\ntemperature = 3\n")
                .contains("temperature = 3.0: must be a number from 0 to 2")
        );
        assert!(err("[roles.planner]\nmax_tokens = 0\n").contains("max_tokens = 0"));
    }

    #[test]
    fn every_section_is_read_and_an_error_in_any_names_the_file() {
        let c = config(
            "[agent]\niterations = 7\n[judge]\ntrials = 5\n[world_models.recorded]\nkind = \"memory\"\nfrom = [\"runs\"]\n",
            |_| None,
        )
        .unwrap();
        assert_eq!(c.agent.unwrap()["iterations"].as_integer(), Some(7));
        assert_eq!(c.judge.trials, Some(5));
        assert!(c.world_models.contains_key("recorded"));
        for (text, says) in [
            ("[judge]\ntrials = 0\n", "trials = 0"),
            ("[judge]\nrounds = 2\n", "unknown field `rounds`"),
            (
                "[world_models.llm]\nkind = \"memory\"\n",
                "takes a built-in name",
            ),
            (
                "[world_models.qwen-1.5b]\nkind = \"llm\"\n",
                "a table inside a table",
            ),
            ("[nonsense]\n", "unknown field `nonsense`"),
        ] {
            let err = format!("{:#}", config(text, |_| None).unwrap_err());
            assert!(
                err.contains("cosmos.toml") && err.contains(says),
                "{text}: {err}"
            );
        }
    }
}
