"""An MCP server on the official Python SDK (mcp 2.x) behind an OAuth 2.1
authorization server written for the tests, both in this one process.

Usage: PYTHONPATH=<interop>/py python3 py_oauth_server.py [TOKEN_TTL_SECS]

Both listen on 127.0.0.1, on ports the system picks. When both accept
connections, one JSON line goes to stdout:
{"issuer": "http://127.0.0.1:A", "mcp": "http://127.0.0.1:R/mcp"}.

What it owns:
- The authorization server (ours, at A): RFC 8414 metadata, dynamic
  registration of public clients (RFC 7591), /authorize that approves at
  once as one fixed user (after checking client, redirect URI, PKCE S256
  and `resource`), /token for authorization_code (PKCE verifier, redirect
  URI and `resource` checked against the code) and refresh_token (rotated:
  a refresh token works once; `resource` must be the grant's), tokens that
  live TOKEN_TTL_SECS (default 4), RFC 7662 introspection for the resource
  server, and GET /stats: token requests per grant type, what was refused
  and why, the clients registered.
- The resource server (the SDK's, at R): `MCPServer` with `AuthSettings` and
  a token verifier that introspects at A. The SDK itself serves the RFC 9728
  metadata, answers 401 with `WWW-Authenticate: Bearer resource_metadata=...`,
  refuses expired tokens, tokens for another resource and tokens without the
  scope. Its tool `save_note` records each call with who the token speaks
  for; GET /admin/calls returns those records (never a token: a SHA-256
  prefix of it).

What it deliberately does not do: consent pages, users, confidential
clients, revocation, persistence. Everything lives in memory until the
process is killed.
"""

import asyncio
import base64
import hashlib
import json
import secrets
import socket
import sys
import time
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

# The one user /authorize signs everyone in as.
SUBJECT = "interop-user"
# The scope the resource server requires; the authorization server offers it.
SCOPE = "notes:write"
# Authorization codes live this long.
CODE_TTL_SECS = 60


def listening_socket() -> socket.socket:
    """A socket on 127.0.0.1 and a port the system picks, already bound, so
    the port is known before either app is built and no one can take it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True) + list(params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def oauth_error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={"Cache-Control": "no-store"},
    )


class AuthorizationServer:
    """The test's OAuth 2.1 authorization server; all state in memory."""

    def __init__(self, issuer: str, token_ttl: int, introspection_secret: str):
        self.issuer = issuer
        self.token_ttl = token_ttl
        self.introspection_secret = introspection_secret
        self.clients: dict[str, dict] = {}
        self.codes: dict[str, dict] = {}
        self.access_tokens: dict[str, dict] = {}
        self.refresh_tokens: dict[str, dict] = {}
        self.token_requests = {"authorization_code": 0, "refresh_token": 0}
        self.refused: list[str] = []
        self.authorizations = 0

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self.metadata, methods=["GET"]),
                Route("/register", self.register, methods=["POST"]),
                Route("/authorize", self.authorize, methods=["GET"]),
                Route("/token", self.token, methods=["POST"]),
                Route("/introspect", self.introspect, methods=["POST"]),
                Route("/stats", self.stats, methods=["GET"]),
            ]
        )

    def refuse(self, why: str) -> None:
        self.refused.append(why)

    async def metadata(self, _: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "registration_endpoint": f"{self.issuer}/register",
                "introspection_endpoint": f"{self.issuer}/introspect",
                "scopes_supported": [SCOPE],
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": ["none"],
                "code_challenge_methods_supported": ["S256"],
                "authorization_response_iss_parameter_supported": True,
            }
        )

    async def register(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return oauth_error(400, "invalid_client_metadata", "the body is not a JSON object")
        redirect_uris = body.get("redirect_uris")
        if not isinstance(redirect_uris, list) or not redirect_uris:
            self.refuse("registration without redirect_uris")
            return oauth_error(400, "invalid_redirect_uri", "redirect_uris is required")
        if body.get("token_endpoint_auth_method", "none") != "none":
            self.refuse("registration of a confidential client")
            return oauth_error(400, "invalid_client_metadata", "only public clients are registered here")
        client_id = f"client-{secrets.token_hex(8)}"
        client = {
            "client_id": client_id,
            "client_id_issued_at": int(time.time()),
            "client_name": body.get("client_name"),
            "redirect_uris": redirect_uris,
            "grant_types": body.get("grant_types", ["authorization_code"]),
            "response_types": body.get("response_types", ["code"]),
            "token_endpoint_auth_method": "none",
        }
        if "application_type" in body:
            client["application_type"] = body["application_type"]
        self.clients[client_id] = client
        return JSONResponse(client, status_code=201)

    async def authorize(self, request: Request) -> Response:
        """Approves at once (there is no one to ask) once the request is one
        we would show a consent page for."""
        q = request.query_params
        client = self.clients.get(q.get("client_id", ""))
        redirect_uri = q.get("redirect_uri", "")
        # RFC 6749 §4.1.2.1: an unknown client or redirect URI is never
        # redirected to.
        if client is None:
            self.refuse("authorize: unknown client")
            return oauth_error(400, "invalid_request", "unknown client_id")
        if redirect_uri not in client["redirect_uris"]:
            self.refuse("authorize: redirect_uri not registered")
            return oauth_error(400, "invalid_request", "redirect_uri is not registered")

        def back(params: dict[str, str]) -> Response:
            if q.get("state") is not None:
                params["state"] = q["state"]
            params["iss"] = self.issuer  # RFC 9207
            return RedirectResponse(with_query(redirect_uri, params), status_code=302)

        def refused(error: str, why: str) -> Response:
            self.refuse(f"authorize: {why}")
            return back({"error": error, "error_description": why})

        if q.get("response_type") != "code":
            return refused("unsupported_response_type", "response_type must be code")
        if not q.get("code_challenge") or q.get("code_challenge_method") != "S256":
            return refused("invalid_request", "PKCE with S256 is required")
        if not q.get("resource"):
            return refused("invalid_target", "resource (RFC 8707) is required")
        scopes = q.get("scope", "").split()
        if any(s != SCOPE for s in scopes):
            return refused("invalid_scope", f"only {SCOPE} is offered")
        code = secrets.token_urlsafe(24)
        self.codes[code] = {
            "client_id": client["client_id"],
            "redirect_uri": redirect_uri,
            "code_challenge": q["code_challenge"],
            "resource": q["resource"],
            "scopes": scopes,
            "expires_at": time.time() + CODE_TTL_SECS,
        }
        self.authorizations += 1
        return back({"code": code})

    async def token(self, request: Request) -> Response:
        form = await request.form()
        grant_type = form.get("grant_type")
        if grant_type not in self.token_requests:
            self.refuse(f"token: unsupported grant_type {grant_type!r}")
            return oauth_error(400, "unsupported_grant_type", "authorization_code or refresh_token")
        self.token_requests[grant_type] += 1
        client_id = form.get("client_id")
        if client_id not in self.clients:
            self.refuse(f"token ({grant_type}): unknown client")
            return oauth_error(401, "invalid_client", "unknown client_id")

        def refused(error: str, why: str) -> Response:
            self.refuse(f"token ({grant_type}): {why}")
            return oauth_error(400, error, why)

        if grant_type == "authorization_code":
            # A code works once, whatever the outcome.
            code = self.codes.pop(form.get("code", ""), None)
            if code is None or code["expires_at"] < time.time():
                return refused("invalid_grant", "unknown, used or expired code")
            if code["client_id"] != client_id:
                return refused("invalid_grant", "the code was issued to another client")
            if form.get("redirect_uri") != code["redirect_uri"]:
                return refused("invalid_grant", "redirect_uri differs from the authorization request's")
            verifier = form.get("code_verifier")
            if not verifier or s256(verifier) != code["code_challenge"]:
                return refused("invalid_grant", "the PKCE verifier does not match the challenge")
            if form.get("resource") != code["resource"]:
                return refused("invalid_target", "resource differs from the authorization request's")
            grant = {"client_id": client_id, "resource": code["resource"], "scopes": code["scopes"]}
        else:
            # Rotation: the refresh token presented is spent either way.
            grant = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if grant is None or grant["client_id"] != client_id:
                return refused("invalid_grant", "unknown or already used refresh token")
            if form.get("resource") != grant["resource"]:
                return refused("invalid_target", "resource differs from the grant's")
            asked = form.get("scope")
            if asked is not None and not set(asked.split()) <= set(grant["scopes"]):
                return refused("invalid_scope", "a refresh may not widen the grant")
        return self.issue(grant, grant_type)

    def issue(self, grant: dict, grant_type: str) -> Response:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access_tokens[access] = {
            **grant,
            "expires_at": time.time() + self.token_ttl,
            "grant_type": grant_type,
        }
        self.refresh_tokens[refresh] = dict(grant)
        return JSONResponse(
            {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": self.token_ttl,
                "refresh_token": refresh,
                "scope": " ".join(grant["scopes"]),
            },
            headers={"Cache-Control": "no-store", "Pragma": "no-cache"},
        )

    async def introspect(self, request: Request) -> Response:
        """RFC 7662, for the resource server only (its bearer secret)."""
        if request.headers.get("authorization") != f"Bearer {self.introspection_secret}":
            return oauth_error(401, "invalid_client", "introspection is for the resource server")
        form = await request.form()
        token = self.access_tokens.get(form.get("token", ""))
        if token is None or token["expires_at"] <= time.time():
            return JSONResponse({"active": False})
        return JSONResponse(
            {
                "active": True,
                "iss": self.issuer,
                "sub": SUBJECT,
                "client_id": token["client_id"],
                "scope": " ".join(token["scopes"]),
                "exp": int(token["expires_at"]),
                "aud": token["resource"],
                "token_type": "Bearer",
                # Not RFC 7662's: which grant issued the token, so a test can
                # tell a refreshed token from the first one.
                "grant_type": token["grant_type"],
            }
        )

    async def stats(self, _: Request) -> Response:
        return JSONResponse(
            {
                "token_requests": self.token_requests,
                "authorizations": self.authorizations,
                "clients": sorted(self.clients),
                "refused": self.refused,
            }
        )


class IntrospectingVerifier:
    """The SDK's `TokenVerifier`: asks the authorization server about each
    bearer token (RFC 7662)."""

    def __init__(self, introspection_url: str, secret: str):
        self.introspection_url = introspection_url
        self.secret = secret

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(timeout=10) as client:
            answer = await client.post(
                self.introspection_url,
                data={"token": token},
                headers={"Authorization": f"Bearer {self.secret}"},
            )
        if answer.status_code != 200:
            return None
        info = answer.json()
        if not info.get("active"):
            return None
        return AccessToken(
            token=token,
            client_id=info["client_id"],
            scopes=info.get("scope", "").split(),
            expires_at=info.get("exp"),
            resource=info.get("aud"),
            subject=info.get("sub"),
            claims={"iss": info.get("iss"), "grant_type": info.get("grant_type")},
        )


def resource_server(issuer: str, mcp_url: str, secret: str, calls: list[dict]) -> Starlette:
    mcp = MCPServer(
        "countersign-interop-py-oauth",
        log_level="WARNING",
        token_verifier=IntrospectingVerifier(f"{issuer}/introspect", secret),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=mcp_url,
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    # No annotations: a write that Countersign's gate always asks about.
    @mcp.tool(description="Saves a note.")
    def save_note(title: str, body: str) -> str:
        # Never None here: the SDK lets no call through without a token.
        token = get_access_token()
        calls.append(
            {
                "tool": "save_note",
                "arguments": {"title": title, "body": body},
                "subject": token.subject,
                "client_id": token.client_id,
                "grant_type": (token.claims or {}).get("grant_type"),
                "token": fingerprint(token.token),
            }
        )
        return f"saved {title!r} for {token.subject}"

    @mcp.tool(
        description="Lists the titles of the saved notes.",
        annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
    )
    def list_notes() -> str:
        return json.dumps([c["arguments"]["title"] for c in calls])

    # Outside the SDK's auth (custom routes are not protected): the tests'
    # view of what ran.
    @mcp.custom_route("/admin/calls", methods=["GET"])
    async def admin_calls(_: Request) -> Response:
        return JSONResponse(calls)

    return mcp.streamable_http_app(host="127.0.0.1")


async def main() -> None:
    token_ttl = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    as_socket, rs_socket = listening_socket(), listening_socket()
    issuer = f"http://127.0.0.1:{as_socket.getsockname()[1]}"
    mcp_url = f"http://127.0.0.1:{rs_socket.getsockname()[1]}/mcp"
    secret = secrets.token_urlsafe(32)
    calls: list[dict] = []

    servers = [
        uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        for app in (
            AuthorizationServer(issuer, token_ttl, secret).app(),
            resource_server(issuer, mcp_url, secret, calls),
        )
    ]
    tasks = [
        asyncio.create_task(server.serve(sockets=[sock]))
        for server, sock in zip(servers, (as_socket, rs_socket))
    ]
    while not all(server.started for server in servers):
        if any(task.done() for task in tasks):
            raise SystemExit("a server stopped before it listened")
        await asyncio.sleep(0.02)
    print(json.dumps({"issuer": issuer, "mcp": mcp_url}), flush=True)
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main())
