"""The GitHub source against real recorded GitHub REST responses (../shared/data/github_api), served by
`responses` at the transport level: pagination, entity fields, comments, incremental runs, errors."""
from __future__ import annotations

import json

import pytest
import responses

from connectors.base import SourceError
from connectors.services import source_connection_create
from connectors.sources.github import GitHubCommentEntity, GitHubIssueEntity, GitHubSource
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA
from tests.connectors.recorded import add_recorded, load_recorded

RECORDED = SHARED_DATA / "github_api" / "extracted"
API = "https://api.github.com"


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def make(credentials=None, **config):
    return GitHubSource(GitHubSource.validate_config({"repositories": ["betamaxpy/betamax"], **config}),
                        credentials if credentials is not None else {"personal_access_token": "ghp_test"})


def recorded_body(name: str, index: int):
    body = load_recorded(RECORDED / f"{name}.json")[index]["response"]["body"]
    return json.loads(body) if isinstance(body, str) else body


def test_all_150_issues_and_prs_over_two_link_pages(rsps):
    add_recorded(rsps, RECORDED / "Repository_issues_state_all.json", only=lambda i: "/issues" in i["request"]["uri"])
    source = make(include_comments=False)
    entities = list(source.generate_entities({}))

    assert len(entities) == 150 and all(isinstance(e, GitHubIssueEntity) for e in entities)
    pages = [recorded_body("Repository_issues_state_all", i) for i in (2, 3)]
    assert sum(e.is_pull_request for e in entities) == sum("pull_request" in i for p in pages for i in p) == 67
    first = rsps.calls[0].request
    assert first.headers["Authorization"] == "Bearer ghp_test"
    assert first.headers["Accept"] == "application/vnd.github+json"
    issue = next(e for e in entities if e.number == 150)
    assert issue.entity_id == "betamaxpy/betamax#150"
    assert issue.name == "Different results from Betamax vs Requests"
    assert issue.web_url == "https://github.com/betamaxpy/betamax/issues/150"
    assert issue.state == "closed" and not issue.is_pull_request
    assert issue.breadcrumbs[0].as_dict() == {"entity_id": "betamaxpy/betamax", "name": "betamaxpy/betamax",
                                              "entity_type": "GitHubRepository"}
    assert issue.created_at.isoformat() == "2017-12-17T00:21:05+00:00"
    assert "Issue #150 in betamaxpy/betamax" in issue.textual_representation()
    assert "page=2" in issue.textual_representation()  # the body
    assert source.is_full_listing()
    assert source.next_cursor() == {"since": {"betamaxpy/betamax": max(e.updated_at for e in entities)
                                              .isoformat().replace("+00:00", "Z")}}


def test_comments_are_entities_under_their_issue(rsps):
    issue = recorded_body("Issue_comments", 0)
    rsps.add("GET", f"{API}/repos/ossani24/github3.py/issues?state=all&per_page=100", json=[issue])
    add_recorded(rsps, RECORDED / "Issue_comments.json", only=lambda i: i["request"]["uri"].endswith("comments?per_page=100"))
    source = make(repositories=["ossani24/github3.py"])
    entities = list(source.generate_entities({}))
    comments = [e for e in entities if isinstance(e, GitHubCommentEntity)]
    assert len(entities) == 4 and len(comments) == 3
    c = next(c for c in comments if c.entity_id.endswith("/comment/31799031"))
    assert c.entity_id == "ossani24/github3.py#187/comment/31799031"
    assert c.web_url == "https://github.com/ossani24/github3.py/issues/187#issuecomment-31799031"
    assert [b.entity_type for b in c.breadcrumbs] == ["GitHubRepository", "GitHubIssueEntity"]
    assert "Don't merge without documentation" in c.textual_representation()


def test_a_synced_repository_is_searchable_and_an_incremental_run_asks_only_for_changes(
        rsps, make_collection, client):
    issue = recorded_body("Issue_comments", 0)
    rsps.add("GET", f"{API}/repos/ossani24/github3.py/issues?state=all&per_page=100", json=[issue])
    add_recorded(rsps, RECORDED / "Issue_comments.json", only=lambda i: i["request"]["uri"].endswith("comments?per_page=100"))
    connection = source_connection_create(
        collection=make_collection(), short_name="github", config={"repositories": ["ossani24/github3.py"]},
        authentication={"credentials": {"personal_access_token": "ghp_test"}}, sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 4)
    r = client.post("/collections/docs/search/instant", {"query": issue["title"], "limit": 4}, format="json")
    found = [x["airweave_system_metadata"]["original_entity_id"] for x in r.json()["results"]]
    assert "ossani24/github3.py#187" in found and all(f.startswith("ossani24/github3.py#187") for f in found)

    rsps.reset()
    since = issue["updated_at"]
    changed = {**issue, "title": issue["title"] + " (renamed)", "comments": 0}
    rsps.add("GET", f"{API}/repos/ossani24/github3.py/issues",
             match=[responses.matchers.query_param_matcher({"state": "all", "per_page": "100", "since": since})],
             json=[changed])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 0)  # not a full listing


def test_an_unknown_repository_is_a_config_error(rsps):
    rsps.add("GET", f"{API}/repos/nobody/nothing/issues?state=all&per_page=100", status=404,
             json={"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
    with pytest.raises(SourceError) as info:
        list(make(repositories=["nobody/nothing"]).generate_entities({}))
    assert info.value.category == "config_error" and "nobody/nothing" in str(info.value)


def test_an_oauth_token_is_used_when_there_is_no_personal_token(rsps):
    rsps.add("GET", f"{API}/repos/betamaxpy/betamax/issues?state=all&per_page=100", json=[])
    list(make(credentials={"access_token": "gho_oauth"}).generate_entities({}))
    assert rsps.calls[0].request.headers["Authorization"] == "Bearer gho_oauth"


@pytest.mark.parametrize("repositories", [[], ["betamax"], ["a/b/c"], ["https://github.com/a/b x"]])
def test_repositories_must_be_owner_slash_name(repositories):
    with pytest.raises(ValueError, match="owner/name"):
        GitHubSource.validate_config({"repositories": repositories})


def _connection(make_collection, **config):
    return source_connection_create(
        collection=make_collection(), short_name="github",
        config={"repositories": ["betamaxpy/betamax"], "include_comments": False, **config},
        authentication={"credentials": {"personal_access_token": "ghp_test"}}, sync_immediately=False)


def _run(connection, force_full_sync=False):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False,
                                              force_full_sync=force_full_sync).id)


def test_a_429_with_retry_after_is_retried(rsps):
    url = f"{API}/repos/betamaxpy/betamax/issues?state=all&per_page=100"
    rsps.add("GET", url, status=429, headers={"Retry-After": "0"},
             json={"message": "API rate limit exceeded", "documentation_url": "https://docs.github.com/rest"})
    rsps.add("GET", url, json=[recorded_body("Issue_comments", 0)])
    entities = list(make(include_comments=False).generate_entities({}))
    assert len(entities) == 1 and len(rsps.calls) == 2


def test_bad_credentials_mark_the_connection_needs_reauth(rsps, make_collection):
    rsps.add("GET", f"{API}/repos/betamaxpy/betamax/issues?state=all&per_page=100", status=401,
             json={"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
    connection = _connection(make_collection)
    job = _run(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == "needs_reauth"
    assert connection.error_category and job.error_category == connection.error_category


def test_an_issue_gone_from_a_full_listing_is_deleted(rsps, make_collection):
    issues = recorded_body("Repository_issues_state_all", 2)[:2]
    url = f"{API}/repos/betamaxpy/betamax/issues?state=all&per_page=100"
    rsps.add("GET", url, json=issues)
    connection = _connection(make_collection)
    assert (_run(connection).entities_inserted) == 2
    rsps.reset()
    rsps.add("GET", url, json=issues[:1])
    job = _run(connection, force_full_sync=True)
    assert (job.status, job.entities_deleted, job.entities_kept) == ("completed", 1, 1)
