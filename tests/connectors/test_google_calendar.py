"""The Google Calendar source against Calendar v3 responses shaped as Google documents them
(tests/connectors/fixtures/google_calendar), served by `responses` at the transport level."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import responses

from airweave.collections.models import Entity
from connectors.services import source_connection_create
from connectors.sources.google_calendar import GoogleCalendarEventEntity, GoogleCalendarSource
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures" / "google_calendar"
API = "https://www.googleapis.com/calendar/v3"
PRIMARY = f"{API}/calendars/dana%40example.com/events"
TEAM_ID = "c_8f2e1d4b6a7c9e0f@group.calendar.google.com"
TEAM = f"{API}/calendars/c_8f2e1d4b6a7c9e0f%40group.calendar.google.com/events"
OFFSITE = "dana@example.com/7q1k2v8e3o5m9h0c4j6n2b8d1f"
SKI = "dana@example.com/5h7j9k1m3n5p7r9t1v3x5z7b9d"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def params(**values):
    return [responses.matchers.query_param_matcher(values, strict_match=False)]


def serve_full(rsps):
    rsps.add("GET", f"{API}/users/me/calendarList", json=fixture("calendar_list.json"))
    page1 = fixture("events_primary_page1.json")
    rsps.add("GET", PRIMARY, json=fixture("events_primary_page2.json"), match=params(pageToken=page1["nextPageToken"]))
    rsps.add("GET", PRIMARY, json=page1, match=[responses.matchers.query_param_matcher(
        {"maxResults": "250", "singleEvents": "false"})])
    rsps.add("GET", TEAM, json=fixture("events_team.json"), match=[responses.matchers.query_param_matcher(
        {"maxResults": "250", "singleEvents": "false"})])


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def make(**config):
    return GoogleCalendarSource(GoogleCalendarSource.validate_config(config), {"access_token": "ya29.cal"})


def test_calendars_and_paginated_events(rsps):
    serve_full(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert set(entities) == {OFFSITE, "dana@example.com/2c9a7e5d3b1f0h8g6k4m2n0p9r", SKI,
                             f"{TEAM_ID}/0a1b2c3d4e5f6g7h8i9j0k1l2m"}
    offsite = entities[OFFSITE]
    assert isinstance(offsite, GoogleCalendarEventEntity)
    assert offsite.name == "Quarterly planning offsite" and offsite.location.startswith("Lisbon office")
    assert offsite.description == "Agenda: roadmap review, hiring plan for the platform team, budget for 2024."
    assert offsite.breadcrumbs[0].as_dict() == {"entity_id": "dana@example.com", "name": "dana@example.com",
                                                "entity_type": "GoogleCalendar"}
    assert offsite.web_url.startswith("https://www.google.com/calendar/event?eid=")
    assert offsite.updated_at.isoformat() == "2024-02-01T09:15:42.120000+00:00"
    assert offsite.access_viewers == ["user:alice@example.com", "user:bruno@example.com", "user:dana@example.com"]
    assert offsite.raw_source_fields["meeting_link"] == "https://meet.google.com/abc-defg-hij"
    assert "Bruno" not in offsite.textual_representation() and "bruno@example.com (tentative)" in \
        offsite.textual_representation()
    assert entities[SKI].all_day and entities[SKI].start == "2024-02-19"
    assert entities["dana@example.com/2c9a7e5d3b1f0h8g6k4m2n0p9r"].recurrence == ["RRULE:FREQ=WEEKLY;BYDAY=MO"]
    release = entities[f"{TEAM_ID}/0a1b2c3d4e5f6g7h8i9j0k1l2m"]
    assert release.breadcrumbs[0].name == "Platform team"
    assert release.access_viewers == ["user:bruno@example.com", "user:dana@example.com",
                                      "user:platform-team@example.com"]
    assert source.is_full_listing()
    assert source.next_cursor() == {"sync_tokens": {"dana@example.com": "CPDAlvWDx70CEPDAlvWDx70CGAU=",
                                                    TEAM_ID: "CKj2v4mDx70CEKj2v4mDx70CGAU="}}


def test_calendar_ids_limit_the_calendars_and_429_is_retried(rsps):
    rsps.add("GET", f"{API}/users/me/calendarList", status=429, headers={"Retry-After": "0"},
             json={"error": {"code": 429, "message": "Rate Limit Exceeded", "errors": [
                 {"domain": "usageLimits", "reason": "rateLimitExceeded", "message": "Rate Limit Exceeded"}]}})
    serve_full(rsps)
    entities = list(make(calendar_ids=[TEAM_ID]).generate_entities({}))
    assert [e.entity_id for e in entities] == [f"{TEAM_ID}/0a1b2c3d4e5f6g7h8i9j0k1l2m"]
    assert not any(c.request.url.startswith(PRIMARY) for c in rsps.calls)


def test_sync_search_then_sync_tokens_update_and_cancel(rsps, make_collection, client):
    serve_full(rsps)
    token = rsps.add("POST", "https://oauth2.googleapis.com/token",
                     json={"access_token": "ya29.fresh", "expires_in": 3599, "token_type": "Bearer"})
    connection = source_connection_create(
        collection=make_collection(), short_name="google_calendar", sync_immediately=False, for_api=False,
        credentials={"access_token": "ya29.old", "refresh_token": "1//rt", "expires_at": time.time() - 5,
                     "client_id": "42.apps.googleusercontent.com", "client_secret": "GOCSPX-s"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert len(token.calls) == 1
    r = client.post("/collections/docs/search/instant", {"query": "release go/no-go rollback plan", "limit": 2},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == \
        f"{TEAM_ID}/0a1b2c3d4e5f6g7h8i9j0k1l2m"

    rsps.reset()
    rsps.add("GET", f"{API}/users/me/calendarList", json=fixture("calendar_list.json"))
    rsps.add("GET", PRIMARY, json=fixture("events_primary_incremental.json"),
             match=params(syncToken="CPDAlvWDx70CEPDAlvWDx70CGAU="))
    rsps.add("GET", TEAM, json={"kind": "calendar#events", "items": [], "nextSyncToken": "CKj2v4mDx70CEKj2v4mDx70CGAY="},
             match=params(syncToken="CKj2v4mDx70CEKj2v4mDx70CGAU="))
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert not Entity.objects.filter(source_connection=connection, entity_id=SKI).exists()
    assert Entity.objects.get(source_connection=connection, entity_id=OFFSITE).name.endswith("(moved to Porto)")
    assert connection.sync.cursor.data["sync_tokens"]["dana@example.com"] == "CNjlkvSJx70CENjlkvSJx70CGAU="


def test_410_gone_on_a_sync_token_lists_everything_again(rsps):
    rsps.add("GET", PRIMARY, status=410, match=params(syncToken="old"), json={"error": {
        "code": 410, "message": "Sync token is no longer valid, a full sync is required.",
        "errors": [{"domain": "calendar", "reason": "fullSyncRequired",
                    "message": "Sync token is no longer valid, a full sync is required."}]}})
    serve_full(rsps)
    source = make()
    entities = list(source.generate_entities({"sync_tokens": {"dana@example.com": "old", TEAM_ID: "old2"}}))
    assert len(entities) == 4 and source.is_full_listing() and source.deleted_entity_ids() == []
