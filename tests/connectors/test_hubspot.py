"""The HubSpot source against HubSpot's documented CRM v3 response shapes (fixtures/hubspot), served by
`responses`: `after` paging, entity fields, a 429 retried, an expired OAuth token refreshed, an
incremental search run that reports archived objects deleted, and a sync found by search."""
from __future__ import annotations

import json

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from airweave.crypto import decrypt_json
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.services import source_connection_create
from connectors.sources.hubspot import (HubSpotCompanyEntity, HubSpotContactEntity, HubSpotDealEntity,
                                        HubSpotNoteEntity, HubSpotSource, HubSpotTicketEntity)
from tests.connectors.saas_cases import connect, fixture, query, run_sync, search_ids

API = "https://api.hubapi.com"
TYPES = ("contacts", "companies", "deals", "tickets", "notes")


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("hubspot", name)


def add_full_listing(rsps, contacts_page2=None):
    rsps.add("GET", f"{API}/account-info/v3/details", json=f("account_details"))
    rsps.add("GET", f"{API}/crm/v3/objects/contacts", match=[query(absent=("after",), archived="false", limit=100)],
             json=f("contacts_page1"))
    rsps.add("GET", f"{API}/crm/v3/objects/contacts", match=[query(after="153", archived="false")],
             json=contacts_page2 or f("contacts_page2"))
    for name in TYPES[1:]:
        rsps.add("GET", f"{API}/crm/v3/objects/{name}", match=[query(archived="false")], json=f(name))


def make(credentials=None, **config):
    return HubSpotSource(HubSpotSource.validate_config(config), credentials or {"private_app_token": "pat-na1-x"})


def test_a_full_listing_pages_through_every_object_type(rsps):
    add_full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert sorted(entities) == ["company:9001", "contact:151", "contact:152", "contact:153", "deal:5150",
                                "note:31000", "ticket:880"]
    assert rsps.calls[1].request.headers["Authorization"] == "Bearer pat-na1-x"
    assert "lastmodifieddate" in rsps.calls[1].request.params["properties"].split(",")
    maria = entities["contact:151"]
    assert isinstance(maria, HubSpotContactEntity) and maria.name == "Maria Anders"
    assert maria.web_url == "https://app.hubspot.com/contacts/44123456/record/0-1/151"
    assert [b.as_dict() for b in maria.breadcrumbs] == [
        {"entity_id": "44123456", "name": "HubSpot 44123456", "entity_type": "HubSpotAccount"},
        {"entity_id": "company:9001", "name": "Northwind Traders", "entity_type": "HubSpotCompanyEntity"}]
    assert maria.created_at.isoformat() == "2024-03-04T10:12:44.201000+00:00"
    assert maria.raw_source_fields == {"hubspot_id": "151", "object_type": "contacts", "owner_id": "75310",
                                       "email": "maria.anders@northwind.example", "lifecycle_stage": "opportunity",
                                       "lead_status": "IN_PROGRESS", "company_id": "9001"}
    assert "Job title: Head of Procurement" in maria.textual_representation()
    assert isinstance(entities["company:9001"], HubSpotCompanyEntity)
    deal = entities["deal:5150"]
    assert isinstance(deal, HubSpotDealEntity) and deal.amount == 48000.0 and deal.stage == "contractsent"
    assert deal.web_url.endswith("/record/0-3/5150") and "SOC 2 report" in deal.textual_representation()
    assert isinstance(entities["ticket:880"], HubSpotTicketEntity)
    assert entities["ticket:880"].raw_source_fields["priority"] == "HIGH"
    note = entities["note:31000"]
    assert isinstance(note, HubSpotNoteEntity) and note.web_url == ""
    assert note.name == "Note: Call with Maria: budget approved for Q3."
    assert "- Send the SOC 2 report" in note.body and "<" not in note.body
    assert source.is_full_listing() and list(source.deleted_entity_ids()) == []
    assert source.next_cursor()["since"]["contacts"] == "2024-05-06T12:00:00.000Z"


def test_a_429_is_retried_after_the_servers_wait(rsps):
    rsps.add("GET", f"{API}/account-info/v3/details", json=f("account_details"))
    limited = rsps.add("GET", f"{API}/crm/v3/objects/deals", status=429, headers={"Retry-After": "0"},
                       json=f("rate_limited"))
    rsps.add("GET", f"{API}/crm/v3/objects/deals", json=f("deals"))
    entities = list(make(object_types=["deals"]).generate_entities({}))
    assert [e.entity_id for e in entities] == ["deal:5150"] and limited.call_count == 1


def test_an_expired_oauth_token_is_refreshed_and_saved(rsps, make_collection, monkeypatch):
    monkeypatch.setenv("AIRWEAVE_OAUTH_HUBSPOT_CLIENT_ID", "app-client")
    monkeypatch.setenv("AIRWEAVE_OAUTH_HUBSPOT_CLIENT_SECRET", "app-secret")
    connection = source_connection_create(
        collection=make_collection(), short_name="hubspot", config={"object_types": ["tickets"]},
        authentication={"access_token": "old-token", "refresh_token": "na1-6d1f-4b0c-8b3e-refresh"},
        sync_immediately=False)
    rsps.add("GET", f"{API}/account-info/v3/details", json=f("account_details"))
    rsps.add("GET", f"{API}/crm/v3/objects/tickets", status=401, json=f("expired_token"),
             match=[responses.matchers.header_matcher({"Authorization": "Bearer old-token"})])
    token = rsps.add("POST", f"{API}/oauth/v1/token", json=f("token_refreshed"))
    fresh = f("token_refreshed")["access_token"]
    rsps.add("GET", f"{API}/crm/v3/objects/tickets", json=f("tickets"),
             match=[responses.matchers.header_matcher({"Authorization": f"Bearer {fresh}"})])

    entities = list(source_for_connection(connection).generate_entities({}))

    assert [e.entity_id for e in entities] == ["ticket:880"]
    form = token.calls[0].request.body
    assert "grant_type=refresh_token" in form and "client_id=app-client" in form
    connection.refresh_from_db()
    assert decrypt_json(connection.encrypted_credentials)["access_token"] == fresh


def test_missing_scopes_ask_the_user_to_grant_them(rsps):
    rsps.add("GET", f"{API}/account-info/v3/details", json=f("account_details"))
    rsps.add("GET", f"{API}/crm/v3/objects/tickets", status=403, json=f("missing_scopes"))
    with pytest.raises(AuthFailure) as info:
        list(make(object_types=["tickets"]).generate_entities({}))
    assert info.value.category == "insufficient_scope" and "tickets" in str(info.value)


def test_sync_search_then_an_incremental_run_updates_and_deletes(rsps, make_collection, client):
    connection = connect(make_collection(), "hubspot", credentials={"private_app_token": "pat-na1-x"})
    add_full_listing(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 7)
    assert search_ids(client, "SOC 2 report for the Northwind cold-chain rollout")[0] in ("deal:5150", "note:31000")
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data["since"]
    assert cursor["contacts"] == "2024-05-06T12:00:00.000Z" and cursor["notes"] == "2024-05-02T08:00:00.000Z"

    rsps.reset()
    rsps.add("GET", f"{API}/account-info/v3/details", json=f("account_details"))
    search = rsps.add("POST", f"{API}/crm/v3/objects/contacts/search", json=f("search_contacts"))
    for name in TYPES[1:]:
        rsps.add("POST", f"{API}/crm/v3/objects/{name}/search", json={"total": 0, "results": []})
        rsps.add("GET", f"{API}/crm/v3/objects/{name}", match=[query(archived="true")], json={"results": []})
    rsps.add("GET", f"{API}/crm/v3/objects/contacts", match=[query(archived="true")], json=f("contacts_archived"))
    job = run_sync(connection)

    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    sent = json.loads(search.calls[0].request.body)
    assert sent["filterGroups"][0]["filters"] == [{"propertyName": "lastmodifieddate", "operator": "GTE",
                                                   "value": "1714996800000"}]  # 2024-05-06T12:00:00Z
    assert sent["sorts"] == [{"propertyName": "lastmodifieddate", "direction": "ASCENDING"}]
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "contact:152" not in ids and "contact:151" in ids and len(ids) == 6
    assert search_ids(client, "Maria Anders VP Procurement", limit=1) == ["contact:151"]


def test_the_search_restarts_from_the_newest_mark_past_ten_thousand_results(rsps, monkeypatch):
    import connectors.sources.hubspot as hubspot
    monkeypatch.setattr(hubspot, "SEARCH_WINDOW", 2)  # the window, made small
    rsps.add("GET", f"{API}/account-info/v3/details", json=f("account_details"))
    page = f("contacts_page1")
    first = rsps.add("POST", f"{API}/crm/v3/objects/contacts/search",
                     json={"total": 3, "results": page["results"], "paging": {"next": {"after": "2"}}})
    second = rsps.add("POST", f"{API}/crm/v3/objects/contacts/search",
                      json={"total": 1, "results": f("contacts_page2")["results"]})
    rsps.add("GET", f"{API}/crm/v3/objects/contacts", match=[query(archived="true")], json={"results": []})
    source = make(object_types=["contacts"])
    entities = list(source.generate_entities({"since": {"contacts": "2024-01-01T00:00:00.000Z"}}))
    assert [e.entity_id for e in entities] == ["contact:151", "contact:152", "contact:153"]
    restarted = json.loads(second.calls[0].request.body)
    assert "after" not in restarted  # a new query from the newest mark seen (2024-05-02T08:01:13.411Z)
    assert restarted["filterGroups"][0]["filters"][0]["value"] == "1714636873411"
    assert first.call_count == 1 and not source.is_full_listing()


@pytest.mark.parametrize("types", [[], ["contacts", "emails"]])
def test_object_types_are_checked(types):
    with pytest.raises(ValueError, match="object_types"):
        HubSpotSource.validate_config({"object_types": types})
