"""Rate limiting of a source's requests, per organization or per connection, across processes.

A source declares its budget as data: `rate_limit="3/second"` (the `limits` notation:
"N/second|minute|hour|day", "N per M seconds") and `rate_limit_level="org"` (one budget
shared by every connection of an organization to that service, for APIs that limit per
workspace or per app install) or `"connection"` (one budget per connection, for APIs that
limit per token). The budget is a moving window kept by the `limits` library in the storage
named by `AIRWEAVE_RATE_LIMIT_STORAGE_URL` (default: `REDIS_URL` when set, so every worker
shares it; else in-process memory, enough for one worker).
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from django.conf import settings
from limits import parse, storage, strategies

from connectors.http.errors import RateLimited

_storages: dict[str, object] = {}
_lock = threading.Lock()


def default_storage_url() -> str:
    """AIRWEAVE_RATE_LIMIT_STORAGE_URL, else REDIS_URL, else "memory://"."""
    return (getattr(settings, "AIRWEAVE_RATE_LIMIT_STORAGE_URL", "") or getattr(settings, "REDIS_URL", "")
            or "memory://")


def _storage(url: str):
    with _lock:
        if url not in _storages:
            _storages[url] = storage.storage_from_string(url)
        return _storages[url]


def limiter_key(short_name: str, level: str, *, organization_id=None, source_connection_id=None) -> str:
    """The limiter identity of a source run: `<short_name>:org:<id>` or `<short_name>:connection:<id>`.

    Raises ValueError for an unknown level.
    """
    if level == "org":
        return f"{short_name}:org:{organization_id}"
    if level == "connection":
        return f"{short_name}:connection:{source_connection_id}"
    raise ValueError(f"rate_limit_level must be 'org' or 'connection', not {level!r}")


class RateLimiter:
    """A moving-window budget (`rate`, e.g. "3/second") under `key`, shared through `storage_url`.

    `acquire()` blocks until a request may be sent, up to `max_wait` seconds, then raises
    RateLimited. `sleep` is injectable for tests.
    """

    def __init__(self, rate: str, key: str, *, storage_url: str | None = None, max_wait: float = 600.0,
                 sleep: Callable[[float], None] = time.sleep):
        self.item = parse(rate)
        self.rate = rate
        self.key = key
        self.max_wait = max_wait
        self.sleep = sleep
        self._limiter = strategies.MovingWindowRateLimiter(_storage(storage_url or default_storage_url()))

    def try_acquire(self) -> float:
        """Take one request from the budget if there is one: 0.0; else the seconds to wait before trying again."""
        if self._limiter.hit(self.item, "airweave", self.key):
            return 0.0
        stats = self._limiter.get_window_stats(self.item, "airweave", self.key)
        return max(0.01, stats.reset_time - time.time())

    def acquire(self) -> float:
        """Block until one request may be sent. Returns the seconds waited. Raises RateLimited after max_wait."""
        waited = 0.0
        while True:
            wait = self.try_acquire()
            if wait == 0.0:
                return waited
            if waited + wait > self.max_wait:
                raise RateLimited(f"the {self.rate} budget of {self.key} stays exhausted for over "
                                  f"{self.max_wait:.0f} s", status=429, url="", retry_after=wait)
            self.sleep(wait)
            waited += wait
