"""The zoho_crm source against a fake Zoho CRM API that answers only its documented requests
(`Authorization: Zoho-oauthtoken`; `fields`, `per_page`, `sort_by`, `sort_order`, `page_token`;
`If-Modified-Since` on incremental runs; the deleted-records list): leads over two token pages and
deals with their lookups by name, a 429 waited out, an expired token refreshed through Zoho's
accounts server, a refused token marking the connection `needs_reauth`, a sync found by search,
then an incremental run that sends the mark, is answered 304 for an unchanged module and removes a
deleted lead."""
from __future__ import annotations

import time

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.services import source_connection_create
from connectors.sources import zoho_crm
from connectors.sources.zoho_crm import MODULES, ZohoCrmSource, ZohoRecordEntity
from tests.connectors.saas_cases import run_sync, search_ids

API = "https://www.zohoapis.eu"
TOKEN = "1000.3f9c2b7e1d0a4c8e9f6a5b3c2d1e0f9a.7b2c4d6e8f0a1b3c5d7e9f1a3b5c7d9e"
AUTH = {"Authorization": f"Zoho-oauthtoken {TOKEN}"}
CONFIG = {"data_center": "eu", "object_types": ["Leads", "Deals"]}
ORG = "20081234567"
OWNER = {"name": "Ana Lima", "id": "554023000000235011", "email": "ana@harbour.example"}


def lead(rid, first, last, company, description, modified):
    return {"id": rid, "Full_Name": f"{first} {last}", "First_Name": first, "Last_Name": last, "Company": company,
            "Email": f"{first.lower()}@{company.lower().replace(' ', '')}.example", "Phone": None, "Title": "Buyer",
            "Lead_Status": "Contacted", "Lead_Source": "Trade Show", "Industry": "Logistics",
            "Description": description, "Owner": OWNER, "Created_Time": "2024-02-01T09:00:00+01:00",
            "Modified_Time": modified, "$approval_state": "approved"}


L1 = lead("554023000000501001", "Jonas", "Berg", "Nordic Freight", "Wants reefer containers for salmon exports.",
          "2024-05-01T09:00:00+01:00")
L2 = lead("554023000000501002", "Maya", "Okafor", "Isle Ferries", "Asked about a fleet of electric ferries.",
          "2024-05-03T09:00:00+01:00")
L3 = lead("554023000000501003", "Tom", "Reyes", "Point Bakery", "Delivers bread to the island twice a week.",
          "2024-05-02T09:00:00+01:00")
DEAL = {"id": "554023000000601001", "Deal_Name": "Isle Ferries fleet", "Stage": "Negotiation/Review",
        "Amount": 2400000, "Closing_Date": "2024-07-01", "Account_Name": {"name": "Isle Ferries",
                                                                          "id": "554023000000401001"},
        "Contact_Name": None, "Probability": 60, "Type": "New Business", "Next_Step": "Send the revised quote",
        "Description": "Three electric ferries with charging at both piers.", "Owner": OWNER,
        "Created_Time": "2024-04-01T09:00:00+01:00", "Modified_Time": "2024-05-02T11:00:00+01:00"}


def listing(fake, module, pages, since=None):
    base = {"fields": MODULES[module][1], "per_page": "2", "sort_by": "Modified_Time", "sort_order": "asc"}
    headers = {**AUTH, "If-Modified-Since": since}
    for n, page in enumerate(pages):
        more = n + 1 < len(pages)
        fake.route("GET", f"/crm/v8/{module}", query={**base, **({"page_token": f"tok{n}"} if n else {})},
                   headers=headers, reply={"data": list(page), "info": {
                       "per_page": 2, "count": len(page), "page": n + 1, "sort_by": "Modified_Time",
                       "sort_order": "asc", "more_records": more, "next_page_token": f"tok{n + 1}" if more else None,
                       "previous_page_token": None, "page_token_expiry": "2024-05-05T09:00:00+01:00"}})


def crm(fake, headers=AUTH):
    fake.route("GET", "/crm/v8/users", query={"type": "CurrentUser"}, headers=headers, reply={"users": [
        {"id": "554023000000235011", "full_name": "Ana Lima", "org_id": ORG, "role": {"name": "CEO"}}]})


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(zoho_crm, "PAGE", 2)


def test_leads_over_two_token_pages_and_deals(vendor):
    fake = vendor(API)
    crm(fake)
    listing(fake, "Leads", [[L1, L3], [L2]])
    listing(fake, "Deals", [[DEAL]])
    source = ZohoCrmSource(ZohoCrmSource.validate_config(CONFIG), {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert len(entities) == 4
    maya = entities["Leads:554023000000501002"]
    assert isinstance(maya, ZohoRecordEntity) and maya.name == "Maya Okafor"
    assert "Company: Isle Ferries" in maya.fields and "Owner: Ana Lima" in maya.fields
    assert not any(f.startswith(("Phone", "$")) for f in maya.fields)
    assert maya.web_url == f"https://crm.zoho.eu/crm/org{ORG}/tab/Leads/554023000000501002"
    assert [b.name for b in maya.breadcrumbs] == ["Leads"]
    deal = entities["Deals:554023000000601001"]
    assert "Account Name: Isle Ferries" in deal.fields and deal.raw_source_fields["Stage"] == "Negotiation/Review"
    assert source.is_full_listing() and source.next_cursor()["since"] == {
        "Leads": "2024-05-03T09:00:00+01:00", "Deals": "2024-05-02T11:00:00+01:00"}


def test_a_429_is_waited_out_and_an_expired_token_refreshed(vendor, monkeypatch):
    monkeypatch.setenv("AIRWEAVE_OAUTH_ZOHO_CLIENT_ID", "1000.CLIENT")
    monkeypatch.setenv("AIRWEAVE_OAUTH_ZOHO_CLIENT_SECRET", "zoho-client-secret")
    accounts = vendor("https://accounts.zoho.com")
    refresh = accounts.route("POST", "/oauth/v2/token", form={"grant_type": "refresh_token", "refresh_token": "1000.r1"},
                             reply={"access_token": TOKEN, "api_domain": API, "token_type": "Bearer",
                                    "expires_in": 3600})
    fake = vendor(API)
    limited = fake.route("GET", "/crm/v8/users", query={"type": "CurrentUser"}, headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"code": "TOO_MANY_REQUESTS", "details": {}, "message": "too many requests",
                                     "status": "error"}),
        (200, {}, {"users": [{"org_id": ORG}]})])
    listing(fake, "Deals", [[DEAL]])
    source = ZohoCrmSource(ZohoCrmSource.validate_config({**CONFIG, "object_types": ["Deals"]}), {
        "access_token": "1000.expired", "refresh_token": "1000.r1", "expires_at": time.time() - 1})
    waits = []
    source.http.sleep = waits.append
    assert [e.entity_id for e in source.generate_entities({})] == ["Deals:554023000000601001"]
    assert refresh.calls == 1 and limited.calls == 2 and waits == [0]


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("GET", "/crm/v8/users", query={"type": "CurrentUser"}, reply=(401, {}, {
        "code": "INVALID_TOKEN", "details": {}, "message": "invalid oauth token", "status": "error"}))
    connection = source_connection_create(collection=make_collection(), short_name="zoho_crm", config=CONFIG,
                                          authentication={"access_token": "1000.revoked0123456789"},
                                          sync_immediately=False)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_sends_the_mark_and_removes_a_deleted_lead(vendor, make_collection,
                                                                                        client):
    fake = vendor(API)
    crm(fake)
    listing(fake, "Leads", [[L1, L3], [L2]])
    listing(fake, "Deals", [[DEAL]])
    connection = source_connection_create(collection=make_collection(), short_name="zoho_crm", config=CONFIG,
                                          authentication={"access_token": TOKEN}, sync_immediately=False)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "who wants containers for fish exports", limit=1) == ["Leads:554023000000501001"]

    fake.routes.clear()
    crm(fake)
    edited = {**L3, "Description": "Now delivers bread to the island every morning.",
              "Modified_Time": "2024-05-04T09:00:00+01:00"}
    listing(fake, "Leads", [[edited]], since="2024-05-03T09:00:00+01:00")
    fake.route("GET", "/crm/v8/Deals", query={"fields": MODULES["Deals"][1], "per_page": "2",
                                              "sort_by": "Modified_Time", "sort_order": "asc"},
               headers={**AUTH, "If-Modified-Since": "2024-05-02T11:00:00+01:00"}, reply=(304, {}, ""))
    fake.route("GET", "/crm/v8/Leads/deleted", query={"type": "all", "page": "1", "per_page": "2"},
               headers={**AUTH, "If-Modified-Since": "2024-05-03T09:00:00+01:00"},
               reply={"data": [{"id": L1["id"], "display_name": "Jonas Berg", "type": "recycle",
                                "deleted_by": {"name": "Ana Lima", "id": OWNER["id"]},
                                "deleted_time": "2024-05-04T08:00:00+01:00"}],
                      "info": {"per_page": 2, "count": 1, "page": 1, "more_records": False}})
    fake.route("GET", "/crm/v8/Deals/deleted", query={"type": "all", "page": "1", "per_page": "2"},
               headers={**AUTH, "If-Modified-Since": "2024-05-02T11:00:00+01:00"}, reply=(204, {}, ""))
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "Leads:554023000000501001" not in left and len(left) == 3
    assert search_ids(client, "who delivers bread every morning", limit=1) == ["Leads:554023000000501003"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"]["Leads"] == "2024-05-04T09:00:00+01:00"
