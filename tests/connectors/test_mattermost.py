"""The mattermost source against a fake server that answers only the v4 API requests Mattermost
documents (Bearer token; `page`/`per_page` and `since` on a channel's posts): teams, public
channels only, posts over two pages with a thread reply, a 429 with Retry-After waited out, a
refused token marking the connection `needs_reauth`, a sync found by search, then a `since` run
that applies an edit and a deletion (`delete_at`)."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import mattermost
from connectors.sources.mattermost import MattermostPostEntity, MattermostSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://chat.harbour.example"
TOKEN = "xq7w9e8r6t5y4u3i2o1p0a9s8d"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG = {"base_url": SITE}
TEAM = {"id": "t1", "name": "harbour", "display_name": "Harbour", "type": "O"}
CHANNELS = [{"id": "c1", "team_id": "t1", "name": "operations", "display_name": "Operations", "type": "O",
             "purpose": "Daily ferry operations", "header": "", "create_at": 1714550400000, "last_post_at": 0},
            {"id": "c2", "team_id": "t1", "name": "hr-private", "display_name": "HR", "type": "P", "purpose": "",
             "header": "", "create_at": 1714550400000},
            {"id": "d1", "team_id": "", "name": "u1__u2", "display_name": "", "type": "D", "create_at": 0}]


def post(pid, message, at, root="", user="u1", delete_at=0):
    return {"id": pid, "create_at": at, "update_at": at, "edit_at": 0, "delete_at": delete_at, "user_id": user,
            "channel_id": "c1", "root_id": root, "message": message, "type": "", "props": {}, "hashtags": ""}


P1 = post("p1", "The 7am sailing is cancelled because of the storm.", 1714600000000)
P2 = post("p2", "Passengers are rebooked on the noon ferry.", 1714600100000, root="p1", user="u2")
P3 = post("p3", "Crew briefing moved to 9:30 tomorrow.", 1714700000000)
USERS = {"u1": {"id": "u1", "username": "ana", "first_name": "Ana", "last_name": "Lima"},
         "u2": {"id": "u2", "username": "bo", "first_name": "", "last_name": ""}}


def posts_page(posts):
    return {"order": [p["id"] for p in posts], "posts": {p["id"]: p for p in posts}, "next_post_id": "",
            "prev_post_id": ""}


def server(fake, pages=((P3, P2), (P1,))):
    fake.route("GET", "/api/v4/users/me/teams", headers=AUTH, reply=[TEAM])
    fake.route("GET", "/api/v4/users/me/teams/t1/channels", headers=AUTH, reply=CHANNELS)
    for n, page in enumerate(pages):
        fake.route("GET", "/api/v4/channels/c1/posts", query={"page": str(n), "per_page": "2"}, headers=AUTH,
                   reply=posts_page(page))
    for uid, user in USERS.items():
        fake.route("GET", f"/api/v4/users/{uid}", headers=AUTH, reply=user)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(mattermost, "PER_PAGE", 2)


def test_public_channels_and_posts_over_two_pages(vendor):
    server(vendor(SITE))
    source = MattermostSource(MattermostSource.validate_config(CONFIG), {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["channel:c1", "post:p1", "post:p2", "post:p3"]  # no private channel, no DM
    reply = entities["post:p2"]
    assert isinstance(reply, MattermostPostEntity) and reply.author == "bo"
    assert [b.name for b in reply.breadcrumbs] == ["Harbour", "Operations", "thread"]
    assert reply.web_url == f"{SITE}/harbour/pl/p2"
    assert entities["post:p1"].author == "Ana Lima"
    assert source.next_cursor()["since"] == {"c1": 1714700000000}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/v4/users/me/teams", headers=AUTH, reply=[
        (429, {"Retry-After": "0", "X-Ratelimit-Remaining": "0"}, {"id": "api.context.429", "message": "Too many "
                                                                     "requests", "status_code": 429}),
        (200, {}, [TEAM])])
    server(fake)
    source = MattermostSource(MattermostSource.validate_config(CONFIG), {"access_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", "/api/v4/users/me/teams", reply=(401, {}, {
        "id": "api.context.session_expired.app_error", "message": "Invalid or expired session, please login again.",
        "status_code": 401}))
    connection = connect(make_collection(), "mattermost", {"access_token": "revoked-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_a_since_run_applies_an_edit_and_a_deletion(vendor, make_collection, client):
    fake = vendor(SITE)
    server(fake)
    connection = connect(make_collection(), "mattermost", {"access_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "which ferry are passengers rebooked on", limit=1) == ["post:p2"]

    fake.routes.clear()
    server(fake, pages=())
    edited = {**P3, "message": "Crew briefing moved to 10:00 tomorrow.", "update_at": 1714710000000,
              "edit_at": 1714710000000}
    deleted = {**P1, "message": "", "update_at": 1714720000000, "delete_at": 1714720000000}
    fake.route("GET", "/api/v4/channels/c1/posts", query={"since": "1714700000000"}, headers=AUTH,
               reply=posts_page([edited, deleted]))
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"channel:c1", "post:p2", "post:p3"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"c1": 1714720000000}
