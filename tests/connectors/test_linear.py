"""The Linear source against GraphQL responses written from Linear's documented schema
(tests/connectors/fixtures/linear; every query validated against the part of Linear's schema it
reads, fixtures/linear/schema.graphql, and answered with only the fields it selects): cursor pagination with pageInfo (issues over two pages, a
second page of comments), entity fields, a refreshed OAuth token, HTTP 429 and GraphQL RATELIMITED,
AUTHENTICATION_ERROR, the updatedAt filter, archived issues removed, and a searchable sync."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import responses
from graphql import build_schema

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.services import source_connection_create
from connectors.sources import linear
from connectors.sources.linear import (LinearCommentEntity, LinearIssueEntity, LinearProjectEntity, LinearSource,
                                       LinearTeamEntity)
from connectors.sync.services import sync_job_run, sync_job_start
from tests.connectors.graphql_fake import GraphQLFake

FIXTURES = Path(__file__).parent / "fixtures" / "linear"
API = "https://api.linear.app/graphql"


def load(name):
    return json.loads((FIXTURES / f"{name}.json").read_text())


SCHEMA = build_schema((FIXTURES / "schema.graphql").read_text())


def GraphQL(rsps, answers: dict) -> GraphQLFake:  # noqa: N802 (reads like the class it makes)
    """Linear's GraphQL endpoint as its schema defines it (fixtures/linear/schema.graphql)."""
    return GraphQLFake(rsps, API, SCHEMA, answers)


def listing(issues_1=None, issues_2=None):
    issues_1 = issues_1 or load("issues_page_1")
    return {("Teams", None): load("teams"), ("Projects", None): load("projects"),
            ("Issues", None): issues_1,
            ("Issues", issues_1["data"]["issues"]["pageInfo"]["endCursor"]): issues_2 or load("issues_page_2"),
            ("IssueComments", "5c8e9f10-3b4c-4d5e-9f00-1b2c3d4e5f60"): load("issue_comments_page_2")}


OPS = {"id": "4d2f9a10-6b7c-4e8d-9f01-a2b3c4d5e6f7", "key": "OPS", "name": "Operations",
       "description": "On-call, incidents and vendor contracts.", "private": True,
       "createdAt": "2023-07-10T08:00:00.000Z", "updatedAt": "2024-06-01T09:00:00.000Z"}
OPS_ISSUE, OPS_COMMENT = "e7f8a9b0-1c2d-4e3f-8a4b-5c6d7e8f9a0b", "f0e1d2c3-b4a5-4968-8776-655443322110"


def _page_of(key, nodes, end=None):
    return {"data": {key: {"nodes": nodes, "pageInfo": {"hasNextPage": bool(end), "endCursor": end}}}}


def acl_answers():
    """The listing with a second, private team OPS (members alice over two pages, then dave) and one
    OPS issue with a comment; ENG stays public."""
    answers = listing()
    teams = load("teams")
    teams["data"]["teams"]["nodes"].append(OPS)
    answers[("Teams", None)] = teams
    issue = copy.deepcopy(load("issues_page_2")["data"]["issues"]["nodes"][0])
    issue.update(id=OPS_ISSUE, identifier="OPS-7", title="Renew the status page vendor contract",
                 url="https://linear.app/acme/issue/OPS-7/renew-the-status-page-vendor-contract",
                 team={k: OPS[k] for k in ("id", "key", "name", "private")}, project=None)
    issue["comments"] = {"nodes": [{"id": OPS_COMMENT, "body": "Status: legal is reviewing the work order.",
                                    "url": issue["url"] + "#comment-f0e1d2c3", "createdAt": "2024-06-03T09:00:00.000Z",
                                    "updatedAt": "2024-06-03T09:00:00.000Z",
                                    "user": {"name": "Alice", "email": "alice@example.com"}}],
                         "pageInfo": {"hasNextPage": False, "endCursor": None}}
    second = answers[("Issues", load("issues_page_1")["data"]["issues"]["pageInfo"]["endCursor"])]
    second = copy.deepcopy(second)
    second["data"]["issues"]["nodes"].append(issue)
    answers[("Issues", load("issues_page_1")["data"]["issues"]["pageInfo"]["endCursor"])] = second
    answers[("TeamMembers", None)] = {"data": {"team": _page_of("members", [{"email": "Alice@Example.com"}],
                                                                "cursor-2")["data"]}}
    answers[("TeamMembers", "cursor-2")] = {"data": {"team": _page_of("members", [{"email": "dave@example.com"}])["data"]}}
    return answers


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: ENG is public, OPS private to alice and dave."""
    from tests.access.test_source_matrix import AclWorld

    GraphQL(rsps, acl_answers())
    everything = {e.entity_id for e in make().generate_entities({})}
    hidden = {OPS["id"], OPS_ISSUE, OPS_COMMENT}
    assert hidden <= everything
    return AclWorld(short_name="linear", credentials={"api_key": "lin_api_test"}, config={},
                    visible={"alice": everything, "bob": everything - hidden, "carol": everything - hidden},
                    everything=everything)


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def make(credentials=None, **config):
    return LinearSource(LinearSource.validate_config(config), credentials or {"api_key": "lin_api_test"})


def test_teams_projects_issues_and_comments_over_cursor_pages(rsps):
    api = GraphQL(rsps, listing())
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    by_type = {}
    for e in entities.values():
        by_type.setdefault(type(e), []).append(e)
    assert [len(by_type[t]) for t in (LinearTeamEntity, LinearProjectEntity, LinearIssueEntity,
                                      LinearCommentEntity)] == [1, 1, 3, 3]
    issue = entities["a3f6c2d1-7b8e-4f90-a1b2-c3d4e5f60718"]
    assert issue.name == "ENG-142: Report usage to Stripe meters" and issue.state == "In Progress"
    assert [b.entity_type for b in issue.breadcrumbs] == ["LinearTeamEntity", "LinearProjectEntity"]
    assert issue.web_url.startswith("https://linear.app/acme/issue/ENG-142/")
    assert issue.raw_source_fields["labels"] == ["Billing", "Backend"] and issue.raw_source_fields["priority"] == 2
    assert "priority: High" in issue.textual_representation()
    comment = entities["6d9f0a21-4c5d-4e6f-a011-2c3d4e5f6071"]  # from the issue's second page of comments
    assert comment.author == "Tomás Ruiz" and [b.entity_id for b in comment.breadcrumbs][-1] == issue.entity_id
    assert [b.entity_type for b in entities["c5b8e4f3-9d0a-4b12-c3d4-e5f60718293a"].breadcrumbs] == \
        ["LinearTeamEntity"]  # no project
    assert rsps.calls[0].request.headers["Authorization"] == "lin_api_test"  # no scheme, as Linear asks
    assert [op for op, _ in api.seen] == ["Teams", "Projects", "Issues", "Issues", "IssueComments"]
    assert api.seen[2][1]["filter"] is None
    assert source.next_cursor()["updated_at"] == "2024-06-03T15:20:00.000Z"


def test_http_429_and_graphql_ratelimited_are_retried(rsps, monkeypatch):
    answers = listing()
    answers[("Teams", None)] = [
        (429, {"Retry-After": "0"}, {"errors": [{"message": "Too many requests"}]}),
        (400, {"X-RateLimit-Requests-Reset": str(int(time.time() * 1000))},
         {"errors": [{"message": "Rate limit exceeded", "extensions": {"code": "RATELIMITED"}}]}),
        (200, {}, load("teams"))]
    GraphQL(rsps, answers)
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 8
    assert [c.response.status_code for c in rsps.calls[:3]] == [429, 400, 200]
    assert len(waits) == 2 and all(w < 2 for w in waits)


def test_an_expired_oauth_token_is_refreshed(rsps):
    token = rsps.add("POST", "https://api.linear.app/oauth/token",
                     json={"access_token": "lin_oauth_2", "refresh_token": "r2", "expires_in": 86399,
                           "token_type": "Bearer", "scope": "read"})
    GraphQL(rsps, listing())
    source = make({"access_token": "lin_oauth_1", "refresh_token": "r1", "expires_at": time.time() - 1,
                   "client_id": "cid", "client_secret": "cs"})
    assert len(list(source.generate_entities({}))) == 8
    assert parse_qs(token.calls[0].request.body)["refresh_token"] == ["r1"]
    assert rsps.calls[1].request.headers["Authorization"] == "Bearer lin_oauth_2"


def test_an_authentication_error_marks_the_connection_needs_reauth(rsps, make_collection):
    GraphQL(rsps, {("Teams", None): [(400, {}, {"errors": [{
        "message": "Authentication required, not authenticated",
        "extensions": {"type": "authentication error", "code": "AUTHENTICATION_ERROR",
                       "userPresentableMessage": "You need to authenticate to access this operation."}}]})]})
    connection = source_connection_create(collection=make_collection(), short_name="linear",
                                          authentication={"credentials": {"api_key": "lin_api_revoked"}},
                                          sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_is_searchable_then_an_incremental_run_filters_by_updated_at_and_removes_archived(
        rsps, make_collection, client):
    api = GraphQL(rsps, listing())
    connection = source_connection_create(collection=make_collection(), short_name="linear",
                                          authentication={"credentials": {"api_key": "lin_api_test"}},
                                          sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 8)
    r = client.post("/collections/docs/search/instant",
                    {"query": "wrong VAT on reverse-charge invoices", "limit": 3}, format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == \
        "b4a7d3e2-8c9f-4a01-b2c3-d4e5f6071829"
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["updated_at"] == "2024-06-03T15:20:00.000Z"

    # Next run: ENG-150 was archived (deleted), ENG-142 lost a comment; nothing else changed.
    rsps.reset()
    page = load("issues_page_1")
    archived = copy.deepcopy(page["data"]["issues"]["nodes"][1])
    archived.update(archivedAt="2024-06-04T10:00:00.000Z", updatedAt="2024-06-04T10:00:00.000Z")
    changed = copy.deepcopy(load("issues_page_2")["data"]["issues"]["nodes"][0])
    changed["comments"] = {"nodes": changed["comments"]["nodes"][:1], "pageInfo": {"hasNextPage": False,
                                                                                    "endCursor": None}}
    changed["updatedAt"] = "2024-06-04T11:00:00.000Z"
    api = GraphQL(rsps, {("Teams", None): load("teams"),
                         ("Projects", None): {"data": {"projects": {"nodes": [], "pageInfo": {
                             "hasNextPage": False, "endCursor": None}}}},
                         ("Issues", None): {"data": {"issues": {"nodes": [archived, changed], "pageInfo": {
                             "hasNextPage": False, "endCursor": None}}}}})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 3), job.error
    assert api.seen[2][1]["filter"] == {"updatedAt": {"gte": "2024-06-03T15:20:00.000Z"}}
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "b4a7d3e2-8c9f-4a01-b2c3-d4e5f6071829" not in left and len(left) == 5


@pytest.mark.parametrize("wrong, why", [
    (("identifier title", "identifer title"), "Cannot query field 'identifer' on type 'Issue'"),
    (("includeArchived: true, orderBy: updatedAt", "includeArchived: true, orderBy: updated"), "does not exist in 'PaginationOrderBy' enum"),
    (("issues(first: 50", "issues(limit: 50"), "Unknown argument 'limit'"),
])
def test_the_fake_refuses_a_query_linear_would_refuse(rsps, monkeypatch, wrong, why):
    monkeypatch.setattr(linear, "ISSUES", linear.ISSUES.replace(*wrong))
    api = GraphQL(rsps, listing())
    with pytest.raises(AssertionError):
        list(make().generate_entities({}))
    assert why in api.refused[-1]


def test_the_fake_refuses_a_filter_of_the_wrong_shape(rsps):
    api = GraphQL(rsps, listing())
    source = make()
    with pytest.raises(AssertionError):
        source.graphql(linear.ISSUES, {"after": None, "filter": {"updated_at": {"gte": "2024-06-01"}}})
    assert "IssueFilter" in api.refused[-1] and "updated_at" in api.refused[-1]


def test_private_teams_are_visible_to_their_members_and_public_teams_to_everyone(rsps):
    api = GraphQL(rsps, acl_answers())
    source = make()
    assert {(m.group_id, m.member) for m in source.generate_access_memberships()} == {
        (f"team:{OPS['id']}", "user:alice@example.com"), (f"team:{OPS['id']}", "user:dave@example.com")}
    assert [v for op, v in api.seen if op == "TeamMembers"] == [{"id": OPS["id"], "after": None},
                                                                 {"id": OPS["id"], "after": "cursor-2"}]
    entities = {e.entity_id: e for e in source.generate_entities({})}
    for entity_id in (OPS["id"], OPS_ISSUE, OPS_COMMENT):
        assert (entities[entity_id].access_viewers, entities[entity_id].access_is_public) == \
            ([f"group:team:{OPS['id']}"], False)
    opened = [e for e in entities.values() if e.entity_id not in (OPS["id"], OPS_ISSUE, OPS_COMMENT)]
    assert len(opened) == 8 and all(e.access_is_public and not e.access_viewers for e in opened)


def test_a_project_of_private_teams_only_is_visible_to_their_members():
    assert LinearSource._access([{"id": "a", "private": True}, {"id": "b", "private": True}]) == {
        "access_viewers": ["group:team:a", "group:team:b"], "access_is_public": False}
    assert LinearSource._access([{"id": "a", "private": True}, {"id": "b", "private": False}])["access_is_public"]
    assert LinearSource._access([]) == {"access_viewers": [], "access_is_public": False}
