"""The ghost source against a fake site that answers only the Content API requests Ghost
documents (`key`, `limit`, `page`, `include`, `formats`, `order`, `filter`, `fields`;
`Accept-Version`): posts over two pages, pages, tags as breadcrumbs, a 429 with Retry-After
waited out, an unknown key marking the connection `needs_reauth`, a sync found by search, then an
incremental run that reads what was updated and removes an unpublished post."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import ghost
from connectors.sources.ghost import GhostPageEntity, GhostPostEntity, GhostSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://news.harbour.example"
KEY = "22444f78447824223cefc48062"
CONFIG = {"site_url": SITE}
HEADERS = {"Accept-Version": "v5.0"}
LIST = {"key": KEY, "limit": "2", "include": "tags,authors", "formats": "html", "order": "updated_at asc"}
TAG = {"id": "6612a1", "name": "Timetables", "slug": "timetables"}


def item(iid, title, html, updated, tags=(TAG,)):
    slug = title.lower().replace(" ", "-")
    return {"id": iid, "uuid": f"uuid-{iid}", "title": title, "slug": slug, "html": html, "url": f"{SITE}/{slug}/",
            "created_at": "2024-04-01T09:00:00.000+00:00", "updated_at": updated,
            "published_at": "2024-04-01T09:00:00.000+00:00", "visibility": "public", "featured": False,
            "tags": list(tags), "primary_tag": tags[0] if tags else None,
            "authors": [{"id": "1", "name": "Ana Lima", "slug": "ana"}], "excerpt": ""}


POSTS = [item("661a", "Winter sailings", "<p>In winter the last ferry leaves at 18:00.</p>",
              "2024-05-01T09:00:00.000+00:00"),
         item("661b", "Bikes on board", "<p>Bikes travel free on every crossing.</p>", "2024-05-02T09:00:00.000+00:00"),
         item("661c", "Lost property", "<p>Ask at the ticket office for lost umbrellas.</p>",
              "2024-05-03T09:00:00.000+00:00", tags=())]
PAGES = [item("662a", "Contact", "<p>Call the harbour office on 0123.</p>", "2024-03-01T09:00:00.000+00:00", ())]


def meta(page, pages):
    return {"pagination": {"page": page, "limit": 2, "pages": pages, "total": 0, "next": page + 1 if page < pages else None,
                           "prev": page - 1 if page > 1 else None}}


def listing(fake, kind, items, extra=None):
    chunks = [items[i:i + 2] for i in range(0, len(items), 2)] or [[]]
    for n, chunk in enumerate(chunks, start=1):
        fake.route("GET", f"/ghost/api/content/{kind}/", query={**LIST, **(extra or {}), "page": str(n)},
                   headers=HEADERS, reply={kind: chunk, "meta": meta(n, len(chunks))})


def ids(fake, kind, items):
    fake.route("GET", f"/ghost/api/content/{kind}/", query={"key": KEY, "fields": "id", "limit": "all"},
               headers=HEADERS, reply={kind: [{"id": i["id"]} for i in items], "meta": meta(1, 1)})


def site(fake):
    for kind, items in (("posts", POSTS), ("pages", PAGES)):
        ids(fake, kind, items)
        listing(fake, kind, items)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(ghost, "LIMIT", 2)


def test_posts_over_two_pages_and_pages(vendor):
    site(vendor(SITE))
    source = GhostSource(GhostSource.validate_config(CONFIG), {"content_api_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["page:662a", "post:661a", "post:661b", "post:661c"]
    bikes = entities["post:661b"]
    assert isinstance(bikes, GhostPostEntity) and bikes.content == "Bikes travel free on every crossing."
    assert bikes.web_url == f"{SITE}/bikes-on-board/" and [b.name for b in bikes.breadcrumbs] == ["Timetables"]
    assert isinstance(entities["page:662a"], GhostPageEntity)
    assert source.next_cursor()["since"]["posts"] == "2024-05-03T09:00:00.000+00:00"


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/ghost/api/content/posts/", query={"key": KEY, "fields": "id", "limit": "all"},
                         reply=[(429, {"Retry-After": "0"}, {"errors": [{"type": "TooManyRequestsError"}]}),
                                (200, {}, {"posts": [], "meta": meta(1, 1)})])
    site(fake)
    source = GhostSource(GhostSource.validate_config(CONFIG), {"content_api_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and len(waits) == 1


def test_an_unknown_key_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", "/ghost/api/content/posts/", query={"key": "0000revoked0000key0000", "fields": "id",
                                                          "limit": "all"},
               reply=(401, {}, {"errors": [{"message": "Unknown Content API Key", "type": "UnauthorizedError"}]}))
    connection = connect(make_collection(), "ghost", {"content_api_key": "0000revoked0000key0000"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_an_updated_post_is_read_and_an_unpublished_one_removed(vendor, make_collection, client):
    fake = vendor(SITE)
    site(fake)
    connection = connect(make_collection(), "ghost", {"content_api_key": KEY}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "when does the last ferry leave in winter", limit=1) == ["post:661a"]

    fake.routes.clear()
    edited = item("661a", "Winter sailings", "<p>In winter the last ferry leaves at 17:30.</p>",
                  "2024-05-05T09:00:00.000+00:00")
    ids(fake, "posts", [edited, POSTS[1]])  # 661c was unpublished
    ids(fake, "pages", PAGES)
    listing(fake, "posts", [edited], {"filter": "updated_at:>'2024-05-03T09:00:00.000+00:00'"})
    listing(fake, "pages", [], {"filter": "updated_at:>'2024-03-01T09:00:00.000+00:00'"})
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"post:661a", "post:661b", "page:662a"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"]["posts"] == "2024-05-05T09:00:00.000+00:00"
