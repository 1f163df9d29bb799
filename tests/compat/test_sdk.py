"""Airweave's Python SDK (airweave-sdk 0.9.62), unmodified, against a live server: every method of
collections, sources, source connections (run, jobs, cancel) and search (instant, classic,
agentic and its stream). The SDK parses every answer with its own pydantic models, so each
assertion below is on a parsed object; webhooks are in test_sdk_webhooks.py.
"""
from __future__ import annotations

import pytest

from tests.compat.sdk import load_sdk, wait_for_job

# The marker makes pytest-django create the test database, which the live server uses.
pytestmark = pytest.mark.django_db
sdk = load_sdk()
from airweave_sdk.core.api_error import ApiError  # noqa: E402  (the SDK loads under this name)


@pytest.fixture(scope="module")
def client(live):
    return sdk.AirweaveSDK(base_url=live.url, api_key=live.key, timeout=120)


@pytest.fixture(scope="module")
def collection(client):
    created = client.collections.create(name="SDK handbook", readable_id="sdk-handbook")
    yield created
    try:
        client.collections.delete("sdk-handbook")
    except ApiError:
        pass


@pytest.fixture(scope="module")
def connection(client, collection, live):
    created = client.source_connections.create(
        short_name="local_files", readable_collection_id=collection.readable_id, name="Handbook folder",
        config={"path": str(live.root / "handbook")}, sync_immediately=True,
        authentication=sdk.DirectAuthentication(credentials={}))
    job = wait_for_job(client, created.id)
    assert job.status == "completed", job
    return created


def test_collections_create_get_list_update(client, collection):
    assert isinstance(collection, sdk.Collection)
    assert collection.readable_id == "sdk-handbook" and collection.vector_size == 384
    assert collection.embedding_model_name == "local/all-MiniLM-L6-v2"
    got = client.collections.get("sdk-handbook")
    assert got.id == collection.id and got.created_at == collection.created_at
    listed = client.collections.list(skip=0, limit=10, search="sdk hand")  # other modules share the organization
    assert [c.readable_id for c in listed] == ["sdk-handbook"]
    updated = client.collections.update("sdk-handbook", name="SDK staff handbook")
    assert updated.name == "SDK staff handbook" and updated.readable_id == "sdk-handbook"


def test_collections_delete(client):
    client.collections.create(name="Short-lived", readable_id="sdk-short-lived")
    deleted = client.collections.delete("sdk-short-lived")
    assert isinstance(deleted, sdk.Collection) and deleted.readable_id == "sdk-short-lived"
    with pytest.raises(ApiError) as missing:
        client.collections.get("sdk-short-lived")
    assert missing.value.status_code == 404


def test_sources_list_and_get(client):
    sources = client.sources.list()
    assert all(isinstance(s, sdk.Source) for s in sources)
    assert {"local_files", "github", "slack", "notion"} <= {s.short_name for s in sources}
    local = client.sources.get("local_files")
    assert local.short_name == "local_files" and "direct" in local.auth_methods
    assert "path" in [f.name for f in local.config_fields.fields]


def test_source_connections_create_get_list_update(client, connection, collection):
    assert isinstance(connection, sdk.SourceConnection)
    assert connection.short_name == "local_files" and connection.auth.method == "direct"
    got = client.source_connections.get(connection.id)
    assert got.status == "active" and got.entities.total_entities == 3
    assert got.sync.total_runs == 1 and got.sync.successful_runs == 1 and got.sync.last_job.status == "completed"
    assert got.sync.last_job.entities_inserted == 3
    listed = client.source_connections.list(collection=collection.readable_id)
    assert [(c.id, c.entity_count, c.auth_method) for c in listed] == [(connection.id, 3, "direct")]
    updated = client.source_connections.update(connection.id, description="HR pages",
                                               schedule=sdk.ScheduleConfig(cron="0 3 * * *"))
    assert updated.description == "HR pages" and updated.schedule.cron == "0 3 * * *"
    updated = client.source_connections.update(connection.id, authentication=sdk.DirectAuthentication(credentials={}))
    assert updated.auth.authenticated is True


def test_source_connections_run_jobs_and_cancel(client, connection):
    job = client.source_connections.run(connection.id)
    assert isinstance(job, sdk.SourceConnectionJob) and job.status in ("pending", "running", "completed")
    cancelled = client.source_connections.cancel_job(connection.id, job.id)
    assert cancelled.id == job.id and cancelled.status in ("cancelling", "cancelled", "completed")
    final = wait_for_job(client, connection.id)
    assert final.id == job.id and final.status in ("cancelled", "completed")
    jobs = client.source_connections.get_source_connection_jobs(connection.id, limit=10)
    assert len(jobs) == 2 and all(isinstance(j, sdk.SourceConnectionJob) for j in jobs)
    assert jobs[1].status == "completed" and jobs[1].entities_inserted == 3


def test_search_instant_each_strategy_and_a_filter(client, connection):
    for strategy in ("hybrid", "semantic", "keyword"):
        response = client.collections.search.instant("sdk-handbook", query="How do I request annual leave?",
                                                     retrieval_strategy=strategy, limit=2)
        assert isinstance(response, sdk.SearchV2Response)
        assert response.results[0].name == "Requesting leave", strategy
        meta = response.results[0].airweave_system_metadata
        assert meta.source_name == "local_files" and meta.chunk_index == 0
        assert meta.original_entity_id == "hr/leave.md"
    filtered = client.collections.search.instant(
        "sdk-handbook", query="leave", limit=10, offset=0,
        filter=[sdk.FilterGroup(conditions=[sdk.FilterCondition(field="breadcrumbs.name", operator="equals",
                                                                value="it")])])
    assert [r.name for r in filtered.results] == ["Laptops"]


def test_search_classic_and_agentic(client, connection):
    classic = client.collections.search.classic("sdk-handbook", query="lost laptop", limit=3)
    assert classic.results[0].name == "Laptops"
    agentic = client.collections.search.agentic("sdk-handbook", query="travel receipts", thinking=False)
    assert agentic.results and agentic.results[0].name == "Travel"


def test_search_stream_agentic_yields_the_sdk_event_models(client, connection):
    events = list(client.collections.search.stream_agentic("sdk-handbook", query="travel receipts", thinking=True,
                                                           limit=5))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["AgenticSearchEvent_Started", "AgenticSearchEvent_Thinking", "AgenticSearchEvent_ToolCall",
                     "AgenticSearchEvent_Done"], kinds
    started, thinking, tool_call, done = events
    assert started.tier == "agentic" and started.collection_readable_id == "sdk-handbook"
    assert started.query == "travel receipts" and started.request_id
    assert "No language model" in thinking.text and thinking.duration_ms >= 0 and thinking.diagnostics.iteration == 1
    assert tool_call.tool_name == "search" and tool_call.diagnostics.arguments["query"] == "travel receipts"
    assert done.results[0].name == "Travel" and done.duration_ms >= 0 and len(done.results) <= 5


def test_source_connections_delete(client, collection, live):
    extra = client.source_connections.create(
        short_name="local_files", readable_collection_id=collection.readable_id, name="Travel only",
        config={"path": str(live.root / "handbook")}, sync_immediately=False)
    assert extra.status in ("pending_sync", "active")
    deleted = client.source_connections.delete(extra.id)
    assert deleted.id == extra.id
    with pytest.raises(ApiError) as missing:
        client.source_connections.get(extra.id)
    assert missing.value.status_code == 404
