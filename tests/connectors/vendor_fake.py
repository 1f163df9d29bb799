"""A vendor's HTTP API as its documentation defines it, for source tests.

`VendorFake(rsps, "https://api.example.com")` takes every request to that base URL (any method,
any path) through `responses`, so the source's real client code runs. Each `route(...)` declares
one documented request: method, path (a string, or a compiled regex matched in full), the query
parameters it must carry (exact values), those it may carry, the headers it must carry, and the
JSON or form body fields it must carry. A request that matches no route is recorded in
`unexpected` and answered by raising AssertionError inside the client, and `verify()` (called by
the `vendor` fixture of a test at teardown) fails the test with what was sent and why each route
refused it. So a source that sends a wrong path, an undocumented parameter or a misspelled body
field fails its test instead of being answered anyway.

    fake = VendorFake(rsps, "https://api.acme.example")
    fake.route("GET", "/v1/items", query={"space": "eng"}, optional=("cursor",),
               headers={"Authorization": "Bearer k"}, reply={"items": [...]})

A reply is a JSON-able body (answered 200), a `(status, headers, body)` tuple, a list of those
played in order (the last one repeats), or a callable `(request, params) -> one of those`, where
`params` is the query as a dict: a single value, or the list of values of a repeated parameter
(`state=OPEN&state=MERGED` → `["OPEN", "MERGED"]`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")


@dataclass
class Route:
    """One documented request and its answer; `calls` counts the requests it answered."""

    method: str
    path: str | re.Pattern
    query: dict[str, Any] = field(default_factory=dict)
    optional: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    json: dict[str, Any] | None = None
    json_optional: tuple[str, ...] = ()
    form: dict[str, Any] | None = None
    reply: Any = None
    calls: int = 0

    def refusal(self, method: str, path: str, params: dict, headers, body: bytes | str | None) -> str | None:
        """Why this route does not answer the request, or None when it does."""
        if method != self.method:
            return f"method {method} is not {self.method}"
        if isinstance(self.path, re.Pattern):
            if not self.path.fullmatch(path):
                return f"path {path} does not match {self.path.pattern}"
        elif path != self.path:
            return f"path {path} is not {self.path}"
        for key, expected in self.query.items():
            if key not in params:
                return f"query parameter {key!r} is missing"
            if not _equal(params[key], expected):
                return f"query parameter {key}={params[key]!r}, documented {expected!r}"
        extra = sorted(set(params) - set(self.query) - set(self.optional))
        if extra:
            return f"undocumented query parameter(s) {extra}"
        for key, expected in self.headers.items():
            if headers.get(key) != expected:
                return f"header {key}: {headers.get(key)!r}, expected {expected!r}"
        if self.json is not None:
            try:
                sent = json.loads(body or b"null")
            except ValueError:
                return "the body is not JSON"
            if not isinstance(sent, dict):
                return "the JSON body is not an object"
            for key, expected in self.json.items():
                if key not in sent:
                    return f"body field {key!r} is missing"
                if not _equal(sent[key], expected):
                    return f"body field {key}={sent[key]!r}, documented {expected!r}"
            extra = sorted(set(sent) - set(self.json) - set(self.json_optional))
            if extra:
                return f"undocumented body field(s) {extra}"
        if self.form is not None:
            text = body.decode() if isinstance(body, bytes) else (body or "")
            sent = {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}
            for key, expected in self.form.items():
                if key not in sent or not _equal(sent[key], expected):
                    return f"form field {key}={sent.get(key)!r}, documented {expected!r}"
        return None


def _equal(sent, expected) -> bool:
    if callable(expected):
        return bool(expected(sent))
    if isinstance(sent, str) and not isinstance(expected, str):
        return sent == str(expected)
    return sent == expected


class VendorFake:
    """Answers the documented requests of one API base URL; records and refuses any other. See the module."""

    def __init__(self, rsps, base_url: str):
        self.base = urlsplit(base_url)
        self.routes: list[Route] = []
        self.unexpected: list[str] = []
        self.requests: list = []
        pattern = re.compile(re.escape(base_url.rstrip("/")) + r"(/.*)?(\?.*)?$")
        for method in METHODS:
            rsps.add_callback(method, pattern, callback=self._answer)

    def route(self, method: str, path: str | re.Pattern, *, reply: Any, query: dict | None = None,
              optional: tuple[str, ...] | list[str] = (), headers: dict | None = None, json: dict | None = None,
              json_optional: tuple[str, ...] | list[str] = (), form: dict | None = None) -> Route:
        """Declare one documented request (see the module docstring); routes are tried in order."""
        route = Route(method=method, path=path, query=dict(query or {}), optional=tuple(optional),
                      headers=dict(headers or {}), json=json, json_optional=tuple(json_optional), form=form,
                      reply=reply)
        self.routes.append(route)
        return route

    def _answer(self, request):
        parts = urlsplit(request.url)
        path = parts.path[len(self.base.path.rstrip("/")):] or "/"
        params = {k: v[-1] if len(v) == 1 else v for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        self.requests.append(request)
        refusals = []
        for route in self.routes:
            why = route.refusal(request.method, path, params, request.headers, request.body)
            if why is None:
                route.calls += 1
                return _reply(route, request, params)
            refusals.append(why)
        message = (f"{request.method} {path}?{parts.query} is not a documented request of {self.base.netloc}: "
                   + "; ".join(refusals or ["no route declared"]))
        self.unexpected.append(message)
        raise AssertionError(message)

    def verify(self) -> None:
        """Fail (AssertionError) when any request matched no route."""
        assert not self.unexpected, "undocumented requests:\n" + "\n".join(self.unexpected)


def _reply(route: Route, request, params: dict):
    answer = route.reply
    if callable(answer):
        answer = answer(request, params)
    if isinstance(answer, list) and answer and isinstance(answer[0], tuple):
        answer = answer.pop(0) if len(answer) > 1 else answer[0]
    if isinstance(answer, tuple):
        status, headers, body = answer
    else:
        status, headers, body = 200, {}, answer
    if isinstance(body, (dict, list)):
        headers = {"Content-Type": "application/json", **headers}
        body = json.dumps(body)
    return status, headers, body


def vendor_fixture(rsps) -> Callable[[str], VendorFake]:
    """Make fakes on `rsps`; the caller verifies them at teardown (see the `vendor` fixtures of the tests)."""
    made: list[VendorFake] = []

    def make(base_url: str) -> VendorFake:
        fake = VendorFake(rsps, base_url)
        made.append(fake)
        return fake

    make.made = made
    return make
