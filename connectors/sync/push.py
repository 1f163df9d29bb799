"""The push service: a client's batch of documents written through the sync pipeline.

    documents_push(collection=..., documents=[PushDocument, ...], delete_ids=[...]) -> SyncJob

Each call is one sync job of the collection's push connection (made on the first push), run in
the caller's process by `SyncPipeline` with a `PushSource` holding the documents: the content
hash decides insert / update / keep exactly as in any sync, empty documents are skipped with a
reason, and `delete_ids` are deleted (ids the collection does not hold are ignored). Pushes to
one collection are serialized by a PostgreSQL advisory lock, so two concurrent pushes wait for
each other instead of racing; a job of the connection started otherwise (a run) answers
SyncAlreadyRunning.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection as db_connection
from django.db import transaction

from airweave.collections.models import Collection, SourceConnection, SyncJob
from connectors.base import Breadcrumb
from connectors.sources.push import PushDocumentEntity, PushSource
from connectors.sync.jobs import sync_job_create
from connectors.sync.pipeline import SyncPipeline

PUSH_SHORT_NAME = "push"


@dataclass
class PushDocument:
    """One document of a push request, already validated by the caller (the API serializer)."""

    id: str
    text: str
    name: str = ""
    breadcrumbs: list[dict] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    web_url: str = ""
    url: str = ""
    metadata: dict = field(default_factory=dict)
    viewers: list[str] = field(default_factory=list)
    is_public: bool = True


def push_connection_get_or_create(*, collection: Collection, created_by=None) -> SourceConnection:
    """The collection's push connection (its oldest one), created on first use."""
    from connectors.services import source_connection_create

    with transaction.atomic():
        Collection.objects.select_for_update().filter(pk=collection.pk).first()  # one creator at a time
        existing = (SourceConnection.objects.filter(collection=collection, short_name=PUSH_SHORT_NAME)
                    .select_related("sync", "collection").order_by("created_at").first())
        if existing:
            return existing
        return source_connection_create(collection=collection, short_name=PUSH_SHORT_NAME, name="Push API",
                                        sync_immediately=False, created_by=created_by, for_api=False)


def documents_push(*, collection: Collection, documents: list[PushDocument], delete_ids: list[str],
                   created_by=None) -> SyncJob:
    """Upsert `documents` and delete `delete_ids` in `collection`; returns the finished job.

    Raises SyncAlreadyRunning when a job of the push connection started otherwise is active.
    """
    connection = push_connection_get_or_create(collection=collection, created_by=created_by)
    entities = [_entity(d) for d in documents]
    lock = int.from_bytes(hashlib.sha256(f"push:{connection.id}".encode()).digest()[:8], "big", signed=True)
    with db_connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock])
    try:
        job = sync_job_create(sync=connection.sync)
        job.source_connection = connection
        source = PushSource(connection.config, documents=entities, delete_ids=list(delete_ids))
        return SyncPipeline(job, source=source).run()
    finally:
        with db_connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [lock])


def _entity(d: PushDocument) -> PushDocumentEntity:
    return PushDocumentEntity(
        entity_id=d.id, name=d.name or d.id,
        breadcrumbs=[Breadcrumb(b["entity_id"], b.get("name") or b["entity_id"], b.get("entity_type") or "PushDocument")
                     for b in d.breadcrumbs],
        created_at=d.created_at, updated_at=d.updated_at, web_url=d.web_url, url=d.url,
        raw_source_fields=dict(d.metadata), access_viewers=list(d.viewers), access_is_public=d.is_public,
        text=d.text,
    )
