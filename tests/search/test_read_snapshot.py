"""A search sees one state of the index: an entity re-indexed while a search runs is found in
exactly one whole version, never vanished between the ranking and the hydration of its page.

The re-index is committed from another database connection at the moment that used to lose the
entity: after the legs ranked the old chunks, before the page was loaded.
"""
from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection as db_connection

from airweave.collections.models import Chunk
from airweave.collections.services import ChunkRecord, EntityRecord, collection_create, entities_write
from airweave.tenancy.models import Organization
from connectors.services import source_connection_create
from search import instant
from search.instant import InstantSearchRequest, search_instant
from search.retrieval import read_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def _record(version: str, chunks: int = 3) -> EntityRecord:
    return EntityRecord(
        entity_id="ledger.md", entity_type="LocalFileEntity", name="Ledger", content_hash=version,
        chunks=[ChunkRecord(text=f"The zqledger keeps {version} entries, part {i}.", embedding=[0.1] * 384)
                for i in range(chunks)])


@pytest.fixture
def ledger(tmp_path):
    org = Organization.objects.create(name=f"snapshot-{uuid.uuid4().hex[:8]}")
    collection = collection_create(organization=org, name="Ledger", readable_id="ledger")
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(tmp_path)}, sync_immediately=False, for_api=False)
    entities_write(source_connection=connection, sync_id=connection.sync.id, sync_job_id=None,
                   records=[_record("versionone")])
    yield connection
    org.delete()


def _reindex_elsewhere(connection, version: str) -> None:
    """Replace the entity's chunks from another thread, so on another database connection, and commit."""
    def write():
        try:
            entities_write(source_connection=connection, sync_id=connection.sync.id, sync_job_id=None,
                           records=[_record(version, chunks=4)])
        finally:
            db_connection.close()
    thread = threading.Thread(target=write)
    thread.start()
    thread.join()


def test_an_entity_reindexed_between_ranking_and_hydration_is_found_in_its_old_version(ledger, monkeypatch):
    real_hydrate = instant.hydrate

    def hydrate_after_a_reindex(hits):
        _reindex_elsewhere(ledger, "versiontwo")
        return real_hydrate(hits)

    monkeypatch.setattr(instant, "hydrate", hydrate_after_a_reindex)
    results = search_instant(collection=ledger.collection, principals=None, request=InstantSearchRequest(
        query="zqledger", retrieval_strategy="keyword", limit=50)).results

    assert Chunk.objects.filter(entity__entity_id="ledger.md").count() == 4  # the re-index committed
    texts = [r["textual_representation"] for r in results]
    assert len(texts) == 3 and all("versionone" in t for t in texts), texts
    # The next search sees the new version whole.
    monkeypatch.setattr(instant, "hydrate", real_hydrate)
    after = search_instant(collection=ledger.collection, principals=None, request=InstantSearchRequest(
        query="zqledger", retrieval_strategy="keyword", limit=50)).results
    assert len(after) == 4 and all("versiontwo" in r["textual_representation"] for r in after)


def test_read_snapshot_keeps_the_first_statements_view_and_is_read_only(ledger):
    with read_snapshot():
        before = Chunk.objects.filter(entity__entity_id="ledger.md").count()
        _reindex_elsewhere(ledger, "versiontwo")
        assert Chunk.objects.filter(entity__entity_id="ledger.md").count() == before == 3
        with db_connection.cursor() as cur:
            cur.execute("SHOW transaction_isolation")
            assert cur.fetchone()[0] == "repeatable read"
            cur.execute("SHOW transaction_read_only")
            assert cur.fetchone()[0] == "on"
    assert Chunk.objects.filter(entity__entity_id="ledger.md").count() == 4
