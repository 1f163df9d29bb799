"""REST POST /collections/{readable_id}/search/instant: the SearchResult shape and request errors."""
from __future__ import annotations

import re
import uuid
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from airweave.collections.services import collection_create
from airweave.tenancy.models import Organization
from airweave.tenancy.services import api_key_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start

RESULT_FIELDS = {
    "entity_id", "name", "relevance_score", "breadcrumbs", "created_at", "updated_at", "textual_representation",
    "airweave_system_metadata", "access", "web_url", "url", "raw_source_fields",
}
SYSTEM_METADATA_FIELDS = {"source_name", "entity_type", "sync_id", "sync_job_id", "chunk_index", "original_entity_id"}
FILES = {
    "guides/kitchen/sourdough.md": "---\ntitle: Sourdough bread\n---\nFeed the starter with flour and water, "
                                   "let the dough rise overnight, then bake it in a hot Dutch oven.",
    "guides/garage/bicycle.md": "# Bicycle repair\nTo fix a flat tyre, remove the wheel, find the puncture in the "
                                "inner tube and apply a rubber patch.",
    "astronomy.txt": "Jupiter is the largest planet of the solar system; its Great Red Spot is a giant storm.",
}


@pytest.fixture(scope="module")
def corpus(django_db_setup, django_db_blocker, tmp_path_factory):
    """One synced collection for the whole module (committed, removed at the end): syncing is the slow part."""
    root = tmp_path_factory.mktemp("instant") / "docs"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    with django_db_blocker.unblock():
        org = Organization.objects.create(name=f"instant-search-{uuid.uuid4().hex[:8]}")
        try:
            collection = collection_create(organization=org, name="Instant corpus", readable_id="docs")
            connection = source_connection_create(collection=collection, short_name="local_files",
                                                  config={"path": str(root)}, sync_immediately=False, for_api=False)
            job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
            assert job.status == "completed" and job.entities_inserted == 3
            key = api_key_create(organization=org, name="search").key
        except BaseException:
            org.delete()
            raise
    yield SimpleNamespace(root=root, org=org, collection=collection, connection=connection, job=job, key=key)
    with django_db_blocker.unblock():
        org.delete()


@pytest.fixture
def api(corpus, db):
    c = APIClient()
    c.credentials(HTTP_X_API_KEY=corpus.key)
    return c


def search(client, body, readable_id="docs"):
    return client.post(f"/collections/{readable_id}/search/instant", body, format="json")


def test_result_shape(api, corpus):
    root, connection, job = corpus.root, corpus.connection, corpus.job
    r = search(api, {"query": "how do I repair a punctured bike tyre"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert set(body) == {"results"}
    results = body["results"]
    assert len(results) == 3
    top = results[0]
    assert RESULT_FIELDS <= set(top)
    assert top["entity_id"] == "guides/garage/bicycle.md__chunk_0"
    assert re.fullmatch(r".+__chunk_\d+", top["entity_id"])
    assert top["name"] == "bicycle.md"
    assert isinstance(top["relevance_score"], float)
    assert [r["relevance_score"] for r in results] == sorted((r["relevance_score"] for r in results), reverse=True)
    assert top["breadcrumbs"] == [
        {"entity_id": "guides", "name": "guides", "entity_type": "LocalFolderEntity"},
        {"entity_id": "guides/garage", "name": "garage", "entity_type": "LocalFolderEntity"},
    ]
    assert "puncture" in top["textual_representation"]
    meta = top["airweave_system_metadata"]
    assert set(meta) == SYSTEM_METADATA_FIELDS
    assert meta == {
        "source_name": "local_files", "entity_type": "LocalFileEntity", "sync_id": str(connection.sync.id),
        "sync_job_id": str(job.id), "chunk_index": 0, "original_entity_id": "guides/garage/bicycle.md",
    }
    assert top["access"]["is_public"] is True
    assert top["web_url"].startswith("file://")
    assert top["web_url"] == (root / "guides/garage/bicycle.md").as_uri()
    assert top["updated_at"] and top["created_at"]
    assert top["raw_source_fields"]["path"] == "guides/garage/bicycle.md"

    sourdough = next(r for r in results if r["airweave_system_metadata"]["original_entity_id"].endswith("sourdough.md"))
    assert sourdough["name"] == "Sourdough bread"  # front-matter title


def test_result_fields_are_exactly_those_of_api_md(api):
    results = search(api, {"query": "bread"}).json()["results"]
    assert results and all(set(r) == RESULT_FIELDS for r in results)


@pytest.mark.parametrize("strategy", ["hybrid", "semantic", "keyword"])
def test_each_strategy_over_rest(api, strategy):
    r = search(api, {"query": "Jupiter storm planet", "retrieval_strategy": strategy, "limit": 2})
    assert r.status_code == 200, r.content
    results = r.json()["results"]
    assert 1 <= len(results) <= 2
    assert results[0]["airweave_system_metadata"]["original_entity_id"] == "astronomy.txt"


def test_limit_offset_and_filter_over_rest(api):
    full = search(api, {"query": "bread", "limit": 3}).json()["results"]
    page = search(api, {"query": "bread", "limit": 1, "offset": 1}).json()["results"]
    assert [r["entity_id"] for r in page] == [full[1]["entity_id"]]
    filtered = search(api, {"query": "bread", "filter": [{"conditions": [
        {"field": "breadcrumbs.name", "operator": "equals", "value": "garage"}]}]}).json()["results"]
    assert [r["airweave_system_metadata"]["original_entity_id"] for r in filtered] == ["guides/garage/bicycle.md"]


def test_empty_collection_answers_no_results(client, make_collection):
    make_collection(readable_id="empty")
    r = search(client, {"query": "anything"}, readable_id="empty")
    assert r.status_code == 200
    assert r.json() == {"results": []}


def assert_422(response, field=None):
    assert response.status_code == 422, (response.status_code, response.content)
    detail = response.json()["detail"]
    if isinstance(detail, list):
        assert all(set(d) == {"loc", "msg", "type"} for d in detail)
        if field:
            assert any(field in d["loc"] for d in detail), detail
    else:
        assert isinstance(detail, str)
    return detail


@pytest.mark.parametrize("body, field", [
    ({"query": ""}, "query"),
    ({"query": "   "}, "query"),
    ({}, "query"),
    ({"query": None}, "query"),
    ({"query": "x" * 2001}, "query"),
    ({"query": "ok", "limit": 0}, "limit"),
    ({"query": "ok", "limit": 1001}, "limit"),
    ({"query": "ok", "limit": "many"}, "limit"),
    ({"query": "ok", "offset": -1}, "offset"),
    ({"query": "ok", "retrieval_strategy": "magic"}, "retrieval_strategy"),
    ({"query": "ok", "filter": {"conditions": []}}, "filter"),
    ({"query": "ok", "filter": [{"conditions": [{"field": "colour", "operator": "equals", "value": "x"}]}]}, "filter"),
])
def test_bad_requests_are_422(api, body, field):
    assert_422(search(api, body), field)


def test_limit_bounds_are_inclusive(api):
    assert search(api, {"query": "bread", "limit": 1}).status_code == 200
    assert search(api, {"query": "bread", "limit": 1000}).status_code == 200


@pytest.mark.parametrize("raw", ["{not json", '{"query": "x",}', "", "[1, 2]", '"just a string"'])
def test_malformed_json_is_422_not_500(api, raw):
    r = api.post("/collections/docs/search/instant", data=raw, content_type="application/json")
    assert r.status_code == 422, (r.status_code, r.content)


def test_unknown_collection_is_404(api):
    assert search(api, {"query": "bread"}, readable_id="nope").status_code == 404


def test_another_organization_cannot_search_the_collection(client, corpus):
    assert search(client, {"query": "bread"}).status_code == 404
