"""Cron schedules of syncs (django-q2 CRON schedules) and the stuck-job sweeper."""
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from airweave.collections.models import SyncJob
from connectors.services import SourceConnectionError, source_connection_create, source_connection_update
from connectors.sync.jobs import sync_job_create, sync_job_transition
from connectors.sync.schedules import SWEEPER_NAME, ensure_sweeper_schedule, sync_jobs_sweep_stuck
from connectors.sync.workers import current_worker, this_host
from connectors.sync.tasks import run_scheduled_sync


@pytest.fixture
def connection(make_collection, write_files):
    root = write_files({"a.md": "Alpha document about scheduling."})
    return source_connection_create(collection=make_collection(), short_name="local_files", config={"path": str(root)},
                                    cron_schedule="0 */6 * * *", sync_immediately=False, for_api=False)


def test_cron_schedule_creates_a_django_q_schedule(connection):
    schedule = Schedule.objects.get(name=f"sync-{connection.sync.id}")
    assert schedule.schedule_type == Schedule.CRON
    assert schedule.cron == "0 */6 * * *"
    connection.sync.refresh_from_db()
    assert connection.sync.next_run_at is not None and connection.sync.next_run_at > timezone.now()


def test_clearing_the_cron_removes_the_schedule(connection):
    source_connection_update(source_connection=connection, schedule={"cron": None})
    assert not Schedule.objects.filter(name=f"sync-{connection.sync.id}").exists()


def test_invalid_cron_is_refused(make_collection, write_files):
    root = write_files({"a.md": "x"})
    with pytest.raises(SourceConnectionError) as info:
        source_connection_create(collection=make_collection(), short_name="local_files", config={"path": str(root)},
                                 cron_schedule="every day", sync_immediately=False, for_api=False)
    assert info.value.field == "schedule.cron"
    assert "0 */6 * * *" in str(info.value)


def test_scheduled_run_syncs_and_skips_when_already_running(connection):
    assert run_scheduled_sync(str(connection.sync.id)) == "completed"
    sync_job_create(sync=connection.sync)
    assert run_scheduled_sync(str(connection.sync.id)) == "already running"


def test_sweeper_fails_jobs_without_progress(connection, settings):
    settings.AIRWEAVE_STUCK_JOB_MINUTES = 30
    job = sync_job_create(sync=connection.sync)
    sync_job_transition(job, SyncJob.Status.RUNNING)
    assert sync_jobs_sweep_stuck() == 0
    SyncJob.objects.filter(pk=job.pk).update(last_progress_at=timezone.now() - timedelta(minutes=31))
    assert sync_jobs_sweep_stuck() == 1
    job.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "stuck")


def test_sweeper_schedule_exists_after_migrate(db):
    assert Schedule.objects.filter(name=SWEEPER_NAME, func="connectors.sync.tasks.sweep_stuck_jobs").exists()


def test_the_sweepers_interval_is_a_setting(db, settings):
    settings.AIRWEAVE_SWEEP_MINUTES = 3
    ensure_sweeper_schedule()
    assert Schedule.objects.get(name=SWEEPER_NAME).minutes == 3


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _running_job(connection, **worker):
    job = sync_job_create(sync=connection.sync)
    sync_job_transition(job, SyncJob.Status.RUNNING, **worker)
    return job


def test_a_running_job_records_its_worker(connection):
    job = _running_job(connection)
    assert (job.worker_host, job.worker_pid) == (this_host(), os.getpid())
    assert abs(job.worker_started - current_worker()["worker_started"]) < 1


def test_a_job_whose_worker_is_gone_fails_at_the_next_sweep_at_once(connection):
    job = _running_job(connection, worker_pid=_dead_pid())
    assert sync_jobs_sweep_stuck() == 1  # no time window: the process is gone
    job.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "worker_lost")
    assert f"pid {job.worker_pid} on {this_host()}" in job.error


def test_a_pid_now_held_by_a_later_process_is_a_lost_worker(connection):
    started = current_worker()["worker_started"]
    job = _running_job(connection, worker_started=started - 3600)  # this pid, an hour before this process
    assert sync_jobs_sweep_stuck() == 1
    job.refresh_from_db()
    assert job.error_category == "worker_lost"


@pytest.mark.parametrize("worker", [{}, {"worker_host": "another-host", "worker_pid": 1}])
def test_a_living_worker_or_one_of_another_host_keeps_its_job(connection, worker):
    job = _running_job(connection, **worker)
    assert sync_jobs_sweep_stuck() == 0
    job.refresh_from_db()
    assert job.status == "running"


def test_a_job_of_a_dead_worker_does_not_block_the_next_sync(connection):
    lost = _running_job(connection, worker_pid=_dead_pid())
    job = sync_job_create(sync=connection.sync)  # before: SyncAlreadyRunning (409) until the sweeper's window
    lost.refresh_from_db()
    assert (lost.status, lost.error_category, job.status) == ("failed", "worker_lost", "pending")


@pytest.mark.parametrize("cron", ["0 0 31 2 *", "* * * * * * *"])
def test_cron_that_never_fires_or_has_seconds_is_refused(make_collection, write_files, cron):
    with pytest.raises(SourceConnectionError):
        source_connection_create(collection=make_collection(), short_name="local_files",
                                 config={"path": str(write_files({"a.md": "x"}))}, cron_schedule=cron,
                                 sync_immediately=False, for_api=False)
