"""Front: the conversations of a Front company (shared inboxes), with their messages and comments.

Auth: an API token (Settings → Developers → API tokens, with read scopes on the inboxes to
index), sent as `Authorization: Bearer <token>`, or OAuth 2 (browser flow, bring-your-own
client, or an injected token; access tokens expire and are refreshed: `with_refresh`, the `front`
entry of oauth_providers.yml). A refused token (401) is refreshed once (OAuth) or marks the
connection `needs_reauth`.

API (Core API, `https://api2.frontapp.com`, answers `{"_results": [...], "_pagination": {"next"}}`):
a first run lists `GET /conversations?limit=100` (every status but trashed), later runs read the
event feed `GET /events?q[after]=<mark>&limit=100` and re-read the conversations its events name;
per conversation `GET /conversations/{id}/messages?limit=100` and `/comments?limit=100`, each
paged by `_pagination.next`. Front budgets requests per company per minute (50 to 500 by plan)
and answers 429 with Retry-After, which the shared client waits out.

Entities: FrontConversationEntity (`conversation:{id}`: subject, status, tags, every message
"author: text" and every comment "(comment) author: text"; `web_url`
`https://app.frontapp.com/open/<id>`).

Incremental: cursor `{"since": {"events": <newest emitted_at, epoch seconds>}}` (after a first
run: when its listing began, less five minutes for clock skew). The events of a
conversation are taken in order: after a `trash` event (and no later `restore`) the
conversation is reported deleted; after any other event it is read again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, html_text, parse_time

API = "https://api2.frontapp.com"
LIMIT = 100
CLOCK_MARGIN_SECONDS = 300
_now = time.time  # the clock of the first run's mark (tests set it)


@dataclass
class FrontConversationEntity(BaseEntity):
    """A conversation with its messages and internal comments."""

    status: str = ""
    tags: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (f"status: {self.status}", f"tags: {', '.join(self.tags)}" if self.tags else "")
                         if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, *self.messages) if p)


def _who(person: dict | None) -> str:
    person = person or {}
    return " ".join(x for x in (person.get("first_name"), person.get("last_name")) if x) or person.get("email") \
        or person.get("handle") or ""


@source(
    name="Front",
    short_name="front",
    description="Conversations of Front shared inboxes, with their messages and internal comments.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    auth_fields=(ConfigField("api_token", "API token", "string", "Settings → Developers → API tokens.", required=True,
                             is_secret=True),),
    labels=("Customer Support", "Email"),
    entity_types=(FrontConversationEntity,),
    rate_limit_level="org",
    rate_limit="50/minute",
    base_url=API,
)
class FrontSource(WatermarkSource, BaseSource):
    """Lists conversations, then follows the event feed; see the module docstring."""

    def http_auth(self):
        token = self.credentials.get("api_token")
        return BearerAuth(token) if token else super().http_auth()

    def _results(self, path: str, params: dict | None) -> Iterator[dict]:
        url = path
        while url:
            body = self.http.get_json(url, params=params)
            yield from body.get("_results") or []
            url, params = (body.get("_pagination") or {}).get("next"), None

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        since = self._marks.since("events")
        if not since:
            # Events from a little before the listing began are read next time (a repeat is kept by its hash).
            self._marks.set("events", round(_now() - CLOCK_MARGIN_SECONDS, 3))
            for conversation in self._results("/conversations", {"limit": LIMIT}):
                yield self._conversation(conversation)
            return
        last: dict[str, tuple[str, dict]] = {}
        for event in sorted(self._results("/events", {"q[after]": since, "limit": LIMIT}),
                            key=lambda e: e.get("emitted_at") or 0):
            self._marks.advance("events", event.get("emitted_at"))
            conversation = event.get("conversation") or {}
            if conversation.get("id"):
                last[conversation["id"]] = (event.get("type") or "", conversation)
        for cid, (kind, conversation) in last.items():
            if kind == "trash" or conversation.get("status") == "deleted":
                self._marks.delete(f"conversation:{cid}")
                continue
            try:
                yield self._conversation(self.http.get_json(f"/conversations/{cid}"))
            except HttpError as exc:
                if exc.status != 404:
                    raise
                self._marks.delete(f"conversation:{cid}")

    def _conversation(self, c: dict) -> FrontConversationEntity:
        cid = c["id"]
        lines = []
        for m in self._results(f"/conversations/{cid}/messages", {"limit": LIMIT}):
            author = _who(m.get("author")) or next((_who(r) for r in m.get("recipients") or []
                                                    if r.get("role") == "from"), "")
            lines.append((m.get("created_at") or 0, f"{author}: {m.get('text') or html_text(m.get('body'))}"))
        for comment in self._results(f"/conversations/{cid}/comments", {"limit": LIMIT}):
            lines.append((comment.get("posted_at") or 0, f"(comment) {_who(comment.get('author'))}: "
                                                          f"{comment.get('body', '')}"))
        tags = [t.get("name") for t in c.get("tags") or [] if t.get("name")]
        times = [t for t, _ in lines]
        return FrontConversationEntity(
            entity_id=f"conversation:{cid}", name=c.get("subject") or cid, status=c.get("status") or "", tags=tags,
            messages=[text for _, text in sorted(lines, key=lambda x: x[0])],
            created_at=parse_time(c.get("created_at")), updated_at=parse_time(max(times)) if times else None,
            web_url=f"https://app.frontapp.com/open/{cid}",
            raw_source_fields={"status": c.get("status"), "tags": tags,
                               "assignee": _who(c.get("assignee")) or None,
                               "recipient": (c.get("recipient") or {}).get("handle")})
