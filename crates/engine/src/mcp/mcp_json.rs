//! MCP server configuration in the form MCP clients already use:
//!
//! ```json
//! {"mcpServers": {
//!   "Time MCP": {"command": "python", "args": ["-m", "mcp_server_time"], "env": {"TZ": "UTC"}, "cwd": "."},
//!   "remote":   {"url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//! }}
//! ```
//!
//! `${VAR}` in `args`, `url`, `env` and `headers` values is replaced from the environment, as
//! other MCP clients do. Secrets, handed to the trajectory writer's redactor and cleaned from
//! the log: every header value (literal or expanded), every value a `${VAR}` expanded to, the
//! literal value of an env key that names a credential (`*KEY*`, `*TOKEN*`, `*SECRET*`,
//! `*PASSWORD*`…), a URL's userinfo and credential-named query values, and an argument that
//! follows a credential-named flag (`--token X`, `--api-key=X`) or looks like a key (`sk-…`,
//! `ghp_…`, a JWT). Other literal env values (`TZ=Europe/Paris`) are not: cutting them out of
//! every tool result would erase data. The target a run records ([`ServerConfig::target`]) has
//! every such value, and every URL query value, replaced by `***`.
//!
//! A stdio server gets only a short list of the environment ([`INHERITED_ENV`], as the official
//! MCP SDKs pass) plus its own `env`: a third-party server never sees `OPENAI_API_KEY` unless
//! its entry asks for it (`"env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}`).
//!
//! A server whose entry cannot be used (an unset `${VAR}`) does not stop the others: it is kept
//! with its problem, and fails to start with that message if a run needs it.
//!
//! The usual `{"mcpServers": {...}}` file; `${VAR}` expansion (args, url, env,
//! headers), whose values are secrets handed to the redactor; the recorded target with
//! credentials as `***` (and those registered as secrets); `INHERITED_ENV`, the only variables a
//! stdio server gets besides its own `env` (`server.rs` clears the rest).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use cosmos_trajectory::redact::{HIDDEN, looks_like_a_key, names_a_secret_setting, url_shown};

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
        /// The OAuth client it is logged into with (default: registered dynamically); boxed,
        /// as it is most of the variant's size.
        oauth: Box<OAuthClient>,
    },
}

/// The environment variables a stdio server inherits from cosmos (the official MCP SDKs'
/// list, with the locale and the temporary folder); everything else it gets only through its
/// entry's `env`.
pub const INHERITED_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "TMPDIR",
];

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name (the `server` in `server:tool`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Why it cannot be started (an unset `${VAR}` in its entry), if it cannot.
    pub problem: Option<String>,
    /// Declared stateless (`"cosmos": {"shared": true}`): a sweep's worker may give one
    /// process to its cells one after another.
    pub shared: bool,
    /// The state it keeps (`"cosmos": {"state": {"seed": PATH}}`): each run is given a fresh
    /// copy of the seed, named by `${COSMOS_STATE_DIR}` in its `args` and `env`
    /// (`mcp::sandbox`).
    pub state_seed: Option<PathBuf>,
    /// Declared to work on real state (`"cosmos": {"live_state": true}`): its destructive
    /// tools are allowed without a sandbox.
    pub live_state: bool,
    /// Where this run's copy of its seed is (set by `mcp::sandbox::prepare`): the pool reads
    /// it around each call to record how the call changed the state.
    pub state_root: Option<PathBuf>,
    /// The command line or URL with credentials replaced by `***` (what is recorded).
    shown: String,
    /// The secrets known when it was read (its own and those of the servers before it): any
    /// message about it (an error quoting its URL) is cleaned of them.
    secrets: Vec<String>,
}

impl ServerConfig {
    /// A redactor of its secrets (and of keys by construction), for what is said about it.
    pub fn redactor(&self) -> cosmos_trajectory::redact::Redactor {
        cosmos_trajectory::redact::Redactor::with_secrets(self.secrets.clone())
    }

    /// `stdio` or `http`.
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }

    /// The command line or URL, for headers and messages: credentials (URL userinfo and query
    /// values, an argument after a credential-named flag or shaped like a key) are `***`, and
    /// env or header values never appear.
    pub fn target(&self) -> String {
        self.shown.clone()
    }
}

/// A command line as recorded, and the credentials in its arguments: a value after a
/// credential-named flag (`--token X`, `--api-key=X`), an argument shaped like a key, or a
/// URL's credentials.
fn command_shown(command: &str, args: &[String]) -> (String, Vec<String>) {
    let mut secrets = Vec::new();
    let mut shown = vec![command.to_string()];
    let mut after_flag = false;
    for arg in args {
        if after_flag && !arg.starts_with('-') {
            secrets.push(arg.clone());
            shown.push(HIDDEN.into());
            after_flag = false;
            continue;
        }
        after_flag = false;
        if let Some((flag, value)) = arg.split_once('=').filter(|(f, _)| f.starts_with('-')) {
            if names_a_secret_setting(flag) || looks_like_a_key(value) {
                secrets.push(value.to_string());
                shown.push(format!("{flag}={HIDDEN}"));
                continue;
            }
        } else if arg.starts_with('-') && names_a_secret_setting(arg) {
            after_flag = true;
        } else if looks_like_a_key(arg) {
            secrets.push(arg.clone());
            shown.push(HIDDEN.into());
            continue;
        } else if arg.contains("://") {
            let (url, more) = url_shown(arg);
            secrets.extend(more);
            shown.push(url);
            continue;
        }
        shown.push(arg.clone());
    }
    (shown.join(" "), secrets)
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
    /// A client registered with the server's authorization server (`client_id`,
    /// `client_secret`, `scopes`).
    oauth: Option<OAuthClient>,
    /// Some clients write `"type": "stdio" | "http" | "streamable-http"`; accepted, checked.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// Accepted for compatibility with other clients' files; not used.
    #[serde(default, rename = "disabled")]
    _disabled: Option<bool>,
    /// What cosmos alone reads of the entry (other clients ignore an unknown key).
    #[serde(default)]
    cosmos: CosmosShape,
}

/// An entry's `"cosmos"` section.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CosmosShape {
    /// The server holds no state between calls: a sweep's worker starts it once and its cells
    /// use it one after another.
    #[serde(default)]
    shared: bool,
    /// The state the server keeps, copied fresh for each run.
    state: Option<StateShape>,
    /// The server works on real state, knowingly.
    #[serde(default)]
    live_state: bool,
}

/// `"cosmos": {"state": {...}}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateShape {
    /// A file or a folder, copied for each run (relative: to the config file's folder).
    seed: PathBuf,
}

/// The servers of a config file, and the secret values its `${VAR}`s expanded to.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// Servers by name, in name order.
    pub servers: Vec<ServerConfig>,
    /// Values taken from the environment; never to be recorded.
    pub secrets: Vec<String>,
}

/// One entry of the config, its `${VAR}`s expanded: each value that is or holds a secret joins
/// `secrets` (so far, the whole file's), which the server keeps a copy of. A problem that spoils
/// only this server is kept in it; one that makes the file wrong is an error.
fn server_of(name: String, entry: EntryShape, secrets: &mut Vec<String>) -> Result<ServerConfig> {
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
                    secrets.extend(expanded);
                    if all_secret || names_a_secret_setting(&k) {
                        secrets.push(value.clone());
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
        (Some(_), None) if entry.oauth.is_some() => {
            bail!("server \"{name}\" has \"oauth\", which is for a \"url\" server")
        }
        (Some(command), None) => {
            if entry.kind.as_deref().is_some_and(|k| k != "stdio") {
                bail!("server \"{name}\" has a command but type {:?}", entry.kind);
            }
            let env = expand(entry.env, false);
            let mut args = Vec::with_capacity(entry.args.len());
            for arg in entry.args {
                match expand_vars(&arg) {
                    Ok((value, expanded)) => {
                        secrets.extend(expanded);
                        args.push(value);
                    }
                    Err(e) => {
                        problem.get_or_insert(format!("args: {e:#}"));
                        args.push(arg);
                    }
                }
            }
            Transport::Stdio {
                command,
                args,
                env,
                cwd: entry.cwd,
            }
        }
        (None, Some(url)) => {
            let headers = expand(entry.headers, true);
            let mut oauth = entry.oauth.unwrap_or_default();
            // Each credential is a secret of the run, expanded or written out.
            for (field, secret) in [
                ("client_secret", &mut oauth.client_secret),
                ("private_key", &mut oauth.private_key),
                ("assertion", &mut oauth.assertion),
                ("id_token", &mut oauth.id_token),
                ("idp_client_secret", &mut oauth.idp_client_secret),
            ] {
                let Some(written) = secret.take() else {
                    continue;
                };
                match expand_vars(&written) {
                    Ok((value, expanded)) => {
                        secrets.extend(expanded);
                        secrets.push(value.clone());
                        *secret = Some(value);
                    }
                    Err(e) => {
                        problem.get_or_insert(format!("oauth.{field}: {e:#}"));
                    }
                }
            }
            let url = match expand_vars(&url) {
                Ok((value, expanded)) => {
                    secrets.extend(expanded);
                    value
                }
                Err(e) => {
                    problem.get_or_insert(format!("url: {e:#}"));
                    url
                }
            };
            Transport::Http {
                url,
                headers,
                oauth: Box::new(oauth),
            }
        }
        (Some(_), Some(_)) => {
            bail!("server \"{name}\" has both a command and a url; give one")
        }
        (None, None) => {
            bail!("server \"{name}\" needs a \"command\" (stdio) or a \"url\" (streamable HTTP)")
        }
    };
    let (shown, in_target) = match &transport {
        Transport::Stdio { command, args, .. } => command_shown(command, args),
        Transport::Http { url, .. } => url_shown(url),
    };
    secrets.extend(in_target);
    // A `${VAR}`'s value is a secret wherever it was placed (a URL's path, an argument
    // that names no credential): the shown target never holds it.
    let shown = cosmos_trajectory::redact::Redactor::with_secrets(secrets.clone())
        .redact_str(&shown)
        .unwrap_or(shown);
    let state_seed = entry.cosmos.state.map(|s| s.seed);
    if state_seed.is_some() && matches!(transport, Transport::Http { .. }) {
        bail!(
            "server \"{name}\": \"cosmos\": {{\"state\": ...}} is for a server cosmos \
             starts (\"command\"): a \"url\" server keeps its state where cosmos cannot \
             copy it"
        );
    }
    if state_seed.is_some() && entry.cosmos.shared {
        bail!(
            "server \"{name}\": a server with \"state\" is not \"shared\": each run gets \
             its own copy"
        );
    }
    if state_seed.is_none() && names_state_dir(&transport) {
        problem.get_or_insert(format!(
            "it names ${{{STATE_DIR_VAR}}} but declares no \"cosmos\": {{\"state\": \
             {{\"seed\": PATH}}}} for cosmos to fill it"
        ));
    }
    if let Some(place) = names_state_dir_elsewhere(&transport) {
        problem.get_or_insert(format!(
            "its {place} names ${{{STATE_DIR_VAR}}}, which cosmos fills only in \"args\", \
             \"env\" and \"cwd\" (elsewhere it would be used as written)"
        ));
    }
    if entry.cosmos.shared && matches!(transport, Transport::Http { .. }) {
        bail!(
            "server \"{name}\": \"cosmos\": {{\"shared\": true}} is for a server cosmos starts \
             (\"command\"); a \"url\" server is already one process for every run"
        );
    }
    Ok(ServerConfig {
        name,
        transport,
        problem,
        shared: entry.cosmos.shared,
        state_seed,
        live_state: entry.cosmos.live_state,
        state_root: None,
        shown,
        secrets: secrets.clone(),
    })
}

impl McpConfig {
    /// Reads and checks a config file; its secrets are cleaned from the log from now on.
    pub fn load(path: &Path) -> Result<Self> {
        let text = cosmos_trajectory::small_file::read_string_within(
            path,
            cosmos_trajectory::small_file::CONFIG_BYTES,
        )
        .with_context(|| format!("reading MCP config {}", path.display()))?;
        let mut config =
            Self::parse(&text).with_context(|| format!("in MCP config {}", path.display()))?;
        // A seed is found beside the config that names it, wherever cosmos runs from.
        let beside = path.parent().unwrap_or(Path::new(""));
        for server in &mut config.servers {
            if let Some(seed) = server.state_seed.as_mut().filter(|s| s.is_relative()) {
                *seed = beside.join(&*seed);
            }
        }
        cosmos_trajectory::redact::remember_for_logs(config.secrets.iter().map(String::as_str));
        Ok(config)
    }

    /// Parses config text; relative `cwd`s stay relative to the current folder.
    pub fn parse(text: &str) -> Result<Self> {
        let shape: FileShape = serde_json::from_str(text).context(
            "expected {\"mcpServers\": {NAME: {command, args, env, cwd} or {url, headers}}}",
        )?;
        let mut config = Self::default();
        for (name, entry) in shape.mcp_servers {
            let server = server_of(name, entry, &mut config.secrets)?;
            config.servers.push(server);
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
/// The variable a stateful server's entry names its run's copy of the state by: filled per run
/// (`mcp::sandbox`), never from the environment.
pub const STATE_DIR_VAR: &str = "COSMOS_STATE_DIR";

/// True when a stdio entry's arguments, environment or folder name [`STATE_DIR_VAR`].
pub(crate) fn names_state_dir(transport: &Transport) -> bool {
    let named = format!("${{{STATE_DIR_VAR}}}");
    match transport {
        Transport::Stdio { args, env, cwd, .. } => {
            args.iter().chain(env.values()).any(|v| v.contains(&named))
                || cwd
                    .as_ref()
                    .is_some_and(|c| c.to_string_lossy().contains(&named))
        }
        Transport::Http { .. } => false,
    }
}

/// Where an entry names [`STATE_DIR_VAR`] in a place cosmos does not fill (`command`, `url`, a
/// header), if it does.
fn names_state_dir_elsewhere(transport: &Transport) -> Option<&'static str> {
    let named = format!("${{{STATE_DIR_VAR}}}");
    match transport {
        Transport::Stdio { command, .. } => command.contains(&named).then_some("\"command\""),
        Transport::Http { url, headers, .. } => {
            if url.contains(&named) {
                Some("\"url\"")
            } else {
                headers
                    .values()
                    .any(|v| v.contains(&named))
                    .then_some("\"headers\"")
            }
        }
    }
}

/// Replaces `${VAR}` with the environment's value; returns the text and the values used.
/// `${COSMOS_STATE_DIR}` stays as it is: each run fills it ([`STATE_DIR_VAR`]).
fn expand_vars(text: &str) -> Result<(String, Vec<String>)> {
    let mut out = String::new();
    let mut secrets = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').context("unclosed ${")?;
        let var = &after[..end];
        if var == STATE_DIR_VAR {
            out.push_str(&rest[start..start + 2 + end + 1]);
            rest = &after[end + 1..];
            continue;
        }
        let value =
            std::env::var(var).with_context(|| format!("environment variable {var} is not set"))?;
        secrets.push(value.clone());
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok((out, secrets))
}

/// How cosmos gets a server's tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person logs in through a browser (`cosmos login`), once.
    #[default]
    AuthorizationCode,
    /// The client's own credentials, exchanged at start: unattended runs and sweeps. Its
    /// secret (`client_secret`), or a JWT it signs with its private key (`private_key`:
    /// `private_key_jwt`, RFC 7523).
    ClientCredentials,
    /// A JWT issued to this workload by an identity provider the authorization server
    /// trusts (`assertion`), exchanged for a token at start (the jwt-bearer grant, RFC 7523).
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): the user's ID token from the enterprise's
    /// identity provider (`id_token`) exchanged there for an identity assertion grant
    /// (RFC 8693), which the server's authorization server exchanges for a token (RFC 7523).
    EnterpriseManaged,
}

/// A server's `"oauth"` section of `mcp.json`: a client registered with its authorization
/// server beforehand (without one, cosmos registers itself dynamically), and the grant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthClient {
    /// How tokens are got (`authorization_code`, the default, or `client_credentials`).
    #[serde(default)]
    pub grant: Grant,
    /// The client's id.
    pub client_id: Option<String>,
    /// Its secret (a `${VAR}`; a secret of the run like any expanded value).
    pub client_secret: Option<String>,
    /// Scopes to ask for (default: what the server says it needs).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// An HTTPS address where this client's metadata document is published (a client ID
    /// metadata document): its client id at authorization servers that take such documents,
    /// instead of registering dynamically.
    pub client_metadata_url: Option<String>,
    /// `client_credentials` with `private_key_jwt`: the client's PKCS#8 private key, PEM
    /// (a `${VAR}`), which signs each token request's client assertion.
    pub private_key: Option<String>,
    /// The key's algorithm: `ES256` (the default) or `RS256`.
    pub signing_algorithm: Option<String>,
    /// `jwt_bearer`: the JWT to exchange (a `${VAR}`).
    pub assertion: Option<String>,
    /// `enterprise_managed`: the user's OpenID Connect ID token from the identity provider (a
    /// `${VAR}`).
    pub id_token: Option<String>,
    /// `enterprise_managed`: the identity provider's issuer.
    pub idp_issuer: Option<String>,
    /// `enterprise_managed`: the identity provider's token endpoint.
    pub idp_token_endpoint: Option<String>,
    /// `enterprise_managed`: this client's id at the identity provider.
    pub idp_client_id: Option<String>,
    /// `enterprise_managed`: its secret there, when it has one (a `${VAR}`).
    pub idp_client_secret: Option<String>,
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
    fn every_oauth_credential_is_a_secret_written_out_or_expanded() {
        // SAFETY: a test-only variable no other test reads.
        unsafe { std::env::set_var("COSMOS_TEST_WIF_JWT", "eyJ.wif-token.sig") };
        let c = McpConfig::parse(
            r#"{"mcpServers": {
                "jwt": {"url": "http://x", "oauth": {"grant": "client_credentials", "client_id": "c",
                        "private_key": "-----BEGIN PRIVATE KEY-----\nMIGHAgEA\n-----END PRIVATE KEY-----"}},
                "wif": {"url": "http://y", "oauth": {"grant": "jwt_bearer", "client_id": "w",
                        "assertion": "${COSMOS_TEST_WIF_JWT}"}},
                "ema": {"url": "http://z", "oauth": {"grant": "enterprise_managed", "client_id": "e",
                        "id_token": "eyJ.user-id-token.sig", "idp_client_secret": "idp-secret-4242",
                        "idp_issuer": "http://idp", "idp_token_endpoint": "http://idp/token",
                        "idp_client_id": "i"}}
            }}"#,
        )
        .unwrap();
        for secret in ["eyJ.user-id-token.sig", "idp-secret-4242"] {
            assert!(c.secrets.contains(&secret.to_string()), "{secret}");
        }
        let Transport::Http { oauth, .. } = &c.get("ema").unwrap().transport else {
            panic!("an HTTP server")
        };
        assert_eq!(oauth.grant, Grant::EnterpriseManaged);
        assert!(
            c.secrets.iter().any(|s| s.contains("MIGHAgEA")),
            "{:?}",
            c.secrets
        );
        assert!(c.secrets.contains(&"eyJ.wif-token.sig".to_string()));
        let Transport::Http { oauth, .. } = &c.get("wif").unwrap().transport else {
            panic!("an HTTP server")
        };
        assert_eq!(oauth.grant, Grant::JwtBearer);
        assert_eq!(oauth.assertion.as_deref(), Some("eyJ.wif-token.sig"));
    }

    #[test]
    fn targets_hide_credentials_and_keep_the_rest() {
        let c = McpConfig::parse(
            &serde_json::json!({"mcpServers": {
                "cli": {"command": "npx", "args": ["-y", "@scope/server-x", "--port", "8080",
                    "--password", "hunter2-long", "--auth-token=abc", "/home/me/data",
                    "sk-proj-0123456789abcdef", "https://tok-as-user-123@h.example/x?q=1"]},
                "web": {"url": "https://h.example:8443/mcp?session=s3cr3t-session-val&region=eu"}
            }})
            .to_string(),
        )
        .unwrap();
        assert_eq!(
            c.get("cli").unwrap().target(),
            "npx -y @scope/server-x --port 8080 --password *** --auth-token=*** /home/me/data *** \
             https://***@h.example/x?q=***"
        );
        assert_eq!(
            c.get("web").unwrap().target(),
            "https://h.example:8443/mcp?session=***&region=***"
        );
        for secret in [
            "hunter2-long",
            "abc",
            "sk-proj-0123456789abcdef",
            "tok-as-user-123",
            "s3cr3t-session-val",
        ] {
            assert!(c.secrets.contains(&secret.to_string()), "{secret}");
        }
        // Ordinary values are hidden in the target but not cut out of every tool result.
        assert!(!c.secrets.contains(&"eu".to_string()));
        assert!(!looks_like_a_key("@modelcontextprotocol/server-everything"));
        assert!(!looks_like_a_key("unit_converter_mcp.server"));
        assert!(looks_like_a_key("eyJhbGciOiJIUzI1NiJ9.e30.sig"));
    }

    #[test]
    fn variables_in_args_and_urls_expand() {
        let path = std::env::var("PATH").unwrap();
        let c = McpConfig::parse(
            r#"{"mcpServers": {"a": {"command": "x", "args": ["--dir", "${PATH}"]}, "b": {"url": "http://h/${COSMOS_SURELY_UNSET_VAR}"}}}"#,
        )
        .unwrap();
        match &c.get("a").unwrap().transport {
            Transport::Stdio { args, .. } => assert_eq!(args[1], path),
            other => panic!("{other:?}"),
        }
        assert!(c.secrets.contains(&path));
        let problem = c.get("b").unwrap().problem.clone().unwrap();
        assert!(problem.contains("COSMOS_SURELY_UNSET_VAR"), "{problem}");
    }

    #[test]
    fn a_variables_value_is_never_shown_wherever_it_stands() {
        // PATH is set in every test environment, and long enough to be a secret.
        let path = std::env::var("PATH").unwrap();
        let c = McpConfig::parse(
            r#"{"mcpServers": {"a": {"url": "http://h/keys/${PATH}/mcp"}, "b": {"command": "x", "args": ["--dir", "${PATH}"]}}}"#,
        )
        .unwrap();
        for server in &c.servers {
            assert!(!server.target().contains(&path), "{}", server.target());
        }
        assert!(c.get("a").unwrap().target().starts_with("http://h/keys/"));
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
