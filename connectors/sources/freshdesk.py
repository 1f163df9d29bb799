"""Freshdesk: support tickets with their conversations (replies and notes).

Config: `domain` (the `acme` of acme.freshdesk.com; checked, so the host is always a Freshdesk
one), `include_conversations` (default true). Auth: an agent's API key (Profile settings → Your
API Key), sent as HTTP basic auth `<api key>:X`, as Freshdesk documents; a refused key (401
`invalid_credentials`) marks the connection `needs_reauth`.

API (v2): `GET /api/v2/tickets?updated_since=<mark>&order_by=updated_at&order_type=asc&per_page=100
&include=description` (without `updated_since` Freshdesk lists only the last 30 days, so a
first run asks from 1970), paged by the `Link: <...>; rel="next"` header; conversations
`GET /api/v2/tickets/{id}/conversations?per_page=100`, paged the same way; deleted tickets
`GET /api/v2/tickets?filter=deleted&updated_since=<mark>&per_page=100`. Budget: per account and
plan (e.g. 200 a minute on Growth), announced in `X-RateLimit-Remaining`; a 429 carries
`Retry-After`, which the shared client waits out.

Entities: FreshdeskTicketEntity (`ticket:{id}`: subject, description, status, priority, tags
and the conversation thread; `web_url` the agent view `https://<domain>.freshdesk.com/a/tickets/
<id>`). Conversations live inside their ticket: a new reply moves the ticket's `updated_at`,
so the incremental run re-reads the thread, and a deleted ticket takes it with it.

Incremental: cursor `{"since": {"tickets": <newest updated_at>}}`; deleted tickets (the
`filter=deleted` view, moved to trash) are reported deleted on incremental runs; a first run
(or forced full sync) is a full listing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.base import BaseEntity, ConfigField
from connectors.registry import source
from connectors.sources._freshworks import FreshworksSource
from connectors.sources._saas import Watermarks, WatermarkSource, parse_time

EPOCH = "1970-01-01T00:00:00Z"
STATUS = {2: "Open", 3: "Pending", 4: "Resolved", 5: "Closed"}
PRIORITY = {1: "Low", 2: "Medium", 3: "High", 4: "Urgent"}


@dataclass
class FreshdeskTicketEntity(BaseEntity):
    """A ticket with its conversation thread ("(note) text" for private notes)."""

    status: str = ""
    priority: str = ""
    tags: list[str] = field(default_factory=list)
    description: str = ""
    conversations: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (f"status: {self.status}", f"priority: {self.priority}",
                                     f"tags: {', '.join(self.tags)}" if self.tags else "") if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, self.description, *self.conversations) if p)


@source(
    name="Freshdesk",
    short_name="freshdesk",
    description="Support tickets of a Freshdesk help desk, with their replies and notes.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "An agent's API key (Profile settings).", required=True,
                             is_secret=True),),
    config_fields=(
        ConfigField("domain", "Domain", "string", "The `acme` of https://acme.freshdesk.com.", required=True),
        ConfigField("include_conversations", "Include conversations", "boolean", "Index replies and notes too.",
                    default=True),
    ),
    labels=("Customer Support",),
    entity_types=(FreshdeskTicketEntity,),
    rate_limit_level="org",
    rate_limit="100/minute",
)
class FreshdeskSource(WatermarkSource, FreshworksSource):
    """Lists tickets by `updated_since`, with their conversations; see the module docstring."""

    SUBDOMAIN_OF, SUBDOMAIN_OWNER = "freshdesk.com", "the help desk's"

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        since = self._marks.since("tickets")
        params = {"updated_since": since or EPOCH, "order_by": "updated_at", "order_type": "asc", "per_page": 100,
                  "include": "description"}
        for ticket in self.listing("/api/v2/tickets", params):
            self._marks.advance("tickets", ticket.get("updated_at"))
            yield self._ticket(ticket)
        if since:
            for ticket in self.listing("/api/v2/tickets", {"filter": "deleted", "updated_since": since,
                                                         "per_page": 100}):
                self._marks.delete(f"ticket:{ticket['id']}")

    def _ticket(self, ticket: dict) -> FreshdeskTicketEntity:
        thread = []
        if self.config.get("include_conversations", True):
            for c in self.listing(f"/api/v2/tickets/{ticket['id']}/conversations", {"per_page": 100}):
                thread.append(("(note) " if c.get("private") else "") + (c.get("body_text") or "").strip())
        status, priority = STATUS.get(ticket.get("status"), str(ticket.get("status"))), \
            PRIORITY.get(ticket.get("priority"), str(ticket.get("priority")))
        return FreshdeskTicketEntity(
            entity_id=f"ticket:{ticket['id']}", name=f"#{ticket['id']} {ticket.get('subject') or ''}".strip(),
            status=status, priority=priority, tags=list(ticket.get("tags") or []),
            description=(ticket.get("description_text") or "").strip(), conversations=thread,
            created_at=parse_time(ticket.get("created_at")), updated_at=parse_time(ticket.get("updated_at")),
            web_url=f"{self.base_url}/a/tickets/{ticket['id']}",
            raw_source_fields={"status": status, "priority": priority, "type": ticket.get("type"),
                               "tags": list(ticket.get("tags") or []), "group_id": ticket.get("group_id"),
                               "responder_id": ticket.get("responder_id"), "requester_id": ticket.get("requester_id")})
