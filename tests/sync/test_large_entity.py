"""One large entity neither stalls a batch nor costs the collection hours.

Its chunks embed in slices: the batch's small entities are written first, counters (chunks
embedded, the entity at work) move between the slices, and past AIRWEAVE_MAX_CHUNKS_PER_ENTITY
the rest is left out and counted as truncated on the job.
"""
from __future__ import annotations

from airweave.collections.models import Chunk, Entity
from connectors.services import source_connection_create
from connectors.sync import pipeline
from connectors.sync.services import sync_job_run, sync_job_start


def test_a_large_file_streams_its_progress_and_is_truncated(make_collection, write_files, settings, monkeypatch):
    settings.AIRWEAVE_MAX_CHUNKS_PER_ENTITY = 24
    monkeypatch.setattr(pipeline, "EMBED_SLICE_CHUNKS", 8)
    words = " ".join(f"word{i % 50}" for i in range(6000))  # one line, about 50 chunks of 256 tokens
    files = {f"small-{i}.md": f"# Note {i}\n\nA short note about topic {i}." for i in range(4)}
    root = write_files({**files, "big.txt": words})
    connection = source_connection_create(collection=make_collection(), short_name="local_files",
                                          config={"path": str(root)}, sync_immediately=False, for_api=False)
    seen = []
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id,
                       on_progress=lambda c: seen.append((c.inserted, c.chunks_embedded, c.current_entity)))

    assert job.status == "completed" and job.entities_inserted == 5, job.error
    during = [s for s in seen if s[2] == "big.txt"]
    assert len(during) >= 2, seen  # progress while the large file embeds, slice by slice
    assert all(inserted == 4 for inserted, _, _ in during), seen  # the small files were already written
    assert [embedded for _, embedded, _ in during] == sorted({embedded for _, embedded, _ in during})
    big = Entity.objects.get(source_connection=connection, entity_id="big.txt")
    assert Chunk.objects.filter(entity=big).count() == 24
    truncated = job.error_details["truncated"]
    assert truncated["count"] == 1 and truncated["examples"][0]["entity_id"] == "big.txt"
    assert "the first 24 indexed" in truncated["examples"][0]["reason"]
