"""The SyncJob state machine (connectors/sync/jobs.py) and how the pipeline drives it:
allowed and refused transitions, idempotency, events, cancel (pending and running), cursor
saving, one active job per sync, and source errors."""
from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from airweave.collections.models import Entity, SourceConnection, SyncCursor, SyncJob
from airweave.events import sync_job_group
from connectors.services import source_connection_create
from connectors.sync.jobs import SyncAlreadyRunning, sync_job_create, sync_job_transition
from connectors.sync.services import sync_job_cancel, sync_job_run, sync_job_start

S = SyncJob.Status
STATES = [S.PENDING, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLING, S.CANCELLED]
# docs/architecture.md, The sync data flow: pending → running → completed | failed | cancelling → cancelled. A job may also
# fail before it starts (pending → failed) or while it is being cancelled (cancelling → failed),
# and a pending job may be asked to cancel.
ALLOWED = {
    (S.PENDING, S.RUNNING),
    (S.RUNNING, S.COMPLETED),
    (S.RUNNING, S.FAILED),
    (S.RUNNING, S.CANCELLING),
    (S.PENDING, S.CANCELLING),
    (S.PENDING, S.FAILED),
    (S.CANCELLING, S.CANCELLED),
    (S.CANCELLING, S.FAILED),
}
TARGETS = [S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLING, S.CANCELLED]


@pytest.fixture
def connection(make_collection, write_files):
    root = write_files({"a.md": "# Alpha\nApples and apricots.", "b.md": "# Beta\nBananas and blueberries."})
    return source_connection_create(collection=make_collection(), short_name="local_files",
                                    config={"path": str(root)}, sync_immediately=False, for_api=False)


@pytest.fixture
def job(connection):
    return sync_job_create(sync=connection.sync)


def force_status(job, status):
    SyncJob.objects.filter(pk=job.pk).update(status=status)
    job.refresh_from_db()


def snapshot(job):
    row = SyncJob.objects.get(pk=job.pk)
    return (row.status, row.modified_at, row.started_at, row.completed_at, row.error)


@pytest.mark.parametrize("source, target", list(itertools.product(STATES, TARGETS)),
                         ids=[f"{a}->{b}" for a, b in itertools.product(STATES, TARGETS)])
def test_transition_table(job, source, target):
    force_status(job, source)
    before = snapshot(job)
    changed = sync_job_transition(job, target, error="boom" if target == S.FAILED else "")
    if (source, target) in ALLOWED:
        assert changed is True
        assert job.status == target
        assert SyncJob.objects.get(pk=job.pk).status == target
    else:
        assert changed is False
        assert snapshot(job) == before  # nothing changed, not even modified_at
        assert job.status == source  # the instance is refreshed to what the row says


@pytest.mark.parametrize("target", [S.PENDING, S.CREATED])
def test_transition_into_pending_or_created_is_refused(job, target):
    force_status(job, S.RUNNING)
    assert sync_job_transition(job, target) is False
    assert SyncJob.objects.get(pk=job.pk).status == S.RUNNING


def test_jobs_are_created_pending(job):
    assert job.status == S.PENDING
    assert job.started_at is None and job.completed_at is None


def test_timestamps_and_fields_written_by_transitions(job):
    assert sync_job_transition(job, S.RUNNING)
    assert job.started_at is not None and job.completed_at is None and job.last_progress_at is not None
    assert sync_job_transition(job, S.COMPLETED, entities_inserted=7)
    assert job.completed_at is not None and job.completed_at >= job.started_at
    assert job.entities_inserted == 7
    assert job.duration_seconds is not None and job.duration_seconds >= 0


def test_transitions_are_idempotent(job):
    assert sync_job_transition(job, S.RUNNING) is True
    started = job.started_at
    assert sync_job_transition(job, S.RUNNING) is False
    assert job.started_at == started
    assert sync_job_transition(job, S.FAILED, error="first") is True
    completed = job.completed_at
    assert sync_job_transition(job, S.FAILED, error="second") is False
    job.refresh_from_db()
    assert (job.status, job.error, job.completed_at) == (S.FAILED, "first", completed)


def test_a_stale_instance_cannot_move_a_job_backwards(job):
    stale = SyncJob.objects.get(pk=job.pk)
    assert sync_job_transition(job, S.RUNNING)
    assert sync_job_transition(job, S.COMPLETED)
    assert stale.status == S.PENDING  # the stale copy believes it is still pending
    assert sync_job_transition(stale, S.RUNNING) is False
    assert SyncJob.objects.get(pk=job.pk).status == S.COMPLETED


def test_connection_status_follows_the_job(connection, job):
    sync_job_transition(job, S.RUNNING)
    assert SourceConnection.objects.get(pk=connection.pk).status == "syncing"
    sync_job_transition(job, S.FAILED, error="it broke", error_category="source_error")
    c = SourceConnection.objects.get(pk=connection.pk)
    assert (c.status, c.error_category, c.error_message) == ("error", "source_error", "it broke")
    second = sync_job_create(sync=connection.sync)
    sync_job_transition(second, S.RUNNING)
    sync_job_transition(second, S.COMPLETED)
    c = SourceConnection.objects.get(pk=connection.pk)
    assert (c.status, c.error_category, c.error_message) == ("active", "", "")


def test_each_transition_emits_one_event(job):
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(sync_job_group(job.id), channel)

    def received():
        return async_to_sync(layer.receive)(channel)["event"]

    assert sync_job_transition(job, S.RUNNING)
    event = received()
    assert event["type"] == "progress" and event["status"] == "running"
    assert sync_job_transition(job, S.RUNNING) is False  # refused: no event
    assert sync_job_transition(job, S.COMPLETED, entities_inserted=3)
    event = received()
    assert event["type"] == "sync_complete"
    assert event["job_id"] == str(job.id) and event["final_status"] == "completed"
    assert event["is_complete"] is True and event["is_failed"] is False
    assert event["final_counts"]["inserted"] == 3
    for key in ("seq", "ts"):
        assert key in event


# --- one active job per sync ---

def test_only_one_active_job_per_sync(connection, job):
    with pytest.raises(SyncAlreadyRunning):
        sync_job_create(sync=connection.sync)
    with pytest.raises(SyncAlreadyRunning):
        sync_job_start(source_connection=connection, enqueue=False)
    for active in (S.RUNNING, S.CANCELLING):
        force_status(job, active)
        with pytest.raises(SyncAlreadyRunning):
            sync_job_create(sync=connection.sync)
    assert SyncJob.objects.filter(sync=connection.sync).count() == 1
    for final in (S.COMPLETED, S.FAILED, S.CANCELLED):
        force_status(job, final)
        new = sync_job_create(sync=connection.sync)
        assert new.status == S.PENDING
        new.delete()


def test_jobs_of_different_syncs_do_not_block_each_other(connection, make_collection, write_files, tmp_path, job):
    root = write_files({"c.md": "gamma"}, root=tmp_path / "other")
    other = source_connection_create(collection=connection.collection, short_name="local_files",
                                     config={"path": str(root)}, sync_immediately=False, for_api=False)
    assert sync_job_create(sync=other.sync).status == S.PENDING


# --- cancel ---

def test_cancel_pending_job_is_cancelled_at_once(connection, job):
    job = sync_job_cancel(job=job)
    assert job.status == S.CANCELLED
    assert job.completed_at is not None
    assert sync_job_cancel(job=job).status == S.CANCELLED  # idempotent
    # A worker picking the cancelled job up later does nothing.
    assert sync_job_run(job_id=job.id).status == S.CANCELLED
    assert not Entity.objects.filter(source_connection=connection).exists()
    assert SourceConnection.objects.get(pk=connection.pk).status != "syncing"


def test_cancel_running_job_asks_it_to_stop(job):
    sync_job_transition(job, S.RUNNING)
    job = sync_job_cancel(job=job)
    assert job.status == S.CANCELLING
    assert job.completed_at is None
    assert sync_job_cancel(job=job).status == S.CANCELLING  # idempotent
    assert sync_job_transition(job, S.CANCELLED)


@pytest.mark.parametrize("final", [S.COMPLETED, S.FAILED, S.CANCELLED])
def test_cancel_finished_job_changes_nothing(job, final):
    force_status(job, final)
    assert sync_job_cancel(job=job).status == final


@pytest.fixture
def many_files(make_collection, write_files, settings, tmp_path):
    settings.AIRWEAVE_EMBEDDING_BATCH_SIZE = 2
    root = write_files({f"doc{i}.md": f"# Document {i}\nShort note number {i}." for i in range(8)},
                       root=tmp_path / "many")
    connection = source_connection_create(collection=make_collection(readable_id="many"), short_name="local_files",
                                          config={"path": str(root)}, sync_immediately=False, for_api=False)
    return connection


def test_cancel_during_run_stops_at_the_next_batch_boundary(many_files):
    connection = many_files
    SyncCursor.objects.create(sync=connection.sync, data={"marker": "from an earlier run"})
    job = sync_job_start(source_connection=connection, enqueue=False)
    seen = []

    def on_progress(counters):
        seen.append(counters.inserted)
        if len(seen) == 1:
            assert sync_job_cancel(job=SyncJob.objects.get(pk=job.id)).status == S.CANCELLING

    job = sync_job_run(job_id=job.id, on_progress=on_progress)
    assert job.status == S.CANCELLED
    assert seen == [2]  # stopped right after the first batch of 2
    assert job.entities_inserted == 2
    assert job.completed_at is not None
    assert Entity.objects.filter(source_connection=connection).count() == 2
    # The cursor is not saved by a cancelled job.
    assert SyncCursor.objects.get(sync=connection.sync).data == {"marker": "from an earlier run"}
    assert SourceConnection.objects.get(pk=connection.pk).status == "active"

    # The next run picks up the rest, flushing its counters to the job row after every batch,
    # and saves the cursor.
    job = sync_job_start(source_connection=connection, enqueue=False)
    flushed = []
    job = sync_job_run(job_id=job.id, on_progress=lambda counters: flushed.append(
        SyncJob.objects.get(pk=job.id).entities_inserted))
    assert job.status == S.COMPLETED
    assert (job.entities_inserted, job.entities_kept) == (6, 2)
    assert flushed[:3] == [2, 4, 6]
    assert SyncCursor.objects.get(sync=connection.sync).data == {}


# --- cursor ---

def test_cursor_is_saved_on_completion(connection, job):
    assert not SyncCursor.objects.filter(sync=connection.sync).exists()
    job = sync_job_run(job_id=job.id)
    assert job.status == S.COMPLETED
    assert SyncCursor.objects.filter(sync=connection.sync).exists()


def test_cursor_is_not_saved_on_failure(connection, job):
    SyncCursor.objects.create(sync=connection.sync, data={"marker": 1})
    shutil.rmtree(connection.config["path"])
    job = sync_job_run(job_id=job.id)
    assert job.status == S.FAILED
    assert SyncCursor.objects.get(sync=connection.sync).data == {"marker": 1}


# --- source errors ---

def test_source_error_fails_the_job_with_its_category(connection, job):
    root = Path(connection.config["path"])
    shutil.rmtree(root)
    job = sync_job_run(job_id=job.id)
    assert job.status == S.FAILED
    assert job.error_category == "config_error"
    assert str(root) in job.error
    assert job.completed_at is not None
    c = SourceConnection.objects.get(pk=connection.pk)
    assert c.status == "error"
    assert c.error_category == "config_error" and "does not exist" in c.error_message

    # Once the folder is back, the next job completes and clears the error.
    root.mkdir()
    (root / "a.md").write_text("# Alpha\nBack again.", encoding="utf-8")
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert job.status == S.COMPLETED
    c.refresh_from_db()
    assert (c.status, c.error_category, c.error_message) == ("active", "", "")


def test_completed_job_counts(connection, job):
    job = sync_job_run(job_id=job.id)
    assert job.status == S.COMPLETED
    assert (job.entities_inserted, job.entities_updated, job.entities_deleted, job.entities_kept,
            job.entities_skipped, job.entities_failed) == (2, 0, 0, 0, 0, 0)
    assert job.entities_encountered == {"LocalFileEntity": 2}
    assert job.error == "" and job.error_details is None
