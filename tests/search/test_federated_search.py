"""Federated sources searched at query time: their results take the documented result shapes,
two sources' results never merge by a shared id, and a failing source leaves partial results
plus an event that names it."""
from __future__ import annotations

import json

import pytest

import tests.access.sources  # noqa: F401  (registers acl_directory, a federated test source)
from airweave.api.serializers import PipelineResultSerializer, SearchResultSerializer
from connectors.services import source_connection_create
from search.pipeline import PipelineRequest, search_classic, search_pipeline
from tests.providers.vendor_server import hermetic_providers  # noqa: F401

pytestmark = pytest.mark.django_db

ENTRIES = {"entries": [{"id": "1", "name": "Leave desk", "text": "The leave desk answers questions about annual leave.",
                        "is_public": True}]}


@pytest.fixture(autouse=True)
def _hermetic(hermetic_providers):
    yield


@pytest.fixture
def collection(make_collection, sync_folder, write_files, tmp_path):
    collection = make_collection(readable_id="federated-docs")
    sync_folder(collection, write_files({"leave.md": "# Leave\nRequest annual leave in HR Links two weeks ahead."}))
    entries = tmp_path / "entries.json"
    entries.write_text(json.dumps(ENTRIES), encoding="utf-8")
    for name, path in (("desk-a", entries), ("desk-b", entries), ("broken", tmp_path / "missing.json")):
        source_connection_create(collection=collection, short_name="acl_directory", name=name,
                                 config={"entries_path": str(path)}, sync_immediately=False, for_api=False)
    return collection


def test_federated_results_have_the_pipeline_shape_and_a_failure_is_reported(collection):
    response = search_pipeline(collection=collection, principals=None, request=PipelineRequest(
        query="annual leave", expand_query=False, rerank=False, generate_answer=True, limit=10))

    federated = [r for r in response.results if r["id"] is None]
    assert len(federated) == 2  # desk-a and desk-b both say "1": two results, not one merged
    for result in response.results:
        assert set(result) == set(PipelineResultSerializer().fields)
    assert federated[0]["system_metadata"]["source_name"] == "acl_directory"
    assert federated[0]["system_metadata"]["original_entity_id"] == "1"
    assert federated[0]["access"] == {"is_public": True, "viewers": []}
    [done] = [e for e in response.events if e["type"] == "federated_search_done"]
    assert "missing.json" in done["failures"]["acl_directory"]
    [failure] = done["failed_connections"]  # named by its connection: several connections may share a source
    assert (failure["short_name"], failure["name"]) == ("acl_directory", "broken") and "missing.json" in failure["error"]
    assert done["count"] == 2
    assert any(r["name"] == "leave.md" for r in response.results)  # the synced chunk is still there
    assert response.completion and "[[" in response.completion


def test_federated_results_have_the_v2_shape_on_the_tiers(collection):
    response = search_classic(collection=collection, principals=None, query="annual leave", limit=10)

    names = {r["name"] for r in response.results}
    assert {"Leave desk", "leave.md"} <= names
    for result in response.results:
        assert set(result) == set(SearchResultSerializer().fields)
        assert result["airweave_system_metadata"]["source_name"] in ("acl_directory", "local_files")


def test_a_sources_datetimes_become_iso_strings():
    from datetime import datetime, timezone

    from search.results import federated_result

    when = datetime(2024, 5, 1, 12, 30, tzinfo=timezone.utc)
    result = federated_result({"entity_id": "x", "name": "X", "textual_representation": "t", "updated_at": when,
                               "created_at": "2024-01-01T00:00:00Z"}, source_name="s", access={})

    assert (result["updated_at"], result["created_at"]) == ("2024-05-01T12:30:00+00:00", "2024-01-01T00:00:00Z")
    json.dumps(result)  # what the websocket sends
