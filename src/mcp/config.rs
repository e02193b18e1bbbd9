//! MCP server configuration in the form MCP clients already use:
//!
//! ```json
//! {"mcpServers": {
//!   "Time MCP": {"command": "python", "args": ["-m", "mcp_server_time"], "env": {"TZ": "UTC"}, "cwd": "."},
//!   "remote":   {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//! }}
//! ```
//!
//! `${VAR}` in `env` and `headers` values is replaced from the environment; the values so
//! obtained are secrets and are handed to the trajectory writer's redactor.

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
    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading MCP config {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in MCP config {}", path.display()))
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
            let mut expand = |map: BTreeMap<String, String>| -> Result<BTreeMap<String, String>> {
                map.into_iter()
                    .map(|(k, v)| {
                        let (value, secrets) =
                            expand_vars(&v).with_context(|| format!("server \"{name}\", {k}"))?;
                        config.secrets.extend(secrets);
                        Ok((k, value))
                    })
                    .collect()
            };
            let transport = match (entry.command, entry.url) {
                (Some(command), None) => {
                    if entry.kind.as_deref().is_some_and(|k| k != "stdio") {
                        bail!("server \"{name}\" has a command but type {:?}", entry.kind);
                    }
                    Transport::Stdio {
                        command,
                        args: entry.args,
                        env: expand(entry.env)?,
                        cwd: entry.cwd,
                    }
                }
                (None, Some(url)) => Transport::Http {
                    url,
                    headers: expand(entry.headers)?,
                },
                (Some(_), Some(_)) => {
                    bail!("server \"{name}\" has both a command and a url; give one")
                }
                (None, None) => bail!(
                    "server \"{name}\" needs a \"command\" (stdio) or a \"url\" (streamable HTTP)"
                ),
            };
            config.servers.push(ServerConfig { name, transport });
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
        assert!(e(r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "${COSMOS_SURELY_UNSET_VAR}"}}}}"#).contains("not set"));
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
        assert_eq!(c.secrets, vec![path]);
    }
}
