"""The shortcut source against a fake API that answers only Shortcut's documented v3 requests
(`Shortcut-Token`; the story search's `query`, `page_size`, `detail`; `next` paths): stories over
two pages with their comments, a 429 with Retry-After waited out, a refused token marking the
connection `needs_reauth`, a sync found by search, an incremental search by `updated:` that
removes an archived story, and the periodic full listing that removes a deleted one."""
from __future__ import annotations

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.shortcut import ShortcutSource, ShortcutStoryEntity
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.app.shortcut.com"
TOKEN = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
AUTH = {"Shortcut-Token": TOKEN}
SEARCH = "/api/v3/search/stories"


def story(sid, name, description, updated, comments=(), archived=False):
    return {"id": sid, "name": name, "description": description, "story_type": "feature", "archived": archived,
            "app_url": f"https://app.shortcut.com/harbour/story/{sid}", "created_at": "2024-05-01T08:00:00Z",
            "updated_at": updated, "labels": [{"id": 1, "name": "mobile"}], "workflow_state_id": 500000008,
            "epic_id": None, "estimate": 2, "completed": False,
            "comments": [{"id": i, "text": t, "author_id": "u1", "deleted": False} for i, t in enumerate(comments)]}


S1 = story(101, "Offline tickets", "Show the ticket QR code without a network.", "2024-05-02T10:00:00Z",
           comments=("Cache the last 5 tickets.",))
S2 = story(102, "Cabin picker", "Let passengers choose a cabin on the night ferry.", "2024-05-03T10:00:00Z")
S3 = story(103, "Dark mode", "Follow the system theme.", "2024-05-01T10:00:00Z")


def search(fake, pages=((S1, S2), (S3,)), query="is:story"):
    pages = list(pages)
    for n, chunk in enumerate(pages):
        nxt = f"{SEARCH}?query={query.replace(' ', '%20')}&page_size=25&detail=full&next=tok{n + 1}" \
            if n + 1 < len(pages) else None
        q = {"query": query, "page_size": "25", "detail": "full", **({"next": f"tok{n}"} if n else {})}
        fake.route("GET", SEARCH, query=q, headers=AUTH, reply={"data": list(chunk), "next": nxt, "total": 3})


def test_stories_over_two_pages_with_comments(vendor):
    search(vendor(API))
    source = ShortcutSource(ShortcutSource.validate_config({}), {"api_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["story:101", "story:102", "story:103"]
    offline = entities["story:101"]
    assert isinstance(offline, ShortcutStoryEntity) and offline.comments == ["Cache the last 5 tickets."]
    assert offline.web_url == "https://app.shortcut.com/harbour/story/101" and offline.labels == ["mobile"]
    assert source.next_cursor()["since"] == {"stories": "2024-05-03T10:00:00Z"}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", SEARCH, query={"query": "is:story", "page_size": "25", "detail": "full"},
                         headers=AUTH, reply=[(429, {"Retry-After": "0"}, {"message": "Too many requests"}),
                                              (200, {}, {"data": [S3], "next": None})])
    search(fake)
    source = ShortcutSource(ShortcutSource.validate_config({}), {"api_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(API)
    fake.route("GET", SEARCH, query={"query": "is:story", "page_size": "25", "detail": "full"},
               reply=(401, {}, {"message": "Unauthorized"}))
    connection = connect(make_collection(), "shortcut", {"api_token": "revoked-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_incremental_archive_then_a_full_listing_removes_a_deleted_story(vendor, make_collection, client):
    fake = vendor(API)
    search(fake)
    connection = connect(make_collection(), "shortcut", {"api_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "choose a cabin on the night ferry", limit=1) == ["story:102"]

    fake.routes.clear()
    archived = {**S2, "archived": True, "updated_at": "2024-05-04T10:00:00Z"}
    search(fake, pages=((archived,),), query="is:story updated:2024-05-03..*")
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error

    cursor = SyncCursor.objects.get(sync_id=job.sync_id)
    cursor.data = {**cursor.data, "full_at": cursor.data["full_at"] - 8 * 86400}
    cursor.save(update_fields=["data"])
    fake.routes.clear()
    search(fake, pages=((S1,),))  # story 103 was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        ["story:101"]
