//! Remote servers behind the MCP authorization spec: logging in (authorization code with PKCE
//! through the user's browser and a loopback redirect; discovery, dynamic registration or a
//! pre-registered client are rmcp's `auth`), the token store, and the authorized HTTP client a
//! connection uses (rmcp refreshes an expired token when the server gave a refresh token).
//!
//! Tokens live in `${COSMOS_CACHE:-~/.cache/mcp-cosmos}/oauth/`, one file per server URL and
//! client, readable by the owner only, outside every repository. They are never written to a
//! trajectory, a log or a child's environment; a run's redactor is given the ones it uses.
//!
//! Remote servers behind the MCP authorization spec, through rmcp's `auth`:
//! `login` (discovery from the server's 401 challenge, `discovered`: its `resource_metadata`
//! first, then the well-known paths, then the 2025-03-26 layout at the origin, `origin_metadata`;
//! the challenge's scope when the entry names none; dynamic registration or the entry's `"oauth"` client or its client ID
//! metadata document, PKCE, `$BROWSER` or the address printed, the redirect to a loopback port;
//! `--scope` steps a login up), `step_up` (a call refused with 403 `insufficient_scope`:
//! `Server::call_watching` asks it, and a client-credentials server gets a token for the union
//! of scopes and the call is made once more; a login's is made again through whoever answers
//! questions, the live explorer's `tui::overlays::page_prompt` or a proxy's client, and without one the
//! error names the command), `TokenStore` (rmcp's
//! `CredentialStore` as an owner-only file per URL and client under `$COSMOS_CACHE/oauth`,
//! written whole), `authorized_client` (the HTTP client `server.rs` connects with when a login
//! is stored; rmcp refreshes it; a `client_credentials` entry exchanges its id and secret here
//! when no fresh token is stored), `check_logins` (before a run starts any server: a server that
//! answers 401 without a stored login stops the run, naming `cosmos login`; the stored tokens go
//! to the run's redactor). `cli/logging.rs` holds rmcp's auth module at `info`: it logs token
//! responses at debug.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use super::mcp_json::{Grant, OAuthClient};
use super::mcp_json::{ServerConfig, Transport};

/// Where tokens are kept: `$COSMOS_CACHE/oauth`, else `~/.cache/mcp-cosmos/oauth`.
pub fn token_dir() -> Result<PathBuf> {
    let cache = match std::env::var_os("COSMOS_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".cache/mcp-cosmos"))
            .context("no $HOME and no $COSMOS_CACHE: nowhere to keep tokens")?,
    };
    Ok(cache.join("oauth"))
}

/// What one token file holds: the server it is for (so `logout` and messages can name it) and
/// rmcp's credentials.
#[derive(Serialize, Deserialize)]
struct TokenFile {
    url: String,
    credentials: StoredCredentials,
}

/// The token store of one server URL and client: a file written whole (a temporary file
/// renamed over it), owner-only.
#[derive(Debug, Clone)]
pub struct TokenStore {
    url: String,
    path: PathBuf,
}

impl TokenStore {
    /// The store of `url` with `client` (a configured client gets a file of its own).
    pub fn new(url: &str, client: &OAuthClient) -> Result<Self> {
        let key = format!(
            "{url}\u{0}{}",
            client
                .client_id
                .as_deref()
                .or(client.client_metadata_url.as_deref())
                .unwrap_or("dynamic")
        );
        let name = format!(
            "{:016x}.json",
            cosmos_trajectory::fnv::fnv1a(key.as_bytes())
        );
        Ok(Self {
            url: url.to_string(),
            path: token_dir()?.join(name),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored credentials, if there are any (a file that cannot be read is an error
    /// naming it, never silently a logged-out server).
    pub fn read(&self) -> Result<Option<StoredCredentials>> {
        match cosmos_trajectory::small_file::read_within(
            &self.path,
            cosmos_trajectory::small_file::TOKEN_BYTES,
        ) {
            Ok(bytes) => {
                let file: TokenFile = serde_json::from_slice(&bytes)
                    .with_context(|| format!("reading tokens {}", self.path.display()))?;
                Ok(Some(file.credentials))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading tokens {}", self.path.display())),
        }
    }

    fn write(&self, credentials: StoredCredentials) -> Result<()> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        let dir = self.path.parent().context("token file has a folder")?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let text = serde_json::to_vec(&TokenFile {
            url: self.url.clone(),
            credentials,
        })?;
        let temp = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)
                .with_context(|| format!("creating {}", temp.display()))?;
            file.write_all(&text)?;
            file.sync_all()?;
        }
        std::fs::rename(&temp, &self.path)
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Forgets the tokens; true when there were any.
    pub fn remove(&self) -> Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e).with_context(|| format!("removing {}", self.path.display())),
        }
    }
}

/// The access and refresh tokens `credentials` hold, for the redactor.
fn tokens(credentials: &StoredCredentials) -> Vec<String> {
    let Ok(value) = serde_json::to_value(&credentials.token_response) else {
        return Vec::new();
    };
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|k| value.get(k).and_then(|v| v.as_str()).map(String::from))
        .collect()
}

fn store_error(e: anyhow::Error) -> AuthError {
    AuthError::InternalError(format!("{e:#}"))
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove().map(drop).map_err(store_error)
    }
}

/// An authorization manager for `url`. Private addresses (a server on this machine or the
/// local network) are allowed only for a server that is itself at one.
async fn manager(url: &str) -> Result<AuthorizationManager> {
    super::install_tls_provider();
    let parsed = url::Url::parse(url).with_context(|| format!("server URL {url}"))?;
    let local = match parsed.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    let made = if local {
        AuthorizationManager::new_allowing_private_addresses(url).await
    } else {
        AuthorizationManager::new(url).await
    };
    made.map_err(|e| anyhow!("{e}"))
}

/// True when `credentials` hold a token that has not expired.
fn fresh(credentials: &StoredCredentials) -> bool {
    let Some(token) = &credentials.token_response else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Read as written: rmcp re-exports the response type, not the trait that reads it.
    let lasts = serde_json::to_value(token)
        .ok()
        .and_then(|v| v.get("expires_in").and_then(serde_json::Value::as_u64));
    match (lasts, credentials.token_received_at) {
        (Some(lasts), Some(at)) => at + lasts > now + 30,
        _ => true,
    }
}

/// Exchanges the configured client's id and secret for a token (the client-credentials
/// grant) with `scopes` (the configured ones when empty), stored like a login's, unless a
/// stored one is still fresh and `renew` is false.
async fn client_credentials(
    url: &str,
    client: &OAuthClient,
    store: &TokenStore,
    scopes: &[String],
    renew: bool,
) -> Result<()> {
    if !renew && store.read()?.as_ref().is_some_and(fresh) {
        return Ok(());
    }
    if client.grant == Grant::JwtBearer || client.private_key.is_some() {
        return by_assertion(url, client, store, scopes).await;
    }
    if client.grant == Grant::EnterpriseManaged {
        return enterprise_managed(url, client, store, scopes).await;
    }
    let (Some(id), Some(secret)) = (&client.client_id, &client.client_secret) else {
        bail!("the client_credentials grant needs oauth.client_id and oauth.client_secret");
    };
    let (mut manager, _, _) = discovered(url, store).await?;
    let config = ClientCredentialsConfig::ClientSecret {
        client_id: id.clone(),
        client_secret: secret.clone(),
        scopes: if scopes.is_empty() {
            client.scopes.clone()
        } else {
            scopes.to_vec()
        },
        resource: Some(url.to_string()),
    };
    manager
        .configure_client_credentials(&config)
        .map_err(|e| anyhow!("{url}: {e}"))?;
    // rmcp bounds the reply (1 MiB) and waits 30 s; a silent endpoint is given up on sooner,
    // and said so (rmcp's own words for both are "Request failed").
    tokio::time::timeout(PROBE_WITHIN, manager.exchange_client_credentials(&config))
        .await
        .map_err(|_| {
            anyhow!(
                "the client-credentials grant at {url}: its token endpoint did not answer within {}s",
                PROBE_WITHIN.as_secs()
            )
        })?
        .map_err(|e| anyhow!("the client-credentials grant at {url}: {e}"))?;
    Ok(())
}

/// A token got by a JWT at the token endpoint, stored like a login's: the client-credentials
/// grant with a client assertion the client signs (`private_key_jwt`), or the jwt-bearer
/// grant with the assertion it was given (RFC 7523). rmcp's own JWT support needs aws-lc, so
/// the request is made here.
async fn by_assertion(
    url: &str,
    client: &OAuthClient,
    store: &TokenStore,
    scopes: &[String],
) -> Result<()> {
    let id = client
        .client_id
        .as_deref()
        .context("a token by assertion needs oauth.client_id")?;
    let (_, _, metadata) = discovered(url, store).await?;
    let endpoint = metadata.token_endpoint.clone();
    let scopes = if scopes.is_empty() {
        client.scopes.clone()
    } else {
        scopes.to_vec()
    };
    // (The form is done before anything is awaited: its encoder is not `Send`.)
    let body = {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        if client.grant == Grant::JwtBearer {
            let assertion = client
                .assertion
                .as_deref()
                .context("the jwt_bearer grant needs oauth.assertion")?;
            form.append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
                .append_pair("assertion", assertion);
        } else {
            let key = client.private_key.as_deref().unwrap_or_default();
            let algorithm = client.signing_algorithm.as_deref().unwrap_or("ES256");
            // Its audience: the authorization server, by its issuer (else its token endpoint).
            let audience = metadata.issuer.as_deref().unwrap_or(&endpoint);
            let signed = super::client_assertion::sign(id, audience, key, algorithm)?;
            form.append_pair("grant_type", "client_credentials")
                .append_pair(
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                )
                .append_pair("client_assertion", &signed);
        }
        form.append_pair("client_id", id)
            .append_pair("resource", url);
        if !scopes.is_empty() {
            form.append_pair("scope", &scopes.join(" "));
        }
        form.finish()
    };
    super::install_tls_provider();
    let mut answer = reqwest::Client::new()
        .post(&endpoint)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(body)
        .timeout(PROBE_WITHIN)
        .send()
        .await
        .with_context(|| format!("asking {endpoint} for a token"))?;
    let status = answer.status();
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .with_context(|| format!("reading {endpoint}"))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > METADATA_BYTES {
            bail!("{endpoint} answered with over {} KiB", METADATA_BYTES >> 10);
        }
    }
    if !status.is_success() {
        let said: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let words = |key: &str| {
            said.get(key)
                .and_then(serde_json::Value::as_str)
                .map(|t| cosmos_trajectory::sanitize::one_line(t, 300))
        };
        bail!(
            "{endpoint} refused the token request (HTTP {}): {}{}",
            status.as_u16(),
            words("error").unwrap_or_else(|| "no reason given".into()),
            words("error_description").map_or(String::new(), |d| format!(": {d}"))
        );
    }
    let response: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_slice(&body)
        .with_context(|| format!("{endpoint}'s answer is no token response"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut stored = StoredCredentials::new(id.to_string(), Some(response), scopes, Some(now));
    stored.issuer = metadata.issuer.clone();
    store.write(stored)
}

/// A token by enterprise-managed authorization (SEP-990), stored like a login's: the user's ID
/// token exchanged at the identity provider for an identity assertion grant (ID-JAG), and that
/// at the server's authorization server (found as a login finds it) for a token bound to the
/// server, each client authenticated by its secret (HTTP Basic) when it has one. rmcp makes
/// both requests (`auth::enterprise`), bounded and without redirects.
async fn enterprise_managed(
    url: &str,
    client: &OAuthClient,
    store: &TokenStore,
    scopes: &[String],
) -> Result<()> {
    use rmcp::transport::auth::enterprise::{
        EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
    };
    let needs = |value: &Option<String>, field: &str| {
        value
            .clone()
            .with_context(|| format!("the enterprise_managed grant needs oauth.{field}"))
    };
    let id = needs(&client.client_id, "client_id")?;
    let id_token = needs(&client.id_token, "id_token")?;
    let (_, _, metadata) = discovered(url, store).await?;
    let issuer = metadata
        .issuer
        .clone()
        .with_context(|| format!("{url}'s authorization server names no issuer"))?;
    let authenticated = |secret: &Option<String>| match secret {
        Some(secret) => {
            EmaClientAuthentication::ClientSecretBasic(oauth2::ClientSecret::new(secret.clone()))
        }
        None => EmaClientAuthentication::None,
    };
    let idp = EmaAuthorizationServer::new(
        needs(&client.idp_issuer, "idp_issuer")?,
        needs(&client.idp_token_endpoint, "idp_token_endpoint")?,
        needs(&client.idp_client_id, "idp_client_id")?,
    )
    .with_client_authentication(authenticated(&client.idp_client_secret));
    let resource_server =
        EmaAuthorizationServer::new(issuer.clone(), metadata.token_endpoint.clone(), id.clone())
            .with_client_authentication(authenticated(&client.client_secret));
    let scopes = if scopes.is_empty() {
        client.scopes.clone()
    } else {
        scopes.to_vec()
    };
    super::install_tls_provider();
    let http = rmcp::transport::auth::default_oauth_http_client()
        .map_err(|e| anyhow!("an HTTP client for the token exchange: {e}"))?;
    let exchange = EmaExchangeRequest::new_with_id_token(idp, resource_server, url, &id_token)
        .with_scopes(scopes.iter().cloned())
        .exchange(&http, &http);
    // Two requests, each bounded by rmcp (its reply size and 30 s); a silent server is given
    // up on sooner, and said so.
    let token = tokio::time::timeout(2 * PROBE_WITHIN, exchange)
        .await
        .map_err(|_| {
            anyhow!(
                "enterprise-managed authorization for {url}: no token within {}s",
                2 * PROBE_WITHIN.as_secs()
            )
        })?
        .map_err(|e| anyhow!("enterprise-managed authorization for {url}: {e}"))?;
    let mut granted: Vec<String> = token.scopes.iter().cloned().collect();
    granted.sort();
    let response: rmcp::transport::auth::OAuthTokenResponse =
        serde_json::from_value(serde_json::json!({
            "access_token": token.access_token.secret(),
            "token_type": "Bearer",
            "expires_in": token.expires_in.map(|d| d.as_secs()),
            "scope": (!granted.is_empty()).then(|| granted.join(" ")),
        }))
        .context("the exchanged token")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut stored = StoredCredentials::new(id, Some(response), granted, Some(now));
    stored.issuer = Some(issuer);
    store.write(stored)
}

/// The scopes `credentials` were granted (as stored, else as the token response says).
fn granted(credentials: &StoredCredentials) -> Vec<String> {
    if !credentials.granted_scopes.is_empty() {
        return credentials.granted_scopes.clone();
    }
    serde_json::to_value(&credentials.token_response)
        .ok()
        .and_then(|v| v.get("scope").and_then(|s| s.as_str()).map(String::from))
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// `held` with each scope of `more` not in it yet, in order.
fn union<'a>(held: &[String], more: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut all = held.to_vec();
    for scope in more {
        if !all.iter().any(|s| s == scope) {
            all.push(scope.to_string());
        }
    }
    all
}

/// The server `name` at `url` refused a call for want of `required` scopes (403
/// `insufficient_scope`): step up to the union of what is held and what it asks. A
/// client-credentials server gets a new token here at once (the caller then calls again); a
/// login cannot be repeated unattended, so the error names the command that steps it up.
pub async fn step_up(url: &str, client: &OAuthClient, name: &str, required: &str) -> Result<()> {
    let store = TokenStore::new(url, client)?;
    let held = store.read()?.as_ref().map(granted).unwrap_or_default();
    let held = union(&held, client.scopes.iter().map(String::as_str));
    let wanted = union(&held, required.split_whitespace());
    if wanted.len() == held.len() && !held.is_empty() {
        bail!(
            "it asks for scope \"{required}\", which the token already holds ({})",
            held.join(" ")
        );
    }
    match client.grant {
        Grant::ClientCredentials | Grant::JwtBearer | Grant::EnterpriseManaged => {
            client_credentials(url, client, &store, &wanted, true)
                .await
                .with_context(|| format!("asking for scope \"{}\"", wanted.join(" ")))
        }
        Grant::AuthorizationCode => {
            let extra = wanted[held.len()..].join(" --scope ");
            let held = if held.is_empty() {
                "none named".to_string()
            } else {
                held.join(" ")
            };
            let refused = format!(
                "it asks for scope \"{required}\" beyond this login's ({held}): log in again \
                 with it, `cosmos login {name} --mcp-config FILE --scope {extra}`"
            );
            if !super::elicitation::someone_to_ask() {
                bail!(refused);
            }
            // A person at the live explorer (or a proxy's client) can log in again now.
            let pending = Pending::start(url, client, &store, wanted).await?;
            let (answer, answered) = tokio::sync::oneshot::channel();
            let question = super::elicitation::Question {
                server: name.to_string(),
                tool: None,
                request: rmcp::model::ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message: format!(
                        "{name} asks for scope \"{required}\" beyond this login's ({held}): \
                         log in again to grant it"
                    ),
                    url: pending.address.clone(),
                    elicitation_id: format!("cosmos-login-{name}"),
                },
                answer,
            };
            if !super::elicitation::ask(question) {
                bail!(refused);
            }
            let _ = open_browser(&pending.address);
            let finishing = pending.finish(super::elicitation::ANSWER_WITHIN);
            tokio::pin!(finishing);
            tokio::select! {
                done = &mut finishing => done,
                said = answered => match said {
                    Ok(said) if said.action != rmcp::model::ElicitationAction::Accept => {
                        bail!("{refused} (the new login was not made: {})", said.reason)
                    }
                    _ => finishing.await,
                },
            }
        }
    }
}

/// Longest wait for a server's answer to the unauthenticated request that finds whether it
/// wants a login, and how (its challenge).
const PROBE_WITHIN: Duration = Duration::from_secs(15);

/// Largest authorization server metadata document read.
const METADATA_BYTES: usize = 256 << 10;

/// A manager for `url` keeping its tokens in `store`, its authorization server discovered from
/// the server's 401 challenge (`WWW-Authenticate`: its `resource_metadata` URL first), then the
/// well-known paths of the protected-resource metadata and the server's own metadata; with the
/// challenge, if the server gave one.
async fn discovered(
    url: &str,
    store: &TokenStore,
) -> Result<(
    AuthorizationManager,
    Option<String>,
    rmcp::transport::auth::AuthorizationMetadata,
)> {
    let challenge = challenge_of(url).await;
    let mut manager = manager(url).await?;
    manager.set_credential_store(store.clone());
    let metadata = match manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
    {
        Ok(resolved) => resolved.metadata,
        // MCP's 2025-03-26 layout: the metadata at the server's origin, whatever its issuer
        // (RFC 8414's check of the issuer against the path came with the later revisions).
        Err(AuthError::AuthorizationServerMismatch { .. }) => origin_metadata(url)
            .await
            .with_context(|| format!("discovering how {url} authorizes (2025-03-26 layout)"))?,
        Err(e) => bail!("discovering how {url} authorizes: {e}"),
    };
    manager.set_metadata(metadata.clone());
    Ok((manager, challenge, metadata))
}

/// The authorization server metadata at the origin of `url`, as MCP's 2025-03-26 revision
/// has a client find it, within [`PROBE_WITHIN`].
async fn origin_metadata(url: &str) -> Result<rmcp::transport::auth::AuthorizationMetadata> {
    let mut at = url::Url::parse(url).with_context(|| format!("the URL {url}"))?;
    at.set_path("/.well-known/oauth-authorization-server");
    at.set_query(None);
    let mut answer = reqwest::Client::new()
        .get(at.clone())
        .timeout(PROBE_WITHIN)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .with_context(|| format!("fetching {at}"))?;
    // A metadata document is a few KiB: one bigger than this is no metadata.
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .with_context(|| format!("reading {at}"))?
    {
        body.extend_from_slice(&chunk);
        if body.len() > METADATA_BYTES {
            bail!(
                "{at} is over {} KiB: no authorization server metadata",
                METADATA_BYTES >> 10
            );
        }
    }
    serde_json::from_slice(&body)
        .with_context(|| format!("{at} is no authorization server metadata"))
}

/// The server's answer to a request with no token (a `ping`, POSTed: a GET may open an event
/// stream that never ends), within [`PROBE_WITHIN`].
async fn unauthenticated(url: &str) -> reqwest::Result<reqwest::Response> {
    super::install_tls_provider();
    reqwest::Client::new()
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .timeout(PROBE_WITHIN)
        .send()
        .await
}

/// The `WWW-Authenticate` challenge of the server's 401, if it answers so.
async fn challenge_of(url: &str) -> Option<String> {
    let answer = unauthenticated(url).await.ok()?;
    if answer.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    let challenge = answer.headers().get(reqwest::header::WWW_AUTHENTICATE)?;
    challenge.to_str().ok().map(String::from)
}

/// The scope a challenge names, if it names one.
fn challenge_scope(url: &str, challenge: &str) -> Option<String> {
    let base = url::Url::parse(url).ok()?;
    rmcp::transport::auth::WWWAuthenticateParams::parse(challenge, &base)
        .scope
        .filter(|s| !s.trim().is_empty())
}

/// The HTTP client of a server logged into: rmcp's, adding the stored token to each request
/// and refreshing it when it has expired. A client-credentials server gets its token here.
/// `None` when no token is stored.
pub async fn authorized_client(
    url: &str,
    client: &OAuthClient,
) -> Result<Option<AuthClient<reqwest::Client>>> {
    let store = TokenStore::new(url, client)?;
    if client.grant != Grant::AuthorizationCode {
        client_credentials(url, client, &store, &[], false).await?;
    }
    if store.read()?.is_none() {
        return Ok(None);
    }
    // Found as a login finds it (a server may name its metadata only in its challenge).
    let (mut manager, _, _) = discovered(url, &store).await?;
    let ready = manager
        .initialize_from_store()
        .await
        .map_err(|e| anyhow!("loading the stored login of {url}: {e}"))?;
    if !ready {
        return Ok(None);
    }
    Ok(Some(AuthClient::new(reqwest::Client::new(), manager)))
}

/// True when the server answers an unauthenticated request with 401 (it wants a login): asked
/// before a run starts any server, so a run that cannot log in unattended says so at once.
pub async fn wants_login(url: &str) -> bool {
    matches!(unauthenticated(url).await, Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED)
}

/// Logs into the server at `url`: discovery, registration (or the configured client, or its
/// client ID metadata document), the authorization URL opened with `$BROWSER` (else printed by
/// `say`), the redirect to a loopback port of this process, the code exchanged for tokens,
/// stored. `more_scopes` steps up a login: they are asked for with those already granted and
/// configured. Gives up after `within`.
pub async fn login(
    url: &str,
    client: &OAuthClient,
    more_scopes: &[String],
    within: Duration,
    say: &mut dyn FnMut(&str),
) -> Result<PathBuf> {
    // A server that answers without a token needs no login: said at once, not after a
    // discovery that has nothing to find.
    let silent = || {
        anyhow!(
            "{url}'s authorization server did not answer discovery or registration within {}s",
            within.as_secs()
        )
    };
    match tokio::time::timeout(within, unauthenticated(url)).await {
        Err(_) => return Err(silent()),
        Ok(Ok(answer)) if answer.status() != reqwest::StatusCode::UNAUTHORIZED => bail!(
            "{url} needs no login: it answered a request without a token (HTTP {}), not 401",
            answer.status().as_u16()
        ),
        Ok(_) => {}
    }
    let store = TokenStore::new(url, client)?;
    let mut scopes = client.scopes.clone();
    if !more_scopes.is_empty() {
        let held = store.read()?.as_ref().map(granted).unwrap_or_default();
        scopes = union(
            &union(&held, scopes.iter().map(String::as_str)),
            more_scopes.iter().map(String::as_str),
        );
    }
    // Discovery and registration are network steps: a server that never answers ends the
    // login within the time it was given, as the wait for the browser does.
    let pending = tokio::time::timeout(within, Pending::start(url, client, &store, scopes))
        .await
        .map_err(|_| silent())??;
    web_address(&pending.address)?;
    match open_browser(&pending.address) {
        Some(Ok(())) => say("opened the authorization page with $BROWSER; waiting for it"),
        Some(Err(e)) => say(&format!(
            "$BROWSER failed ({e:#}); open this address to log in:\n{}",
            pending.address
        )),
        None => say(&format!(
            "open this address to log in:\n{}",
            pending.address
        )),
    }
    pending.finish(within).await?;
    Ok(store.path().to_path_buf())
}

/// A login under way: the address the person opens, and the loopback port the browser comes
/// back to.
struct Pending {
    url: String,
    store: TokenStore,
    session: AuthorizationSession,
    listener: tokio::net::TcpListener,
    address: String,
}

impl Pending {
    /// Discovery, registration (or the configured client), and the authorization address
    /// asking for `scopes` (what the server says it needs when empty).
    async fn start(
        url: &str,
        client: &OAuthClient,
        store: &TokenStore,
        scopes: Vec<String>,
    ) -> Result<Self> {
        // The redirect's port is known before the authorization server is told of it.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("listening for the login's redirect")?;
        let redirect = format!(
            "http://127.0.0.1:{}/callback",
            listener.local_addr()?.port()
        );
        let (manager, challenge, _) = discovered(url, store).await?;
        let mut request = AuthorizationRequest::new(redirect).with_client_name("mcp-cosmos");
        // Asked for: the entry's scopes (with those a step-up adds), else the challenge's.
        let scopes = match (scopes.is_empty(), &challenge) {
            (true, Some(challenge)) => challenge_scope(url, challenge)
                .map(|s| s.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            _ => scopes,
        };
        if !scopes.is_empty() {
            request = request.with_scopes(scopes);
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        if let Some(id) = &client.client_id {
            request = request.with_preregistered_client(id.clone());
            if let Some(secret) = &client.client_secret {
                request = request.with_client_secret(secret.clone());
            }
        } else if let Some(document) = &client.client_metadata_url {
            // Used when the authorization server says it takes such documents; otherwise
            // rmcp registers dynamically.
            request = request.with_client_metadata_url(document.clone());
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| anyhow!("starting the login at {url}: {e}"))?;
        let address = session.get_authorization_url().to_string();
        Ok(Self {
            url: url.to_string(),
            store: store.clone(),
            session,
            listener,
            address,
        })
    }

    /// Waits up to `within` for the browser's redirect, exchanges its code and stores the
    /// tokens.
    async fn finish(self, within: Duration) -> Result<()> {
        let url = &self.url;
        let state = state_of(&self.address);
        let callback = tokio::time::timeout(within, redirected(&self.listener, state.as_deref()))
            .await
            .map_err(|_| anyhow!("no login within {}s", within.as_secs()))??;
        // The authorization server's refusal is said as it gave it, not as a missing code.
        if let Some(refused) = refusal(&callback) {
            bail!("the login at {url} was refused: {refused}");
        }
        tokio::time::timeout(within, self.session.handle_callback_url(&callback))
            .await
            .map_err(|_| {
                anyhow!(
                    "exchanging the login's code at {url}: no answer within {}s",
                    within.as_secs()
                )
            })?
            .map_err(|e| anyhow!("exchanging the login's code at {url}: {e}"))?;
        if self.store.read()?.is_none() {
            bail!("the login at {url} ended without a token");
        }
        Ok(())
    }
}

/// Refuses an authorization address that is not a web page (`file:///etc/passwd`, a custom
/// scheme): it comes from the server's metadata, and is handed to `$BROWSER` or to a person.
fn web_address(address: &str) -> Result<()> {
    let scheme = url::Url::parse(address)
        .map(|u| u.scheme().to_string())
        .map_err(|e| anyhow::anyhow!("the server's authorization address is not a URL ({e})"))?;
    if scheme != "https" && scheme != "http" {
        bail!(
            "the server's authorization address is not a web page ({scheme}:): refused, \
             nothing was opened"
        );
    }
    Ok(())
}

/// Opens `url` with `$BROWSER` (its first entry; `%s` is replaced by the URL, else the URL is
/// the last argument), as Python's `webbrowser` and `xdg-open` do. `None` without `$BROWSER`.
fn open_browser(url: &str) -> Option<Result<()>> {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())?;
    let first = browser.split(':').next().unwrap_or_default().to_string();
    let mut words: Vec<String> = first.split_whitespace().map(String::from).collect();
    if words.iter().any(|w| w.contains("%s")) {
        words = words.into_iter().map(|w| w.replace("%s", url)).collect();
    } else {
        words.push(url.to_string());
    }
    let (program, args) = words.split_first()?;
    Some(
        std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map(drop)
            .with_context(|| format!("starting {program}")),
    )
}

/// The authorization server's refusal a callback carries (`?error=access_denied&
/// error_description=…`), in words.
fn refusal(callback: &str) -> Option<String> {
    let url = url::Url::parse(callback).ok()?;
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let error = pairs.iter().find(|(k, _)| k == "error")?.1.clone();
    // The server's words, on one line: a newline in them must not forge a line of ours.
    let words = |text: &str| cosmos_trajectory::sanitize::one_line(text, 300);
    Some(match pairs.iter().find(|(k, _)| k == "error_description") {
        Some((_, description)) => format!("{} ({})", words(&error), words(description)),
        None => words(&error),
    })
}

/// True for the redirect a login waits for: `/callback` with a `code` or an `error`.
fn is_the_redirect(target: &str) -> bool {
    let Ok(url) = url::Url::parse(&format!("http://127.0.0.1{target}")) else {
        return false;
    };
    url.path() == "/callback" && url.query_pairs().any(|(k, _)| k == "code" || k == "error")
}

/// Most connections to the callback port served at once (a browser opens a few).
const CALLBACK_CONNECTIONS: usize = 16;

/// How long one connection to the callback port may take to send its request: a browser's
/// preconnect that never sends one is dropped, and never holds up the redirect.
const CALLBACK_READ: Duration = Duration::from_secs(10);

/// Waits for the browser's redirect to the loopback port; the full callback URL. Each
/// connection is served on its own (an idle one blocks nothing) and read to 16 KiB within
/// [`CALLBACK_READ`]. Requests that are not the redirect (a favicon, a stray request, a
/// connection that breaks) are answered 404 or dropped and waited past, and so is a redirect
/// whose `state` is not this login's (answered 400): only this login's redirect ends the wait.
/// With [`CALLBACK_CONNECTIONS`] being served, a new connection ends the oldest (one that has
/// sent nothing longest): idle peers never keep the redirect out.
async fn redirected(listener: &tokio::net::TcpListener, state: Option<&str>) -> Result<String> {
    let (found_tx, mut found_rx) = tokio::sync::mpsc::channel::<String>(1);
    // Dropped on return: connections still being served are ended with it.
    let mut serving = tokio::task::JoinSet::new();
    let mut oldest_first: std::collections::VecDeque<tokio::task::AbortHandle> =
        std::collections::VecDeque::new();
    loop {
        tokio::select! {
            Some(callback) = found_rx.recv() => return Ok(callback),
            accepted = listener.accept() => {
                let (socket, _) = accepted?;
                oldest_first.retain(|served| !served.is_finished());
                if oldest_first.len() >= CALLBACK_CONNECTIONS
                    && let Some(oldest) = oldest_first.pop_front()
                {
                    oldest.abort();
                }
                let found = found_tx.clone();
                let state = state.map(str::to_string);
                let handle = serving.spawn(async move {
                    let served =
                        tokio::time::timeout(CALLBACK_READ, serve_callback(socket, state.as_deref()));
                    if let Ok(Some(callback)) = served.await {
                        let _ = found.send(callback).await;
                    }
                });
                oldest_first.push_back(handle);
                // Finished connections' tasks are let go as they end.
                while serving.try_join_next().is_some() {}
            }
        }
    }
}

/// Serves one connection to the callback port: the callback URL when it is this login's
/// redirect.
async fn serve_callback(mut socket: tokio::net::TcpStream, state: Option<&str>) -> Option<String> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut len = 0;
    while len < buf.len() {
        let n = socket.read(&mut buf[len..]).await.ok()?;
        len += n;
        if n == 0 || buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let target = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_default()
        .to_string();
    let reply = |status: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    if !is_the_redirect(&target) {
        let _ = socket
            .write_all(reply("404 Not Found", "").as_bytes())
            .await;
        return None;
    }
    let callback = format!("http://127.0.0.1{target}");
    if !carries_state(&callback, state) {
        let body = "This is not the login mcp-cosmos is waiting for (its state differs); it goes on waiting.";
        let _ = socket
            .write_all(reply("400 Bad Request", body).as_bytes())
            .await;
        return None;
    }
    let body = if refusal(&callback).is_some() {
        "The login was refused; mcp-cosmos says why. This tab can be closed."
    } else {
        "Logged in: mcp-cosmos has the authorization. This tab can be closed."
    };
    let _ = socket.write_all(reply("200 OK", body).as_bytes()).await;
    Some(callback)
}

/// The `state` of the authorization address `address` (what the redirect must carry back).
fn state_of(address: &str) -> Option<String> {
    let url = url::Url::parse(address).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

/// True when the callback carries `state` (any callback, when the login has none).
fn carries_state(callback: &str, state: Option<&str>) -> bool {
    let Some(state) = state else {
        return true;
    };
    url::Url::parse(callback)
        .is_ok_and(|u| u.query_pairs().any(|(k, v)| k == "state" && v == state))
}

/// Checks, before any server starts, that every server that wants a login has one stored: a
/// run cannot log in unattended. The error names the server and the command to run. Returns
/// the stored tokens, for the run's redactor.
pub async fn check_logins(servers: &[ServerConfig], mcp_config: &Path) -> Result<Vec<String>> {
    let mut secrets = Vec::new();
    for server in servers {
        let Transport::Http {
            url,
            headers,
            oauth,
        } = &server.transport
        else {
            continue;
        };
        let store = TokenStore::new(url, oauth)?;
        if oauth.grant != Grant::AuthorizationCode {
            client_credentials(url, oauth, &store, &[], false)
                .await
                .with_context(|| format!("server \"{}\"", server.name))?;
        }
        if let Some(stored) = store.read()? {
            secrets.extend(tokens(&stored));
            continue;
        }
        // A server given its own Authorization header is not ours to log into.
        let has_header = headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"));
        if !has_header && wants_login(url).await {
            bail!(
                "server \"{}\" needs a login: run `cosmos login {} --mcp-config {}` first",
                server.name,
                server.name,
                mcp_config.display()
            );
        }
    }
    Ok(secrets)
}

#[cfg(test)]
mod tests {
    use super::{carries_state, is_the_redirect, redirected, refusal, state_of, web_address};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A browser's preconnect (a connection that sends nothing) and a redirect of another
    /// login (its state differs) hold nothing up: this login's redirect, sent after both,
    /// ends the wait, and each was answered on its own.
    #[tokio::test]
    async fn an_idle_connection_or_another_logins_redirect_never_blocks_the_real_one() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { redirected(&listener, Some("mine")).await });
        let idle = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let get = |target: &'static str| async move {
            let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut reply = String::new();
            s.read_to_string(&mut reply).await.unwrap();
            reply
        };
        let other = get("/callback?code=c&state=theirs").await;
        assert!(other.starts_with("HTTP/1.1 400"), "{other}");
        let real = get("/callback?code=c&state=mine").await;
        assert!(real.starts_with("HTTP/1.1 200"), "{real}");
        let callback = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the real redirect ends the wait")
            .unwrap()
            .unwrap();
        assert!(callback.ends_with("state=mine"), "{callback}");
        drop(idle);
    }

    /// Hardening VI: more idle connections than are served at once (a flood of preconnects)
    /// never starve the redirect: the newest connection is served, the oldest idle one ended.
    #[tokio::test]
    async fn idle_peers_past_the_bound_never_starve_the_redirect() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let waiting = tokio::spawn(async move { redirected(&listener, Some("mine")).await });
        let mut idle = Vec::new();
        for _ in 0..super::CALLBACK_CONNECTIONS * 2 {
            idle.push(
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap(),
            );
        }
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(b"GET /callback?code=c&state=mine HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        let callback = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the redirect ends the wait, well before an idle one times out")
            .unwrap()
            .unwrap();
        assert!(callback.ends_with("state=mine"), "{callback}");
        drop(idle);
    }

    #[test]
    fn a_refusal_is_said_and_only_the_redirect_ends_the_wait() {
        assert_eq!(
            refusal("http://127.0.0.1/callback?error=access_denied&state=s"),
            Some("access_denied".into())
        );
        assert_eq!(
            refusal("http://127.0.0.1/callback?error=access_denied&error_description=no+way"),
            Some("access_denied (no way)".into())
        );
        assert_eq!(refusal("http://127.0.0.1/callback?code=c&state=s"), None);
        // A description cannot forge a second line of the error.
        let forged =
            refusal("http://127.0.0.1/callback?error=x&error_description=no%0Acosmos:+logged+in")
                .unwrap();
        assert!(
            !forged.contains('\n') && forged.contains("logged in"),
            "{forged}"
        );
        assert!(carries_state(
            "http://127.0.0.1/callback?code=c&state=s1",
            Some("s1")
        ));
        assert!(!carries_state(
            "http://127.0.0.1/callback?code=c&state=s2",
            Some("s1")
        ));
        assert!(!carries_state(
            "http://127.0.0.1/callback?code=c",
            Some("s1")
        ));
        assert_eq!(
            state_of("https://auth.example/authorize?client_id=a&state=s%201").as_deref(),
            Some("s 1")
        );
        assert!(is_the_redirect("/callback?code=c&state=s"));
        assert!(is_the_redirect("/callback?error=access_denied"));
        for stray in [
            "/callback",
            "/callback?x=1",
            "/favicon.ico",
            "/callbackz?code=c",
            "",
        ] {
            assert!(!is_the_redirect(stray), "{stray}");
        }
    }

    #[test]
    fn only_a_web_page_is_handed_to_a_browser() {
        assert!(web_address("https://auth.example/authorize?x=1").is_ok());
        assert!(web_address("http://127.0.0.1:4000/authorize").is_ok());
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "x-custom:open",
            "not a url",
        ] {
            let err = web_address(bad).unwrap_err().to_string();
            assert!(err.contains("authorization address"), "{bad}: {err}");
        }
    }
}
