"""Productboard: the features (with their product and component) and the notes (customer feedback)
of a Productboard workspace.

Config: `include_notes` (default true), `full_sync_days` (7). Auth: a public API access token
(Workspace settings → Integrations → Public API), sent as `Authorization: Bearer <token>` with
`X-Version: 1`, as Productboard asks; a refused token (401) marks the connection `needs_reauth`.

API (`https://api.productboard.com`): `GET /products`, `GET /components`, `GET /features` (pages
followed through `links.next`, an absolute URL), `GET /notes?pageLimit=100` (`updatedFrom=<mark>`
on incremental runs; pages followed through `pageCursor`). Productboard allows 50 requests a
second per token and answers 429 with Retry-After, which the shared client waits out.

Entities: ProductboardFeatureEntity (`feature:{id}`: name, status, owner, description as text;
breadcrumbs product → component → parent feature; `web_url` `links.html`), ProductboardNoteEntity
(`note:{id}`: title, content, company, tags; `web_url` `displayUrl`).

Incremental: cursor `{"since": {"notes": <newest updatedAt>}, "ids": {"features": [...]},
"full_at": ...}`. Features are listed whole every run (those gone are deleted); notes changed
since the mark are read; notes report no deletions, so every `full_sync_days` a run lists every
note and the pipeline removes what it no longer holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import FULL_SYNC_DAYS, PeriodicFullListing, Roster, compact, html_text, items, parse_time

PAGE = 100


@dataclass
class ProductboardFeatureEntity(BaseEntity):
    """A feature or subfeature: its name, status, owner and description."""

    details: str = ""
    description: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.details, self.description) if p)


@dataclass
class ProductboardNoteEntity(BaseEntity):
    """A note (customer feedback): its title, content, company and tags."""

    content: str = ""
    details: str = ""
    tags: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.details, self.content) if p)


@source(
    name="Productboard",
    short_name="productboard",
    description="Features and customer feedback notes of a Productboard workspace.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Access token", "string", "Workspace settings → Integrations → "
                             "Public API → access token.", required=True, is_secret=True),),
    config_fields=(ConfigField("include_notes", "Include notes", "boolean", "Index customer feedback notes too.",
                               default=True), FULL_SYNC_DAYS),
    labels=("Product Management",),
    entity_types=(ProductboardFeatureEntity, ProductboardNoteEntity),
    rate_limit_level="connection",
    rate_limit="50/second",
    base_url="https://api.productboard.com",
)
class ProductboardSource(PeriodicFullListing, BaseSource):
    """Lists every feature and the notes changed since the mark; see the module docstring."""

    def http_auth(self):
        return BearerAuth(self.credentials["access_token"])

    def http_headers(self) -> dict:
        return {"X-Version": "1"}

    def _linked(self, path: str) -> Iterator[dict]:
        """Every item of a listing paged by `links.next` (an absolute URL)."""
        def fetch(url):
            body = self.http.get_json(url or path)
            return body.get("data") or [], (body.get("links") or {}).get("next")

        return items(fetch)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.start_marks(cursor)
        self._features = Roster(cursor)
        names = {p["id"]: (p.get("name") or "", "product", None) for p in self._linked("/products")}
        for c in self._linked("/components"):
            names[c["id"]] = (c.get("name") or "", "component", _parent_id(c))
        features = list(self._linked("/features"))
        for f in features:
            names[f["id"]] = (f.get("name") or "", "feature", _parent_id(f))
        for f in features:
            yield self._feature(f, names)
        self._features.listed("features", [f"feature:{f['id']}" for f in features])
        for gone in self._features.deleted():
            self._marks.delete(gone)
        if self.config.get("include_notes", True):
            yield from self._notes()

    def _feature(self, f: dict, names: dict) -> ProductboardFeatureEntity:
        crumbs, parent = [], _parent_id(f)
        while parent in names and len(crumbs) < 20:
            name, kind, up = names[parent]
            crumbs.insert(0, Breadcrumb(f"{kind}:{parent}", name, f"Productboard{kind.title()}"))
            parent = up
        meta = compact({"type": f.get("type"), "status": (f.get("status") or {}).get("name"),
                        "owner": (f.get("owner") or {}).get("email"), "archived": f.get("archived") or None})
        return ProductboardFeatureEntity(
            entity_id=f"feature:{f['id']}", name=f.get("name") or f["id"], description=html_text(f.get("description")),
            details="; ".join(f"{k}: {v}" for k, v in meta.items()), breadcrumbs=crumbs,
            web_url=(f.get("links") or {}).get("html") or "", created_at=parse_time(f.get("createdAt")),
            updated_at=parse_time(f.get("updatedAt")), raw_source_fields=meta)

    def _notes(self) -> Iterator[BaseEntity]:
        since = self._marks.since("notes")

        def fetch(page_cursor):
            params = {"pageLimit": PAGE, **({"updatedFrom": since} if since else {}),
                      **({"pageCursor": page_cursor} if page_cursor else {})}
            body = self.http.get_json("/notes", params=params)
            return body.get("data") or [], body.get("pageCursor")

        for n in items(fetch):
            self._marks.advance("notes", n.get("updatedAt"))
            tags = [t if isinstance(t, str) else t.get("name", "") for t in n.get("tags") or []]
            meta = compact({"state": n.get("state"), "company": (n.get("company") or {}).get("name"),
                            "owner": (n.get("owner") or {}).get("email"), "tags": tags})
            yield ProductboardNoteEntity(
                entity_id=f"note:{n['id']}", name=n.get("title") or n["id"], content=html_text(n.get("content")),
                details="; ".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in meta.items()),
                tags=tags, web_url=n.get("displayUrl") or "", created_at=parse_time(n.get("createdAt")),
                updated_at=parse_time(n.get("updatedAt")), raw_source_fields=meta)

    def next_cursor(self) -> dict:
        return {**super().next_cursor(), **self._features.cursor()}


def _parent_id(item: dict) -> str | None:
    """The id of a feature's or component's parent (`{"parent": {"product"|"component"|"feature": {"id"}}}`)."""
    parent = item.get("parent") or {}
    for kind in ("feature", "component", "product"):
        if isinstance(parent.get(kind), dict):
            return parent[kind].get("id")
    return None
