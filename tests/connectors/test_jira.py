"""The Jira source against real Jira REST v2 responses (../shared/data/jira_api_perceval: a search paged
2 + 1, comments paged 2 + 2), served by `responses`: Server offset paging, Cloud token paging through
the OAuth gateway, a refreshed OAuth token, 429, 401, incremental JQL, deletions, and a searchable sync."""
from __future__ import annotations

import copy
import json
import re
import time
from urllib.parse import parse_qs

import pytest
import responses
from responses.matchers import query_param_matcher

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.services import source_connection_create
from connectors.sources.jira import ISSUE_FIELDS, JiraCommentEntity, JiraIssueEntity, JiraSource
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "jira_api_perceval"
SERVER = "https://jira.fiware.org"
CLOUD = "https://acme.atlassian.net"
GATEWAY = "https://api.atlassian.com/ex/jira/11223344-a1b2-3b33-c444-def123456789"
ORDER = " ORDER BY created ASC, key ASC"
FIELDS = ",".join(ISSUE_FIELDS)


def load(name):
    return json.loads((DATA / f"{name}.json").read_text())


ISSUES_1, ISSUES_2 = load("jira_issues_page_1"), load("jira_issues_page_2")
COMMENTS_1, COMMENTS_2 = load("jira_comments_issue_page_1"), load("jira_comments_issue_page_2")
ALL_ISSUES = ISSUES_1["issues"] + ISSUES_2["issues"]


@pytest.fixture
def rsps(monkeypatch):
    monkeypatch.setattr(JiraSource, "page_size", 2)  # the page size of the recordings
    with responses.RequestsMock() as mock:
        yield mock


def grant(holder_type, parameter=None, permission="BROWSE_PROJECTS", **extra):
    """One grant of a permission scheme, as `expand=permissions,user,group,projectRole` shows it."""
    holder = {"type": holder_type, **({"parameter": parameter, "value": parameter} if parameter else {}), **extra}
    return {"id": 10000 + len(holder_type), "self": f"{SERVER}/rest/api/2/permissionscheme/0/permission/1",
            "holder": holder, "permission": permission}


def permission_scheme(*grants):
    return {"expand": "permissions,user,group,projectRole,field,all", "id": 10000, "name": "Default Permission Scheme",
            "self": f"{SERVER}/rest/api/2/permissionscheme/10000", "description": "", "permissions": list(grants)}


def add_browse(rsps, base=SERVER, scheme=None):
    """Every project's permission scheme (the recording's issue 3 names project 10843); by default any user of
    the product may browse (open)."""
    rsps.add("GET", re.compile(re.escape(base) + r"/rest/api/2/project/\d+/permissionscheme"),
             json=scheme or permission_scheme(grant("applicationRole"), grant("group", "jira-administrators",
                                                                             permission="ADMINISTER_PROJECTS")),
             match=[query_param_matcher({"expand": "permissions,user,group,projectRole"})])


def add_project_access(rsps, base=SERVER, roles=None, scheme=None, security=None, groups=None, users=None):
    """What a sync reads before the issues: the projects, each role's actors, the permission scheme, the
    issue security scheme (404 when `security` is None: the project has none), its members, and each group's
    members. `roles`: {role id: (name, actors)}; `groups`: {name: [emails]}; `users`: {account id: email}."""
    rsps.add("GET", f"{base}/rest/api/2/project", json=[
        {"expand": "description,lead,issueTypes,url,projectKeys,permissions,insight", "self":
         f"{base}/rest/api/2/project/10841", "id": "10841", "key": "HELP", "name": "Help-Desk",
         "projectTypeKey": "software", "simplified": False}])
    add_browse(rsps, base, scheme=scheme)
    roles = roles or {}
    rsps.add("GET", f"{base}/rest/api/2/project/10841/role",
             json={name: f"{base}/rest/api/2/project/10841/role/{rid}" for rid, (name, _) in roles.items()})
    for rid, (name, actors) in roles.items():
        rsps.add("GET", f"{base}/rest/api/2/project/10841/role/{rid}", json={
            "self": f"{base}/rest/api/2/project/10841/role/{rid}", "name": name, "id": int(rid),
            "description": "", "actors": actors})
    if security is None:
        rsps.add("GET", f"{base}/rest/api/2/project/10841/issuesecuritylevelscheme", status=404,
                 json={"errorMessages": ["No issue security scheme is associated with this project."], "errors": {}})
    else:
        levels, members = security
        rsps.add("GET", f"{base}/rest/api/2/project/10841/issuesecuritylevelscheme", json={
            "self": f"{base}/rest/api/2/issuesecurityschemes/10100", "id": 10100, "name": "Staff only",
            "description": "", "defaultSecurityLevelId": None,
            "levels": [{"self": f"{base}/rest/api/2/securitylevel/{lid}", "id": lid, "description": "", "name": n}
                       for lid, n in levels.items()]})
        rsps.add("GET", f"{base}/rest/api/2/issuesecurityschemes/10100/members", json={
            "self": "", "maxResults": 50, "startAt": 0, "total": len(members), "isLast": True,
            "values": [{"id": 10300 + n, "issueSecurityLevelId": int(lid), "holder": holder}
                       for n, (lid, holder) in enumerate(members)]})
    for name, emails in (groups or {}).items():
        rsps.add("GET", f"{base}/rest/api/2/group/member", match=[query_param_matcher(
            {"groupname": name, "startAt": "0", "maxResults": "50", "includeInactiveUsers": "false"})], json={
            "self": "", "maxResults": 50, "startAt": 0, "total": len(emails), "isLast": True,
            "values": [jira_user(e) for e in emails]})
    for account, email in (users or {}).items():
        rsps.add("GET", f"{base}/rest/api/2/user", json=jira_user(email, account),
                 match=[query_param_matcher({"accountId": account})])


def jira_user(email, account=None):
    """A Cloud user object (`emailAddress` present when the profile shows it)."""
    return {"self": f"{CLOUD}/rest/api/2/user?accountId={account or email}", "accountId": account or email,
            "accountType": "atlassian", "emailAddress": email, "displayName": email.split("@")[0].title(),
            "active": True, "timeZone": "Europe/Madrid"}


def add_server_search(rsps, jql=ORDER.strip(), pages=(ISSUES_1, ISSUES_2), fields=FIELDS):
    for page in pages:
        rsps.add("GET", f"{SERVER}/rest/api/2/search", json=page, match=[query_param_matcher(
            {"jql": jql, "fields": fields, "maxResults": "2", "startAt": str(page["startAt"])})])


def add_comments(rsps, base=SERVER, issue_id="1", pages=(COMMENTS_1, COMMENTS_2)):
    for page in pages:
        rsps.add("GET", f"{base}/rest/api/2/issue/{issue_id}/comment", json=page,
                 match=[query_param_matcher({"startAt": str(page["startAt"]), "maxResults": "2"})])


def add_no_comments(rsps, base=SERVER, ids=("2", "3")):
    for issue_id in ids:
        rsps.add("GET", f"{base}/rest/api/2/issue/{issue_id}/comment",
                 json={"startAt": 0, "maxResults": 2, "total": 0, "comments": []})


def make(credentials=None, **config):
    config = {"site_url": SERVER, **config}
    return JiraSource(JiraSource.validate_config(config), credentials or {"api_token": "pat-123"})


def test_server_search_and_comments_are_paged_by_start_at(rsps):
    add_server_search(rsps)
    add_browse(rsps)
    add_comments(rsps)
    add_no_comments(rsps)
    source = make()
    entities = list(source.generate_entities({}))

    issues = [e for e in entities if isinstance(e, JiraIssueEntity)]
    comments = {e.entity_id: e for e in entities if isinstance(e, JiraCommentEntity)}
    assert [i.key for i in issues] == ["HELP-6043", "HELP-6042", "HELP-6041"]
    first = issues[0]
    assert first.entity_id == "1" and first.name == "HELP-6043: [Fiware-lab-help] FIWARE Lab Assistance"
    assert first.web_url == f"{SERVER}/browse/HELP-6043" and first.status == "Open"
    assert first.breadcrumbs[0].as_dict() == {"entity_id": "10841", "name": "Help-Desk", "entity_type": "JiraProject"}
    assert first.created_at.isoformat() == "2016-03-03T13:40:01+00:00"
    assert first.raw_source_fields["project_key"] == "HELP" and first.raw_source_fields["issue_type"] == "extRequest"
    assert set(comments) == {"1/comment/10022", "1/comment/10024"}  # page 2 of the recording repeats page 1
    comment = comments["1/comment/10022"]
    assert "Congratulations on receiving the first contribution proposal" in comment.textual_representation()
    assert [b.entity_type for b in comment.breadcrumbs] == ["JiraProject", "JiraIssueEntity"]
    assert comment.web_url == f"{SERVER}/browse/HELP-6043?focusedCommentId=10022"
    assert rsps.calls[0].request.headers["Authorization"] == "Bearer pat-123"  # a Server personal access token
    assert source.is_full_listing()
    cursor = source.next_cursor()
    assert cursor == {"updated": max(i.updated_at for i in issues).isoformat(),
                      "issues": {"1": ["10022", "10024"], "2": [], "3": []}}


def test_cloud_over_oauth_pages_by_token_and_refreshes_an_expired_access_token(rsps):
    rsps.add("POST", "https://auth.atlassian.com/oauth/token",
             json={"access_token": "at-2", "refresh_token": "rt-2", "expires_in": 3600, "token_type": "Bearer"})
    rsps.add("GET", "https://api.atlassian.com/oauth/token/accessible-resources", json=[
        {"id": "99999999-0000-0000-0000-000000000000", "url": "https://other.atlassian.net", "name": "other",
         "scopes": ["read:jira-work"], "avatarUrl": ""},
        {"id": GATEWAY.rsplit("/", 1)[1], "url": CLOUD, "name": "acme", "scopes": ["read:jira-work"],
         "avatarUrl": ""}])
    first = {"issues": ISSUES_1["issues"], "nextPageToken": "CAEaAggD", "isLast": False}
    last = {"issues": ISSUES_2["issues"], "isLast": True}
    base = {"jql": "project in (HELP)" + ORDER, "fields": FIELDS, "maxResults": "2"}
    rsps.add("GET", f"{GATEWAY}/rest/api/2/search/jql", json=first, match=[query_param_matcher(base)])
    rsps.add("GET", f"{GATEWAY}/rest/api/2/search/jql", json=last,
             match=[query_param_matcher({**base, "nextPageToken": "CAEaAggD"})])
    add_no_comments(rsps, GATEWAY, ("1", "2", "3"))
    add_browse(rsps, GATEWAY)
    source = make({"access_token": "at-1", "refresh_token": "rt-1", "expires_at": time.time() - 10,
                   "client_id": "cid", "client_secret": "cs"}, site_url=CLOUD, projects=["help"])
    entities = list(source.generate_entities({}))

    assert [e.key for e in entities] == ["HELP-6043", "HELP-6042", "HELP-6041"]
    assert entities[0].web_url == f"{CLOUD}/browse/HELP-6043"
    assert parse_qs(rsps.calls[0].request.body)["refresh_token"] == ["rt-1"]
    assert all(c.request.headers["Authorization"] == "Bearer at-2" for c in rsps.calls[1:])


def test_a_429_with_retry_after_is_retried(rsps):
    rsps.add("GET", f"{SERVER}/rest/api/2/search", status=429, headers={"Retry-After": "0"},
             body="Rate limit exceeded.")
    add_server_search(rsps, pages=[{**ISSUES_2, "startAt": 0, "total": 1}])
    add_no_comments(rsps, ids=("3",))
    add_browse(rsps)
    assert [e.key for e in make().generate_entities({})] == ["HELP-6041"]
    assert rsps.calls[0].response.status_code == 429


def test_a_refused_api_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = source_connection_create(
        collection=make_collection(), short_name="jira", config={"site_url": CLOUD},
        authentication={"credentials": {"email": "ann@example.com", "api_token": "bad"}}, sync_immediately=False)
    rsps.add("GET", f"{CLOUD}/rest/api/2/project", status=401,  # the first call of a sync
             json={"errorMessages": ["You do not have permission to see the specified issue."], "errors": {}})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert rsps.calls[0].request.headers["Authorization"].startswith("Basic ")


def test_sync_is_searchable_then_an_incremental_run_removes_a_deleted_issue_and_comment(
        rsps, make_collection, client):
    add_server_search(rsps)
    add_comments(rsps)
    add_no_comments(rsps)
    add_project_access(rsps)
    connection = source_connection_create(
        collection=make_collection(), short_name="jira", config={"site_url": SERVER},
        authentication={"credentials": {"api_token": "pat-123"}}, sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 5)
    r = client.post("/collections/docs/search/instant", {"query": "contribution proposal approval", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == "1/comment/10022"
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data
    assert cursor["updated"] == "2016-03-03T14:32:47+00:00"

    # Next run: issue 1 changed (a comment was deleted), issue 2 was deleted.
    rsps.reset()
    changed = copy.deepcopy(ISSUES_1["issues"][0])
    changed["fields"]["summary"] = "[Fiware-lab-help] FIWARE Lab Assistance (answered)"
    changed["fields"]["updated"] = "2016-03-05T09:00:00.000+0000"
    incremental = rsps.add("GET", f"{SERVER}/rest/api/2/search",
                           json={"startAt": 0, "maxResults": 2, "total": 1, "issues": [changed]})
    rsps.add("GET", f"{SERVER}/rest/api/2/issue/1/comment",
             json={**COMMENTS_1, "total": 1, "comments": COMMENTS_1["comments"][:1]})
    alive = [{"id": i["id"], "key": i["key"], "self": i["self"]} for i in (ALL_ISSUES[0], ALL_ISSUES[2])]
    add_server_search(rsps, jql=ORDER.strip(), fields="id",
                      pages=[{"startAt": 0, "maxResults": 2, "total": 2, "issues": alive}])
    add_project_access(rsps)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 2, 2), job.error
    assert sorted(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == [
        "1", "1/comment/10022", "3"]
    jql = parse_qs(incremental.calls[0].request.url.split("?", 1)[1])["jql"][0]
    assert jql.startswith('updated >= "-') and jql.endswith('m"' + ORDER)


@pytest.mark.parametrize("site", ["ftp://jira.example.com", "http://127.0.0.1:8080", "https://10.1.2.3", "jira"])
def test_site_url_must_be_a_public_http_url(site):
    with pytest.raises(ValueError, match="site_url"):
        JiraSource.validate_config({"site_url": site})


def test_a_private_site_is_refused_at_creation_with_a_422(client, make_collection):
    make_collection()
    r = client.post("/source-connections", {"short_name": "jira", "readable_collection_id": "docs",
                                            "config": {"site_url": "http://192.168.1.20/jira"},
                                            "authentication": {"credentials": {"api_token": "x"}}}, format="json")
    assert r.status_code == 422 and "site_url" in json.dumps(r.json())


def acl_issues():
    """The three recorded issues, all in HELP (10841): issue 1 with two embedded comments (10024 visible to the
    group jira-staff only), issue 2 at the security level Staff, issue 3 at Reporter only (carol reports it)."""
    issues = copy.deepcopy(ALL_ISSUES)
    for issue in issues:
        issue["fields"]["project"] = {**issue["fields"]["project"], "id": "10841"}
        issue["fields"]["comment"] = {"comments": [], "maxResults": 0, "total": 0, "startAt": 0}
    comments = copy.deepcopy(COMMENTS_1["comments"][:2])
    comments[1]["visibility"] = {"type": "group", "value": "jira-staff", "identifier": "276f955c-63d7-42c8-9520"}
    issues[0]["fields"]["comment"] = {"comments": comments, "maxResults": 2, "total": 2, "startAt": 0}
    issues[1]["fields"]["security"] = {"self": f"{CLOUD}/rest/api/2/securitylevel/10021", "id": "10021",
                                       "description": "Staff only", "name": "Staff"}
    issues[2]["fields"]["security"] = {"self": f"{CLOUD}/rest/api/2/securitylevel/10022", "id": "10022",
                                       "description": "", "name": "Reporter only"}
    issues[2]["fields"]["reporter"] = jira_user("carol@example.com", "5b10a2844c20165700ede21c")
    return issues


def add_acl(rsps):
    issues = acl_issues()
    rsps.add("GET", f"{CLOUD}/rest/api/2/search/jql", json={"issues": issues, "isLast": True})
    developers = [
        {"id": 10240, "displayName": "jira-developers", "type": "atlassian-group-role-actor", "name": "jira-developers",
         "actorGroup": {"name": "jira-developers", "displayName": "jira-developers", "groupId": "6e87dc72-4f1f-421f"}},
        {"id": 10241, "displayName": "Carol", "type": "atlassian-user-role-actor",
         "actorUser": {"accountId": "5b10a2844c20165700ede21c"}}]
    add_project_access(
        rsps, base=CLOUD, roles={"10002": ("Developers", developers)},
        scheme=permission_scheme(grant("projectRole", "10002"), grant("anyone", permission="CREATE_ISSUES")),
        security=({"10021": "Staff", "10022": "Reporter only"},
                  [("10021", {"type": "group", "parameter": "jira-staff", "value": "276f955c-63d7-42c8-9520",
                              "expand": "group"}),
                   ("10022", {"type": "reporter", "expand": ""})]),
        groups={"jira-developers": ["alice@example.com", "bob@example.com"],
                "jira-staff": ["alice@example.com", "dave@example.com"]},
        users={"5b10a2844c20165700ede21c": "carol@example.com"})


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py (see acl_issues): the Developers role browses."""
    from tests.access.test_source_matrix import AclWorld

    add_acl(rsps)
    open_to_all = {"1", "1/comment/10022"}
    return AclWorld(short_name="jira", credentials={"email": "ann@example.com", "api_token": "tok"},
                    config={"site_url": CLOUD, "projects": ["HELP"]},
                    visible={"alice": open_to_all | {"1/comment/10024", "2"}, "bob": open_to_all,
                             "carol": open_to_all | {"3"}},
                    everything=open_to_all | {"1/comment/10024", "2", "3"})


def test_browse_grants_security_levels_and_comment_visibility_narrow_each_other():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        add_acl(rsps)
        source = make({"email": "ann@example.com", "api_token": "tok"}, site_url=CLOUD, projects=["HELP"])
        memberships = {(m.group_id, m.member) for m in source.generate_access_memberships()}
        access = {e.entity_id: e.access_viewers for e in source.generate_entities({})}
    assert ("role:10841:10002", "group:jira-developers") in memberships
    assert ("role:10841:10002", "user:carol@example.com") in memberships
    assert ("jira-developers", "user:bob@example.com") in memberships
    assert access["1"] == access["1/comment/10022"] == ["group:role:10841:10002"]
    assert access["1/comment/10024"] == ["user:alice@example.com"]  # developers ∩ jira-staff
    assert access["2"] == ["user:alice@example.com"]
    assert access["3"] == ["user:carol@example.com"]


def test_anyone_may_browse_opens_the_project(rsps):
    add_server_search(rsps, pages=[{**ISSUES_2, "startAt": 0, "total": 1}])
    add_no_comments(rsps, ids=("3",))
    add_browse(rsps, scheme=permission_scheme(grant("anyone")))
    [issue] = make().generate_entities({})
    assert issue.access_is_public and JiraSource.supports_access_control
