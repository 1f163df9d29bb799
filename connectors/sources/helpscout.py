"""Help Scout: the conversations of Help Scout mailboxes, with their threads.

Auth: OAuth 2 (browser flow, bring-your-own client, or an injected token). Help Scout access
tokens live two days and come with a refresh token (`with_refresh`: the `helpscout` entry of
oauth_providers.yml); an expired token is refreshed, a refused refresh marks the connection
`needs_reauth`. Config: `mailboxes` (ids; default every mailbox the user can see),
`full_sync_days` (default 7).

API (Mailbox API 2.0, HAL+JSON): `GET /v2/conversations?status=all&embed=threads&sortField=
modifiedAt&sortOrder=asc&page=N` (`modifiedSince=<mark>` on incremental runs; `mailbox=<ids>`
when chosen), paged by `page.number` / `page.totalPages`; each conversation arrives with its
threads embedded (`_embedded.threads`). Help Scout allows 200 requests a minute per account and
answers 429 with `X-RateLimit-Retry-After`/Retry-After, which the shared client waits out.

Entities: HelpScoutConversationEntity (`conversation:{id}`: "#number subject", status, tags,
customer and every thread, customer replies, agent replies and notes; breadcrumb: the mailbox;
`web_url` `https://secure.helpscout.net/conversation/<id>/<number>`). Threads live inside their
conversation: a new thread moves its `userUpdatedAt`/`modifiedAt`.

Incremental: cursor `{"since": {"conversations": <newest userUpdatedAt>}, "full_at": <epoch>}`.
Help Scout's list reports no deletions, so every `full_sync_days` a run lists everything again
(a full listing: deleted conversations are then removed).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, html_text, parse_time

API = "https://api.helpscout.net"


@dataclass
class HelpScoutConversationEntity(BaseEntity):
    """A conversation with its threads ("(note) author: text" for notes)."""

    status: str = ""
    customer: str = ""
    tags: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (f"status: {self.status}", f"customer: {self.customer}" if self.customer else "",
                                     f"tags: {', '.join(self.tags)}" if self.tags else "") if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, *self.threads) if p)


def _person(p: dict | None) -> str:
    p = p or {}
    return " ".join(x for x in (p.get("first"), p.get("last")) if x) or p.get("email") or ""


@source(
    name="Help Scout",
    short_name="helpscout",
    description="Conversations of Help Scout mailboxes, with their replies and notes.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    config_fields=(
        ConfigField("mailboxes", "Mailboxes", "array", "Mailbox ids (default: every mailbox).", items_type="string"),
        ConfigField("full_sync_days", "Days between full listings", "integer", "Deleted conversations are found "
                    "by a full listing this often.", default=7),
    ),
    labels=("Customer Support",),
    entity_types=(HelpScoutConversationEntity,),
    rate_limit_level="org",
    rate_limit="200/minute",
    base_url=API,
)
class HelpScoutSource(WatermarkSource, BaseSource):
    """Lists conversations modified since the mark, threads embedded; see the module docstring."""

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._full_at = self._marks.expire(cursor, self.config.get("full_sync_days", 7), time.time())
        params = {"status": "all", "embed": "threads", "sortField": "modifiedAt", "sortOrder": "asc"}
        since = self._marks.since("conversations")
        if since:
            params["modifiedSince"] = since
        if self.config.get("mailboxes"):
            params["mailbox"] = ",".join(self.config["mailboxes"])
        page = 1
        while True:
            body = self.http.get_json("/v2/conversations", params={**params, "page": page})
            for conversation in (body.get("_embedded") or {}).get("conversations") or []:
                self._marks.advance("conversations", conversation.get("userUpdatedAt"))
                yield self._conversation(conversation)
            info = body.get("page") or {}
            if page >= int(info.get("totalPages") or 0):
                return
            page += 1

    def _conversation(self, c: dict) -> HelpScoutConversationEntity:
        threads = []
        for t in sorted((c.get("_embedded") or {}).get("threads") or [], key=lambda t: t.get("createdAt") or ""):
            if t.get("type") not in ("customer", "message", "note", "reply", "chat", "phone"):
                continue  # line items: status changes, assignments
            prefix = "(note) " if t.get("type") == "note" else ""
            threads.append(f"{prefix}{_person(t.get('createdBy'))}: {html_text(t.get('body'))}")
        tags = [t.get("tag") for t in c.get("tags") or [] if t.get("tag")]
        customer = _person(c.get("primaryCustomer"))
        mailbox = str(c.get("mailboxId") or "")
        return HelpScoutConversationEntity(
            entity_id=f"conversation:{c['id']}", name=f"#{c.get('number')} {c.get('subject') or ''}".strip(),
            status=c.get("status") or "", customer=customer, tags=tags, threads=threads,
            breadcrumbs=[Breadcrumb(f"mailbox:{mailbox}", f"mailbox {mailbox}", "mailbox")] if mailbox else [],
            web_url=f"https://secure.helpscout.net/conversation/{c['id']}/{c.get('number')}",
            created_at=parse_time(c.get("createdAt")), updated_at=parse_time(c.get("userUpdatedAt")),
            raw_source_fields={"number": c.get("number"), "status": c.get("status"), "mailbox_id": c.get("mailboxId"),
                               "tags": tags, "customer": customer, "closed_at": c.get("closedAt")})

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), "full_at": self._full_at}
