"""The jira_service_management source against a fake Jira Cloud site that answers only the documented
requests (basic auth of email + API token; the JQL search `jql`, `fields`, `maxResults`,
`nextPageToken`; the Service Management request view with `expand=requestType`): requests of the
service desk projects with their public replies and internal notes, the customer portal link and
request type, an issue that is not a request keeping its agent view, a 429 with Retry-After
waited out, a refused token marking the connection `needs_reauth`, a sync found by search, then an
incremental run by relative `updated` JQL that removes a deleted request."""
from __future__ import annotations

import base64
import re

from airweave.collections.models import Entity, SourceConnection
from connectors.sources.jira import ISSUE_FIELDS, JiraCommentEntity, JiraIssueEntity
from connectors.sources.jira_service_management import JiraServiceManagementSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.atlassian.net"
EMAIL, TOKEN = "ana@harbour.example", "ATATT3xFfGF0-jsm-0123456789abcdef"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()}
SCOPE = 'project in (ITH) AND projectType = "service_desk"'
ORDER = " ORDER BY created ASC, key ASC"
CONFIG = {"site_url": SITE, "projects": ["ith"]}
PROJECT = {"id": "10001", "key": "ITH", "name": "IT Help", "projectTypeKey": "service_desk"}


def comment(cid, author, body, public):
    return {"id": cid, "self": f"{SITE}/rest/api/2/issue/1/comment/{cid}", "author": {"displayName": author},
            "body": body, "created": "2024-05-02T10:00:00.000+0000", "updated": "2024-05-02T10:00:00.000+0000",
            "jsdPublic": public}


def issue(iid, key, summary, description, updated, comments=()):
    return {"id": iid, "key": key, "self": f"{SITE}/rest/api/2/issue/{iid}", "fields": {
        "summary": summary, "description": description, "status": {"name": "Waiting for support",
                                                                   "statusCategory": {"key": "new"}},
        "priority": {"name": "Medium"}, "issuetype": {"name": "[System] Service request"}, "project": PROJECT,
        "assignee": None, "reporter": {"displayName": "Maya Okafor"}, "labels": [], "components": [],
        "created": "2024-05-01T09:00:00.000+0000", "updated": updated, "resolution": None, "parent": None,
        "comment": {"comments": list(comments), "maxResults": len(comments), "total": len(comments), "startAt": 0}}}


VPN = issue("20001", "ITH-1", "VPN drops on the ferry wifi", "The VPN disconnects every ten minutes on board.",
            "2024-05-02T10:00:00.000+0000", comments=[
                comment("301", "Tom Reyes", "Please try the new VPN profile we just sent.", True),
                comment("302", "Tom Reyes", "Internal: the onboard firewall drops idle UDP.", False)])
LAPTOP = issue("20002", "ITH-2", "New laptop for the purser", "The purser needs a laptop for ticket sales.",
               "2024-05-03T10:00:00.000+0000")
TASK = issue("20003", "ITH-3", "Renew the certificate", "Agent task, not a customer request.",
             "2024-05-03T11:00:00.000+0000")


def search(fake, jql, issues, fields=",".join(ISSUE_FIELDS)):
    fake.route("GET", "/rest/api/2/search/jql", query={"jql": jql, "fields": fields, "maxResults": "100"},
               headers=AUTH, reply={"issues": list(issues), "isLast": True})


def requests_view(fake, keys=("ITH-1", "ITH-2")):
    for n, key in enumerate(keys, start=1):
        fake.route("GET", f"/rest/servicedeskapi/request/{key}", query={"expand": "requestType"}, headers=AUTH, reply={
            "issueId": f"2000{n}", "issueKey": key, "requestTypeId": "25", "serviceDeskId": "1",
            "requestType": {"id": "25", "name": "Get IT help", "serviceDeskId": "1"},
            "currentStatus": {"status": "Waiting for support", "statusCategory": "NEW"},
            "_links": {"web": f"{SITE}/servicedesk/customer/portal/1/{key}", "agent": f"{SITE}/browse/{key}"}})
    fake.route("GET", re.compile(r"/rest/servicedeskapi/request/ITH-\d+"), query={"expand": "requestType"},
               headers=AUTH, reply=(404, {}, {"errorMessage": "The request could not be found.", "i18nErrorMessage": {
                   "i18nKey": "sd.request.not.found", "parameters": []}}))


AGENTS_ROLE = f"{SITE}/rest/api/2/project/10001/role/10100"


def project_access(fake):
    """Who may browse ITH, as Jira answers it: BROWSE_PROJECTS granted to the Service Desk Team role,
    whose actor is the group service-desk-agents (Tom); no issue security scheme (404)."""
    fake.route("GET", "/rest/api/2/project", headers=AUTH, reply=[PROJECT])
    fake.route("GET", "/rest/api/2/project/10001/permissionscheme", headers=AUTH,
               query={"expand": "permissions,user,group,projectRole"}, reply={
                   "id": 10000, "name": "ITH: Jira Service Management Permission Scheme",
                   "self": f"{SITE}/rest/api/2/permissionscheme/10000", "permissions": [
                       {"id": 10300, "self": f"{SITE}/rest/api/2/permissionscheme/10000/permission/10300",
                        "permission": "BROWSE_PROJECTS", "holder": {
                            "type": "projectRole", "parameter": "10100", "value": "10100",
                            "projectRole": {"self": AGENTS_ROLE, "name": "Service Desk Team", "id": 10100}}}]})
    fake.route("GET", "/rest/api/2/project/10001/role", headers=AUTH, reply={"Service Desk Team": AGENTS_ROLE})
    fake.route("GET", "/rest/api/2/project/10001/role/10100", headers=AUTH, reply={
        "self": AGENTS_ROLE, "name": "Service Desk Team", "id": 10100, "actors": [{
            "id": 10210, "displayName": "service-desk-agents", "type": "atlassian-group-role-actor",
            "name": "service-desk-agents", "actorGroup": {"name": "service-desk-agents",
                                                          "displayName": "service-desk-agents",
                                                          "groupId": "5d9c3a5e-7f1b-4c2d-9e8a-1b2c3d4e5f60"}}]})
    fake.route("GET", "/rest/api/2/project/10001/issuesecuritylevelscheme", headers=AUTH, reply=(
        404, {}, {"errorMessages": ["No issue security level scheme is associated with the project."], "errors": {}}))
    fake.route("GET", "/rest/api/2/group/member", headers=AUTH, query={
        "groupname": "service-desk-agents", "startAt": "0", "maxResults": "50", "includeInactiveUsers": "false"},
        reply={"self": f"{SITE}/rest/api/2/group/member?groupname=service-desk-agents", "maxResults": 50,
               "startAt": 0, "total": 1, "isLast": True, "values": [{
                   "accountId": "5b10ac8d82e05b22cc7d4ef5", "emailAddress": "tom@harbour.example",
                   "displayName": "Tom Reyes", "active": True, "accountType": "atlassian"}]})


def make():
    return JiraServiceManagementSource(JiraServiceManagementSource.validate_config(CONFIG),
                                       {"email": EMAIL, "api_token": TOKEN})


def test_requests_with_public_replies_internal_notes_and_the_portal_link(vendor):
    fake = vendor(SITE)
    search(fake, SCOPE + ORDER, [VPN, LAPTOP, TASK])
    requests_view(fake)
    project_access(fake)
    entities = {e.entity_id: e for e in make().generate_entities({})}
    vpn = entities["20001"]
    assert isinstance(vpn, JiraIssueEntity) and vpn.web_url == f"{SITE}/servicedesk/customer/portal/1/ITH-1"
    assert vpn.url == f"{SITE}/browse/ITH-1" and vpn.raw_source_fields["request_type"] == "Get IT help"
    notes = {e.entity_id: e for e in entities.values() if isinstance(e, JiraCommentEntity)}
    assert notes["20001/comment/301"].raw_source_fields["public"] is True
    assert notes["20001/comment/302"].raw_source_fields["public"] is False
    assert entities["20003"].web_url == f"{SITE}/browse/ITH-3" and "request_type" not in \
        entities["20003"].raw_source_fields


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/rest/api/2/search/jql", headers=AUTH, query={
        "jql": SCOPE + ORDER, "fields": ",".join(ISSUE_FIELDS), "maxResults": "100"}, reply=[
        (429, {"Retry-After": "0"}, {"errorMessages": ["Rate limit exceeded."]}),
        (200, {}, {"issues": [LAPTOP], "isLast": True})])
    requests_view(fake)
    project_access(fake)
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert [e.entity_id for e in source.generate_entities({})] == ["20002"] and limited.calls == 2 and waits == [0]


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)  # the first request of a sync, the project listing of the access step, is refused
    for path in ("/rest/api/2/project", "/rest/api/2/search/jql"):
        fake.route("GET", path, optional=("jql", "fields", "maxResults"),
                   reply=(401, {}, "Client must be authenticated to access this resource."))
    connection = connect(make_collection(), "jira_service_management",
                         {"email": EMAIL, "api_token": "revoked-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_removes_a_deleted_request(vendor, make_collection, client):
    fake = vendor(SITE)
    search(fake, SCOPE + ORDER, [VPN, LAPTOP])
    requests_view(fake)
    project_access(fake)
    connection = connect(make_collection(), "jira_service_management", {"email": EMAIL, "api_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "vpn keeps disconnecting on board", limit=1) == ["20001"]
    vpn = Entity.objects.get(source_connection=connection, entity_id="20001")
    assert not vpn.access_is_public and len(vpn.access_viewers) == 1 and vpn.access_viewers[0].startswith("group:")
    assert vpn.access_viewers[0].endswith(":role:10001:10100")  # the Service Desk Team role, not the organization

    fake.routes.clear()
    project_access(fake)
    fake.route("GET", "/rest/api/2/search/jql", headers=AUTH,
               query={"jql": lambda jql: re.fullmatch(SCOPE.replace("(", r"\(").replace(")", r"\)") +
                                                        r' AND updated >= "-\d+m"' + ORDER, jql) is not None,
                      "fields": ",".join(ISSUE_FIELDS), "maxResults": "100"},
               reply={"issues": [], "isLast": True})
    search(fake, SCOPE + ORDER, [VPN], fields="id")  # ITH-2 was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        {"20001", "20001/comment/301", "20001/comment/302"}
