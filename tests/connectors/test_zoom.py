"""Zoom against its documented response shapes (tests/connectors/fixtures/zoom/), served by `responses` at the
transport level: users, past meetings and cloud recordings paginated by `next_page_token`, transcripts (WebVTT)
and chat files downloaded and indexed, throttling, user OAuth refresh, server-to-server OAuth, deletions, and a
search over a synced transcript."""
from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import responses
from responses import matchers

from airweave.collections.models import Entity, SyncCursor
from airweave.crypto import decrypt_json
from connectors.services import source_connection_create
from connectors.sources.zoom import TOKEN_URL, ZoomSource, vtt_to_text
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures" / "zoom"
API = "https://api.zoom.us/v2"
ME = json.loads((FIXTURES / "users_me.json").read_text())["id"]


def fixture(name: str):
    path = FIXTURES / name
    return json.loads(path.read_text()) if name.endswith(".json") else path.read_bytes()


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    monkeypatch.setattr(ZoomSource, "rate_limit_level", None)


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def today():
    return datetime.now(timezone.utc).date()


def recordings_page(name: str) -> dict:
    """A recordings page dated two days ago, inside every run's window."""
    page = fixture(name)
    day = (today() - timedelta(days=2)).isoformat()
    for meeting in page["meetings"]:
        meeting["start_time"] = day + meeting["start_time"][10:]
    return page


def run(connection, force_full_sync=False):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, force_full_sync=force_full_sync,
                                              enqueue=False).id)


def connect(collection, config=None, authentication=None):
    """A connection with an injected user token (default) or `authentication` as docs/api.md shapes it."""
    return source_connection_create(collection=collection, short_name="zoom",
                                    config={"history_days": 20, **(config or {})},
                                    authentication=authentication or {"access_token": "eyJzdiI6IjAwMDAwMSIsImFsZyI6IkhTNTEyIn0"},
                                    sync_immediately=False, for_api=False)


def recordings(rsps, user, pages, start, *, throttle=False):
    window = {"page_size": "300", "from": start.isoformat(), "to": today().isoformat()}
    url = f"{API}/users/{user}/recordings"
    for i, page in enumerate(pages):
        query = dict(window)
        if i:
            query["next_page_token"] = pages[i - 1]["next_page_token"]
            if throttle:
                rsps.add("GET", url, status=429, headers={"Retry-After": "0"}, match=[matchers.query_param_matcher(query)],
                         json={"code": 429, "message": "You have reached the maximum per-second rate limit for this API."})
        rsps.add("GET", url, json=page, match=[matchers.query_param_matcher(query)])


def meetings(rsps, user, name="meetings_previous.json"):
    rsps.add("GET", f"{API}/users/{user}/meetings", json=fixture(name), match=[matchers.query_param_matcher(
        {"page_size": "300", "type": "previous_meetings"})])


def downloads(rsps, *, chat=True, design=True):
    rsps.add("GET", "https://us06web.zoom.us/rec/download/Xy12TRANSCRIPTaa9kq0", body=fixture("pricing_review.vtt"),
             content_type="text/vtt")
    if chat:
        rsps.add("GET", "https://us06web.zoom.us/rec/download/Xy12CHATbb7Lm3", body=fixture("pricing_review_chat.txt"),
                 content_type="text/plain")
    if design:
        rsps.add("GET", "https://us06web.zoom.us/rec/download/Zz98TRANSCRIPTcc4Pw1", body=fixture("design_sync.vtt"),
                 content_type="text/vtt")


def first_round(rsps, *, throttle=False):
    rsps.add("GET", f"{API}/users/me", json=fixture("users_me.json"))
    meetings(rsps, ME)
    recordings(rsps, ME, [recordings_page("recordings_page_1.json"), recordings_page("recordings_page_2.json")],
               today() - timedelta(days=20), throttle=throttle)
    downloads(rsps)


PRICING = fixture("recordings_page_1.json")["meetings"][0]
TRANSCRIPT_ID = f"{PRICING['uuid']}/b2c8a4e1-7f0d-4b52-9a3e-2c1f6d8e9a70"
REVIEW_MEETING = fixture("recordings_page_2.json")["meetings"][0]


def test_vtt_cues_become_text():
    text = vtt_to_text(fixture("pricing_review.vtt").decode())
    assert "-->" not in text and "WEBVTT" not in text
    assert text.splitlines()[0].startswith("Jill Chill: Thanks for joining.") and \
        text.splitlines()[0].endswith("preorder discount.")  # two cues of one speaker joined
    assert text.splitlines()[1].startswith("Sam Ortega: Retail partners")


def test_meetings_and_transcripts_are_synced_and_found(rsps, make_collection, client):
    first_round(rsps, throttle=True)
    connection = connect(make_collection())
    job = run(connection)
    # 2 meetings + 2 transcripts + 1 chat (the MP4 is not indexed)
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error
    assert [c.response.status_code for c in rsps.calls if "next_page_token" in c.request.url] == [429, 200]
    assert not any("Qg75t7xZBtEbAkjdlgbfdngBBBB" in c.request.url for c in rsps.calls)

    transcript = Entity.objects.get(source_connection=connection, entity_id=TRANSCRIPT_ID)
    assert transcript.entity_type == "ZoomRecordingFileEntity" and transcript.name == "Transcript: Mark 8 pricing review"
    assert [b["name"] for b in transcript.breadcrumbs] == ["Jill Chill", "Mark 8 pricing review"]
    assert transcript.web_url == PRICING["share_url"]
    assert transcript.raw_source_fields["file_type"] == "TRANSCRIPT"
    meeting = Entity.objects.get(source_connection=connection, entity_id=f"meeting:{PRICING['uuid']}")
    assert meeting.raw_source_fields["host_email"] == "jchill@example.com"
    assert meeting.source_created_at.isoformat() == "2025-03-03T17:00:00+00:00"

    r = client.post("/collections/docs/search/instant",
                    {"query": "bundle with the spare battery and carrying case", "limit": 1}, format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == TRANSCRIPT_ID
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data
    assert cursor["recorded_to"] == today().isoformat() and len(cursor["recordings"]) == 3


def test_next_run_rereads_the_window_and_deletes_what_is_gone(rsps, make_collection):
    first_round(rsps)
    connection = connect(make_collection())
    assert run(connection).entities_inserted == 5
    rsps.reset()
    rsps.add("GET", f"{API}/users/me", json=fixture("users_me.json"))
    listed = fixture("meetings_previous.json")
    listed["meetings"] = listed["meetings"][:1]  # the design sync occurrence was deleted
    rsps.add("GET", f"{API}/users/{ME}/meetings", json=listed)
    page = recordings_page("recordings_page_1.json")
    page["next_page_token"] = ""  # its recording was trashed: absent from the listing
    recordings(rsps, ME, [page], today() - timedelta(days=7))
    job = run(connection)
    assert (job.status, job.entities_kept, job.entities_deleted) == ("completed", 3, 2), job.error
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert f"meeting:{REVIEW_MEETING['uuid']}" not in ids and not any(i.startswith(REVIEW_MEETING["uuid"]) for i in ids)
    assert not any("/rec/download/" in c.request.url for c in rsps.calls)  # unchanged files not downloaded


def test_an_expired_user_token_is_refreshed_and_the_rotated_refresh_token_saved(rsps, make_collection, monkeypatch):
    monkeypatch.setenv("AIRWEAVE_OAUTH_ZOOM_CLIENT_ID", "xVzH2bBHQ2SwXb0Kc1fGHg")
    monkeypatch.setenv("AIRWEAVE_OAUTH_ZOOM_CLIENT_SECRET", "8mNrD0bt1V4tq0Ha3LsQqkX0Kc9Uv1yT")
    first_round(rsps)
    rsps.add("POST", TOKEN_URL, json={"access_token": "eyJ.new", "token_type": "bearer", "refresh_token": "eyJ.r2",
                                      "expires_in": 3599, "scope": "user:read:user meeting:read:list_meetings"})
    connection = connect(make_collection(), authentication={
        "access_token": "eyJ.old", "refresh_token": "eyJ.r1", "expires_at": time.time() - 60})
    job = run(connection)
    assert job.status == "completed", job.error
    refresh = next(c.request for c in rsps.calls if c.request.url.startswith(TOKEN_URL))
    assert parse_qs(refresh.body)["refresh_token"] == ["eyJ.r1"]
    assert refresh.headers["Authorization"].startswith("Basic ")
    stored = decrypt_json(type(connection).objects.get(pk=connection.pk).encrypted_credentials)
    assert (stored["access_token"], stored["refresh_token"]) == ("eyJ.new", "eyJ.r2")


S2S = {"account_id": "q6gBJVO5TzexKYTb_I2rpg", "client_id": "Fq3L8h9sRkC2bYwN1ZpX0g",
       "client_secret": "Jr5bW8kQ1sX0mT3vY6nA9dC2fG4hK7pL"}


def test_server_to_server_oauth_lists_every_user_and_renews_its_token_after_a_401(rsps, make_collection):
    tokens = [{"access_token": f"eyJhbGciOiJIUzUxMiJ9.s2s-{n}", "token_type": "bearer", "expires_in": 3599,
               "scope": "user:read:list_users:admin cloud_recording:read:list_user_recordings:admin",
               "api_url": "https://api.zoom.us"} for n in (1, 2)]
    grant = matchers.query_param_matcher({"grant_type": "account_credentials", "account_id": S2S["account_id"]})
    for token in tokens:
        rsps.add("POST", TOKEN_URL, json=token, match=[grant])
    users = f"{API}/users"
    rsps.add("GET", users, status=401, json={"code": 124, "message": "Access token is expired."})
    rsps.add("GET", users, json=fixture("users_page_1.json"),
             match=[matchers.query_param_matcher({"page_size": "300", "status": "active"})])
    rsps.add("GET", users, json=fixture("users_page_2.json"), match=[matchers.query_param_matcher(
        {"page_size": "300", "status": "active", "next_page_token": fixture("users_page_1.json")["next_page_token"]})])
    meetings(rsps, ME)
    sam = fixture("users_page_2.json")["users"][0]["id"]
    meetings(rsps, sam, "meetings_previous_sam.json")
    start = today() - timedelta(days=20)
    recordings(rsps, ME, [recordings_page("recordings_page_1.json"), recordings_page("recordings_page_2.json")], start)
    recordings(rsps, sam, [{"from": "", "to": "", "page_count": 0, "page_size": 300, "total_records": 0,
                            "next_page_token": "", "meetings": []}], start)
    downloads(rsps)
    job = run(connect(make_collection(), authentication={"credentials": S2S}))
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error
    token_calls = [c.request for c in rsps.calls if c.request.url.startswith(TOKEN_URL)]
    assert len(token_calls) == 2 and token_calls[0].headers["Authorization"].startswith("Basic ")
    api_calls = [c.request for c in rsps.calls if c.request.url.startswith(API)]
    assert api_calls[0].headers["Authorization"] == f"Bearer {tokens[0]['access_token']}"
    assert all(r.headers["Authorization"] == f"Bearer {tokens[1]['access_token']}" for r in api_calls[1:])


def test_refused_server_to_server_credentials_mark_the_connection_needs_reauth(rsps, make_collection):
    rsps.add("POST", TOKEN_URL, status=400, json={"reason": "Invalid client_id or client_secret", "error": "invalid_client"})
    connection = connect(make_collection(), authentication={"credentials": S2S})
    job = run(connection)
    connection.refresh_from_db()
    assert (job.status, connection.status) == ("failed", "needs_reauth")
