"""Sync services: start, run and cancel sync jobs. Called by REST, admin, commands and workers."""
from __future__ import annotations

from typing import Callable

from airweave.collections.models import SourceConnection, SyncJob
from connectors.sync.jobs import SyncAlreadyRunning, sync_job_create, sync_job_request_cancel
from connectors.sync.pipeline import JobCounters, SyncPipeline

__all__ = ["SyncAlreadyRunning", "sync_job_start", "sync_job_run", "sync_job_cancel"]


def sync_job_start(*, source_connection: SourceConnection, force_full_sync: bool = False, enqueue: bool = True) -> SyncJob:
    """Create a pending job for the connection's sync and hand it to a django-q2 worker.

    With `enqueue=False` the caller runs it (see sync_job_run). Raises SyncAlreadyRunning.
    """
    job = sync_job_create(sync=source_connection.sync, force_full_sync=force_full_sync)
    if enqueue:
        from django_q.tasks import async_task

        async_task("connectors.sync.tasks.run_sync_job", str(job.id), task_name=f"sync-job-{job.id}",
                   group=f"sync-{source_connection.id}")
        job.refresh_from_db()
    return job


def sync_job_run(*, job_id, on_progress: Callable[[JobCounters], None] | None = None) -> SyncJob:
    """Run a pending job in this process until it completes, fails or is cancelled."""
    job = SyncJob.objects.select_related("source_connection__collection").get(pk=job_id)
    return SyncPipeline(job, on_progress=on_progress).run()


def sync_job_cancel(*, job: SyncJob) -> SyncJob:
    """Request cancellation; a running job stops at its next batch boundary. Idempotent."""
    sync_job_request_cancel(job)
    job.refresh_from_db()
    return job
