"""The Airtable source against Web API v0 responses shaped as Airtable documents them
(tests/connectors/fixtures/airtable), served by `responses` at the transport level."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import responses

from airweave.collections.models import Entity, SourceConnection
from airweave.crypto import decrypt_json
from connectors.base import SourceError
from connectors.services import source_connection_create
from connectors.sources.airtable import AirtableRecordEntity, AirtableSource
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures" / "airtable"
API = "https://api.airtable.com/v0"
ROADMAP, CONTRACTS = "appLkNDICXNqxSDhG", "appSW9R5uCNmRmfl6"
FEATURES = f"{API}/{ROADMAP}/tbltp8DGLhqbUmjK1"
OFFLINE = f"{ROADMAP}/tbltp8DGLhqbUmjK1/rec560UJdUtocSouk"
AUDIT = f"{ROADMAP}/tbltp8DGLhqbUmjK1/recZ9mW4nB2cV7xL1"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def serve_airtable(rsps, *, page2=None):
    rsps.add("GET", f"{API}/meta/bases", json=fixture("bases.json"))
    rsps.add("GET", f"{API}/meta/bases/{ROADMAP}/tables", json=fixture("tables_roadmap.json"))
    rsps.add("GET", f"{API}/meta/bases/{CONTRACTS}/tables", json=fixture("tables_contracts.json"))
    page1 = fixture("features_page1.json")
    rsps.add("GET", FEATURES, json=page2 or fixture("features_page2.json"),
             match=[responses.matchers.query_param_matcher({"offset": page1["offset"]}, strict_match=False)])
    rsps.add("GET", FEATURES, json=page1, match=[responses.matchers.query_param_matcher({"pageSize": "100"})])
    rsps.add("GET", f"{API}/{CONTRACTS}/tblk1LD0MvFEsNLQ8", json=fixture("contracts.json"))


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def make(**config):
    return AirtableSource(AirtableSource.validate_config(config), {"personal_access_token": "patXYZ.secret"})


def test_bases_tables_and_records_over_two_pages(rsps):
    serve_airtable(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert len(entities) == 4 and all(isinstance(e, AirtableRecordEntity) for e in entities.values())
    offline = entities[OFFLINE]
    assert offline.name == "Offline mode for the mobile app"
    assert [b.as_dict() for b in offline.breadcrumbs] == [
        {"entity_id": ROADMAP, "name": "Product roadmap", "entity_type": "AirtableBase"},
        {"entity_id": "tbltp8DGLhqbUmjK1", "name": "Features", "entity_type": "AirtableTable"}]
    assert offline.web_url == f"https://airtable.com/{OFFLINE}"
    assert offline.created_at.isoformat() == "2024-01-08T10:05:00+00:00"
    assert offline.text.splitlines() == [
        "Feature: Offline mode for the mobile app", "Status: Planned",
        "Notes: Sync the last 30 days of documents so field engineers can work without a connection.",
        "Owner: Alice Martin <alice@example.com>", "Customers: recCust000000001, recCust000000002",
        "Mockups: offline-mode.png", "Effort (days): 34"]
    assert offline.raw_source_fields["Status"] == "Planned" and offline.raw_source_fields["Effort (days)"] == 34
    contract = entities[f"{CONTRACTS}/tblk1LD0MvFEsNLQ8/recCust000000001"]
    assert "Auto-renews: yes" in contract.textual_representation()
    assert source.is_full_listing() and source.next_cursor() == {}
    assert all(c.request.headers["Authorization"] == "Bearer patXYZ.secret" for c in rsps.calls)


def test_429_is_retried_and_base_ids_are_checked(rsps):
    rsps.add("GET", f"{API}/meta/bases", status=429, headers={"Retry-After": "0"},
             json={"errors": [{"error": "RATE_LIMIT_REACHED", "message": "Rate limit exceeded. Please try again later"}]})
    serve_airtable(rsps)
    entities = list(make(base_ids=[CONTRACTS]).generate_entities({}))
    assert [e.entity_id for e in entities] == [f"{CONTRACTS}/tblk1LD0MvFEsNLQ8/recCust000000001"]
    with pytest.raises(SourceError) as info:
        list(make(base_ids=["appMissing0000000"]).generate_entities({}))
    assert info.value.category == "config_error"
    with pytest.raises(ValueError, match="base ids like"):
        AirtableSource.validate_config({"base_ids": ["Product roadmap"]})


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    rsps.add("GET", f"{API}/meta/bases", status=401,
             json={"error": {"type": "AUTHENTICATION_REQUIRED", "message": "Authentication required"}})
    connection = source_connection_create(collection=make_collection(), short_name="airtable", sync_immediately=False,
                                          authentication={"credentials": {"personal_access_token": "patRevoked"}})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    connection.refresh_from_db()
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_oauth_tokens_rotate_and_are_persisted(rsps, make_collection):
    rsps.add("GET", f"{API}/meta/bases", status=401, match=[responses.matchers.header_matcher(
        {"Authorization": "Bearer oaa.expired"})], json={"error": {"type": "AUTHENTICATION_REQUIRED"}})
    serve_airtable(rsps)
    token = rsps.add("POST", "https://airtable.com/oauth2/v1/token", json={
        "access_token": "oaa.fresh", "refresh_token": "oar.rotated", "token_type": "Bearer", "expires_in": 3600,
        "refresh_expires_in": 5184000, "scope": "data.records:read schema.bases:read"})
    connection = source_connection_create(
        collection=make_collection(), short_name="airtable", sync_immediately=False,
        authentication={"access_token": "oaa.expired", "refresh_token": "oar.first"})
    # The deployment's client is needed to refresh: a bring-your-own client on the connection.
    from connectors.auth.store import ConnectionCredentialStore
    ConnectionCredentialStore(connection.id).save({
        **decrypt_json(connection.encrypted_credentials), "client_id": "air-client", "client_secret": "air-secret"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert job.status == "completed", job.error
    assert token.calls[0].request.headers["Authorization"].startswith("Basic ")  # client_auth: basic
    connection.refresh_from_db()
    stored = decrypt_json(connection.encrypted_credentials)
    assert (stored["access_token"], stored["refresh_token"]) == ("oaa.fresh", "oar.rotated")


def test_sync_search_then_a_deleted_record_is_removed(rsps, make_collection, client):
    serve_airtable(rsps)
    connection = source_connection_create(collection=make_collection(), short_name="airtable", sync_immediately=False,
                                          authentication={"credentials": {"personal_access_token": "patXYZ.secret"}})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    r = client.post("/collections/docs/search/instant", {"query": "field engineers work without a connection",
                                                        "limit": 2}, format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == OFFLINE

    rsps.reset()
    serve_airtable(rsps, page2={"records": []})  # the audit-log record was deleted
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_deleted, job.entities_kept) == ("completed", 1, 3), job.error
    assert not Entity.objects.filter(source_connection=connection, entity_id=AUDIT).exists()


def test_incremental_runs_filter_on_last_modified_time_and_find_deletions_by_id(rsps, make_collection):
    serve_airtable(rsps)
    connection = source_connection_create(
        collection=make_collection(), short_name="airtable", sync_immediately=False,
        config={"incremental": True, "base_ids": [ROADMAP]},
        authentication={"credentials": {"personal_access_token": "patXYZ.secret"}})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    since = connection.sync.cursor.data["since"]
    assert since.endswith("Z")

    rsps.reset()
    serve_airtable(rsps)
    formula = (f"OR(IS_AFTER(LAST_MODIFIED_TIME(), DATETIME_PARSE('{since}')), "
               f"IS_AFTER(CREATED_TIME(), DATETIME_PARSE('{since}')))")
    changed = fixture("features_page1.json")["records"][1]
    changed = {**changed, "fields": {**changed["fields"], "Status": "Deprecated"}}
    rsps.add("GET", FEATURES, json={"records": [changed]},
             match=[responses.matchers.query_param_matcher({"filterByFormula": formula}, strict_match=False)])
    ids = rsps.add("GET", FEATURES, json={"records": [  # the offline-mode record is gone
        {"id": "recA2Ux7p1dT8XkQ9", "createdTime": "2024-01-09T14:30:00.000Z", "fields": {}},
        {"id": "recZ9mW4nB2cV7xL1", "createdTime": "2024-02-01T09:00:00.000Z", "fields": {}}]},
        match=[responses.matchers.query_param_matcher({"fields[]": "fld1VnoyuotSTyxW1"}, strict_match=False)])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert len(ids.calls) == 1
    assert sorted(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == [
        f"{ROADMAP}/tbltp8DGLhqbUmjK1/recA2Ux7p1dT8XkQ9", AUDIT]
