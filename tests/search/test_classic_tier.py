"""The classic tier: a language model plans the search (queries, strategy, filters), then rerank."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from airweave.tenancy.services import api_key_create
from search.pipeline import search_classic
from tests.providers.vendor_server import configure_provider, hermetic_providers, vendor_server  # noqa: F401
from tests.search.test_pipeline_with_providers import FILES, events_of

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _hermetic(hermetic_providers):
    yield


@pytest.fixture
def collection(make_collection, sync_folder, write_files):
    collection = make_collection(readable_id="classic-docs")
    sync_folder(collection, write_files(FILES))
    return collection


def plan(primary, variations=(), strategy="hybrid", filters=(), confidence=0.9):
    return {"primary_query": primary, "variations": list(variations), "retrieval_strategy": strategy,
            "filters": list(filters), "confidence": confidence}


def names(response):
    return [r["airweave_system_metadata"]["original_entity_id"] for r in response.results]


def test_plan_queries_strategy_and_filters_drive_retrieval(collection, vendor_server, monkeypatch):
    openai = vendor_server("openai")
    configure_provider(monkeypatch, "openai", openai, key="sk-test")
    openai.json_replies["search_plan"] = plan(
        "spare part QX7734", ["conveyor spare part order"], strategy="keyword",
        filters=[{"field": "breadcrumbs.name", "value": "warehouse"}])

    response = search_classic(collection=collection, principals=None, query="what do we need for the conveyor?", limit=5)

    assert names(response) == ["warehouse/inventory.txt"]
    [done] = events_of(response, "plan_done")
    assert done["queries"] == ["spare part QX7734", "conveyor spare part order"]
    assert done["retrieval_strategy"] == "keyword"
    assert response.state.provider_used["search_plan"] == "openai/gpt-4.1-mini"
    sent = openai.requests[0].body
    assert sent["response_format"]["json_schema"]["name"] == "search_plan"
    assert "warehouse" in sent["messages"][1]["content"]  # the collection's real values are offered


def test_low_confidence_filters_are_not_applied(collection, vendor_server, monkeypatch):
    openai = vendor_server("openai")
    configure_provider(monkeypatch, "openai", openai, key="sk-test")
    openai.json_replies["search_plan"] = plan("bread", filters=[{"field": "breadcrumbs.name", "value": "garage"}],
                                              confidence=0.3)
    response = search_classic(collection=collection, principals=None, query="bread", limit=3)
    assert names(response)[0] == "kitchen/sourdough.md"


def test_without_a_language_model_classic_is_a_hybrid_search_with_v2_results(collection, db):
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(organization=collection.organization).key)
    response = client.post("/collections/classic-docs/search/classic", {"query": "fixing a flat tyre", "limit": 2},
                           format="json")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert results[0]["name"] == "bicycle.md"
    assert {"entity_id", "relevance_score", "airweave_system_metadata", "textual_representation"} <= set(results[0])
    assert client.post("/collections/classic-docs/search/classic", {"query": ""}, format="json").status_code == 422
