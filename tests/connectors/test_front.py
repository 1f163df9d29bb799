"""The front source against a fake Core API that answers only Front's documented requests (Bearer
token; `limit`, `q[after]`; `_pagination.next` URLs): conversations over two pages with messages
and comments, a 429 with Retry-After waited out, an expired OAuth token refreshed through the
`front` provider entry, a refused token marking the connection `needs_reauth`, a sync found by
search, then an event-feed run that re-reads a conversation with a new message and removes a
trashed one."""
from __future__ import annotations

import base64
import time

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import front
from connectors.sources.front import FrontConversationEntity, FrontSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api2.frontapp.com"
TOKEN = "front-api-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
AGENT = {"id": "tea_1", "email": "ana@harbour.example", "first_name": "Ana", "last_name": "Lima"}


def conversation(cid, subject, status="unassigned"):
    return {"_links": {"self": f"{API}/conversations/{cid}"}, "id": cid, "subject": subject, "status": status,
            "assignee": None, "recipient": {"handle": "mia@example.org", "role": "from"},
            "tags": [{"id": "tag_1", "name": "refunds"}], "created_at": 1714550400.0, "is_private": False}


C1, C2 = conversation("cnv_1", "Refund for the cancelled 7am sailing"), conversation("cnv_2", "Dog on board?")
MESSAGES = {"cnv_1": [{"id": "msg_1", "type": "email", "is_inbound": True, "created_at": 1714550400.0,
                       "author": None, "recipients": [{"handle": "mia@example.org", "role": "from"}],
                       "text": "My sailing was cancelled, I would like a refund.", "body": "<p>...</p>"},
                      {"id": "msg_2", "type": "email", "is_inbound": False, "created_at": 1714554000.0,
                       "author": AGENT, "recipients": [], "text": "Refunds arrive within five working days."}],
            "cnv_2": [{"id": "msg_3", "type": "email", "is_inbound": True, "created_at": 1714640400.0, "author": None,
                       "recipients": [{"handle": "leo@example.org", "role": "from"}],
                       "text": "Can I bring my dog on the ferry to the island?"}]}
COMMENTS = {"cnv_1": [{"id": "com_1", "author": AGENT, "body": "Storm cancellation, approve.",
                       "posted_at": 1714552000.0}], "cnv_2": []}


def results(items, next_url=None):
    return {"_pagination": {"next": next_url}, "_links": {"self": ""}, "_results": items}


def threads(fake, headers=AUTH, messages=MESSAGES):
    for cid in ("cnv_1", "cnv_2"):
        fake.route("GET", f"/conversations/{cid}/messages", query={"limit": "100"}, headers=headers,
                   reply=results(messages[cid]))
        fake.route("GET", f"/conversations/{cid}/comments", query={"limit": "100"}, headers=headers,
                   reply=results(COMMENTS[cid]))


def company(fake, headers=AUTH):
    fake.route("GET", "/conversations", query={"limit": "100"}, headers=headers,
               reply=results([C1], f"{API}/conversations?limit=100&page_token=p2"))
    fake.route("GET", "/conversations", query={"limit": "100", "page_token": "p2"}, headers=headers,
               reply=results([C2]))
    threads(fake, headers)


def test_conversations_over_two_pages_with_messages_and_comments(vendor):
    company(vendor(API))
    source = FrontSource(FrontSource.validate_config({}), {"api_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["conversation:cnv_1", "conversation:cnv_2"]
    refund = entities["conversation:cnv_1"]
    assert isinstance(refund, FrontConversationEntity) and refund.messages == [
        "mia@example.org: My sailing was cancelled, I would like a refund.",
        "(comment) Ana Lima: Storm cancellation, approve.",
        "Ana Lima: Refunds arrive within five working days."]
    assert refund.web_url == "https://app.frontapp.com/open/cnv_1" and refund.tags == ["refunds"]
    assert source.next_cursor()["since"]["events"] > time.time() - 400


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/conversations", query={"limit": "100"}, headers=AUTH, reply=[
        (429, {"Retry-After": "0", "X-RateLimit-Remaining": "0"}, {"_error": {"status": 429, "title": "Too many "
                                                                               "requests"}}),
        (200, {}, results([C2]))])
    company(fake)
    source = FrontSource(FrontSource.validate_config({}), {"api_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and len(waits) == 1


def test_an_expired_oauth_token_is_refreshed_and_a_refused_token_needs_reauth(vendor, make_collection):
    app = vendor("https://app.frontapp.com")
    refresh = app.route("POST", "/oauth/token", headers={"Authorization": "Basic " + base64.b64encode(
        b"cid:cs").decode()}, form={"grant_type": "refresh_token", "refresh_token": "fr-r1"},
        reply={"access_token": "front-oauth-2", "refresh_token": "fr-r2", "token_type": "Bearer", "expires_in": 3600})
    fake = vendor(API)
    company(fake, headers={"Authorization": "Bearer front-oauth-2"})
    source = FrontSource(FrontSource.validate_config({}), {"access_token": "front-oauth-1", "refresh_token": "fr-r1",
                                                           "expires_at": time.time() - 1, "client_id": "cid",
                                                           "client_secret": "cs"})
    assert len(list(source.generate_entities({}))) == 2 and refresh.calls == 1

    fake.route("GET", "/conversations", query={"limit": "100"},
               reply=(401, {}, {"_error": {"status": 401, "title": "Unauthenticated", "message": "Invalid token"}}))
    connection = connect(make_collection(), "front", {"api_token": "front-revoked-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_the_event_feed_rereads_one_and_removes_a_trashed_one(vendor, make_collection, client,
                                                                              monkeypatch):
    monkeypatch.setattr(front, "_now", lambda: 1714700000.0)
    fake = vendor(API)
    company(fake)
    connection = connect(make_collection(), "front", {"api_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    assert search_ids(client, "can my dog come on the ferry", limit=1) == ["conversation:cnv_2"]

    fake.routes.clear()
    mark = 1714700000.0 - front.CLOCK_MARGIN_SECONDS
    fake.route("GET", "/events", query={"q[after]": str(mark), "limit": "100"}, headers=AUTH, reply=results([
        {"id": "evt_1", "type": "inbound", "emitted_at": 1714710000.0, "conversation": C2},
        {"id": "evt_2", "type": "trash", "emitted_at": 1714720000.0, "conversation": {**C1, "status": "deleted"}}]))
    fake.route("GET", "/conversations/cnv_2", headers=AUTH, reply=C2)
    more = {**MESSAGES, "cnv_2": MESSAGES["cnv_2"] + [
        {"id": "msg_4", "type": "email", "is_inbound": False, "created_at": 1714710000.0, "author": AGENT,
         "recipients": [], "text": "Dogs travel free on a lead."}]}
    threads(fake, messages=more)
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        ["conversation:cnv_2"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"events": 1714720000.0}
