"""The freshservice source against a fake service desk that answers only Freshservice's documented
requests (basic auth `<key>:X`; `updated_since`, `order_type`, `per_page`; `Link` pagination; lists
wrapped as `{"tickets": [...]}`): tickets over two pages with their conversations and published
solution articles with their category and folder, a 429 with Retry-After waited out, a refused key
marking the connection `needs_reauth`, a sync found by search, then an incremental run from the mark
that removes a deleted article."""
from __future__ import annotations

import base64

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.freshservice import FreshserviceArticleEntity, FreshserviceSource, FreshserviceTicketEntity
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.freshservice.com"
KEY = "fsvc_Zm9vYmFyYmF6cXV4MDEyMzQ1Njc4OQ"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{KEY}:X".encode()).decode()}
CONFIG = {"domain": "harbour"}
LIST = {"order_type": "asc", "per_page": "100"}


def ticket(tid, subject, description, updated, status=2, priority=1):
    return {"id": tid, "subject": subject, "description": f"<div>{description}</div>", "description_text": description,
            "status": status, "priority": priority, "type": "Incident", "category": "Hardware", "sub_category": None,
            "tags": [], "requester_id": 9001, "responder_id": None, "group_id": 77, "department_id": 5, "source": 2,
            "created_at": "2024-05-01T08:00:00Z", "updated_at": updated, "due_by": "2024-05-04T08:00:00Z",
            "fr_escalated": False, "spam": False, "is_escalated": False, "custom_fields": {}}


T1 = ticket(101, "Laptop will not boot", "The bridge laptop shows a black screen after the update.",
            "2024-05-02T10:00:00Z")
T2 = ticket(102, "Request a radio headset", "The deck crew needs two more radio headsets for night shifts.",
            "2024-05-03T10:00:00Z", status=4, priority=2)
THREADS = {101: [{"id": 5001, "body": "<div>Rolled back the driver.</div>", "body_text": "Rolled back the display "
                  "driver; it boots again.", "incoming": False, "private": False, "user_id": 12,
                  "created_at": "2024-05-02T10:00:00Z", "updated_at": "2024-05-02T10:00:00Z", "ticket_id": 101}],
           102: []}
CATEGORY = {"id": 31, "name": "IT help", "description": "", "position": 1, "default_category": False}
FOLDER = {"id": 41, "name": "Radios", "category_id": 31, "visibility": 1, "position": 1}


def article(aid, title, text, status=2):
    return {"id": aid, "title": title, "description": f"<p>{text}</p>", "description_text": text, "status": status,
            "folder_id": 41, "category_id": 31, "tags": ["radio"], "keywords": [], "thumbs_up": 0,
            "thumbs_down": 0, "created_at": "2024-03-01T08:00:00Z", "updated_at": "2024-03-02T08:00:00Z"}


PAIRING = article(61, "Pairing a radio headset", "Hold the talk button for five seconds until the light blinks blue.")
CHARGING = article(62, "Charging radios", "Radios charge overnight in the rack behind the bridge.")
DRAFT = article(63, "Draft: new radios", "Not ready yet.", status=1)


def desk(fake, tickets=((T1,), (T2,)), since="1970-01-01T00:00:00Z", articles=(PAIRING, CHARGING, DRAFT)):
    pages = list(tickets)
    for n, page in enumerate(pages, start=1):
        query = {**LIST, "updated_since": since, **({"page": str(n)} if n > 1 else {})}
        link = {"Link": f'<{SITE}/api/v2/tickets?updated_since={since}&order_type=asc&per_page=100&page={n + 1}>; '
                        'rel="next"'} if n < len(pages) else {}
        fake.route("GET", "/api/v2/tickets", query=query, headers=AUTH, reply=(200, link, {"tickets": list(page)}))
    for tid, thread in THREADS.items():
        fake.route("GET", f"/api/v2/tickets/{tid}/conversations", query={"per_page": "100"}, headers=AUTH,
                   reply={"conversations": thread, "meta": {"count": len(thread)}})
    fake.route("GET", "/api/v2/solutions/categories", headers=AUTH, reply={"categories": [CATEGORY]})
    fake.route("GET", "/api/v2/solutions/folders", query={"category_id": "31"}, headers=AUTH,
               reply={"folders": [FOLDER]})
    fake.route("GET", "/api/v2/solutions/articles", query={"folder_id": "41"}, headers=AUTH,
               reply={"articles": list(articles)})


def test_tickets_over_two_pages_and_published_articles(vendor):
    desk(vendor(SITE))
    source = FreshserviceSource(FreshserviceSource.validate_config({"domain": "harbour.freshservice.com"}),
                                {"api_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["article:61", "article:62", "ticket:101", "ticket:102"]
    laptop = entities["ticket:101"]
    assert isinstance(laptop, FreshserviceTicketEntity) and laptop.web_url == f"{SITE}/helpdesk/tickets/101"
    assert laptop.conversations == ["Rolled back the display driver; it boots again."]
    assert "status: Open" in laptop.details and entities["ticket:102"].raw_source_fields["status"] == "Resolved"
    pairing = entities["article:61"]
    assert isinstance(pairing, FreshserviceArticleEntity) and [b.name for b in pairing.breadcrumbs] == ["IT help",
                                                                                                        "Radios"]
    assert pairing.web_url == f"{SITE}/support/solutions/articles/61"
    cursor = source.next_cursor()
    assert source.is_full_listing() and cursor["since"] == {"tickets": "2024-05-03T10:00:00Z"}
    assert cursor["ids"] == {"articles": ["article:61", "article:62"]}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/v2/tickets", query={**LIST, "updated_since": "1970-01-01T00:00:00Z"},
                         headers=AUTH, reply=[(429, {"Retry-After": "0"}, {"message": "You have exceeded the limit "
                                                                           "of requests per minute"}),
                                              (200, {}, {"tickets": [T1]})])
    desk(fake, tickets=((T1,),))
    source = FreshserviceSource(FreshserviceSource.validate_config({**CONFIG, "include_articles": False}),
                                {"api_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and waits == [0]


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(SITE).route("GET", "/api/v2/tickets", query={**LIST, "updated_since": "1970-01-01T00:00:00Z"},
                       reply=(401, {}, {"code": "invalid_credentials", "message": "You have to be logged in to "
                                                                                  "perform this action."}))
    connection = connect(make_collection(), "freshservice", {"api_key": "revoked-key-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_removes_a_deleted_article(vendor, make_collection, client):
    fake = vendor(SITE)
    desk(fake)
    connection = connect(make_collection(), "freshservice", {"api_key": KEY}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "how do I pair a headset", limit=1) == ["article:61"]

    fake.routes.clear()
    mark = "2024-05-03T10:00:00Z"
    desk(fake, tickets=([],), since=mark, articles=(PAIRING,))
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        {"article:61", "ticket:101", "ticket:102"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"tickets": mark}
