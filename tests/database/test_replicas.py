"""Search reads on a real streaming replica (docs/scaling.md, Read replicas).

A primary and a streaming replica are started from the embedded server's binaries
(tests/database/pg_replica.py); the product's `default` database is pointed at the primary and
`replica_1` at the replica (the socket-folder form of DATABASE_REPLICA_URLS), then the schema is
migrated on the primary and reaches the replica by replication. The tests prove: a search is
served by the replica, writes go to the primary, a search right after a sync finds what the sync
wrote although the replica has not replayed it (read-your-writes), and with the replica stopped
searches still work on the primary.
"""
from __future__ import annotations

import time

import pytest
from django.core.management import call_command
from django.db import connections

from airweave.collections.models import Collection, Entity
from airweave.collections.services import collection_create
from airweave.db_router import replicas_reset, search_connection, search_reads
from airweave.observability.metrics import SEARCH_READS
from airweave.settings import replica_database
from airweave.tenancy.services import organization_get_or_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from search.instant import InstantSearchRequest, search_instant
from search.retrieval import read_snapshot
from tests.database.pg_replica import Cluster

pytestmark = pytest.mark.slow  # a cluster of two servers, the migrations, a model load: about 30-45 s


@pytest.fixture(scope="module")
def cluster():
    servers = Cluster()
    try:
        servers.start()
        servers.wait_for_replica()
        yield servers
    finally:
        servers.stop()


@pytest.fixture(scope="module")
def on_cluster(cluster, django_db_blocker):
    """The product's databases pointed at the cluster for this module; restored afterwards."""
    with django_db_blocker.unblock():
        connections.close_all()
        primary = connections.settings["default"]
        saved = dict(primary)
        primary.update(NAME="postgres", HOST=str(cluster.primary_socket), PORT="")
        replica = replica_database(str(cluster.replica_socket), primary)
        connections.settings["replica_1"] = connections.configure_settings({"default": dict(primary), "replica_1": replica})["replica_1"]
        try:
            call_command("migrate", verbosity=0)
            replicas_reset()
            yield cluster
        finally:
            connections.close_all()
            del connections.settings["replica_1"]
            if hasattr(connections._connections, "replica_1"):
                delattr(connections._connections, "replica_1")
            primary.clear()
            primary.update(saved)


def _on_replica(sql: str, params=()):
    with connections["replica_1"].cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _on_primary(sql: str, params=()):
    with connections["default"].cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else None


def _wait_replayed(lsn: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not _on_replica("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [lsn])[0][0]:
        assert time.monotonic() < deadline, f"the replica did not replay {lsn}"
        time.sleep(0.1)


def _reads(target: str, reason: str) -> float:
    return SEARCH_READS.labels(target, reason)._value.get()


def _search(collection, query: str) -> list[dict]:
    collection = Collection.objects.get(pk=collection.pk)  # as a face loads it: on the primary
    return search_instant(collection=collection, principals=None,
                          request=InstantSearchRequest(query=query, retrieval_strategy="keyword", limit=10)).results


def _sync(collection, folder):
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(folder)}, sync_immediately=False, for_api=False)
    job = sync_job_start(source_connection=connection, force_full_sync=False, enqueue=False)
    return sync_job_run(job_id=job.id)


@pytest.fixture(scope="module")
def synced(on_cluster, tmp_path_factory):
    """A collection whose first sync ran while the replica's replay was paused, then a search
    right after it: (collection, that search's results, reads counted during it)."""
    folder = tmp_path_factory.mktemp("replica-docs")
    (folder / "harbour.md").write_text("# Harbour\n\nThe lighthouse keeper logs every ferry crossing.\n")
    org = organization_get_or_create(name="Replica Org")
    collection = collection_create(organization=org, name="Harbour", readable_id="harbour")
    _wait_replayed(_on_primary("SELECT pg_current_wal_insert_lsn()::text")[0][0])
    _on_replica("SELECT pg_wal_replay_pause()")
    job = _sync(collection, folder)
    assert job.status == "completed", job.error
    before = _reads("primary", "read_your_writes")
    results = _search(collection, "lighthouse ferry")
    counted = _reads("primary", "read_your_writes") - before
    _on_replica("SELECT pg_wal_replay_resume()")
    return Collection.objects.get(pk=collection.pk), results, counted


def test_a_search_right_after_a_sync_finds_what_it_wrote_before_the_replica_replayed_it(synced):
    collection, results, counted = synced
    assert collection.written_lsn  # the primary's WAL position when the job ended
    assert [r["name"] for r in results] == ["harbour.md"]
    assert counted == 1  # served by the primary: the replica had not replayed the sync
    assert Entity.objects.using("default").filter(collection=collection).count() == 1


def test_a_search_is_served_by_the_replica_once_it_replayed_the_sync(synced):
    collection, _, _ = synced
    _wait_replayed(collection.written_lsn)
    with read_snapshot(collection.id):
        assert search_connection().alias == "replica_1"
        with search_connection().cursor() as cur:
            cur.execute("SELECT pg_is_in_recovery()")
            assert cur.fetchone()[0] is True
    # A change made on the primary while the replica's replay is paused (not by a sync, so no
    # position is recorded for it) is invisible to the search: the replica answered it.
    _on_replica("SELECT pg_wal_replay_pause()")
    try:
        _on_primary("UPDATE collections_chunk SET text = 'rewritten on the primary' WHERE collection_id = %s",
                    [collection.id])
        before = _reads("replica", "replica")
        results = _search(collection, "lighthouse ferry")
        assert _reads("replica", "replica") - before == 1
        assert "lighthouse keeper" in results[0]["textual_representation"]
        assert _on_primary("SELECT text FROM collections_chunk WHERE collection_id = %s",
                           [collection.id]) == [("rewritten on the primary",)]
    finally:
        _on_replica("SELECT pg_wal_replay_resume()")


def test_writes_go_to_the_primary_even_inside_a_search(synced):
    collection, _, _ = synced
    _wait_replayed(_on_primary("SELECT pg_current_wal_insert_lsn()::text")[0][0])
    with search_reads() as alias:
        assert alias == "replica_1"
        assert Collection.objects.get(pk=collection.pk).name == "Harbour"  # read on the replica
        Collection.objects.filter(pk=collection.pk).update(name="Harbour (renamed)")  # the replica would refuse it
    assert _on_primary("SELECT name FROM collections_collection WHERE id = %s", [collection.id]) == [
        ("Harbour (renamed)",)]


def test_with_the_replica_stopped_searches_read_the_primary(synced, on_cluster):
    collection, _, _ = synced
    connections["replica_1"].close()
    on_cluster.stop_replica()
    try:
        before = _reads("primary", "replica_down")
        results = _search(collection, "lighthouse ferry")
        assert [r["name"] for r in results] == ["harbour.md"]
        assert _reads("primary", "replica_down") - before == 1
        # Passed over for AIRWEAVE_REPLICA_RETRY_SECONDS: the next search does not try it again.
        with read_snapshot(collection.id):
            assert search_connection().alias == "default"
        assert _reads("primary", "replica_down") - before == 2
    finally:
        on_cluster.start_replica()
        on_cluster.wait_for_replica()
        replicas_reset()
