"""POST /collections/{id}/search and /search/stream with no provider key: results, extractive answer, events."""
import json
import re

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from airweave.collections.services import collection_create
from airweave.tenancy.services import api_key_create, organization_get_or_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start

PROVIDER_KEYS = ("OPENAI_API_KEY", "GROQ_API_KEY", "CEREBRAS_API_KEY", "MISTRAL_API_KEY", "TOGETHER_API_KEY",
                 "COHERE_API_KEY", "OLLAMA_BASE_URL", "VLLM_BASE_URL")
FILES = {
    "leave.md": "---\ntitle: Requesting leave\n---\nTo request annual leave, submit the request in HR Links at least "
                "two weeks ahead. Your supervisor approves the request in HR Links.",
    "travel.md": "---\ntitle: Travel\n---\nBook travel through the travel agency. Keep every receipt for your voucher.",
    "laptops.md": "---\ntitle: Laptops\n---\nIT ships a laptop on your first day. Lost laptops must be reported at once.",
}


def collect(stream) -> list:
    """Consume a streaming response's async iterator from a synchronous test."""

    async def drain():
        return [part async for part in stream]

    return async_to_sync(drain)()


@pytest.fixture
def no_keys(monkeypatch):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def searchable(transactional_db, write_files, no_keys):
    org = organization_get_or_create(name="Pipeline org")
    collection = collection_create(organization=org, name="Pipeline docs", readable_id="pipeline-docs")
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(write_files(FILES))}, sync_immediately=False, for_api=False)
    sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(organization=org).key)
    return client


def test_pipeline_search_answers_with_results_and_an_extractive_cited_completion(searchable):
    response = searchable.post("/collections/pipeline-docs/search", {"query": "How do I request annual leave?",
                                                                      "limit": 3}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"results", "completion", "providers"}
    assert body["providers"] == {"embed_query": "local/all-MiniLM-L6-v2", "generate_answer": "local/extractive"}
    assert body["results"][0]["name"] == "Requesting leave"
    result = body["results"][0]
    assert {"id", "score", "entity_id", "name", "textual_representation", "breadcrumbs", "system_metadata", "access",
            "source_fields", "web_url"} <= set(result)
    citations = [int(n) for n in re.findall(r"\[\[(\d+)\]\]", body["completion"])]
    assert citations
    for sentence, number in re.findall(r"(.+?) \[\[(\d+)\]\]\s*", body["completion"]):
        assert 1 <= int(number) <= len(body["results"])
        assert sentence.strip() in " ".join(body["results"][int(number) - 1]["textual_representation"].split())


def test_empty_result_set_answers_no_results(searchable):
    response = searchable.post("/collections/pipeline-docs/search", {
        "query": "leave", "filter": {"must": [{"key": "source_name", "match": {"value": "nothing"}}]}}, format="json")
    body = response.json()
    assert (body["results"], body["completion"]) == ([], "No results found for your query.")


def test_stream_frames_every_operation_and_says_why_skipped(searchable):
    response = searchable.post("/collections/pipeline-docs/search/stream", {"query": "laptop lost", "limit": 2},
                               format="json", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    raw = "".join(part if isinstance(part, str) else part.decode() for part in collect(response.streaming_content))
    frames = raw.split("\n\n")
    assert frames[-1] == ""
    events = [json.loads(f[len("data: "):]) for f in frames[:-1]]
    assert all(f.startswith("data: ") for f in frames[:-1])
    types = [e["type"] for e in events]
    assert types[:2] == ["connected", "start"] and types[-2:] == ["results", "done"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    starts = [e["name"] for e in events if e["type"] == "operator_start"]
    ends = {e["name"]: e for e in events if e["type"] == "operator_end"}
    assert starts == list(ends)
    assert {"query_expansion", "embed_query", "retrieval", "reranking", "generate_answer"} <= set(starts)
    assert "no language model" in ends["query_expansion"]["skipped"]
    assert "no reranker" in ends["reranking"]["skipped"]
    assert ends["generate_answer"]["provider"] == "local/extractive" and "provider" not in ends["reranking"]
    assert any(e["type"] == "completion_delta" for e in events)
    assert events[-2]["results"][0]["name"] == "Laptops"


@pytest.mark.parametrize("body, loc", [
    ({"query": ""}, "query"),
    ({"query": "x", "retrieval_strategy": "fuzzy"}, "retrieval_strategy"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "filter": {"must": [{"key": "colour", "match": {"value": "red"}}]}}, "filter"),
    ({"query": "x", "filter": []}, "filter"),  # a wrong type, not "no filter"
    ({"query": "x", "filter": False}, "filter"),
])
def test_bad_requests_answer_422_before_streaming(searchable, body, loc):
    for path in ("/collections/pipeline-docs/search", "/collections/pipeline-docs/search/stream"):
        response = searchable.post(path, body, format="json")
        assert response.status_code == 422, (path, response.content)
        assert loc in json.dumps(response.json()["detail"])


def test_other_organizations_collection_is_404(searchable, db):
    stranger = APIClient()
    stranger.credentials(HTTP_X_API_KEY=api_key_create(organization=organization_get_or_create(name="Other")).key)
    for path in ("/collections/pipeline-docs/search", "/collections/pipeline-docs/search/stream"):
        assert stranger.post(path, {"query": "leave"}, format="json").status_code == 404


def test_errors_keep_their_json_body_when_the_client_asks_for_event_streams(searchable):
    response = searchable.post("/collections/pipeline-docs/search/stream", {"query": ""}, format="json",
                               HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 422
    assert json.loads(response.content)["detail"][0]["loc"] == ["body", "query"]


def test_deeply_nested_json_and_filters_answer_422(searchable):
    nested = {"key": "name", "match": {"value": "x"}}
    for _ in range(40):
        nested = {"must": [nested]}
    response = searchable.post("/collections/pipeline-docs/search", {"query": "x", "filter": nested}, format="json")
    assert response.status_code == 422 and "nest" in json.dumps(response.json())
    deep = "[" * 100000 + "]" * 100000
    response = searchable.post("/collections", data='{"name": ' + deep + "}", content_type="application/json")
    assert response.status_code == 422
