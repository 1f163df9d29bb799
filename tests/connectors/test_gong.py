"""The gong source against a fake Gong API that answers only its documented requests (basic auth of
the access key and secret; `POST /v2/calls/extensive` with its `filter`, `contentSelector` and
`cursor`; `POST /v2/calls/transcript` with the page's `callIds`): calls over two cursor pages with
their transcripts and named speakers, a 429 with Retry-After waited out, a refused key marking the
connection `needs_reauth`, a sync found by search, then an incremental run from the last call seen."""
from __future__ import annotations

import base64

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.gong import GongCallEntity, GongSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.gong.io"
KEY, SECRET = "HZQX5QPJ6YVEEA3Y", "eyJhbGciOiJIUzI1NiJ9.gong-secret-0123456789"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()}
SELECT = {"exposedFields": {"parties": True}}


def call(cid, title, started):
    return {"metaData": {"id": cid, "url": f"https://app.gong.io/call?id={cid}", "title": title,
                         "scheduled": started, "started": started, "duration": 1860, "primaryUserId": "234599484848423",
                         "direction": "Outbound", "system": "Zoom", "scope": "External", "media": "Video",
                         "language": "eng", "workspaceId": "623457276584334", "purpose": None, "isPrivate": False},
            "parties": [{"id": "1", "emailAddress": "ana@harbour.example", "name": "Ana Lima", "title": "AE",
                         "speakerId": "6432345678555530067", "affiliation": "Internal"},
                        {"id": "2", "emailAddress": "maya@isleferries.example", "name": "Maya Okafor",
                         "speakerId": "8432345678555530068", "affiliation": "External"}]}


DEMO = call("7782342274025937895", "Isle Ferries demo", "2024-05-02T10:00:00+02:00")
PRICING = call("7782342274025937896", "Isle Ferries pricing", "2024-05-03T10:00:00+02:00")
KICKOFF = call("7782342274025937897", "Point Bakery kickoff", "2024-05-01T10:00:00+02:00")
TRANSCRIPTS = {
    DEMO["metaData"]["id"]: [{"speakerId": "8432345678555530068", "topic": "Pain points", "sentences": [
        {"start": 1000, "end": 4000, "text": "Our passengers wait too long at the ticket gates."}]}],
    PRICING["metaData"]["id"]: [{"speakerId": "6432345678555530067", "topic": "Pricing", "sentences": [
        {"start": 1000, "end": 5000, "text": "Three electric ferries come to 2.4 million."}]}],
    KICKOFF["metaData"]["id"]: [{"speakerId": "6432345678555530067", "topic": None, "sentences": [
        {"start": 1000, "end": 3000, "text": "Bread deliveries start on Monday."}]}]}


def gong(fake, pages=((DEMO, PRICING), (KICKOFF,)), since=None):
    pages = list(pages)
    filt = {"fromDateTime": since} if since else {}
    for n, page in enumerate(pages):
        more = n + 1 < len(pages)
        fake.route("POST", "/v2/calls/extensive", headers=AUTH,
                   json={"filter": filt, "contentSelector": SELECT, **({"cursor": f"cur{n}"} if n else {})},
                   reply={"requestId": f"r{n}", "records": {"totalRecords": 3, "currentPageSize": len(page),
                                                           "currentPageNumber": n, **({"cursor": f"cur{n + 1}"}
                                                                                      if more else {})},
                          "calls": list(page)})
        ids = [c["metaData"]["id"] for c in page]
        if ids:
            fake.route("POST", "/v2/calls/transcript", headers=AUTH, json={"filter": {"callIds": ids}},
                       reply={"requestId": f"t{n}", "records": {"totalRecords": len(ids), "currentPageSize": len(ids),
                                                                "currentPageNumber": 0},
                              "callTranscripts": [{"callId": i, "transcript": TRANSCRIPTS[i]} for i in ids]})


def make():
    return GongSource(GongSource.validate_config({}), {"access_key": KEY, "access_key_secret": SECRET})


def test_calls_over_two_pages_with_transcripts_and_named_speakers(vendor):
    gong(vendor(API))
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert len(entities) == 3
    demo = entities[f"call:{DEMO['metaData']['id']}"]
    assert isinstance(demo, GongCallEntity) and demo.transcript == [
        "[Pain points]", "Maya Okafor: Our passengers wait too long at the ticket gates."]
    assert demo.participants == ["Ana Lima", "Maya Okafor"] and demo.web_url.endswith("id=7782342274025937895")
    assert [b.name for b in demo.breadcrumbs] == ["Outbound · External"]
    assert demo.created_at.isoformat() == "2024-05-02T10:00:00+02:00"
    assert source.is_full_listing() and source.next_cursor()["since"] == {"calls": "2024-05-03T08:00:00Z"}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("POST", "/v2/calls/extensive", headers=AUTH, json={"filter": {}, "contentSelector": SELECT},
                         reply=[(429, {"Retry-After": "0"}, {"requestId": "x", "errors": ["Too many requests"]}),
                                (200, {}, {"records": {}, "calls": [KICKOFF]})])
    gong(fake, pages=((KICKOFF,),))
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and waits == [0]


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("POST", "/v2/calls/extensive", json_optional=("filter", "contentSelector"), json={},
                      reply=(401, {}, {"requestId": "x", "errors": ["Invalid access key"]}))
    connection = connect(make_collection(), "gong", {"access_key": KEY, "access_key_secret": "revoked-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_from_the_last_call(vendor, make_collection, client):
    fake = vendor(API)
    gong(fake)
    connection = connect(make_collection(), "gong", {"access_key": KEY, "access_key_secret": SECRET})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "how much do the electric ferries cost", limit=1) == [
        f"call:{PRICING['metaData']['id']}"]

    fake.routes.clear()
    follow_up = call("7782342274025937898", "Isle Ferries follow-up", "2024-05-04T10:00:00+02:00")
    TRANSCRIPTS[follow_up["metaData"]["id"]] = [{"speakerId": "8432345678555530068", "topic": "Next steps",
                                                 "sentences": [{"start": 1, "end": 2, "text": "We sign on Friday."}]}]
    gong(fake, pages=((PRICING, follow_up),), since="2024-05-03T08:00:00Z")
    job = run_sync(connection)
    assert (job.status, job.entities_inserted, job.entities_deleted) == ("completed", 1, 0), job.error
    assert Entity.objects.filter(source_connection=connection).count() == 4
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"calls": "2024-05-04T08:00:00Z"}
