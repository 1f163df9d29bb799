"""The freshdesk source against a fake help desk that answers only Freshdesk's documented
requests (basic auth `<key>:X`; the list's `updated_since`, `order_by`, `order_type`, `per_page`,
`include`; `Link` pagination): tickets over two pages with their conversations, a 429 with
Retry-After waited out, a refused key marking the connection `needs_reauth`, a sync found by
search, then an incremental run from the mark that removes a deleted ticket."""
from __future__ import annotations

import base64

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.freshdesk import FreshdeskSource, FreshdeskTicketEntity
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.freshdesk.com"
KEY = "sFk2bW9pZ3JhbnRzYXJlY29vbA"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{KEY}:X".encode()).decode()}
CONFIG = {"domain": "harbour"}
LIST = {"order_by": "updated_at", "order_type": "asc", "per_page": "100", "include": "description"}


def ticket(tid, subject, description, updated, status=2, priority=1, tags=()):
    return {"id": tid, "subject": subject, "description": f"<div>{description}</div>",
            "description_text": description, "status": status, "priority": priority, "type": "Question",
            "tags": list(tags), "requester_id": 9001, "responder_id": None, "group_id": None, "source": 1,
            "created_at": "2024-05-01T08:00:00Z", "updated_at": updated, "due_by": "2024-05-04T08:00:00Z",
            "fr_escalated": False, "spam": False, "is_escalated": False, "custom_fields": {}}


T1 = ticket(41, "Refund for a cancelled ferry", "My 7am ferry was cancelled. How do I get my money back?",
            "2024-05-02T10:00:00Z", tags=["refunds"])
T2 = ticket(42, "Car deck height", "Can a camper van of 3.1 metres board the evening ferry?", "2024-05-03T10:00:00Z",
            status=4, priority=2)
CONVERSATIONS = {41: [{"id": 7001, "body": "<div>Refunds are automatic.</div>",
                       "body_text": "Refunds for cancelled sailings are automatic within five working days.",
                       "incoming": False, "private": False, "user_id": 12, "created_at": "2024-05-02T10:00:00Z",
                       "updated_at": "2024-05-02T10:00:00Z", "ticket_id": 41},
                      {"id": 7002, "body_text": "Checked the booking, refund issued.", "incoming": False,
                       "private": True, "user_id": 12, "created_at": "2024-05-02T10:05:00Z",
                       "updated_at": "2024-05-02T10:05:00Z", "ticket_id": 41}],
                 42: []}


def desk(fake, tickets=((T1,), (T2,)), since="1970-01-01T00:00:00Z"):
    pages = list(tickets)
    for n, page in enumerate(pages, start=1):
        query = {**LIST, "updated_since": since}
        if n > 1:
            query["page"] = str(n)
        link = {"Link": f'<{SITE}/api/v2/tickets?{"&".join(f"{k}={v}" for k, v in {**LIST, "updated_since": since}.items())}&page={n + 1}>; rel="next"'} \
            if n < len(pages) else {}
        fake.route("GET", "/api/v2/tickets", query=query, headers=AUTH, reply=(200, link, list(page)))
    for tid, thread in CONVERSATIONS.items():
        fake.route("GET", f"/api/v2/tickets/{tid}/conversations", query={"per_page": "100"}, headers=AUTH,
                   reply=thread)


def test_tickets_over_two_pages_with_their_conversations(vendor):
    desk(vendor(SITE))
    source = FreshdeskSource(FreshdeskSource.validate_config({"domain": "https://harbour.freshdesk.com/"}),
                             {"api_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["ticket:41", "ticket:42"]
    refund = entities["ticket:41"]
    assert isinstance(refund, FreshdeskTicketEntity) and refund.name == "#41 Refund for a cancelled ferry"
    assert refund.web_url == f"{SITE}/a/tickets/41" and refund.status == "Open" and refund.tags == ["refunds"]
    assert refund.conversations[1] == "(note) Checked the booking, refund issued."
    assert entities["ticket:42"].status == "Resolved"
    assert source.is_full_listing() and source.next_cursor() == {"since": {"tickets": "2024-05-03T10:00:00Z"}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/v2/tickets", query={**LIST, "updated_since": "1970-01-01T00:00:00Z"},
                         headers=AUTH, reply=[(429, {"Retry-After": "0"}, {"message": "You have exceeded the limit "
                                                                           "of requests per minute"}),
                                              (200, {}, [T1])])
    desk(fake, tickets=((T1,),))
    source = FreshdeskSource(FreshdeskSource.validate_config(CONFIG), {"api_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and len(waits) == 1


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", "/api/v2/tickets", query={**LIST, "updated_since": "1970-01-01T00:00:00Z"},
               reply=(401, {}, {"code": "invalid_credentials", "message": "You have to be logged in to perform "
                                                                          "this action."}))
    connection = connect(make_collection(), "freshdesk", {"api_key": "revoked-key-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_an_incremental_run_removes_a_deleted_ticket(vendor, make_collection, client):
    fake = vendor(SITE)
    desk(fake)
    connection = connect(make_collection(), "freshdesk", {"api_key": KEY}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    assert search_ids(client, "can a tall camper van board the ferry", limit=1) == ["ticket:42"]

    fake.routes.clear()
    mark = "2024-05-03T10:00:00Z"
    desk(fake, tickets=([],), since=mark)
    fake.route("GET", "/api/v2/tickets", query={"filter": "deleted", "updated_since": mark, "per_page": "100"},
               headers=AUTH, reply=[{**T1, "deleted": True, "updated_at": "2024-05-04T09:00:00Z"}])
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        ["ticket:42"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"tickets": mark}
