"""The access-control matrix: who sees which document, on every search tier, stream and answer.

One collection holds, behind code words in their text:
- wiki A (acl_wiki, access control): ALPHA public, BRAVO for alice, CHARLIE for group eng,
  DELTA for group staff (eng ⊂ platform ⊂ staff: nested twice), ECHO without an access list
  (closed), FOXTROT for group company (nested three times: beyond the depth cap of 2);
- wiki B (acl_wiki): HOTEL for ITS group eng (bob), which must not open to wiki A's eng;
- local_files (no access control): GOLF, visible to the organization;
- a federated directory (acl_directory, access control): INDIA public, JULIET for alice, KILO
  without an access list.
Callers: an organization-wide API key, and alice, bob and carol (no groups) as session users;
an API key bound to alice when APIKey has its `user` foreign key.
"""
from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from rest_framework.test import APIClient

from airweave.asgi import application
from airweave.collections.services import collection_create
from airweave.tenancy.models import APIKey, Membership, User
from airweave.tenancy.services import api_key_create, organization_get_or_create
from connectors.services import source_connection_create
from tests.api.test_search_pipeline import collect
from tests.providers.vendor_server import configure_provider, hermetic_providers, vendor_server  # noqa: F401

WORDS = ("ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL", "INDIA", "JULIET", "KILO")
FEDERATED = {"INDIA", "JULIET", "KILO"}
SYNCED = set(WORDS) - FEDERATED
VISIBLE = {
    "org-key": set(WORDS),
    "alice": {"ALPHA", "BRAVO", "CHARLIE", "DELTA", "GOLF", "INDIA", "JULIET"},
    "bob": {"ALPHA", "GOLF", "HOTEL", "INDIA"},
    "carol": {"ALPHA", "GOLF", "INDIA"},
}


def page(word, space, **access):
    return {"id": f"p-{word.lower()}", "title": f"Page {word}", "space": space,
            "body": f"Quarterly roadmap note {word}: the plan for the next quarter.", **access}


WIKI_A = {
    "groups": {"eng": ["user:alice@example.com"], "platform": ["group:eng"], "staff": ["group:platform"],
               "company": ["group:staff"]},
    "pages": [
        page("ALPHA", "General", is_public=True),
        page("BRAVO", "General", viewers=["user:Alice@Example.com"]),
        page("CHARLIE", "Engineering", viewers=["group:eng"]),
        page("DELTA", "Engineering", viewers=["group:staff"]),
        page("ECHO", "Secret Space"),
        page("FOXTROT", "Company", viewers=["group:company"]),
    ],
}
WIKI_B = {"groups": {"eng": ["user:bob@example.com"]}, "pages": [page("HOTEL", "Ops", viewers=["group:eng"])]}
DIRECTORY = {"entries": [
    {"id": "d-india", "name": "Entry INDIA", "text": "Roadmap contact INDIA", "is_public": True},
    {"id": "d-juliet", "name": "Entry JULIET", "text": "Roadmap contact JULIET", "viewers": ["user:alice@example.com"]},
    {"id": "d-kilo", "name": "Entry KILO", "text": "Roadmap contact KILO"},
]}


@pytest.fixture(autouse=True)
def _hermetic(hermetic_providers):
    yield


@pytest.fixture
def world(transactional_db, settings, write_json, write_files, sync_wiki, sync_folder):
    settings.AIRWEAVE_ACCESS_GROUP_MAX_DEPTH = 2
    org = organization_get_or_create(name="Matrix org")
    collection = collection_create(organization=org, name="ACL documents", readable_id="acl-docs")
    sync_wiki(collection, WIKI_A, name="wiki-a")
    sync_wiki(collection, WIKI_B, name="wiki-b")
    sync_folder(collection, write_files({"golf.md": "# Handbook\n\nQuarterly roadmap note GOLF for all staff."}))
    source_connection_create(collection=collection, short_name="acl_directory", name="directory",
                             config={"entries_path": str(write_json("directory.json", DIRECTORY))},
                             sync_immediately=False, for_api=False)
    users = {}
    for name in ("alice", "bob", "carol"):
        users[name] = User.objects.create_user(f"{name}@example.com", "pw-123456")
        Membership.objects.create(user=users[name], organization=org)
    return {"org": org, "collection": collection, "users": users, "key": api_key_create(organization=org).key}


def client_for(world, caller: str) -> APIClient:
    client = APIClient()
    if caller == "org-key":
        client.credentials(HTTP_X_API_KEY=world["key"])
    else:
        client.force_login(world["users"][caller])
    return client


def words_in(payload) -> set[str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return {w for w in WORDS if re.search(rf"\b{w}\b", text)}


def sse_events(response) -> list[dict]:
    assert response.status_code == 200, response.content
    raw = "".join(p if isinstance(p, str) else p.decode() for p in collect(response.streaming_content))
    return [json.loads(f[len("data: "):]) for f in raw.split("\n\n") if f]


def socket_events(path: str, headers: list, request: dict) -> list[dict]:
    async def run():
        communicator = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://testserver"), *headers])
        connected, code = await communicator.connect(timeout=30)
        assert connected, code
        await communicator.send_json_to(request)
        events = []
        while not events or events[-1]["type"] != "done":
            events.append(await communicator.receive_json_from(timeout=60))
        await communicator.disconnect()
        return events

    return async_to_sync(run)()


def socket_headers(world, caller: str, client: APIClient) -> list:
    if caller == "org-key":
        return [(b"x-api-key", world["key"].encode())]
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


def check_every_tier(world, caller: str, client: APIClient, socket: list) -> None:
    """Every tier, stream and count shows exactly what `caller` may see."""
    expected = VISIBLE[caller]
    synced = expected & SYNCED
    base = "/collections/acl-docs/search"
    body = {"query": "quarterly roadmap", "limit": 100}

    for strategy in ("hybrid", "semantic", "keyword"):
        response = client.post(f"{base}/instant", {**body, "retrieval_strategy": strategy}, format="json")
        assert response.status_code == 200, response.content
        assert words_in(response.json()) == synced, (caller, strategy)
        assert len(response.json()["results"]) == len(synced)

    response = client.post(base, body, format="json")
    assert response.status_code == 200, response.content
    assert words_in(response.json()["results"]) == expected, caller
    assert response.json()["completion"] and words_in(response.json()["completion"]) <= expected
    cited = [int(n) for n in re.findall(r"\[\[(\d+)\]\]", response.json()["completion"])]
    assert cited and all(1 <= n <= len(response.json()["results"]) for n in cited)

    events = sse_events(client.post(f"{base}/stream", body, format="json"))
    assert words_in(events) == expected, caller
    [retrieved] = [e for e in events if e["type"] == "vector_search_done"]
    assert retrieved["final_count"] == len(synced)
    [federated] = [e for e in events if e["type"] == "federated_search_done"]
    assert federated["count"] == len(expected & FEDERATED)
    assert any(e["type"] == "access_control_skipped" for e in events) == (caller == "org-key")

    response = client.post(f"{base}/classic", body, format="json")
    assert response.status_code == 200, response.content
    assert words_in(response.json()) == expected, caller

    response = client.post(f"{base}/agentic", body, format="json")
    assert response.status_code == 200, response.content
    assert words_in(response.json()) == expected, caller
    assert words_in(sse_events(client.post(f"{base}/agentic/stream", body, format="json"))) == expected

    assert words_in(socket_events("/ws/collections/acl-docs/search/", socket, body)) == expected, caller

    listed = client.get("/source-connections", {"collection": "acl-docs"}).json()
    assert sum(c["entity_count"] for c in listed) == len(synced)
    details = [client.get(f"/source-connections/{c['id']}").json() for c in listed]
    assert sum(d["entities"]["total_entities"] for d in details) == len(synced)


@pytest.mark.parametrize("caller", ["org-key", "alice", "bob", "carol"])
def test_every_tier_shows_each_caller_exactly_what_they_may_see(world, caller):
    client = client_for(world, caller)
    check_every_tier(world, caller, client, socket_headers(world, caller, client))


@pytest.mark.skipif(not any(f.name == "user" for f in APIKey._meta.get_fields()),
                    reason="APIKey has no user foreign key on this branch")
def test_a_key_bound_to_a_user_sees_what_the_user_sees(world):
    issued = api_key_create(organization=world["org"])
    APIKey.objects.filter(pk=issued.api_key.pk).update(user=world["users"]["alice"])
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=issued.key)
    check_every_tier(world, "alice", client, [(b"x-api-key", issued.key.encode())])


def test_language_models_see_only_what_the_caller_sees(world, vendor_server, monkeypatch):
    """Interpretation, planning and answers send the model only the caller's values and results."""
    from airweave.collections.access import principals_for
    from search.pipeline import PipelineRequest, search_classic, search_pipeline

    openai = vendor_server("openai")
    configure_provider(monkeypatch, "openai", openai, key="sk-test")
    openai.json_replies["query_interpretation"] = {"filters": [], "confidence": 0.1}
    openai.json_replies["search_plan"] = {"primary_query": "roadmap", "variations": [], "filters": [],
                                          "retrieval_strategy": "hybrid", "confidence": 0.1}
    principals = principals_for(actor=world["users"]["alice"], organization=world["org"])
    response = search_pipeline(collection=world["collection"], principals=principals, request=PipelineRequest(
        query="quarterly roadmap", limit=100, interpret_filters=True, expand_query=False, rerank=False))
    search_classic(collection=world["collection"], principals=principals, query="quarterly roadmap", limit=100)

    sent = {r.body["response_format"]["json_schema"]["name"] if r.body.get("response_format") else "answer":
            json.dumps(r.body) for r in openai.requests}
    assert set(sent) == {"query_interpretation", "search_plan", "answer"}
    for name in ("query_interpretation", "search_plan"):
        assert "Engineering" in sent[name] and "Secret Space" not in sent[name] and "Company" not in sent[name]
    assert words_in(sent["answer"]) == VISIBLE["alice"]
    assert words_in(response.completion or "") <= VISIBLE["alice"]


def test_agent_tools_do_not_leak(world, vendor_server, monkeypatch):
    """An agent acting for carol asks for hidden entities by id, walks the tree and counts."""
    from airweave.collections.access import principals_for
    from search.agentic import search_agentic

    openai = vendor_server("openai")
    configure_provider(monkeypatch, "openai", openai, key="sk-test")
    probes = [("read", {"entity_id": "p-echo"}), ("read", {"entity_id": "p-alpha"}),
              ("get_parent", {"entity_id": "p-bravo"}), ("get_children", {"entity_id": "space:Engineering"}),
              ("get_siblings", {"entity_id": "p-alpha"}), ("count", {"query": "quarterly roadmap"}),
              ("search", {"query": "roadmap note", "limit": 25}),
              ("collect", {"ids": ["p-echo__chunk_0", "p-alpha__chunk_0"]})]
    openai.tool_replies = [{"content": "", "calls": probes}, {"content": "", "calls": [("finish", {})]}]

    response = search_agentic(collection=world["collection"], query="quarterly roadmap",
                              principals=principals_for(actor=world["users"]["carol"], organization=world["org"]))

    messages = openai.requests[-1].body["messages"]
    observations = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    assert len(observations) == len(probes)
    read_hidden, read_public, parent, children, siblings, count, search, collect = observations
    assert read_hidden == {"error": "no entity 'p-echo'"}
    assert "ALPHA" in read_public["text"]
    assert parent == {"error": "no entity 'p-bravo'"}
    assert children == {"children": []} and siblings == {"siblings": []}
    assert count == {"count": 2}  # ALPHA and GOLF
    assert words_in(search) == VISIBLE["carol"]
    assert collect["unknown"] == ["p-echo__chunk_0"]
    assert words_in(json.dumps(messages)) <= VISIBLE["carol"]
    assert [r["name"] for r in response.results] == ["Page ALPHA"]
