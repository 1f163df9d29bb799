"""Drill 1: the worker is killed with SIGKILL in the middle of a sync of 300 files.

A real `manage.py qcluster` runs the sync through the product's pipeline; at the kill point
(listing, embedding or writing, each after two batches are written) the worker process is
killed with SIGKILL. The cluster replaces the dead worker, and the new worker's sweep fails the
job at once (`worker_lost`, naming the dead pid) — the job never stays `running`. The next sync,
run by the worker through the product's own task, completes, and the index then equals a clean
sync's: same entities, same chunks per entity, no duplicates, no orphan chunks, none missing.
"""
from __future__ import annotations

import json
import os
import signal
import time
import uuid

import pytest
from django_q.tasks import async_task

from airweave.collections.models import Entity, SourceConnection, SyncJob
from airweave.collections.services import collection_create
from airweave.tenancy.models import Organization
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.drills.corpus import write_corpus
from tests.drills.index_checks import index_state
from tests.processes import start_worker

FILES, BATCH = 300, 64
# How long a killed worker's job may stay `running`: the cluster respawns the worker within a
# second and the new worker sweeps as it starts (loading Django takes a few seconds on a busy machine).
SWEEP_WINDOW_SECONDS = 60


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("drill-corpus"), FILES)


@pytest.fixture(scope="module")
def worker(django_db_setup, django_db_blocker, corpus):
    """One qcluster for the module (each kill takes one of its worker processes, which it replaces)."""
    process = start_worker(AIRWEAVE_LOCAL_ROOTS=str(corpus), AIRWEAVE_EMBEDDING_BATCH_SIZE=str(BATCH))
    yield process
    log = process.stop()
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="module")
def clean_index(django_db_blocker, corpus):
    """What a clean sync of the corpus indexes: {entity_id: [chunk texts]} (run in this process)."""
    with django_db_blocker.unblock():
        org = Organization.objects.create(name=f"drill-clean-{uuid.uuid4().hex[:8]}")
        collection = collection_create(organization=org, name="Clean", readable_id="clean")
        connection = source_connection_create(collection=collection, short_name="local_files",
                                              config={"path": str(corpus)}, sync_immediately=False, for_api=False)
        job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
        assert job.status == "completed", job.error
        state = index_state(connection)
        org.delete()
    assert len(state) == FILES
    return state


def _wait(predicate, timeout: float, what: str, worker):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"{what} within {timeout} s; worker log:\n{worker.output()[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("stage, after", [("listing", 2 * BATCH + 10), ("embedding", 3), ("writing", 3)])
def test_a_worker_killed_mid_sync_fails_its_job_and_the_next_sync_converges(
        transactional_db, worker, corpus, clean_index, tmp_path, stage, after):
    org = Organization.objects.create(name=f"drill-{stage}-{uuid.uuid4().hex[:8]}")
    collection = collection_create(organization=org, name="Drill", readable_id="drill")
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(corpus)}, sync_immediately=False, for_api=False)
    job = sync_job_start(source_connection=connection, enqueue=False)
    marker = tmp_path / "held.json"
    async_task("tests.drills.faults.run_sync_job_until", str(job.id), stage, after, str(marker), sync=False)

    held = json.loads(_wait(lambda: marker.exists() and marker.read_text(), 180, f"the {stage} point", worker))
    job.refresh_from_db()
    assert (job.status, job.worker_pid) == ("running", held["pid"])
    # Whole batches are written before the kill point: two at embedding and writing; at listing one or two,
    # as the job thread may list the next batch while the previous one still embeds (docs/embeddings.md).
    written = job.entities_inserted
    assert written % BATCH == 0 and (BATCH if stage == "listing" else 2 * BATCH) <= written <= 2 * BATCH, written
    os.kill(held["pid"], signal.SIGKILL)

    failed = _wait(lambda: SyncJob.objects.filter(pk=job.pk, status="failed").first(), SWEEP_WINDOW_SECONDS,
                   "the killed worker's job failed", worker)
    assert failed.error_category == "worker_lost" and f"pid {held['pid']}" in failed.error, failed.error
    connection.refresh_from_db()
    assert connection.status == SourceConnection.Status.ERROR
    # What the dead worker committed is whole: its written batches, each entity with all its chunks.
    partial = index_state(connection)
    assert len(partial) == written and all(partial[e] == clean_index[e] for e in partial)

    again = sync_job_start(source_connection=connection, enqueue=False)
    async_task("connectors.sync.tasks.run_sync_job", str(again.id), sync=False)
    done = _wait(lambda: SyncJob.objects.filter(pk=again.pk, status__in=SyncJob.FINAL_STATUSES).first(), 300,
                 "the next sync finished", worker)
    assert done.status == "completed", done.error
    assert (done.entities_inserted, done.entities_kept, done.entities_deleted) == (FILES - written, written, 0)
    assert index_state(connection) == clean_index
    assert Entity.objects.filter(source_connection=connection).count() == FILES
    connection.refresh_from_db()
    assert connection.status == SourceConnection.Status.ACTIVE
