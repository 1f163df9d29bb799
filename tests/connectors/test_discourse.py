"""The discourse source against a fake forum that answers only Discourse's documented requests
(path, query, `Api-Key` / `Api-Username` headers): categories with a subcategory, `latest.json`
over two pages, a topic whose posts come in two requests, a 429 with Retry-After waited out, a
refused key marking the connection `needs_reauth`, a sync found by search, then an incremental
run that stops at the mark and removes a deleted topic (404)."""
from __future__ import annotations

import copy
from urllib.parse import parse_qs, urlsplit

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import discourse
from connectors.sources.discourse import DiscourseSource, DiscourseTopicEntity
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://forum.example.org"
CREDENTIALS = {"api_key": "0f6c2b1e9d8a7f6e5d4c3b2a19081726354a5b6c7d8e9f00", "api_username": "system"}
AUTH = {"Api-Key": CREDENTIALS["api_key"], "Api-Username": "system"}
CONFIG = {"site_url": SITE}

CATEGORIES = {"category_list": {"can_create_category": False, "draft": None, "categories": [
    {"id": 5, "name": "Support", "color": "0088CC", "slug": "support", "topic_count": 2, "post_count": 5,
     "position": 1, "description_text": "Ask for help with the harbour booking app.", "read_restricted": False,
     "subcategory_ids": [9], "subcategory_list": [
         {"id": 9, "name": "Payments", "slug": "payments", "topic_count": 1, "parent_category_id": 5,
          "description_text": "Card and invoice questions."}]}]}}


def summary(topic_id, title, slug, bumped, category, pinned=False):
    return {"id": topic_id, "title": title, "fancy_title": title, "slug": slug, "posts_count": 2,
            "reply_count": 1, "created_at": "2024-05-01T08:00:00.000Z", "last_posted_at": bumped,
            "bumped": True, "bumped_at": bumped, "pinned": pinned, "visible": True, "closed": False,
            "archived": False, "category_id": category, "tags": [], "posters": []}


PAGE_1 = {"users": [], "primary_groups": [], "topic_list": {
    "can_create_topic": True, "more_topics_url": "/latest?order=activity&page=1", "per_page": 2,
    "top_tags": [], "topics": [summary(101, "Refund for a cancelled ferry", "refund-for-a-cancelled-ferry",
                                       "2024-05-03T10:00:00.000Z", 9),
                               summary(102, "App crashes when I open my tickets", "app-crashes-tickets",
                                       "2024-05-02T10:00:00.000Z", 5)]}}
PAGE_2 = {"users": [], "topic_list": {"can_create_topic": True, "per_page": 2, "topics": [
    summary(103, "Dark mode", "dark-mode", "2024-04-01T10:00:00.000Z", 5)]}}


def post(post_id, number, who, html, topic_id):
    return {"id": post_id, "name": who, "username": who.lower().replace(" ", ""), "post_number": number,
            "cooked": html, "created_at": "2024-05-01T08:00:00.000Z", "updated_at": "2024-05-01T08:00:00.000Z",
            "topic_id": topic_id, "reply_to_post_number": None}


def topic(topic_id, title, slug, posts, stream=None, tags=()):
    return {"id": topic_id, "title": title, "slug": slug, "posts_count": len(stream or posts),
            "created_at": "2024-05-01T08:00:00.000Z", "last_posted_at": "2024-05-03T10:00:00.000Z", "views": 40,
            "closed": False, "archived": False, "category_id": 9, "tags": list(tags),
            "post_stream": {"posts": posts, "stream": stream or [p["id"] for p in posts]}}


TOPICS = {
    101: topic(101, "Refund for a cancelled ferry", "refund-for-a-cancelled-ferry",
               [post(1001, 1, "Ana Lima", "<p>My 7am ferry was cancelled by the storm. How do I get a refund?</p>",
                     101)], stream=[1001, 1002], tags=["refunds"]),
    102: topic(102, "App crashes when I open my tickets", "app-crashes-tickets",
               [post(1003, 1, "Bo Chen", "<p>The app closes as soon as I open <em>My tickets</em>.</p>", 102),
                post(1004, 2, "Staff", "<p>Fixed in version 4.2, please update.</p>", 102)]),
    103: topic(103, "Dark mode", "dark-mode", [post(1005, 1, "Cy Dee", "<p>Please add a dark theme.</p>", 103),
                                               post(1006, 2, "Staff", "<p>It is on the roadmap.</p>", 103)]),
}
MORE_POSTS = {"post_stream": {"posts": [post(1002, 2, "Staff", "<p>Refunds for cancelled sailings are automatic "
                                                            "within five working days.</p>", 101)]}}


def only_post_ids(*ids):
    def match(request):
        return parse_qs(urlsplit(request.url).query) == {"post_ids[]": [str(i) for i in ids]}
    return match


def forum(fake, latest=(PAGE_1, PAGE_2), topics=TOPICS):
    fake.route("GET", "/categories.json", query={"include_subcategories": "true"}, headers=AUTH, reply=CATEGORIES)
    for page, body in enumerate(latest):
        fake.route("GET", "/latest.json", query={"order": "activity", "page": str(page)}, headers=AUTH, reply=body)
    for topic_id, body in topics.items():
        fake.route("GET", f"/t/{topic_id}.json", headers=AUTH, reply=body)
    fake.route("GET", "/t/101/posts.json", query={"post_ids[]": lambda _: True}, headers=AUTH, reply=MORE_POSTS)


@pytest.fixture(autouse=True)
def small_post_requests(monkeypatch):
    monkeypatch.setattr(discourse, "POSTS_PER_REQUEST", 1)


def test_categories_topics_over_pages_and_posts_over_two_requests(vendor):
    fake = vendor(SITE)
    forum(fake)
    source = DiscourseSource(DiscourseSource.validate_config(CONFIG), dict(CREDENTIALS))
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["category:5", "category:9", "topic:101", "topic:102", "topic:103"]
    refund = entities["topic:101"]
    assert isinstance(refund, DiscourseTopicEntity) and refund.web_url == f"{SITE}/t/refund-for-a-cancelled-ferry/101"
    assert [b.name for b in refund.breadcrumbs] == ["Support", "Payments"] and refund.tags == ["refunds"]
    assert refund.posts == ["Ana Lima: My 7am ferry was cancelled by the storm. How do I get a refund?",
                            "Staff: Refunds for cancelled sailings are automatic within five working days."]
    assert [b.name for b in entities["category:9"].breadcrumbs] == ["Support"]
    posts_request = [r for r in fake.requests if "/posts.json" in r.url][0]
    assert only_post_ids(1002)(posts_request)
    assert source.is_full_listing() and source.next_cursor()["since"] == {"topics": "2024-05-03T10:00:00.000Z"}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/categories.json", query={"include_subcategories": "true"}, headers=AUTH,
                         reply=[(429, {"Retry-After": "0"}, {"errors": ["You’ve performed this action too many "
                                                                        "times."], "error_type": "rate_limit"}),
                                (200, {}, CATEGORIES)])
    forum(fake)
    source = DiscourseSource(DiscourseSource.validate_config(CONFIG), dict(CREDENTIALS))
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 5 and limited.calls == 2 and len(waits) == 1


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    refused = fake.route("GET", "/categories.json", query={"include_subcategories": "true"},
                         headers={**AUTH, "Api-Key": "revoked-key-0123456789"},
                         reply=(403, {}, {"errors": ["You are not permitted to view the requested resource. The API "
                                                     "username or key is invalid."], "error_type": "invalid_access"}))
    connection = connect(make_collection(), "discourse", {**CREDENTIALS, "api_key": "revoked-key-0123456789"},
                         CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials") and refused.calls == 1
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_an_incremental_run_stops_at_the_mark_and_removes_a_deleted_topic(
        vendor, make_collection, client):
    fake = vendor(SITE)
    forum(fake)
    connection = connect(make_collection(), "discourse", dict(CREDENTIALS), CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error
    assert search_ids(client, "how long until a refund for a cancelled sailing", limit=1) == ["topic:101"]

    # Topic 102 got a reply, then was deleted before the run read it; 101 is older than the mark's
    # neighbour and stops the walk (page 2 is never asked for).
    fake.routes.clear()
    bumped = copy.deepcopy(PAGE_1)
    bumped["topic_list"]["topics"] = [summary(102, "App crashes when I open my tickets", "app-crashes-tickets",
                                              "2024-05-04T09:00:00.000Z", 5)] + PAGE_1["topic_list"]["topics"][:1]
    forum(fake, latest=(bumped,), topics={})
    fake.route("GET", "/t/102.json", headers=AUTH, reply=(404, {}, {"errors": ["The requested URL or resource "
                                                                               "could not be found."],
                                                                    "error_type": "not_found"}))
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"category:5", "category:9", "topic:101", "topic:103"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"topics": "2024-05-04T09:00:00.000Z"}


def test_a_private_forum_address_is_refused_over_the_api(client, make_collection):
    make_collection()
    r = client.post("/source-connections", {"short_name": "discourse", "readable_collection_id": "docs",
                                            "config": {"site_url": "http://10.0.0.5"},
                                            "authentication": {"credentials": CREDENTIALS}}, format="json")
    assert r.status_code == 422, r.content
