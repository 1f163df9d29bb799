"""django-q2 task entry points (run by `manage.py qcluster`)."""
from __future__ import annotations

from airweave.collections.models import Sync, SyncJob
from connectors.notifications.services import (notification_follow_up, notification_subscriptions_renew,
                                                notified_sync_run)
from connectors.sync.schedules import sync_jobs_sweep_stuck
from connectors.sync.services import SyncAlreadyRunning, sync_job_run, sync_job_start


def run_sync_job(job_id: str) -> str:
    """Run one sync job; returns its final status. A change notification that came meanwhile gets its one follow-up run."""
    try:
        return sync_job_run(job_id=job_id).status
    finally:
        sync_id = SyncJob.objects.filter(pk=job_id).values_list("sync_id", flat=True).first()
        if sync_id:
            notification_follow_up(sync_id=sync_id)


def run_notified_sync(job_id: str) -> str:
    """Run a job started by a change notification, after the debounce window (connectors.notifications)."""
    return notified_sync_run(job_id=job_id)


def run_scheduled_sync(sync_id: str) -> str:
    """Start and run a job for a scheduled sync; a sync still running is left alone."""
    sync = Sync.objects.select_related("source_connection").filter(pk=sync_id).first()
    if sync is None:
        return "sync deleted"
    try:
        job = sync_job_start(source_connection=sync.source_connection, enqueue=False)
    except SyncAlreadyRunning:
        return "already running"
    try:
        return sync_job_run(job_id=job.id).status
    finally:
        notification_follow_up(sync_id=sync.id)


def renew_notification_subscriptions() -> int:
    """Renew the vendor subscriptions (Graph, Drive) that expire soon; returns how many were renewed."""
    return notification_subscriptions_renew()


def sweep_stuck_jobs() -> int:
    return sync_jobs_sweep_stuck()
