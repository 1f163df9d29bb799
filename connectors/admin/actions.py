"""The admin's sync actions: start a sync (or a full sync) of connections, cancel jobs.

Both go through the sync services (connectors.sync.services), as the REST API does, and tell the
operator what happened with admin messages.
"""
from __future__ import annotations

from django.contrib import messages

from airweave.collections.models import SyncJob
from connectors.sync.services import SyncAlreadyRunning, sync_job_cancel, sync_job_start


def start_syncs(model_admin, request, connections, *, force_full_sync: bool) -> None:
    """Start a sync job for each connection (an iterable of SourceConnection); one already syncing is named."""
    started, busy = 0, []
    for connection in connections:
        try:
            sync_job_start(source_connection=connection, force_full_sync=force_full_sync)
            started += 1
        except SyncAlreadyRunning:
            busy.append(connection.name)
    if started:
        kind = "full sync" if force_full_sync else "sync"
        model_admin.message_user(request, f"Started a {kind} of {started} connection(s).", messages.SUCCESS)
    if busy:
        model_admin.message_user(request, f"Already syncing, not started: {', '.join(busy)}.", messages.WARNING)


def cancel_jobs(model_admin, request, jobs) -> None:
    """Ask each active job of `jobs` (an iterable of SyncJob) to stop; finished ones are counted apart."""
    cancelled, done = 0, 0
    for job in jobs:
        if job.status in SyncJob.ACTIVE_STATUSES:
            sync_job_cancel(job=job)
            cancelled += 1
        else:
            done += 1
    if cancelled:
        model_admin.message_user(request, f"Asked {cancelled} job(s) to stop; a running job stops at its next batch.",
                                 messages.SUCCESS)
    if done:
        model_admin.message_user(request, f"{done} job(s) had already finished.", messages.WARNING)
    if not cancelled and not done:
        model_admin.message_user(request, "No running job to cancel.", messages.INFO)
