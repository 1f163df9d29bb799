"""Serve recorded API interactions through `responses` (a transport-level mock of requests).

    with responses.RequestsMock() as rsps:
        add_recorded(rsps, SHARED_DATA / "github_api/extracted/Repository_issues_state_all.json")
        ... the real source code runs, its requests answered by the recordings ...

The recordings are the `extracted/` shape of ../shared/data: a list of
`{"request": {"method", "uri"}, "response": {"status", "headers", "body"}}`; a body that is
not a string is sent as JSON. Query strings are matched exactly.
"""
from __future__ import annotations

import json
from pathlib import Path

import responses

_DROPPED_HEADERS = {"content-length", "content-encoding", "transfer-encoding"}


def load_recorded(path: Path) -> list[dict]:
    return json.loads(Path(path).read_text())


def add_recorded(rsps: responses.RequestsMock, path: Path, *, only=None) -> list[dict]:
    """Register every interaction of `path` (or those for which `only(interaction)` is true); return them."""
    interactions = [i for i in load_recorded(path) if only is None or only(i)]
    for interaction in interactions:
        request, response = interaction["request"], interaction["response"]
        headers = {k: v for k, v in (response.get("headers") or {}).items() if k.lower() not in _DROPPED_HEADERS}
        body = response.get("body")
        if body is not None and not isinstance(body, str):
            body = json.dumps(body)
        rsps.add(request["method"], request["uri"], status=response["status"], headers=headers, body=body or "")
    return interactions
