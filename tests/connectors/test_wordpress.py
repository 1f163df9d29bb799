"""The wordpress source against a fake site that answers only the REST API requests WordPress
documents (`per_page`, `page`, `orderby`, `order`, `modified_after`, `_fields`; `X-WP-TotalPages`
paging): posts over two pages, pages with a parent, categories as breadcrumbs, a 429 with
Retry-After waited out, a refused application password marking the connection `needs_reauth`,
a sync found by search, then an incremental run that reads what was modified and removes a
trashed post."""
from __future__ import annotations

import base64

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import wordpress
from connectors.sources.wordpress import FIELDS, WordPressPageEntity, WordPressPostEntity, WordPressSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://blog.harbour.example"
CONFIG = {"site_url": SITE}
LIST = {"orderby": "modified", "order": "asc", "_fields": FIELDS, "per_page": "2"}


def post(pid, title, html, modified, categories=(3,)):
    return {"id": pid, "date_gmt": "2024-04-01T09:00:00", "modified_gmt": modified, "slug": title.lower().replace(" ", "-"),
            "link": f"{SITE}/{title.lower().replace(' ', '-')}/", "title": {"rendered": title},
            "content": {"rendered": html, "protected": False}, "excerpt": {"rendered": ""}, "author": 1,
            "categories": list(categories), "tags": [], "parent": 0}


POSTS = [post(11, "Summer timetable", "<p>From June the <strong>ferry</strong> runs every hour.</p>",
              "2024-05-01T09:00:00"),
         post(12, "New car deck", "<p>The new car deck takes vans up to 3.2 metres.</p>", "2024-05-02T09:00:00"),
         post(13, "Harbour festival", "<p>The festival closes the quay on 21 June.</p>", "2024-05-03T09:00:00")]
PAGES = [post(20, "About", "<p>We run ferries since 1952.</p>", "2024-03-01T09:00:00", categories=()),
         {**post(21, "Team", "<p>Captains and crew.</p>", "2024-03-02T09:00:00", categories=()), "parent": 20}]


def listing(fake, kind, items, extra=None, per_page=2):
    pages = [items[i:i + per_page] for i in range(0, len(items), per_page)] or [[]]
    for n, chunk in enumerate(pages, start=1):
        fake.route("GET", f"/wp-json/wp/v2/{kind}", query={**LIST, **(extra or {}), "page": str(n)},
                   reply=(200, {"X-WP-Total": str(len(items)), "X-WP-TotalPages": str(len(pages))}, chunk))
        fake.route("GET", f"/wp-json/wp/v2/{kind}", query={"_fields": "id", "per_page": "2", "page": str(n)},
                   reply=(200, {"X-WP-TotalPages": str(len(pages))}, [{"id": i["id"]} for i in chunk]))


def site(fake, posts=POSTS, pages=PAGES, extra=None, ids=None):
    fake.route("GET", "/wp-json/wp/v2/categories", query={"_fields": "id,name", "per_page": "2", "page": "1"},
               reply=(200, {"X-WP-TotalPages": "1"}, [{"id": 3, "name": "News"}]))
    listing(fake, "posts", posts, extra)
    listing(fake, "pages", pages, extra)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(wordpress, "PER_PAGE", 2)


def test_posts_over_two_pages_and_pages_with_a_parent(vendor):
    site(vendor(SITE))
    source = WordPressSource(WordPressSource.validate_config(CONFIG), {})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["page:20", "page:21", "post:11", "post:12", "post:13"]
    deck = entities["post:12"]
    assert isinstance(deck, WordPressPostEntity) and deck.content == "The new car deck takes vans up to 3.2 metres."
    assert deck.web_url == f"{SITE}/new-car-deck/" and [b.name for b in deck.breadcrumbs] == ["News"]
    team = entities["page:21"]
    assert isinstance(team, WordPressPageEntity) and [b.name for b in team.breadcrumbs] == ["About"]
    assert source.next_cursor() == {"since": {"posts": "2024-05-03T09:00:00", "pages": "2024-03-02T09:00:00"}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/wp-json/wp/v2/categories", query={"_fields": "id,name", "per_page": "2",
                                                                    "page": "1"},
                         reply=[(429, {"Retry-After": "0"}, "Too Many Requests"), (200, {}, [])])
    site(fake)
    source = WordPressSource(WordPressSource.validate_config(CONFIG), {})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 5 and limited.calls == 2 and len(waits) == 1


def test_a_refused_application_password_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    basic = "Basic " + base64.b64encode(b"editor:abcd efgh ijkl mnop qrst uvwx").decode()
    fake.route("GET", "/wp-json/wp/v2/categories", query={"_fields": "id,name", "per_page": "2", "page": "1"},
               headers={"Authorization": basic},
               reply=(401, {}, {"code": "incorrect_password", "message": "The provided password is an invalid "
                                "application password.", "data": {"status": 401}}))
    connection = connect(make_collection(), "wordpress",
                         {"username": "editor", "application_password": "abcd efgh ijkl mnop qrst uvwx"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_a_modified_post_is_read_and_a_trashed_one_removed(vendor, make_collection, client):
    fake = vendor(SITE)
    site(fake)
    connection = connect(make_collection(), "wordpress", {}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error
    assert search_ids(client, "how tall can a van be on the car deck", limit=1) == ["post:12"]

    fake.routes.clear()
    edited = post(11, "Summer timetable", "<p>From June the ferry runs every half hour.</p>", "2024-05-05T09:00:00")
    # Post 13 was trashed: gone from the id listing. Marks less a day: 2024-05-02T09:00:00Z, 2024-03-01T09:00:00Z.
    fake.route("GET", "/wp-json/wp/v2/categories", query={"_fields": "id,name", "per_page": "2", "page": "1"},
               reply=(200, {"X-WP-TotalPages": "1"}, [{"id": 3, "name": "News"}]))
    for kind, items, mark in (("posts", [edited], "2024-05-02T09:00:00Z"), ("pages", [], "2024-03-01T09:00:00Z")):
        fake.route("GET", f"/wp-json/wp/v2/{kind}", query={**LIST, "modified_after": mark, "page": "1"},
                   reply=(200, {"X-WP-TotalPages": "1"}, items))
    fake.route("GET", "/wp-json/wp/v2/posts", query={"_fields": "id", "per_page": "2", "page": "1"},
               reply=(200, {"X-WP-TotalPages": "1"}, [{"id": 11}, {"id": 12}]))
    fake.route("GET", "/wp-json/wp/v2/pages", query={"_fields": "id", "per_page": "2", "page": "1"},
               reply=(200, {"X-WP-TotalPages": "1"}, [{"id": 20}, {"id": 21}]))
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"post:11", "post:12", "page:20", "page:21"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"]["posts"] == "2024-05-05T09:00:00"
