"""The GitLab source against REST v4 responses written from GitLab's documented shapes
(tests/connectors/fixtures/gitlab): Link-header pagination, issues, merge requests, notes (system
notes left out), repository files through the converters, a refreshed OAuth token, 429, 401,
`updated_after` incremental runs with deletions and a renamed file, the SSRF guard on a
self-hosted URL, and a sync whose content is found by search."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import responses
from responses.matchers import query_param_matcher

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.services import source_connection_create
from connectors.sources.gitlab import (GitLabFileEntity, GitLabIssueEntity, GitLabMergeRequestEntity,
                                       GitLabNoteEntity, GitLabProjectEntity, GitLabSource)
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures" / "gitlab"
API = "https://gitlab.com/api/v4"
P = f"{API}/projects/278964"
PATH = "acme-platform/ci-runner"
HEAD = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"


def load(name):
    return json.loads((FIXTURES / f"{name}.json").read_text())


def raw(name):
    return (FIXTURES / f"{name}.raw").read_text()


LIST = {"scope": "all", "order_by": "updated_at", "sort": "asc", "per_page": "100"}


@pytest.fixture
def rsps():
    # Not every test reads the members that add_full answers (only syncs list memberships).
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def add_full(rsps, *, since=None, issues=None, mrs=None, files=True, notes=True):
    """The full listing: project, its members, two Link pages of issues, merge requests, notes, branch, tree and
    raw files."""
    rsps.add("GET", f"{API}/projects/acme-platform%2Fci-runner", json=load("project"))
    rsps.add("GET", f"{P}/members/all", json=load("members_all"), match=[query_param_matcher({"per_page": "100"})])
    rsps.add("GET", f"{API}/users/4102", json=load("user_4102"))
    query = {**LIST, **({"updated_after": since} if since else {})}
    if issues is None:
        rsps.add("GET", f"{P}/issues", json=load("issues_page_1"), match=[query_param_matcher(query)],
                 headers={"Link": f'<{P}/issues?page=2&per_page=100&scope=all>; rel="next", '
                                  f'<{P}/issues?page=2&per_page=100&scope=all>; rel="last"',
                          "X-Page": "1", "X-Next-Page": "2", "X-Per-Page": "100"})
        rsps.add("GET", f"{P}/issues?page=2&per_page=100&scope=all", json=load("issues_page_2"),
                 headers={"X-Page": "2", "X-Next-Page": ""})
    else:
        rsps.add("GET", f"{P}/issues", json=issues, match=[query_param_matcher(query)])
    rsps.add("GET", f"{P}/merge_requests", json=load("merge_requests") if mrs is None else mrs,
             match=[query_param_matcher(query)])
    if notes:
        rsps.add("GET", f"{P}/issues/41/notes", json=load("issue_41_notes"))
    if files:
        rsps.add("GET", f"{P}/repository/branches/main", json=load("branch_main"))
        rsps.add("GET", f"{P}/repository/tree", json=load("tree"),
                 match=[query_param_matcher({"ref": "main", "recursive": "true", "per_page": "100"})])
        rsps.add("GET", f"{P}/repository/files/README.md/raw?ref={HEAD}", body=raw("README.md"))
        rsps.add("GET", f"{P}/repository/files/docs%2Fexecutors.md/raw?ref={HEAD}", body=raw("executors.md"))


def make(credentials=None, **config):
    config = {"projects": [PATH], **config}
    return GitLabSource(GitLabSource.validate_config(config), credentials or {"private_token": "glpat-test"})


def test_projects_issues_merge_requests_notes_and_files(rsps):
    add_full(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert set(entities) == {PATH, f"{PATH}#41", f"{PATH}#42", f"{PATH}#43", f"{PATH}#41/note/1904455",
                             f"{PATH}!17", f"{PATH}:README.md", f"{PATH}:docs/executors.md"}  # no system note, no png
    assert isinstance(entities[PATH], GitLabProjectEntity)
    issue = entities[f"{PATH}#41"]
    assert isinstance(issue, GitLabIssueEntity) and issue.labels == ["bug", "executor::docker"]
    assert [b.entity_type for b in issue.breadcrumbs] == ["GitLabGroup", "GitLabProjectEntity"]
    assert issue.web_url == "https://gitlab.com/acme-platform/ci-runner/-/issues/41"
    assert "Issue #41 in acme-platform/ci-runner by ann.k" in issue.textual_representation()
    mr = entities[f"{PATH}!17"]
    assert isinstance(mr, GitLabMergeRequestEntity) and mr.raw_source_fields["source_branch"] == "fix-volume-leak"
    note = entities[f"{PATH}#41/note/1904455"]
    assert isinstance(note, GitLabNoteEntity) and note.breadcrumbs[-1].entity_id == f"{PATH}#41"
    assert note.web_url.endswith("/-/issues/41#note_1904455")
    readme = entities[f"{PATH}:docs/executors.md"]
    assert isinstance(readme, GitLabFileEntity) and readme.path.read_text().startswith("# Executors")
    assert [b.name for b in readme.breadcrumbs][-1] == "docs"
    assert rsps.calls[0].request.headers["PRIVATE-TOKEN"] == "glpat-test"
    assert source.is_full_listing()
    state = source.next_cursor()["projects"][PATH]
    assert state["updated_after"] == "2024-06-04T10:11:12.000Z" and state["head"] == HEAD
    assert state["issues"] == {"41": [1904455], "42": [], "43": []}
    source.close()


def test_a_429_with_retry_after_is_retried(rsps):
    rsps.add("GET", f"{API}/projects/acme-platform%2Fci-runner", status=429, headers={"Retry-After": "0"},
             json={"message": "429 Too Many Requests"})
    add_full(rsps, files=False)
    source = make(include_files=False)
    assert len(list(source.generate_entities({}))) == 6
    assert rsps.calls[0].response.status_code == 429


def test_an_expired_oauth_token_is_refreshed(rsps):
    token = rsps.add("POST", "https://gitlab.com/oauth/token", json={
        "access_token": "gl-oauth-2", "token_type": "Bearer", "expires_in": 7200, "refresh_token": "gl-r2",
        "scope": "read_api read_repository", "created_at": int(time.time())})
    add_full(rsps, files=False)
    source = make({"access_token": "gl-oauth-1", "refresh_token": "gl-r1", "expires_at": time.time() - 1,
                   "client_id": "cid", "client_secret": "cs"}, include_files=False)
    assert len(list(source.generate_entities({}))) == 6
    assert parse_qs(token.calls[0].request.body)["refresh_token"] == ["gl-r1"]
    assert rsps.calls[1].request.headers["Authorization"] == "Bearer gl-oauth-2"


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    rsps.add("GET", f"{API}/projects/acme-platform%2Fci-runner", status=401, json={"message": "401 Unauthorized"})
    connection = source_connection_create(collection=make_collection(), short_name="gitlab",
                                          config={"projects": [PATH]},
                                          authentication={"credentials": {"private_token": "glpat-revoked"}},
                                          sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_is_searchable_then_an_incremental_run_handles_changes_deletions_and_a_renamed_file(
        rsps, make_collection, client):
    add_full(rsps)
    connection = source_connection_create(collection=make_collection(), short_name="gitlab",
                                          config={"projects": [PATH]},
                                          authentication={"credentials": {"private_token": "glpat-test"}},
                                          sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 8)
    r = client.post("/collections/docs/search/instant", {"query": "disks fill up within a week", "limit": 3},
                    format="json")
    found = [x["airweave_system_metadata"]["original_entity_id"] for x in r.json()["results"]]
    assert found[0] == f"{PATH}#41"
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["projects"][PATH]["head"] == HEAD

    # Next run: issue 42 changed, issue 43 was deleted, the executors page was renamed.
    rsps.reset()
    changed = copy.deepcopy(load("issues_page_1")[1])
    changed.update(title="Document the autoscaler's IdleTime and IdleCount", updated_at="2024-06-06T08:00:00.000Z")
    add_full(rsps, since="2024-06-04T10:11:12.000Z", issues=[changed], mrs=[], files=False, notes=False)
    rsps.add("GET", f"{P}/issues", json=load("issues_page_1"),
             match=[query_param_matcher({"scope": "all", "per_page": "100"})])
    rsps.add("GET", f"{P}/merge_requests", json=load("merge_requests"),
             match=[query_param_matcher({"scope": "all", "per_page": "100"})])
    new_head = load("compare")["commit"]["id"]
    rsps.add("GET", f"{P}/repository/branches/main", json={**load("branch_main"), "commit": load("compare")["commit"]})
    rsps.add("GET", f"{P}/repository/compare", json=load("compare"),
             match=[query_param_matcher({"from": HEAD, "to": new_head, "straight": "false"})])
    rsps.add("GET", f"{P}/repository/files/README.md/raw?ref={new_head}", body=raw("README.md"))
    rsps.add("GET", f"{P}/repository/files/docs%2Fexecutor-guide.md/raw?ref={new_head}", body=raw("executors.md"))
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted, job.entities_updated, job.entities_deleted) == \
        ("completed", 1, 1, 2), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert f"{PATH}#43" not in left and f"{PATH}:docs/executors.md" not in left
    assert f"{PATH}:docs/executor-guide.md" in left and f"{PATH}#41/note/1904455" in left


@pytest.mark.parametrize("url", ["http://127.0.0.1", "https://10.0.0.5/gitlab", "file:///etc", "gitlab"])
def test_a_self_hosted_url_is_guarded(url):
    with pytest.raises(ValueError, match="gitlab_url"):
        GitLabSource.validate_config({"gitlab_url": url, "projects": [PATH]})


def test_a_self_hosted_instance_is_used_and_project_paths_are_checked():
    source = make(gitlab_url="https://git.acme.example/")
    assert source.base_url == "https://git.acme.example/api/v4"
    with pytest.raises(ValueError, match="group/project"):
        GitLabSource.validate_config({"projects": ["just-a-name"]})


# --- access control ----------------------------------------------------------------------------------


def test_a_private_projects_items_are_visible_to_its_members_code_and_merge_requests_to_reporters(rsps):
    add_full(rsps)
    source = make()
    memberships = {(m.group_id, m.member) for m in source.generate_access_memberships()}
    assert memberships == {(f"project:{PATH}", "user:alice@example.com"),
                           (f"project:{PATH}:reporter", "user:alice@example.com"),
                           (f"project:{PATH}", "user:bob@example.com")}  # bob is a Guest; erin is blocked
    entities = list(source.generate_entities({}))
    by_type = {}
    for e in entities:
        by_type.setdefault(type(e), set()).add((tuple(e.access_viewers), e.access_is_public))
    members, reporters = ((f"group:project:{PATH}",), False), ((f"group:project:{PATH}:reporter",), False)
    assert by_type[GitLabProjectEntity] == {members} and by_type[GitLabIssueEntity] == {members}
    assert by_type[GitLabMergeRequestEntity] == {reporters} and by_type[GitLabFileEntity] == {reporters}
    assert by_type[GitLabNoteEntity] == {members}  # the notes of issue 41 follow it


@pytest.mark.parametrize("visibility, levels, confidential, expected", [
    ("public", {}, False, (True, None)),
    ("internal", {}, False, (True, None)),
    ("public", {}, True, (False, "reporter")),
    ("public", {"issues_access_level": "private"}, False, (False, "members")),
    ("private", {"issues_access_level": "enabled"}, False, (False, "members")),
])
def test_issue_access_follows_visibility_feature_levels_and_confidentiality(visibility, levels, confidential,
                                                                            expected):
    access = GitLabSource._access({"visibility": visibility, **levels}, "g/p", "issues", reporter=confidential)
    public, group = expected
    assert access["access_is_public"] is public
    assert access["access_viewers"] == ([] if group is None else
                                        ["group:project:g/p" + (":reporter" if group == "reporter" else "")])


def test_a_public_projects_repository_limited_to_members_is_for_reporters():
    project = {"visibility": "public", "repository_access_level": "private", "merge_requests_access_level": "enabled"}
    assert GitLabSource._access(project, "g/p", "repository", reporter=True) == {
        "access_viewers": ["group:project:g/p:reporter"], "access_is_public": False}
    assert GitLabSource._access(project, "g/p", "merge_requests", reporter=True)["access_is_public"]


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: the private project of add_full (notes and
    files left out), alice a Maintainer, bob a Guest (issues only), carol not a member."""
    from tests.access.test_source_matrix import AclWorld

    add_full(rsps, files=False)
    source = make(include_files=False)
    entities = list(source.generate_entities({}))
    everything = {e.entity_id for e in entities}
    guests = {e.entity_id for e in entities if e.access_viewers == [f"group:project:{PATH}"]}
    assert guests and guests != everything
    return AclWorld(short_name="gitlab", credentials={"private_token": "glpat-test"},
                    config={"projects": [PATH], "include_files": False},
                    visible={"alice": everything, "bob": guests, "carol": set()}, everything=everything)
