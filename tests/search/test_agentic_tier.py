"""The agentic tier: a bounded tool loop driven by a language model (played by a local OpenAI server)."""
from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from airweave.tenancy.services import api_key_create
from search import agentic
from search.agentic import search_agentic
from tests.api.test_search_pipeline import collect
from tests.providers.vendor_server import configure_provider, hermetic_providers, vendor_server  # noqa: F401
from tests.search.test_pipeline_with_providers import FILES

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _hermetic(hermetic_providers):
    yield


@pytest.fixture
def collection(make_collection, sync_folder, write_files):
    collection = make_collection(readable_id="agentic-docs")
    sync_folder(collection, write_files(FILES))
    return collection


@pytest.fixture
def openai_server(vendor_server, monkeypatch):
    server = vendor_server("openai")
    configure_provider(monkeypatch, "openai", server, key="sk-test")
    return server


def step(tool, thought="", **arguments):
    return {"thought": thought, "tool": tool, "arguments_json": json.dumps(arguments)}


def test_agent_searches_reads_collects_and_finishes(collection, openai_server):
    def respond(body):
        transcript = body["messages"][1]["content"]
        if "Step 1" not in transcript:
            return step("search", "Look for the part number.", query="spare part conveyor", limit=5)
        if "Step 2" not in transcript:
            return step("read", entity_id="warehouse/inventory.txt")
        if "Step 3" not in transcript:
            return step("collect", ids=["warehouse/inventory.txt__chunk_0"])
        return step("finish", "Found it.")

    openai_server.json_replies["agent_step"] = respond
    response = search_agentic(collection=collection, principals=None, query="Which part does the conveyor need?", thinking=True)

    assert [r["entity_id"] for r in response.results] == ["warehouse/inventory.txt__chunk_0"]
    assert response.iterations == 4 and response.provider == "openai/gpt-4.1-mini"
    types = [e["type"] for e in response.events]
    assert types[0] == "start" and types[-1] == "done"
    assert [e["tool"] for e in response.events if e["type"] == "tool_call"] == ["search", "read", "collect", "finish"]
    assert [e["text"] for e in response.events if e["type"] == "thinking"] == ["Look for the part number.", "Found it."]
    # the observation of each tool reached the model in the next step's transcript
    last = openai_server.requests[-1].body["messages"][1]["content"]
    assert "QX7734" in last and "agent_step" == openai_server.requests[-1].body["response_format"]["json_schema"]["name"]


def test_loop_stops_at_the_iteration_cap(collection, openai_server, monkeypatch):
    monkeypatch.setattr(agentic, "search_defaults", lambda: {"agentic_max_iterations": 3})
    openai_server.json_replies["agent_step"] = lambda body: step("search", query="bread")
    response = search_agentic(collection=collection, principals=None, query="bread")
    assert response.iterations == 3
    assert response.results and response.results[0]["name"] == "sourdough.md"  # the last search's results


def test_bad_tools_and_arguments_are_observations_not_crashes(collection, openai_server):
    openai_server.json_replies["agent_step"] = [
        {"thought": "", "tool": "read", "arguments_json": "not json"},
        step("read", entity_id="nope.md"),
        step("finish"),
    ]
    response = search_agentic(collection=collection, principals=None, query="anything")
    assert response.iterations == 3 and response.results == []
    transcript = openai_server.requests[-1].body["messages"][1]["content"]
    assert "arguments_json must be a JSON object" in transcript and "no entity 'nope.md'" in transcript


def test_without_a_language_model_the_agent_makes_one_search_and_says_why(collection):
    response = search_agentic(collection=collection, principals=None, query="how to fix a flat tyre", thinking=True, limit=3)
    assert response.results[0]["name"] == "bicycle.md"
    assert response.provider is None and response.iterations == 1
    [thinking] = [e for e in response.events if e["type"] == "thinking"]
    assert "No language model" in thinking["text"]


def test_rest_and_stream(transactional_db, collection):
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(organization=collection.organization).key)
    body = {"query": "northern lights on jupiter storm", "limit": 2}
    response = client.post("/collections/agentic-docs/search/agentic", body, format="json")
    assert response.status_code == 200 and response.json()["results"][0]["name"] == "jupiter.txt"
    stream = client.post("/collections/agentic-docs/search/agentic/stream", body, format="json")
    frames = "".join(p if isinstance(p, str) else p.decode() for p in collect(stream.streaming_content)).split("\n\n")
    events = [json.loads(f[6:]) for f in frames if f]
    assert [e["type"] for e in events][:2] == ["connected", "start"] and events[-1]["type"] == "done"
    assert client.post("/collections/agentic-docs/search/agentic", {"query": "x", "filter": [{"bad": 1}]},
                       format="json").status_code == 422
