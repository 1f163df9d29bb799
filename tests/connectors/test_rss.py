"""The rss source against feed servers that answer only what a feed reader sends (the vendor
fake): an Atom feed paged by RFC 5005 `rel="next"`, an RSS 2.0 feed, entity fields, a 429 with
Retry-After waited out, a refused password marking the connection `needs_reauth`, conditional
requests (ETag → 304), a sync found by search, and deletions: a feed removed from the config, a
feed answering 410 Gone, an item gone from a `mirror` feed; private hosts refused over the API."""
from __future__ import annotations

from pathlib import Path

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.rss import FeedItemEntity, RssSource, feed_key
from tests.connectors.saas_cases import connect, run_sync, search_ids

FIXTURES = Path(__file__).parent / "fixtures" / "rss"
BLOG, STATUS = "https://blog.example.org/feed.atom", "https://status.example.org/history.rss"
ATOM = {"Content-Type": "application/atom+xml; charset=utf-8"}


def xml(name):
    return (FIXTURES / name).read_text()


def blog(fake, etag='"v1"'):
    first = fake.route("GET", "/feed.atom", reply=(200, {**ATOM, "ETag": etag}, xml("blog_page_1.xml")))
    second = fake.route("GET", "/feed.atom", query={"page": "2"}, reply=(200, ATOM, xml("blog_page_2.xml")))
    return first, second


def status(fake, reply=None):
    return fake.route("GET", "/history.rss", reply=reply or (200, {"Content-Type": "application/rss+xml"},
                                                              xml("status.rss")))


def make(**config):
    return RssSource(RssSource.validate_config({"feed_urls": [BLOG, STATUS], **config}), {})


def test_an_atom_feed_over_two_pages_and_an_rss_feed(vendor):
    blog(vendor("https://blog.example.org"))
    status(vendor("https://status.example.org"))
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    key = feed_key(BLOG)
    assert len(entities) == 4
    arm = entities[f"{key}:tag:blog.example.org,2024:arm-runners"]
    assert isinstance(arm, FeedItemEntity) and arm.name == "Moving the build to ARM runners"
    assert arm.web_url == "https://blog.example.org/2024/05/arm-runners" and arm.author == "Ines Duarte"
    assert "halved the build bill" in arm.content and "<strong>" not in arm.content
    assert [b.name for b in arm.breadcrumbs] == ["Harbour Engineering Blog"] and arm.categories == ["ci"]
    assert f"{key}:tag:blog.example.org,2024:ledger-postgres" in entities  # page 2
    incident = entities[f"{feed_key(STATUS)}:incident-417"]
    assert incident.created_at.isoformat() == "2024-04-30T22:00:00+00:00"
    assert incident.raw_source_fields["categories"] == ["maintenance"]
    cursor = source.next_cursor()["feeds"]
    assert cursor[key] == {"etag": '"v1"', "modified": None, "newest": "2024-05-03T09:00:00Z"}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor("https://status.example.org")
    route = status(fake, [(429, {"Retry-After": "0"}, "slow down"),
                          (200, {"Content-Type": "application/rss+xml"}, xml("status.rss"))])
    source = RssSource(RssSource.validate_config({"feed_urls": [STATUS]}), {})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and route.calls == 2 and len(waits) == 1


def test_a_refused_password_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor("https://status.example.org")
    fake.route("GET", "/history.rss", headers={"Authorization": "Basic b3BzOndyb25nLXBhc3N3b3Jk"},
               reply=(401, {"WWW-Authenticate": 'Basic realm="status"'}, "Unauthorized"))
    connection = connect(make_collection(), "rss", {"username": "ops", "password": "wrong-password"},
                         {"feed_urls": [STATUS]})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_conditional_requests_and_deletions(vendor, make_collection, client):
    blog_site, status_site = vendor("https://blog.example.org"), vendor("https://status.example.org")
    blog(blog_site)
    status(status_site)
    connection = connect(make_collection(), "rss", {}, {"feed_urls": [BLOG, STATUS]})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "why did ferry bookings go down at Easter", limit=1) == \
        [f"{feed_key(BLOG)}:tag:blog.example.org,2024:ferry-outage"]

    # Unchanged blog: answered 304 to its ETag, so nothing is fetched again and nothing deleted;
    # the status feed is gone for good (410): its item is deleted.
    blog_site.routes.clear()
    status_site.routes.clear()
    not_modified = blog_site.route("GET", "/feed.atom", headers={"If-None-Match": '"v1"'}, reply=(304, {}, ""))
    status(status_site, (410, {}, "Gone"))
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert not_modified.calls == 1
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert len(ids) == 3 and all(i.startswith(feed_key(BLOG)) for i in ids)
    assert list(SyncCursor.objects.get(sync_id=job.sync_id).data["feeds"]) == [feed_key(BLOG)]

    # The blog is removed from the config: its items go.
    connection.config = {"feed_urls": [STATUS], "max_pages": 10, "mirror": False}
    connection.save(update_fields=["config"])
    status_site.routes.clear()
    status(status_site)
    job = run_sync(connection)
    assert (job.status, job.entities_deleted, job.entities_inserted) == ("completed", 3, 1), job.error


def test_a_mirror_feed_deletes_what_it_no_longer_lists(vendor, make_collection):
    fake = vendor("https://status.example.org")
    status(fake)
    connection = connect(make_collection(), "rss", {}, {"feed_urls": [STATUS], "mirror": True})
    assert run_sync(connection).entities_inserted == 1
    fake.routes.clear()
    empty = xml("status.rss").split("<item>")[0] + "</channel></rss>"
    status(fake, (200, {"Content-Type": "application/rss+xml"}, empty))
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error


@pytest.mark.parametrize("urls", [["http://127.0.0.1/feed"], ["file:///etc/passwd"], [], [BLOG, BLOG]])
def test_bad_feed_urls_are_refused_over_the_api(urls, client, make_collection):
    make_collection()
    r = client.post("/source-connections", {"short_name": "rss", "readable_collection_id": "docs",
                                            "config": {"feed_urls": urls}}, format="json")
    assert r.status_code == 422, r.content
