"""Document360: the articles of a Document360 knowledge base, in its category tree.

Config: `base_url` (the API host, `https://apihub.document360.io`, or the US data center's
`https://apihub.us.document360.io`; SSRF-guarded), `lang_code` (default `en`). Auth: an API token
(Settings → Knowledge base portal → API tokens), sent as the `api_token` header, as Document360
documents; a refused token (401) marks the connection `needs_reauth`.

API (v2): `GET /v2/ProjectVersions` (the workspaces), `GET /v2/ProjectVersions/{id}/categories`
(the whole category tree with each category's `articles`: id, title, `public_version`,
`latest_version`), `GET /v2/Articles/{id}/{lang}/versions/{n}` (one published version's Markdown
`content`, `html_content` and `url`). Answers carry `success` and `errors`. Document360 answers
429 with Retry-After past its per-token budget, which the shared client waits out.

Entities: Document360ArticleEntity (`article:{id}`: title, Markdown; breadcrumbs project version →
categories; `web_url` the article's `url`). Unpublished articles (no `public_version`) are left out.

Incremental: cursor `{"since": {<article id>: <public version number>}}`. Every run reads the
tree (cheap) and fetches only the articles whose published version changed; what the tree no
longer holds is deleted (`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField, SourceError
from connectors.registry import source
from connectors.sources._saas import ListedSource, SelfHostedSource, Watermarks, html_text, parse_time


@dataclass
class Document360ArticleEntity(BaseEntity):
    """A published article: its title (`name`) and Markdown."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="Document360",
    short_name="document360",
    description="Published articles of a Document360 knowledge base, in their categories.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_token", "API token", "string", "Settings → Knowledge base portal → API tokens.",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("base_url", "API host", "string", "https://apihub.document360.io, or "
                    "https://apihub.us.document360.io for the US data center.", default="https://apihub.document360.io"),
        ConfigField("lang_code", "Language", "string", "The articles' language code.", default="en"),
    ),
    labels=("Knowledge Base", "Documentation"),
    entity_types=(Document360ArticleEntity,),
    rate_limit_level="connection",
    rate_limit="60/minute",
)
class Document360Source(ListedSource, SelfHostedSource):
    """Reads the category tree and fetches changed articles; see the module docstring."""

    URL_MUST_BE = "the API host, e.g. https://apihub.document360.io"

    def http_auth(self):
        return HeaderAuth({"api_token": self.credentials["api_token"]})

    def _data(self, path: str):
        body = self.http.get_json(path)
        if isinstance(body, dict) and body.get("success") is False:
            errors = "; ".join(str(e.get("description") or e) for e in body.get("errors") or [] if isinstance(e, dict))
            raise SourceError(f"Document360 refused {path}: {errors or 'success: false'}", "source_error")
        return (body or {}).get("data") or []

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks, self._present = Watermarks(cursor), set()
        for version in self._data("/v2/ProjectVersions"):
            crumb = Breadcrumb(f"version:{version['id']}", version.get("version_code_name") or
                               f"v{version.get('version_number', '')}", "Document360ProjectVersion")
            stack = [(c, [crumb]) for c in reversed(self._data(f"/v2/ProjectVersions/{version['id']}/categories"))]
            while stack:
                category, crumbs = stack.pop()
                crumbs = crumbs + [Breadcrumb(f"category:{category['id']}", category.get("name") or "",
                                              "Document360Category")]
                for article in category.get("articles") or []:
                    yield from self._article(article, crumbs)
                stack.extend((c, crumbs) for c in reversed(category.get("child_categories") or []))
        self._marks.marks = {k: v for k, v in self._marks.marks.items() if f"article:{k}" in self._present}

    def _article(self, article: dict, crumbs: list[Breadcrumb]) -> Iterator[BaseEntity]:
        published = article.get("public_version")
        if not published:
            return
        self.present(f"article:{article['id']}")
        if self._marks.since(article["id"]) == published:
            self._marks.set(article["id"], published)
            return
        lang = self.config.get("lang_code") or "en"
        detail = self._data(f"/v2/Articles/{article['id']}/{lang}/versions/{published}") or {}
        self._marks.set(article["id"], published)
        yield Document360ArticleEntity(
            entity_id=f"article:{article['id']}", name=detail.get("title") or article.get("title") or article["id"],
            text=(detail.get("content") or "").strip() or html_text(detail.get("html_content")), breadcrumbs=crumbs,
            web_url=detail.get("url") or "", created_at=parse_time(detail.get("created_at")),
            updated_at=parse_time(detail.get("modified_at")),
            raw_source_fields={"version": published, "slug": article.get("slug"),
                               "category": crumbs[-1].name if crumbs else None})
