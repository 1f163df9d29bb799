"""The azure_devops source against a fake Azure DevOps that answers only its documented requests
(basic auth with an empty user and the PAT, `X-TFS-FedAuthRedirect: Suppress`, `api-version=7.1`;
the WIQL body and `timePrecision`; `ids`, `fields`, `errorPolicy` of the work item batch; the wiki
tree and `includeContent`): work items with their area path, wiki pages with their parents, a 429
with Retry-After waited out, a refused token marking the connection `needs_reauth`, a sync found
by search, then an incremental run that reads only the changed work item and removes a deleted
one and a deleted wiki page."""
from __future__ import annotations

import base64
import json

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.azure_devops import FIELDS, AzureDevOpsSource, AzureDevOpsWikiPageEntity, \
    AzureDevOpsWorkItemEntity
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://dev.azure.com/harbour"
PAT = "azdopat0123456789abcdefghijklmnopqrstuvwxyz0123456789ab"
AUTH = {"Authorization": "Basic " + base64.b64encode(f":{PAT}".encode()).decode(), "X-TFS-FedAuthRedirect": "Suppress"}
CONFIG = {"organization": "https://dev.azure.com/harbour/", "projects": ["Ferries"]}
V = {"api-version": "7.1"}
ALL = ("SELECT [System.Id] FROM WorkItems WHERE [System.TeamProject] = @project ORDER BY [System.ChangedDate] ASC")


def item(wid, kind, title, description, changed, area="Ferries\\Booking"):
    return {"id": wid, "rev": 3, "fields": {
        "System.Id": wid, "System.Title": title, "System.WorkItemType": kind, "System.State": "Active",
        "System.Description": f"<div>{description}</div>", "System.AreaPath": area,
        "System.IterationPath": "Ferries\\Sprint 12", "System.CreatedDate": "2024-04-01T09:00:00.123Z",
        "System.ChangedDate": changed, "Microsoft.VSTS.Common.Priority": 2,
        "System.AssignedTo": {"displayName": "Ana Lima", "uniqueName": "ana@harbour.example",
                              "id": "d291b0c4-a05c-4ea6-8df1-4b41d5f39eff"}},
        "url": f"{SITE}/_apis/wit/workItems/{wid}"}


W1 = item(101, "Bug", "Seat map shows the wrong deck", "On the night ferry the seat map shows deck 3 twice.",
          "2024-05-02T10:00:00.5Z")
W2 = item(102, "User Story", "Rebook passengers after a storm cancellation",
          "When a sailing is cancelled for wind, passengers are rebooked on the next sailing automatically.",
          "2024-05-03T10:00:00.25Z")
WIKI = {"id": "a1b2c3d4-0000-4000-8000-000000000001", "name": "Ferries.wiki", "type": "projectWiki",
        "projectId": "p1", "remoteUrl": f"{SITE}/Ferries/_wiki/wikis/Ferries.wiki", "url": f"{SITE}/_apis/wiki/1"}
TREE = {"path": "/", "order": 0, "isParentPage": True, "gitItemPath": "/.order", "id": 1, "subPages": [
    {"path": "/Operations", "order": 0, "isParentPage": True, "id": 2, "gitItemPath": "/Operations.md",
     "remoteUrl": f"{SITE}/Ferries/_wiki/wikis/Ferries.wiki/2/Operations", "subPages": [
         {"path": "/Operations/Crew rota", "order": 0, "isParentPage": False, "id": 3, "subPages": [],
          "remoteUrl": f"{SITE}/Ferries/_wiki/wikis/Ferries.wiki/3/Crew-rota"}]}]}
CONTENT = {2: "How the harbour runs day to day.", 3: "The crew rota is published every Friday."}


def wiql(fake, query, ids):
    fake.route("POST", "/Ferries/_apis/wit/wiql", query={**V, "timePrecision": "true"}, headers=AUTH,
               json={"query": query}, reply={"queryType": "flat", "queryResultType": "workItem",
                                             "asOf": "2024-05-04T00:00:00Z", "columns": [],
                                             "workItems": [{"id": i, "url": f"{SITE}/_apis/wit/workItems/{i}"}
                                                           for i in ids]})


def project(fake, items=(W1, W2), ids=None, pages=CONTENT, tree=TREE):
    wiql(fake, ALL, ids or [i["id"] for i in items])
    fake.route("GET", "/Ferries/_apis/wit/workitems", headers=AUTH,
               query={**V, "ids": ",".join(str(i["id"]) for i in items), "fields": FIELDS, "errorPolicy": "Omit"},
               reply={"count": len(items), "value": list(items)})
    fake.route("GET", "/Ferries/_apis/wiki/wikis", query=V, headers=AUTH, reply={"count": 1, "value": [WIKI]})
    base = f"/Ferries/_apis/wiki/wikis/{WIKI['id']}/pages"
    fake.route("GET", base, query={**V, "path": "/", "recursionLevel": "full"}, headers=AUTH, reply=tree)
    for pid, text in pages.items():
        fake.route("GET", f"{base}/{pid}", query={**V, "includeContent": "true"}, headers=AUTH, reply={
            "id": pid, "path": "/x", "content": text, "remoteUrl": f"{SITE}/Ferries/_wiki/wikis/Ferries.wiki/{pid}"})


def test_work_items_and_wiki_pages_with_their_breadcrumbs(vendor):
    project(vendor(SITE))
    source = AzureDevOpsSource(AzureDevOpsSource.validate_config(CONFIG), {"personal_access_token": PAT})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    wiki = f"wikipage:{WIKI['id']}"
    assert sorted(entities) == [f"{wiki}:2", f"{wiki}:3", "workitem:101", "workitem:102"]
    story = entities["workitem:102"]
    assert isinstance(story, AzureDevOpsWorkItemEntity) and story.name.startswith("User Story 102: Rebook")
    assert "rebooked on the next sailing" in story.description and "<div>" not in story.description
    assert [b.name for b in story.breadcrumbs] == ["Ferries", "Booking"] and "assigned to: Ana Lima" in story.details
    assert story.web_url == f"{SITE}/Ferries/_workitems/edit/102"
    rota = entities[f"{wiki}:3"]
    assert isinstance(rota, AzureDevOpsWikiPageEntity) and rota.name == "Crew rota"
    assert [b.name for b in rota.breadcrumbs] == ["Ferries.wiki", "Operations"] and rota.web_url.endswith("/3")
    assert source.is_full_listing() and source.next_cursor() == {"since": {"Ferries": "2024-05-03T10:00:00.25Z"}}


def test_the_organization_and_projects_are_checked():
    for bad in ({"organization": "https://evil.example/x", "projects": ["A"]}, {"organization": "harbour",
                                                                              "projects": [" "]}):
        try:
            AzureDevOpsSource.validate_config(bad)
        except ValueError as exc:
            assert "organization" in str(exc) or "projects" in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("POST", "/Ferries/_apis/wit/wiql", query={**V, "timePrecision": "true"}, headers=AUTH,
                         json={"query": ALL}, reply=[(429, {"Retry-After": "0"}, {
                             "message": "TF400733: The request has been throttled", "typeKey": "ThrottlingException"}),
                             (200, {}, {"workItems": [{"id": 101}]})])
    project(fake, items=(W1,))
    source = AzureDevOpsSource(AzureDevOpsSource.validate_config({**CONFIG, "include_wiki": False}),
                               {"personal_access_token": PAT})
    waits = []
    source.http.sleep = waits.append
    assert [e.entity_id for e in source.generate_entities({})] == ["workitem:101"]
    assert limited.calls == 2 and waits == [0]


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(SITE).route("POST", "/Ferries/_apis/wit/wiql", optional=("api-version", "timePrecision"),
                       reply=(401, {"WWW-Authenticate": "Basic realm=\"https://dev.azure.com/\""}, ""))
    connection = connect(make_collection(), "azure_devops", {"personal_access_token": "revoked-pat-0123456789"},
                         CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_reads_only_what_changed(vendor, make_collection, client):
    fake = vendor(SITE)
    project(fake)
    connection = connect(make_collection(), "azure_devops", {"personal_access_token": PAT}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "what happens to passengers when a sailing is cancelled", limit=1) == ["workitem:102"]

    fake.routes.clear()
    edited = item(101, "Bug", "Seat map shows the wrong deck", "Fixed: the seat map of the night ferry now shows "
                  "deck 3 once.", "2024-05-04T09:00:00Z")
    only_operations = json.loads(json.dumps(TREE))
    only_operations["subPages"][0]["subPages"] = []  # the crew rota page was deleted
    project(fake, items=(edited,), ids=[101], pages={2: CONTENT[2]}, tree=only_operations)  # item 102 was deleted
    wiql(fake, ALL.replace("@project ORDER", "@project AND [System.ChangedDate] > '2024-05-03T10:00:00.25Z' ORDER"),
         [101])
    fake.routes.insert(0, fake.routes.pop())  # the changed-since query first: its body differs
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 2), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"workitem:101", f"wikipage:{WIKI['id']}:2"}
    assert search_ids(client, "was the seat map fixed", limit=1) == ["workitem:101"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"Ferries": "2024-05-04T09:00:00Z"}
