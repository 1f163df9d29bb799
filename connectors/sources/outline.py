"""Outline: the collections and documents (Markdown) of an Outline knowledge base.

Config: `base_url` (`https://app.getoutline.com`, or a self-hosted Outline; SSRF-guarded).
Auth: an API key (Settings → API & Apps), sent as `Authorization: Bearer <key>`; a refused key
(401 `authentication_required`) marks the connection `needs_reauth`.

API: Outline's RPC-style API, every call a `POST /api/<method>` with a JSON body (read-only, so
retried like a GET): `collections.list` and `documents.list` (`{"offset", "limit": 100, "sort":
"updatedAt", "direction": "DESC"}`, paged by offset until a page is short; a document carries its
whole Markdown `text`), `documents.archived` and `documents.deleted` (archived and trashed
documents). Rate limits answer 429 with Retry-After, which the shared client waits out.

Entities: OutlineCollectionEntity (`collection:{id}`), OutlineDocumentEntity (`document:{id}`;
breadcrumbs: the collection, then the parent documents; `web_url` = base URL + the document's
`url`). The names and parents of documents are kept in the cursor, so breadcrumbs stay whole on
incremental runs that do not list the parents.

Incremental: cursor `{"since": {"documents": <newest updatedAt>}, "tree": {id: [title, parent]}}`.
An incremental run lists documents newest first and stops at the mark; documents archived or
trashed (`documents.archived`, `documents.deleted`) are reported deleted. Collections are listed
whole every run (there are few); a first run or forced full sync is a full listing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import Roster, SelfHostedSource, WatermarkSource, Watermarks, parse_time

PAGE = 100


@dataclass
class OutlineCollectionEntity(BaseEntity):
    """A collection: its name and description."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nOutline collection\n\n{self.description}".strip()


@dataclass
class OutlineDocumentEntity(BaseEntity):
    """A document: its title (`name`) and Markdown text."""

    text: str = ""
    author: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="Outline",
    short_name="outline",
    description="Collections and documents of an Outline knowledge base (cloud or self-hosted).",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "Settings → API & Apps → New API key.", required=True,
                             is_secret=True),),
    config_fields=(ConfigField("base_url", "Outline URL", "string", "https://app.getoutline.com or your own server.",
                               default="https://app.getoutline.com"),),
    labels=("Knowledge Base", "Documentation"),
    entity_types=(OutlineCollectionEntity, OutlineDocumentEntity),
    rate_limit_level="connection",
    rate_limit="500/minute",
)
class OutlineSource(WatermarkSource, SelfHostedSource):
    """Lists collections and documents through the RPC API; see the module docstring."""

    URL_MUST_BE = "an http(s) URL, e.g. https://app.getoutline.com"

    def http_auth(self):
        return BearerAuth(self.credentials["api_key"])

    def _pages(self, method: str, body: dict | None = None) -> Iterator[dict]:
        offset = 0
        while True:
            data = self.http.post(f"/api/{method}", json={**(body or {}), "offset": offset, "limit": PAGE},
                                  idempotent=True).json().get("data") or []
            yield from data
            if len(data) < PAGE:
                return
            offset += PAGE

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._tree: dict[str, list] = dict((cursor or {}).get("tree") or {}) if self._marks.incremental else {}
        self._collections = Roster(cursor)
        collections = {}
        for c in self._pages("collections.list"):
            collections[c["id"]] = c
            yield OutlineCollectionEntity(
                entity_id=f"collection:{c['id']}", name=c["name"], description=c.get("description") or "",
                web_url=self.base_url + (c.get("url") or ""), created_at=parse_time(c.get("createdAt")),
                updated_at=parse_time(c.get("updatedAt")))
        self._collections.listed("collections", [f"collection:{i}" for i in collections])
        for gone in self._collections.deleted():
            self._marks.delete(gone)

        since = self._marks.since("documents")
        documents = []
        for doc in self._pages("documents.list", {"sort": "updatedAt", "direction": "DESC"}):
            if since and (doc.get("updatedAt") or "") <= since:
                break
            documents.append(doc)
            self._tree[doc["id"]] = [doc.get("title") or "", doc.get("parentDocumentId")]
        for doc in documents:
            self._marks.advance("documents", doc.get("updatedAt"))
            yield self._document(doc, collections.get(doc.get("collectionId")))
        if since:
            for method in ("documents.archived", "documents.deleted"):
                for doc in self._pages(method):
                    self._marks.delete(f"document:{doc['id']}")
                    self._tree.pop(doc["id"], None)

    def _document(self, doc: dict, collection: dict | None) -> OutlineDocumentEntity:
        crumbs = [Breadcrumb(f"collection:{collection['id']}", collection["name"], "OutlineCollectionEntity")] \
            if collection else []
        parents, parent, seen = [], doc.get("parentDocumentId"), set()
        while parent and parent in self._tree and parent not in seen:
            seen.add(parent)
            parents.insert(0, Breadcrumb(f"document:{parent}", self._tree[parent][0], "OutlineDocumentEntity"))
            parent = self._tree[parent][1]
        author = (doc.get("createdBy") or {}).get("name") or ""
        return OutlineDocumentEntity(
            entity_id=f"document:{doc['id']}", name=doc.get("title") or doc["id"], text=doc.get("text") or "",
            author=author, breadcrumbs=crumbs + parents, web_url=self.base_url + (doc.get("url") or ""),
            created_at=parse_time(doc.get("createdAt")), updated_at=parse_time(doc.get("updatedAt")),
            raw_source_fields={"collection": collection.get("name") if collection else None, "author": author,
                               "url_id": doc.get("urlId"), "published_at": doc.get("publishedAt")})

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), **self._collections.cursor(), "tree": self._tree}
