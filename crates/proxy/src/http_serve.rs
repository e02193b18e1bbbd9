//! The proxy over streamable HTTP: rmcp's service (one handler, so one recorded session, per
//! client session) at `/mcp`, served by hyper. A loopback address is open to local clients;
//! any other address needs a bearer token, which every request must then carry (a token, when
//! set, is required on loopback too).
//!
//! Streamable HTTP at `/mcp` on hyper, a bearer token required beyond loopback, a
//! foreign `Origin` refused; each POST body read within 16 MiB and screened (`screen.rs`) before
//! rmcp's service; a `DELETE` of a session rmcp no longer knows answered 404.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use super::wire::{TappedSessions, Wires};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::watch;

use super::handler::ProxyHandler;
use super::screen::{PARSE_ERROR, Screened, screen};
use super::setup::{ClientAddress, Setup, Stop};
use super::stdio_guard::MAX_REQUEST_BYTES;

/// The path the MCP endpoint answers on.
pub const MCP_PATH: &str = "/mcp";

/// A bound proxy address, before it serves.
pub struct Listening {
    listener: tokio::net::TcpListener,
    /// The address it is bound to (port 0 resolved).
    pub addr: SocketAddr,
    token: Option<String>,
}

/// The shortest bearer token a proxy reachable beyond this machine takes.
pub const MIN_TOKEN_BYTES: usize = 16;

/// The fewest different characters in that token (`aaaaaaaaaaaaaaaa` is 16 bytes and no guard).
pub const MIN_TOKEN_DISTINCT: usize = 8;

/// Binds `addr`. A non-loopback address without a `token` is refused: a proxy reachable from
/// the network calls real servers for whoever finds it.
pub async fn bind(addr: SocketAddr, token: Option<String>) -> Result<Listening> {
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "{addr} is reachable beyond this machine: set a bearer token (--token-env names the \
             variable that holds it) that clients must send, or bind a loopback address"
        );
    }
    if token.as_deref().is_some_and(str::is_empty) {
        bail!("the bearer token is empty");
    }
    // A header carries no spaces or control characters around or inside a bearer token: one
    // holding them could never be sent as it is (and 16 spaces would pass for 16 bytes).
    if token
        .as_deref()
        .is_some_and(|t| t.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        bail!(
            "the bearer token holds a space or a control character: use printable characters only"
        );
    }
    // Beyond this machine the token is all that stands between the network and the real
    // servers: one guessable in a few tries is no guard.
    let distinct = |t: &str| t.chars().collect::<std::collections::BTreeSet<_>>().len();
    if !addr.ip().is_loopback()
        && token
            .as_deref()
            .is_some_and(|t| t.len() < MIN_TOKEN_BYTES || distinct(t) < MIN_TOKEN_DISTINCT)
    {
        bail!(
            "{addr} is reachable beyond this machine: its bearer token must be at least \
             {MIN_TOKEN_BYTES} bytes of at least {MIN_TOKEN_DISTINCT} different characters \
             (e.g. `openssl rand -hex 16`)"
        );
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let addr = listener.local_addr()?;
    Ok(Listening {
        listener,
        addr,
        token,
    })
}

impl Listening {
    /// Serves until `stop` fires; then every open session is ended as interrupted.
    pub async fn serve(self, setup: Arc<Setup>, mut stop: watch::Receiver<bool>) -> Result<Stop> {
        let mut config =
            StreamableHttpServerConfig::default().with_max_request_body_bytes(MAX_REQUEST_BYTES);
        if !self.addr.ip().is_loopback() {
            // The bearer token guards it; the Host check would refuse the machine's own names.
            config = config.disable_allowed_hosts();
        }
        let cancel = config.cancellation_token.clone();
        let factory_setup = setup.clone();
        let wires = Arc::new(Wires::default());
        let sessions = Arc::new(TappedSessions::new(
            Arc::new(LocalSessionManager::default()),
            wires.clone(),
            setup.redactor.clone(),
        ));
        let service = StreamableHttpService::new(
            move || Ok(ProxyHandler::new(factory_setup.clone()).with_wires(wires.clone())),
            sessions.clone(),
            config,
        );
        let token: Option<Arc<str>> = self.token.map(Arc::from);
        loop {
            let (stream, address) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors, say: wait a little rather than spin.
                        tracing::warn!("accepting a connection: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = stop.wait_for(|s| *s) => break,
            };
            let (service, token, sessions) = (service.clone(), token.clone(), sessions.clone());
            let handle = hyper::service::service_fn(move |mut request: Request<Incoming>| {
                let (service, token, sessions) = (service.clone(), token.clone(), sessions.clone());
                request.extensions_mut().insert(ClientAddress(address.ip()));
                async move {
                    if let Some(refused) = refuse(&request, token.as_deref()) {
                        return Ok::<_, Infallible>(refused);
                    }
                    // A session ended (by DELETE, or closed) is one the transport no longer
                    // knows: 404, as the spec has it (rmcp would accept the close again).
                    if request.method() == hyper::Method::DELETE
                        && let Some(id) = request
                            .headers()
                            .get("mcp-session-id")
                            .and_then(|v| v.to_str().ok())
                        && !sessions
                            .has_session(&id.to_string().into())
                            .await
                            .unwrap_or(true)
                    {
                        return Ok(plain(StatusCode::NOT_FOUND, "no such session\n"));
                    }
                    if request.method() == hyper::Method::DELETE {
                        // A session ended is done, not accepted for later: 200, as clients
                        // expect (the Python SDK logs a 202 as a failed termination).
                        let mut ended = service.handle(request).await;
                        if ended.status() == StatusCode::ACCEPTED {
                            *ended.status_mut() = StatusCode::OK;
                        }
                        return Ok(ended);
                    }
                    if request.method() != hyper::Method::POST {
                        return Ok(service.handle(request).await);
                    }
                    Ok(match screened(request).await {
                        Ok(request) => service.handle(request).await,
                        Err(answered) => answered,
                    })
                }
            });
            tokio::spawn(async move {
                let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), handle)
                    .await;
                if let Err(e) = served {
                    tracing::debug!("an HTTP connection ended: {e}");
                }
            });
        }
        setup.stop();
        cancel.cancel();
        Ok(Stop::Signalled)
    }
}

/// The token of an `Authorization` value of the bearer scheme, whose name is case-insensitive
/// (RFC 9110, 11.1: `bearer` is `Bearer`).
fn bearer_of(authorization: &str) -> Option<&str> {
    let (scheme, credentials) = authorization.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_start())
}

/// The reply to a request that does not reach the MCP service: another path, or a missing or
/// wrong bearer token.
fn refuse(
    request: &Request<Incoming>,
    token: Option<&str>,
) -> Option<Response<BoxBody<Bytes, Infallible>>> {
    if request.uri().path() != MCP_PATH {
        return Some(plain(
            StatusCode::NOT_FOUND,
            "cosmos proxy serves MCP at /mcp\n",
        ));
    }
    // A web page's request carries its Origin: one not of this machine or of the address the
    // client reached is refused (the streamable-HTTP transport's guard against DNS rebinding).
    let header = |name| {
        request
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap_or("\u{fffd}"))
    };
    if let Some(origin) = header(hyper::header::ORIGIN)
        && !origin_allowed(origin, header(hyper::header::HOST))
    {
        return Some(plain(
            StatusCode::FORBIDDEN,
            "cosmos proxy takes requests from this machine's pages only (Origin refused)\n",
        ));
    }
    let expected = token?;
    let sent = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_of);
    if sent.is_some_and(|sent| same(sent.as_bytes(), expected.as_bytes())) {
        return None;
    }
    let mut refused = plain(StatusCode::UNAUTHORIZED, "a bearer token is required\n");
    refused.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    Some(refused)
}

/// True for an `Origin` of this machine (`localhost`, `127.0.0.1`, `[::1]`) or of the host the
/// client addressed (`host`, the `Host` header); `null` and anything unparsable are not.
fn origin_allowed(origin: &str, host: Option<&str>) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let name = |authority: &str| -> String {
        let authority = authority.trim_end_matches('/');
        let name = if authority.starts_with('[') {
            authority.split_inclusive(']').next().unwrap_or(authority)
        } else {
            authority.split(':').next().unwrap_or(authority)
        };
        name.to_ascii_lowercase()
    };
    let origin_host = name(rest);
    matches!(origin_host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
        || host.is_some_and(|h| name(h) == origin_host)
}

/// A POST's body, read within [`MAX_REQUEST_BYTES`] and screened as the stdio guard screens a
/// line: the request to pass on to rmcp, or the reply already given (413 over the limit; 400
/// and a parse error for a body that is no JSON; a JSON-RPC error for a request it refuses).
async fn screened(
    request: Request<Incoming>,
) -> Result<Request<Full<Bytes>>, Response<BoxBody<Bytes, Infallible>>> {
    let (parts, body) = request.into_parts();
    let body = match http_body_util::Limited::new(body, MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "a request body over 16 MiB was not read\n",
            ));
        }
        Err(e) => {
            tracing::debug!("reading a request body: {e}");
            return Err(plain(
                StatusCode::BAD_REQUEST,
                "the request body was cut off\n",
            ));
        }
    };
    match screen(&body) {
        Screened::Pass => Ok(Request::from_parts(parts, Full::new(body))),
        Screened::Refused(reply) => {
            tracing::warn!("refused a client request: {}", reply["error"]["message"]);
            // A body that is no JSON-RPC message at all is a bad request; a request refused
            // is answered as any other, with its error.
            let status = if reply["error"]["code"] == PARSE_ERROR {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            let mut response = Response::new(
                Full::new(Bytes::from(serde_json::to_vec(&reply).unwrap_or_default())).boxed(),
            );
            *response.status_mut() = status;
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            Err(response)
        }
    }
}

/// Compares in time that does not depend on where the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }

    #[test]
    fn only_this_machines_origins_and_the_addressed_host_are_allowed() {
        let host = Some("10.0.0.5:8080");
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "https://[::1]:9",
            "http://LOCALHOST",
            "http://10.0.0.5:8080",
        ] {
            assert!(origin_allowed(ok, host), "{ok}");
        }
        for refused in [
            "http://evil.example",
            "null",
            "file://",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "http://10.0.0.6:8080",
        ] {
            assert!(!origin_allowed(refused, host), "{refused}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        assert_eq!(bearer_of("Bearer abc"), Some("abc"));
        assert_eq!(bearer_of("bearer abc"), Some("abc"));
        assert_eq!(bearer_of("BEARER  abc"), Some("abc"));
        assert_eq!(bearer_of("Basic abc"), None);
        assert_eq!(bearer_of("Bearerabc"), None);
    }

    #[tokio::test]
    async fn a_reachable_address_needs_a_token() {
        let err = bind("0.0.0.0:0".parse().unwrap(), None)
            .await
            .err()
            .unwrap();
        assert!(err.to_string().contains("bearer token"), "{err}");
        let bound = bind("127.0.0.1:0".parse().unwrap(), None).await.unwrap();
        assert_ne!(bound.addr.port(), 0);
        // A one-character token guards nothing beyond this machine; on loopback it is taken.
        let err = bind("0.0.0.0:0".parse().unwrap(), Some("x".into()))
            .await
            .err()
            .unwrap();
        assert!(err.to_string().contains("at least 16 bytes"), "{err}");
        // Sixteen spaces, or one letter sixteen times, are no token either.
        for weak in [
            " ".repeat(16),
            "a".repeat(16),
            format!("{}\n", "ab12cd34ef56gh78"),
        ] {
            let err = bind("0.0.0.0:0".parse().unwrap(), Some(weak.clone()))
                .await
                .err()
                .unwrap_or_else(|| panic!("{weak:?} was taken"));
            let e = err.to_string();
            assert!(
                e.contains("different characters") || e.contains("a space"),
                "{e}"
            );
        }
        assert!(
            bind(
                "0.0.0.0:0".parse().unwrap(),
                Some("ab12cd34ef56gh78".into())
            )
            .await
            .is_ok()
        );
        assert!(
            bind("127.0.0.1:0".parse().unwrap(), Some("x".into()))
                .await
                .is_ok()
        );
    }
}
