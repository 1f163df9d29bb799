"""The Outlook Calendar source against Graph's calendarView delta, shaped as Graph documents it
(event resources with `start`/`end` dateTimeTimeZone, `attendees`, `organizer`, `@removed` rows,
`@odata.nextLink` pages ending in `@odata.deltaLink`), served by `responses`: the fake answers
only the documented requests (the window parameters, the Prefer header, a bearer token).
"""
from __future__ import annotations

import json
from datetime import date, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from connectors.services import source_connection_create
from connectors.sources._msgraph import GRAPH
from connectors.sources.outlook_calendar import OutlookCalendarSource
from connectors.sync.services import sync_job_run, sync_job_start

TOKEN = "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"
DELTA = f"{GRAPH}/me/calendarView/delta"
NEXT = f"{DELTA}?$skiptoken=R0usmcCM996atia_s"
DELTA_LINK = f"{DELTA}?$deltatoken=R0usmci39OQxqJrxK4"
LATER_LINK = f"{DELTA}?$deltatoken=R0usmcMDNGg0J1E"


def event(event_id: str, subject: str, body: str, *, attendees=(), day="2026-11-24", **extra) -> dict:
    return {
        "@odata.type": "#microsoft.graph.event", "@odata.etag": f'W/"{event_id[-6:]}"', "id": event_id,
        "createdDateTime": "2026-10-01T08:00:00.0000000Z", "lastModifiedDateTime": "2026-10-02T09:30:12.1234567Z",
        "changeKey": f"{event_id[-6:]}==", "categories": [], "subject": subject, "bodyPreview": body[:255],
        "body": {"contentType": "text", "content": body}, "importance": "normal", "isAllDay": False,
        "isCancelled": False, "showAs": "busy", "type": "singleInstance", "seriesMasterId": None,
        "webLink": f"https://outlook.office365.com/owa/?itemid={event_id}&exvsurl=1&path=/calendar/item",
        "responseStatus": {"response": "organizer", "time": "0001-01-01T00:00:00Z"},
        "start": {"dateTime": f"{day}T10:00:00.0000000", "timeZone": "UTC"},
        "end": {"dateTime": f"{day}T11:00:00.0000000", "timeZone": "UTC"},
        "location": {"displayName": "Harbour room", "locationType": "default"},
        "organizer": {"emailAddress": {"name": "Megan Bowen", "address": "MeganB@contoso.onmicrosoft.com"}},
        "attendees": [{"type": kind, "status": {"response": "none", "time": "0001-01-01T00:00:00Z"},
                       "emailAddress": {"name": name, "address": address}} for kind, name, address in attendees],
        "onlineMeeting": None, **extra,
    }


PLANNING = event("AAMkAGI1AAAt9AHjAAA=", "Q3 planning", "Agenda: the offline mode launch and the pricing review.",
                 attendees=[("required", "Alex Wilber", "AlexW@contoso.onmicrosoft.com"),
                            ("resource", "Harbour room", "harbour@contoso.onmicrosoft.com")])
RETRO = event("AAMkAGI1AAAt9AHkAAA=", "Sprint retro", "What went well: the lighthouse dashboard shipped early.",
              attendees=[("optional", "Lee Gu", "LeeG@contoso.onmicrosoft.com")], day="2026-11-25")


def check_graph_call(request, *, window: bool) -> None:
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert 'outlook.body-content-type="text"' in request.headers["Prefer"]
    if window:
        query = parse_qs(urlsplit(request.url).query)
        start, end = date.fromisoformat(query["startDateTime"][0][:10]), date.fromisoformat(query["endDateTime"][0][:10])
        assert query["startDateTime"][0].endswith("T00:00:00Z") and (end - start).days == 365 + 30


def serve_me(rsps):
    """The user (`/me`) and their primary calendar, asked before each round."""
    rsps.add("GET", f"{GRAPH}/me", json={"displayName": "Megan Bowen", "mail": "MeganB@contoso.onmicrosoft.com",
                                         "userPrincipalName": "MeganB@contoso.onmicrosoft.com"})
    rsps.add("GET", f"{GRAPH}/me/calendar", json={"id": "AAMkAGI1AAAAAAEGAAA=", "name": "Calendar"})


def serve_first_round(rsps):
    serve_me(rsps)

    def first_page(request):
        check_graph_call(request, window=True)
        return 200, {}, json.dumps({"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#Collection(event)",
                                    "@odata.nextLink": NEXT, "value": [PLANNING]})

    def second_page(request):
        check_graph_call(request, window=False)
        return 200, {}, json.dumps({"@odata.deltaLink": DELTA_LINK, "value": [RETRO]})

    rsps.add_callback("GET", DELTA, callback=first_page,
                      match=[responses.matchers.query_param_matcher({}, strict_match=False)])
    rsps.add(responses.CallbackResponse("GET", NEXT, callback=second_page,
                                        match=[responses.matchers.query_string_matcher("$skiptoken=R0usmcCM996atia_s")]))


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    monkeypatch.setattr(OutlookCalendarSource, "rate_limit_level", None)


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def connect(collection, config=None):
    return source_connection_create(collection=collection, short_name="outlook_calendar", config=config or {"future_days": 30},
                                    credentials={"access_token": TOKEN}, sync_immediately=False, for_api=False)


def run(connection):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)


def test_events_of_the_window_are_synced_with_attendees_as_access_and_found(rsps, make_collection, client):
    serve_first_round(rsps)
    connection = connect(make_collection())
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    planning = Entity.objects.get(source_connection=connection, entity_id=PLANNING["id"])
    assert planning.entity_type == "OutlookCalendarEventEntity" and planning.name == "Q3 planning"
    assert [b["name"] for b in planning.breadcrumbs] == ["Calendar"]
    assert planning.web_url.startswith("https://outlook.office365.com/owa/?itemid=")
    assert planning.access_viewers == ["user:alexw@contoso.onmicrosoft.com", "user:meganb@contoso.onmicrosoft.com"]
    assert planning.raw_source_fields["start"] == "2026-11-24T10:00:00.0000000"
    chunk = planning.chunks.get()
    assert "Attendees: Alex Wilber <AlexW@contoso.onmicrosoft.com>" in chunk.text and "Harbour room" in chunk.text
    assert "Harbour room <harbour" not in chunk.text  # a room is the location, not an attendee
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data
    assert cursor["delta_link"] == DELTA_LINK
    assert cursor["window_start"] == (date.today() - timedelta(days=365)).isoformat()

    r = client.post("/collections/docs/search/instant", {"query": "lighthouse dashboard shipped", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == RETRO["id"]


def test_the_next_run_follows_the_delta_link_updates_and_removes(rsps, make_collection):
    serve_first_round(rsps)
    connection = connect(make_collection())
    run(connection)
    rsps.reset()
    serve_me(rsps)
    moved = {**PLANNING, "subject": "Q3 planning (moved)", "start": {"dateTime": "2026-11-26T14:00:00.0000000",
                                                                     "timeZone": "UTC"}}

    def changes(request):
        check_graph_call(request, window=False)
        return 200, {}, json.dumps({"@odata.deltaLink": LATER_LINK, "value": [
            moved, {"@odata.type": "#microsoft.graph.event", "id": RETRO["id"], "@removed": {"reason": "deleted"}}]})

    rsps.add(responses.CallbackResponse("GET", DELTA_LINK, callback=changes,
                                        match=[responses.matchers.query_string_matcher("$deltatoken=R0usmci39OQxqJrxK4")]))
    job = run(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("name", flat=True)) == [
        "Q3 planning (moved)"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["delta_link"] == LATER_LINK


def test_an_expired_delta_link_starts_a_full_round_and_absent_events_are_deleted(rsps, make_collection):
    serve_first_round(rsps)
    connection = connect(make_collection())
    run(connection)
    rsps.reset()
    serve_me(rsps)
    rsps.add("GET", DELTA_LINK, status=410, json={"error": {"code": "SyncStateNotFound",
                                                            "message": "The sync state generation is not found."}},
             match=[responses.matchers.query_string_matcher("$deltatoken=R0usmci39OQxqJrxK4")])
    rsps.add("GET", DELTA, json={"@odata.deltaLink": LATER_LINK, "value": [PLANNING]},
             match=[responses.matchers.query_param_matcher({}, strict_match=False)])
    job = run(connection)
    assert (job.status, job.entities_kept, job.entities_deleted) == ("completed", 1, 1), job.error


def test_a_window_slid_too_far_into_the_past_starts_over_with_a_new_one(rsps):
    serve_me(rsps)
    rsps.add("GET", DELTA, json={"@odata.deltaLink": LATER_LINK, "value": [RETRO]},
             match=[responses.matchers.query_param_matcher({}, strict_match=False)])
    source = OutlookCalendarSource(OutlookCalendarSource.validate_config({"past_days": 10, "future_days": 10}),
                                   {"access_token": TOKEN})
    old_start = (date.today() - timedelta(days=10 + 31)).isoformat()
    entities = list(source.generate_entities({"delta_link": DELTA_LINK, "window_start": old_start}))
    assert [e.entity_id for e in entities] == [RETRO["id"]] and source.is_full_listing()
    assert source.next_cursor()["window_start"] == (date.today() - timedelta(days=10)).isoformat()
    assert not any(c.request.url == DELTA_LINK for c in rsps.calls)


def test_a_throttled_page_is_retried_and_a_bad_window_is_refused(rsps):
    rsps.add("GET", f"{GRAPH}/me", status=429, headers={"Retry-After": "0"},
             json={"error": {"code": "ApplicationThrottled", "message": "Application is over its MailboxConcurrency limit."}})
    serve_me(rsps)
    rsps.add("GET", DELTA, json={"@odata.deltaLink": LATER_LINK, "value": []},
             match=[responses.matchers.query_param_matcher({}, strict_match=False)])
    source = OutlookCalendarSource(OutlookCalendarSource.validate_config({}), {"access_token": TOKEN})
    assert list(source.generate_entities({})) == [] and source.next_cursor()["delta_link"] == LATER_LINK
    with pytest.raises(ValueError, match="past_days"):
        OutlookCalendarSource.validate_config({"past_days": -1})


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    rsps.add("GET", f"{GRAPH}/me", status=401, json={"error": {
        "code": "InvalidAuthenticationToken", "message": "Access token has expired or is not yet valid."}})
    connection = connect(make_collection())
    job = run(connection)
    connection.refresh_from_db()
    assert (job.status, connection.status) == ("failed", "needs_reauth")
