#!/usr/bin/env python3
"""An MCP server behind OAuth, with its own authorization server, for mcp-cosmos's tests.

Two real HTTP servers in one process:

- the authorization server on 127.0.0.1:AUTH_PORT (plain http.server): RFC 8414 metadata,
  dynamic client registration (/register), an authorization endpoint that approves at once
  and redirects with a code (/authorize), and a token endpoint (/token) for the grants
  `authorization_code` (PKCE S256 checked), `refresh_token` and `client_credentials` (the client
  CLIENT_ID with the secret CLIENT_SECRET, from the environment);
- the protected MCP server on 127.0.0.1:MCP_PORT (the Python SDK's FastMCP over streamable
  HTTP, a resource server whose token verifier asks the authorization server's table), with
  two tools: `whoami`, and `admin_report`, which needs the scope `admin`: a token without it is
  refused with 403 `insufficient_scope` naming the scopes `read admin` (scope step-up).

Tokens carry the scopes asked for (`scope` at /authorize or /token). With CIMD_DOCS set (a
JSON file mapping client metadata document URLs to their documents), the authorization server
says it takes client ID metadata documents and knows those clients by their URL; it stands in
for fetching the document over HTTPS, which this machine cannot serve (a loopback redirect
matches the document's whatever its port, as RFC 8252 allows).

A token from a login (`authorization_code`) lives FIRST_TTL seconds (default 3600; 0 issues it
already expired, so a client must refresh it before the MCP server takes it); every other token
lives an hour. Each grant is appended to GRANTS_FILE as one line
(`authorization_code`, `refresh_token`, `client_credentials`), so a test can tell what
happened, and each dynamic registration as `register`. Prints "auth listening" and "mcp listening" when ready.

With TOKEN_REPLY set, the token endpoint misbehaves for the `client_credentials` grant, so a
client's bounds are tested: `silent` never answers, `huge` answers with a 4 MiB token.

With CHALLENGE_ONLY set, the MCP server names its protected-resource metadata only in its 401
challenge: it serves the document at /meta/prm (never at a well-known path, which answers 404),
and its challenge is `Bearer resource_metadata="…/meta/prm", scope="read"`, so a client finds
the authorization server, and the scope to ask for, only by reading the challenge. With
HANG_GET set, a GET of /mcp opens an event stream that never sends anything (as a server that
pushes notifications does), whoever asks. With ADMIN_ONLY set, every request with a token that
lacks `admin` is refused as `admin_report` is, from `initialize` on. With LEGACY set, the
server keeps MCP's 2025-03-26 layout: no protected-resource metadata, a bare `Bearer`
challenge, and the authorization server's metadata at the MCP server's own origin, its issuer
with a path.
"""
import base64
import hashlib
import json
import os
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
import uvicorn

MCP_PORT = int(os.environ["MCP_PORT"])
AUTH_PORT = int(os.environ["AUTH_PORT"])
FIRST_TTL = int(os.environ.get("FIRST_TTL", "3600"))
ISSUER = f"http://127.0.0.1:{AUTH_PORT}"
RESOURCE = f"http://127.0.0.1:{MCP_PORT}/mcp"

lock = threading.Lock()
clients = {}  # client_id -> {"secret", "redirect_uris"}
codes = {}  # code -> {"client_id", "challenge", "redirect_uri"}
tokens = {}  # access token -> {"client_id", "expires_at", "scopes"}
refresh = {}  # refresh token -> (client_id, scopes)
documents = {}  # client metadata document URL -> the document
if os.environ.get("CIMD_DOCS"):
    with open(os.environ["CIMD_DOCS"]) as f:
        documents = json.load(f)
if os.environ.get("CLIENT_ID"):
    clients[os.environ["CLIENT_ID"]] = {
        "secret": os.environ.get("CLIENT_SECRET"),
        "redirect_uris": [],
    }


def granted(kind):
    if os.environ.get("GRANTS_FILE"):
        with open(os.environ["GRANTS_FILE"], "a") as f:
            f.write(kind + "\n")


def issue(client_id, with_refresh, scopes, ttl=3600):
    access = secrets.token_urlsafe(24)
    answer = {"access_token": access, "token_type": "Bearer", "expires_in": ttl}
    if scopes:
        answer["scope"] = " ".join(scopes)
    with lock:
        tokens[access] = {"client_id": client_id, "expires_at": time.time() + ttl, "scopes": scopes}
        if with_refresh:
            answer["refresh_token"] = secrets.token_urlsafe(24)
            refresh[answer["refresh_token"]] = (client_id, scopes)
    return answer


def known_client(client_id):
    """A registered client, or one known by its metadata document."""
    if client_id in documents:
        return {"secret": None, "redirect_uris": documents[client_id].get("redirect_uris", [])}
    return clients.get(client_id)


def redirect_allowed(uri, allowed):
    """Exact, or a loopback address whatever its port (RFC 8252, 7.3)."""
    if uri in allowed:
        return True
    u = urlparse(uri or "")
    return any(
        u.hostname in ("127.0.0.1", "localhost")
        and urlparse(a).hostname == u.hostname
        and urlparse(a).path == u.path
        for a in allowed
    )


AS_METADATA = {
    "client_id_metadata_document_supported": bool(documents),
    "issuer": ISSUER,
    "authorization_endpoint": ISSUER + "/authorize",
    "token_endpoint": ISSUER + "/token",
    "registration_endpoint": ISSUER + "/register",
    "response_types_supported": ["code"],
    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
    "code_challenge_methods_supported": ["S256"],
    "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
}


class Auth(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def form(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        if self.headers.get("Content-Type", "").startswith("application/json"):
            return json.loads(raw or "{}")
        return {k: v[0] for k, v in parse_qs(raw).items()}

    def client(self, form):
        """The client of a token request: body credentials or HTTP Basic."""
        client_id, secret = form.get("client_id"), form.get("client_secret")
        basic = self.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
        known = known_client(client_id)
        if known is None or (known["secret"] is not None and known["secret"] != secret):
            return None
        return client_id

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/.well-known/oauth-authorization-server":
            return self.reply(200, AS_METADATA)
        if url.path == "/authorize":
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            known = known_client(q.get("client_id"))
            if known is None or not redirect_allowed(q.get("redirect_uri"), known["redirect_uris"]):
                return self.reply(400, {"error": "invalid_request"})
            code = secrets.token_urlsafe(16)
            with lock:
                codes[code] = {
                    "client_id": q["client_id"],
                    "challenge": q.get("code_challenge"),
                    "redirect_uri": q["redirect_uri"],
                    "scopes": q.get("scope", "").split(),
                }
            target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.reply(404, {"error": "not_found"})

    def do_POST(self):
        url = urlparse(self.path)
        form = self.form()
        if url.path == "/register":
            granted("register")
            client_id = secrets.token_hex(8)
            with lock:
                clients[client_id] = {"secret": None, "redirect_uris": form.get("redirect_uris", [])}
            return self.reply(201, {
                "client_id": client_id,
                "redirect_uris": form.get("redirect_uris", []),
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
            })
        if url.path != "/token":
            return self.reply(404, {"error": "not_found"})
        grant = form.get("grant_type")
        client_id = self.client(form)
        if client_id is None:
            return self.reply(401, {"error": "invalid_client"})
        if grant == "authorization_code":
            with lock:
                code = codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if code is None or code["client_id"] != client_id or code["challenge"] != expected:
                return self.reply(400, {"error": "invalid_grant"})
            granted(grant)
            return self.reply(200, issue(client_id, True, code["scopes"], FIRST_TTL))
        if grant == "refresh_token":
            with lock:
                owner, scopes = refresh.pop(form.get("refresh_token", ""), (None, []))
            if owner != client_id:
                return self.reply(400, {"error": "invalid_grant"})
            granted(grant)
            return self.reply(200, issue(client_id, True, scopes))
        if grant == "client_credentials" and os.environ.get("TOKEN_REPLY") == "silent":
            time.sleep(3600)
            return
        if grant == "client_credentials" and os.environ.get("TOKEN_REPLY") == "huge":
            return self.reply(200, {"access_token": "a" * (4 << 20), "token_type": "Bearer"})
        if grant == "client_credentials":
            scopes = form.get("scope", "").split()
            granted(grant + (" " + " ".join(scopes) if scopes else ""))
            return self.reply(200, issue(client_id, False, scopes))
        self.reply(400, {"error": "unsupported_grant_type"})


class Verifier:
    async def verify_token(self, token):
        with lock:
            known = tokens.get(token)
        if known is None or known["expires_at"] <= time.time():
            return None
        return AccessToken(token=token, client_id=known["client_id"], scopes=known["scopes"], resource=RESOURCE)


auth_server = ThreadingHTTPServer(("127.0.0.1", AUTH_PORT), Auth)
threading.Thread(target=auth_server.serve_forever, daemon=True).start()
print("auth listening", flush=True)

mcp = FastMCP(
    "protected",
    host="127.0.0.1",
    port=MCP_PORT,
    token_verifier=Verifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=False),
)


@mcp.tool()
def whoami() -> str:
    """Says that the caller got in."""
    return "you are logged in"


@mcp.tool()
def admin_report() -> str:
    """Reports to administrators only (needs the scope `admin`)."""
    return "the admin report"


class ScopeGate:
    """Refuses a call of `admin_report` with a token that lacks `admin`: 403
    insufficient_scope, as the MCP authorization spec has a server ask for more scopes."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if (
            isinstance(request, dict)
            and request.get("method") == "tools/call"
            and request.get("params", {}).get("name") == "admin_report"
        ) or os.environ.get("ADMIN_ONLY"):
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            with lock:
                known = tokens.get(auth.removeprefix("Bearer "))
            if known is not None and "admin" not in known["scopes"]:
                challenge = 'Bearer error="insufficient_scope", scope="read admin"'
                await send({"type": "http.response.start", "status": 403, "headers": [
                    (b"www-authenticate", challenge.encode()),
                    (b"content-type", b"application/json"),
                ]})
                await send({"type": "http.response.body", "body": b'{"error":"insufficient_scope"}'})
                return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class ChallengeOnly:
    """CHALLENGE_ONLY and HANG_GET (see the module's note)."""

    def __init__(self, app):
        self.app = app
        self.metadata = f"http://127.0.0.1:{MCP_PORT}/meta/prm"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        if os.environ.get("HANG_GET") and method == "GET" and path == "/mcp":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
        if os.environ.get("LEGACY"):
            if path == "/.well-known/oauth-authorization-server":
                return await self.json(send, 200, {
                    **AS_METADATA, "issuer": f"http://127.0.0.1:{MCP_PORT}/legacy"})
            if path.startswith("/.well-known/"):
                return await self.json(send, 404, {"error": "not_found"})
            return await self.app(scope, receive, self.challenging(send, "Bearer"))
        if not os.environ.get("CHALLENGE_ONLY"):
            return await self.app(scope, receive, send)
        if path.startswith("/.well-known/"):
            return await self.json(send, 404, {"error": "not_found"})
        if path == "/meta/prm":
            return await self.json(send, 200, {
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["read", "admin"],
            })
        challenge = f'Bearer resource_metadata="{self.metadata}", scope="read"'
        await self.app(scope, receive, self.challenging(send, challenge))

    @staticmethod
    def challenging(send, challenge):
        """`send`, with a 401's challenge replaced by `challenge`."""

        async def challenged(message):
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = [(k, v) for k, v in message["headers"] if k.lower() != b"www-authenticate"]
                headers.append((b"www-authenticate", challenge.encode()))
                message = {**message, "headers": headers}
            await send(message)

        return challenged

    @staticmethod
    async def json(send, status, body):
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


print("mcp listening", flush=True)
uvicorn.run(ChallengeOnly(ScopeGate(mcp.streamable_http_app())), host="127.0.0.1", port=MCP_PORT)
