"""Microsoft Graph, shared by the Outlook mail, OneDrive, SharePoint and Teams sources.

- Pagination: a collection answers `{"value": [...], "@odata.nextLink": "<absolute URL>"}`;
  the next link carries every parameter (`$skiptoken`), so it is followed as is.
- Delta queries (`.../delta`): the pages of a round end with `@odata.deltaLink` instead of a
  next link; that link is the cursor of the next run, which then lists only what changed. A
  removed item comes back as `{"id": ..., "@removed": {"reason": "deleted" | "changed"}}`
  (messages, events, chat messages) or, for drive items, with a `deleted` facet. A delta link
  that expired or was reset answers 410 Gone (`syncStateNotFound`, `resyncRequired`): the round
  is started again from the beginning (a full listing).
- Throttling: 429 (and 503) with `Retry-After` are retried by the HTTP client.
- Auth: OAuth 2 through the Microsoft identity platform (`login.microsoftonline.com/common`),
  refresh tokens rotate (`with_rotating_refresh`); `offline_access` is among the scopes.
- Files: GraphFileEntity downloads its content (`/drives/{drive}/items/{id}/content`, which
  redirects to a pre-authenticated URL) only when the pipeline needs the text, and hashes the
  item's `cTag` (which changes exactly when the content does), so an unchanged file is kept
  without being downloaded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from itertools import takewhile
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from connectors.base import BaseSource, FileEntity, SkipEntity
from connectors.http import HttpError

GRAPH = "https://graph.microsoft.com/v1.0"
MICROSOFT_AUTH_METHODS = ("oauth_browser", "oauth_token", "oauth_byoc")
MICROSOFT_OAUTH_TYPE = "with_rotating_refresh"
# Microsoft throttles per app and tenant, and per mailbox (10,000 requests per 10 minutes).
GRAPH_RATE_LIMIT = "15/second"


def graph_time(value: str | None) -> datetime | None:
    """An ISO-8601 Graph timestamp ("2024-05-01T10:00:00Z", 7 fractional digits at most) as a datetime."""
    if not value:
        return None
    value = value.replace("Z", "+00:00")
    if "." in value:  # Python before 3.11 took at most 6 fractional digits; trim to be safe everywhere
        head, _, tail = value.partition(".")
        digits = "".join(takewhile(str.isdigit, tail))  # only the fraction, not the offset's digits
        value = f"{head}.{digits[:6]}{tail[len(digits):]}"
    return datetime.fromisoformat(value)


def email_address(recipient: dict | None) -> str:
    """A Graph recipient (`{"emailAddress": {"name", "address"}}`) as "Name <address>", or the one that is set."""
    email = (recipient or {}).get("emailAddress") or {}
    name, address = email.get("name") or "", email.get("address") or ""
    return f"{name} <{address}>" if name and address and name != address else (address or name)


def body_text(item: dict) -> str:
    """The text of a message's or event's `body` (asked as text with `Prefer: outlook.body-content-type="text"`;
    HTML from a server that ignored the header is read by the HTML converter), else its `bodyPreview`."""
    body = item.get("body") or {}
    text = body.get("content") or item.get("bodyPreview") or ""
    if body.get("contentType") == "html":
        from connectors.converters import convert_bytes

        try:
            text = convert_bytes(text.encode("utf-8"), Path("body.html"), max_bytes=len(text.encode()) + 1).text
        except SkipEntity:
            text = item.get("bodyPreview") or ""
    return text


def is_removed(item: dict) -> bool:
    """True for a delta item that reports a deletion (`@removed`, or a drive item's `deleted` facet)."""
    return "@removed" in item or "deleted" in item


class DeltaRound:
    """One round of a delta query: iterate it for the items, then read `delta_link` and `full`.

    `start` is the first URL (relative to the Graph base) with its `params`; `delta_link` the
    previous round's link (None: start over). `full` is True when the round listed everything
    (no usable previous link), so absent items are deletions. Raises HttpError for failures
    other than an expired delta link.
    """

    def __init__(self, http, start: str, *, params: dict | None = None, delta_link: str | None = None,
                 headers: dict | None = None):
        self.http, self.start, self.params, self.headers = http, start, params or {}, headers or {}
        self.previous = delta_link
        self.delta_link: str | None = None
        self.full = not delta_link

    def __iter__(self) -> Iterator[dict]:
        if self.previous:
            try:
                first = self.http.get_json(self.previous, headers=self.headers)
            except HttpError as exc:
                if exc.status != 410:
                    raise
                first = None  # the delta token expired or was reset: a full round
            if first is not None:
                yield from self._pages(first)
                return
            self.full = True
        yield from self._pages(self.http.get_json(self.start, params=self.params, headers=self.headers))

    def _pages(self, body: dict) -> Iterator[dict]:
        seen: set[str] = set()
        while True:
            yield from body.get("value") or []
            next_link = body.get("@odata.nextLink")
            if not next_link:
                self.delta_link = body.get("@odata.deltaLink")
                return
            if next_link in seen:
                from connectors.base import SourceError

                raise SourceError(f"pagination loop: the next link repeats ({next_link[:100]})", "pagination_loop")
            seen.add(next_link)
            body = self.http.get_json(next_link, headers=self.headers)


def pages(http, url: str, *, params: dict | None = None, headers: dict | None = None) -> Iterator[dict]:
    """Every item of a Graph collection, following `@odata.nextLink`."""
    body = http.get_json(url, params=params or {}, headers=headers or {})
    seen: set[str] = set()
    while True:
        yield from body.get("value") or []
        next_link = body.get("@odata.nextLink")
        if not next_link or next_link in seen:
            return
        seen.add(next_link)
        body = http.get_json(next_link, headers=headers or {})


class GraphSource(BaseSource):
    """Base of the Microsoft Graph sources: the Graph base URL and OAuth bearer tokens."""

    base_url = GRAPH

    def http_headers(self) -> dict:
        return {"Accept": "application/json"}


@dataclass
class GraphFileEntity(FileEntity):
    """A file whose bytes are fetched on first use of `path`; hashed by its content tag.

    `content_tag` is the service's tag of the content (a drive item's `cTag`; an attachment's
    id plus size and modification time). `fetch()` returns the local path (raising SkipEntity).
    """

    content_tag: str = ""
    mime_type: str = ""
    fetch: Callable[[], Path] | None = field(default=None, repr=False, compare=False)

    def update_hash_with_content(self, digest) -> None:
        digest.update(f"tag:{self.content_tag}:{self.size}".encode())

    def textual_representation(self) -> str:
        return self.name


def _get_path(self):
    path = self.__dict__.get("_path")
    if path is None and self.__dict__.get("fetch") is not None:
        path = self.__dict__["_path"] = self.fetch()
    return path


def _set_path(self, value):
    self.__dict__["_path"] = value


GraphFileEntity.path = property(_get_path, _set_path)  # after @dataclass: __init__ assigns through it


def download_fetcher(http, url: str, name: str) -> Callable[[], Path]:
    """A fetch() for GraphFileEntity: streams `url` through `http.download` (size limit applied);
    a download the service refuses (gone, forbidden) becomes a SkipEntity with the status."""
    suffix = PurePosixPath(name).suffix.lower()[:16]

    def fetch() -> Path:
        try:
            return http.download(url, suffix=suffix)
        except HttpError as exc:
            raise SkipEntity(f"download failed: HTTP {exc.status}") from None

    return fetch
