"""Shared pieces of the business SaaS source tests (HubSpot, Salesforce, Zendesk, ...): JSON fixtures of
the vendors' documented responses, request matchers, one inline sync job, and a search through the API."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(source: str, name: str) -> dict | list:
    """The JSON document `tests/connectors/fixtures/<source>/<name>.json`."""
    return json.loads((FIXTURES / source / f"{name}.json").read_text())


def query(absent: tuple[str, ...] = (), **expected):
    """A `responses` matcher: the query has each `expected` param (exact value) and none of `absent`."""

    def match(request):
        params = {k: v[-1] for k, v in parse_qs(urlsplit(request.url).query, keep_blank_values=True).items()}
        wrong = {k: params.get(k) for k, v in expected.items() if params.get(k) != str(v)}
        present = [k for k in absent if k in params]
        if wrong or present:
            return False, f"query {params} differs on {wrong or present}"
        return True, ""

    return match


def body_has(**expected):
    """A `responses` matcher: the JSON body has each `expected` top-level key with that value."""

    def match(request):
        body = json.loads(request.body or b"{}")
        wrong = {k: body.get(k) for k, v in expected.items() if body.get(k) != v}
        return (not wrong), f"body differs on {wrong}" if wrong else ""

    return match


def connect(collection, short_name: str, credentials: dict, config: dict | None = None):
    """A source connection of `short_name` in `collection`, not yet synced."""
    return source_connection_create(collection=collection, short_name=short_name, config=config or {},
                                    credentials=credentials, sync_immediately=False, for_api=False)


def run_sync(connection, force_full_sync: bool = False):
    """Run one sync job of `connection` inline; return the finished SyncJob."""
    job = sync_job_start(source_connection=connection, force_full_sync=force_full_sync, enqueue=False)
    return sync_job_run(job_id=job.id)


def search_ids(client, query_text: str, collection: str = "docs", limit: int = 5) -> list[str]:
    """The original entity ids of an instant search of `collection`, best first."""
    response = client.post(f"/collections/{collection}/search/instant", {"query": query_text, "limit": limit},
                           format="json")
    assert response.status_code == 200, response.content
    return [r["airweave_system_metadata"]["original_entity_id"] for r in response.json()["results"]]
