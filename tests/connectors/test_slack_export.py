"""The slack_export source on the real OLake Slack export (a subset copied to a tmp folder)."""
from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from airweave.collections.models import Entity
from connectors.base import Breadcrumb, SkipEntity
from connectors.sources.slack_export import SlackExportSource, resolve_mrkdwn
from tests.conftest import SHARED_DATA
from tests.connectors.lifecycle import connect, counts, entity_ids, entity_text, search_ids, sync

EXPORT = SHARED_DATA / "slack_export_olake" / "export"
CHANNEL = "C081GUXUQ5U"  # announcements
SMALL = ("discussions", "general")


@pytest.fixture
def export(tmp_path) -> Path:
    """channels.json, users.json and two small channels (10 day files) of the real export."""
    root = tmp_path / "slack"
    root.mkdir()
    for name in ("channels.json", "users.json", "groups.json", "dms.json", "mpims.json"):
        shutil.copy(EXPORT / name, root / name)
    for channel in SMALL:
        shutil.copytree(EXPORT / channel, root / channel)
    return root


def listing(path, **config):
    source = SlackExportSource(SlackExportSource.validate_config({"path": str(path), **config}))
    return list(source.generate_entities({})), source


def channel_id(name: str) -> str:
    return next(c["id"] for c in json.loads((EXPORT / "channels.json").read_text()) if c["name"] == name)


def test_entities_of_the_real_export():
    entities, source = listing(EXPORT)
    assert source.is_full_listing()
    by_type: dict[str, list] = {}
    for e in entities:
        by_type.setdefault(e.entity_type(), []).append(e)
    assert len(by_type["SlackExportChannelEntity"]) == 5
    # 304 messages, less the bot_add / bot_remove notices
    assert len(by_type["SlackExportMessageEntity"]) == 302
    ids = [e.entity_id for e in entities]
    assert len(ids) == len(set(ids))

    announcements = next(e for e in by_type["SlackExportChannelEntity"] if e.name == "#announcements")
    assert announcements.entity_id == CHANNEL
    assert announcements.web_url == f"https://getolake.slack.com/archives/{CHANNEL}"

    reply = next(e for e in by_type["SlackExportMessageEntity"] if e.entity_id == f"{CHANNEL}/1779350959.142819")
    assert reply.breadcrumbs[0] == Breadcrumb(CHANNEL, "#announcements", "SlackExportChannelEntity")
    assert reply.breadcrumbs[1].entity_id == f"{CHANNEL}/1779348163.554399"
    assert reply.breadcrumbs[1].entity_type == "SlackExportMessageEntity"
    assert reply.web_url == (f"https://getolake.slack.com/archives/{CHANNEL}/p1779350959142819"
                             f"?thread_ts=1779348163.554399&cid={CHANNEL}")
    assert reply.raw_source_fields["is_reply"] is True
    assert reply.raw_source_fields["reactions"] == [{"name": "raised_hands", "count": 3}]
    assert reply.created_at.isoformat().startswith("2026-05-21T08:09")
    text = reply.textual_representation()
    assert text.startswith(f"{reply.raw_source_fields['author']} in #announcements (2026-05-21 08:09 UTC), in a thread:")
    assert "thank you for the merge" in text

    with_files = [e for e in by_type["SlackExportMessageEntity"]
                  if any(f["name"] or f["title"] for f in e.raw_source_fields["files"])]
    assert with_files and all("File: " in e.textual_representation() for e in with_files)
    edited = [e for e in by_type["SlackExportMessageEntity"] if e.raw_source_fields["edited"]]
    assert edited and all(e.updated_at > e.created_at for e in edited)


def test_mentions_and_links_are_resolved():
    users = {"U1": "ana"}
    assert resolve_mrkdwn("hi <@U1>, see <https://x.io/a|the doc> in <#C9|general> <!here> a &lt; b",
                          users, {}) == "hi @ana, see the doc (https://x.io/a) in #general @here a < b"
    assert resolve_mrkdwn("<@U2> <https://x.io>", users, {}) == "@U2 https://x.io"


def test_channel_filter_and_workspace_url(export):
    entities, _ = listing(export, channels=["#general"], workspace_url="https://acme.slack.com/")
    assert {e.raw_source_fields.get("channel") for e in entities} == {"general"}
    assert all(e.web_url.startswith("https://acme.slack.com/archives/") for e in entities)


def test_config_is_checked(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        SlackExportSource.validate_config({"path": str(tmp_path / "nope")})
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ValueError, match="not a zip"):
        SlackExportSource.validate_config({"path": str(tmp_path / "x.txt")})
    with pytest.raises(ValueError, match="workspace_url"):
        SlackExportSource.validate_config({"path": str(tmp_path), "workspace_url": "acme"})


def test_broken_day_file_is_skipped_and_blocks_deletions(export):
    (export / "general" / "2026-06-30.json").write_text("[{not json")
    entities, source = listing(export)
    broken = [e for e in entities if e.entity_id == "file:general/2026-06-30.json"]
    assert len(broken) == 1
    with pytest.raises(SkipEntity, match="unreadable day file"):
        broken[0].content_hash()
    assert source.is_full_listing() is False


def test_zip_export_gives_the_same_entities(export, tmp_path):
    archive = tmp_path / "slack.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in sorted(export.rglob("*")):
            if p.is_file():
                zf.write(p, "olake-export/" + p.relative_to(export).as_posix())  # one top folder
    from_folder, _ = listing(export)
    from_zip, _ = listing(archive)
    assert [e.entity_id for e in from_zip] == [e.entity_id for e in from_folder]
    assert [e.content_hash() for e in from_zip] == [e.content_hash() for e in from_folder]


def test_lifecycle(export, make_collection, client):
    collection = make_collection(readable_id="slack")
    connection = connect(collection, "slack_export", {"path": str(export)})
    first = sync(connection)
    assert first.entities_inserted == len(entity_ids(connection)) > 10
    general = channel_id("general")
    okta = f"{channel_id('discussions')}/1779372082.347119"
    assert okta in search_ids(client, collection, "integrate UI connection through Okta")

    # edit a message (as a newer export would have it) and drop another
    day = export / "general" / "2026-06-30.json"
    messages = json.loads(day.read_text())
    edited_ts = messages[0]["ts"]
    messages[0]["text"] = "We are moving the community call to Thursdays at the lighthouse."
    messages[0]["edited"] = {"user": messages[0]["user"], "ts": str(float(edited_ts) + 60)}
    day.write_text(json.dumps(messages))
    gone_day = export / "general" / "2026-06-17.json"
    gone = [f"{general}/{m['ts']}" for m in json.loads(gone_day.read_text())]
    gone_day.unlink()

    second = sync(connection)
    assert (second.entities_inserted, second.entities_updated, second.entities_deleted) == (0, 1, len(gone))
    assert second.entities_kept == first.entities_inserted - 1 - len(gone)
    assert second.chunks_embedded >= 1
    assert "lighthouse" in entity_text(connection, f"{general}/{edited_ts}")
    assert search_ids(client, collection, "community call lighthouse Thursdays")[0] == f"{general}/{edited_ts}"
    assert not Entity.objects.filter(source_connection=connection, entity_id__in=gone).exists()

    # delete the whole channel folder: its channel and messages go
    shutil.rmtree(export / "discussions")
    third = sync(connection)
    assert third.entities_deleted >= 2
    assert okta not in entity_ids(connection)
    assert okta not in search_ids(client, collection, "integrate UI connection through Okta")
    assert counts(sync(connection))[:2] == (0, 0)


@pytest.mark.slow
def test_full_export_syncs_and_answers(make_collection, client):
    collection = make_collection(readable_id="slack-full")
    connection = connect(collection, "slack_export", {"path": str(EXPORT)})
    job = sync(connection)
    assert job.entities_inserted == 307 and job.entities_skipped == 0
    okta = f"{channel_id('discussions')}/1779372082.347119"
    assert okta in search_ids(client, collection, "Can the UI connection be integrated with Okta?", limit=5)
