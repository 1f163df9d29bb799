"""The helpscout source against a fake Mailbox API that answers only Help Scout's documented
requests (Bearer token; `status`, `embed`, `sortField`, `sortOrder`, `page`, `modifiedSince`):
conversations over two pages with their threads, a 429 with Retry-After waited out, an expired
OAuth token refreshed through the `helpscout` provider entry, a refused token marking the
connection `needs_reauth`, a sync found by search, an incremental run by `modifiedSince`, and the
periodic full listing that removes a deleted conversation."""
from __future__ import annotations

import time

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.helpscout import HelpScoutConversationEntity, HelpScoutSource
from connectors.services import source_connection_create
from tests.connectors.saas_cases import run_sync, search_ids

API = "https://api.helpscout.net"
TOKEN = "hs-access-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIST = {"status": "all", "embed": "threads", "sortField": "modifiedAt", "sortOrder": "asc"}


def conversation(cid, number, subject, updated, threads):
    return {"id": cid, "number": number, "subject": subject, "status": "active", "state": "published",
            "mailboxId": 77, "createdAt": "2024-05-01T08:00:00Z", "userUpdatedAt": updated, "closedAt": None,
            "primaryCustomer": {"id": 1, "first": "Mia", "last": "Berg", "email": "mia@example.org"},
            "tags": [{"id": 1, "tag": "refunds"}], "_embedded": {"threads": threads},
            "_links": {"web": {"href": f"https://secure.helpscout.net/conversation/{cid}/{number}"}}}


def thread(tid, kind, who, html, at):
    return {"id": tid, "type": kind, "status": "active", "body": html, "createdAt": at,
            "createdBy": {"id": 9, "type": "user", "first": who, "last": "", "email": f"{who.lower()}@h.example"}}


C1 = conversation(2001, 101, "Refund for a cancelled crossing", "2024-05-02T10:00:00Z", [
    thread(1, "customer", "Mia", "<p>My crossing was cancelled, can I get a refund?</p>", "2024-05-01T08:00:00Z"),
    thread(2, "lineitem", "Ana", "", "2024-05-01T08:01:00Z"),
    thread(3, "note", "Ana", "<p>Checked: storm cancellation.</p>", "2024-05-01T09:00:00Z"),
    thread(4, "reply", "Ana", "<p>Refunds arrive within five working days.</p>", "2024-05-02T10:00:00Z")])
C2 = conversation(2002, 102, "Bringing a kayak", "2024-05-03T10:00:00Z", [
    thread(5, "customer", "Leo", "<p>Can I bring a sea kayak on the ferry?</p>", "2024-05-03T10:00:00Z")])


def page(items, number, total):
    return {"_embedded": {"conversations": items}, "page": {"size": 1, "totalElements": total,
                                                            "totalPages": total, "number": number}}


def mailbox(fake, items=(C1, C2), since=None, headers=AUTH):
    extra = {"modifiedSince": since} if since else {}
    for n, c in enumerate(items, start=1):
        fake.route("GET", "/v2/conversations", query={**LIST, **extra, "page": str(n)}, headers=headers,
                   reply=page([c], n, len(items)))
    if not items:
        fake.route("GET", "/v2/conversations", query={**LIST, **extra, "page": "1"}, headers=headers,
                   reply=page([], 1, 0))


def credentials(**extra):
    return {"access_token": TOKEN, "refresh_token": "hs-refresh-1", "expires_at": time.time() + 86400, **extra}


def oauth_connection(collection, token: dict):
    """A connection made with an injected OAuth token (`authentication: {access_token, ...}`)."""
    return source_connection_create(collection=collection, short_name="helpscout", authentication=token,
                                    sync_immediately=False)


def test_conversations_over_two_pages_with_their_threads(vendor):
    mailbox(vendor(API))
    source = HelpScoutSource(HelpScoutSource.validate_config({}), credentials())
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["conversation:2001", "conversation:2002"]
    refund = entities["conversation:2001"]
    assert isinstance(refund, HelpScoutConversationEntity) and refund.name == "#101 Refund for a cancelled crossing"
    assert refund.threads == ["Mia: My crossing was cancelled, can I get a refund?",
                              "(note) Ana: Checked: storm cancellation.",
                              "Ana: Refunds arrive within five working days."]
    assert refund.web_url == "https://secure.helpscout.net/conversation/2001/101"
    assert source.next_cursor()["since"] == {"conversations": "2024-05-03T10:00:00Z"}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/v2/conversations", query={**LIST, "page": "1"}, headers=AUTH, reply=[
        (429, {"Retry-After": "0", "X-RateLimit-Retry-After": "0"}, {"message": "Too many requests"}),
        (200, {}, page([C1], 1, 1))])
    mailbox(fake)
    source = HelpScoutSource(HelpScoutSource.validate_config({}), credentials())
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and len(waits) == 1


def test_an_expired_token_is_refreshed_and_a_refused_one_needs_reauth(vendor, make_collection):
    fake = vendor(API)
    refresh = fake.route("POST", "/v2/oauth2/token", form={"grant_type": "refresh_token",
                                                           "refresh_token": "hs-refresh-1"},
                         reply={"access_token": TOKEN, "refresh_token": "hs-refresh-2", "token_type": "bearer",
                                "expires_in": 172800})
    mailbox(fake)
    source = HelpScoutSource(HelpScoutSource.validate_config({}), credentials(
        access_token="hs-expired-0123456789", expires_at=time.time() - 1, client_id="cid", client_secret="cs"))
    assert len(list(source.generate_entities({}))) == 2 and refresh.calls == 1

    fake.routes.clear()
    fake.route("GET", "/v2/conversations", query={**LIST, "page": "1"},
               reply=(401, {}, {"error": "invalid_token", "error_description": "The access token is invalid"}))
    connection = oauth_connection(make_collection(), {"access_token": "hs-revoked-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_incremental_then_a_full_listing_removes_a_deleted_conversation(vendor, make_collection, client):
    fake = vendor(API)
    mailbox(fake)
    connection = oauth_connection(make_collection(), credentials())
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    assert search_ids(client, "can I take a sea kayak on board", limit=1) == ["conversation:2002"]

    fake.routes.clear()
    mailbox(fake, items=(), since="2024-05-03T10:00:00Z")
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 0), job.error

    cursor = SyncCursor.objects.get(sync_id=job.sync_id)
    cursor.data = {**cursor.data, "full_at": cursor.data["full_at"] - 8 * 86400}
    cursor.save(update_fields=["data"])
    fake.routes.clear()
    mailbox(fake, items=(C2,))  # conversation 2001 was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        ["conversation:2002"]
