"""Websocket transports: search (`ws/collections/<readable_id>/search/`) and sync progress
(`ws/sync/job/<job_id>/`), carrying the same events as the SSE endpoints.

A search socket takes one pipeline request (the body of POST /collections/{id}/search, validated
by the same serializer) per JSON message and stays open for the next; bad messages get an
`error` event. A sync socket closes after `sync_complete`.
"""
from __future__ import annotations

import asyncio
import json

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from airweave.api.serializers import PipelineSearchRequestSerializer
from airweave.api.sync_events import job_snapshot, renumbered
from airweave.collections.selectors import collection_find
from airweave.events import EventStream, heartbeat_seconds, sync_job_group
from airweave.tenancy.quotas import QuotaExceeded
from search.filters import FilterError
from search.instant import SearchRequestError
from search.pipeline import PipelineRequest, search_prepare, search_run
from search.streams import stream_from_thread


# What sending on a socket the client closed raises: the ASGI spec asks servers for an OSError
# subclass (uvicorn's ClientDisconnected); daphne raises autobahn's Disconnected, a RuntimeError.
CLIENT_GONE = (OSError, RuntimeError)

NOT_AUTHENTICATED, NOT_FOUND = 4401, 4404


async def refuse(consumer: AsyncJsonWebsocketConsumer, code: int) -> None:
    """End a connection with close code 4401 (no valid credential) or 4404 (not found, or another
    organization's). The handshake is accepted first: a socket closed before it answers HTTP 403 to
    every client, which could then not tell a bad key from a missing collection."""
    await consumer.accept()
    await consumer.close(code=code)


class SyncJobConsumer(AsyncJsonWebsocketConsumer):
    """Streams one sync job's events; a `heartbeat` after AIRWEAVE_HEARTBEAT_SECONDS of silence."""

    heartbeats: asyncio.Task | None = None
    closed = False

    async def connect(self):
        organization = self.scope.get("organization")
        job_id = str(self.scope["url_route"]["kwargs"]["job_id"])
        if organization is None or await job_snapshot(organization, job_id) is None:
            self.closed = True
            await refuse(self, NOT_AUTHENTICATED if organization is None else NOT_FOUND)
            return
        self.stream = EventStream()
        self.group = sync_job_group(job_id)
        await self.channel_layer.group_add(self.group, self.channel_name)  # before the snapshot: nothing is missed
        await self.accept()
        self.last_sent = asyncio.get_running_loop().time()
        for event in await job_snapshot(organization, job_id) or []:
            await self.send_event(event)
        if not self.closed:
            self.heartbeats = asyncio.ensure_future(self.send_heartbeats(heartbeat_seconds()))

    async def send_event(self, event: dict) -> None:
        if self.closed:
            return
        await self.send_json(renumbered(self.stream, event))
        self.last_sent = asyncio.get_running_loop().time()
        if event.get("type") == "sync_complete":
            self.closed = True
            await self.close()

    async def send_heartbeats(self, interval: float) -> None:
        loop = asyncio.get_running_loop()
        while not self.closed:
            idle = loop.time() - self.last_sent
            if idle >= interval:
                await self.send_event({"type": "heartbeat"})
                idle = 0.0
            await asyncio.sleep(interval - idle)

    async def disconnect(self, code):
        self.closed = True
        if self.heartbeats is not None:
            self.heartbeats.cancel()
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def stream_event(self, message):
        await self.send_event(message["event"])


class SearchConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        organization = self.scope.get("organization")
        if organization is None:
            await refuse(self, NOT_AUTHENTICATED)
            return
        self.collection = await database_sync_to_async(collection_find)(
            organization=organization, readable_id=self.scope["url_route"]["kwargs"]["readable_id"])
        if self.collection is None:
            await refuse(self, NOT_FOUND)
            return
        await self.accept()

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        if getattr(self, "collection", None) is None:
            return  # refused (see connect): a message that raced the close frame is ignored
        try:
            content = json.loads(text_data or bytes_data or "")
        except (ValueError, RecursionError):
            content = None
        if not isinstance(content, dict):
            await self.send_error("send one JSON object per message: the body of POST /collections/{id}/search")
            return
        await self.receive_json(content)

    async def receive_json(self, content, **kwargs):
        try:
            prepared = await database_sync_to_async(self._prepare)(content)
        except (SearchRequestError, FilterError) as exc:
            await self.send_error(str(exc), loc=["body", *exc.loc])
            return
        except QuotaExceeded as exc:
            await self.send_error(str(exc))
            return
        except _Invalid as exc:
            await self.send_error("invalid request", detail=exc.detail)
            return
        async for event in stream_from_thread(lambda stream: search_run(prepared, stream), first={"type": "connected"}):
            try:
                await self.send_json(event)
            except CLIENT_GONE:  # closed mid-search: the rest of the stream has nobody to go to
                return

    @classmethod
    async def encode_json(cls, content):
        return json.dumps(content, default=str)  # as the SSE frames: a source's datetime never breaks a stream

    async def send_error(self, message: str, **payload) -> None:
        """An `error` event in the envelope of docs/api.md (its own `seq` 1: no search stream started)."""
        await self.send_json(EventStream().make("error", message=message, **payload))

    def _prepare(self, content: dict):
        data = PipelineSearchRequestSerializer(data=content, context={"reject_unknown": True})
        if not data.is_valid():
            raise _Invalid(data.errors)
        return search_prepare(collection=self.collection, request=PipelineRequest(**data.validated_data),
                              principals=self.scope["principals"])


class _Invalid(Exception):
    def __init__(self, detail):
        super().__init__("invalid request")
        self.detail = json.loads(json.dumps(detail, default=str))
