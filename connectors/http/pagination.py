"""Pagination helpers for the three shapes APIs use: Link headers, cursors, offsets.

    for response in link_pages(self.http, "/orgs/acme/repos", params={"per_page": 100}):
        for repo in response.json(): ...

    def fetch(cursor):
        body = self.http.post("/v1/search", json={"start_cursor": cursor} if cursor else {}).json()
        return body["results"], body.get("next_cursor") if body.get("has_more") else None
    for page in cursor_pages(fetch): ...

Every helper stops on a repeated next link or cursor (a server bug that would loop forever),
raising SourceError("pagination_loop"), and after `max_pages` when given.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from connectors.errors import SourceError


def link_pages(client, url: str, *, params: dict | None = None, max_pages: int | None = None,
               **kwargs) -> Iterator:
    """GET `url`, then each `Link: <...>; rel="next"` target; yield every requests.Response.

    `params` go to the first request only (the next links carry their own query).
    """
    seen: set[str] = set()
    pages = 0
    while url:
        response = client.get(url, params=params, **kwargs)
        yield response
        pages += 1
        if max_pages is not None and pages >= max_pages:
            return
        next_url = (response.links.get("next") or {}).get("url")
        if next_url in seen:
            raise SourceError(f"pagination loop: the next link repeats ({next_url})", "pagination_loop")
        if next_url:
            seen.add(next_url)
        url, params = next_url, None


def cursor_pages(fetch: Callable[[Any], tuple[Iterable, Any]], *, max_pages: int | None = None) -> Iterator[list]:
    """Call `fetch(cursor)` (None first) → `(items, next_cursor)`; yield each page's items as a list.

    Stops when next_cursor is falsy. The cursor is opaque (a string, a dict, a page number).
    """
    cursor = None
    seen = set()
    pages = 0
    while True:
        items, cursor = fetch(cursor)
        yield list(items)
        pages += 1
        if not cursor or (max_pages is not None and pages >= max_pages):
            return
        key = repr(cursor)
        if key in seen:
            raise SourceError(f"pagination loop: the cursor repeats ({key[:100]})", "pagination_loop")
        seen.add(key)


def offset_pages(fetch: Callable[[int, int], Iterable], *, page_size: int, start: int = 0,
                 max_pages: int | None = None) -> Iterator[list]:
    """Call `fetch(offset, page_size)` → items, for offsets start, start+page_size, ...; yield each page.

    Stops after a page shorter than `page_size` (an empty one included).
    """
    offset, pages = start, 0
    while True:
        items = list(fetch(offset, page_size))
        if items:
            yield items
        pages += 1
        if len(items) < page_size or (max_pages is not None and pages >= max_pages):
            return
        offset += page_size
