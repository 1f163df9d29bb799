"""The apollo source against a fake Apollo API that answers only its documented requests (the
`X-Api-Key` header; `POST /contacts/search` and `/accounts/search` with `page`, `per_page` and, for
contacts, `sort_by_field` and `sort_ascending`): accounts and contacts over two pages, a 429 with
Retry-After waited out, a refused key marking the connection `needs_reauth`, a sync found by
search, then an incremental run that walks contacts down to the mark and removes a deleted account."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import apollo
from connectors.sources.apollo import ApolloAccountEntity, ApolloContactEntity, ApolloSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.apollo.io/api/v1"
KEY = "apollo_Zm9vYmFyYmF6cXV4MDEyMzQ1Njc4OQ"
AUTH = {"X-Api-Key": KEY}
ORDER = {"sort_by_field": "contact_updated_at", "sort_ascending": False}


def account(aid, name, domain, industry):
    return {"id": aid, "name": name, "domain": domain, "website_url": f"https://{domain}", "industry": industry,
            "linkedin_url": None, "primary_phone": {"number": "+44 20 7946 0000"}, "owner_id": "u1",
            "created_at": "2024-02-01T09:00:00.000Z", "updated_at": "2024-04-01T09:00:00.000Z"}


def contact(cid, first, last, title, company, account_id, updated):
    return {"id": cid, "first_name": first, "last_name": last, "name": f"{first} {last}", "title": title,
            "organization_name": company, "account_id": account_id, "email": f"{first.lower()}@example.com",
            "email_status": "verified", "contact_stage_name": "Cold", "city": "Portsmouth", "country": "United Kingdom",
            "linkedin_url": None, "created_at": "2024-03-01T09:00:00.000Z", "updated_at": updated}


ISLE = account("acc-1", "Isle Ferries", "isleferries.example", "maritime")
BAKERY = account("acc-2", "Point Bakery", "pointbakery.example", "food & beverages")
MAYA = contact("con-1", "Maya", "Okafor", "Head of Fleet Operations", "Isle Ferries", "acc-1",
               "2024-05-03T09:00:00.000Z")
TOM = contact("con-2", "Tom", "Reyes", "Owner and master baker", "Point Bakery", "acc-2", "2024-05-02T09:00:00.000Z")
JONAS = contact("con-3", "Jonas", "Berg", "Logistics Manager", "Nordic Freight", None, "2024-05-01T09:00:00.000Z")


def search(fake, kind, pages, order=None):
    for n, page in enumerate(pages, start=1):
        fake.route("POST", f"/{kind}/search", headers=AUTH, json={"page": n, "per_page": 2, **(order or {})},
                   reply={kind: list(page), "breadcrumbs": [], "pagination": {
                       "page": n, "per_page": 2, "total_entries": sum(map(len, pages)), "total_pages": len(pages)}})


def crm(fake, accounts=((ISLE, BAKERY),), contacts=((MAYA, TOM), (JONAS,))):
    search(fake, "accounts", accounts)
    search(fake, "contacts", contacts, ORDER)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(apollo, "PAGE", 2)


def make(**config):
    return ApolloSource(ApolloSource.validate_config(config), {"api_key": KEY})


def test_accounts_and_contacts_over_two_pages(vendor):
    crm(vendor(API))
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["account:acc-1", "account:acc-2", "contact:con-1", "contact:con-2", "contact:con-3"]
    maya = entities["contact:con-1"]
    assert isinstance(maya, ApolloContactEntity) and "title: Head of Fleet Operations" in maya.details
    assert [b.name for b in maya.breadcrumbs] == ["Isle Ferries"] and maya.web_url.endswith("/#/contacts/con-1")
    isle = entities["account:acc-1"]
    assert isinstance(isle, ApolloAccountEntity) and isle.raw_source_fields["domain"] == "isleferries.example"
    cursor = source.next_cursor()
    assert source.is_full_listing() and cursor["since"] == {"contacts": "2024-05-03T09:00:00.000Z"}
    assert cursor["ids"] == {"accounts": ["account:acc-1", "account:acc-2"]}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("POST", "/contacts/search", headers=AUTH, json={"page": 1, "per_page": 2, **ORDER}, reply=[
        (429, {"Retry-After": "0"}, {"message": "The maximum number of api calls allowed for api/v1/contacts/search "
                                                "is 200 times per hour."}),
        (200, {}, {"contacts": [JONAS], "pagination": {"page": 1, "total_pages": 1}})])
    source = make(object_types=["contacts"])
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and waits == [0]


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("POST", "/accounts/search", json={"page": 1, "per_page": 2},
                      reply=(401, {}, {"error": "Invalid access credentials.", "error_code": "INVALID_API_KEY"}))
    connection = connect(make_collection(), "apollo", {"api_key": "revoked-key-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_walks_contacts_down_to_the_mark(vendor, make_collection, client):
    fake = vendor(API)
    crm(fake)
    connection = connect(make_collection(), "apollo", {"api_key": KEY})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error
    assert search_ids(client, "head of fleet operations", limit=1) == ["contact:con-1"]

    fake.routes.clear()
    promoted = {**TOM, "title": "Owner and head of deliveries", "updated_at": "2024-05-04T09:00:00.000Z"}
    crm(fake, accounts=((ISLE,),), contacts=((promoted, MAYA),))  # the walk stops at Maya; the bakery was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "account:acc-2" not in left and len(left) == 4
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"contacts": "2024-05-04T09:00:00.000Z"}
