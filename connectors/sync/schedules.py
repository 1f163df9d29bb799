"""Cron schedules of syncs and the stuck-job sweeper, as django-q2 Schedules.

A sync with a cron expression gets one django-q2 CRON schedule (named `sync-<sync id>`) that
runs `connectors.sync.tasks.run_scheduled_sync`; django-q2 computes the next run with croniter.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from croniter import croniter
from django.conf import settings
from django.utils import timezone
from django_q.models import Schedule

from airweave.collections.models import Sync, SyncJob
from connectors.sync.jobs import S, sync_job_transition, sync_jobs_fail_lost

logger = logging.getLogger(__name__)

SWEEPER_NAME = "sweep-stuck-sync-jobs"


def validate_cron(expression: str) -> str:
    """Return the stripped expression; raises ValueError with an example when it is not valid cron."""
    expression = " ".join((expression or "").split())
    if not expression:
        return ""
    example = "five fields, e.g. '0 */6 * * *'"
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise ValueError(f"'{expression}' is not a valid cron expression ({example})")
    try:
        croniter(expression).get_next()
    except Exception:  # CroniterBadDateError and friends: valid syntax that never fires
        raise ValueError(f"'{expression}' never fires ({example})") from None
    return expression


def sync_schedule_apply(sync: Sync) -> None:
    """Create, update or remove the django-q2 schedule of `sync` to match `sync.cron_schedule`."""
    name = f"sync-{sync.id}"
    if not sync.cron_schedule:
        Schedule.objects.filter(name=name).delete()
        Sync.objects.filter(pk=sync.pk).update(next_run_at=None)
        return
    schedule, _ = Schedule.objects.update_or_create(
        name=name,
        defaults={"func": "connectors.sync.tasks.run_scheduled_sync", "args": repr(str(sync.id)),
                  "schedule_type": Schedule.CRON, "cron": sync.cron_schedule, "repeats": -1,
                  "next_run": croniter(sync.cron_schedule, timezone.now()).get_next(type(timezone.now()))},
    )
    Sync.objects.filter(pk=sync.pk).update(next_run_at=schedule.next_run)
    sync.next_run_at = schedule.next_run


def ensure_sweeper_schedule(**kwargs) -> None:
    """Make sure the stuck-job sweeper runs every AIRWEAVE_SWEEP_MINUTES (called after migrate)."""
    Schedule.objects.update_or_create(
        name=SWEEPER_NAME,
        defaults={"func": "connectors.sync.tasks.sweep_stuck_jobs", "schedule_type": Schedule.MINUTES,
                  "minutes": settings.AIRWEAVE_SWEEP_MINUTES, "repeats": -1},
    )


def sweep_on_worker_spawn(sender=None, proc_name: str = "", **kwargs) -> None:
    """django-q2's post_spawn: a worker that starts (the cluster's first, or the one that replaces
    a killed worker) sweeps at once, so a job of a killed worker fails within seconds."""
    try:
        sync_jobs_sweep_stuck()
    except Exception:  # the database may be down: the worker must start anyway; the schedule retries
        logger.warning("the stuck-job sweep at the start of %s failed", proc_name or "a worker", exc_info=True)


def sync_jobs_sweep_stuck(now=None) -> int:
    """Fail running or cancelling jobs that will never finish. Returns the count.

    First those whose worker process is gone from this host (at once, `worker_lost`), then those
    without progress for AIRWEAVE_STUCK_JOB_MINUTES (`stuck`: the fallback for jobs of other hosts).
    """
    swept = sync_jobs_fail_lost()
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=settings.AIRWEAVE_STUCK_JOB_MINUTES)
    stuck = SyncJob.objects.filter(status__in=[S.RUNNING, S.CANCELLING], last_progress_at__lt=cutoff)
    for job in stuck:
        swept += sync_job_transition(
            job, S.FAILED, error=f"no progress for {settings.AIRWEAVE_STUCK_JOB_MINUTES} minutes (worker lost?)",
            error_category="stuck",
        )
    return swept


def cron_next_runs(expression: str, count: int = 3, start=None) -> list:
    """The next `count` times (aware, UTC) `expression` fires after `start` (now).

    Raises ValueError with the message of validate_cron when the expression is not valid cron;
    an empty expression has no runs.
    """
    expression = validate_cron(expression)
    if not expression:
        return []
    runs = croniter(expression, start or timezone.now())
    return [runs.get_next(type(timezone.now())) for _ in range(count)]
