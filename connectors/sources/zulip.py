"""Zulip: the channels (streams) and topics, with their messages, of a Zulip organization.

Auth: the email and API key of a user or bot (Personal settings → Account & privacy → API key,
or a bot's), sent as HTTP basic auth, as Zulip documents; a refused key (401) marks the
connection `needs_reauth`. `site_url` is the organization's URL (`https://<org>.zulipchat.com`
or a self-hosted server; SSRF-guarded). Only public channels are indexed unless
`include_private` is set: the entities are visible to the whole organization, so a private
channel's messages would reach people outside it.

API (REST, JSON, `{"result": "success", ...}`): `GET /api/v1/streams` (the channels the user can
see), `GET /api/v1/users/me/{stream_id}/topics` (each topic's name and `max_id`, its newest
message id), `GET /api/v1/messages?anchor=oldest&num_before=0&num_after=1000&narrow=[stream,
topic]&apply_markdown=false` (the `stream` operator, which every Zulip version accepts; 9.0
added `channel` as its new name), paged by `anchor=<last id>&include_anchor=false` until
`found_newest`. A 429 (`RATE_LIMIT_HIT`, with Retry-After) is the shared client's to wait out.

Entities: ZulipStreamEntity (`stream:{id}`), ZulipTopicEntity (`{stream id}/{topic}`: every
message of the topic in order, "sender: text"; breadcrumb: the channel; `web_url` the topic's
narrow link). Messages live inside their topic, so a topic whose messages are all deleted goes
with them.

Incremental: cursor `{"topics": {"<stream id>/<topic>": max_id}}`. Every run lists the channels
and their topics (one request per channel) and re-reads only the topics whose `max_id`
changed: new messages, and deletions of a topic's newest message. The listing of topics is
complete, so topics and channels no longer listed are deleted (`present_entity_ids`). An edit
or a deletion of an older message in an otherwise quiet topic waits for the topic's next
message or a forced full sync.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import quote, urlsplit

from connectors.auth.tokens import BasicAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http.ssrf import BlockedAddress, check_url
from connectors.registry import source
from connectors.sources._saas import parse_time

BATCH = 1000


def _hash_encode(text: str) -> str:
    """Zulip's encoding of a narrow operand in a URL fragment (encodeURIComponent, `%` → `.`)."""
    return quote(text, safe="").replace(".", "%2E").replace("%", ".")


@dataclass
class ZulipStreamEntity(BaseEntity):
    """A channel: its name and description."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nZulip channel\n\n{self.description}".strip()


@dataclass
class ZulipTopicEntity(BaseEntity):
    """A topic of a channel with all its messages, in order."""

    stream: str = ""
    messages: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        return f"# {self.stream} > {self.name}\n\n" + "\n\n".join(self.messages)


@source(
    name="Zulip",
    short_name="zulip",
    description="Channels and topics, with their messages, of a Zulip organization.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("email", "Email", "string", "The user's or bot's email.", required=True),
        ConfigField("api_key", "API key", "string", required=True, is_secret=True),
    ),
    config_fields=(
        ConfigField("site_url", "Organization URL", "string", "e.g. https://acme.zulipchat.com", required=True),
        ConfigField("streams", "Channels", "array", "Channel names to index (default: every one visible).",
                    items_type="string"),
        ConfigField("include_private", "Include private channels", "boolean", "Their messages become visible to "
                    "the whole organization.", default=False),
    ),
    labels=("Communication",),
    entity_types=(ZulipStreamEntity, ZulipTopicEntity),
    rate_limit_level="connection",
    rate_limit="200/minute",
)
class ZulipSource(BaseSource):
    """Lists channels and topics every run, re-reads the topics that changed; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        url = out["site_url"].strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("config field 'site_url' must be the organization's http(s) URL, e.g. "
                             "https://acme.zulipchat.com")
        try:
            check_url(url)
        except BlockedAddress as exc:
            raise ValueError(f"config field 'site_url': {exc}") from None
        out["site_url"] = url
        return out

    @property
    def base_url(self) -> str:
        return self.config["site_url"]

    def http_auth(self):
        return BasicAuth(self.credentials["email"], self.credentials["api_key"])

    def _get(self, path: str, params: dict | None = None) -> dict:
        body = self.http.get_json(path, params=params)
        if body.get("result") != "success":
            raise SourceError(f"Zulip answered {body.get('code')}: {body.get('msg')}", "source_error")
        return body

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        before = dict((cursor or {}).get("topics") or {})
        self._incremental = bool(before)
        self._topics: dict[str, int] = {}
        self._present: set[str] = set()
        wanted = set(self.config.get("streams") or [])
        for stream in self._get("/api/v1/streams")["streams"]:
            if wanted and stream["name"] not in wanted:
                continue
            if stream.get("invite_only") and not self.config.get("include_private"):
                continue
            stream_id, name = stream["stream_id"], stream["name"]
            stream_url = f"{self.base_url}/#narrow/stream/{stream_id}-{_hash_encode(name)}"
            self._present.add(f"stream:{stream_id}")
            yield ZulipStreamEntity(entity_id=f"stream:{stream_id}", name=name,
                                    description=stream.get("description") or "", web_url=stream_url,
                                    created_at=parse_time(stream.get("date_created")),
                                    raw_source_fields={"stream_id": stream_id,
                                                       "private": bool(stream.get("invite_only"))})
            for topic in self._get(f"/api/v1/users/me/{stream_id}/topics")["topics"]:
                key = f"{stream_id}/{topic['name']}"
                self._topics[key] = topic["max_id"]
                self._present.add(key)
                if before.get(key) == topic["max_id"]:
                    continue
                yield self._topic(stream_id, name, stream_url, topic["name"])

    def _messages(self, stream: str, topic: str) -> Iterator[dict]:
        narrow = json.dumps([{"operator": "stream", "operand": stream}, {"operator": "topic", "operand": topic}])
        anchor = "oldest"
        while True:
            params = {"anchor": anchor, "num_before": 0, "num_after": BATCH, "narrow": narrow,
                      "apply_markdown": "false"}
            if anchor != "oldest":
                params["include_anchor"] = "false"
            body = self._get("/api/v1/messages", params)
            messages = body.get("messages") or []
            yield from messages
            if body.get("found_newest") or not messages:
                return
            anchor = str(messages[-1]["id"])

    def _topic(self, stream_id: int, stream: str, stream_url: str, topic: str) -> ZulipTopicEntity:
        messages = list(self._messages(stream, topic))
        times = [m["timestamp"] for m in messages if m.get("timestamp")]
        edits = [m["last_edit_timestamp"] for m in messages if m.get("last_edit_timestamp")]
        senders = sorted({m.get("sender_full_name") or "" for m in messages} - {""})
        return ZulipTopicEntity(
            entity_id=f"{stream_id}/{topic}", name=topic, stream=stream,
            messages=[f"{m.get('sender_full_name')}: {m.get('content', '')}" for m in messages],
            breadcrumbs=[Breadcrumb(f"stream:{stream_id}", stream, "ZulipStreamEntity")],
            created_at=parse_time(min(times)) if times else None,
            updated_at=parse_time(max(times + edits)) if times else None,
            web_url=f"{stream_url}/topic/{_hash_encode(topic)}",
            raw_source_fields={"stream": stream, "senders": senders, "message_count": len(messages)})

    def is_full_listing(self) -> bool:
        return not self._incremental

    def present_entity_ids(self):
        return self._present

    def next_cursor(self) -> dict:
        return {"topics": self._topics}
