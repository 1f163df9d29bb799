"""Slack export: the folder (or zip) that Slack's "Export data" or slackdump produce.

Layout read: `channels.json` (public), `groups.json` (private), `mpims.json`, `dms.json`,
`users.json`, and `<channel name or id>/<YYYY-MM-DD>.json` day files, each a JSON array of
message objects. Every export is a snapshot: each run is a full listing and the content hash
keeps what did not change (nothing is re-embedded), so re-syncing a newer export updates
edited messages and deletes removed ones.

Entities:
- SlackExportChannelEntity: `entity_id` = the channel id (e.g. `C081GUXUQ5U`); name `#general`;
  text = topic, purpose, members count.
- SlackExportMessageEntity: `entity_id` = `<channel id>/<ts>`; breadcrumbs channel → thread parent
  (for replies: the parent message's entity); name = the first words of the text; text = author,
  channel, date and the message with mentions (`<@U…>`, `<#C…|name>`, `<!here>`) and links
  resolved, then attached file names and link previews. `created_at` = ts, `updated_at` = the
  last edit. `web_url` = the Slack permalink when the workspace URL is known (config
  `workspace_url`, else read off a file permalink in the export).
- Join/leave/topic notices are not listed; a message with no text nor files is skipped
  ("empty message"); an unreadable day file is skipped with its reason and makes the listing
  partial (nothing is deleted on that run).
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Iterator
from urllib.parse import urlsplit

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity, UnreadableEntity
from connectors.registry import source
from connectors.sources._export_files import ExportTree, open_export, validate_export_path

logger = logging.getLogger(__name__)

MAX_JSON_BYTES = 64 * 1024 * 1024
NOISE_SUBTYPES = frozenset({
    "channel_join", "channel_leave", "group_join", "group_leave", "channel_topic", "channel_purpose",
    "channel_name", "group_topic", "group_purpose", "group_name", "bot_add", "bot_remove",
    "channel_archive", "channel_unarchive", "pinned_item", "unpinned_item", "reminder_add",
    "tombstone", "joiner_notification",
})
CHANNEL_FILES = (("channels.json", "public"), ("groups.json", "private"), ("mpims.json", "mpim"),
                 ("dms.json", "dm"))
_DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_MENTION = re.compile(r"<([@#!])([^>|]+)(?:\|([^>]*))?>")
_LINK = re.compile(r"<((?:https?|mailto|ftp):[^>|]+)(?:\|([^>]*))?>")


@dataclass
class SlackExportChannelEntity(BaseEntity):
    """A channel (public, private, multi-person or direct conversation) of the export."""

    channel_id: str = ""
    topic: str = ""
    purpose: str = ""
    kind: str = "public"
    member_count: int = 0

    def textual_representation(self) -> str:
        lines = [f"Slack channel {self.name}"]
        if self.topic:
            lines.append(f"Topic: {self.topic}")
        if self.purpose:
            lines.append(f"Purpose: {self.purpose}")
        if self.member_count:
            lines.append(f"Members: {self.member_count}")
        return "\n".join(lines)


@dataclass
class SlackExportMessageEntity(BaseEntity):
    """One message (a thread parent, a reply, or a plain message)."""

    channel_id: str = ""
    channel_name: str = ""
    ts: str = ""
    thread_ts: str = ""
    author: str = ""
    text: str = ""
    extras: str = ""  # file names and link previews, already rendered

    def textual_representation(self) -> str:
        if not self.text.strip() and not self.extras.strip():
            raise SkipEntity("empty message: no text nor files")
        when = self.created_at.strftime("%Y-%m-%d %H:%M UTC") if self.created_at else ""
        head = f"{self.author or 'Someone'} in #{self.channel_name}" + (f" ({when})" if when else "")
        if self.thread_ts and self.thread_ts != self.ts:
            head += ", in a thread"
        return "\n".join(part for part in (head + ":", self.text.strip(), self.extras.strip()) if part)


@source(
    name="Slack Export",
    short_name="slack_export",
    description="A Slack workspace export (folder or zip from Slack's Export data or slackdump): "
                "channels, messages and threads.",
    auth_methods=("direct",),
    labels=("Communication",),
    entity_types=(SlackExportChannelEntity, SlackExportMessageEntity),
    supports_temporal_relevance=True,
    config_fields=(
        ConfigField("path", "Export path", "string", "The export folder, or its .zip file.", required=True),
        ConfigField("channels", "Channels", "array", "Channel names to index (default: all).",
                    items_type="string"),
        ConfigField("workspace_url", "Workspace URL", "string", "e.g. https://acme.slack.com, for message "
                    "links (default: read off the export's file links)."),
    ),
)
class SlackExportSource(BaseSource):
    """See the module docstring."""

    def __init__(self, config: dict, credentials: dict | None = None):
        super().__init__(config, credentials)
        self._complete = True

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        out["path"] = validate_export_path(out["path"], for_api=for_api)
        url = (out.get("workspace_url") or "").strip().rstrip("/")
        if url:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError("config field 'workspace_url' must be an http(s) URL, e.g. https://acme.slack.com")
            out["workspace_url"] = url
        if "channels" in out:
            out["channels"] = [c.strip().lstrip("#") for c in out["channels"] if c.strip()]
        return out

    def is_full_listing(self) -> bool:
        return self._complete

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        """Channels first, then each channel's messages in time order."""
        self._complete = True
        tree = open_export(self.config["path"], root_marker="channels.json")
        names = tree.names()
        users = self._users(tree, names)
        channels = self._channels(tree, names)
        wanted = set(self.config.get("channels") or [])
        workspace = self.config.get("workspace_url") or _workspace_from_export(tree, names)
        folders: dict[str, list[str]] = {}
        for name in names:
            parts = PurePosixPath(name).parts
            if len(parts) == 2 and _DAY_FILE.match(parts[1]):
                folders.setdefault(parts[0], []).append(name)
        for folder in sorted(folders):
            channel = channels.get(folder) or {"id": folder, "name": folder, "kind": "public"}
            if wanted and channel["name"] not in wanted and channel["id"] not in wanted:
                continue
            channel_entity = self._channel_entity(channel, workspace)
            yield channel_entity
            crumb = Breadcrumb(channel_entity.entity_id, channel_entity.name, "SlackExportChannelEntity")
            messages: list[dict] = []
            for day in sorted(folders[folder]):
                try:
                    data = json.loads(tree.read(day, MAX_JSON_BYTES))
                    if not isinstance(data, list):
                        raise ValueError("not a JSON array")
                except (SkipEntity, ValueError) as exc:
                    self._complete = False
                    yield _unreadable(day, str(getattr(exc, "reason", exc)))
                    continue
                messages.extend(m for m in data if isinstance(m, dict))
            yield from self._messages(channel, crumb, messages, users, workspace)

    def _users(self, tree: ExportTree, names: list[str]) -> dict[str, str]:
        if "users.json" not in names:
            return {}
        try:
            data = json.loads(tree.read("users.json", MAX_JSON_BYTES))
        except (SkipEntity, ValueError) as exc:
            logger.warning("slack_export: users.json unreadable: %s", exc)
            return {}
        out = {}
        for u in data if isinstance(data, list) else []:
            if isinstance(u, dict) and u.get("id"):
                profile = u.get("profile") or {}
                out[u["id"]] = (profile.get("display_name") or profile.get("real_name") or u.get("real_name")
                                or u.get("name") or u["id"])
        return out

    def _channels(self, tree: ExportTree, names: list[str]) -> dict[str, dict]:
        """{folder name: channel} (exports name folders by channel name, DMs by id)."""
        out = {}
        for file_name, kind in CHANNEL_FILES:
            if file_name not in names:
                continue
            try:
                data = json.loads(tree.read(file_name, MAX_JSON_BYTES))
            except (SkipEntity, ValueError) as exc:
                logger.warning("slack_export: %s unreadable: %s", file_name, exc)
                continue
            for c in data if isinstance(data, list) else []:
                if not isinstance(c, dict) or not c.get("id"):
                    continue
                channel = {"id": c["id"], "name": c.get("name") or c["id"], "kind": kind,
                           "topic": ((c.get("topic") or {}).get("value") or ""),
                           "purpose": ((c.get("purpose") or {}).get("value") or ""),
                           "members": len(c.get("members") or []) or int(c.get("num_members") or 0),
                           "created": c.get("created")}
                out[channel["name"]] = channel
                out.setdefault(c["id"], channel)
        return out

    def _channel_entity(self, channel: dict, workspace: str) -> SlackExportChannelEntity:
        created = _ts_datetime(channel.get("created"))
        return SlackExportChannelEntity(
            entity_id=channel["id"], name=f"#{channel['name']}", created_at=created, updated_at=None,
            web_url=f"{workspace}/archives/{channel['id']}" if workspace else "",
            raw_source_fields={"channel_id": channel["id"], "channel": channel["name"], "kind": channel["kind"],
                               "member_count": channel.get("members", 0)},
            channel_id=channel["id"], topic=channel.get("topic", ""), purpose=channel.get("purpose", ""),
            kind=channel["kind"], member_count=channel.get("members", 0),
        )

    def _messages(self, channel: dict, crumb: Breadcrumb, messages: list[dict], users: dict[str, str],
                  workspace: str) -> Iterator[BaseEntity]:
        channels_by_id = {channel["id"]: channel["name"]}
        by_ts = {m.get("ts"): m for m in messages if m.get("ts")}
        for m in sorted(messages, key=lambda m: _ts_float(m.get("ts"))):
            ts = str(m.get("ts") or "")
            if not ts or m.get("type", "message") != "message" or m.get("subtype") in NOISE_SUBTYPES:
                continue
            text = resolve_mrkdwn(m.get("text") or _blocks_text(m.get("blocks")), users, channels_by_id)
            author = (users.get(m.get("user") or "") or (m.get("user_profile") or {}).get("display_name")
                      or (m.get("bot_profile") or {}).get("name") or m.get("username") or m.get("user") or "")
            thread_ts = str(m.get("thread_ts") or "")
            breadcrumbs = [crumb]
            if thread_ts and thread_ts != ts:
                parent = by_ts.get(thread_ts)
                parent_text = resolve_mrkdwn((parent or {}).get("text") or "", users, channels_by_id)
                breadcrumbs.append(Breadcrumb(f"{channel['id']}/{thread_ts}", _snippet(parent_text) or
                                              f"thread {thread_ts}", "SlackExportMessageEntity"))
            files = [f for f in m.get("files") or [] if isinstance(f, dict)]
            extras = [f"File: {f.get('title') or f.get('name')}" for f in files if f.get('title') or f.get('name')]
            for a in m.get("attachments") or []:
                if isinstance(a, dict):
                    bits = [a.get("title") or "", a.get("text") or a.get("fallback") or ""]
                    line = " — ".join(b.strip() for b in bits if b and b.strip())
                    if line:
                        extras.append(f"Link: {resolve_mrkdwn(line, users, channels_by_id)}")
            edited = m.get("edited") or {}
            created = _ts_datetime(ts)
            url = ""
            if workspace:
                url = f"{workspace}/archives/{channel['id']}/p{ts.replace('.', '')}"
                if thread_ts and thread_ts != ts:
                    url += f"?thread_ts={thread_ts}&cid={channel['id']}"
            yield SlackExportMessageEntity(
                entity_id=f"{channel['id']}/{ts}", name=_snippet(text) or f"Message by {author or 'someone'}",
                breadcrumbs=breadcrumbs, created_at=created,
                updated_at=_ts_datetime(edited.get("ts")) or created, web_url=url,
                raw_source_fields={
                    "channel": channel["name"], "channel_id": channel["id"], "user_id": m.get("user") or "",
                    "author": author, "ts": ts, "thread_ts": thread_ts,
                    "is_reply": bool(thread_ts and thread_ts != ts), "reply_count": int(m.get("reply_count") or 0),
                    "reactions": [{"name": r.get("name"), "count": r.get("count", 0)}
                                  for r in m.get("reactions") or [] if isinstance(r, dict)],
                    "files": [{"name": f.get("name"), "title": f.get("title"), "mimetype": f.get("mimetype")}
                              for f in files],
                    "subtype": m.get("subtype") or "", "edited": bool(edited),
                },
                channel_id=channel["id"], channel_name=channel["name"], ts=ts, thread_ts=thread_ts,
                author=author, text=text, extras="\n".join(extras),
            )


def resolve_mrkdwn(text: str, users: dict[str, str], channels: dict[str, str]) -> str:
    """Slack mrkdwn to plain text: `<@U1>` → `@name`, `<#C1|general>` → `#general`,
    `<!here>` → `@here`, `<https://x|label>` → `label (https://x)`; HTML entities decoded."""

    def link(match: re.Match) -> str:
        url, label = match.group(1), match.group(2)
        return f"{label} ({url})" if label and label != url else url

    def mention(match: re.Match) -> str:
        sigil, ref, label = match.groups()
        if sigil == "@":
            return "@" + (label or users.get(ref) or ref)
        if sigil == "#":
            return "#" + (label or channels.get(ref) or ref)
        return "@" + (label or ref.split("^")[0])

    text = _LINK.sub(link, text or "")
    text = _MENTION.sub(mention, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _blocks_text(blocks) -> str:
    """Text of rich_text blocks, for messages whose `text` is empty."""
    out: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("type") == "text" and isinstance(node.get("text"), str):
                out.append(node["text"])
            elif node.get("type") == "link":
                out.append(node.get("text") or node.get("url") or "")
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks or [])
    return "".join(out)


def _workspace_from_export(tree: ExportTree, names: list[str]) -> str:
    """`https://<team>.slack.com` from the first file permalink found, else ""."""
    for name in names:
        parts = PurePosixPath(name).parts
        if len(parts) != 2 or not _DAY_FILE.match(parts[1]):
            continue
        try:
            raw = tree.read(name, MAX_JSON_BYTES)
        except SkipEntity:
            continue
        match = re.search(rb'"permalink":\s*"(https://[a-z0-9-]+\.slack\.com)/', raw)
        if match:
            return match.group(1).decode()
    return ""


def _ts_float(ts) -> float:
    try:
        return float(ts)
    except (TypeError, ValueError):
        return 0.0


def _ts_datetime(ts) -> datetime | None:
    value = _ts_float(ts)
    return datetime.fromtimestamp(value, tz=timezone.utc) if value > 0 else None


def _snippet(text: str, words: int = 12) -> str:
    parts = (text or "").split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _unreadable(name: str, reason: str) -> BaseEntity:
    return UnreadableEntity(entity_id=f"file:{name}", name=name, reason=f"unreadable day file: {reason}")
