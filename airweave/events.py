"""The event envelope shared by search and sync streams (docs/api.md, Events), and its publisher.

Every event is one JSON object `{type, seq, ts, op?, ...payload}`. Sync events cross processes
through the Channels layer (Redis with REDIS_URL); a failure to publish never fails the work
that produced the event.
"""
from __future__ import annotations

import itertools
import logging
from datetime import datetime, timezone

logger = logging.getLogger(__name__)


def make_event(type: str, seq: int, op: str | None = None, **payload) -> dict:
    """Build one event. `ts` is an ISO-8601 UTC timestamp; `seq` orders events of one stream."""
    event = {"type": type, "seq": seq, "ts": datetime.now(timezone.utc).isoformat()}
    if op is not None:
        event["op"] = op
    event.update(payload)
    return event


class EventStream:
    """Numbers events of one stream and hands them to a sink (a callable taking the event dict)."""

    def __init__(self, sink=None):
        self._seq = itertools.count(1)
        self._sink = sink
        self.events: list[dict] = []

    def make(self, type: str, op: str | None = None, **payload) -> dict:
        """Number and build an event without sending it (e.g. a transport's own heartbeat)."""
        return make_event(type, next(self._seq), op=op, **payload)

    def emit(self, type: str, op: str | None = None, **payload) -> dict:
        event = self.make(type, op=op, **payload)
        self.events.append(event)
        if self._sink is not None:
            try:
                self._sink(event)
            except Exception:  # a broken transport must not break the work
                logger.exception("event sink failed for %s", type)
        return event


def heartbeat_seconds() -> float:
    """Seconds of silence after which a stream sends a `heartbeat` event (AIRWEAVE_HEARTBEAT_SECONDS)."""
    from django.conf import settings

    return float(getattr(settings, "AIRWEAVE_HEARTBEAT_SECONDS", 30.0))


def sync_job_group(job_id) -> str:
    """The channel-layer group that carries one sync job's events."""
    return f"sync_job.{job_id}"


def publish_to_group(group: str, event: dict) -> None:
    """Send `event` to a channel-layer group; logs and swallows transport errors."""
    try:
        from asgiref.sync import async_to_sync
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is not None:
            async_to_sync(layer.group_send)(group, {"type": "stream.event", "event": event})
    except Exception:
        logger.warning("could not publish %s to %s", event.get("type"), group, exc_info=True)
        _drop_postgres_layer_pool()


def _drop_postgres_layer_pool() -> None:
    """Forget the PostgreSQL channel layer's connection pool, so the next publish opens a new one.

    channels_postgres keeps one module-wide async pool, opened in the event loop of the first
    `async_to_sync` call; that loop is gone afterwards, so once the database restarts the pool
    can never replace its broken connections and every later publish of the process would wait
    for its timeout (a worker's progress events lost until it restarts)."""
    import sys

    layer_db = sys.modules.get("channels_postgres.db")
    if layer_db is not None and getattr(layer_db, "connection_pool", None) is not None:
        layer_db.connection_pool = None



# --- Domain events: what happened to an organization's data, for listeners such as webhooks ---
_domain_handlers: list = []


def on_domain_event(handler):
    """Register `handler(organization_id, event_type, payload)` for every domain event (idempotent)."""
    if handler not in _domain_handlers:
        _domain_handlers.append(handler)
    return handler


def publish_domain_event(organization_id, event_type: str, payload: dict) -> None:
    """Tell the registered listeners that `event_type` (e.g. "sync.completed") happened in an
    organization; `payload` is JSON-ready. A failing listener is logged and never fails the caller."""
    for handler in list(_domain_handlers):
        try:
            handler(organization_id, event_type, payload)
        except Exception:
            logger.exception("domain event listener failed for %s", event_type)
