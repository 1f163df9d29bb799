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


def turn(*calls, content=""):
    return {"content": content, "calls": list(calls)}


def tool_messages(body) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_agent_searches_reads_collects_and_finishes(collection, openai_server):
    def respond(body):
        done = len(tool_messages(body))
        if done == 0:
            return turn(("search", {"query": "spare part conveyor", "limit": 5}), content="Look for the part number.")
        if done == 1:
            return turn(("read", {"entity_id": "warehouse/inventory.txt"}))
        if done == 2:
            return turn(("collect", {"ids": ["warehouse/inventory.txt__chunk_0"]}))
        return turn(("finish", {}), content="Found it.")

    openai_server.tool_replies = respond
    response = search_agentic(collection=collection, principals=None, query="Which part does the conveyor need?", thinking=True)

    assert [r["entity_id"] for r in response.results] == ["warehouse/inventory.txt__chunk_0"]
    assert response.iterations == 4 and response.provider == "openai/gpt-4.1-mini"
    types = [e["type"] for e in response.events]
    assert types[0] == "started" and types[-1] == "done"
    assert [e["tool"] for e in response.events if e["type"] == "tool_call"] == ["search", "read", "collect", "finish"]
    assert [e["text"] for e in response.events if e["type"] == "thinking"] == ["Look for the part number.", "Found it."]
    # every request declared the tools; each observation went back as a tool message answering its call
    last = openai_server.requests[-1].body
    assert [t["function"]["name"] for t in last["tools"]] == list(agentic.AgentToolbox.NAMES)
    calls = [c["id"] for m in last["messages"] if m["role"] == "assistant" for c in m["tool_calls"]]
    assert [m["tool_call_id"] for m in tool_messages(last)] == calls
    assert "QX7734" in tool_messages(last)[1]["content"]


def test_several_calls_in_one_turn_all_run(collection, openai_server):
    openai_server.tool_replies = [
        turn(("search", {"query": "bread"}), ("search", {"query": "jupiter storm"}), ("count", {"query": "storm"})),
        turn(("finish", {})),
    ]
    response = search_agentic(collection=collection, principals=None, query="bread and storms")
    assert response.iterations == 2
    assert [e["tool"] for e in response.events if e["type"] == "tool_call"] == ["search", "search", "count", "finish"]
    observations = tool_messages(openai_server.requests[-1].body)
    assert len(observations) == 3 and json.loads(observations[2]["content"])["count"] >= 1


def test_loop_stops_at_the_iteration_cap(collection, openai_server, monkeypatch):
    monkeypatch.setattr(agentic, "search_defaults", lambda: {"agentic_max_iterations": 3})
    openai_server.tool_replies = lambda body: turn(("search", {"query": "bread"}))
    response = search_agentic(collection=collection, principals=None, query="bread")
    assert response.iterations == 3
    assert response.results and response.results[0]["name"] == "sourdough.md"  # the last search's results


def test_a_reply_without_tool_calls_ends_the_loop(collection, openai_server):
    openai_server.tool_replies = [turn(("search", {"query": "bread"})), turn(content="That is all there is.")]
    response = search_agentic(collection=collection, principals=None, query="bread", thinking=True)
    assert response.iterations == 2 and response.results[0]["name"] == "sourdough.md"
    assert response.events[-2]["type"] == "thinking" and response.events[-2]["text"] == "That is all there is."


def test_bad_tools_and_arguments_are_observations_not_crashes(collection, openai_server):
    openai_server.tool_replies = [
        turn(("read", "not json")),
        turn(("read", {"entity_id": "nope.md"}), ("teleport", "{}")),
        turn(("finish", {})),
    ]
    response = search_agentic(collection=collection, principals=None, query="anything")
    assert response.iterations == 3 and response.results == []
    observations = [m["content"] for m in tool_messages(openai_server.requests[-1].body)]
    assert "must be a JSON object" in observations[0] and "no entity 'nope.md'" in observations[1]
    assert "unknown tool 'teleport'" in observations[2]


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
    assert [e["type"] for e in events][:2] == ["connected", "started"] and events[-1]["type"] == "done"
    assert client.post("/collections/agentic-docs/search/agentic", {"query": "x", "filter": [{"bad": 1}]},
                       format="json").status_code == 422


def test_nul_characters_from_the_model_are_observations_not_database_errors(collection, openai_server):
    openai_server.tool_replies = [
        turn(("search", {"query": "flat\u0000tyre"}), ("read", {"entity_id": "garage/bicycle.md\u0000"}),
             ("count", {"query": "tyre"})),
        turn(("finish", {})),
    ]
    response = search_agentic(collection=collection, principals=None, query="anything")
    observations = [json.loads(m["content"]) for m in tool_messages(openai_server.requests[-1].body)]
    assert all("NUL" in o["error"] for o in observations[:2])
    assert observations[2]["count"] >= 1  # the loop went on
    assert response.iterations == 2


def _stream_events(client, body) -> list[dict]:
    stream = client.post("/collections/agentic-docs/search/agentic/stream", body, format="json")
    frames = "".join(p if isinstance(p, str) else p.decode() for p in collect(stream.streaming_content)).split("\n\n")
    return [json.loads(f[6:]) for f in frames if f]


def test_a_refused_key_falls_back_to_one_search_and_says_so(transactional_db, collection, openai_server):
    openai_server.fail(401, times=None)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=api_key_create(organization=collection.organization).key)
    body = {"query": "how to fix a flat tyre", "limit": 2}

    response = client.post("/collections/agentic-docs/search/agentic", body, format="json")
    assert response.status_code == 200 and response.json()["results"][0]["name"] == "bicycle.md"

    events = _stream_events(client, body)
    types = [e["type"] for e in events]
    assert types[:2] == ["connected", "started"] and types[-1] == "done"
    [error] = [e for e in events if e["type"] == "error"]
    assert "401" in error["message"]


def test_a_stream_whose_search_crashes_ends_with_an_error_event(transactional_db, collection, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(agentic, "chain_for", crash)
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_X_API_KEY=api_key_create(organization=collection.organization).key)

    events = _stream_events(client, {"query": "tyre", "limit": 2})

    assert [e["type"] for e in events] == ["connected", "started", "error"]
    assert events[-1]["message"] == "the search failed: RuntimeError"
    assert [e["seq"] for e in events] == [1, 2, 3]
