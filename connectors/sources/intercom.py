"""Intercom: conversations with their parts, contacts, and Help Center articles.

Config: `include_contacts` (default true), `include_articles` (default true), `full_sync_days`
(default 7). Auth: an access token of an Intercom app (direct) or OAuth (Intercom tokens do not
expire: `access_only`). Every request names the API version (`Intercom-Version: 2.11`).

API: conversations through `POST /conversations/search` with `updated_at > <mark>` (the search
pages with `pagination.starting_after`), then `GET /conversations/{id}` for each changed one to
read its `conversation_parts` (the parts are the conversation — a new part moves its
`updated_at` — so they are indexed inside the conversation's entity). Contacts:
`POST /contacts/search` with the same filter. Articles: `GET /articles?page=N&per_page=50`,
every run; ids listed last time and absent now are deleted.

Access (`supports_access_control`): teammates (admins) see every conversation and contact; a
customer sees their own conversations. A conversation carries `group:admins` and `user:<email>` of
each of its contacts whose address the conversation shows (the `source.author` and part authors
of type `user`, `lead` or `contact` that are among its `contacts`); one whose parts hold an
internal note (`part_type: note`) is indexed with the note, so it carries `group:admins` only.
Contacts carry `group:admins`. Published articles are open to the organization; drafts carry
`group:admins`. The `admins` group is `GET /admins` (every teammate with an e-mail address), listed
at each sync. Inbox access limited to teams, and Help Center audiences, are not mirrored.

Intercom reports no deletions of conversations or contacts, so the marks are dropped once the
last full listing is `full_sync_days` old: that run lists everything again and absent
conversations and contacts are deleted (the partial-listing guard still applies).

Budget: about 160 requests per 10 seconds per app and workspace (Intercom spreads its 10,000 a
minute over 10-second windows and answers 429 with `X-RateLimit-Reset`). Entities:
IntercomConversationEntity (`conversation:{id}`), IntercomContactEntity (`contact:{id}`),
IntercomArticleEntity (`article:{id}`). Cursor: `{"since": {"conversations": epoch s,
"contacts": epoch s}, "full_at": epoch s, "ids": {"articles": [ids]}}`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import Roster, Watermarks, WatermarkSource, compact, html_text, items, parse_time

API_VERSION = "2.11"
PAGE = 150


@dataclass
class IntercomPart:
    """One part of a conversation: a message, a note, an assignment... (not an entity of its own)."""

    part_type: str
    author: str
    created_at: str
    body: str


@dataclass
class IntercomConversationEntity(BaseEntity):
    """A conversation: its opening message and its parts."""

    state: str = ""
    opening: str = ""
    opened_by: str = ""
    parts: list[IntercomPart] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        tags = f"\nTags: {', '.join(self.tags)}" if self.tags else ""
        out = [f"# {self.name}\n\nConversation, {self.state}{tags}", f"## {self.opened_by}\n\n{self.opening}"]
        for part in self.parts:
            kind = " (note)" if part.part_type == "note" else ""
            out.append(f"## {part.author}{kind}, {part.created_at}\n\n{part.body}")
        return "\n\n".join(x for x in out if x.strip()).strip()


@dataclass
class IntercomContactEntity(BaseEntity):
    """A contact: a user or a lead."""

    role: str = ""
    email: str = ""
    location: str = ""
    custom_attributes: dict = field(default_factory=dict)

    def textual_representation(self) -> str:
        lines = [f"# {self.role.capitalize() or 'Contact'}: {self.name}", ""]
        lines += [f"{k}: {v}" for k, v in (("Email", self.email), ("Location", self.location)) if v]
        lines += [f"{k}: {v}" for k, v in self.custom_attributes.items() if v not in (None, "")]
        return "\n".join(lines).strip()


@dataclass
class IntercomArticleEntity(BaseEntity):
    """A Help Center article."""

    description: str = ""
    body: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(x for x in (f"# {self.name}", self.description, self.body) if x).strip()


@source(
    name="Intercom",
    short_name="intercom",
    description="Conversations with their replies and notes, contacts and Help Center articles of an Intercom workspace.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="access_only",
    auth_fields=(ConfigField("app_access_token", "Access token", "string",
                             "The access token of an app of your workspace (Developer Hub → your app → Authentication).",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("include_contacts", "Include contacts", "boolean", "Index users and leads.", default=True),
        ConfigField("include_articles", "Include articles", "boolean", "Index Help Center articles.", default=True),
        ConfigField("full_sync_days", "Days between full listings", "integer",
                    "Intercom reports no deletions; a full listing this often removes deleted conversations and "
                    "contacts.", default=7),
    ),
    labels=("Customer Support",),
    entity_types=(IntercomConversationEntity, IntercomContactEntity, IntercomArticleEntity),
    supports_access_control=True,
    mirrored_permissions=(("teammates: every conversation and contact", True),
                          ("customers: their own conversations", True),
                          ("conversations with internal notes: teammates only", True),
                          ("articles: published vs drafts", True),
                          ("inbox access limited to teams", False),
                          ("Help Center audiences", False)),
    rate_limit_level="connection",
    rate_limit="160/10seconds",
    base_url="https://api.intercom.io",
)
class IntercomSource(WatermarkSource, BaseSource):
    """Searches conversations and contacts by updated_at and lists articles; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        if out["full_sync_days"] < 1:
            raise ValueError("config field 'full_sync_days' must be at least 1")
        return out

    def http_auth(self):
        token = self.credentials.get("app_access_token")
        return BearerAuth(token) if token else super().http_auth()

    def http_headers(self) -> dict:
        return {"Intercom-Version": API_VERSION, "Accept": "application/json"}

    def generate_access_memberships(self) -> list[AccessMembership]:
        """The `admins` group: every teammate of `GET /admins` with an e-mail address."""
        admins = self.http.get_json("/admins").get("admins") or []
        return [AccessMembership("admins", f"user:{a['email'].lower()}") for a in admins if a.get("email")]

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        cursor = cursor or {}
        now = int(time.time())
        self._marks = Watermarks(cursor)
        self._full_at = self._marks.expire(cursor, self.config.get("full_sync_days", 7), now)
        self._roster = Roster(cursor if self._marks.incremental else {})
        self._app = (self.http.get_json("/me").get("app") or {}).get("id_code", "")

        for conversation in self._search("conversations", "conversations"):
            self._marks.advance("conversations", conversation.get("updated_at"))
            try:
                full = self.http.get_json(f"/conversations/{conversation['id']}", params={"display_as": "plaintext"})
            except HttpError as exc:
                if exc.status == 404:
                    self._marks.delete(f"conversation:{conversation['id']}")
                    continue
                raise
            yield self._conversation(full)
        if self.config.get("include_contacts", True):
            for contact in self._search("contacts", "data"):
                self._marks.advance("contacts", contact.get("updated_at"))
                yield self._contact(contact)
        if self.config.get("include_articles", True):
            yield from self._articles()

    def deleted_entity_ids(self):
        return self._marks.deleted + self._roster.deleted()

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), **self._roster.cursor(), "full_at": self._full_at}

    def _search(self, kind: str, key: str) -> Iterator[dict]:
        since = self._marks.since(kind)
        # `>` is strict: start one second early so an update in the mark's own second is not missed.
        query = {"field": "updated_at", "operator": ">", "value": max(0, int(since) - 1) if since else 0}

        def fetch(after):
            pagination = {"per_page": PAGE}
            if after:
                pagination["starting_after"] = after
            body = self.http.post(f"/{kind}/search", json={"query": query, "pagination": pagination},
                                  idempotent=True).json()
            following = ((body.get("pages") or {}).get("next") or {})
            return body.get(key) or [], following.get("starting_after") if isinstance(following, dict) else None

        return items(fetch)

    # --- entities ---------------------------------------------------------------------------

    def _conversation(self, c: dict) -> IntercomConversationEntity:
        source_msg = c.get("source") or {}
        parts = []
        for p in (c.get("conversation_parts") or {}).get("conversation_parts") or []:
            body = html_text(p.get("body"))
            if not body or p.get("redacted"):
                continue  # assignments, state changes and redacted parts carry no text
            parts.append(IntercomPart(part_type=p.get("part_type") or "", author=_who(p.get("author")),
                                      created_at=_stamp(p.get("created_at")), body=body))
        tags = [t.get("name") for t in (c.get("tags") or {}).get("tags") or [] if t.get("name")]
        opening = html_text(source_msg.get("body"))
        title = c.get("title") or source_msg.get("subject") or _first_line(opening) or f"Conversation {c['id']}"
        return IntercomConversationEntity(
            entity_id=f"conversation:{c['id']}", name=html_text(title)[:200], breadcrumbs=self._crumbs(),
            created_at=parse_time(c.get("created_at")), updated_at=parse_time(c.get("updated_at")),
            **_conversation_access(c),
            web_url=f"https://app.intercom.com/a/inbox/{self._app}/inbox/conversation/{c['id']}" if self._app else "",
            state=c.get("state") or "", opening=opening, opened_by=_who(source_msg.get("author")), parts=parts,
            tags=tags,
            raw_source_fields=compact({
                "conversation_id": c["id"], "state": c.get("state"), "priority": c.get("priority"),
                "tags": tags, "admin_assignee_id": c.get("admin_assignee_id"),
                "team_assignee_id": c.get("team_assignee_id"), "channel": source_msg.get("type"),
                "contact_ids": [x.get("id") for x in (c.get("contacts") or {}).get("contacts") or []]}))

    def _contact(self, c: dict) -> IntercomContactEntity:
        loc = c.get("location") or {}
        location = ", ".join(x for x in (loc.get("city"), loc.get("region"), loc.get("country")) if x)
        return IntercomContactEntity(
            entity_id=f"contact:{c['id']}", name=c.get("name") or c.get("email") or f"Contact {c['id']}",
            breadcrumbs=self._crumbs(), created_at=parse_time(c.get("created_at")),
            updated_at=parse_time(c.get("updated_at")),
            web_url=f"https://app.intercom.com/a/apps/{self._app}/users/{c['id']}/all-conversations" if self._app else "",
            role=c.get("role") or "", email=c.get("email") or "", location=location,
            custom_attributes=dict(c.get("custom_attributes") or {}),
            access_viewers=["group:admins"], access_is_public=False,
            raw_source_fields=compact({"contact_id": c["id"], "role": c.get("role"), "email": c.get("email"),
                                       "external_id": c.get("external_id"), "country": loc.get("country"),
                                       "owner_id": c.get("owner_id")}))

    def _articles(self) -> Iterator[IntercomArticleEntity]:
        seen: list[str] = []

        def fetch(page):
            body = self.http.get_json("/articles", params={"page": page or 1, "per_page": 50})
            pages = body.get("pages") or {}
            more = (pages.get("page") or 1) < (pages.get("total_pages") or 1)
            return body.get("data") or [], ((pages.get("page") or 1) + 1) if more else None

        for a in items(fetch):
            entity_id = f"article:{a['id']}"
            seen.append(entity_id)
            yield IntercomArticleEntity(
                entity_id=entity_id, name=a.get("title") or f"Article {a['id']}", breadcrumbs=self._crumbs(),
                created_at=parse_time(a.get("created_at")), updated_at=parse_time(a.get("updated_at")),
                web_url=a.get("url") or "", description=a.get("description") or "", body=html_text(a.get("body")),
                access_viewers=[] if a.get("state") == "published" else ["group:admins"],
                access_is_public=a.get("state") == "published",
                raw_source_fields=compact({"article_id": a["id"], "state": a.get("state"),
                                           "author_id": a.get("author_id"), "parent_id": a.get("parent_id"),
                                           "parent_type": a.get("parent_type")}))
        self._roster.listed("articles", seen)

    def _crumbs(self) -> list[Breadcrumb]:
        return [Breadcrumb(self._app, f"Intercom {self._app}", "IntercomWorkspace")] if self._app else []


def _conversation_access(c: dict) -> dict:
    """`group:admins`, plus the conversation's contacts whose address it shows unless a part is an internal note."""
    parts = (c.get("conversation_parts") or {}).get("conversation_parts") or []
    viewers = {"group:admins"}
    if not any(p.get("part_type") == "note" for p in parts):
        contacts = {x.get("id") for x in (c.get("contacts") or {}).get("contacts") or []}
        for author in [(c.get("source") or {}).get("author") or {}] + [p.get("author") or {} for p in parts]:
            if author.get("type") in ("user", "lead", "contact") and author.get("id") in contacts and author.get("email"):
                viewers.add(f"user:{author['email'].lower()}")
    return {"access_viewers": sorted(viewers), "access_is_public": False}


def _who(author: dict | None) -> str:
    author = author or {}
    return author.get("name") or author.get("email") or f"{author.get('type', 'someone')} {author.get('id', '')}".strip()


def _stamp(epoch) -> str:
    value = parse_time(epoch)
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else ""


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:120]
