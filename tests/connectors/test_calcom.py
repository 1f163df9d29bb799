"""The calcom source against a fake API that answers only Cal.com's documented v2 requests
(Bearer key, `cal-api-version`; `take`, `skip`, `sortUpdatedAt`): bookings over two pages, a 429
with Retry-After waited out, a refused key marking the connection `needs_reauth`, a sync found by
search, then an incremental walk that stops at the mark and removes a cancelled booking."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import calcom
from connectors.sources.calcom import CalcomBookingEntity, CalcomSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.cal.com"
KEY = "cal_live_4f1b2c3d4e5f60718293a4b5c6d7e8f9"
HEADERS = {"Authorization": f"Bearer {KEY}", "cal-api-version": "2024-08-13"}


def booking(uid, title, description, updated, status="accepted"):
    return {"id": int(uid.split("_")[1]), "uid": uid, "title": title, "description": description, "status": status,
            "start": "2024-06-01T09:00:00.000Z", "end": "2024-06-01T09:30:00.000Z", "duration": 30,
            "eventTypeId": 42, "eventType": {"id": 42, "slug": "group-booking"}, "location": "https://cal.video/x",
            "hosts": [{"id": 1, "name": "Ana Lima", "email": "ana@harbour.example", "timeZone": "Europe/Oslo"}],
            "attendees": [{"name": "Mia Berg", "email": "mia@example.org", "timeZone": "Europe/Oslo"}],
            "createdAt": "2024-05-01T09:00:00.000Z", "updatedAt": updated, "metadata": {}}


B1 = booking("bk_3", "Group booking: school trip", "Forty pupils and four teachers to the island on 3 June.",
             "2024-05-03T09:00:00.000Z")
B2 = booking("bk_2", "Wedding party crossing", "A private sailing for 60 wedding guests.", "2024-05-02T09:00:00.000Z")
B3 = booking("bk_1", "Freight slot", "Two pallets of building materials.", "2024-05-01T09:00:00.000Z")


def page(items, n, more):
    return {"status": "success", "data": items, "pagination": {
        "totalItems": 3, "remainingItems": 0 if not more else 1, "returnedItems": len(items), "itemsPerPage": 2,
        "currentPage": n, "totalPages": 2, "hasNextPage": more, "hasPreviousPage": n > 1}}


def account(fake, pages=((B1, B2), (B3,))):
    pages = list(pages)
    for n, chunk in enumerate(pages):
        fake.route("GET", "/v2/bookings", query={"take": "2", "skip": str(2 * n), "sortUpdatedAt": "desc"},
                   headers=HEADERS, reply=page(list(chunk), n + 1, n + 1 < len(pages)))


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(calcom, "TAKE", 2)


def test_bookings_over_two_pages(vendor):
    account(vendor(API))
    source = CalcomSource(CalcomSource.validate_config({}), {"api_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["booking:bk_1", "booking:bk_2", "booking:bk_3"]
    trip = entities["booking:bk_3"]
    assert isinstance(trip, CalcomBookingEntity) and trip.people == ["Ana Lima", "Mia Berg"]
    assert trip.web_url == "https://app.cal.com/booking/bk_3" and [b.name for b in trip.breadcrumbs] == ["group-booking"]
    assert source.next_cursor() == {"since": {"bookings": "2024-05-03T09:00:00.000Z"}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/v2/bookings", query={"take": "2", "skip": "0", "sortUpdatedAt": "desc"},
                         headers=HEADERS, reply=[(429, {"Retry-After": "0"}, {"status": "error", "error": {
                             "code": "TooManyRequestsException", "message": "Rate limit exceeded"}}),
                             (200, {}, page([B3], 1, False))])
    account(fake)
    source = CalcomSource(CalcomSource.validate_config({}), {"api_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and len(waits) == 1


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(API)
    fake.route("GET", "/v2/bookings", query={"take": "2", "skip": "0", "sortUpdatedAt": "desc"},
               reply=(401, {}, {"status": "error", "error": {"code": "UnauthorizedException",
                                                             "message": "Invalid API Key"}}))
    connection = connect(make_collection(), "calcom", {"api_key": "cal_live_revoked0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_a_walk_to_the_mark_removes_a_cancelled_booking(vendor, make_collection, client):
    fake = vendor(API)
    account(fake)
    connection = connect(make_collection(), "calcom", {"api_key": KEY})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "private sailing for wedding guests", limit=1) == ["booking:bk_2"]

    fake.routes.clear()
    cancelled = {**B2, "status": "cancelled", "cancellationReason": "Venue changed",
                 "updatedAt": "2024-05-04T09:00:00.000Z"}
    account(fake, pages=((cancelled, B1),))  # the walk stops at B1, updated at the mark
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        {"booking:bk_1", "booking:bk_3"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {"bookings": "2024-05-04T09:00:00.000Z"}}
