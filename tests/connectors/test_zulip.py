"""The zulip source against a fake server that answers only Zulip's documented requests (basic
auth, the query of `GET /api/v1/messages` with its JSON `narrow`): channels, topics, a topic's
messages over two batches, private channels left out by default, a 429 (`RATE_LIMIT_HIT`) with
Retry-After waited out, a refused key marking the connection `needs_reauth`, a sync found by
search, then an incremental run that re-reads only the changed topic and removes a deleted one."""
from __future__ import annotations

import base64
import json

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import zulip
from connectors.sources.zulip import ZulipSource, ZulipTopicEntity
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.zulipchat.com"
CREDENTIALS = {"email": "indexer-bot@harbour.zulipchat.com", "api_key": "tX5lNJ0BeXjE7vW2dLcA8qHfY3mZ1oRk"}
AUTH = {"Authorization": "Basic " + base64.b64encode(
    f"{CREDENTIALS['email']}:{CREDENTIALS['api_key']}".encode()).decode()}
CONFIG = {"site_url": SITE}
OK = {"result": "success", "msg": ""}

STREAMS = {**OK, "streams": [
    {"stream_id": 7, "name": "operations", "description": "Ferry operations and schedules", "invite_only": False,
     "is_web_public": False, "date_created": 1714550400, "history_public_to_subscribers": True},
    {"stream_id": 8, "name": "leadership", "description": "Private", "invite_only": True,
     "is_web_public": False, "date_created": 1714550400, "history_public_to_subscribers": False}]}
TOPICS = {**OK, "topics": [{"name": "storm schedule", "max_id": 503}, {"name": "crew rota", "max_id": 510}]}


def message(mid, who, text, ts, topic):
    return {"id": mid, "sender_full_name": who, "sender_email": f"{who.split()[0].lower()}@harbour.example",
            "timestamp": ts, "content": text, "subject": topic, "stream_id": 7, "display_recipient": "operations",
            "type": "stream", "content_type": "text/x-markdown"}


STORM = [message(501, "Ana Lima", "The 7am sailing is cancelled because of the storm.", 1714600000,
                 "storm schedule"),
         message(502, "Bo Chen", "Passengers are rebooked on the noon ferry.", 1714600100, "storm schedule"),
         message(503, "Ana Lima", "Refunds go out automatically.", 1714600200, "storm schedule")]
ROTA = [message(510, "Cy Dee", "Deckhand rota for May is pinned in the crew room.", 1714700000, "crew rota")]


def narrow(topic):
    return json.dumps([{"operator": "stream", "operand": "operations"}, {"operator": "topic", "operand": topic}])


def messages(fake, topic, batches):
    """Routes for a topic's messages, `batches` answered from anchor=oldest on."""
    anchor = "oldest"
    for i, batch in enumerate(batches):
        query = {"anchor": anchor, "num_before": "0", "num_after": "2", "narrow": narrow(topic),
                 "apply_markdown": "false"}
        if anchor != "oldest":
            query["include_anchor"] = "false"
        fake.route("GET", "/api/v1/messages", query=query, headers=AUTH,
                   reply={**OK, "messages": batch, "found_oldest": i == 0, "found_newest": i == len(batches) - 1,
                          "found_anchor": False, "history_limited": False, "anchor": 0})
        anchor = str(batch[-1]["id"])


def org(fake, topics=TOPICS, rota=True):
    fake.route("GET", "/api/v1/streams", headers=AUTH, reply=STREAMS)
    fake.route("GET", "/api/v1/users/me/7/topics", headers=AUTH, reply=topics)
    messages(fake, "storm schedule", [STORM[:2], STORM[2:]])
    if rota:
        messages(fake, "crew rota", [ROTA])


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    monkeypatch.setattr(zulip, "BATCH", 2)


def test_channels_topics_and_messages_over_two_batches(vendor):
    org(vendor(SITE))
    source = ZulipSource(ZulipSource.validate_config(CONFIG), dict(CREDENTIALS))
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["7/crew rota", "7/storm schedule", "stream:7"]  # the private channel left out
    storm = entities["7/storm schedule"]
    assert isinstance(storm, ZulipTopicEntity) and len(storm.messages) == 3
    assert storm.messages[0] == "Ana Lima: The 7am sailing is cancelled because of the storm."
    assert storm.web_url == f"{SITE}/#narrow/stream/7-operations/topic/storm.20schedule"
    assert [b.name for b in storm.breadcrumbs] == ["operations"]
    assert storm.updated_at.timestamp() == 1714600200
    assert source.next_cursor() == {"topics": {"7/storm schedule": 503, "7/crew rota": 510}}


def test_a_rate_limit_hit_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/v1/streams", headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"result": "error", "code": "RATE_LIMIT_HIT", "msg": "API usage exceeded rate "
                                     "limit", "retry-after": 0.5}), (200, {}, STREAMS)])
    org(fake)
    source = ZulipSource(ZulipSource.validate_config(CONFIG), dict(CREDENTIALS))
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 3 and limited.calls == 2 and len(waits) == 1


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", "/api/v1/streams", reply=(401, {"WWW-Authenticate": 'Basic realm="zulip"'},
                                                {"result": "error", "msg": "Invalid API key",
                                                 "code": "INVALID_API_KEY"}))
    connection = connect(make_collection(), "zulip", {**CREDENTIALS, "api_key": "revoked-0123456789abcdef"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_only_the_changed_topic_is_read_and_a_deleted_one_removed(
        vendor, make_collection, client):
    fake = vendor(SITE)
    org(fake)
    connection = connect(make_collection(), "zulip", dict(CREDENTIALS), CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "which ferry are passengers rebooked on after the storm", limit=1) == \
        ["7/storm schedule"]

    # A new message in "storm schedule"; "crew rota" was deleted (no longer listed): it must not be read.
    fake.routes.clear()
    reply = message(504, "Bo Chen", "The noon ferry is full, extra sailing at three.", 1714610000, "storm schedule")
    org(fake, topics={**OK, "topics": [{"name": "storm schedule", "max_id": 504}]}, rota=False)
    fake.routes = [r for r in fake.routes if not (r.path == "/api/v1/messages")]
    messages(fake, "storm schedule", [STORM[:2], STORM[2:] + [reply]])
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"stream:7", "7/storm schedule"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"topics": {"7/storm schedule": 504}}
    assert search_ids(client, "extra sailing at three", limit=1) == ["7/storm schedule"]
