"""The outline source against a fake Outline that answers only its documented RPC calls (POST
`/api/<method>` with exactly the documented body fields and a Bearer key): collections, documents
over two pages with nested breadcrumbs, a 429 with Retry-After waited out, a refused key marking
the connection `needs_reauth`, a sync found by search, then an incremental run that stops at the
mark (keeping breadcrumbs from the cursor) and removes a trashed document."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import outline
from connectors.sources.outline import OutlineDocumentEntity, OutlineSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://app.getoutline.com"
KEY = "ol_api_Qm9va3MgYXJlIGdvb2QgZm9yIHlvdQ0123456789ab"
AUTH = {"Authorization": f"Bearer {KEY}"}
SORT = {"sort": "updatedAt", "direction": "DESC"}

COLLECTION = {"id": "c0a8f6e2-1f1e-4b7b-9d6a-1b2c3d4e5f60", "name": "Operations", "description": "How we run ferries",
              "url": "/collection/operations-Xc9Rz1", "createdAt": "2024-01-10T09:00:00.000Z",
              "updatedAt": "2024-04-01T09:00:00.000Z", "permission": "read_write", "sort": {"field": "index"}}


def doc(did, title, text, updated, parent=None):
    return {"id": did, "urlId": did[:10], "title": title, "text": text, "url": f"/doc/{title.lower().replace(' ', '-')}"
            f"-{did[:10]}", "collectionId": COLLECTION["id"], "parentDocumentId": parent,
            "createdAt": "2024-02-01T09:00:00.000Z", "updatedAt": updated, "publishedAt": "2024-02-01T09:00:00.000Z",
            "archivedAt": None, "deletedAt": None, "createdBy": {"id": "u1", "name": "Ana Lima"},
            "updatedBy": {"id": "u1", "name": "Ana Lima"}, "revision": 3}


HANDBOOK = doc("d1000000-0000-4000-8000-000000000001", "Handbook", "Everything about running the harbour.",
               "2024-05-01T09:00:00.000Z")
STORMS = doc("d2000000-0000-4000-8000-000000000002", "Storm procedure",
             "When winds exceed 50 knots all sailings are suspended and passengers rebooked.",
             "2024-05-03T09:00:00.000Z", parent=HANDBOOK["id"])
ROTA = doc("d3000000-0000-4000-8000-000000000003", "Crew rota", "The crew rota is published every Friday.",
           "2024-04-20T09:00:00.000Z", parent=HANDBOOK["id"])


def rpc(fake, method, data, offset=0, body=None):
    return fake.route("POST", f"/api/{method}", headers=AUTH, json={**(body or {}), "offset": offset, "limit": 2},
                      reply={"data": data, "pagination": {"offset": offset, "limit": 2}, "status": 200, "ok": True})


def kb(fake, pages=((STORMS, HANDBOOK), (ROTA,))):
    rpc(fake, "collections.list", [COLLECTION])
    for n, page in enumerate(pages):
        rpc(fake, "documents.list", list(page), offset=2 * n, body=SORT)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(outline, "PAGE", 2)


def test_collections_and_documents_over_two_pages(vendor):
    kb(vendor(SITE))
    source = OutlineSource(OutlineSource.validate_config({}), {"api_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == [f"collection:{COLLECTION['id']}"] + sorted(
        f"document:{d['id']}" for d in (HANDBOOK, STORMS, ROTA))
    storms = entities[f"document:{STORMS['id']}"]
    assert isinstance(storms, OutlineDocumentEntity) and storms.web_url == f"{SITE}/doc/storm-procedure-d2000000-0"
    assert [b.name for b in storms.breadcrumbs] == ["Operations", "Handbook"]
    assert source.is_full_listing() and source.next_cursor()["since"] == {"documents": STORMS["updatedAt"]}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("POST", "/api/collections.list", headers=AUTH, json={"offset": 0, "limit": 2}, reply=[
        (429, {"Retry-After": "0"}, {"ok": False, "error": "rate_limit_exceeded", "status": 429}),
        (200, {}, {"data": [COLLECTION], "ok": True})])
    kb(fake)
    source = OutlineSource(OutlineSource.validate_config({}), {"api_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and len(waits) == 1


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("POST", "/api/collections.list", json={"offset": 0, "limit": 2},
               reply=(401, {}, {"ok": False, "error": "authentication_required", "status": 401,
                                "message": "Authentication error"}))
    connection = connect(make_collection(), "outline", {"api_key": "ol_api_revoked_0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_an_incremental_run_removes_a_trashed_document(vendor, make_collection, client):
    fake = vendor(SITE)
    kb(fake)
    connection = connect(make_collection(), "outline", {"api_key": KEY})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == [f"document:{STORMS['id']}"]

    fake.routes.clear()
    edited = {**ROTA, "text": "The crew rota is now published every Thursday.", "updatedAt": "2024-05-04T09:00:00.000Z"}
    kb(fake, pages=((edited, HANDBOOK),))  # the walk stops at HANDBOOK, older than the mark
    rpc(fake, "documents.archived", [])
    rpc(fake, "documents.deleted", [{**STORMS, "deletedAt": "2024-05-04T08:00:00.000Z"}])
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert f"document:{STORMS['id']}" not in left and len(left) == 3
    rota = Entity.objects.get(source_connection=connection, entity_id=f"document:{ROTA['id']}")
    assert [b["name"] for b in rota.breadcrumbs] == ["Operations", "Handbook"]  # the parent's name from the cursor
    assert search_ids(client, "when is the crew rota published", limit=1) == [f"document:{ROTA['id']}"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"documents": "2024-05-04T09:00:00.000Z"}
