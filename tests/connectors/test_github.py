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


def repository(full_name: str, private: bool = False, visibility: str | None = None) -> dict:
    """GitHub's `GET /repos/{owner}/{repo}` answer (the "full-repository" schema, the fields a client reads)."""
    owner, name = full_name.split("/")
    return {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": name, "full_name": full_name,
            "private": private, "visibility": visibility or ("private" if private else "public"),
            "owner": {"login": owner, "id": 1, "type": "Organization", "site_admin": False},
            "html_url": f"https://github.com/{full_name}", "url": f"{API}/repos/{full_name}",
            "default_branch": "main", "permissions": {"admin": False, "maintain": False, "push": True,
                                                      "triage": True, "pull": True}}


def add_repository(rsps, full_name: str, private: bool = False, visibility: str | None = None):
    """Answer `GET /repos/{full_name}` (every listing reads the repository's visibility first)."""
    rsps.add("GET", f"{API}/repos/{full_name}", json=repository(full_name, private, visibility))


def simple_user(login: str, user_id: int, email: str | None = None) -> dict:
    """GitHub's "simple-user" (collaborators and team members), `role_name` as the collaborators listing adds it."""
    return {"login": login, "id": user_id, "node_id": f"MDQ6VXNlcj{user_id}", "type": "User", "site_admin": False,
            "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4", "email": email,
            "url": f"{API}/users/{login}", "html_url": f"https://github.com/{login}"}


def team(slug: str, team_id: int, parent: dict | None = None) -> dict:
    """GitHub's "team" object as `GET /repos/{repo}/teams` and `GET /orgs/{org}/teams/{slug}/teams` list it."""
    return {"id": team_id, "node_id": f"MDQ6VGVhbT{team_id}", "name": slug.title(), "slug": slug,
            "description": "", "privacy": "closed", "notification_setting": "notifications_enabled",
            "permission": "pull", "url": f"{API}/teams/{team_id}", "html_url": f"https://github.com/orgs/acme/teams/{slug}",
            "members_url": f"{API}/teams/{team_id}/members{{/member}}",
            "repositories_url": f"{API}/teams/{team_id}/repos", "parent": parent}


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for name in ("betamaxpy/betamax", "ossani24/github3.py"):
            add_repository(mock, name)
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
    add_repository(rsps, "ossani24/github3.py")
    since = issue["updated_at"]
    changed = {**issue, "title": issue["title"] + " (renamed)", "comments": 0}
    rsps.add("GET", f"{API}/repos/ossani24/github3.py/issues",
             match=[responses.matchers.query_param_matcher({"state": "all", "per_page": "100", "since": since})],
             json=[changed])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 0)  # not a full listing


def test_an_unknown_repository_is_a_config_error(rsps):
    rsps.add("GET", f"{API}/repos/nobody/nothing", status=404,
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
    assert len(entities) == 1 and [c.request.url for c in rsps.calls].count(url) == 2


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
    add_repository(rsps, "betamaxpy/betamax")
    rsps.add("GET", url, json=issues[:1])
    job = _run(connection, force_full_sync=True)
    assert (job.status, job.entities_deleted, job.entities_kept) == ("completed", 1, 1)


# --- access control: a private repository's collaborators and (nested) teams --------------------------------

def _issue_of(full_name: str, number: int, title: str, comments: int = 0) -> dict:
    issue = recorded_body("Issue_comments", 0)
    url = f"{API}/repos/{full_name}/issues/{number}"
    return {**issue, "id": 9000 + number, "number": number, "title": title, "comments": comments,
            "body": f"{title}: the status of the work so far.", "url": url, "comments_url": f"{url}/comments",
            "html_url": f"https://github.com/{full_name}/issues/{number}",
            "repository_url": f"{API}/repos/{full_name}"}


def install_acl_fake(rsps):
    """acme/roadmap is private: collaborators alice (listed e-mail) and dave (no public e-mail), team platform
    whose child team sre holds bob (public e-mail on his profile); acme/website is public."""
    from tests.connectors.vendor_fake import VendorFake

    fake = VendorFake(rsps, API)
    page = {"per_page": "100"}
    fake.route("GET", "/repos/acme/roadmap", reply=repository("acme/roadmap", private=True))
    fake.route("GET", "/repos/acme/website", reply=repository("acme/website"))
    fake.route("GET", "/repos/acme/roadmap/collaborators", query={"affiliation": "all", **page}, reply=[
        {**simple_user("alice", 11, "Alice@Example.com"), "role_name": "admin"},
        {**simple_user("dave", 14), "role_name": "write"}])
    fake.route("GET", "/users/dave", reply={**simple_user("dave", 14), "name": "Dave", "email": None})
    fake.route("GET", "/users/bob", reply={**simple_user("bob", 12), "name": "Bob", "email": "bob@example.com"})
    fake.route("GET", "/repos/acme/roadmap/teams", query=page, reply=[team("platform", 31)])
    fake.route("GET", "/orgs/acme/teams/platform/members", query=page, reply=[])
    fake.route("GET", "/orgs/acme/teams/platform/teams", query=page, reply=[team("sre", 32, team("platform", 31))])
    fake.route("GET", "/orgs/acme/teams/sre/members", query=page, reply=[simple_user("bob", 12)])
    fake.route("GET", "/orgs/acme/teams/sre/teams", query=page, reply=[])
    listing = {"state": "all", **page}
    fake.route("GET", "/repos/acme/roadmap/issues", query=listing, reply=[
        _issue_of("acme/roadmap", 1, "Pricing page relaunch", comments=1), _issue_of("acme/roadmap", 2, "Q3 hiring plan")])
    comment = recorded_body("Issue_comments", 1)[0]
    fake.route("GET", "/repos/acme/roadmap/issues/1/comments", query=page, reply=[
        {**comment, "id": 501, "body": "The status: design is done, copy is in review.",
         "html_url": "https://github.com/acme/roadmap/issues/1#issuecomment-501"}])
    fake.route("GET", "/repos/acme/website/issues", query=listing, reply=[
        _issue_of("acme/website", 3, "Broken link on the status page")])
    return fake


ROADMAP = {"acme/roadmap#1", "acme/roadmap#1/comment/501", "acme/roadmap#2"}


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py (see install_acl_fake)."""
    from tests.access.test_source_matrix import AclWorld

    install_acl_fake(rsps)
    everything = ROADMAP | {"acme/website#3"}
    return AclWorld(short_name="github", credentials={"personal_access_token": "ghp_test"},
                    config={"repositories": ["acme/roadmap", "acme/website"]},
                    visible={"alice": everything, "bob": everything, "carol": everything - ROADMAP},
                    everything=everything)


def test_a_private_repository_is_visible_to_its_collaborators_and_nested_teams():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake = install_acl_fake(mock)
        source = make(repositories=["acme/roadmap", "acme/website"])
        memberships = {(m.group_id, m.member) for m in source.generate_access_memberships()}
        entities = {e.entity_id: e for e in source.generate_entities({})}
        fake.verify()
    assert memberships == {("repo:acme/roadmap", "user:alice@example.com"),
                           ("repo:acme/roadmap", "group:team:acme/platform"),
                           ("team:acme/platform", "group:team:acme/sre"), ("team:acme/sre", "user:bob@example.com")}
    assert set(entities) == ROADMAP | {"acme/website#3"}
    for entity_id in ROADMAP:
        assert (entities[entity_id].access_viewers, entities[entity_id].access_is_public) == \
            (["group:repo:acme/roadmap"], False)
    assert entities["acme/website#3"].access_is_public and not entities["acme/website#3"].access_viewers


def test_a_token_that_cannot_list_collaborators_fails_with_a_config_error(rsps):
    add_repository(rsps, "acme/roadmap", private=True)
    rsps.add("GET", f"{API}/repos/acme/roadmap/collaborators?affiliation=all&per_page=100", status=403,
             json={"message": "Must have push access to view repository collaborators.",
                   "documentation_url": "https://docs.github.com/rest/collaborators/collaborators"})
    with pytest.raises(SourceError) as info:
        make(repositories=["acme/roadmap"]).generate_access_memberships()
    assert info.value.category == "config_error" and "push access" in str(info.value)


def test_internal_repositories_are_open_to_the_organization(rsps):
    add_repository(rsps, "acme/handbook", private=True, visibility="internal")
    source = make(repositories=["acme/handbook"])
    assert source.generate_access_memberships() == []
    assert source._access("acme/handbook") == {"access_viewers": [], "access_is_public": True}
