"""Helpers for sources that stream files from a cloud drive (Google Drive, Dropbox, Box).

    fetcher = FileFetcher(self.http)
    path, reason = fetcher.fetch(url, suffix=".pdf", size=declared_size)
    if reason:
        yield UnreadableEntity(entity_id=..., name=..., reason=reason)
    else:
        yield DriveFileEntity(..., path=path)

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

from django.conf import settings

from connectors.base import SkipEntity
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

    def _remember(self, path: Path) -> None:
        self._recent.append(path)
        while len(self._recent) > self.keep:
            old = self._recent.popleft()
            try:
                old.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - removed by close() anyway
                logger.debug("could not remove %s", old)
