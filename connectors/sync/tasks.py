"""django-q2 task entry points (run by `manage.py qcluster`)."""
from __future__ import annotations

from airweave.collections.models import Sync
from connectors.sync.schedules import sync_jobs_sweep_stuck
from connectors.sync.services import SyncAlreadyRunning, sync_job_run, sync_job_start


def run_sync_job(job_id: str) -> str:
    """Run one sync job; returns its final status."""
    return sync_job_run(job_id=job_id).status


def run_scheduled_sync(sync_id: str) -> str:
    """Start and run a job for a scheduled sync; a sync still running is left alone."""
    sync = Sync.objects.select_related("source_connection").filter(pk=sync_id).first()
    if sync is None:
        return "sync deleted"
    try:
        job = sync_job_start(source_connection=sync.source_connection, enqueue=False)
    except SyncAlreadyRunning:
        return "already running"
    return sync_job_run(job_id=job.id).status


def sweep_stuck_jobs() -> int:
    return sync_jobs_sweep_stuck()
