"""Issue 12, the edges of the API: trailing slashes, JSON errors on every API path, unknown fields
ignored and named in a `Warning` header, and the lenient request shapes of the public Airweave API."""
from __future__ import annotations

import pytest

from airweave.collections.models import SourceConnection

FILES = {"guide/leave.md": "---\ntitle: Leave policy\n---\nRequest annual leave through the HR portal two weeks ahead.",
         "notes.txt": "Quarterly planning notes: roadmap, hiring and budget."}


@pytest.fixture
def folder(settings, tmp_path, write_files):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    return write_files(FILES)


@pytest.fixture
def synced(client, make_collection, folder):
    make_collection(readable_id="docs")
    r = client.post("/source-connections/", {"short_name": "local_files", "readable_collection_id": "docs",
                                             "config": {"path": str(folder)}}, format="json")
    assert r.status_code == 201, r.content
    return r.json()


def test_trailing_slashes_answer_like_the_paths_without(client, make_collection):
    make_collection(readable_id="docs")
    assert client.get("/collections/").json() == client.get("/collections").json()
    assert client.get("/collections/docs/").json()["readable_id"] == "docs"
    assert client.get("/sources/").status_code == 200
    r = client.post("/collections/", {"name": "Slashed collection"}, format="json")
    assert r.status_code == 201 and r.json()["name"] == "Slashed collection"


@pytest.mark.parametrize("method, path, status", [
    ("get", "/no-such-path", 404),
    ("get", "/collections/docs/nothing-here", 404),
    ("get", "/source-connections/not-a-uuid", 422),
    ("post", "/source-connections/12/run", 422),
    ("post", "/source-connections/0e684777-4b84-44f4-8eb3-0a6b2abdde53/jobs/nope/cancel", 422),
    ("get", "/sync/job/not-a-job/subscribe", 422),
    ("delete", "/collections", 405),
    ("put", "/collections/docs", 405),
])
def test_every_error_on_an_api_path_is_json(client, method, path, status):
    r = getattr(client, method)(path)
    assert r.status_code == status
    assert r["Content-Type"].startswith("application/json")
    detail = r.json()["detail"]
    if status == 422:
        assert detail[0]["loc"][0] == "path" and "UUID" in detail[0]["msg"]
    else:
        assert isinstance(detail, str) and detail


def test_unknown_fields_are_ignored_and_named_nested_ones_by_their_path(client, make_collection, folder):
    make_collection(readable_id="docs")
    r = client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "docs",
                                            "config": {"path": str(folder)}, "sync_immediately": False,
                                            "colour": "blue", "schedule": {"cron": "0 3 * * *", "every": 5}},
                    format="json")
    assert r.status_code == 201
    assert r["Warning"] == '299 - "Unknown fields ignored: colour, schedule.every"'
    assert "Warning" not in client.get("/collections").headers


def test_cli_shapes_of_authentication_are_accepted(client, make_collection, folder):
    """The CLI's `sources add` sends `authentication: {"type": "direct", "credentials": {...}}`; a
    top-level `redirect_url` is the browser flow's return address."""
    make_collection(readable_id="docs")
    r = client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "docs",
                                            "config": {"path": str(folder)}, "sync_immediately": False,
                                            "redirect_url": "https://app.example.com/done",
                                            "authentication": {"type": "direct", "credentials": {}}}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["auth"]["method"] == "direct" and "Warning" not in r.headers


def test_the_auth_provider_shape_is_understood_and_refused_with_a_reason(client, make_collection, folder):
    make_collection(readable_id="docs")
    r = client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "docs",
                                            "config": {"path": str(folder)},
                                            "authentication": {"provider_readable_id": "composio-1",
                                                               "provider_config": {"auth_config_id": "x"}}},
                    format="json")
    assert r.status_code == 422
    assert "auth providers" in r.json()["detail"][0]["msg"]


def test_patch_takes_direct_credentials_and_refuses_other_shapes(client, synced):
    url = f"/source-connections/{synced['id']}"
    r = client.patch(url, {"authentication": {"credentials": {}}}, format="json")
    assert r.status_code == 200, r.content
    r = client.patch(url, {"authentication": {"access_token": "t"}}, format="json")
    assert r.status_code == 422 and "only direct credentials" in r.json()["detail"][0]["msg"]
    assert SourceConnection.objects.get(pk=synced["id"]).auth_method == "direct"


def test_instant_takes_neural_as_semantic_and_agentic_takes_a_null_limit(client, synced):
    neural = client.post("/collections/docs/search/instant", {"query": "annual leave", "retrieval_strategy": "neural"},
                         format="json")
    semantic = client.post("/collections/docs/search/instant",
                           {"query": "annual leave", "retrieval_strategy": "semantic"}, format="json")
    assert neural.status_code == 200 and neural.json() == semantic.json()
    r = client.post("/collections/docs/search/agentic", {"query": "annual leave", "limit": None, "thinking": None},
                    format="json")
    assert r.status_code == 200, r.content
    assert r.json()["results"][0]["name"] == "Leave policy"


def test_legacy_search_fields_are_mapped_with_a_deprecation_header(client, synced):
    r = client.post("/collections/docs/search", {"query": "annual leave", "response_type": "raw",
                                                 "search_method": "keyword", "recency_bias": 0.3,
                                                 "enable_reranking": False, "score_threshold": 0.5,
                                                 "expansion_strategy": "no_expansion"}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["completion"] is None  # response_type raw: no answer generated
    notice = r["X-API-Deprecation"]
    assert "search_method is deprecated; use retrieval_strategy" in notice and "score_threshold" in notice
    r = client.post("/collections/docs/search", {"query": "annual leave", "response_type": "completion",
                                                 "temporal_relevance": 0.2}, format="json")
    assert r.status_code == 200 and r.json()["completion"]
    assert "temporal_relevance is deprecated; use recency_weight" in r["X-API-Deprecation"]
    assert "X-API-Deprecation" not in client.post("/collections/docs/search", {"query": "leave"}, format="json").headers


def test_web_pages_keep_djangos_own_not_found_page(client):
    for path in ("/accounts", "/admin/nothing-here/", "/ui/no-such-page"):
        r = client.get(path)
        assert r.status_code in (302, 404) and not r["Content-Type"].startswith("application/json"), path
