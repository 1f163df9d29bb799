"""Zendesk: support tickets with their comment threads, and Help Center articles.

Config: `subdomain` (the `acme` of acme.zendesk.com; checked, so the host is always a Zendesk
one), `include_comments` (default true), `include_articles` (default true). Auth: an agent's
email and API token (direct; sent as `{email}/token:{api_token}` basic auth), or OAuth with the
connection's own client registered in that Zendesk (tokens do not expire: `access_only`).

API: tickets through the cursor-based incremental export,
`GET /api/v2/incremental/tickets/cursor.json?start_time=0` on a first run, then `?cursor=<the
after_cursor saved by the last job>`, following `after_cursor` until `end_of_stream`. A ticket
in the export with `status: "deleted"` is reported deleted. Comments:
`GET /api/v2/tickets/{id}/comments.json?page[size]=100&include=users` (cursor pagination,
`meta.has_more` / `links.next`). A comment belongs to its ticket's thread — it cannot be moved,
and a new one moves the ticket's `updated_at` into the export — so the thread is indexed inside
the ticket's entity, and a deleted ticket takes its thread with it. Articles:
`GET /api/v2/help_center/articles.json?per_page=100&include=sections`, every run (a Help Center
is small); ids listed last time and absent now are deleted.

Access (`supports_access_control`): agents see every ticket; an end user sees the tickets they
requested or are copied on. A ticket carries `group:agents` and `user:<email>` of its requester,
its email CCs (`email_cc_ids`) and its CCs (`collaborator_ids`), their addresses from the users
sideloaded with the export (`include=users`) and with the comments. A ticket whose thread holds
an internal note (a comment with `public: false`) is indexed with the note, so it carries
`group:agents` only. The `agents` group is listed at each sync:
`GET /api/v2/users?role[]=agent&role[]=admin` (cursor pages), active unsuspended users, leaving out
restricted agents (`restricted_agent`: they see only their groups' or organization's tickets,
which is not mirrored). Help Center articles for everyone (`user_segment_id` null, not a draft) are
open to the organization; those of a user segment, and drafts, carry `group:agents`. Shared
organization tickets (end users seeing their organization's tickets) are not mirrored.

Budget: 200 requests a minute on the smallest plan (the export's own 10 a minute is waited out
on its 429 `Retry-After`). Entities: ZendeskTicketEntity (`ticket:{id}`, web_url the agent
view), ZendeskArticleEntity (`article:{id}`, its `html_url`; breadcrumb: its section). Cursor:
`{"since": {"tickets": "<after_cursor>"}, "ids": {"articles": [ids]}}`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BasicAuth
from connectors.base import AccessMembership, BaseEntity, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.notifications.vendors import ZendeskNotifications
from connectors.registry import source
from connectors.sources._saas import (
    Roster, SubdomainSource, Watermarks, WatermarkSource, compact, html_text, items, parse_time)


@dataclass
class ZendeskComment:
    """One comment of a ticket's thread (not an entity of its own; see the module docstring)."""

    id: int
    author: str
    public: bool
    created_at: str
    body: str


@dataclass
class ZendeskTicketEntity(BaseEntity):
    """A ticket and its comment thread."""

    ticket_id: int = 0
    status: str = ""
    priority: str = ""
    ticket_type: str = ""
    tags: list[str] = field(default_factory=list)
    description: str = ""
    comments: list[ZendeskComment] = field(default_factory=list)

    def textual_representation(self) -> str:
        facts = ", ".join(x for x in (self.status, self.priority and f"priority {self.priority}", self.ticket_type) if x)
        tags = f"\nTags: {', '.join(self.tags)}" if self.tags else ""
        out = [f"# Ticket #{self.ticket_id}: {self.name}\n\n{facts}{tags}"]
        if self.comments:
            for c in self.comments:
                visibility = "" if c.public else " (internal note)"
                out.append(f"## {c.author}{visibility}, {c.created_at}\n\n{c.body}")
        elif self.description:
            out.append(self.description)
        return "\n\n".join(out).strip()


@dataclass
class ZendeskArticleEntity(BaseEntity):
    """A Help Center article."""

    section: str = ""
    body: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.body}".strip()


@source(
    name="Zendesk",
    short_name="zendesk",
    notifications=ZendeskNotifications,
    description="Support tickets with their conversations, and Help Center articles, of a Zendesk account.",
    auth_methods=("direct", "oauth_byoc", "oauth_token"),
    oauth_type="access_only",
    requires_byoc=True,
    auth_fields=(
        ConfigField("email", "Agent email", "string", "The email of the agent or admin the API token belongs to.",
                    required=True),
        ConfigField("api_token", "API token", "string", "Admin Center → Apps and integrations → Zendesk API → "
                    "API tokens. The incremental export needs an admin's token.", required=True, is_secret=True),
    ),
    config_fields=(
        ConfigField("subdomain", "Subdomain", "string", "The `acme` of https://acme.zendesk.com.", required=True),
        ConfigField("include_comments", "Include comments", "boolean", "Index each ticket's conversation.",
                    default=True),
        ConfigField("include_articles", "Include Help Center articles", "boolean", "Index the Help Center too.",
                    default=True),
    ),
    labels=("Customer Support",),
    entity_types=(ZendeskTicketEntity, ZendeskArticleEntity),
    supports_access_control=True,
    mirrored_permissions=(("agents and admins: every ticket", True),
                          ("end users: tickets they requested or are copied on", True),
                          ("tickets with internal notes: agents only", True),
                          ("Help Center articles: everyone vs user segments and drafts (agents)", True),
                          ("restricted agents' groups and organizations", False),
                          ("shared organization tickets", False)),
    rate_limit_level="connection",
    rate_limit="200/minute",
)
class ZendeskSource(WatermarkSource, SubdomainSource):
    """Exports tickets incrementally and lists articles; see the module docstring."""

    SUBDOMAIN_OF = "zendesk.com"

    def http_auth(self):
        if self.credentials.get("api_token"):
            return BasicAuth(f"{self.credentials['email']}/token", self.credentials["api_token"])
        return super().http_auth()

    def generate_access_memberships(self) -> list[AccessMembership]:
        """The `agents` group: active, unsuspended, unrestricted agents and admins (`user:<email>`)."""
        def fetch(next_url):
            try:
                body = self.http.get_json(next_url or "/api/v2/users",
                                          params=None if next_url else {"role[]": ["agent", "admin"], "page[size]": 100})
            except HttpError as exc:
                raise _zendesk_error(exc, self.config["subdomain"]) from None
            more = (body.get("meta") or {}).get("has_more")
            return body.get("users") or [], (body.get("links") or {}).get("next") if more else None

        return [AccessMembership("agents", f"user:{user['email'].lower()}") for user in items(fetch)
                if user.get("email") and user.get("active", True) and not user.get("suspended")
                and not user.get("restricted_agent") and user.get("role") in ("agent", "admin")]

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._emails: dict[int, str] = {}
        self._marks = Watermarks(cursor)
        self._roster = Roster(cursor if self._marks.incremental else {})
        yield from self._tickets()
        if self.config.get("include_articles", True):
            yield from self._articles()

    def deleted_entity_ids(self):
        return self._marks.deleted + self._roster.deleted()

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), **self._roster.cursor()}

    # --- tickets ----------------------------------------------------------------------------

    def _tickets(self) -> Iterator[ZendeskTicketEntity]:
        def fetch(after):
            params = {"per_page": 500, "include": "users"}
            if after:
                params["cursor"] = after
            elif self._marks.since("tickets"):
                params["cursor"] = self._marks.since("tickets")
            else:
                params["start_time"] = 0
            try:
                body = self.http.get_json("/api/v2/incremental/tickets/cursor.json", params=params)
            except HttpError as exc:
                raise _zendesk_error(exc, self.config["subdomain"]) from None
            self._marks.set("tickets", body.get("after_cursor"))
            self._know(body.get("users"))
            return body.get("tickets") or [], None if body.get("end_of_stream", True) else body.get("after_cursor")

        for ticket in items(fetch):
            if ticket.get("status") == "deleted":
                self._marks.delete(f"ticket:{ticket['id']}")
                continue
            try:
                comments = self._comments(ticket["id"]) if self.config.get("include_comments", True) else []
            except HttpError as exc:
                if exc.status == 404:  # deleted between the export and now
                    self._marks.delete(f"ticket:{ticket['id']}")
                    continue
                raise
            yield self._ticket(ticket, comments)

    def _comments(self, ticket_id: int) -> list[ZendeskComment]:
        users: dict[int, str] = {}

        def fetch(next_url):
            body = self.http.get_json(next_url or f"/api/v2/tickets/{ticket_id}/comments.json",
                                      params=None if next_url else {"page[size]": 100, "include": "users"})
            users.update({u["id"]: u.get("name") or str(u["id"]) for u in body.get("users") or []})
            self._know(body.get("users"))
            more = (body.get("meta") or {}).get("has_more")
            return body.get("comments") or [], (body.get("links") or {}).get("next") if more else None

        raw = list(items(fetch))
        return [ZendeskComment(id=c["id"], author=users.get(c.get("author_id"), f"user {c.get('author_id')}"),
                               public=bool(c.get("public", True)), created_at=c.get("created_at") or "",
                               body=c.get("plain_body") or html_text(c.get("html_body")) or c.get("body") or "")
                for c in raw]

    def _know(self, users: list[dict] | None) -> None:
        self._emails.update({u["id"]: u["email"].lower() for u in users or [] if u.get("id") and u.get("email")})

    def _ticket_access(self, ticket: dict, comments: list[ZendeskComment]) -> dict:
        """`group:agents` plus the requester and CCs, unless the thread holds an internal note."""
        viewers = {"group:agents"}
        if all(c.public for c in comments):
            people = [ticket.get("requester_id"), *(ticket.get("email_cc_ids") or []),
                      *(ticket.get("collaborator_ids") or [])]
            viewers |= {f"user:{self._emails[p]}" for p in people if p in self._emails}
        return {"access_viewers": sorted(viewers), "access_is_public": False}

    def _ticket(self, ticket: dict, comments: list[ZendeskComment]) -> ZendeskTicketEntity:
        subdomain = self.config["subdomain"]
        return ZendeskTicketEntity(
            entity_id=f"ticket:{ticket['id']}", name=ticket.get("subject") or ticket.get("raw_subject")
            or f"Ticket #{ticket['id']}",
            breadcrumbs=[Breadcrumb(subdomain, f"{subdomain}.zendesk.com", "ZendeskAccount")],
            created_at=parse_time(ticket.get("created_at")), updated_at=parse_time(ticket.get("updated_at")),
            web_url=f"https://{subdomain}.zendesk.com/agent/tickets/{ticket['id']}", url=ticket.get("url", ""),
            ticket_id=ticket["id"], status=ticket.get("status") or "", priority=ticket.get("priority") or "",
            ticket_type=ticket.get("type") or "", tags=list(ticket.get("tags") or []),
            description=ticket.get("description") or "", comments=comments,
            raw_source_fields=compact({
                "ticket_id": ticket["id"], "status": ticket.get("status"), "priority": ticket.get("priority"),
                "type": ticket.get("type"), "tags": ticket.get("tags"), "requester_id": ticket.get("requester_id"),
                "assignee_id": ticket.get("assignee_id"), "group_id": ticket.get("group_id"),
                "organization_id": ticket.get("organization_id"),
                "channel": (ticket.get("via") or {}).get("channel")}),
            **self._ticket_access(ticket, comments),
        )

    # --- articles ---------------------------------------------------------------------------

    def _articles(self) -> Iterator[ZendeskArticleEntity]:
        sections: dict[int, str] = {}
        seen: list[str] = []

        def fetch(next_url):
            try:
                body = self.http.get_json(next_url or "/api/v2/help_center/articles.json",
                                          params=None if next_url else {"per_page": 100, "include": "sections"})
            except HttpError as exc:
                if exc.status == 404:  # this account has no Help Center
                    return [], None
                raise
            sections.update({s["id"]: s.get("name") or str(s["id"]) for s in body.get("sections") or []})
            return body.get("articles") or [], body.get("next_page")

        subdomain = self.config["subdomain"]
        for article in items(fetch):
            entity_id = f"article:{article['id']}"
            seen.append(entity_id)
            section = sections.get(article.get("section_id"), "")
            breadcrumbs = [Breadcrumb(subdomain, f"{subdomain}.zendesk.com", "ZendeskAccount")]
            if article.get("section_id"):
                breadcrumbs.append(Breadcrumb(f"section:{article['section_id']}", section or str(article["section_id"]),
                                              "ZendeskSection"))
            yield ZendeskArticleEntity(
                entity_id=entity_id, name=article.get("title") or f"Article {article['id']}", breadcrumbs=breadcrumbs,
                created_at=parse_time(article.get("created_at")), updated_at=parse_time(article.get("updated_at")),
                web_url=article.get("html_url") or "", url=article.get("url") or "", section=section,
                body=html_text(article.get("body")),
                raw_source_fields=compact({"article_id": article["id"], "section": section,
                                           "locale": article.get("locale"), "draft": article.get("draft"),
                                           "label_names": article.get("label_names"),
                                           "author_id": article.get("author_id")}),
                **_article_access(article))
        self._roster.listed("articles", seen)


def _article_access(article: dict) -> dict:
    """Everyone's published articles are open; a user segment's, or a draft, only to agents."""
    if article.get("user_segment_id") is None and not article.get("draft"):
        return {"access_viewers": [], "access_is_public": True}
    return {"access_viewers": ["group:agents"], "access_is_public": False}


def _zendesk_error(exc: HttpError, subdomain: str) -> Exception:
    if exc.status == 404:
        return SourceError(f"no Zendesk account at {subdomain}.zendesk.com; check config field 'subdomain'",
                           "config_error")
    if exc.status == 403:
        return SourceError("Zendesk refused the incremental ticket export: it needs an admin's credentials",
                           "config_error")
    return exc
