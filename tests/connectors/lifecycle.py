"""Helpers of the source lifecycle tests: run a job inline, search over REST, read an entity's text.

Every offline source is proven the same way: create → sync → searchable → edit → incremental
sync → updated → delete → sync → gone.
"""
from __future__ import annotations

from airweave.collections.models import Chunk, Entity
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start


def connect(collection, short_name: str, config: dict, credentials: dict | None = None):
    """A connection of `short_name` in `collection`, created as the operator would (no sync yet)."""
    return source_connection_create(collection=collection, short_name=short_name, config=config,
                                    credentials=credentials, sync_immediately=False, for_api=False)


def sync(connection, force_full_sync: bool = False, expect: str = "completed"):
    """Run one job of `connection` in this process; asserts it ends in `expect`."""
    job = sync_job_start(source_connection=connection, force_full_sync=force_full_sync, enqueue=False)
    job = sync_job_run(job_id=job.id)
    assert job.status == expect, (job.status, job.error, job.error_details)
    return job


def counts(job) -> tuple[int, int, int, int]:
    """(inserted, updated, kept, deleted) of a job."""
    return job.entities_inserted, job.entities_updated, job.entities_kept, job.entities_deleted


def search_ids(client, collection, query: str, limit: int = 10, strategy: str = "hybrid") -> list[str]:
    """Original entity ids of an instant search over REST, best first, each once."""
    r = client.post(f"/collections/{collection.readable_id}/search/instant",
                    {"query": query, "limit": limit, "retrieval_strategy": strategy}, format="json")
    assert r.status_code == 200, r.content
    out: list[str] = []
    for result in r.json()["results"]:
        entity_id = result["airweave_system_metadata"]["original_entity_id"]
        if entity_id not in out:
            out.append(entity_id)
    return out


def search_results(client, collection, query: str, limit: int = 10, strategy: str = "hybrid") -> list[dict]:
    r = client.post(f"/collections/{collection.readable_id}/search/instant",
                    {"query": query, "limit": limit, "retrieval_strategy": strategy}, format="json")
    assert r.status_code == 200, r.content
    return r.json()["results"]


def entity_text(connection, entity_id: str) -> str:
    """The indexed text of one entity (its chunks joined)."""
    return "\n".join(Chunk.objects.filter(entity__source_connection=connection, entity__entity_id=entity_id)
                     .order_by("chunk_index").values_list("text", flat=True))


def entity_ids(connection, entity_type: str | None = None) -> set[str]:
    qs = Entity.objects.filter(source_connection=connection)
    if entity_type:
        qs = qs.filter(entity_type=entity_type)
    return set(qs.values_list("entity_id", flat=True))
