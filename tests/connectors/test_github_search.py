"""GitHub in federated mode (config `federated_search: true`) against a real recorded GitHub search response
(../shared/data/github_api/extracted/GitHub_search_issues.json): the query sent, the result shape,
results merged into pipeline search results, and a failing GitHub giving partial results + an event."""
from __future__ import annotations

import json
import re

import pytest
import responses
from responses.matchers import query_param_matcher

from connectors.services import source_connection_create
from connectors.sources.github import GitHubSource, search_text
from search.pipeline import PipelineRequest, search_prepare, search_run
from tests.conftest import SHARED_DATA
from tests.connectors.recorded import load_recorded
from tests.connectors.test_github import repository

SEARCH = load_recorded(SHARED_DATA / "github_api" / "extracted" / "GitHub_search_issues.json")[0]["response"]["body"]
SEARCH = json.loads(SEARCH) if isinstance(SEARCH, str) else SEARCH
API = "https://api.github.com/search/issues"
REPOS = ["Shaffrey/demo-issues", "sigmavirus24/github3.py"]
QUALIFIERS = "repo:Shaffrey/demo-issues repo:sigmavirus24/github3.py"


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        # A hit's access is its repository's: every repository of the recorded hits is public.
        mock.add_callback("GET", re.compile(r"https://api\.github\.com/repos/[^/]+/[^/]+"), callback=lambda request: (
            200, {"Content-Type": "application/json"},
            json.dumps(repository(request.url.split("/repos/", 1)[1].split("?")[0]))))
        yield mock


def test_search_sends_the_query_scoped_to_the_repositories_and_shapes_pipeline_results(rsps):
    rsps.add("GET", API, json=SEARCH, match=[query_param_matcher(
        {"q": f"integration images {QUALIFIERS}", "per_page": "5"})])
    source = GitHubSource(GitHubSource.validate_config({"repositories": REPOS, "federated_search": True}),
                          {"personal_access_token": "ghp_test"})
    results = source.search("integration   images", limit=5)

    assert len(results) == 5
    first = results[0]
    assert first["entity_id"] == "Shaffrey/demo-issues#28" and first["name"] == "GitHub integration images"
    assert first["web_url"] == "https://github.com/Shaffrey/demo-issues/issues/28"
    assert first["breadcrumbs"] == [{"entity_id": "Shaffrey/demo-issues", "name": "Shaffrey/demo-issues",
                                     "entity_type": "GitHubRepository"}]
    assert first["system_metadata"]["source_name"] == "github"
    assert first["source_fields"]["github_score"] == SEARCH["items"][0]["score"]
    assert first["textual_representation"].startswith("# GitHub integration images")
    assert rsps.calls[0].request.headers["Authorization"] == "Bearer ghp_test"
    assert all(r["access"] == {"viewers": [], "is_public": True} for r in results)
    assert list(source.generate_entities({})) == [] and source.is_full_listing()  # nothing is synced


def test_the_query_is_cut_to_githubs_limit_at_a_word():
    text = search_text("word " * 100)
    assert len(text) <= 256 and not text.endswith(" ") and text.split() == ["word"] * len(text.split())
    assert search_text('say "hello') == "say hello"


def test_federating_is_a_per_connection_choice(client, make_collection):
    body = client.get("/sources/github").json()
    assert body["federated_search"] is True  # the capability
    assert "federated_search" in [f["name"] for f in body["config_fields"]["fields"]]
    collection = make_collection()
    synced = source_connection_create(collection=collection, short_name="github", config={"repositories": REPOS},
                                      authentication={"credentials": {"personal_access_token": "ghp_test"}},
                                      sync_immediately=False)
    searched = source_connection_create(collection=collection, short_name="github",
                                        config={"repositories": REPOS, "federated_search": True},
                                        authentication={"credentials": {"personal_access_token": "ghp_test"}},
                                        sync_immediately=False)
    assert client.get(f"/source-connections/{synced.id}").json()["federated_search"] is False
    assert client.get(f"/source-connections/{searched.id}").json()["federated_search"] is True


@pytest.fixture
def collection_with_both(make_collection, sync_folder, write_files):
    collection = make_collection()
    folder = write_files({"images.md": "# Image hosting\n\nIntegration images are stored in the assets bucket."})
    _, job = sync_folder(collection, folder)
    assert job.status == "completed"
    source_connection_create(collection=collection, short_name="github",
                             config={"repositories": REPOS, "federated_search": True},
                             authentication={"credentials": {"personal_access_token": "ghp_test"}},
                             sync_immediately=False)
    return collection


def pipeline(client, **extra):
    return client.post("/collections/docs/search", {"query": "GitHub integration images", "limit": 10,
                                                    "generate_answer": False, **extra}, format="json")


def test_pipeline_search_merges_federated_github_results(rsps, client, collection_with_both):
    rsps.add("GET", API, json=SEARCH)
    r = pipeline(client)
    assert r.status_code == 200, r.content
    results = r.json()["results"]
    ids = [x["entity_id"] for x in results]
    assert "Shaffrey/demo-issues#28" in ids  # from GitHub at query time
    assert any(x["system_metadata"].get("source_name") == "local_files" for x in results)  # from the index
    assert "repo:Shaffrey/demo-issues" in rsps.calls[0].request.url.replace("%3A", ":").replace("%2F", "/")


def test_a_failing_github_gives_partial_results_and_an_event(rsps, client, collection_with_both, settings):
    settings.AIRWEAVE_HTTP_MAX_ATTEMPTS = 1  # no backoff sleeps in the test
    rsps.add("GET", API, status=503, json={"message": "Service Unavailable"})
    r = pipeline(client)
    assert r.status_code == 200, r.content
    results = r.json()["results"]
    assert results and all(x["system_metadata"].get("source_name") == "local_files" for x in results)

    # The same search run in-process, to read its events (the SSE endpoint streams these same events).
    prepared = search_prepare(collection=collection_with_both, principals=None, request=PipelineRequest(
        query="GitHub integration images", limit=10, generate_answer=False))
    response = search_run(prepared)
    [done] = [e for e in response.events if e["type"] == "federated_search_done"]
    assert done["sources"] == ["github"] and "503" in done["failures"]["github"]
    assert done["count"] == 0 and response.results
