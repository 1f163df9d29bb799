"""The attio source against a fake API that answers only Attio's documented v2 requests (Bearer
token; the records query body `limit`/`offset`; notes `limit`/`offset`): records over two pages,
an object the workspace lacks skipped, notes with their record as breadcrumb, a 429 with
Retry-After waited out, a refused token marking the connection `needs_reauth`, a sync found by
search, then a full listing that keeps unchanged records and removes a deleted one."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection
from connectors.sources import attio
from connectors.sources.attio import AttioNoteEntity, AttioRecordEntity, AttioSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.attio.com"
TOKEN = "attio-token-5f0c2e1d9a8b7c6d5e4f3a2b1c0d"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WS = "ws-1"


def company(rid, name, domain, description):
    return {"id": {"workspace_id": WS, "object_id": "obj-companies", "record_id": rid},
            "created_at": "2024-04-01T09:00:00.000000000Z",
            "web_url": f"https://app.attio.com/harbour/company/{rid}/overview",
            "values": {"record_id": [{"value": rid}], "name": [{"value": name, "attribute_type": "text"}],
                       "domains": [{"domain": domain, "root_domain": domain, "attribute_type": "domain"}],
                       "description": [{"value": description, "attribute_type": "text"}],
                       "categories": [{"option": {"id": {"option_id": "o1"}, "title": "Hospitality"},
                                       "attribute_type": "select"}]}}


def person(rid, full, email):
    return {"id": {"workspace_id": WS, "object_id": "obj-people", "record_id": rid},
            "created_at": "2024-04-02T09:00:00.000000000Z", "web_url": f"https://app.attio.com/harbour/person/{rid}",
            "values": {"name": [{"first_name": full.split()[0], "last_name": full.split()[1], "full_name": full,
                                 "attribute_type": "personal-name"}],
                       "email_addresses": [{"email_address": email, "attribute_type": "email-address"}],
                       "company": [{"target_object": "companies", "target_record_id": "c1",
                                    "attribute_type": "record-reference"}]}}


C1 = company("c1", "Island Hotels", "islandhotels.example", "Hotels on three islands, group bookings in summer.")
C2 = company("c2", "Ferry Friends", "ferryfriends.example", "A travel club for ferry enthusiasts.")
P1 = person("p1", "Mia Berg", "mia@islandhotels.example")
NOTE = {"id": {"workspace_id": WS, "note_id": "n1"}, "parent_object": "companies", "parent_record_id": "c1",
        "title": "Summer contract call", "content_plaintext": "Mia wants forty cabins every Friday in July.",
        "created_at": "2024-05-02T09:00:00.000000000Z", "created_by_actor": {"type": "workspace-member"}}


def workspace(fake, companies=(C1, C2), headers=AUTH):
    companies = list(companies)
    for offset in range(0, len(companies) + 1, 1):
        chunk = companies[offset:offset + 1]
        fake.route("POST", "/v2/objects/companies/records/query", headers=headers,
                   json={"limit": 1, "offset": offset}, reply={"data": chunk})
        if not chunk:
            break
    fake.route("POST", "/v2/objects/people/records/query", headers=headers, json={"limit": 1, "offset": 0},
               reply={"data": [P1]})
    fake.route("POST", "/v2/objects/people/records/query", headers=headers, json={"limit": 1, "offset": 1},
               reply={"data": []})
    fake.route("POST", "/v2/objects/deals/records/query", headers=headers, json={"limit": 1, "offset": 0},
               reply=(404, {}, {"status_code": 404, "type": "invalid_request_error", "code": "not_found",
                                "message": "Object with slug/ID \"deals\" not found."}))
    fake.route("GET", "/v2/notes", query={"limit": "50", "offset": "0"}, headers=headers, reply={"data": [NOTE]})


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(attio, "RECORD_LIMIT", 1)


def test_records_over_pages_a_missing_object_and_notes(vendor):
    workspace(vendor(API))
    source = AttioSource(AttioSource.validate_config({}), {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["note:n1", "record:c1", "record:c2", "record:p1"]
    hotels = entities["record:c1"]
    assert isinstance(hotels, AttioRecordEntity) and hotels.name == "Island Hotels"
    assert "categories: Hospitality" in hotels.attributes and "domains: islandhotels.example" in hotels.attributes
    assert hotels.web_url == "https://app.attio.com/harbour/company/c1/overview"
    assert entities["record:p1"].name == "Mia Berg"
    note = entities["note:n1"]
    assert isinstance(note, AttioNoteEntity) and [b.name for b in note.breadcrumbs] == ["Island Hotels"]
    assert source.is_full_listing()


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/v2/notes", query={"limit": "50", "offset": "0"}, headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"status_code": 429, "type": "rate_limit_error", "code": "rate_limit_exceeded"}),
        (200, {}, {"data": []})])
    workspace(fake)
    source = AttioSource(AttioSource.validate_config({}), {"access_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 3 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(API)
    fake.route("POST", "/v2/objects/companies/records/query", json={"limit": 1, "offset": 0},
               reply=(401, {}, {"status_code": 401, "type": "auth_error", "code": "unauthorized",
                                "message": "Invalid access token"}))
    connection = connect(make_collection(), "attio", {"access_token": "attio-revoked-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_a_full_listing_keeps_unchanged_and_removes_a_deleted_record(vendor, make_collection,
                                                                                     client):
    fake = vendor(API)
    workspace(fake)
    connection = connect(make_collection(), "attio", {"access_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "how many cabins does Mia want in July", limit=1) == ["note:n1"]

    fake.routes.clear()
    workspace(fake, companies=(C1,))  # Ferry Friends was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_kept, job.entities_deleted) == ("completed", 3, 1), job.error
    assert "record:c2" not in set(Entity.objects.filter(source_connection=connection).values_list("entity_id",
                                                                                                  flat=True))
