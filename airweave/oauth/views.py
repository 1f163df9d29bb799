"""OAuth endpoints: metadata (RFC 8414, RFC 9728), registration, the consent page, token, revocation.

Thin: authlib (`server.py`) speaks the protocol; the consent page asks the logged-in user which
organization the agent may act for, showing that organization's collections.
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import OAuth2Error
from authlib.oauth2.rfc6749.errors import InsecureTransportError
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from airweave.collections.selectors import collection_count, collection_list
from airweave.oauth.metadata import MCP_PATH, public_base_url
from airweave.oauth.server import CLIENT_AUTH_METHODS, GRANT_TYPES, ResourceOwner, server
from airweave.tenancy.context import organizations_of_user

CONSENT_COLLECTIONS = 25


def _base(request) -> str:
    return public_base_url(request.scheme, request.get_host())


def cors_public(view):
    """Lets browser-based agents call a public, credential-free endpoint from any origin (the
    endpoints take no cookies, so `*` exposes nothing), and answers the CORS preflight."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method == "OPTIONS":
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            response["Access-Control-Allow-Headers"] = "Authorization, Content-Type, MCP-Protocol-Version"
            response["Access-Control-Max-Age"] = "86400"
        else:
            response = view(request, *args, **kwargs)
        response["Access-Control-Allow-Origin"] = "*"
        return response

    return wrapped


# RFC 6749 Appendix A: every parameter of these endpoints (client_id, code, state, redirect_uri,
# code_verifier, tokens, ...) is printable ASCII; client credentials in HTTP Basic too (§2.3.1).
_PRINTABLE_ASCII = re.compile(r"[\x20-\x7e]*")


def unprintable_parameter(request) -> str | None:
    """The name of the first query or form parameter of `request` that is not printable ASCII
    (RFC 6749 Appendix A), "Authorization" for undecodable HTTP Basic client credentials, or None.

    Refused up front: such values (a NUL, a control character, non-ASCII text) cannot be stored by
    PostgreSQL or echoed in an OAuth error by the library, and no conforming client sends them.
    """
    for params in (request.GET, request.POST):
        for name, values in params.lists():
            if not all(_PRINTABLE_ASCII.fullmatch(v) for v in (name, *values)):
                return name if _PRINTABLE_ASCII.fullmatch(name) else "(a parameter name)"
    header = request.headers.get("Authorization", "")
    if header[:6].lower() == "basic ":
        try:
            decoded = base64.b64decode(header[6:].strip(), validate=True).decode("ascii")
        except (binascii.Error, ValueError):
            return "Authorization"
        if not _PRINTABLE_ASCII.fullmatch(decoded):
            return "Authorization"
    return None


def _bad_parameter_description(name: str) -> str:
    return f"{name} must be printable ASCII (RFC 6749 Appendix A): no control, NUL or non-ASCII characters"


def oauth_endpoint(view):
    """A machine-facing OAuth endpoint: no CSRF (no cookies), CORS for browser agents, a JSON 400
    for parameters that are not printable ASCII, and a JSON 400 instead of a crash when TLS is
    missing (authlib refuses plain http except on loopback)."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method != "OPTIONS" and (bad := unprintable_parameter(request)):
            error, status = ("invalid_client", 401) if bad == "Authorization" else ("invalid_request", 400)
            return JsonResponse({"error": error, "error_description": _bad_parameter_description(bad)}, status=status)
        try:
            return view(request, *args, **kwargs)
        except InsecureTransportError:
            return JsonResponse({"error": "insecure_transport", "error_description": _INSECURE}, status=400)

    return csrf_exempt(cors_public(wrapped))


_INSECURE = ("OAuth needs https (plain http is allowed on loopback only); behind a TLS proxy, set "
             "SECURE_PROXY_SSL_HEADER or AIRWEAVE_PUBLIC_URL")


@cors_public
@require_http_methods(["GET", "OPTIONS"])
def authorization_server_metadata(request):
    """RFC 8414 metadata of this authorization server."""
    base = _base(request)
    return JsonResponse({
        "issuer": base,
        "authorization_endpoint": f"{base}/oauth/authorize",
        "token_endpoint": f"{base}/oauth/token",
        "registration_endpoint": f"{base}/oauth/register",
        "revocation_endpoint": f"{base}/oauth/revoke",
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": GRANT_TYPES,
        "token_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
        "revocation_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
        "code_challenge_methods_supported": ["S256"],
        "service_documentation": f"{base}/docs",
    })


@cors_public
@require_http_methods(["GET", "OPTIONS"])
def protected_resource_metadata(request, resource_path: str = ""):
    """RFC 9728 metadata of a protected resource: the REST API (`/`) or the MCP endpoint (`/mcp`)."""
    base = _base(request)
    return JsonResponse({
        "resource": f"{base}{resource_path}",
        "authorization_servers": [base],
        "bearer_methods_supported": ["header"],
        "resource_name": "Airweave MCP server" if resource_path == MCP_PATH else "Airweave API",
        "resource_documentation": f"{base}/docs",
    })


@oauth_endpoint
@require_http_methods(["POST", "OPTIONS"])
def register(request):
    """RFC 7591 dynamic client registration: JSON client metadata → 201 client information."""
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):
        body = None
    if not isinstance(body, dict):
        return JsonResponse({"error": "invalid_client_metadata",
                             "error_description": "the body must be a JSON object of client metadata"}, status=400)
    try:
        field = _unstorable_text(body)
    except RecursionError:
        field = ""
    if field is not None:
        return JsonResponse({"error": "invalid_client_metadata",
                             "error_description": f"{field or 'a key'} must not contain NUL characters or unpaired "
                                                  "surrogates (\\u0000, \\ud800)"}, status=400)
    return server.create_endpoint_response("client_registration", request)


def _unstorable_text(value, path: str = "") -> str | None:
    """Where the first string or key of a parsed JSON value holds what PostgreSQL cannot store (a NUL
    character or an unpaired surrogate): a dotted path such as `redirect_uris.0` ("" for a top-level
    key), or None."""
    if isinstance(value, str):
        return path if "\x00" in value or _has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key or _has_surrogate(key):
                return path
            if (found := _unstorable_text(item, f"{path}.{key}" if path else key)) is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if (found := _unstorable_text(item, f"{path}.{index}")) is not None:
                return found
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@oauth_endpoint
@require_http_methods(["POST", "OPTIONS"])
def token(request):
    """The token endpoint: authorization_code (with code_verifier) and refresh_token grants."""
    return server.create_token_response(request)


@oauth_endpoint
@require_http_methods(["POST", "OPTIONS"])
def revoke(request):
    """RFC 7009 revocation of an access or refresh token (and the rest of its grant)."""
    return server.create_endpoint_response("revocation", request)


def _error_page(request, error: OAuth2Error, status: int = 400):
    return render(request, "oauth/error.html", {"error": error.error,
                                                "description": error.get_error_description()}, status=status)


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def authorize(request):
    """The authorization endpoint: validates the request, shows the consent page (GET), and on the
    user's answer (POST) redirects to the client with a code or `access_denied`.

    Errors are sent back to the client's redirect URI only once that URI is known to be registered;
    otherwise (unknown client, bad redirect URI, no TLS) they are shown here.
    """
    if bad := unprintable_parameter(request):
        return render(request, "oauth/error.html", {"error": "invalid_request",
                                                    "description": _bad_parameter_description(bad)}, status=400)
    try:
        grant = server.get_consent_grant(request, end_user=request.user)
    except OAuth2Error as error:
        if getattr(error, "redirect_uri", None):
            return server.handle_response(*error())
        return _error_page(request, error)
    organizations = organizations_of_user(request.user)
    if request.method == "POST":
        owner = None
        if request.POST.get("action") == "allow":
            chosen = request.POST.get("organization") or (str(organizations[0].pk) if len(organizations) == 1 else "")
            organization = next((o for o in organizations if str(o.pk) == chosen), None)
            if organization is None:
                return _consent_page(request, grant, organizations, error="Choose the organization to grant access to.")
            owner = ResourceOwner(user=request.user, organization=organization)
        return server.create_authorization_response(request, grant_user=owner, grant=grant)
    return _consent_page(request, grant, organizations)


def _consent_page(request, grant, organizations, error: str = ""):
    client = grant.client
    choices = []
    for org in organizations:
        collections = collection_list(organization=org, limit=CONSENT_COLLECTIONS)
        choices.append({"organization": org, "collections": collections,
                        "more": max(0, collection_count(organization=org) - len(collections))})
    return render(request, "oauth/authorize.html", {
        "client_name": client.client_name or client.client_id,
        "client_id": client.client_id,
        "redirect_host": urlsplit(grant.redirect_uri or "").netloc or grant.redirect_uri,
        "choices": choices,
        "error": error,
    }, status=400 if error else 200)
