"""The Confluence source against REST v1 responses written from Atlassian's documented shapes
(tests/connectors/fixtures/confluence): spaces, a CQL content search over two `_links.next` pages,
entity fields and breadcrumbs, OAuth through the gateway with a refreshed token, 429, 401,
an incremental run with a deletion, and a sync whose content is found by search."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import responses
from responses.matchers import query_param_matcher

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.services import source_connection_create
from connectors.sources.confluence import (CONTENT_EXPAND, ConfluenceBlogPostEntity, ConfluenceCommentEntity,
                                           ConfluencePageEntity, ConfluenceSource, ConfluenceSpaceEntity)
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures" / "confluence"
SITE = "https://acme.atlassian.net"
WIKI = f"{SITE}/wiki"
GATEWAY = "https://api.atlassian.com/ex/confluence/11223344-a1b2-3b33-c444-def123456789/wiki"
SCOPE = 'type in (page, blogpost, comment) AND space in ("ENG")'


def load(name):
    return json.loads((FIXTURES / f"{name}.json").read_text())


SPACES, PAGE_1, PAGE_2 = load("spaces"), load("content_search_page_1"), load("content_search_page_2")


@pytest.fixture
def rsps(monkeypatch):
    monkeypatch.setattr(ConfluenceSource, "page_size", 2)
    with responses.RequestsMock() as mock:
        yield mock


def add_listing(rsps, root=WIKI, cql=SCOPE + " ORDER BY created ASC", pages=(PAGE_1, PAGE_2)):
    rsps.add("GET", f"{root}/rest/api/space", json=SPACES,
             match=[query_param_matcher({"limit": "2", "expand": "description.plain"})])
    rsps.add("GET", f"{root}/rest/api/content/search", json=pages[0],
             match=[query_param_matcher({"cql": cql, "limit": "2", "expand": CONTENT_EXPAND})])
    for previous, page in zip(pages, pages[1:]):
        rsps.add("GET", root + previous["_links"]["next"], json=page)


def make(credentials=None, **config):
    config = {"site_url": SITE, "spaces": ["ENG"], **config}
    return ConfluenceSource(ConfluenceSource.validate_config(config),
                            credentials or {"email": "ann@example.com", "api_token": "tok"})


def test_spaces_pages_blog_posts_and_comments_over_two_pages(rsps):
    add_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert set(entities) == {"space:ENG", "65540", "65601", "65800", "65700"}  # the HR space is not asked for
    space = entities["space:ENG"]
    assert isinstance(space, ConfluenceSpaceEntity) and space.web_url == f"{WIKI}/spaces/ENG"
    assert "builds, ships and operates" in space.textual_representation()
    page = entities["65601"]
    assert isinstance(page, ConfluencePageEntity) and page.name == "Release process"
    assert [b.as_dict() for b in page.breadcrumbs] == [
        {"entity_id": "space:ENG", "name": "Engineering", "entity_type": "ConfluenceSpaceEntity"},
        {"entity_id": "65540", "name": "Engineering Home", "entity_type": "ConfluencePageEntity"}]
    assert "## Cutting a release" in page.body and "Freeze merges two hours before the cut." in page.body
    assert "Tag the commit" in page.body
    assert page.web_url == f"{WIKI}/spaces/ENG/pages/65601/Release+process"
    assert page.updated_at.isoformat() == "2024-03-05T12:30:45.118000+00:00" and page.author == "Ann Okafor"
    assert page.raw_source_fields["version"] == 3 and page.raw_source_fields["last_modified_by"] == "Raj Patel"
    assert isinstance(entities["65700"], ConfluenceBlogPostEntity)
    comment = entities["65800"]
    assert isinstance(comment, ConfluenceCommentEntity)
    assert [b.entity_id for b in comment.breadcrumbs] == ["space:ENG", "65601"]
    assert rsps.calls[0].request.headers["Authorization"].startswith("Basic ")
    assert source.is_full_listing()
    assert source.next_cursor() == {"modified": "2024-04-02T10:00:00+00:00"}


def test_oauth_goes_through_the_gateway_after_refreshing_the_token(rsps):
    rsps.add("POST", "https://auth.atlassian.com/oauth/token",
             json={"access_token": "at-2", "refresh_token": "rt-2", "expires_in": 3600, "token_type": "Bearer"})
    rsps.add("GET", "https://api.atlassian.com/oauth/token/accessible-resources", json=[
        {"id": "11223344-a1b2-3b33-c444-def123456789", "url": SITE, "name": "acme",
         "scopes": ["read:confluence-content.all"], "avatarUrl": ""}])
    add_listing(rsps, root=GATEWAY)
    source = make({"access_token": "at-1", "refresh_token": "rt-1", "expires_at": time.time() - 5,
                   "client_id": "cid", "client_secret": "cs"})
    assert len(list(source.generate_entities({}))) == 5
    assert parse_qs(rsps.calls[0].request.body)["grant_type"] == ["refresh_token"]
    assert all(c.request.headers["Authorization"] == "Bearer at-2" for c in rsps.calls[1:])
    assert [c.request.url.split("?")[0] for c in rsps.calls[2:4]] == [f"{GATEWAY}/rest/api/space",
                                                                      f"{GATEWAY}/rest/api/content/search"]


def test_a_429_with_retry_after_is_retried(rsps):
    rsps.add("GET", f"{WIKI}/rest/api/space", status=429, headers={"Retry-After": "0"},
             json={"statusCode": 429, "message": "Rate limit exceeded"})
    add_listing(rsps)
    assert len(list(make().generate_entities({}))) == 5
    assert rsps.calls[0].response.status_code == 429


def test_a_refused_api_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = source_connection_create(
        collection=make_collection(), short_name="confluence", config={"site_url": SITE},
        authentication={"credentials": {"email": "ann@example.com", "api_token": "revoked"}}, sync_immediately=False)
    rsps.add("GET", f"{WIKI}/rest/api/space", status=401,
             json={"statusCode": 401, "message": "Client must be authenticated to access this resource."})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_is_searchable_then_an_incremental_run_updates_and_removes_deleted_content(
        rsps, make_collection, client):
    add_listing(rsps)
    connection = source_connection_create(
        collection=make_collection(), short_name="confluence", config={"site_url": SITE, "spaces": ["ENG"]},
        authentication={"credentials": {"email": "ann@example.com", "api_token": "tok"}}, sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 5)
    r = client.post("/collections/docs/search/instant", {"query": "when are releases cut from main", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == "65601"
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["modified"] == "2024-04-02T10:00:00+00:00"

    # Next run: the release page got a new version; the blog post was deleted.
    rsps.reset()
    edited = copy.deepcopy(PAGE_1["results"][1])
    edited["version"].update(number=4, when="2024-05-01T08:00:00.000Z")
    edited["body"]["storage"]["value"] = "<p>Releases are cut every Wednesday.</p>"
    rsps.add("GET", f"{WIKI}/rest/api/space", json=SPACES)
    changed = rsps.add("GET", f"{WIKI}/rest/api/content/search",
                       json={**PAGE_2, "results": [edited], "size": 1},
                       match=[query_param_matcher({"limit": "2", "expand": CONTENT_EXPAND}, strict_match=False)])
    alive = [{"id": c["id"], "type": c["type"], "status": "current", "title": c["title"]}
             for c in PAGE_1["results"] + PAGE_2["results"][:1]]
    rsps.add("GET", f"{WIKI}/rest/api/content/search", json={**PAGE_2, "results": alive, "size": 3},
             match=[query_param_matcher({"cql": SCOPE + " ORDER BY created ASC", "limit": "200"})])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert sorted(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == [
        "65540", "65601", "65800", "space:ENG"]
    cql = parse_qs(urlsplit(changed.calls[0].request.url).query)["cql"][0]
    assert cql.startswith(SCOPE + ' AND lastmodified >= now("-') and cql.endswith('m") ORDER BY created ASC')


def test_an_unknown_space_is_a_config_error(rsps):
    rsps.add("GET", f"{WIKI}/rest/api/space", json=SPACES)
    from connectors.base import SourceError
    with pytest.raises(SourceError) as info:
        list(make(spaces=["NOPE"]).generate_entities({}))
    assert info.value.category == "config_error" and "NOPE" in str(info.value)


def test_site_urls_are_checked_and_cloud_sites_get_wiki():
    assert ConfluenceSource.validate_config({"site_url": "https://acme.atlassian.net/"})["site_url"] == WIKI
    assert ConfluenceSource.validate_config({"site_url": "https://docs.example.com/confluence"})["site_url"] == \
        "https://docs.example.com/confluence"
    with pytest.raises(ValueError, match="site_url"):
        ConfluenceSource.validate_config({"site_url": "http://169.254.169.254/latest"})
