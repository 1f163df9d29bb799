"""The SyncJob state machine (docs/architecture.md, The sync data flow):
pending → running → completed | failed | cancelling → cancelled.

Each transition is one conditional UPDATE, so it is idempotent and safe against races (a
second call, or a call from a state that does not allow it, changes nothing and returns False).
Each transition that happens emits an event on the job's channel-layer group.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from airweave.collections.models import SourceConnection, Sync, SyncJob
from airweave.collections.services import collection_written_mark
from airweave.events import make_event, publish_domain_event, publish_to_group, sync_job_group
from connectors.base import AUTH_ERROR_CATEGORIES
from connectors.sync.workers import current_worker, worker_is_gone

S = SyncJob.Status
ALLOWED_FROM = {
    S.RUNNING: (S.PENDING,),
    S.COMPLETED: (S.RUNNING,),
    S.FAILED: (S.PENDING, S.RUNNING, S.CANCELLING),
    S.CANCELLING: (S.PENDING, S.RUNNING),
    S.CANCELLED: (S.CANCELLING,),
}


class SyncAlreadyRunning(Exception):
    """A job of this sync is already pending, running or cancelling."""


def sync_job_create(*, sync: Sync, force_full_sync: bool = False) -> SyncJob:
    """Create a pending job. Raises SyncAlreadyRunning when the sync has an active job.

    An active job whose worker process is gone (see sync_jobs_fail_lost) is failed first, so a
    killed worker never blocks the next sync."""
    for attempt in range(2):
        try:
            with transaction.atomic():
                job = SyncJob.objects.create(
                    organization_id=sync.organization_id, sync=sync, source_connection_id=sync.source_connection_id,
                    status=S.PENDING, force_full_sync=force_full_sync,
                )
            break
        except IntegrityError:
            if attempt or not sync_jobs_fail_lost(SyncJob.objects.filter(sync=sync)):
                raise SyncAlreadyRunning("a sync job is already running for this source connection") from None
    _emit(job, S.PENDING)
    return job


def sync_jobs_fail_lost(jobs=None) -> int:
    """Fail the running or cancelling jobs (of the queryset `jobs`, default all) whose worker
    process is gone from this host: category `worker_lost`, the pid and host in the error.
    Returns how many were failed."""
    jobs = SyncJob.objects.all() if jobs is None else jobs
    failed = 0
    for job in jobs.filter(status__in=[S.RUNNING, S.CANCELLING]).exclude(worker_pid=None):
        if worker_is_gone(host=job.worker_host, pid=job.worker_pid, started=job.worker_started):
            failed += sync_job_transition(
                job, S.FAILED, error_category="worker_lost",
                error=f"the worker running this job (pid {job.worker_pid} on {job.worker_host}) is gone: "
                      "killed or crashed mid-sync; what it wrote is kept, the next sync completes the rest")
    return failed


def sync_job_transition(job: SyncJob, to: str, **fields) -> bool:
    """Move `job` to status `to` if its current status allows it; also writes `fields`.

    Returns True when the transition happened (and `job` is refreshed), False otherwise.
    """
    allowed_from = ALLOWED_FROM.get(to)
    if not allowed_from:  # nothing moves a job back to pending (or to the unused "created")
        return False
    now = timezone.now()
    values = {"status": to, "modified_at": now, **fields}
    if to == S.RUNNING:
        values.setdefault("started_at", now)
        values.setdefault("last_progress_at", now)
        for name, value in current_worker().items():  # the sweeper fails the job once this process is gone
            values.setdefault(name, value)
    if to in SyncJob.FINAL_STATUSES:
        values.setdefault("completed_at", now)
    changed = SyncJob.objects.filter(pk=job.pk, status__in=allowed_from).update(**values)
    job.refresh_from_db()
    if changed:
        _connection_status_follow(job)
        if to in SyncJob.FINAL_STATUSES:  # what the job wrote is committed: replicas must replay it first
            collection_written_mark(source_connection_id=job.source_connection_id)
        _emit(job, to)
    return bool(changed)


def sync_job_request_cancel(job: SyncJob) -> bool:
    """Ask a pending or running job to stop. A pending job is cancelled at once."""
    if job.status == S.PENDING:
        return sync_job_transition(job, S.CANCELLING) and sync_job_transition(job, S.CANCELLED)
    return sync_job_transition(job, S.CANCELLING)


def sync_job_counts(job: SyncJob) -> dict:
    return {
        "inserted": job.entities_inserted, "updated": job.entities_updated, "deleted": job.entities_deleted,
        "kept": job.entities_kept, "skipped": job.entities_skipped, "failed": job.entities_failed,
    }


def _connection_status_follow(job: SyncJob) -> None:
    status = {
        S.RUNNING: SourceConnection.Status.SYNCING,
        S.COMPLETED: SourceConnection.Status.ACTIVE,
        S.CANCELLED: SourceConnection.Status.ACTIVE,
        S.FAILED: SourceConnection.Status.ERROR,
    }.get(job.status)
    if status is None:
        return
    fields = {"status": status}
    if job.status == S.FAILED and job.error_category in AUTH_ERROR_CATEGORIES:
        # The credentials no longer work: the user must authenticate again (see AuthFailure).
        fields.update(status=SourceConnection.Status.NEEDS_REAUTH, is_authenticated=False,
                      error_category=job.error_category, error_message=job.error[:2000])
    elif job.status == S.FAILED:
        fields.update(error_category=job.error_category or "sync_error", error_message=job.error[:2000])
    elif job.status == S.COMPLETED:
        fields.update(error_category="", error_message="")
    SourceConnection.objects.filter(pk=job.source_connection_id).update(**fields)


def _emit(job: SyncJob, status: str) -> None:
    group = sync_job_group(job.id)
    counts = sync_job_counts(job)
    if status in SyncJob.FINAL_STATUSES:
        event = make_event(
            "sync_complete", 0, job_id=str(job.id), is_complete=status == S.COMPLETED,
            is_failed=status == S.FAILED, final_counts=counts, final_status=status, error=job.error or None,
        )
    else:
        event = make_event("progress", 0, status=status, entities_encountered=job.entities_encountered, **counts)
    publish_to_group(group, event)
    if status in WEBHOOK_STATUSES:
        _publish_sync_event(job, status, counts)


WEBHOOK_STATUSES = {S.PENDING, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED}


def _publish_sync_event(job: SyncJob, status: str, counts: dict) -> None:
    """sync.<status>: Airweave's sync event payload (job, collection, connection, status, error) plus the counts."""
    from airweave.collections.services import source_connection_event_payload

    connection = (SourceConnection.objects.select_related("collection").filter(pk=job.source_connection_id).first())
    if connection is None:
        return
    publish_domain_event(job.organization_id, f"sync.{status}", {
        "job_id": str(job.id), "sync_id": str(job.sync_id), **source_connection_event_payload(connection),
        "status": status, "error": job.error or None, "entities": counts})
