"""Guru: the cards of a Guru knowledge base, with their collection and boards.

Config: `collections` (collection ids or names; default every collection the credentials read),
`include_archived` (default false). Auth: a user's email and API token (Settings → API Access), or
a collection's id and collection token (read-only), sent as HTTP basic auth, as Guru documents; a
refused token (401) marks the connection `needs_reauth`.

API (`https://api.getguru.com/api/v1`): `GET /search/query?searchTerms=&maxResults=50
&showArchived=false&sortField=lastModified&sortOrder=desc`, paged by the `Link: <...>; rel="next"`
header; each card carries its whole HTML `content`. Guru answers 429 with Retry-After, which the
shared client waits out.

Entities: GuruCardEntity (`card:{id}`: the title (`preferredPhrase`), the content as text,
verification state; breadcrumbs collection → first board; `web_url`
`https://app.getguru.com/card/<slug>`).

Incremental: cursor `{"since": {"cards": <newest lastModified>}}`. Cards are listed newest first;
every run walks the whole listing (it is the only way to see a card gone) but builds entities only
for cards modified after the mark; what the listing no longer holds is deleted
(`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import BasicAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import ListedSource, Watermarks, compact, html_text, parse_time

PAGE = 50


@dataclass
class GuruCardEntity(BaseEntity):
    """A card: its title (`name`), its content as text and its verification state."""

    text: str = ""
    verification: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.text) if p)


@source(
    name="Guru",
    short_name="guru",
    description="Cards of a Guru knowledge base, with their collection and boards.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("username", "Email or collection id", "string", "A user's email (user token) or a collection's "
                    "id (collection token).", required=True),
        ConfigField("api_token", "API token", "string", "Settings → API Access.", required=True, is_secret=True),
    ),
    config_fields=(
        ConfigField("collections", "Collections", "array", "Collection ids or names (default: all).",
                    items_type="string", default=[]),
        ConfigField("include_archived", "Include archived cards", "boolean", default=False),
    ),
    labels=("Knowledge Base",),
    entity_types=(GuruCardEntity,),
    rate_limit_level="connection",
    rate_limit="10/second",
    base_url="https://api.getguru.com/api/v1",
)
class GuruSource(ListedSource, BaseSource):
    """Walks the card listing newest first; see the module docstring."""

    def http_auth(self):
        return BasicAuth(self.credentials["username"], self.credentials["api_token"])

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks, self._present = Watermarks(cursor), set()
        since = self._marks.since("cards")
        wanted = set(self.config.get("collections") or [])
        params = {"searchTerms": "", "maxResults": PAGE, "showArchived": str(bool(self.config.get(
            "include_archived"))).lower(), "sortField": "lastModified", "sortOrder": "desc"}
        for response in self.http.paginate("/search/query", params=params):
            body = response.json()
            for card in body.get("results") or [] if isinstance(body, dict) else body:
                collection = card.get("collection") or {}
                if wanted and not wanted & {collection.get("id"), collection.get("name")}:
                    continue
                self.present(f"card:{card['id']}")
                self._marks.advance("cards", card.get("lastModified"))
                if since and (card.get("lastModified") or "") <= since:
                    continue
                yield self._card(card, collection)

    def _card(self, card: dict, collection: dict) -> GuruCardEntity:
        crumbs = [Breadcrumb(f"collection:{collection['id']}", collection.get("name") or "", "GuruCollection")] \
            if collection.get("id") else []
        boards = card.get("boards") or []
        if boards:
            crumbs.append(Breadcrumb(f"board:{boards[0].get('id')}", boards[0].get("title") or "", "GuruBoard"))
        owner = card.get("owner") or {}
        meta = compact({"collection": collection.get("name"), "verification": card.get("verificationState"),
                        "owner": owner.get("email"), "boards": [b.get("title") for b in boards if b.get("title")]})
        return GuruCardEntity(
            entity_id=f"card:{card['id']}", name=card.get("preferredPhrase") or card["id"],
            text=html_text(card.get("content")), verification=card.get("verificationState") or "",
            breadcrumbs=crumbs, web_url=f"https://app.getguru.com/card/{card.get('slug') or card['id']}",
            created_at=parse_time(card.get("dateCreated")), updated_at=parse_time(card.get("lastModified")),
            raw_source_fields=meta)
