"""Websocket transport of sync progress: `ws/sync/job/<job_id>/` (the same events as the SSE subscription)."""
from __future__ import annotations

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from airweave.api.sync_events import job_snapshot, renumbered
from airweave.events import EventStream, sync_job_group


class SyncJobConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        organization = self.scope.get("organization")
        job_id = str(self.scope["url_route"]["kwargs"]["job_id"])
        if organization is None or await job_snapshot(organization, job_id) is None:
            await self.close(code=4401 if organization is None else 4404)
            return
        self.stream = EventStream()
        self.group = sync_job_group(job_id)
        await self.channel_layer.group_add(self.group, self.channel_name)  # before the snapshot: nothing is missed
        await self.accept()
        for event in await job_snapshot(organization, job_id) or []:
            await self.send_json(renumbered(self.stream, event))

    async def disconnect(self, code):
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def stream_event(self, message):
        await self.send_json(renumbered(self.stream, message["event"]))
