"""Sync progress for subscribers: the job's current state, then its live events from the channel layer."""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from airweave.collections.models import SyncJob
from airweave.collections.selectors import sync_job_find
from airweave.events import EventStream, heartbeat_seconds, make_event, sync_job_group


@database_sync_to_async
def _job(organization, job_id):
    return sync_job_find(organization=organization, id=job_id)


def _counts(job: SyncJob) -> dict:
    return {"inserted": job.entities_inserted, "updated": job.entities_updated, "deleted": job.entities_deleted,
            "kept": job.entities_kept, "skipped": job.entities_skipped, "failed": job.entities_failed}


def _final(job: SyncJob) -> dict:
    return make_event("sync_complete", 0, job_id=str(job.id), is_complete=job.status == "completed",
                      is_failed=job.status == "failed", final_counts=_counts(job), final_status=job.status,
                      error=job.error or None)


async def job_snapshot(organization, job_id: str) -> list[dict] | None:
    """`connected` and a progress event with the job's counters (plus `sync_complete` if it has ended);
    None when the job is not the organization's."""
    job = await _job(organization, job_id)
    if job is None:
        return None
    events = [make_event("connected", 0, job_id=str(job.id)),
              make_event("progress", 0, status=job.status, entities_encountered=job.entities_encountered, **_counts(job))]
    if job.status in SyncJob.FINAL_STATUSES:
        events.append(_final(job))
    return events


async def job_events(organization, job_id: str, heartbeat: float | None = None) -> AsyncIterator[dict]:
    """The job's snapshot, then its live events until `sync_complete`, numbered for this stream.

    Subscribes before reading the snapshot, so no event falls between the two.
    """
    heartbeat = heartbeat or heartbeat_seconds()
    stream = EventStream()
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = sync_job_group(job_id)
    await layer.group_add(group, channel)
    try:
        snapshot = await job_snapshot(organization, job_id) or []
        for event in snapshot:
            yield renumbered(stream, event)
        if not snapshot or snapshot[-1]["type"] == "sync_complete":
            return
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=heartbeat)
            except asyncio.TimeoutError:
                yield stream.make("heartbeat")
                continue
            event = message.get("event") or {}
            yield renumbered(stream, event)
            if event.get("type") == "sync_complete":
                return
    finally:
        await layer.group_discard(group, channel)


def renumbered(stream: EventStream, event: dict) -> dict:
    """`event` with the next sequence number of `stream` (events from other processes carry none)."""
    fresh = stream.make(event["type"])
    return {**fresh, **event, "seq": fresh["seq"]}


async def job_state_events(organization, job_id: str, heartbeat: float | None = None) -> AsyncIterator[dict]:
    """GET /sync/job/{id}/subscribe-state: the job's entity totals as Airweave's `entity_state`
    events `{job_id, sync_id, entity_counts {type: count}, total_entities, job_status}`, one now
    and one per progress event, then `sync_complete` (other events, heartbeats aside, are left out)."""
    job = await _job(organization, job_id)
    sync_id = str(job.sync_id) if job is not None and job.sync_id else None
    stream = EventStream()
    async for event in job_events(organization, job_id, heartbeat):
        if event["type"] == "progress":
            counts = event.get("entities_encountered") or {}
            yield stream.make("entity_state", job_id=job_id, sync_id=sync_id, entity_counts=counts,
                              total_entities=sum(v for v in counts.values() if isinstance(v, int)),
                              job_status=event.get("status") or "running")
        elif event["type"] in ("connected", "heartbeat", "sync_complete"):
            yield renumbered(stream, event)
