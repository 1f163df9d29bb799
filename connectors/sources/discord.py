"""Discord: the messages of a Discord server's text and announcement channels, read by a bot.

Auth: a bot token (Developer Portal → Bot; the bot invited to the server with View Channels and
Read Message History, and the Message Content intent switched on, without which Discord sends
empty message bodies), sent as `Authorization: Bot <token>`; a refused token (401) marks the
connection `needs_reauth`. Config: `guild_id` (the server), `channels` (channel ids; default
every text and announcement channel the bot can read), `full_sync_days` (default 7). The
entities are visible to the whole organization: invite the bot only where that is right.

API (v10): `GET /api/v10/guilds/{guild id}/channels` (types 0, text, and 5, announcement), then per
channel `GET /api/v10/channels/{id}/messages?limit=100&after=<message id>`, from `after=0` on a
first run, each page's highest id the next `after`, until a page is short. A channel the bot may
not read answers 403 and is skipped. Discord's 429 (a JSON `retry_after` and the Retry-After
header) is the shared client's to wait out.

Entities: DiscordChannelEntity (`channel:{id}`), DiscordMessageEntity (`message:{id}`:
"author: content"; breadcrumb: the channel; `web_url`
`https://discord.com/channels/<guild>/<channel>/<message>`). Join, pin and other system
messages are left out.

Incremental: cursor `{"since": {<channel id>: <highest message id>}, "full_at": <epoch>}`:
snowflake ids grow with time, so `after=` reads new messages only. Discord's REST API reports
neither edits nor deletions, so every `full_sync_days` a run lists every message again (a full
listing: edits are then applied and deleted messages removed).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, parse_time

API = "https://discord.com"
LIMIT = 100
TEXT_CHANNELS = (0, 5)
USER_MESSAGES = (0, 19)  # DEFAULT and REPLY


@dataclass
class DiscordChannelEntity(BaseEntity):
    """A channel: its name and topic."""

    topic: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nDiscord channel\n\n{self.topic}".strip()


@dataclass
class DiscordMessageEntity(BaseEntity):
    """One message ("author: content")."""

    author: str = ""
    content: str = ""

    def textual_representation(self) -> str:
        return f"{self.author}: {self.content}".strip()


@source(
    name="Discord",
    short_name="discord",
    description="Messages of a Discord server's text and announcement channels, read by a bot.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("bot_token", "Bot token", "string", "Developer Portal → Bot → Token.", required=True,
                             is_secret=True),),
    config_fields=(
        ConfigField("guild_id", "Server ID", "string", "The server's id (Developer Mode → Copy Server ID).",
                    required=True),
        ConfigField("channels", "Channels", "array", "Channel ids (default: every readable text channel).",
                    items_type="string"),
        ConfigField("full_sync_days", "Days between full listings", "integer", "Edits and deletions are picked "
                    "up by a full listing this often.", default=7),
    ),
    labels=("Communication",),
    entity_types=(DiscordChannelEntity, DiscordMessageEntity),
    rate_limit_level="connection",
    rate_limit="40/second",
    base_url=API,
)
class DiscordSource(WatermarkSource, BaseSource):
    """Reads each channel's messages after the last one seen; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        ids = [out["guild_id"], *(out.get("channels") or [])]
        if not all(str(i).isdigit() for i in ids):
            raise ValueError("config fields 'guild_id' and 'channels' take Discord ids (digits only)")
        if not 1 <= out["full_sync_days"] <= 365:
            raise ValueError("config field 'full_sync_days' must be between 1 and 365")
        return out

    def http_auth(self):
        return BearerAuth(self.credentials["bot_token"], "Bot")

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._full_at = self._marks.expire(cursor, self.config.get("full_sync_days", 7), time.time())
        guild = self.config["guild_id"]
        wanted = set(self.config.get("channels") or [])
        for channel in self.http.get_json(f"/api/v10/guilds/{guild}/channels"):
            if channel.get("type") not in TEXT_CHANNELS or (wanted and channel["id"] not in wanted):
                continue
            try:
                messages = list(self._messages(channel["id"]))
            except HttpError as exc:
                if exc.status == 403:  # Missing Access: the bot cannot read this channel
                    continue
                raise
            yield DiscordChannelEntity(entity_id=f"channel:{channel['id']}", name=channel.get("name") or channel["id"],
                                       topic=channel.get("topic") or "",
                                       web_url=f"https://discord.com/channels/{guild}/{channel['id']}")
            crumb = Breadcrumb(f"channel:{channel['id']}", channel.get("name") or "", "DiscordChannelEntity")
            for m in messages:
                if m.get("type") not in USER_MESSAGES:
                    continue
                author = m.get("author") or {}
                name = author.get("global_name") or author.get("username") or ""
                yield DiscordMessageEntity(
                    entity_id=f"message:{m['id']}", name=(m.get("content") or "")[:80] or m["id"], author=name,
                    content=m.get("content") or "", breadcrumbs=[crumb], created_at=parse_time(m.get("timestamp")),
                    updated_at=parse_time(m.get("edited_timestamp") or m.get("timestamp")),
                    web_url=f"https://discord.com/channels/{guild}/{channel['id']}/{m['id']}",
                    raw_source_fields={"channel": channel.get("name"), "author": name,
                                       "attachments": [a.get("url") for a in m.get("attachments") or []]})

    def _messages(self, channel_id: str) -> Iterator[dict]:
        after = self._marks.since(channel_id) or "0"
        while True:
            page = self.http.get_json(f"/api/v10/channels/{channel_id}/messages",
                                      params={"limit": LIMIT, "after": after})
            yield from sorted(page, key=lambda m: int(m["id"]))
            if page:  # snowflakes are compared as numbers, kept as strings (as Discord sends them)
                after = str(max(int(m["id"]) for m in page))
                self._marks.set(channel_id, after)
            if len(page) < LIMIT:
                return

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), "full_at": self._full_at}
