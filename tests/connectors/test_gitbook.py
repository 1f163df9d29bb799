"""The gitbook source against a fake API that answers only GitBook's documented v1 requests
(Bearer token; `limit` and the `page` token of `next`; `format=markdown`): spaces over two pages,
a page tree with a group and a nested page, a 429 with Retry-After waited out, a refused token
marking the connection `needs_reauth`, a sync found by search, then a run that skips an unchanged
space and removes a page gone from a changed one."""
from __future__ import annotations

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.gitbook import GitBookPageEntity, GitBookSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.gitbook.com"
TOKEN = "gb_api_Tk0aW5nIGlzIGZ1bjAxMjM0NTY3ODk"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ORG = "org_harbour"
CONFIG = {"organization_id": ORG}


def space(sid, title, revision):
    return {"object": "space", "id": sid, "title": title, "visibility": "public", "revision": revision,
            "createdAt": "2024-01-01T09:00:00.000Z", "updatedAt": "2024-05-01T09:00:00.000Z",
            "urls": {"app": f"https://app.gitbook.com/o/{ORG}/s/{sid}/", "published": f"https://docs.harbour.example/{title.lower()}/"}}


GUIDES, API_DOCS = space("sp1", "Guides", "rev1"), space("sp2", "API", "rev7")
TREE_1 = {"object": "revision", "id": "rev1", "pages": [
    {"id": "pg1", "title": "Getting started", "kind": "sheet", "type": "document", "path": "getting-started",
     "pages": []},
    {"id": "grp", "title": "Operations", "kind": "group", "type": "group", "path": "operations", "pages": [
        {"id": "pg2", "title": "Storms", "kind": "sheet", "type": "document", "path": "operations/storms", "pages": [
            {"id": "pg3", "title": "Rebooking", "kind": "sheet", "type": "document", "path": "operations/storms/rebooking",
             "pages": []}]},
        {"id": "lnk", "title": "Status page", "kind": "link", "type": "link", "href": "https://status.example"}]}]}
TREE_7 = {"object": "revision", "id": "rev7", "pages": [
    {"id": "pg9", "title": "Bookings API", "kind": "sheet", "type": "document", "path": "bookings", "pages": []}]}
MARKDOWN = {"pg1": "Download the app and sign in with your booking number.",
            "pg2": "Sailings stop when the wind passes 50 knots.",
            "pg3": "Passengers of a cancelled sailing are rebooked on the next one free of charge.",
            "pg9": "POST /bookings creates a booking."}


def org(fake, spaces=((GUIDES,), (API_DOCS,)), trees=None, read=None):
    trees = trees or {"sp1": TREE_1, "sp2": TREE_7}
    spaces = list(spaces)
    for n, chunk in enumerate(spaces):
        query = {"limit": "100", **({"page": f"tok{n}"} if n else {})}
        nxt = {"next": {"page": f"tok{n + 1}"}} if n + 1 < len(spaces) else {}
        fake.route("GET", f"/v1/orgs/{ORG}/spaces", query=query, headers=AUTH, reply={"items": list(chunk), **nxt})
    for sid, tree in trees.items():
        fake.route("GET", f"/v1/spaces/{sid}/content", headers=AUTH, reply=tree)
        for page_id in read or MARKDOWN:
            fake.route("GET", f"/v1/spaces/{sid}/content/page/{page_id}", query={"format": "markdown"},
                       headers=AUTH, reply={"object": "page", "id": page_id, "title": page_id,
                                            "description": "", "markdown": MARKDOWN[page_id]})


def test_spaces_over_two_pages_and_a_nested_tree(vendor):
    org(vendor(API))
    source = GitBookSource(GitBookSource.validate_config(CONFIG), {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["page:pg1", "page:pg2", "page:pg3", "page:pg9", "space:sp1", "space:sp2"]
    rebooking = entities["page:pg3"]
    assert isinstance(rebooking, GitBookPageEntity) and "free of charge" in rebooking.markdown
    assert [b.name for b in rebooking.breadcrumbs] == ["Guides", "Operations", "Storms"]
    assert rebooking.web_url == "https://docs.harbour.example/guides/operations/storms/rebooking"
    assert source.next_cursor()["spaces"]["sp1"] == {"revision": "rev1", "pages": ["pg1", "pg2", "pg3"]}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", f"/v1/orgs/{ORG}/spaces", query={"limit": "100"}, headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"error": {"code": 429, "message": "Too many requests"}}),
        (200, {}, {"items": [API_DOCS]})])
    org(fake)
    source = GitBookSource(GitBookSource.validate_config(CONFIG), {"access_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 2 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(API)
    fake.route("GET", f"/v1/orgs/{ORG}/spaces", query={"limit": "100"},
               reply=(401, {}, {"error": {"code": 401, "message": "Invalid or expired token"}}))
    connection = connect(make_collection(), "gitbook", {"access_token": "gb_api_revoked_0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_an_unchanged_space_is_skipped_and_a_removed_page_deleted(vendor, make_collection, client):
    fake = vendor(API)
    org(fake)
    connection = connect(make_collection(), "gitbook", {"access_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 6), job.error
    assert search_ids(client, "is rebooking after a cancelled sailing free", limit=1) == ["page:pg3"]

    # Guides got a new revision without the Rebooking page; the API space did not change (not read).
    fake.routes.clear()
    tree = {**TREE_1, "id": "rev2", "pages": [TREE_1["pages"][0], {**TREE_1["pages"][1], "pages": [
        {**TREE_1["pages"][1]["pages"][0], "pages": []}]}]}
    org(fake, spaces=((space("sp1", "Guides", "rev2"), API_DOCS),), trees={"sp1": tree}, read=["pg1", "pg2"])
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"space:sp1", "space:sp2", "page:pg1", "page:pg2", "page:pg9"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["spaces"]["sp2"]["revision"] == "rev7"
