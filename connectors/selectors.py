"""Reads of source connections that need the source registry or the credential store.

`airweave.collections.selectors` reads the data model alone; what a face shows of a source
connection also needs its source's declaration (is it federated?) and its decrypted auth state
(`connectors.authorization.auth_summary`), which live here, one layer up. Each selector answers
plain data (dicts of JSON-ready values and datetimes) in a fixed number of queries, so
serializers only shape it.
"""
from __future__ import annotations

from airweave.collections import selectors
from airweave.collections.models import SourceConnection, SyncJob
from connectors.authorization import auth_summary
from connectors.registry import get_source


def source_connection_federates(connection: SourceConnection) -> bool:
    """Whether the connection is searched at query time (its source federates with this config).

    False for a source that is not installed on this server. No query.
    """
    try:
        return get_source(connection.short_name).federates(connection.config or {})
    except KeyError:
        return False


def source_connection_detail(*, connection: SourceConnection, principals: list[str] | None = None) -> dict:
    """The SourceConnection object of docs/api.md for one connection, as plain data. 3 queries.

    `connection` comes from `selectors.source_connection_get` (its collection and sync joined).
    `sync` holds exact run counts over every job and the last job; entity counts cover the
    entities `principals` may see (None: all). No secret is included.
    """
    jobs = selectors.sync_job_list(source_connection=connection, limit=1)
    run_counts = selectors.sync_job_run_counts(source_connection=connection)
    by_type = selectors.entity_counts_by_type(source_connection=connection, principals=principals)
    sync = getattr(connection, "sync", None)
    last = jobs[0] if jobs else None
    return {
        "id": connection.id,
        "organization_id": connection.organization_id,
        "name": connection.name,
        "description": connection.description or None,
        "short_name": connection.short_name,
        "readable_collection_id": connection.collection.readable_id,
        "status": connection.status,
        "created_at": connection.created_at,
        "modified_at": connection.modified_at,
        "auth": auth_summary(connection),
        "config": connection.config,
        "schedule": {"cron": sync.cron_schedule or None, "next_run": sync.next_run_at, "continuous": sync.continuous,
                     "cursor_field": sync.cursor_field or None} if sync else None,
        "sync": {**run_counts, "last_job": sync_job_summary(last) if last else None},
        "sync_id": sync.id if sync else None,
        "entities": {"total_entities": sum(v["count"] for v in by_type.values()), "by_type": by_type},
        "error_category": connection.error_category or None,
        "error_message": connection.error_message or None,
        "federated_search": source_connection_federates(connection),
    }


def source_connection_list_items(*, organization, collection_readable_id: str | None = None, skip: int = 0,
                                 limit: int = 100, principals: list[str] | None = None) -> list[dict]:
    """The list items of `GET /source-connections` (docs/api.md), oldest first. 1 query.

    Entity counts cover the entities `principals` may see (None: all). Raises nothing for an
    unknown collection: the list is empty.
    """
    connections = selectors.source_connection_list(
        organization=organization, collection_readable_id=collection_readable_id, skip=skip, limit=limit,
        principals=principals)
    return [{
        "id": c.id, "name": c.name, "short_name": c.short_name, "readable_collection_id": c.collection.readable_id,
        "created_at": c.created_at, "modified_at": c.modified_at, "is_authenticated": c.is_authenticated,
        "entity_count": getattr(c, "entity_count", 0), "federated_search": source_connection_federates(c),
        "auth_method": c.auth_method, "status": c.status,
    } for c in connections]


def sync_job_summary(job: SyncJob) -> dict:
    """The `last_job` object of a SourceConnection's `sync` (docs/api.md). No query."""
    return {
        "id": job.id, "status": job.status, "started_at": job.started_at, "completed_at": job.completed_at,
        "duration_seconds": job.duration_seconds, "entities_inserted": job.entities_inserted,
        "entities_updated": job.entities_updated, "entities_deleted": job.entities_deleted,
        "entities_failed": job.entities_failed, "error": job.error or None,
    }


def sync_job_detail(job: SyncJob) -> dict:
    """The SourceConnectionJob object of docs/api.md: the summary and the rest of the counters. No query."""
    return {
        **sync_job_summary(job), "source_connection_id": job.source_connection_id,
        "entities_kept": job.entities_kept, "entities_skipped": job.entities_skipped,
        "error_category": job.error_category or None, "error_details": job.error_details,
    }
