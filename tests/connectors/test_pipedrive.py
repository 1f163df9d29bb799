"""The pipedrive source against a fake company that answers only Pipedrive's documented v1
requests (`x-api-token` or a Bearer token; `start`/`limit` paging by `additional_data.pagination`;
`recents` with `since_timestamp` and `items`): deals, people, organizations and notes over two
pages, a 429 with Retry-After waited out, an expired OAuth token refreshed through the
`pipedrive` entry of oauth_providers.yml (basic client auth), a refused token marking the
connection `needs_reauth`, a sync found by search, then a recents run with an edit and a
deletion."""
from __future__ import annotations

import base64
import time
from urllib.parse import parse_qs

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import pipedrive
from connectors.sources.pipedrive import PipedriveDealEntity, PipedriveNoteEntity, PipedriveSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.pipedrive.com"
TOKEN = "7b1f2e3d4c5b6a7980a1b2c3d4e5f60718293a4b"
AUTH = {"x-api-token": TOKEN}
CONFIG = {"company_domain": "harbour"}

ORG = {"id": 3, "name": "Island Hotels", "address": "Quay 1, Harbourtown", "active_flag": True,
       "add_time": "2024-04-01 09:00:00", "update_time": "2024-04-01 09:00:00"}
PERSON = {"id": 5, "name": "Mia Berg", "org_id": {"name": "Island Hotels", "value": 3}, "org_name": "Island Hotels",
          "email": [{"label": "work", "value": "mia@islandhotels.example", "primary": True}],
          "phone": [{"label": "work", "value": "+46 123", "primary": True}], "active_flag": True,
          "add_time": "2024-04-02 09:00:00", "update_time": "2024-04-02 09:00:00"}
DEAL = {"id": 8, "title": "Group bookings for the summer season", "value": 12000, "currency": "EUR", "status": "open",
        "stage_id": 2, "org_id": {"name": "Island Hotels", "value": 3}, "org_name": "Island Hotels",
        "person_id": {"name": "Mia Berg", "value": 5}, "person_name": "Mia Berg", "owner_name": "Ana Lima",
        "deleted": False, "active": True, "add_time": "2024-04-03 09:00:00", "update_time": "2024-05-01 09:00:00"}
NOTE = {"id": 13, "content": "<p>Mia wants <b>40 cabins</b> every Friday in July.</p>", "deal_id": 8, "person_id": 5,
        "org_id": 3, "active_flag": True, "add_time": "2024-05-02 09:00:00", "update_time": "2024-05-02 09:00:00"}


def page(data, start, more):
    return {"success": True, "data": data, "additional_data": {"pagination": {
        "start": start, "limit": 1, "more_items_in_collection": more, **({"next_start": start + 1} if more else {})}}}


def company(fake, headers=AUTH):
    fake.route("GET", "/api/v1/deals", query={"start": "0", "limit": "1"}, headers=headers, reply=page([DEAL], 0, False))
    fake.route("GET", "/api/v1/persons", query={"start": "0", "limit": "1"}, headers=headers,
               reply=page([PERSON], 0, False))
    fake.route("GET", "/api/v1/organizations", query={"start": "0", "limit": "1"}, headers=headers,
               reply=page([ORG], 0, True))
    fake.route("GET", "/api/v1/organizations", query={"start": "1", "limit": "1"}, headers=headers,
               reply=page([{**ORG, "id": 4, "name": "Ferry Friends"}], 1, False))
    fake.route("GET", "/api/v1/notes", query={"start": "0", "limit": "1"}, headers=headers, reply=page([NOTE], 0, False))


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(pipedrive, "LIMIT", 1)


def test_every_kind_over_pages(vendor):
    company(vendor(SITE))
    source = PipedriveSource(PipedriveSource.validate_config({"company_domain": "https://harbour.pipedrive.com"}),
                             {"api_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["deal:8", "note:13", "organization:3", "organization:4", "person:5"]
    deal = entities["deal:8"]
    assert isinstance(deal, PipedriveDealEntity) and deal.web_url == f"{SITE}/deal/8"
    assert [b.name for b in deal.breadcrumbs] == ["Island Hotels"] and "value: 12000 EUR" in deal.summary
    note = entities["note:13"]
    assert isinstance(note, PipedriveNoteEntity) and note.summary == "Mia wants 40 cabins every Friday in July."
    assert note.web_url == f"{SITE}/deal/8"
    assert source.next_cursor() == {"since": {"recents": "2024-05-02 09:00:00"}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/v1/deals", query={"start": "0", "limit": "1"}, headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"success": False, "error": "Request over limit", "errorCode": 429}),
        (200, {}, page([DEAL], 0, False))])
    company(fake)
    source = PipedriveSource(PipedriveSource.validate_config(CONFIG), {"api_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 5 and limited.calls == 2 and len(waits) == 1


def test_an_expired_oauth_token_is_refreshed(vendor):
    oauth = vendor("https://oauth.pipedrive.com")
    basic = "Basic " + base64.b64encode(b"cid:csecret").decode()
    refresh = oauth.route("POST", "/oauth/token", headers={"Authorization": basic},
                          form={"grant_type": "refresh_token", "refresh_token": "r1"},
                          reply={"access_token": "pd_oauth_2", "token_type": "Bearer", "refresh_token": "r2",
                                 "scope": "deals:read", "expires_in": 3599, "api_domain": SITE})
    company(vendor(SITE), headers={"Authorization": "Bearer pd_oauth_2"})
    source = PipedriveSource(PipedriveSource.validate_config(CONFIG), {
        "access_token": "pd_oauth_1", "refresh_token": "r1", "expires_at": time.time() - 1,
        "client_id": "cid", "client_secret": "csecret"})
    assert len(list(source.generate_entities({}))) == 5 and refresh.calls == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", "/api/v1/deals", query={"start": "0", "limit": "1"},
               reply=(401, {}, {"success": False, "error": "unauthorized access", "errorCode": 401}))
    connection = connect(make_collection(), "pipedrive", {"api_token": "revoked-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_a_recents_run_applies_an_edit_and_a_deletion(vendor, make_collection, client):
    fake = vendor(SITE)
    company(fake)
    connection = connect(make_collection(), "pipedrive", {"api_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error
    assert search_ids(client, "how many cabins does Mia want in July", limit=1) == ["note:13"]

    fake.routes.clear()
    changes = [{"item": "deal", "id": 8, "data": {**DEAL, "status": "won", "update_time": "2024-05-04 09:00:00"}},
               {"item": "organization", "id": 4, "data": {**ORG, "id": 4, "name": "Ferry Friends",
                                                          "active_flag": False, "update_time": "2024-05-04 10:00:00"}}]
    fake.route("GET", "/api/v1/recents", query={"since_timestamp": "2024-05-02 09:00:00",
                                                "items": "deal,person,organization,note", "start": "0", "limit": "1"},
               headers=AUTH, reply=page(changes, 0, False))
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"deal:8", "note:13", "organization:3", "person:5"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {"recents": "2024-05-04 10:00:00"}}
