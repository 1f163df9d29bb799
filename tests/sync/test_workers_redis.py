"""Workers on several machines: with REDIS_URL, django-q2 uses the Redis broker, and two real
`manage.py qcluster` processes (two worker processes each, the default) share the jobs of many
connections, each job run by exactly one of them; a long sync of one connection does not hold
back the others. Redis DB 7 of 127.0.0.1:6379 is the test's own (flushed before and after)."""
from __future__ import annotations

import re
import time
import uuid

import pytest

from airweave.collections.models import SyncJob
from airweave.collections.services import collection_create
from airweave.tenancy.services import organization_get_or_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_cancel, sync_job_start
from tests.processes import manage, start_worker

redis = pytest.importorskip("redis")
REDIS_URL = "redis://127.0.0.1:6379/7"
pytestmark = pytest.mark.django_db(transaction=True)
# The cluster tests are slow (make test-all); the broker choice is checked in the default run.
FINAL = ("completed", "failed", "cancelled")


@pytest.fixture(scope="module")
def redis_db():
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis at {REDIS_URL}: {exc}")
    client.flushdb()
    yield client
    client.flushdb()


@pytest.fixture
def clusters(redis_db):
    """Two qcluster processes on the Redis broker (as on two machines)."""
    workers = [start_worker(REDIS_URL=REDIS_URL, AIRWEAVE_WORKERS="2") for _ in range(2)]
    yield workers
    for worker in workers:
        worker.stop()


def enqueue(job: SyncJob) -> None:
    """Hand the job to the Redis broker, as sync_job_start does in a server with REDIS_URL (this test
    process runs tasks inline, so its own settings' broker is not the one the workers read)."""
    from django_q.brokers.redis_broker import Redis as RedisBroker
    from django_q.tasks import async_task

    broker = RedisBroker(list_key="airweave")
    broker.connection = redis.Redis.from_url(REDIS_URL)
    async_task("connectors.sync.tasks.run_sync_job", str(job.id), task_name=f"sync-job-{job.id}",
               group=f"sync-{job.source_connection_id}", broker=broker, sync=False)


def connection_with_files(collection, root, name: str, files: int):
    folder = root / name
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"note-{i}.md").write_text(f"# Note {i} of {name}\nPlain text number {i} about {name}.\n")
    return source_connection_create(collection=collection, short_name="local_files", config={"path": str(folder)},
                                    sync_immediately=False, for_api=False)


def wait_for(predicate, timeout: float, clusters, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if any(c.process.poll() is not None for c in clusters):
            break
        time.sleep(0.5)
    pytest.fail(f"{what} within {timeout} s\n" + "\n---\n".join(c.output()[-3000:] for c in clusters))


def processed(cluster) -> list[str]:
    """The sync jobs a cluster's workers started, from its log (django-q2 logs each task it processes)."""
    return re.findall(r"processing \[?sync-job-([0-9a-f-]{36})", cluster.output())


@pytest.fixture
def collection():
    organization = organization_get_or_create(name=f"workers-{uuid.uuid4().hex[:8]}")
    return collection_create(organization=organization, name="Workers", readable_id="workers")


def test_settings_pick_the_redis_broker():
    code = ("from django_q.brokers import get_broker; b = get_broker(); "
            "print(type(b).__name__, b.connection.connection_pool.connection_kwargs.get('db'))")
    with_redis = manage("shell", "-c", code, REDIS_URL=REDIS_URL)
    assert with_redis.returncode == 0, with_redis.stderr
    assert with_redis.stdout.strip().splitlines()[-1].split() == ["Redis", "7"]
    without = manage("shell", "-c", "from django_q.brokers import get_broker; print(type(get_broker()).__name__)")
    assert without.stdout.strip().splitlines()[-1] == "ORM"


@pytest.mark.slow  # about 80 s: two clusters of two worker processes each load the embedding model
def test_two_clusters_share_the_jobs_and_never_run_one_twice(clusters, collection, tmp_path):
    connections = [connection_with_files(collection, tmp_path, f"folder-{i}", 2) for i in range(8)]
    jobs = [sync_job_start(source_connection=c, enqueue=False) for c in connections]
    for job in jobs:
        enqueue(job)
    ids = {str(job.id) for job in jobs}
    wait_for(lambda: SyncJob.objects.filter(id__in=ids, status__in=FINAL).count() == len(ids), 240, clusters,
             "the 8 jobs did not all finish")
    assert set(SyncJob.objects.filter(id__in=ids).values_list("status", flat=True)) == {"completed"}
    assert all(job.entities_inserted == 2 for job in SyncJob.objects.filter(id__in=ids))
    runs = [processed(cluster) for cluster in clusters]
    assert sorted(runs[0] + runs[1]) == sorted(ids), "each job is processed once, by one cluster"
    assert runs[0] and runs[1], f"both clusters took jobs: {[len(r) for r in runs]}"


@pytest.mark.slow  # about 80 s
def test_a_long_sync_does_not_hold_back_the_others(clusters, collection, tmp_path):
    long_connection = connection_with_files(collection, tmp_path, "large", 3000)
    short = [connection_with_files(collection, tmp_path, f"small-{i}", 1) for i in range(5)]
    long_job = sync_job_start(source_connection=long_connection, enqueue=False)
    enqueue(long_job)
    wait_for(lambda: SyncJob.objects.filter(id=long_job.id, status="running").exists(), 120, clusters,
             "the long job did not start")
    jobs = [sync_job_start(source_connection=c, enqueue=False) for c in short]
    for job in jobs:
        enqueue(job)
    ids = [job.id for job in jobs]
    try:
        wait_for(lambda: SyncJob.objects.filter(id__in=ids, status="completed").count() == len(ids), 180, clusters,
                 "the short jobs did not complete while the long one ran")
        long_job.refresh_from_db()
        assert long_job.status == "running", "the short jobs finished while the long sync still ran"
    finally:
        sync_job_cancel(job=SyncJob.objects.get(id=long_job.id))
    wait_for(lambda: SyncJob.objects.filter(id=long_job.id, status__in=FINAL).exists(), 120, clusters,
             "the long job did not stop after its cancel")
