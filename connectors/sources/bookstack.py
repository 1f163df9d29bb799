"""BookStack: the books, chapters and pages of a BookStack wiki.

Config: `base_url` (the wiki's URL; SSRF-guarded: a wiki on your own network needs
AIRWEAVE_ALLOW_PRIVATE_HOSTS or AIRWEAVE_ALLOWED_PRIVATE_NETWORKS). Auth: an API token (My
Account → Access & Security → API Tokens: an id and a secret), sent as
`Authorization: Token <id>:<secret>`, as BookStack documents; a refused token (401) marks the
connection `needs_reauth`. The token's user must have the "Access System API" permission; what
that user can see is indexed.

API: `GET /api/books`, `/api/chapters`, `/api/pages` (`count=500&offset=N&sort=+id`, paged by
offset until `total`; listings carry no content), then `GET /api/pages/{id}` (the page's
Markdown, else its HTML) for the pages that changed. BookStack limits the API to 180 requests a
minute per user by default and answers 429 with Retry-After, which the shared client waits out.

Entities: BookStackBookEntity (`book:{id}`), BookStackChapterEntity (`chapter:{id}`; breadcrumb:
the book), BookStackPageEntity (`page:{id}`; breadcrumbs: book, chapter; `web_url`
`<base>/books/<book slug>/page/<page slug>`). Draft pages are left out.

Incremental: cursor `{"since": {"pages": <newest page updated_at>}}`. Every run lists books,
chapters and pages (cheap: no content) and reads the content of pages updated after the mark
only; the listings are complete, so what they no longer hold is deleted
(`present_entity_ids`). A renamed book or chapter updates the breadcrumbs of its pages when they
next change (or at a forced full sync).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.http import HttpError, offset_pages
from connectors.registry import source
from connectors.sources._saas import ListedSource, SelfHostedSource, Watermarks, html_text, parse_time

PAGE = 500


@dataclass
class BookStackBookEntity(BaseEntity):
    """A book: its name and description."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nBookStack book\n\n{self.description}".strip()


@dataclass
class BookStackChapterEntity(BaseEntity):
    """A chapter of a book."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nBookStack chapter\n\n{self.description}".strip()


@dataclass
class BookStackPageEntity(BaseEntity):
    """A page: its name and text (Markdown, or its HTML as text)."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="BookStack",
    short_name="bookstack",
    description="Books, chapters and pages of a BookStack wiki.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("token_id", "Token ID", "string", "An API token's ID.", required=True),
        ConfigField("token_secret", "Token secret", "string", required=True, is_secret=True),
    ),
    config_fields=(ConfigField("base_url", "Wiki URL", "string", "e.g. https://wiki.example.org", required=True),),
    labels=("Knowledge Base", "Documentation"),
    entity_types=(BookStackBookEntity, BookStackChapterEntity, BookStackPageEntity),
    rate_limit_level="connection",
    rate_limit="180/minute",
)
class BookStackSource(ListedSource, SelfHostedSource):
    """Lists books, chapters and pages; reads changed pages; see the module docstring."""

    URL_MUST_BE = "the wiki's http(s) URL, e.g. https://wiki.example.org"

    def http_auth(self):
        return HeaderAuth({"Authorization": f"Token {self.credentials['token_id']}:{self.credentials['token_secret']}"})

    def _list(self, kind: str) -> list[dict]:
        total = {}

        def fetch(offset, count):
            body = self.http.get_json(f"/api/{kind}", params={"count": count, "offset": offset, "sort": "+id"})
            total["n"] = body.get("total", 0)
            return body.get("data") or []

        out = []
        for page in offset_pages(fetch, page_size=PAGE):
            out += page
            if len(out) >= total.get("n", 0):
                break
        return out

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._present: set[str] = set()
        since = self._marks.since("pages")
        books = {b["id"]: b for b in self._list("books")}
        chapters = {c["id"]: c for c in self._list("chapters")}
        for book in books.values():
            self._present.add(f"book:{book['id']}")
            yield BookStackBookEntity(
                entity_id=f"book:{book['id']}", name=book["name"], description=book.get("description") or "",
                web_url=f"{self.base_url}/books/{book['slug']}", created_at=parse_time(book.get("created_at")),
                updated_at=parse_time(book.get("updated_at")))
        for chapter in chapters.values():
            book = books.get(chapter.get("book_id"))
            self._present.add(f"chapter:{chapter['id']}")
            yield BookStackChapterEntity(
                entity_id=f"chapter:{chapter['id']}", name=chapter["name"],
                description=chapter.get("description") or "", breadcrumbs=self._crumbs(book, None),
                web_url=f"{self.base_url}/books/{book['slug'] if book else ''}/chapter/{chapter['slug']}",
                created_at=parse_time(chapter.get("created_at")), updated_at=parse_time(chapter.get("updated_at")))
        for page in self._list("pages"):
            if page.get("draft"):
                continue
            self._present.add(f"page:{page['id']}")
            self._marks.advance("pages", page.get("updated_at"))
            if since and (page.get("updated_at") or "") <= since:
                continue
            entity = self._page(page, books.get(page.get("book_id")), chapters.get(page.get("chapter_id")))
            if entity is not None:
                yield entity

    def _crumbs(self, book: dict | None, chapter: dict | None) -> list[Breadcrumb]:
        crumbs = [Breadcrumb(f"book:{book['id']}", book["name"], "BookStackBookEntity")] if book else []
        if chapter:
            crumbs.append(Breadcrumb(f"chapter:{chapter['id']}", chapter["name"], "BookStackChapterEntity"))
        return crumbs

    def _page(self, summary: dict, book: dict | None, chapter: dict | None) -> BookStackPageEntity | None:
        try:
            page = self.http.get_json(f"/api/pages/{summary['id']}")
        except HttpError as exc:
            if exc.status == 404:  # deleted between the listing and this read
                self._present.discard(f"page:{summary['id']}")
                return None
            raise
        text = (page.get("markdown") or "").strip() or html_text(page.get("html"))
        return BookStackPageEntity(
            entity_id=f"page:{page['id']}", name=page.get("name") or str(page["id"]), text=text,
            breadcrumbs=self._crumbs(book, chapter),
            web_url=f"{self.base_url}/books/{book['slug'] if book else page.get('book_slug', '')}/page/{page['slug']}",
            created_at=parse_time(page.get("created_at")), updated_at=parse_time(page.get("updated_at")),
            raw_source_fields={"book": book.get("name") if book else None,
                               "chapter": chapter.get("name") if chapter else None,
                               "revision_count": page.get("revision_count")})
