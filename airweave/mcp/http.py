"""`/mcp`: the MCP server over streamable HTTP, inside the product's ASGI application (asgi.py).

Stateless: every request authenticates, builds a fresh server for its caller and collection, and
answers with JSON (no session survives the request, so any web process can serve any request).
Only POST is served: GET (a stream of server messages) and DELETE (ending a session) answer 405.

Authentication: `X-API-Key` first, else `Authorization: Bearer` with an API key or an OAuth
access token issued by this server. No or a bad credential answers 401 with a `WWW-Authenticate`
header pointing at the protected-resource metadata (RFC 9728), which is how a remote client
given only this URL discovers the authorization server, registers and asks the user to log in.

DNS-rebinding protection: the Host and Origin headers must match AIRWEAVE_MCP_ALLOWED_HOSTS and
AIRWEAVE_MCP_ALLOWED_ORIGINS (default: every ALLOWED_HOSTS entry on any port).
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request

from airweave.api.throttling import rate_limit_consume
from airweave.mcp.backends import InProcessBackend
from airweave.mcp.tools import build_server
from airweave.oauth.metadata import MCP_PATH, protected_resource_metadata_url, public_base_url
from airweave.tenancy.context import OAuthActor, actor_for_credential, credential_from_headers

COLLECTION_HEADER = "X-Collection-Readable-ID"


def transport_security() -> TransportSecuritySettings:
    """Host/Origin allow-lists of /mcp from settings (see the module docstring). An ALLOWED_HOSTS
    of "*" without explicit MCP lists turns the protection off, as it does for Django."""
    hosts, origins = list(settings.AIRWEAVE_MCP_ALLOWED_HOSTS), list(settings.AIRWEAVE_MCP_ALLOWED_ORIGINS)
    if not hosts:
        if "*" in settings.ALLOWED_HOSTS:
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        names = [h.lstrip(".") for h in settings.ALLOWED_HOSTS]
        names = [f"[{h}]" if ":" in h and not h.startswith("[") else h for h in names]  # IPv6 literals
        hosts = [form for h in names for form in (h, f"{h}:*")]
    if not origins:
        origins = [f"{scheme}://{h}{port}" for h in hosts if not h.endswith(":*")
                   for scheme in ("http", "https") for port in ("", ":*")]
        origins += list(settings.CSRF_TRUSTED_ORIGINS)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


async def _send_json(send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": payload})


async def _unauthorized(scope, send, headers: Headers, description: str, invalid: bool) -> None:
    base = public_base_url(scope.get("scheme", "http"), headers.get("host", "localhost"))
    params = [f'resource_metadata="{protected_resource_metadata_url(base, MCP_PATH)}"']
    if invalid:
        params[:0] = ['error="invalid_token"', f'error_description="{description}"']
    await _send_json(send, 401, {"error": "invalid_token" if invalid else "unauthorized",
                                 "error_description": description},
                     [(b"www-authenticate", ("Bearer " + ", ".join(params)).encode())])


def _collection(scope, headers: Headers) -> str | None:
    """The collection of the request: the X-Collection-Readable-ID header, else `?collection=`
    (for clients that can only be given a URL)."""
    value = headers.get(COLLECTION_HEADER)
    if not value:
        value = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("collection") or [""])[0]
    return value.strip() or None


def _backend_for(raw: str) -> InProcessBackend | None:
    """The backend acting for the caller behind credential `raw`, or None when it is refused."""
    actor = actor_for_credential(raw)
    if actor is None:
        return None
    return InProcessBackend(organization=actor.organization, user_email=actor.email, actor=actor,
                            authentication="oauth" if isinstance(actor, OAuthActor) else "api_key")


async def mcp_app(scope, receive, send) -> None:
    """ASGI application of `/mcp` (HTTP only; asgi.py routes it)."""
    security = transport_security()
    # Host and Origin first, so that nothing (not even a 401 naming a URL) answers a rebound request.
    refused = await TransportSecurityMiddleware(security).validate_request(Request(scope, receive), is_post=False)
    if refused is not None:
        return await refused(scope, receive, send)
    headers = Headers(scope=scope)
    raw = credential_from_headers(headers)
    if not raw:
        return await _unauthorized(scope, send, headers, "Authentication required: send an API key "
                                   "(X-API-Key) or an OAuth access token (Authorization: Bearer).", invalid=False)
    # Like Django's own ASGI handler: the database work of one request runs on a thread of its own.
    async with ThreadSensitiveContext():
        backend = await database_sync_to_async(_backend_for)(raw)
        if backend is None:
            return await _unauthorized(scope, send, headers, "Invalid, expired or revoked API key or access token.",
                                       invalid=True)
        if scope.get("method") != "POST":
            # Stateless: there is no session to stream server messages on (GET would hang open
            # forever) or to end (DELETE); the spec lets such a server answer 405.
            return await _send_json(send, 405, {"detail": "This MCP endpoint is stateless: send JSON-RPC "
                                                          "requests with POST."}, [(b"allow", b"POST")])
        # The organization's request budget (AIRWEAVE_RATE_LIMIT) is shared with the REST API.
        state = await sync_to_async(rate_limit_consume)("api", "AIRWEAVE_RATE_LIMIT", backend.organization.pk)
        if state is not None and not state.allowed:
            return await _send_json(send, 429, {"detail": f"Rate limit exceeded: at most {state.limit} requests per "
                                                          f"window for this organization; retry in {state.reset} s."},
                                    [(b"retry-after", str(state.reset).encode()),
                                     (b"ratelimit-limit", str(state.limit).encode()), (b"ratelimit-remaining", b"0"),
                                     (b"ratelimit-reset", str(state.reset).encode())])
        try:
            server = build_server(backend=backend, collection=_collection(scope, headers), transport="streamable-http")
        except ValueError as exc:
            return await _send_json(send, 400, {"detail": f"{COLLECTION_HEADER}: {exc}"})
        app = server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                                         transport_security=security)
        # The SDK starts its session manager from an ASGI lifespan, which daphne does not send:
        # start it here, once per request (stateless mode keeps nothing between requests).
        async with server.session_manager.run():
            await app(scope, receive, send)
