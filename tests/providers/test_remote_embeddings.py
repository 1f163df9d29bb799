"""Collections pinned to an OpenAI embedding model: sync and search through the real SDK and a local server."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from airweave.collections.models import Chunk
from airweave.collections.services import collection_create
from airweave.tenancy.services import api_key_create
from search.instant import InstantSearchRequest, search_instant
from tests.providers.vendor_server import configure_provider

pytestmark = pytest.mark.django_db
FILES = {"a.md": "Sourdough starter needs flour and water.", "b.md": "Jupiter has a great red storm."}


@pytest.fixture
def collection(org):
    return collection_create(organization=org, name="Remote vectors", readable_id="remote",
                             embedding_model_name="openai/text-embedding-3-small")


def test_sync_and_search_with_openai_embeddings(collection, sync_folder, write_files, vendor_server, monkeypatch):
    server = vendor_server("openai")
    configure_provider(monkeypatch, "openai", server, key="sk-embed")
    _, job = sync_folder(collection, write_files(FILES))
    assert job.status == "completed", job.error
    assert set(Chunk.objects.filter(collection=collection).values_list("dims", flat=True)) == {1536}
    request = server.requests[0]
    assert request.path == "/v1/embeddings" and request.body["model"] == "text-embedding-3-small"
    assert request.body["dimensions"] == 1536 and request.bearer == "sk-embed"

    # The test server's vectors are hashes of the exact text: the query is a chunk's own text.
    text = Chunk.objects.get(collection=collection, original_entity_id="a.md").text
    results = search_instant(collection=collection, principals=None, request=InstantSearchRequest(
        query=text, retrieval_strategy="semantic", limit=2)).results
    assert results[0]["airweave_system_metadata"]["original_entity_id"] == "a.md"
    assert collection.vector_size == 1536


def test_without_its_key_the_sync_fails_clearly_and_search_answers_503(collection, sync_folder, write_files,
                                                                       org, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _, job = sync_folder(collection, write_files(FILES))
    assert job.status == "failed" and job.error_category == "embedding_provider"
    assert "OPENAI_API_KEY" in job.error
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(organization=org).key)
    response = client.post("/collections/remote/search/instant", {"query": "storm"}, format="json")
    assert response.status_code == 503 and "OPENAI_API_KEY" in response.json()["detail"]
    keyword = client.post("/collections/remote/search/instant", {"query": "storm", "retrieval_strategy": "keyword"},
                          format="json")
    assert keyword.status_code == 200


def test_unknown_embedding_model_is_refused_at_creation(client):
    response = client.post("/collections", {"name": "Odd model", "embedding_model_name": "acme/vectors-9000"},
                           format="json")
    assert response.status_code == 422 and "acme/vectors-9000" in response.json()["detail"][0]["msg"]


def test_sync_and_search_with_cohere_embeddings(org, sync_folder, write_files, vendor_server, monkeypatch):
    server = vendor_server("cohere")
    server.embedding_dims = 1024
    configure_provider(monkeypatch, "cohere", server, key="co-embed")
    collection = collection_create(organization=org, name="Cohere vectors", readable_id="cohere-vectors",
                                   embedding_model_name="cohere/embed-english-v3.0")
    _, job = sync_folder(collection, write_files(FILES))
    assert job.status == "completed", job.error
    assert set(Chunk.objects.filter(collection=collection).values_list("dims", flat=True)) == {1024}
    documents = [r for r in server.requests if r.path == "/v2/embed"]
    assert documents and {r.body["input_type"] for r in documents} == {"search_document"}
    assert documents[0].body["model"] == "embed-english-v3.0" and documents[0].bearer == "co-embed"

    text = Chunk.objects.get(collection=collection, original_entity_id="b.md").text
    results = search_instant(collection=collection, principals=None, request=InstantSearchRequest(
        query=text, retrieval_strategy="semantic", limit=2)).results
    assert results[0]["airweave_system_metadata"]["original_entity_id"] == "b.md"
    assert server.requests[-1].body["input_type"] == "search_query"


def test_cohere_embedding_failures_fail_the_sync_with_the_provider_error(org, sync_folder, write_files,
                                                                          vendor_server, monkeypatch):
    server = vendor_server("cohere")
    server.embedding_dims = 1024
    configure_provider(monkeypatch, "cohere", server)
    server.fail(401, times=None)
    collection = collection_create(organization=org, name="Cohere refused", readable_id="cohere-refused",
                                   embedding_model_name="cohere/embed-english-v3.0")
    _, job = sync_folder(collection, write_files(FILES))
    assert job.status == "failed" and "401" in job.error
