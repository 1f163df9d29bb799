"""The productboard source against a fake Productboard API that answers only its documented requests
(Bearer token and `X-Version: 1`; features paged by `links.next`; notes by `pageCursor`, `pageLimit`
and `updatedFrom`): features over two pages under their product and component, notes, a 429 with
Retry-After waited out, a refused token marking the connection `needs_reauth`, a sync found by
search, then an incremental run that asks for the notes updated since the mark and removes a
deleted feature."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import productboard
from connectors.sources.productboard import ProductboardFeatureEntity, ProductboardNoteEntity, ProductboardSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.productboard.com"
TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.pb-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}", "X-Version": "1"}
PRODUCT = {"id": "p-1", "name": "Booking app", "description": "", "links": {"self": f"{API}/products/p-1"}}
COMPONENT = {"id": "c-1", "name": "Checkout", "parent": {"product": {"id": "p-1", "links": {"self": "x"}}},
             "links": {"self": f"{API}/components/c-1"}}


def feature(fid, name, description, parent, updated="2024-05-01T09:00:00Z"):
    return {"id": fid, "name": name, "description": f"<p>{description}</p>", "type": "feature",
            "status": {"id": "s-2", "name": "In progress", "completed": False}, "parent": parent, "archived": False,
            "owner": {"email": "ana@harbour.example"}, "timeframe": {"startDate": "none", "endDate": "none"},
            "links": {"self": f"{API}/features/{fid}", "html": f"https://harbour.productboard.com/all-features/{fid}"},
            "createdAt": "2024-03-01T09:00:00Z", "updatedAt": updated}


SPLIT = feature("f-1", "Split payments", "Let two passengers share one booking's payment.",
                {"component": {"id": "c-1", "links": {"self": "x"}}})
WALLET = feature("f-2", "Wallet passes", "Boarding passes in the phone wallet.",
                 {"component": {"id": "c-1", "links": {"self": "x"}}})
QR = feature("f-3", "QR retries", "Retry a rejected QR code at the gate.", {"feature": {"id": "f-2",
                                                                                       "links": {"self": "x"}}})
NOTE = {"id": "n-1", "title": "Gate rejects tickets", "content": "<p>Three passengers were refused at pier 2 because "
        "the gate could not read their QR code in the rain.</p>", "displayUrl": "https://harbour.productboard.com/"
        "inbox/notes/n-1", "externalDisplayUrl": None, "state": "unprocessed", "tags": ["gates"],
        "company": {"id": "co-1", "name": "Isle Ferries"}, "owner": {"name": "Ana Lima", "email": "ana@harbour.example"},
        "features": [{"id": "f-3", "type": "subfeature"}], "createdAt": "2024-05-02T09:00:00Z",
        "updatedAt": "2024-05-02T10:00:00Z"}


def workspace(fake, features=((SPLIT, WALLET), (QR,)), notes=(NOTE,), since=None):
    fake.route("GET", "/products", headers=AUTH, reply={"data": [PRODUCT], "links": {"next": None}})
    fake.route("GET", "/components", headers=AUTH, reply={"data": [COMPONENT], "links": {"next": None}})
    pages = list(features)
    for n, page in enumerate(pages):
        nxt = f"{API}/features?pageCursor=fc{n + 1}" if n + 1 < len(pages) else None
        fake.route("GET", "/features", query={"pageCursor": f"fc{n}"} if n else {}, headers=AUTH,
                   reply={"data": list(page), "links": {"next": nxt}})
    fake.route("GET", "/notes", query={"pageLimit": "2", **({"updatedFrom": since} if since else {})}, headers=AUTH,
               reply={"data": list(notes), "pageCursor": None, "totalResults": len(notes)})


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(productboard, "PAGE", 2)


def test_features_over_two_pages_under_their_product_and_notes(vendor):
    workspace(vendor(API))
    source = ProductboardSource(ProductboardSource.validate_config({}), {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["feature:f-1", "feature:f-2", "feature:f-3", "note:n-1"]
    qr = entities["feature:f-3"]
    assert isinstance(qr, ProductboardFeatureEntity) and qr.description == "Retry a rejected QR code at the gate."
    assert [b.name for b in qr.breadcrumbs] == ["Booking app", "Checkout", "Wallet passes"]
    assert qr.web_url.endswith("/all-features/f-3") and "status: In progress" in qr.details
    note = entities["note:n-1"]
    assert isinstance(note, ProductboardNoteEntity) and "company: Isle Ferries" in note.details
    assert note.tags == ["gates"] and note.web_url.endswith("/notes/n-1")
    cursor = source.next_cursor()
    assert source.is_full_listing() and cursor["since"] == {"notes": "2024-05-02T10:00:00Z"}
    assert cursor["ids"] == {"features": ["feature:f-1", "feature:f-2", "feature:f-3"]}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/products", headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"errors": [{"code": "rate_limit", "title": "Too Many Requests"}]}),
        (200, {}, {"data": [PRODUCT], "links": {"next": None}})])
    workspace(fake)
    source = ProductboardSource(ProductboardSource.validate_config({}), {"access_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and waits == [0]


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("GET", "/products", reply=(401, {}, {"ok": False, "errors": {
        "source": [], "message": "Unauthorized"}}))
    connection = connect(make_collection(), "productboard", {"access_token": "revoked-token-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_reads_changed_notes_and_removes_a_deleted_feature(
        vendor, make_collection, client):
    fake = vendor(API)
    workspace(fake)
    connection = connect(make_collection(), "productboard", {"access_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "passengers refused at the gate in the rain", limit=1) == ["note:n-1"]

    fake.routes.clear()
    edited = {**NOTE, "content": "<p>Fixed with a brighter scanner at pier 2.</p>", "updatedAt": "2024-05-04T09:00:00Z"}
    workspace(fake, features=((WALLET, QR),), notes=(edited,), since="2024-05-02T10:00:00Z")  # split payments deleted
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"feature:f-2", "feature:f-3", "note:n-1"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"notes": "2024-05-04T09:00:00Z"}
