"""Reads of the data model. Every lookup of a caller goes through its organization with `scoped`."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Q, QuerySet

from airweave.collections.access import visible_q
from airweave.collections.models import READABLE_ID_RE, Collection, Entity, SourceConnection, SyncJob
from airweave.tenancy.scoping import scoped


def collection_list(*, organization, skip: int = 0, limit: int = 100, search: str = "") -> list[Collection]:
    """Collections of `organization`, oldest first, with their connections prefetched (2 queries)."""
    qs = scoped(Collection, organization).select_related("created_by", "modified_by")
    if search:
        qs = qs.filter(Q(name__icontains=search) | Q(readable_id__icontains=search))
    return list(qs.prefetch_related("source_connections").order_by("created_at")[skip:skip + limit])


def collection_count(*, organization) -> int:
    return scoped(Collection, organization).count()


def collection_get(*, organization, readable_id: str) -> Collection:
    """Raises Collection.DoesNotExist when `readable_id` is not a collection of `organization`."""
    if not READABLE_ID_RE.match(readable_id or ""):
        raise Collection.DoesNotExist(f"no collection '{readable_id}'")
    return (scoped(Collection, organization).select_related("created_by", "modified_by")
            .prefetch_related("source_connections").get(readable_id=readable_id))


def collection_status(collection: Collection) -> str:
    """"NEEDS SOURCE" without connections, "ERROR" when every connection is in error, else "ACTIVE"."""
    connections = list(collection.source_connections.all())
    if not connections:
        return "NEEDS SOURCE"
    if all(c.status in (SourceConnection.Status.ERROR, SourceConnection.Status.NEEDS_REAUTH) for c in connections):
        return "ERROR"
    return "ACTIVE"


def source_connection_qs(*, organization) -> QuerySet[SourceConnection]:
    return scoped(SourceConnection, organization).select_related("collection", "sync")


def source_connection_get(*, organization, id) -> SourceConnection:
    """Raises SourceConnection.DoesNotExist for an unknown id or another organization's connection."""
    return source_connection_qs(organization=organization).get(pk=id)


def source_connection_list(*, organization, collection_readable_id: str | None = None, skip: int = 0, limit: int = 100,
                           principals: list[str] | None = None) -> list[SourceConnection]:
    """Connections with the count of their entities visible to `principals` (None: all), in one query."""
    qs = source_connection_qs(organization=organization).annotate(
        entity_count=Count("entities", filter=visible_q(principals, prefix="entities__")))
    if collection_readable_id:
        qs = qs.filter(collection__readable_id=collection_readable_id)
    return list(qs.order_by("created_at")[skip:skip + limit])


def entity_counts_by_type(*, source_connection, principals: list[str] | None = None) -> dict[str, dict]:
    """{entity_type: {"count": n, "last_updated": datetime}} of the entities of a connection that
    `principals` may see (None: all), in one query."""
    rows = (Entity.objects.filter(visible_q(principals), source_connection=source_connection).values("entity_type")
            .annotate(count=Count("id"), last_updated=Max("modified_at")))
    return {r["entity_type"]: {"count": r["count"], "last_updated": r["last_updated"]} for r in rows}


def entity_hashes(*, source_connection) -> dict[str, str]:
    """{entity_id: content_hash} of every entity of a connection."""
    return dict(Entity.objects.filter(source_connection=source_connection).values_list("entity_id", "content_hash"))


def sync_job_list(*, source_connection, limit: int = 100) -> list[SyncJob]:
    return list(SyncJob.objects.filter(source_connection=source_connection).order_by("-created_at")[:limit])


def sync_job_run_counts(*, source_connection) -> dict:
    """{total_runs, successful_runs, failed_runs} over every job of the connection (one query)."""
    from django.db.models import Count, Q

    return SyncJob.objects.filter(source_connection=source_connection).aggregate(
        total_runs=Count("id"), successful_runs=Count("id", filter=Q(status=SyncJob.Status.COMPLETED)),
        failed_runs=Count("id", filter=Q(status=SyncJob.Status.FAILED)))


def sync_job_get(*, organization, id, source_connection=None) -> SyncJob:
    """Raises SyncJob.DoesNotExist for an unknown id, another organization's job or another connection's."""
    qs = scoped(SyncJob, organization).select_related("source_connection")
    if source_connection is not None:
        qs = qs.filter(source_connection=source_connection)
    return qs.get(pk=id)


def sync_job_find(*, organization, id) -> SyncJob | None:
    """The organization's job `id`, or None (also for a malformed id)."""
    try:
        return scoped(SyncJob, organization).filter(pk=id).first()
    except (ValueError, TypeError, ValidationError):
        return None


def collection_find(*, organization, readable_id: str) -> Collection | None:
    """The organization's collection `readable_id`, or None."""
    try:
        return collection_get(organization=organization, readable_id=readable_id)
    except Collection.DoesNotExist:
        return None


def entity_count(*, organization) -> int:
    """Entities of every collection of the organization (the entity quota counts these)."""
    return scoped(Entity, organization).count()


def source_connection_count(*, organization) -> int:
    return scoped(SourceConnection, organization).count()
