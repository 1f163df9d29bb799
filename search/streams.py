"""Server-Sent Events transport: frames `data: <json>\\n\\n`, heartbeats on idle streams.

The producer (a search or a sync subscription) runs in a worker thread and pushes events; the
async generator yields them as SSE frames as they come, so answer tokens reach the client live.
"""
from __future__ import annotations

import asyncio
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import AsyncIterator, Callable

from django.conf import settings
from django.db import close_old_connections, connections

from airweave.availability import DATABASE_UNAVAILABLE, database_unavailable
from airweave.events import EventStream, heartbeat_seconds

logger = logging.getLogger(__name__)
_END = object()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def stream_pool() -> ThreadPoolExecutor:
    """The threads that run streamed searches (AIRWEAVE_STREAM_WORKERS, default 32).

    Streamed searches mostly wait on language models; on the event loop's default pool (cores + 4
    threads) a handful of slow answers made every further stream wait for a free thread.
    """
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=int(getattr(settings, "AIRWEAVE_STREAM_WORKERS", 32)),
                                       thread_name_prefix="search-stream")
        return _POOL


def sse_frame(event: dict) -> str:
    return f"data: {json.dumps(event, default=str)}\n\n"


async def stream_from_thread(run: Callable[[EventStream], None], *, first: dict | None = None,
                             heartbeat: float | None = None) -> AsyncIterator[dict]:
    """Yield the events that `run(stream)` emits from a worker thread, plus heartbeats when idle.

    `first` (type and payload) is emitted before `run` starts, e.g. {"type": "connected"}. When
    `run` raises without having emitted an `error` event last, one is sent before the stream ends.
    """
    heartbeat = heartbeat or heartbeat_seconds()
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    stream = EventStream(lambda event: loop.call_soon_threadsafe(queue.put_nowait, event))
    if first:
        stream.emit(**first)

    def work():
        close_old_connections()
        try:
            run(stream)
        except Exception as exc:
            logger.exception("stream producer failed")
            if not stream.events or stream.events[-1]["type"] != "error":  # a client must learn why it ends
                if database_unavailable(exc):
                    stream.emit("error", message=DATABASE_UNAVAILABLE, status=503)
                else:
                    stream.emit("error", message=f"the search failed: {type(exc).__name__}")
        finally:
            connections.close_all()  # this thread's: the primary's and a replica's
            loop.call_soon_threadsafe(queue.put_nowait, _END)

    worker = loop.run_in_executor(stream_pool(), work)
    try:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), timeout=heartbeat)
            except asyncio.TimeoutError:
                yield stream.make("heartbeat")
                continue
            if event is _END:
                break
            yield event
    finally:
        await worker


async def sse(events: AsyncIterator[dict]) -> AsyncIterator[str]:
    async for event in events:
        yield sse_frame(event)
