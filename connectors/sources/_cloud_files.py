"""Helpers for sources that stream files from a cloud drive (Google Drive, Dropbox, Box).

    fetcher = FileFetcher(self.http)
    path = fetcher.fetch_named(entity_id, name, url, size=declared_size)
    if isinstance(path, UnreadableEntity):
        return path                      # the reason: unsupported type, too large, gone
    return DriveFileEntity(..., path=path)

`changes_or_listing` runs an incremental run from a saved position and falls back to a full
listing when the changes cannot be applied one by one (`RestartListing`: a folder moved or
deleted, a reset cursor).

A file that is too large, of an unsupported type, or gone between the listing and the download
is yielded as a `connectors.base.UnreadableEntity` with the reason: the pipeline counts it as
skipped, never a failed sync, and never deletes an entity it had (it was seen in the listing).

`FileFetcher` downloads through `HttpClient.download` (AIRWEAVE_MAX_FILE_BYTES applies) and
removes files the pipeline is done with, so a run over a large drive does not hold every file
on disk until it ends: the pipeline reads a file when hashing it (right after it is yielded)
and when converting it (at the latest when its embedding batch of
AIRWEAVE_EMBEDDING_BATCH_SIZE entities is flushed, before the next entity is asked for), so
keeping the last `2 × batch size` files is enough. Should a file be gone anyway, the converter
reports it as an unreadable, skipped entity.
"""
from __future__ import annotations

import logging
from collections import deque
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from django.conf import settings

from connectors.base import BaseEntity, SkipEntity, UnreadableEntity
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.http import HttpError

logger = logging.getLogger(__name__)


def extension_of(name: str) -> str:
    """Lower-case extension of a file name, with the dot ("" when none)."""
    return PurePosixPath(name or "").suffix.lower()


def unsupported_reason(name: str) -> str | None:
    """A skip reason when no converter reads files named like `name`, else None."""
    extension = extension_of(name)
    if extension not in SUPPORTED_EXTENSIONS:
        return f"unsupported file type: {extension or name or 'no extension'}"
    return None


def max_file_bytes() -> int:
    return int(settings.AIRWEAVE_MAX_FILE_BYTES)


class FileFetcher:
    """Downloads files of one run through `http` (an HttpClient), keeping only the recent ones on disk.

    `fetch(...)` returns `(path, None)` or `(None, skip reason)`; it never raises for one bad
    file (404/403/410 answers, over-size files). Other HTTP failures (5xx after retries, auth)
    propagate: they concern the whole source.
    """

    def __init__(self, http, keep: int | None = None):
        self.http = http
        self.keep = keep or max(2 * int(getattr(settings, "AIRWEAVE_EMBEDDING_BATCH_SIZE", 64)), 8)
        self._recent: deque[Path] = deque()

    def fetch(self, url: str, *, suffix: str = "", size: int | None = None, **kwargs) -> tuple[Path | None, str | None]:
        """Download `url` (kwargs go to the request: params, headers) into a file ending in `suffix`.

        `size` (bytes, when the listing gives it) is checked first so an over-size file is not requested.
        """
        limit = max_file_bytes()
        if size is not None and size > limit:
            return None, f"file too large: {size} bytes > limit {limit} bytes"
        try:
            path = self.http.download(url, suffix=suffix, max_bytes=limit, **kwargs)
        except SkipEntity as exc:
            return None, exc.reason
        except HttpError as exc:
            if exc.status in (403, 404, 410, 409):
                return None, f"download refused: HTTP {exc.status}"
            raise
        self._remember(path)
        return path, None

    def fetch_named(self, entity_id: str, name: str, url: str, *, size: int | None = None,
                    reason: str | None = None, **kwargs) -> Path | UnreadableEntity:
        """The downloaded file of `name`, or the UnreadableEntity saying why not.

        Checks, in order: the file type (unsupported_reason), `reason` (the source's own, e.g. an
        export-only file), the declared `size`, then the download itself (see fetch; kwargs go to
        the request). The suffix of the local file is the extension of `name`.
        """
        reason = unsupported_reason(name) or reason
        path = None
        if reason is None:
            path, reason = self.fetch(url, suffix=extension_of(name), size=size, **kwargs)
        if reason:
            return UnreadableEntity(entity_id=entity_id, name=name, reason=reason)
        return path

    def _remember(self, path: Path) -> None:
        self._recent.append(path)
        while len(self._recent) > self.keep:
            old = self._recent.popleft()
            try:
                old.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - removed by close() anyway
                logger.debug("could not remove %s", old)


class RestartListing(Exception):
    """An incremental run cannot go on (a folder moved or deleted, a reset cursor): list everything."""


def changes_or_listing(changes: Iterator[BaseEntity] | None, listing: Callable[[], Iterator[BaseEntity]], *,
                       reset: Callable[[], None], source: str) -> Iterator[BaseEntity]:
    """The entities of `changes` (an incremental run; None when there is no saved position), or of a
    full `listing()` when there is none or the changes raise RestartListing; `reset()` then clears
    what the incremental run gathered (deletions, known folders) before the listing starts."""
    if changes is not None:
        try:
            yield from changes
            return
        except RestartListing as why:
            logger.info("%s: %s; listing everything", source, why)
            reset()
    yield from listing()
