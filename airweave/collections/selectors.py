"""Reads of the data model. Every lookup of a caller goes through its organization with `scoped`."""
from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Q, QuerySet

from airweave.collections.access import visible_q
from airweave.collections.models import READABLE_ID_RE, Collection, Entity, SourceConnection, SyncJob
from airweave.tenancy.scoping import scoped


def collection_list(*, organization, skip: int = 0, limit: int = 100, search: str = "") -> list[Collection]:
    """Collections of `organization`, oldest first, ready to render (2 queries whatever their number).

    Each carries `connections` (its source connections, oldest first), `status_label`
    (collection_status) and `connection_summaries` ([{short_name, name}], oldest connection first).
    """
    qs = scoped(Collection, organization).select_related("created_by", "modified_by")
    if search:
        qs = qs.filter(Q(name__icontains=search) | Q(readable_id__icontains=search))
    return [_ready_to_render(c) for c in qs.prefetch_related("source_connections").order_by("created_at")[skip:skip + limit]]


def collection_count(*, organization) -> int:
    return scoped(Collection, organization).count()


def collection_get(*, organization, readable_id: str) -> Collection:
    """Raises Collection.DoesNotExist when `readable_id` is not a collection of `organization`."""
    if not READABLE_ID_RE.match(readable_id or ""):
        raise Collection.DoesNotExist(f"no collection '{readable_id}'")
    return _ready_to_render(scoped(Collection, organization).select_related("created_by", "modified_by")
                            .prefetch_related("source_connections").get(readable_id=readable_id))


def _ready_to_render(collection: Collection) -> Collection:
    """Sets `connections` (a list, oldest first), `status_label` and `connection_summaries` from the
    prefetched connections (no query)."""
    collection.connections = list(collection.source_connections.all())
    collection.status_label = collection_status(collection)
    collection.connection_summaries = [{"short_name": c.short_name, "name": c.name} for c in collection.connections]
    return collection


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


# --- Summaries for the web UI: a fixed number of queries whatever the number of connections or jobs ---

@dataclass
class ConnectionSummary:
    """A source connection with its sync, its latest job and what it holds (entity counts by type)."""

    connection: SourceConnection
    last_job: SyncJob | None
    entity_count: int = 0
    entity_types: dict = field(default_factory=dict)

    @property
    def active_job(self) -> SyncJob | None:
        """The latest job when it is still pending, running or cancelling."""
        return self.last_job if self.last_job and self.last_job.status in SyncJob.ACTIVE_STATUSES else None


@dataclass
class CollectionSummary:
    """A collection with its connections' summaries and its visible entity count."""

    collection: Collection
    connections: list[ConnectionSummary]
    entity_count: int = 0

    @property
    def last_job(self) -> SyncJob | None:
        """The most recently created job of any of its connections."""
        jobs = [c.last_job for c in self.connections if c.last_job]
        return max(jobs, key=lambda j: j.created_at) if jobs else None

    @property
    def attention(self) -> list[ConnectionSummary]:
        """Connections that need re-authentication or whose last job failed."""
        return [c for c in self.connections if c.connection.status == SourceConnection.Status.NEEDS_REAUTH
                or (c.last_job and c.last_job.status == SyncJob.Status.FAILED)]


def _latest_jobs(connection_ids: list) -> dict:
    """{source connection id: its latest job} in one query (DISTINCT ON)."""
    if not connection_ids:
        return {}
    jobs = (SyncJob.objects.filter(source_connection_id__in=connection_ids)
            .order_by("source_connection_id", "-created_at").distinct("source_connection_id"))
    return {job.source_connection_id: job for job in jobs}


def _entity_counts(*, collection_ids=None, connection_ids=None, principals=None) -> dict:
    """{(source connection id, entity type): count} of visible entities, in one query."""
    qs = Entity.objects.filter(visible_q(principals))
    if collection_ids is not None:
        qs = qs.filter(collection_id__in=collection_ids)
    if connection_ids is not None:
        qs = qs.filter(source_connection_id__in=connection_ids)
    rows = qs.values("source_connection_id", "entity_type").annotate(count=Count("id")).order_by()
    return {(r["source_connection_id"], r["entity_type"]): r["count"] for r in rows}


def _summaries(collections: list[Collection], connections: list[SourceConnection],
               principals: list[str] | None) -> list[CollectionSummary]:
    ids = [c.id for c in connections]
    latest = _latest_jobs(ids)
    counts = _entity_counts(connection_ids=ids, principals=principals) if ids else {}
    per_connection: dict = {}
    for (connection_id, entity_type), count in counts.items():
        per_connection.setdefault(connection_id, {})[entity_type] = count
    by_collection: dict = {c.id: [] for c in collections}
    collection_of = {c.id: c for c in collections}
    for connection in connections:
        if connection.collection_id in collection_of:
            connection.collection = collection_of[connection.collection_id]  # no lazy load per connection
        types = dict(sorted(per_connection.get(connection.id, {}).items()))
        by_collection.setdefault(connection.collection_id, []).append(
            ConnectionSummary(connection, latest.get(connection.id), sum(types.values()), types))
    return [CollectionSummary(c, by_collection[c.id], sum(s.entity_count for s in by_collection[c.id]))
            for c in collections]


def collection_summaries(*, organization, principals: list[str] | None = None, skip: int = 0, limit: int = 100,
                         search: str = "") -> list[CollectionSummary]:
    """The organization's collections (oldest first) as CollectionSummary: 4 queries whatever their size.

    Entity counts are those `principals` may see (None: all).
    """
    qs = scoped(Collection, organization)
    if search:
        qs = qs.filter(Q(name__icontains=search) | Q(readable_id__icontains=search))
    collections = list(qs.order_by("created_at")[skip:skip + limit])
    connections = list(scoped(SourceConnection, organization).filter(collection__in=[c.id for c in collections])
                       .select_related("sync").order_by("created_at")) if collections else []
    return _summaries(collections, connections, principals)


def collection_count_matching(*, organization, search: str = "") -> int:
    """How many collections `collection_summaries` pages through for `search`."""
    qs = scoped(Collection, organization)
    if search:
        qs = qs.filter(Q(name__icontains=search) | Q(readable_id__icontains=search))
    return qs.count()


def collection_summary(*, organization, readable_id: str, principals: list[str] | None = None) -> CollectionSummary:
    """One collection with every connection summarised (4 queries). Raises Collection.DoesNotExist."""
    if not READABLE_ID_RE.match(readable_id or ""):
        raise Collection.DoesNotExist(f"no collection '{readable_id}'")
    collection = scoped(Collection, organization).get(readable_id=readable_id)
    connections = list(scoped(SourceConnection, organization).filter(collection=collection)
                       .select_related("sync").order_by("created_at"))
    return _summaries([collection], connections, principals)[0]


def connection_summary(*, organization, id, principals: list[str] | None = None) -> ConnectionSummary:
    """One connection (with its collection and sync) summarised. Raises SourceConnection.DoesNotExist,
    also for a malformed id."""
    try:
        connection = source_connection_qs(organization=organization).get(pk=id)
    except (ValueError, TypeError, ValidationError):
        raise SourceConnection.DoesNotExist(f"no source connection '{id}'") from None
    return _summaries([connection.collection], [connection], principals)[0].connections[0]


@dataclass
class JobRow:
    """A job as the jobs page shows it: the job, its skip reasons grouped and its stage timings."""

    job: SyncJob
    skip_reasons: list[tuple[str, int]]
    stages: list[tuple[str, float]]

    @property
    def skip_summary(self) -> str:
        """E.g. "3 encrypted, 1 file too large"."""
        return ", ".join(f"{count} {reason}" for reason, count in self.skip_reasons)


def sync_job_rows(*, source_connection, limit: int = 50, offset: int = 0) -> list[JobRow]:
    """The connection's jobs, newest first, with grouped skip reasons and per-stage seconds (one query)."""
    rows = []
    for job in SyncJob.objects.filter(source_connection=source_connection).order_by("-created_at")[offset:offset + limit]:
        skipped = (job.error_details or {}).get("skipped") or {}
        reasons = sorted(((reason, int(bucket.get("count", 0))) for reason, bucket in skipped.items()),
                         key=lambda r: (-r[1], r[0]))
        stages = [(stage, float((job.stage_seconds or {}).get(stage, 0.0))) for stage in SyncJob.STAGES]
        rows.append(JobRow(job, reasons, stages if job.stage_seconds else []))
    return rows


# --- The explorer: entities of a collection, and one entity with its chunks and who may see it ---

ENTITY_LIST_FIELDS = ("id", "entity_id", "entity_type", "name", "breadcrumbs", "source_connection_id",
                      "source_updated_at", "modified_at", "web_url", "access_is_public")


@dataclass
class EntityPage:
    """A page of the explorer: the entities, how many match, and the facets (by connection and type)."""

    entities: list[Entity]
    total: int
    facets: dict  # {(source connection id, entity type): count} of every visible entity of the collection


def entity_browse(*, collection: Collection, principals: list[str] | None = None, source_connection_id=None,
                  entity_type: str = "", breadcrumb: str = "", search: str = "", skip: int = 0,
                  limit: int = 50) -> EntityPage:
    """Entities of `collection` that `principals` may see, filtered by connection, type, an ancestor
    (a breadcrumb's entity_id) or a name fragment, sorted by name: 3 queries."""
    qs = Entity.objects.filter(visible_q(principals), collection=collection)
    if source_connection_id:
        qs = qs.filter(source_connection_id=source_connection_id)
    if entity_type:
        qs = qs.filter(entity_type=entity_type)
    if breadcrumb:
        qs = qs.filter(breadcrumbs__contains=[{"entity_id": breadcrumb}])
    if search:
        qs = qs.filter(name__icontains=search)
    entities = list(qs.only(*ENTITY_LIST_FIELDS).order_by("name", "id")[skip:skip + limit])
    return EntityPage(entities=entities, total=qs.count(),
                      facets=_entity_counts(collection_ids=[collection.id], principals=principals))


@dataclass
class Viewer:
    """One access principal of an entity, resolved where possible: `members` are the organization's
    users it stands for (a user principal's own account, a group's listed user members)."""

    principal: str
    kind: str  # "user" or "group"
    members: list[str] = field(default_factory=list)
    in_organization: bool = False


@dataclass
class EntityDetail:
    """An entity, its chunks (text only, no vectors) and its resolved access principals."""

    entity: Entity
    chunks: list[dict]
    viewers: list[Viewer]


def entity_detail(*, collection: Collection, id, principals: list[str] | None = None) -> EntityDetail:
    """One visible entity of `collection` with its chunks and viewers: 4 queries.

    Raises Entity.DoesNotExist for an unknown, malformed, invisible or other collection's entity.
    """
    from airweave.collections.access import GROUP_PREFIX, USER_PREFIX
    from airweave.collections.models import AccessGroupMembership, Chunk
    from airweave.tenancy.models import Membership

    try:
        entity = (Entity.objects.filter(visible_q(principals), collection=collection)
                  .select_related("source_connection").get(pk=id))
    except (ValueError, TypeError, ValidationError):
        raise Entity.DoesNotExist(f"no entity '{id}'") from None
    chunks = list(Chunk.objects.filter(entity=entity).order_by("chunk_index")
                  .values("chunk_index", "text", "dims", "keyword_length"))
    viewers = [Viewer(p, "group" if p.startswith(GROUP_PREFIX) else "user") for p in entity.access_viewers]
    groups: dict = {}
    for viewer in viewers:
        if viewer.kind == "group":
            _, _, rest = viewer.principal.partition(GROUP_PREFIX)
            connection_id, _, group_id = rest.partition(":")
            groups[(connection_id, group_id)] = viewer
    if groups:
        rows = AccessGroupMembership.objects.filter(
            source_connection_id=entity.source_connection_id, group_id__in=[g for _, g in groups],
            member__startswith=USER_PREFIX).values_list("group_id", "member")
        for group_id, member in rows:
            viewer = groups.get((str(entity.source_connection_id), group_id))
            if viewer is not None:
                viewer.members.append(member[len(USER_PREFIX):])
    emails = {v.principal[len(USER_PREFIX):] for v in viewers if v.kind == "user"}
    emails |= {m for v in viewers for m in v.members}
    known = set()
    if emails:
        known = {e.lower() for e in Membership.objects.filter(organization_id=collection.organization_id,
                                                              user__email__in=list(emails))
                 .values_list("user__email", flat=True)}
    for viewer in viewers:
        if viewer.kind == "user":
            email = viewer.principal[len(USER_PREFIX):]
            viewer.members = [email]
            viewer.in_organization = email.lower() in known
        else:
            viewer.in_organization = any(m.lower() in known for m in viewer.members)
    return EntityDetail(entity=entity, chunks=chunks, viewers=viewers)


def sync_job_status_counts() -> dict[str, int]:
    """Jobs of every organization by status (every SyncJob.Status key, 0 when none): one query."""
    counts = dict.fromkeys(SyncJob.Status.values, 0)
    for row in SyncJob.objects.order_by().values("status").annotate(n=Count("id")):
        counts[row["status"]] = row["n"]
    return counts


def sync_job_totals() -> dict:
    """Sums over every job of every organization, for metrics: {"entities": {action: n},
    "chunks_embedded": n, "stage_seconds": {stage: seconds}}. Running jobs count what they have
    flushed so far. Two queries."""
    from django.db import connection
    from django.db.models import Sum

    fields = {"inserted": "entities_inserted", "updated": "entities_updated", "deleted": "entities_deleted",
              "kept": "entities_kept", "skipped": "entities_skipped", "failed": "entities_failed",
              "chunks": "chunks_embedded"}
    sums = SyncJob.objects.order_by().aggregate(**{k: Sum(v) for k, v in fields.items()})
    stages = dict.fromkeys(SyncJob.STAGES, 0.0)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.key, SUM((s.value)::float) FROM {SyncJob._meta.db_table} j, "
            "jsonb_each_text(j.stage_seconds) s WHERE jsonb_typeof(j.stage_seconds) = 'object' GROUP BY s.key")
        for key, seconds in cursor.fetchall():
            if key in stages:
                stages[key] = float(seconds or 0.0)
    chunks = sums.pop("chunks") or 0
    return {"entities": {k: v or 0 for k, v in sums.items()}, "chunks_embedded": chunks, "stage_seconds": stages}
