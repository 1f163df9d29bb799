"""The Confluence source against REST v1 responses written from Atlassian's documented shapes
(tests/connectors/fixtures/confluence): spaces, a CQL content search over two `_links.next` pages,
entity fields and breadcrumbs, OAuth through the gateway with a refreshed token, 429, 401,
an incremental run with a deletion, and a sync whose content is found by search."""
from __future__ import annotations

import copy
import json
import re
import time
import zlib
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


def restriction(content_id, users=(), groups=()):
    """The read restriction of a content, as `GET /rest/api/content/{id}/restriction/byOperation/read` answers."""
    return {"operation": "read",
            "restrictions": {"user": {"results": [user(u) for u in users], "start": 0, "limit": 200, "size": len(users)},
                             "group": {"results": [group(g) for g in groups], "start": 0, "limit": 200,
                                       "size": len(groups)}},
            "_expandable": {"content": f"/rest/api/content/{content_id}"},
            "_links": {"base": WIKI, "context": "/wiki",
                       "self": f"{WIKI}/rest/api/content/{content_id}/restriction/byOperation/read"}}


def user(name, email=True):
    """A v1 user object; Cloud sends `email` empty when the profile hides it."""
    return {"type": "known", "accountId": f"5b10ac8d82e05b22cc7d{zlib.crc32(name.encode()) % 10**4:04d}",
            "accountType": "atlassian", "email": f"{name}@example.com" if email else "", "publicName": name.title(),
            "displayName": name.title(), "isExternalCollaborator": False}


def group(name):
    return {"type": "group", "name": name, "id": f"{zlib.crc32(name.encode()) % 10**8:08d}-6d2c-4f0e-9b9a-0c5c1d6e7f80",
            "_links": {"self": f"{WIKI}/rest/api/group/by-id?id={name}"}}


def add_open_restrictions(rsps, root=WIKI):
    """Every content unrestricted."""
    rsps.add("GET", re.compile(re.escape(root) + r"/rest/api/content/(\d+)/restriction/byOperation/read"),
             json=restriction("0"))


def add_groups(rsps, groups=None, root=WIKI):
    """The site's groups (`GET /rest/api/group`) and each one's members (`GET /rest/api/group/member?name=`);
    `groups` maps a group name to its members' names (none by default)."""
    groups = groups or {}
    rsps.add("GET", f"{root}/rest/api/group", json={
        "results": [group(g) for g in groups], "start": 0, "limit": 200, "size": len(groups),
        "_links": {"base": root, "context": "/wiki", "self": f"{root}/rest/api/group"}})
    for name, members in groups.items():
        rsps.add("GET", f"{root}/rest/api/group/member", match=[query_param_matcher({"name": name, "limit": "200"})],
                 json={"results": [user(m) for m in members], "start": 0, "limit": 200, "size": len(members),
                       "_links": {"base": root, "context": "/wiki", "self": f"{root}/rest/api/group/member"}})


def add_listing(rsps, root=WIKI, cql=SCOPE + " ORDER BY created ASC", pages=(PAGE_1, PAGE_2), spaces=SPACES):
    add_open_restrictions(rsps, root)
    rsps.add("GET", f"{root}/rest/api/space", json=spaces,
             match=[query_param_matcher({"limit": str(ConfluenceSource.page_size),
                                         "expand": "description.plain,permissions"})])
    rsps.add("GET", f"{root}/rest/api/content/search", json=pages[0],
             match=[query_param_matcher({"cql": cql, "limit": str(ConfluenceSource.page_size),
                                         "expand": CONTENT_EXPAND})])
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
    rsps.add("GET", f"{WIKI}/rest/api/group", status=401,  # the first call of a sync: the site's groups
             json={"statusCode": 401, "message": "Client must be authenticated to access this resource."})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_is_searchable_then_an_incremental_run_updates_and_removes_deleted_content(
        rsps, make_collection, client):
    add_listing(rsps)
    add_groups(rsps)
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
    add_open_restrictions(rsps)
    add_groups(rsps)
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


def space_permissions(*grants):
    """A space's `permissions` expansion: `grants` are (operation, users, groups, anonymous) tuples."""
    out = []
    for n, (operation, users, groups, anonymous) in enumerate(grants):
        out.append({"id": 4000 + n, "operation": {"operation": operation, "targetType": "space"},
                    "subjects": {"user": {"results": [user(u) for u in users], "size": len(users)},
                                 "group": {"results": [group(g) for g in groups], "size": len(groups)}},
                    "anonymousAccess": anonymous, "unlicensedAccess": False})
    return out


RESTRICTED_CHILD = "65602"


def acl_listing():
    """ENG readable by confluence-users; Release process (65601) restricted to the group eng, its comment following
    it, its child page restricted to bob (so bob alone: eng ∩ bob); the blog post restricted to carol."""
    spaces = copy.deepcopy(SPACES)
    spaces["results"][0]["permissions"] = space_permissions(
        ("read", (), ("confluence-users",), False), ("administer", ("dave",), (), False))
    page_1 = copy.deepcopy(PAGE_1)
    child = copy.deepcopy(page_1["results"][1])
    child.update(id=RESTRICTED_CHILD, title="Release checklist for the status of the work")
    child["ancestors"] = child["ancestors"] + [{"id": "65601", "type": "page", "status": "current",
                                                "title": "Release process"}]
    child["_links"] = {**child["_links"], "webui": f"/spaces/ENG/pages/{RESTRICTED_CHILD}/Release+checklist"}
    page_1["results"].append(child)
    restrictions = {"65601": restriction("65601", groups=("eng",)),
                    RESTRICTED_CHILD: restriction(RESTRICTED_CHILD, users=("bob", "erin")),
                    "65700": restriction("65700", users=("carol",))}
    groups = {"confluence-users": ("alice", "bob", "carol"), "eng": ("alice", "bob")}
    return spaces, page_1, restrictions, groups


def add_acl(rsps):
    spaces, page_1, restrictions, groups = acl_listing()
    for content_id, body in restrictions.items():
        rsps.add("GET", f"{WIKI}/rest/api/content/{content_id}/restriction/byOperation/read", json=body)
    add_listing(rsps, pages=(page_1, PAGE_2), spaces=spaces)
    add_groups(rsps, groups)


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py (see acl_listing)."""
    from tests.access.test_source_matrix import AclWorld

    add_acl(rsps)
    everything = {"space:ENG", "65540", "65601", RESTRICTED_CHILD, "65800", "65700"}
    return AclWorld(short_name="confluence", credentials={"email": "ann@example.com", "api_token": "tok"},
                    config={"site_url": SITE, "spaces": ["ENG"]},
                    visible={"alice": {"space:ENG", "65540", "65601", "65800"},
                             "bob": {"space:ENG", "65540", "65601", "65800", RESTRICTED_CHILD},
                             "carol": {"space:ENG", "65540", "65700"}},
                    everything=everything)


def test_space_readers_narrowed_by_restrictions_inherited_from_ancestors(rsps, monkeypatch):
    monkeypatch.setattr(ConfluenceSource, "page_size", 2)
    add_acl(rsps)
    source = make()
    memberships = {(m.group_id, m.member) for m in source.generate_access_memberships()}
    assert ("eng", "user:alice@example.com") in memberships and len(memberships) == 5
    access = {e.entity_id: (e.access_viewers, e.access_is_public) for e in source.generate_entities({})}
    assert access["space:ENG"] == (["group:confluence-users"], False)  # administer grants do not let anyone read
    assert access["65540"] == (["group:confluence-users"], False)
    assert access["65601"] == (["user:alice@example.com", "user:bob@example.com"], False)  # eng ∩ confluence-users
    assert access["65800"] == access["65601"]  # the comment follows its page
    assert access[RESTRICTED_CHILD] == (["user:bob@example.com"], False)  # erin is no space reader
    assert access["65700"] == (["user:carol@example.com"], False)
    reads = [c.request.url for c in rsps.calls if "/restriction/" in c.request.url]
    assert len(reads) == len({u.split("?")[0] for u in reads})  # each content's restriction read once


def test_anonymous_access_opens_a_space_and_hidden_emails_are_left_out(rsps):
    spaces = copy.deepcopy(SPACES)
    spaces["results"][0]["permissions"] = space_permissions(("read", (), (), True))
    add_listing(rsps, spaces=spaces)
    entities = {e.entity_id: e for e in make().generate_entities({})}
    assert all(e.access_is_public for e in entities.values())
    assert ConfluenceSource.supports_access_control
    from connectors.sources.confluence import _subjects
    assert _subjects({"user": {"results": [user("zoe", email=False)]}}) == set()
