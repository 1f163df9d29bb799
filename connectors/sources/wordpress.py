"""WordPress: the posts and pages of a WordPress site, through its REST API.

Config: `site_url` (any self-hosted WordPress 5.7+ or a WordPress.com site with the REST API;
SSRF-guarded), `include_pages` (default true). Auth: none for published content, or an
Application Password (Users → Profile → Application Passwords) with its username, sent as HTTP
basic auth, for a site that requires a login; a refused password (401 `incorrect_password`,
`invalid_username`) marks the connection `needs_reauth`.

API: `GET /wp-json/wp/v2/posts` and `/pages` with `per_page=100&page=N&orderby=modified&order=asc`
(`modified_after=<mark>` on incremental runs; `_fields` limits the answer to what is indexed),
paged until `X-WP-TotalPages`; the same listings with `_fields=id` give every id each run;
`GET /wp-json/wp/v2/categories?per_page=100` names the categories. 429 and 5xx (a host's rate
limiter) are the shared client's to retry.

Entities: WordPressPostEntity (`post:{id}`; breadcrumb: its first category),
WordPressPageEntity (`page:{id}`; breadcrumbs: its parent pages); title and content (HTML as
text); `web_url` = the `link`; `created_at`/`updated_at` from `date_gmt`/`modified_gmt`.

Incremental: cursor `{"since": {"posts": <newest modified_gmt>, "pages": ...}}`; an incremental
run reads only what was modified after the mark (less a day: WordPress compares it with the
site's local time), and the id listings of every run are complete,
so trashed, deleted or unpublished items are deleted (`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Iterator

from connectors.auth.tokens import Auth, BasicAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import SelfHostedSource, Watermarks, html_text, iso, parse_time

PER_PAGE = 100
FIELDS = "id,date_gmt,modified_gmt,link,slug,title,content,excerpt,author,categories,tags,parent"


@dataclass
class WordPressPostEntity(BaseEntity):
    """A post: title and content."""

    content: str = ""
    categories: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        cats = f"categories: {', '.join(self.categories)}\n\n" if self.categories else ""
        return f"# {self.name}\n\n{cats}{self.content}".strip()


@dataclass
class WordPressPageEntity(BaseEntity):
    """A page: title and content."""

    content: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.content}".strip()


@source(
    name="WordPress",
    short_name="wordpress",
    description="Posts and pages of a WordPress site, through its REST API.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("username", "Username", "string", "For a site that needs a login only."),
        ConfigField("application_password", "Application password", "string", is_secret=True),
    ),
    config_fields=(
        ConfigField("site_url", "Site URL", "string", "e.g. https://blog.example.org", required=True),
        ConfigField("include_pages", "Include pages", "boolean", "Index pages as well as posts.", default=True),
    ),
    labels=("Web", "Knowledge Base"),
    entity_types=(WordPressPostEntity, WordPressPageEntity),
    rate_limit_level="connection",
    rate_limit="5/second",
)
class WordPressSource(SelfHostedSource):
    """Reads posts and pages modified since the mark, lists every id; see the module docstring."""

    URL_FIELD = "site_url"
    URL_MUST_BE = "the site's http(s) URL, e.g. https://blog.example.org"

    def http_auth(self):
        if self.credentials.get("username"):
            return BasicAuth(self.credentials["username"], self.credentials.get("application_password") or "")
        return Auth()

    def _pages(self, kind: str, params: dict) -> Iterator[dict]:
        page = 1
        while True:
            response = self.http.get(f"/wp-json/wp/v2/{kind}", params={**params, "per_page": PER_PAGE, "page": page})
            yield from response.json()
            total = response.headers.get("X-WP-TotalPages", "1")
            if not total.isdigit() or page >= int(total):
                return
            page += 1

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._present: set[str] = set()
        kinds = ["posts"] + (["pages"] if self.config.get("include_pages", True) else [])
        categories = {c["id"]: c["name"] for c in self._pages("categories", {"_fields": "id,name"})}
        for kind in kinds:
            prefix = kind[:-1]
            self._present.update(f"{prefix}:{item['id']}" for item in self._pages(kind, {"_fields": "id"}))
            since = self._marks.since(kind)
            params = {"orderby": "modified", "order": "asc", "_fields": FIELDS}
            if since and parse_time(since):
                # WordPress compares `modified_after` with the site's local time: a day of overlap covers
                # any time zone; what did not change is kept by its content hash.
                params["modified_after"] = iso(parse_time(since) - timedelta(days=1))
            items = list(self._pages(kind, params))
            titles = {i["id"]: html_text((i.get("title") or {}).get("rendered")) for i in items}
            for item in items:
                self._marks.advance(kind, item.get("modified_gmt"))
                yield self._entity(kind, item, categories, titles)

    def _entity(self, kind: str, item: dict, categories: dict, titles: dict) -> BaseEntity:
        common = dict(
            name=titles.get(item["id"]) or item.get("slug") or str(item["id"]),
            content=html_text((item.get("content") or {}).get("rendered")),
            web_url=item.get("link") or "", created_at=parse_time(item.get("date_gmt")),
            updated_at=parse_time(item.get("modified_gmt")))
        if kind == "posts":
            names = [categories[c] for c in item.get("categories") or [] if c in categories]
            crumbs = [Breadcrumb(f"category:{item['categories'][0]}", names[0], "category")] if names else []
            return WordPressPostEntity(entity_id=f"post:{item['id']}", breadcrumbs=crumbs, categories=names,
                                       raw_source_fields={"slug": item.get("slug"), "categories": names,
                                                          "tags": item.get("tags") or []}, **common)
        crumbs = []
        if item.get("parent"):
            crumbs.append(Breadcrumb(f"page:{item['parent']}", titles.get(item["parent"]) or str(item["parent"]),
                                     "WordPressPageEntity"))
        return WordPressPageEntity(entity_id=f"page:{item['id']}", breadcrumbs=crumbs,
                                   raw_source_fields={"slug": item.get("slug"), "parent": item.get("parent")},
                                   **common)

    def is_full_listing(self) -> bool:
        return not self._marks.incremental

    def present_entity_ids(self):
        return self._present

    def next_cursor(self) -> dict:
        return self._marks.cursor()
