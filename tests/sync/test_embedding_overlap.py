"""Embedding overlaps the rest of the sync: it runs on the job's embedding thread, while the job's
own thread writes, lists, converts and chunks; counters, timings and failures stay truthful."""
from __future__ import annotations

import threading

from airweave.collections.models import Chunk, Entity
from airweave.providers.errors import ProviderError
from airweave.providers.local_embeddings import get_local_embedder
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start


def _connection(make_collection, write_files, settings, tmp_path, readable_id: str):
    settings.AIRWEAVE_EMBEDDING_BATCH_SIZE = 2
    root = write_files({f"doc{i}.md": f"# Document {i}\nA short note about subject {i}." for i in range(6)},
                       root=tmp_path / readable_id)
    return source_connection_create(collection=make_collection(readable_id=readable_id), short_name="local_files",
                                    config={"path": str(root)}, sync_immediately=False, for_api=False)


def test_embedding_runs_beside_the_job_thread_and_counts_stay_true(make_collection, write_files, settings,
                                                                   tmp_path, monkeypatch):
    connection = _connection(make_collection, write_files, settings, tmp_path, "overlap")
    embedder = get_local_embedder()
    real_embed, threads = embedder.embed, []

    def recording_embed(texts):
        threads.append(threading.current_thread().name)
        return real_embed(texts)

    monkeypatch.setattr(embedder, "embed", recording_embed)
    written_while = []
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id,
                       on_progress=lambda c: written_while.append((c.inserted, c.chunks_embedded)))

    assert job.status == "completed", job.error
    assert len(threads) == 3 and all(name.startswith("embed-") for name in threads), threads
    assert threading.main_thread().name not in threads
    assert job.entities_inserted == Entity.objects.filter(source_connection=connection).count() == 6
    assert job.chunks_embedded == Chunk.objects.filter(entity__source_connection=connection).count() == 6
    assert not Chunk.objects.filter(entity__source_connection=connection, embedding__isnull=True).exists()
    # The checkpoint after each batch reports it written, the batch after it embedding meanwhile.
    assert written_while[:2] == [(2, 2), (4, 4)], written_while
    assert job.stage_seconds["embedding"] > 0 and job.stage_seconds["writing"] > 0
    assert not [t for t in threading.enumerate() if t.name.startswith("embed-")]  # the thread is gone


def test_an_embedding_failure_on_its_thread_fails_the_job_clearly(make_collection, write_files, settings,
                                                                 tmp_path, monkeypatch):
    connection = _connection(make_collection, write_files, settings, tmp_path, "overlap-fails")
    embedder = get_local_embedder()
    real_embed, calls = embedder.embed, []

    def failing_second_time(texts):
        calls.append(len(texts))
        if len(calls) == 2:
            raise ProviderError("the embedding endpoint answered 503", retryable=True, status=503)
        return real_embed(texts)

    monkeypatch.setattr(embedder, "embed", failing_second_time)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)

    assert job.status == "failed" and job.error_category == "embedding_provider"
    assert "503" in job.error
    # Only the batch embedded before the failure is written, and counted.
    assert job.entities_inserted == Entity.objects.filter(source_connection=connection).count() == 2
    assert not [t for t in threading.enumerate() if t.name.startswith("embed-")]
