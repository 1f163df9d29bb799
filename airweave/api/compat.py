"""What makes the REST API answer like the public Airweave API at its edges (issue 12).

- A trailing slash is the same path: `/collections/` answers like `/collections`.
- Every error on an API path is JSON: an unknown path is a JSON 404, a malformed id in the path
  a JSON 422 (`{"detail": [{"loc": ["path", "id"], ...}]}`), never Django's HTML page.
- Unknown request fields are ignored (as the real API does) and named in a `Warning` header, so
  a typo is still visible: serializers call `note_ignored` and the middleware writes the header.
- Legacy fields that the real API still accepts with a deprecation notice call `note_deprecated`,
  and the answer carries `X-API-Deprecation`.

The web pages (`/ui/`, `/accounts/`, `/admin/`, `/docs`, static files) keep Django's own pages.
"""
from __future__ import annotations

import contextvars
import json
import sys
import uuid

from django.http import HttpResponse, JsonResponse
from django.urls import Resolver404, resolve

from airweave.availability import DATABASE_UNAVAILABLE, RETRY_AFTER_SECONDS, database_unavailable

WEB_PREFIXES = ("/ui", "/accounts", "/admin", "/static/", "/docs", "/oauth/authorize")

_ignored: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("airweave_ignored_fields", default=None)
_deprecated: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("airweave_deprecated_fields",
                                                                              default=None)


def note_ignored(path: str) -> None:
    """Record that the request field `path` (dotted) is unknown and was ignored."""
    found = _ignored.get()
    if found is not None and path not in found:
        found.append(path)


def note_deprecated(message: str) -> None:
    """Record a deprecation notice for the `X-API-Deprecation` header of this answer."""
    found = _deprecated.get()
    if found is not None and message not in found:
        found.append(message)


def ignored_fields() -> list[str]:
    """The unknown fields noted so far in this request (empty outside one)."""
    return list(_ignored.get() or [])


def is_api_path(path: str) -> bool:
    """True for the REST API's paths (everything but the web pages, admin and static files)."""
    return path != "/" and not path.startswith(WEB_PREFIXES)


class BadId(str):
    """A path segment that should have been a UUID; the middleware answers 422 before any view runs."""


class ApiUUIDConverter:
    """`<id:name>`: a UUID like Django's `uuid` converter, but anything else reaches the middleware
    as a BadId (answered 422 naming the parameter) instead of falling through to a 404."""

    regex = "[^/]+"

    def to_python(self, value: str):
        try:
            return uuid.UUID(value)
        except ValueError:
            return BadId(value)

    def to_url(self, value) -> str:
        return str(value)


def _resolves(path: str) -> bool:
    try:
        resolve(path)
        return True
    except Resolver404:
        return False


class APICompatibilityMiddleware:
    """Trailing slashes, JSON 404/422 for unknown paths and malformed ids, and the `Warning` and
    `X-API-Deprecation` headers of ignored and deprecated request fields."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        path = request.path_info
        if is_api_path(path):
            if len(path) > 1 and path.endswith("/") and not _resolves(path) and _resolves(path.rstrip("/")):
                request.path_info = path.rstrip("/")
            elif not _resolves(path):
                return JsonResponse({"detail": f"Not Found: no API path {path} (see /openapi.json)"}, status=404)
        ignored_token = _ignored.set([])
        deprecated_token = _deprecated.set([])
        try:
            response = self.get_response(request)
            ignored, deprecated = _ignored.get() or [], _deprecated.get() or []
        finally:
            _ignored.reset(ignored_token)
            _deprecated.reset(deprecated_token)
        if ignored:
            names = ", ".join(_header_safe(name) for name in ignored[:MAX_NAMED_FIELDS])
            more = f" and {len(ignored) - MAX_NAMED_FIELDS} more" if len(ignored) > MAX_NAMED_FIELDS else ""
            response["Warning"] = f'299 - "Unknown fields ignored: {names}{more}"'
        if deprecated:
            response["X-API-Deprecation"] = "; ".join(_header_safe(text, 500) for text in deprecated)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        """A malformed id in the path answers 422 naming the parameter."""
        bad = [name for name, value in view_kwargs.items() if isinstance(value, BadId)]
        if bad:
            return JsonResponse({"detail": [{"loc": ["path", name], "msg": f"must be a UUID, got {view_kwargs[name]!r}",
                                             "type": "uuid_parsing"} for name in bad]}, status=422)
        return None


def database_unavailable_response(request):
    """503 for a request that met an unreachable database: JSON on API paths, a short page on the web's."""
    if is_api_path(request.path_info):
        response = JsonResponse({"detail": DATABASE_UNAVAILABLE}, status=503)
    else:
        response = HttpResponse(f"<!doctype html><title>Service unavailable</title><h1>Service unavailable</h1>"
                                f"<p>{DATABASE_UNAVAILABLE}.</p>", status=503, content_type="text/html")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """Answers 503 (see airweave.availability) when a view meets an unreachable database, in DEBUG too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return database_unavailable_response(request) if database_unavailable(exception) else None


MAX_NAMED_FIELDS = 20


def _header_safe(text: str, limit: int = 100) -> str:
    """`text` as a header may carry it: printable ASCII, with other characters (non-Latin letters,
    control characters, quotes) escaped as JSON escapes them, at most `limit` characters."""
    escaped = json.dumps(str(text), ensure_ascii=True)[1:-1]
    return escaped if len(escaped) <= limit else escaped[:limit] + "..."


def server_error(request, *args, **kwargs):
    """handler500: 503 when the database is unreachable; else a JSON answer on API paths (Django's
    plain page for the web pages)."""
    if database_unavailable(sys.exc_info()[1]):
        return database_unavailable_response(request)
    if is_api_path(request.path_info):
        return JsonResponse({"detail": "Internal server error: the fault is logged on the server"}, status=500)
    from django.views.defaults import server_error as django_server_error

    return django_server_error(request, *args, **kwargs)
