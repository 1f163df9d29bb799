"""Shortcut (formerly Clubhouse): the stories of a Shortcut workspace, with their comments.

Auth: an API token (Settings → API Tokens), sent as the `Shortcut-Token` header, as Shortcut
documents; a refused token (401) marks the connection `needs_reauth`. Config: `query` (extra
Shortcut search operators, e.g. `team:mobile`; default none), `full_sync_days` (default 7).

API (v3, `https://api.app.shortcut.com`): `GET /api/v3/search/stories?query=<q>&page_size=25&detail=full`
(`q` = `is:story` plus the config's operators, and `updated:<mark date>..*` on incremental runs),
paged by the answer's `next` path; a story in full detail carries its comments. Shortcut allows
200 requests a minute per token and answers 429 (with Retry-After), which the shared client
waits out.

Entities: ShortcutStoryEntity (`story:{id}`: name, type, labels, description and comments
inside; `web_url` the story's `app_url`). Comments live inside their story, whose `updated_at`
moves with a new comment.

Incremental: cursor `{"since": {"stories": <newest updated_at>}, "full_at": <epoch>}`. The search
takes dates, so an incremental run asks from the mark's day (a repeat is kept by its hash);
archived stories are reported deleted. Deleted stories are not searchable, so every
`full_sync_days` a run lists everything again (a full listing removes them).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, BaseSource, ConfigField
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, parse_time

API = "https://api.app.shortcut.com"
PAGE_SIZE = 25


@dataclass
class ShortcutStoryEntity(BaseEntity):
    """A story with its comments."""

    story_type: str = ""
    labels: list[str] = field(default_factory=list)
    description: str = ""
    comments: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (self.story_type, f"labels: {', '.join(self.labels)}" if self.labels else "") if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, self.description, *self.comments) if p)


@source(
    name="Shortcut",
    short_name="shortcut",
    description="Stories of a Shortcut workspace, with their comments.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_token", "API token", "string", "Settings → API Tokens.", required=True,
                             is_secret=True),),
    config_fields=(
        ConfigField("query", "Search operators", "string", "Extra Shortcut search operators, e.g. team:mobile.",
                    default=""),
        ConfigField("full_sync_days", "Days between full listings", "integer", "Deleted stories are found by a "
                    "full listing this often.", default=7),
    ),
    labels=("Project Management",),
    entity_types=(ShortcutStoryEntity,),
    rate_limit_level="connection",
    rate_limit="200/minute",
    base_url=API,
)
class ShortcutSource(WatermarkSource, BaseSource):
    """Searches stories updated since the mark; see the module docstring."""

    def http_auth(self):
        return HeaderAuth({"Shortcut-Token": self.credentials["api_token"]})

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._full_at = self._marks.expire(cursor, self.config.get("full_sync_days", 7), time.time())
        query = " ".join(q for q in ("is:story", self.config.get("query") or "") if q)
        since = self._marks.since("stories")
        if since:
            query += f" updated:{since[:10]}..*"
        path, params = "/api/v3/search/stories", {"query": query, "page_size": PAGE_SIZE, "detail": "full"}
        while path:
            body = self.http.get_json(path, params=params)
            for story in body.get("data") or []:
                self._marks.advance("stories", story.get("updated_at"))
                if story.get("archived"):
                    self._marks.delete(f"story:{story['id']}")
                    continue
                yield self._story(story)
            path, params = body.get("next"), None  # the next path carries the query and its token

    def _story(self, s: dict) -> ShortcutStoryEntity:
        labels = [label.get("name") for label in s.get("labels") or [] if label.get("name")]
        comments = [c.get("text", "") for c in s.get("comments") or [] if not c.get("deleted") and c.get("text")]
        return ShortcutStoryEntity(
            entity_id=f"story:{s['id']}", name=s.get("name") or str(s["id"]), story_type=s.get("story_type") or "",
            labels=labels, description=s.get("description") or "", comments=comments,
            created_at=parse_time(s.get("created_at")), updated_at=parse_time(s.get("updated_at")),
            web_url=s.get("app_url") or "",
            raw_source_fields={"story_type": s.get("story_type"), "labels": labels, "estimate": s.get("estimate"),
                               "workflow_state_id": s.get("workflow_state_id"), "epic_id": s.get("epic_id"),
                               "completed": s.get("completed")})

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), "full_at": self._full_at}
