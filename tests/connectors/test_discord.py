"""The discord source against a fake API that answers only Discord's documented requests
(`Authorization: Bot ...`; `limit` and `after` on a channel's messages): text channels only, a
channel the bot cannot read skipped, messages over two pages, a 429 with Retry-After waited out,
a refused token marking the connection `needs_reauth`, a sync found by search, an `after` run
that reads new messages only, and the periodic full listing that removes a deleted message."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import discord
from connectors.sources.discord import DiscordMessageEntity, DiscordSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://discord.com"
TOKEN = "MTE0NTY3ODkwMTIzNDU2Nzg5MA.GhIjKl.mnopqrstuvwxyz0123456789abcdefghijkl"
AUTH = {"Authorization": f"Bot {TOKEN}"}
GUILD = "1100000000000000001"
CONFIG = {"guild_id": GUILD}
CHANNELS = [{"id": "1200000000000000001", "type": 0, "guild_id": GUILD, "name": "timetables",
             "topic": "Sailing times and changes", "position": 0, "parent_id": None},
            {"id": "1200000000000000002", "type": 2, "guild_id": GUILD, "name": "Voice", "position": 1},
            {"id": "1200000000000000003", "type": 0, "guild_id": GUILD, "name": "staff-only", "position": 2}]
C1 = CHANNELS[0]["id"]


def message(mid, who, content, ts, kind=0):
    return {"id": mid, "channel_id": C1, "type": kind, "content": content, "timestamp": ts, "edited_timestamp": None,
            "author": {"id": "1300000000000000001", "username": who.lower(), "global_name": who, "discriminator": "0"},
            "attachments": [], "embeds": [], "mentions": [], "pinned": False, "tts": False}


M1 = message("1400000000000000001", "Ana", "Saturday sailings start at 06:00 from June.", "2024-05-01T09:00:00+00:00")
M2 = message("1400000000000000002", "Bo", "Bikes must be booked in advance on weekends.", "2024-05-02T09:00:00+00:00")
JOIN = message("1400000000000000003", "Cy", "", "2024-05-02T10:00:00+00:00", kind=7)
M4 = message("1400000000000000004", "Cy", "The café on board takes cards only.", "2024-05-03T09:00:00+00:00")


def server(fake, pages=((M2, M1), (M4, JOIN)), after="0"):
    fake.route("GET", f"/api/v10/guilds/{GUILD}/channels", headers=AUTH, reply=CHANNELS)
    for page in pages:
        fake.route("GET", f"/api/v10/channels/{C1}/messages", query={"limit": "2", "after": after}, headers=AUTH,
                   reply=list(page))
        after = max((m["id"] for m in page), key=int)
    if not pages or len(pages[-1]) == 2:
        fake.route("GET", f"/api/v10/channels/{C1}/messages", query={"limit": "2", "after": after}, headers=AUTH,
                   reply=[])
    fake.route("GET", f"/api/v10/channels/{CHANNELS[2]['id']}/messages", query={"limit": "2", "after": "0"},
               headers=AUTH, reply=(403, {}, {"message": "Missing Access", "code": 50001}))


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(discord, "LIMIT", 2)


def test_text_channels_and_messages_over_pages(vendor):
    server(vendor(API))
    source = DiscordSource(DiscordSource.validate_config(CONFIG), {"bot_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == [f"channel:{C1}", f"message:{M1['id']}", f"message:{M2['id']}", f"message:{M4['id']}"]
    bikes = entities[f"message:{M2['id']}"]
    assert isinstance(bikes, DiscordMessageEntity) and bikes.author == "Bo"
    assert bikes.web_url == f"https://discord.com/channels/{GUILD}/{C1}/{M2['id']}"
    assert [b.name for b in bikes.breadcrumbs] == ["timetables"]
    assert source.next_cursor()["since"] == {C1: M4["id"]}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", f"/api/v10/guilds/{GUILD}/channels", headers=AUTH, reply=[
        (429, {"Retry-After": "0", "X-RateLimit-Scope": "user"},
         {"message": "You are being rate limited.", "retry_after": 0.2, "global": False}),
        (200, {}, CHANNELS)])
    server(fake)
    source = DiscordSource(DiscordSource.validate_config(CONFIG), {"bot_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(API)
    fake.route("GET", f"/api/v10/guilds/{GUILD}/channels", reply=(401, {}, {"message": "401: Unauthorized", "code": 0}))
    connection = connect(make_collection(), "discord", {"bot_token": "revoked.token.0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_new_messages_then_a_full_listing_removes_a_deleted_one(vendor, make_collection, client):
    fake = vendor(API)
    server(fake)
    connection = connect(make_collection(), "discord", {"bot_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "do I need to book my bike at the weekend", limit=1) == [f"message:{M2['id']}"]

    fake.routes.clear()
    m5 = message("1400000000000000005", "Ana", "Storm warning: afternoon sailings cancelled.", "2024-05-04T09:00:00+00:00")
    server(fake, pages=((m5,),), after=M4["id"])
    job = run_sync(connection)
    assert (job.status, job.entities_inserted, job.entities_deleted) == ("completed", 1, 0), job.error

    cursor = SyncCursor.objects.get(sync_id=job.sync_id)
    cursor.data = {**cursor.data, "full_at": cursor.data["full_at"] - 8 * 86400}
    cursor.save(update_fields=["data"])
    fake.routes.clear()
    server(fake, pages=((M1, M4), (m5,)))  # M2 was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert f"message:{M2['id']}" not in left and len(left) == 4
