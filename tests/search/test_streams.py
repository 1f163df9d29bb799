"""stream_from_thread: streamed searches run on their own pool, wide enough for many slow answers."""
from __future__ import annotations

import asyncio
import threading

from asgiref.sync import async_to_sync

from search.streams import stream_from_thread


def _collect_all(runs):
    async def drain(run):
        return [event async for event in stream_from_thread(run)]

    async def together():
        return await asyncio.gather(*(drain(run) for run in runs))

    return async_to_sync(together)()


def test_streams_run_on_the_search_stream_pool():
    names = []

    def run(stream):
        names.append(threading.current_thread().name)
        stream.emit("done")

    [events] = _collect_all([run])
    assert [e["type"] for e in events] == ["done"]
    assert names[0].startswith("search-stream")


def test_twelve_waiting_streams_all_run_at_once():
    """Each stream waits until all twelve are running: on a pool of fewer threads they never would
    (the barrier times out and the streams end with an error event)."""
    barrier = threading.Barrier(12)

    def run(stream):
        barrier.wait(timeout=20)
        stream.emit("done")

    results = _collect_all([run] * 12)
    assert all([e["type"] for e in events] == ["done"] for events in results)
