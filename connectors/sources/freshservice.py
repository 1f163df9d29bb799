"""Freshservice: the tickets (with their conversations) and the solution articles of a service desk.

Config: `domain` (the `acme` of acme.freshservice.com; checked, so the host is always a
Freshservice one), `include_conversations` (default true), `include_articles` (default true),
`full_sync_days` (7). Auth: an agent's API key (Profile settings → Your API Key), sent as HTTP
basic auth `<api key>:X`, as Freshservice documents; a refused key (401) marks the connection
`needs_reauth`.

API (v2; every answer wraps its list: `{"tickets": [...]}`): `GET /api/v2/tickets?updated_since=<mark>
&order_type=asc&per_page=100` (without `updated_since` Freshservice lists only the last 30 days,
so a first run asks from 1970), conversations `GET /api/v2/tickets/{id}/conversations?per_page=100`,
solution articles `GET /api/v2/solutions/categories`, `.../folders?category_id=`,
`.../articles?folder_id=`; every listing paged by the `Link: <...>; rel="next"` header. Budget:
per account and plan (e.g. 140 a minute on Growth); a 429 carries `Retry-After`, which the shared
client waits out.

Entities: FreshserviceTicketEntity (`ticket:{id}`: subject, description, status, priority,
category, the conversation thread; `web_url` `https://<domain>.freshservice.com/helpdesk/tickets/<id>`),
FreshserviceArticleEntity (`article:{id}`, published articles only; breadcrumbs category →
folder; `web_url` `.../support/solutions/articles/<id>`).

Incremental: cursor `{"since": {"tickets": <newest updated_at>}, "ids": {"articles": [...]},
"full_at": ...}`. Tickets changed since the mark are read again; articles are listed whole every
run and those gone are deleted. The ticket list reports no deletions, so every `full_sync_days`
a run lists every ticket and the pipeline removes what it no longer holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._freshworks import FreshworksSource
from connectors.sources._saas import FULL_SYNC_DAYS, PeriodicFullListing, Roster, compact, html_text, parse_time

EPOCH = "1970-01-01T00:00:00Z"
STATUS = {2: "Open", 3: "Pending", 4: "Resolved", 5: "Closed"}
PRIORITY = {1: "Low", 2: "Medium", 3: "High", 4: "Urgent"}
PUBLISHED = 2


@dataclass
class FreshserviceTicketEntity(BaseEntity):
    """A ticket (incident or service request) with its conversation thread ("(note) text" for private notes)."""

    details: str = ""
    description: str = ""
    conversations: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.details, self.description, *self.conversations) if p)


@dataclass
class FreshserviceArticleEntity(BaseEntity):
    """A published solution article: its title (`name`) and text."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="Freshservice",
    short_name="freshservice",
    description="Tickets, with their replies and notes, and solution articles of a Freshservice service desk.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "An agent's API key (Profile settings).", required=True,
                             is_secret=True),),
    config_fields=(
        ConfigField("domain", "Domain", "string", "The `acme` of https://acme.freshservice.com.", required=True),
        ConfigField("include_conversations", "Include conversations", "boolean", "Index replies and notes too.",
                    default=True),
        ConfigField("include_articles", "Include solution articles", "boolean", default=True),
        FULL_SYNC_DAYS,
    ),
    labels=("IT Service Management", "Customer Support"),
    entity_types=(FreshserviceTicketEntity, FreshserviceArticleEntity),
    rate_limit_level="org",
    rate_limit="100/minute",
)
class FreshserviceSource(PeriodicFullListing, FreshworksSource):
    """Lists tickets by `updated_since` and every published article; see the module docstring."""

    SUBDOMAIN_OF, SUBDOMAIN_OWNER = "freshservice.com", "the service desk's"

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.start_marks(cursor)
        self._articles = Roster(cursor)
        params = {"updated_since": self._marks.since("tickets") or EPOCH, "order_type": "asc", "per_page": 100}
        for ticket in self.listing("/api/v2/tickets", params, "tickets"):
            self._marks.advance("tickets", ticket.get("updated_at"))
            yield self._ticket(ticket)
        if self.config.get("include_articles", True):
            yield from self._solution_articles()
        else:
            self._articles.forget("articles")

    def _ticket(self, t: dict) -> FreshserviceTicketEntity:
        thread = []
        if self.config.get("include_conversations", True):
            for c in self.listing(f"/api/v2/tickets/{t['id']}/conversations", {"per_page": 100}, "conversations"):
                thread.append(("(note) " if c.get("private") else "") + (c.get("body_text") or "").strip())
        meta = compact({"status": STATUS.get(t.get("status"), t.get("status")), "type": t.get("type"),
                        "priority": PRIORITY.get(t.get("priority"), t.get("priority")),
                        "category": t.get("category"), "sub_category": t.get("sub_category")})
        return FreshserviceTicketEntity(
            entity_id=f"ticket:{t['id']}", name=f"#{t['id']} {t.get('subject') or ''}".strip(),
            details="; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in meta.items()),
            description=(t.get("description_text") or "").strip() or html_text(t.get("description")),
            conversations=thread, web_url=f"{self.base_url}/helpdesk/tickets/{t['id']}",
            created_at=parse_time(t.get("created_at")), updated_at=parse_time(t.get("updated_at")),
            raw_source_fields={**meta, "tags": list(t.get("tags") or []), "group_id": t.get("group_id"),
                               "department_id": t.get("department_id"), "requester_id": t.get("requester_id")})

    def _solution_articles(self) -> Iterator[BaseEntity]:
        listed = []
        for category in self.listing("/api/v2/solutions/categories", {}, "categories"):
            for folder in self.listing("/api/v2/solutions/folders", {"category_id": category["id"]}, "folders"):
                crumbs = [Breadcrumb(f"category:{category['id']}", category.get("name") or "", "FreshserviceCategory"),
                          Breadcrumb(f"folder:{folder['id']}", folder.get("name") or "", "FreshserviceFolder")]
                for a in self.listing("/api/v2/solutions/articles", {"folder_id": folder["id"]}, "articles"):
                    if a.get("status") != PUBLISHED:
                        continue
                    listed.append(f"article:{a['id']}")
                    yield FreshserviceArticleEntity(
                        entity_id=f"article:{a['id']}", name=a.get("title") or str(a["id"]),
                        text=(a.get("description_text") or "").strip() or html_text(a.get("description")),
                        breadcrumbs=crumbs, web_url=f"{self.base_url}/support/solutions/articles/{a['id']}",
                        created_at=parse_time(a.get("created_at")), updated_at=parse_time(a.get("updated_at")),
                        raw_source_fields=compact({"category": category.get("name"), "folder": folder.get("name"),
                                                   "tags": list(a.get("tags") or [])}))
        self._articles.listed("articles", listed)
        for gone in self._articles.deleted():
            self._marks.delete(gone)

    def next_cursor(self) -> dict:
        return {**super().next_cursor(), **self._articles.cursor()}
