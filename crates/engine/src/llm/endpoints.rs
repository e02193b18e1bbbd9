//! Which endpoint each role talks to: `cosmos.toml` (see `cosmos.example.toml`), with
//! defaults from `OPENAI_BASE_URL` and `OPENAI_API_KEY`; no public address is ever assumed.
//!
//! `LlmConfig`, the endpoint of every role from `cosmos.toml`'s `[default]` and
//! `[roles.*]` (as `crate::config` read them), defaults from `OPENAI_BASE_URL` /
//! `OPENAI_API_KEY` / `COSMOS_MODEL`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Deserialize;

use cosmos_trajectory::event::{ModelInfo, Role};

/// How a role asks for structured output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// `response_format` with a JSON schema, falling back to `json_object`, then to JSON
    /// parsed out of plain text. Works with servers that cannot call tools.
    #[default]
    Json,
    /// Native `tools` / `tool_calls`.
    Tools,
}

/// One role's endpoint, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// Base URL, ending before `/chat/completions`; empty when nothing set one.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// The key (never recorded).
    pub api_key: Option<String>,
    /// Sampling temperature.
    pub temperature: f64,
    /// Completion token cap.
    pub max_tokens: u32,
    /// Timeout of one HTTP attempt.
    pub timeout: Duration,
    /// Retries after the first attempt on 429, 5xx and timeouts.
    pub max_retries: u32,
    /// How structured output is asked for.
    pub output: OutputMode,
    /// Record each call's messages and reply in its `llm_call` event (large; off by default).
    pub record_messages: bool,
    /// Ask for the reply's token log-probabilities (`logprobs`; an `llm` world model takes
    /// its confidence from them when they come).
    pub logprobs: bool,
}

impl Endpoint {
    /// What the trajectory records about it: never the key, nor any credential its address
    /// carries (userinfo and query values are hidden by the one recogniser's `url_shown`).
    pub fn info(&self) -> ModelInfo {
        ModelInfo {
            model: self.model.clone(),
            base_url: Some(&self.base_url)
                .filter(|u| !u.is_empty())
                .map(|u| cosmos_trajectory::redact::url_shown(u).0),
        }
    }

    /// Why it cannot be used, when nothing set its address: naming the settings that would.
    pub fn missing(&self, table: &str) -> Option<String> {
        self.base_url.is_empty().then(|| {
            format!(
                "no endpoint for {table}: set base_url in [{table}] or [default] of the --config \
                 file, or OPENAI_BASE_URL"
            )
        })
    }
}

/// A `[default]` or `[roles.NAME]` table (or an `llm` world model's), as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleShape {
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    timeout_s: Option<f64>,
    max_retries: Option<u32>,
    output: Option<OutputMode>,
    record_messages: Option<bool>,
    logprobs: Option<bool>,
}

impl RoleShape {
    /// Every number in range, or an error naming the table, the key and the range.
    fn check(&self, table: &str) -> Result<()> {
        // `{:?}` writes 1e300 as 1e300, where `{}` writes 301 digits.
        let within = |key: &str, value: Option<f64>, lo: f64, hi: f64, what: &str| match value {
            Some(v) if !(v.is_finite() && (lo..=hi).contains(&v)) => {
                anyhow::bail!("{table} {key} = {v:?}: must be {what} from {lo} to {hi}")
            }
            _ => Ok(()),
        };
        let count = |key: &str, value: Option<u32>, lo: u32, hi: u32| match value {
            Some(v) if !(lo..=hi).contains(&v) => {
                anyhow::bail!("{table} {key} = {v}: must be from {lo} to {hi}")
            }
            _ => Ok(()),
        };
        within("temperature", self.temperature, 0.0, 2.0, "a number")?;
        within("timeout_s", self.timeout_s, 0.05, 86_400.0, "seconds")?;
        count("max_tokens", self.max_tokens, 1, 10_000_000)?;
        count("max_retries", self.max_retries, 0, 20)?;
        Ok(())
    }
}

/// Endpoints per role, resolved from `cosmos.toml`'s `[default]` and `[roles.*]`
/// (`crate::config::Config` reads the file) and the environment.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    endpoints: BTreeMap<Role, Endpoint>,
    /// `[default]`, for endpoints named elsewhere (an `llm` world model's table).
    default: RoleShape,
    /// Keys of endpoints made after loading, for the redactor.
    extra_secrets: Vec<String>,
}

impl LlmConfig {
    /// Every role's endpoint from `[default]` and `[roles.*]`, then `env` (the environment);
    /// the keys are remembered so that no log line shows them.
    pub fn from_tables(
        default: RoleShape,
        roles: &BTreeMap<Role, RoleShape>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        default.check("[default]")?;
        for (role, r) in roles {
            r.check(&format!("[roles.{}]", role.as_str()))?;
        }
        let mut endpoints = BTreeMap::new();
        for role in Role::ALL {
            let r = roles.get(&role).cloned().unwrap_or_default();
            endpoints.insert(role, resolve(r, &default, &env));
        }
        let config = Self {
            endpoints,
            default,
            extra_secrets: Vec::new(),
        };
        // The log is cleaned of the keys from here on, before any request is logged.
        cosmos_trajectory::redact::remember_for_logs(config.secrets().iter().map(String::as_str));
        Ok(config)
    }

    /// An endpoint from a table with the keys of a `[roles.*]` table (an `llm` world model's),
    /// filling what it leaves out from `[default]` and the environment as roles do. `table`
    /// names it in errors.
    pub fn endpoint_from(&mut self, keys: toml::Table, table: &str) -> Result<Endpoint> {
        let shape: RoleShape = keys
            .try_into()
            .with_context(|| format!("{table}: not the keys of a [roles.*] table"))?;
        shape.check(table)?;
        let endpoint = resolve(shape, &self.default, &|k: &str| std::env::var(k).ok());
        if let Some(key) = &endpoint.api_key {
            cosmos_trajectory::redact::remember_for_logs([key.as_str()]);
            self.extra_secrets.push(key.clone());
        }
        Ok(endpoint)
    }

    /// Records messages for every role (`cosmos run --record-messages`).
    pub fn record_all_messages(&mut self) {
        for endpoint in self.endpoints.values_mut() {
            endpoint.record_messages = true;
        }
    }

    /// The endpoint of a role.
    pub fn endpoint(&self, role: Role) -> &Endpoint {
        &self.endpoints[&role]
    }

    /// Every key in use, for the redactor.
    pub fn secrets(&self) -> Vec<String> {
        self.endpoints
            .values()
            .filter_map(|e| e.api_key.clone())
            .chain(self.extra_secrets.iter().cloned())
            .collect()
    }
}

/// One endpoint: its table's keys, else `[default]`'s, else the environment, else defaults.
fn resolve(r: RoleShape, d: &RoleShape, env: &impl Fn(&str) -> Option<String>) -> Endpoint {
    let key_var = r
        .api_key_env
        .clone()
        .or(d.api_key_env.clone())
        .unwrap_or_else(|| "OPENAI_API_KEY".into());
    Endpoint {
        base_url: r
            .base_url
            .or(d.base_url.clone())
            .or_else(|| env("OPENAI_BASE_URL"))
            // Never a public default: a role with no endpoint is an error when it is used.
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_string(),
        model: r
            .model
            .or(d.model.clone())
            .or_else(|| env("COSMOS_MODEL"))
            .unwrap_or_else(|| "gpt-4o-mini".into()),
        api_key: env(&key_var).filter(|k| !k.is_empty()),
        temperature: r.temperature.or(d.temperature).unwrap_or(0.0),
        max_tokens: r.max_tokens.or(d.max_tokens).unwrap_or(1024),
        timeout: Duration::from_secs_f64(r.timeout_s.or(d.timeout_s).unwrap_or(120.0)),
        max_retries: r.max_retries.or(d.max_retries).unwrap_or(4),
        output: r.output.or(d.output).unwrap_or_default(),
        record_messages: r.record_messages.or(d.record_messages).unwrap_or(false),
        logprobs: r.logprobs.or(d.logprobs).unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_address_carries_no_credential() {
        let endpoint = Endpoint {
            base_url: "http://alice:PW-very-secret@127.0.0.1:8080/v1?token=T0k3n&region=eu".into(),
            model: "m".into(),
            api_key: Some("sk-never-recorded-0123456789".into()),
            temperature: 0.0,
            max_tokens: 1,
            timeout: Duration::from_secs(1),
            max_retries: 0,
            output: OutputMode::Json,
            record_messages: false,
            logprobs: false,
        };
        let recorded = serde_json::to_string(&endpoint.info()).unwrap();
        for secret in ["alice", "PW-very-secret", "T0k3n", "sk-never"] {
            assert!(!recorded.contains(secret), "{secret} in {recorded}");
        }
        assert!(recorded.contains("127.0.0.1:8080/v1"), "{recorded}");
    }
}
