//! MCP server configuration in the form MCP clients already use:
//!
//! ```json
//! {"mcpServers": {
//!   "Time MCP": {"command": "python", "args": ["-m", "mcp_server_time"], "env": {"TZ": "UTC"}, "cwd": "."},
//!   "remote":   {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//! }}
//! ```
//!
//! `${VAR}` in `env` and `headers` values is replaced from the environment. Secrets, handed to
//! the trajectory writer's redactor and cleaned from the log: every header value (literal or
//! expanded), every value a `${VAR}` expanded to, and the literal value of an env key that
//! names a credential (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`…). Other literal env values
//! (`TZ=Europe/Paris`) are not: cutting them out of every tool result would erase data.
//!
//! A server whose entry cannot be used (an unset `${VAR}`) does not stop the others: it is kept
//! with its problem, and fails to start with that message if a run needs it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// How to reach one server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment (expanded).
        env: BTreeMap<String, String>,
        /// Working folder.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra headers (expanded).
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name (the `server` in `server:tool`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Why it cannot be started (an unset `${VAR}` in its entry), if it cannot.
    pub problem: Option<String>,
}

impl ServerConfig {
    /// `stdio` or `http`.
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }

    /// The command line or URL, for headers and messages (never env or header values).
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileShape {
    mcp_servers: BTreeMap<String, EntryShape>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryShape {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Some clients write `"type": "stdio" | "http" | "streamable-http"`; accepted, checked.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Accepted for compatibility with other clients' files; not used.
    #[serde(default, rename = "disabled")]
    _disabled: Option<bool>,
}

/// The servers of a config file, and the secret values its `${VAR}`s expanded to.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// Servers by name, in name order.
    pub servers: Vec<ServerConfig>,
    /// Values taken from the environment; never to be recorded.
    pub secrets: Vec<String>,
}

impl McpConfig {
    /// Reads and checks a config file; its secrets are cleaned from the log from now on.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading MCP config {}", path.display()))?;
        let config =
            Self::parse(&text).with_context(|| format!("in MCP config {}", path.display()))?;
        crate::trajectory::redact::remember_for_logs(config.secrets.iter().map(String::as_str));
        Ok(config)
    }

    /// Parses config text; relative `cwd`s stay relative to the current folder.
    pub fn parse(text: &str) -> Result<Self> {
        let shape: FileShape = serde_json::from_str(text).context(
            "expected {\"mcpServers\": {NAME: {command, args, env, cwd} or {url, headers}}}",
        )?;
        let mut config = Self::default();
        for (name, entry) in shape.mcp_servers {
            if name.contains(':') {
                bail!(
                    "server name \"{name}\" contains ':', which separates server from tool in tool names"
                );
            }
            let mut problem = None;
            // `all_secret`: every value is a secret (headers), else only credential-named keys.
            let mut expand = |map: BTreeMap<String, String>, all_secret: bool| {
                let mut out = BTreeMap::new();
                for (k, v) in map {
                    match expand_vars(&v) {
                        Ok((value, expanded)) => {
                            config.secrets.extend(expanded);
                            if all_secret || names_a_credential(&k) {
                                config.secrets.push(value.clone());
                            }
                            out.insert(k, value);
                        }
                        Err(e) => {
                            problem.get_or_insert(format!("{k}: {e:#}"));
                        }
                    }
                }
                out
            };
            let transport = match (entry.command, entry.url) {
                (Some(command), None) => {
                    if entry.kind.as_deref().is_some_and(|k| k != "stdio") {
                        bail!("server \"{name}\" has a command but type {:?}", entry.kind);
                    }
                    Transport::Stdio {
                        command,
                        args: entry.args,
                        env: expand(entry.env, false),
                        cwd: entry.cwd,
                    }
                }
                (None, Some(url)) => Transport::Http {
                    url,
                    headers: expand(entry.headers, true),
                },
                (Some(_), Some(_)) => {
                    bail!("server \"{name}\" has both a command and a url; give one")
                }
                (None, None) => bail!(
                    "server \"{name}\" needs a \"command\" (stdio) or a \"url\" (streamable HTTP)"
                ),
            };
            config.servers.push(ServerConfig {
                name,
                transport,
                problem,
            });
        }
        Ok(config)
    }

    /// The server of this name, or an error listing the names there are.
    pub fn get(&self, name: &str) -> Result<&ServerConfig> {
        self.servers
            .iter()
            .find(|s| s.name == name)
            .with_context(|| {
                format!(
                    "no server named \"{name}\" in the MCP config; it has: {}",
                    self.servers
                        .iter()
                        .map(|s| format!("\"{}\"", s.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }
}

/// True for an env key that names a credential.
fn names_a_credential(key: &str) -> bool {
    let key = key.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// Replaces `${VAR}` with the environment's value; returns the text and the values used.
fn expand_vars(text: &str) -> Result<(String, Vec<String>)> {
    let mut out = String::new();
    let mut secrets = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').context("unclosed ${")?;
        let var = &after[..end];
        let value =
            std::env::var(var).with_context(|| format!("environment variable {var} is not set"))?;
        secrets.push(value.clone());
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok((out, secrets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_transports() {
        let c = McpConfig::parse(
            r#"{"mcpServers": {"time": {"command": "python", "args": ["-m", "t"]}, "web": {"url": "http://x/mcp", "type": "http"}}}"#,
        )
        .unwrap();
        assert_eq!(c.servers.len(), 2);
        assert_eq!(c.get("time").unwrap().target(), "python -m t");
        assert_eq!(c.get("web").unwrap().transport_name(), "http");
        let err = format!("{:#}", c.get("nope").unwrap_err());
        assert!(err.contains("it has: \"time\", \"web\""), "{err}");
    }

    #[test]
    fn bad_entries_are_named() {
        let e = |t: &str| format!("{:#}", McpConfig::parse(t).unwrap_err());
        assert!(e(r#"{"mcpServers": {"a": {}}}"#).contains("needs a \"command\""));
        assert!(e(r#"{"mcpServers": {"a": {"command": "x", "url": "y"}}}"#).contains("both"));
        assert!(e(r#"{"mcpServers": {"a:b": {"command": "x"}}}"#).contains("':'"));
        assert!(e(r#"{"servers": {}}"#).contains("mcpServers"));
    }

    #[test]
    fn an_unset_variable_spoils_only_its_own_server() {
        let c = McpConfig::parse(
            r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${COSMOS_SURELY_UNSET_VAR}"}}, "b": {"command": "y"}}}"#,
        )
        .unwrap();
        let problem = c.get("a").unwrap().problem.clone().unwrap();
        assert!(
            problem.contains("COSMOS_SURELY_UNSET_VAR") && problem.contains("not set"),
            "{problem}"
        );
        assert_eq!(c.get("b").unwrap().problem, None);
    }

    #[test]
    fn literal_headers_and_credential_named_env_values_are_secrets() {
        let c = McpConfig::parse(
            r#"{"mcpServers": {
                "web": {"url": "http://x", "headers": {"X-Api-Key": "litkey-0123456789"}},
                "cli": {"command": "x", "env": {"GITHUB_TOKEN": "ghp_literal_value", "TZ": "Europe/Paris"}}
            }}"#,
        )
        .unwrap();
        assert!(c.secrets.contains(&"litkey-0123456789".to_string()));
        assert!(c.secrets.contains(&"ghp_literal_value".to_string()));
        assert!(
            !c.secrets.contains(&"Europe/Paris".to_string()),
            "ordinary values stay"
        );
    }

    #[test]
    fn variables_expand_and_become_secrets() {
        // PATH is set in every test environment.
        let path = std::env::var("PATH").unwrap();
        let c = McpConfig::parse(r#"{"mcpServers": {"a": {"url": "http://x", "headers": {"Authorization": "Bearer ${PATH}"}}}}"#).unwrap();
        match &c.servers[0].transport {
            Transport::Http { headers, .. } => {
                assert_eq!(headers["Authorization"], format!("Bearer {path}"))
            }
            other => panic!("{other:?}"),
        }
        // The variable's value, and the header's whole value.
        assert_eq!(c.secrets, vec![path.clone(), format!("Bearer {path}")]);
    }
}
