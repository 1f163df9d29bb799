"""The coda source against a fake Coda API that answers only its documented requests (Bearer token;
`limit` and `pageToken` paging; the export's `outputFormat`; rows with `useColumnNames` and
`valueFormat`) and a fake download host that refuses the token: pages over two listing pages with
nested breadcrumbs exported as Markdown after a poll, table rows, a failed export skipped with its
reason, a 429 with Retry-After waited out, a refused token marking the connection `needs_reauth`,
a sync found by search, then an incremental run that exports only the changed page and removes a
deleted one."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.base import UnreadableEntity
from connectors.sources import coda
from connectors.sources.coda import CodaPageEntity, CodaRowEntity, CodaSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://coda.io/apis/v1"
DOWNLOADS = "https://codahosted.io"
TOKEN = "c0da-4f2b1e9a-7d3c-4e8f-9a6b-0123456789ab"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOC = {"id": "AbCDeFGH", "type": "doc", "href": f"{API}/docs/AbCDeFGH", "browserLink": "https://coda.io/d/_dAbCDeFGH",
       "name": "Harbour ops", "owner": "ana@harbour.example", "ownerName": "Ana Lima",
       "createdAt": "2024-01-10T09:00:00.000Z", "updatedAt": "2024-05-03T09:00:00.000Z",
       "workspace": {"id": "ws-1Ab234", "type": "workspace", "organizationId": "org-123ABc"},
       "folder": {"id": "fl-1Ab234", "type": "folder", "name": "Operations"}}


def page(pid, name, updated, parent=None, content_type="canvas"):
    return {"id": pid, "type": "page", "href": f"{API}/docs/AbCDeFGH/pages/{pid}", "name": name, "subtitle": "",
            "browserLink": f"https://coda.io/d/_dAbCDeFGH/_su{pid[7:]}", "contentType": content_type,
            "isHidden": False, "isEffectivelyHidden": False, "children": [],
            "parent": {"id": parent, "type": "page", "href": f"{API}/docs/AbCDeFGH/pages/{parent}",
                       "name": "Handbook"} if parent else None,
            "createdAt": "2024-02-01T09:00:00.000Z", "updatedAt": updated,
            "createdBy": {"@context": "http://schema.org/", "@type": "Person", "name": "Ana Lima",
                          "email": "ana@harbour.example"}}


HANDBOOK = page("canvas-hb01", "Handbook", "2024-05-01T09:00:00.000Z")
STORMS = page("canvas-st02", "Storm procedure", "2024-05-03T09:00:00.000Z", parent="canvas-hb01")
ROTA = page("canvas-ro03", "Crew rota", "2024-04-20T09:00:00.000Z", parent="canvas-hb01")
EMBED = page("canvas-em04", "Timetable embed", "2024-04-20T09:00:00.000Z", content_type="embed")
MARKDOWN = {"canvas-hb01": "Everything about running the harbour.",
            "canvas-st02": "When winds exceed 50 knots all sailings are suspended and passengers rebooked.",
            "canvas-ro03": "The crew rota is published every Friday."}
TABLE = {"id": "grid-pqRst-U", "type": "table", "tableType": "table", "href": f"{API}/docs/AbCDeFGH/tables/grid-pqRst-U",
         "browserLink": "https://coda.io/d/_dAbCDeFGH#Vessels_tuVwxYz", "name": "Vessels",
         "parent": {"id": "canvas-hb01", "type": "page", "name": "Handbook"}}
ROW = {"id": "i-tuVwxYz", "type": "row", "href": f"{API}/docs/AbCDeFGH/tables/grid-pqRst-U/rows/i-tuVwxYz",
       "name": "MV Kestrel", "index": 0, "browserLink": "https://coda.io/d/_dAbCDeFGH#Vessels_tuVwxYz/r1",
       "createdAt": "2024-03-01T09:00:00.000Z", "updatedAt": "2024-03-02T09:00:00.000Z",
       "values": {"Name": "MV Kestrel", "Capacity": 320, "Routes": ["Harbour–Isle", "Isle–Point"], "Notes": ""}}


def listing(fake, path, pages, query=None):
    for n, chunk in enumerate(pages):
        q = {**(query or {}), "limit": "2", **({"pageToken": f"tok{n}"} if n else {})}
        more = {"nextPageToken": f"tok{n + 1}", "nextPageLink": f"{API}{path}?pageToken=tok{n + 1}"} \
            if n + 1 < len(pages) else {}
        fake.route("GET", path, query=q, headers=AUTH, reply={"items": list(chunk), "href": f"{API}{path}", **more})


def exports(api, downloads, texts, first_poll="inProgress"):
    for pid, text in texts.items():
        path = f"/docs/AbCDeFGH/pages/{pid}/export"
        api.route("POST", path, headers=AUTH, json={"outputFormat": "markdown"},
                  reply=(202, {}, {"id": f"req-{pid}", "status": "inProgress", "href": f"{API}{path}/req-{pid}"}))
        done = {"id": f"req-{pid}", "status": "complete", "href": f"{API}{path}/req-{pid}",
                "downloadLink": f"{DOWNLOADS}/exports/{pid}.md?sig=s1gn3d"}
        api.route("GET", f"{path}/req-{pid}", headers=AUTH, reply=[
            (200, {}, {"id": f"req-{pid}", "status": first_poll, "href": f"{API}{path}/req-{pid}"}), (200, {}, done)]
            if first_poll != "complete" else done)
        downloads.route("GET", f"/exports/{pid}.md", query={"sig": "s1gn3d"},
                        headers={"Authorization": None}, reply=(200, {"Content-Type": "text/markdown"}, text))


def workspace(vendor, pages=((STORMS, HANDBOOK), (ROTA, EMBED)), texts=MARKDOWN, rows=(ROW,), first_poll="inProgress"):
    api, downloads = vendor(API), vendor(DOWNLOADS)
    listing(api, "/docs", [[DOC]])
    listing(api, "/docs/AbCDeFGH/pages", pages)
    exports(api, downloads, texts, first_poll)
    listing(api, "/docs/AbCDeFGH/tables", [[TABLE]], {"tableTypes": "table"})
    listing(api, "/docs/AbCDeFGH/tables/grid-pqRst-U/rows", [list(rows)],
            {"useColumnNames": "true", "valueFormat": "simple"})
    return api, downloads


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(coda, "PAGE", 2)


def test_pages_exported_as_markdown_and_rows_with_their_columns(vendor):
    workspace(vendor)
    source = CodaSource(CodaSource.validate_config({}), {"api_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["page:AbCDeFGH/canvas-hb01", "page:AbCDeFGH/canvas-ro03", "page:AbCDeFGH/canvas-st02",
                                "row:AbCDeFGH/grid-pqRst-U/i-tuVwxYz"]
    storms = entities["page:AbCDeFGH/canvas-st02"]
    assert isinstance(storms, CodaPageEntity) and storms.text == MARKDOWN["canvas-st02"]
    assert [b.name for b in storms.breadcrumbs] == ["Harbour ops", "Handbook"]
    assert storms.web_url == STORMS["browserLink"] and storms.updated_at.isoformat() == "2024-05-03T09:00:00+00:00"
    row = entities["row:AbCDeFGH/grid-pqRst-U/i-tuVwxYz"]
    assert isinstance(row, CodaRowEntity) and row.values == ["Name: MV Kestrel", "Capacity: 320",
                                                             "Routes: Harbour–Isle, Isle–Point"]
    assert [b.name for b in row.breadcrumbs] == ["Harbour ops", "Vessels"]
    assert waits == [1, 1, 1]  # one poll per export found it still in progress
    assert source.is_full_listing() and source.next_cursor() == {"since": {"AbCDeFGH": STORMS["updatedAt"]}}


def test_a_failed_export_is_a_skipped_page_with_coda_s_reason(vendor):
    api = vendor(API)
    api.route("GET", "/docs/AbCDeFGH", headers=AUTH, reply=DOC)
    listing(api, "/docs/AbCDeFGH/pages", [[ROTA]])
    api.route("POST", "/docs/AbCDeFGH/pages/canvas-ro03/export", headers=AUTH, json={"outputFormat": "markdown"},
              reply=(202, {}, {"id": "req-1", "status": "inProgress", "href": "x"}))
    api.route("GET", "/docs/AbCDeFGH/pages/canvas-ro03/export/req-1", headers=AUTH,
              reply={"id": "req-1", "status": "failed", "href": "x", "error": "Page too large to export"})
    source = CodaSource(CodaSource.validate_config({"docs": ["AbCDeFGH"], "include_tables": False}),
                        {"api_token": TOKEN})
    [entity] = list(source.generate_entities({}))
    assert isinstance(entity, UnreadableEntity) and "Page too large to export" in entity.reason


def test_a_429_with_retry_after_is_waited_out(vendor):
    api = vendor(API)
    limited = api.route("GET", "/docs", query={"limit": "2"}, headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"statusCode": 429, "statusMessage": "Too Many Requests",
                                     "message": "Too Many Requests"}),
        (200, {}, {"items": [DOC], "href": f"{API}/docs"})])
    workspace(lambda base: api if base == API else vendor(base), first_poll="complete")
    source = CodaSource(CodaSource.validate_config({}), {"api_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and waits == [0]


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("GET", "/docs", query={"limit": "2"}, reply=(401, {}, {
        "statusCode": 401, "statusMessage": "Unauthorized", "message": "Unauthorized"}))
    connection = connect(make_collection(), "coda", {"api_token": "c0da-revoked-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_exports_only_the_changed_page(vendor, make_collection, client):
    api, downloads = workspace(vendor, first_poll="complete")
    connection = connect(make_collection(), "coda", {"api_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == ["page:AbCDeFGH/canvas-st02"]

    api.routes.clear()
    downloads.routes.clear()
    edited = {**ROTA, "updatedAt": "2024-05-04T09:00:00.000Z"}
    listing(api, "/docs", [[DOC]])
    listing(api, "/docs/AbCDeFGH/pages", [[HANDBOOK, edited]])  # the storm page was deleted
    exports(api, downloads, {"canvas-ro03": "The crew rota is now published every Thursday."}, first_poll="complete")
    listing(api, "/docs/AbCDeFGH/tables", [[TABLE]], {"tableTypes": "table"})
    listing(api, "/docs/AbCDeFGH/tables/grid-pqRst-U/rows", [[ROW]], {"useColumnNames": "true",
                                                                       "valueFormat": "simple"})
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"page:AbCDeFGH/canvas-hb01", "page:AbCDeFGH/canvas-ro03", "row:AbCDeFGH/grid-pqRst-U/i-tuVwxYz"}
    assert search_ids(client, "when is the crew rota published", limit=1) == ["page:AbCDeFGH/canvas-ro03"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"AbCDeFGH": "2024-05-04T09:00:00.000Z"}
