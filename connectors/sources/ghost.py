"""Ghost: the published posts and pages of a Ghost site, through the Content API.

Config: `site_url` (the site, e.g. `https://blog.example.org` or `https://<name>.ghost.io`;
SSRF-guarded), `include_pages` (default true). Auth: a Content API key (Settings →
Integrations → Add custom integration), sent as the `key` query parameter, as Ghost documents
(it is read-only and for published content; the client never logs query strings). An unknown
key (401 `UnauthorizedError`) marks the connection `needs_reauth`.

API (`Accept-Version: v5.0`): `GET /ghost/api/content/posts/` and `/pages/` with
`limit=100&page=N&include=tags,authors&formats=html&order=updated_at asc` (and
`filter=updated_at:>'<mark>'` on incremental runs), paged by `meta.pagination.next`; the same
with `fields=id&limit=all` lists every id each run. 429 and 5xx are the shared client's.

Entities: GhostPostEntity (`post:{id}`; breadcrumb: the primary tag), GhostPageEntity
(`page:{id}`); title, tags, authors and the HTML as text; `web_url` = the post's `url`.

Incremental: cursor `{"since": {"posts": <newest updated_at>, "pages": ...}}`; an incremental
run reads what was updated after the mark, and the id listings are complete, so unpublished or
deleted posts and pages are deleted (`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import QueryAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import SelfHostedSource, Watermarks, html_text, parse_time

LIMIT = 100


@dataclass
class GhostPostEntity(BaseEntity):
    """A post: title, tags, authors and text."""

    tags: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    content: str = ""

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (f"by {', '.join(self.authors)}" if self.authors else "",
                                     f"tags: {', '.join(self.tags)}" if self.tags else "") if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, self.content) if p)


@dataclass
class GhostPageEntity(GhostPostEntity):
    """A page (same fields as a post)."""


@source(
    name="Ghost",
    short_name="ghost",
    description="Published posts and pages of a Ghost site, through the Content API.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("content_api_key", "Content API key", "string", "Settings → Integrations → a custom "
                             "integration's Content API key.", required=True, is_secret=True),),
    config_fields=(
        ConfigField("site_url", "Site URL", "string", "e.g. https://blog.example.org", required=True),
        ConfigField("include_pages", "Include pages", "boolean", "Index pages as well as posts.", default=True),
    ),
    labels=("Web", "Knowledge Base"),
    entity_types=(GhostPostEntity, GhostPageEntity),
    rate_limit_level="connection",
    rate_limit="10/second",
)
class GhostSource(SelfHostedSource):
    """Reads posts and pages updated since the mark, lists every id; see the module docstring."""

    URL_FIELD = "site_url"
    URL_MUST_BE = "the site's http(s) URL, e.g. https://blog.example.org"

    def http_auth(self):
        return QueryAuth({"key": self.credentials["content_api_key"]})

    def http_headers(self) -> dict:
        return {"Accept-Version": "v5.0"}

    def _pages(self, kind: str, params: dict) -> Iterator[dict]:
        page = 1
        while page:
            body = self.http.get_json(f"/ghost/api/content/{kind}/", params={**params, "page": page})
            yield from body.get(kind) or []
            page = ((body.get("meta") or {}).get("pagination") or {}).get("next")

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._present: set[str] = set()
        for kind in ["posts"] + (["pages"] if self.config.get("include_pages", True) else []):
            prefix = kind[:-1]
            ids = self.http.get_json(f"/ghost/api/content/{kind}/", params={"fields": "id", "limit": "all"})
            self._present.update(f"{prefix}:{item['id']}" for item in ids.get(kind) or [])
            params = {"limit": LIMIT, "include": "tags,authors", "formats": "html", "order": "updated_at asc"}
            since = self._marks.since(kind)
            if since:
                params["filter"] = f"updated_at:>'{since}'"
            for item in self._pages(kind, params):
                self._marks.advance(kind, item.get("updated_at"))
                yield self._entity(prefix, item)

    def _entity(self, prefix: str, item: dict) -> GhostPostEntity:
        tags = [t.get("name") for t in item.get("tags") or [] if t.get("name")]
        authors = [a.get("name") for a in item.get("authors") or [] if a.get("name")]
        primary = item.get("primary_tag") or {}
        cls = GhostPostEntity if prefix == "post" else GhostPageEntity
        return cls(
            entity_id=f"{prefix}:{item['id']}", name=item.get("title") or item.get("slug") or item["id"],
            tags=tags, authors=authors, content=html_text(item.get("html")),
            breadcrumbs=[Breadcrumb(f"tag:{primary['id']}", primary["name"], "tag")] if primary.get("id") else [],
            web_url=item.get("url") or "", created_at=parse_time(item.get("published_at") or item.get("created_at")),
            updated_at=parse_time(item.get("updated_at")),
            raw_source_fields={"slug": item.get("slug"), "tags": tags, "authors": authors,
                               "featured": item.get("featured"), "visibility": item.get("visibility")})

    def is_full_listing(self) -> bool:
        return not self._marks.incremental

    def present_entity_ids(self):
        return self._present

    def next_cursor(self) -> dict:
        return self._marks.cursor()
