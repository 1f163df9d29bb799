"""The bookstack source against a fake wiki that answers only BookStack's documented requests
(`Authorization: Token <id>:<secret>`, `count`/`offset`/`sort` on the listings): books, chapters,
pages over two listing pages, page contents, a 429 with Retry-After waited out, a refused token
marking the connection `needs_reauth`, a sync found by search, then an incremental run that
reads only the changed page and removes a deleted one."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import bookstack
from connectors.sources.bookstack import BookStackPageEntity, BookStackSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://wiki.harbour.example"
CREDENTIALS = {"token_id": "Gm4WxLcT1oZ8pQ2r", "token_secret": "s3cr3t-9f8e7d6c5b4a39281706"}
AUTH = {"Authorization": f"Token {CREDENTIALS['token_id']}:{CREDENTIALS['token_secret']}"}
BOOK = {"id": 1, "name": "Operations Manual", "slug": "operations-manual", "description": "How the harbour runs",
        "created_at": "2024-01-01T09:00:00.000000Z", "updated_at": "2024-04-01T09:00:00.000000Z", "owned_by": 1}
CHAPTER = {"id": 4, "book_id": 1, "name": "Weather", "slug": "weather", "description": "Storms and fog",
           "priority": 1, "created_at": "2024-01-01T09:00:00.000000Z", "updated_at": "2024-04-01T09:00:00.000000Z"}


def page(pid, name, slug, updated, chapter_id=4, draft=False):
    return {"id": pid, "book_id": 1, "chapter_id": chapter_id, "name": name, "slug": slug, "priority": pid,
            "draft": draft, "template": False, "revision_count": 2, "created_at": "2024-02-01T09:00:00.000000Z",
            "updated_at": updated, "created_by": 1, "updated_by": 1, "owned_by": 1}


FOG = page(10, "Fog signals", "fog-signals", "2024-05-01T09:00:00.000000Z")
STORM = page(11, "Storm procedure", "storm-procedure", "2024-05-03T09:00:00.000000Z")
DRAFT = page(12, "Untitled draft", "untitled", "2024-05-03T10:00:00.000000Z", draft=True)
CONTENT = {10: "# Fog signals\n\nThe horn sounds one long blast every two minutes in fog.",
           11: "# Storm procedure\n\nAbove 50 knots every sailing is suspended."}


def listing(fake, kind, rows, offset=0, total=None):
    fake.route("GET", f"/api/{kind}", query={"count": "2", "offset": str(offset), "sort": "+id"}, headers=AUTH,
               reply={"data": rows, "total": len(rows) if total is None else total})


def wiki(fake, pages=(FOG, STORM, DRAFT), content=CONTENT):
    listing(fake, "books", [BOOK])
    listing(fake, "chapters", [CHAPTER])
    pages = list(pages)
    for offset in range(0, max(len(pages), 1), 2):
        listing(fake, "pages", pages[offset:offset + 2], offset, total=len(pages))
    for pid, markdown in content.items():
        fake.route("GET", f"/api/pages/{pid}", headers=AUTH,
                   reply={**next(p for p in (FOG, STORM) if p["id"] == pid), "markdown": markdown,
                          "html": "<p>ignored</p>", "book_slug": "operations-manual"})


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(bookstack, "PAGE", 2)


def make():
    return BookStackSource(BookStackSource.validate_config({"base_url": SITE + "/"}), dict(CREDENTIALS))


def test_books_chapters_and_pages_over_two_listing_pages(vendor):
    wiki(vendor(SITE))
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["book:1", "chapter:4", "page:10", "page:11"]  # the draft left out
    storm = entities["page:11"]
    assert isinstance(storm, BookStackPageEntity) and "50 knots" in storm.text
    assert storm.web_url == f"{SITE}/books/operations-manual/page/storm-procedure"
    assert [b.name for b in storm.breadcrumbs] == ["Operations Manual", "Weather"]
    assert source.is_full_listing() and source.next_cursor() == {"since": {"pages": "2024-05-03T09:00:00.000000Z"}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/books", query={"count": "2", "offset": "0", "sort": "+id"}, headers=AUTH,
                         reply=[(429, {"Retry-After": "0"}, {"error": {"code": 429, "message": "Too Many Attempts."}}),
                                (200, {}, {"data": [BOOK], "total": 1})])
    wiki(fake)
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", "/api/books", query={"count": "2", "offset": "0", "sort": "+id"},
               reply=(401, {}, {"error": {"code": 401, "message": "The given token was not found"}}))
    connection = connect(make_collection(), "bookstack", {**CREDENTIALS, "token_secret": "revoked-0123456789"},
                         {"base_url": SITE})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_only_the_changed_page_is_read_and_a_deleted_one_removed(vendor, make_collection, client):
    fake = vendor(SITE)
    wiki(fake)
    connection = connect(make_collection(), "bookstack", dict(CREDENTIALS), {"base_url": SITE})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "what does the horn do in fog", limit=1) == ["page:10"]

    fake.routes.clear()
    edited = {**STORM, "updated_at": "2024-05-05T09:00:00.000000Z"}
    wiki(fake, pages=(edited,), content={})  # the fog page was deleted; only the edited page may be read
    fake.route("GET", "/api/pages/11", headers=AUTH,
               reply={**edited, "markdown": "# Storm procedure\n\nAbove 45 knots every sailing is suspended."})
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"book:1", "chapter:4", "page:11"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {"pages": "2024-05-05T09:00:00.000000Z"}}
