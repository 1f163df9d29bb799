"""The data model: collections, source connections, syncs and their jobs, entities and chunks.

Keyword postings (the BM25 inverted index) live in the table `collections_keyword_posting`,
created by raw SQL in migration 0002 because it needs a database-level ON DELETE CASCADE from
its chunk; it has no Django model so that deleting chunks never loads postings into Python.
"""
from __future__ import annotations

import re
import secrets
import uuid

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from pgvector.django import VectorField

from airweave.tenancy.models import Organization

READABLE_ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def new_notify_token() -> str:
    """An unguessable token (43 URL-safe characters, 256 bits) for a connection's notification URL."""
    return secrets.token_urlsafe(32)


class TenantModel(models.Model):
    """Base of every row owned by an organization."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Collection(TenantModel):
    """A searchable set of entities from one or more source connections.

    `embedding_model_name` and `vector_size` are pinned at creation: every chunk of the
    collection is embedded with that model, whatever the defaults become later.
    """

    name = models.CharField(max_length=64)
    readable_id = models.CharField(max_length=128)
    embedding_model_name = models.CharField(max_length=128)
    vector_size = models.PositiveIntegerField()
    sync_config = models.JSONField(null=True, blank=True)
    # The primary's WAL position (pg_lsn as text) when a sync job of this collection last ended, with
    # DATABASE_REPLICA_URLS set: searches read a replica only once it has replayed past it (airweave/db_router.py).
    written_lsn = models.CharField(max_length=32, blank=True, default="")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    modified_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "readable_id"], name="uniq_collection_readable_id")]
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.readable_id


class SourceConnection(TenantModel):
    """One configured source feeding a collection. Credentials are Fernet-encrypted at rest."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        PENDING_AUTH = "pending_auth"
        SYNCING = "syncing"
        ERROR = "error"
        NEEDS_REAUTH = "needs_reauth"
        INACTIVE = "inactive"
        PENDING_SYNC = "pending_sync"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="source_connections")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    short_name = models.CharField(max_length=64, db_index=True)
    config = models.JSONField(default=dict, blank=True)
    encrypted_credentials = models.TextField(blank=True, default="")
    auth_method = models.CharField(max_length=32, default="direct")
    is_authenticated = models.BooleanField(default=True)
    authenticated_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING_SYNC)
    error_category = models.CharField(max_length=64, blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    # The secret part of the change-notification URL /source-connections/{id}/notify/{token}
    # (docs/notifications.md). The vendor's signing secret for those calls is Fernet-encrypted like
    # the credentials, apart from them, so replacing or refreshing credentials never drops it.
    notify_token = models.CharField(max_length=64, default=new_notify_token)
    encrypted_notify_secret = models.TextField(blank=True, default="")
    # The vendor subscription the product created for those calls (Graph, Drive): id, expires_at, url.
    notify_subscription = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    modified_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.short_name})"


class Sync(TenantModel):
    """The sync of one source connection: its schedule and its history of jobs."""

    source_connection = models.OneToOneField(SourceConnection, on_delete=models.CASCADE, related_name="sync")
    cron_schedule = models.CharField(max_length=100, blank=True, default="")
    continuous = models.BooleanField(default=False)
    cursor_field = models.CharField(max_length=100, blank=True, default="")
    next_run_at = models.DateTimeField(null=True, blank=True)
    # A change notification arrived while a job ran: one more incremental run follows it (never more).
    notify_follow_up = models.BooleanField(default=False)
    last_notified_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"sync of {self.source_connection}"


class SyncJob(TenantModel):
    """One run of a sync. Status moves pending → running → completed | failed | cancelling → cancelled."""

    class Status(models.TextChoices):
        CREATED = "created"
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLING = "cancelling"
        CANCELLED = "cancelled"

    ACTIVE_STATUSES = (Status.PENDING, Status.RUNNING, Status.CANCELLING)
    FINAL_STATUSES = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)

    sync = models.ForeignKey(Sync, on_delete=models.CASCADE, related_name="jobs")
    source_connection = models.ForeignKey(SourceConnection, on_delete=models.CASCADE, related_name="jobs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    force_full_sync = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    last_progress_at = models.DateTimeField(null=True, blank=True)
    entities_inserted = models.PositiveIntegerField(default=0)
    entities_updated = models.PositiveIntegerField(default=0)
    entities_deleted = models.PositiveIntegerField(default=0)
    entities_kept = models.PositiveIntegerField(default=0)
    entities_skipped = models.PositiveIntegerField(default=0)
    entities_failed = models.PositiveIntegerField(default=0)
    chunks_embedded = models.PositiveIntegerField(default=0)
    entities_encountered = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    error_category = models.CharField(max_length=64, blank=True, default="")
    error_details = models.JSONField(null=True, blank=True)
    # Seconds spent per stage of the pipeline: listing, converting, chunking, embedding, writing.
    stage_seconds = models.JSONField(default=dict, blank=True)
    # The process running the job (set when it starts running): the sweeper fails the job at once
    # when that process is gone from this host; jobs of other hosts fall back to the time window.
    worker_host = models.CharField(max_length=255, blank=True, default="")
    worker_pid = models.PositiveIntegerField(null=True, blank=True)
    worker_started = models.FloatField(null=True, blank=True)  # the process's start, seconds since the epoch

    STAGES = ("listing", "converting", "chunking", "embedding", "writing")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["sync"],
                condition=models.Q(status__in=["pending", "running", "cancelling"]),
                name="one_active_job_per_sync",
            )
        ]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.completed_at:
            return (self.completed_at - self.started_at).total_seconds()
        return None


class AccessGroupMembership(TenantModel):
    """One member of a group of a source connection, as the source listed it at its last sync.

    `group_id` is the source's own id of the group; `member` is `user:<email>` (lower-case) or
    `group:<group id>`, a group of the same connection nested inside this one. Group ids are
    local to their connection: the principal an entity carries for a group is
    `group:<source connection id>:<group id>` (see airweave.collections.access), so two
    connections' "eng" groups never meet. Replaced as a whole by each sync job of a source that
    lists memberships (connectors.base.BaseSource.generate_access_memberships).
    """

    source_connection = models.ForeignKey(SourceConnection, on_delete=models.CASCADE,
                                          related_name="access_memberships")
    group_id = models.CharField(max_length=512)
    member = models.CharField(max_length=512)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source_connection", "group_id", "member"],
                                               name="uniq_access_membership")]
        indexes = [models.Index(fields=["member", "source_connection"], name="access_membership_member")]
        ordering = ["group_id", "member"]

    def __str__(self) -> str:
        return f"{self.member} in group {self.group_id}"


class SyncCursor(models.Model):
    """Where the next incremental run of a sync starts; saved only when a job completes."""

    sync = models.OneToOneField(Sync, on_delete=models.CASCADE, related_name="cursor", primary_key=True)
    data = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)


class Entity(TenantModel):
    """One item of a source (a file, a page, a message) as last synced."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="entities")
    source_connection = models.ForeignKey(SourceConnection, on_delete=models.CASCADE, related_name="entities")
    entity_id = models.CharField(max_length=1024)
    entity_type = models.CharField(max_length=128)
    name = models.CharField(max_length=1024)
    breadcrumbs = models.JSONField(default=list)
    source_created_at = models.DateTimeField(null=True, blank=True)
    source_updated_at = models.DateTimeField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    raw_source_fields = models.JSONField(default=dict)
    web_url = models.TextField(blank=True, default="")
    url = models.TextField(blank=True, default="")
    access_viewers = ArrayField(models.CharField(max_length=320), default=list, blank=True)
    access_is_public = models.BooleanField(default=True)
    last_sync_job_id = models.UUIDField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source_connection", "entity_id"], name="uniq_entity_per_connection")]
        indexes = [models.Index(fields=["collection", "entity_type"])]
        verbose_name_plural = "entities"

    def __str__(self) -> str:
        return self.name


class Chunk(models.Model):
    """A piece of an entity's text with its vector and its filterable metadata.

    Metadata is copied from the entity so that every filter applies on this one table,
    inside the vector index scan. `embedding` has no fixed dimension: `dims` tells it, and
    one partial HNSW index per dimension serves it (see apps.ensure_vector_indexes).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization_id = models.UUIDField()
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+", db_constraint=True)
    source_connection_id = models.UUIDField()
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="chunks")
    chunk_index = models.PositiveIntegerField()
    text = models.TextField()
    embedding = VectorField()
    dims = models.PositiveSmallIntegerField()
    keyword_length = models.PositiveIntegerField(default=0)
    original_entity_id = models.CharField(max_length=1024)
    name = models.CharField(max_length=1024)
    entity_type = models.CharField(max_length=128)
    source_name = models.CharField(max_length=64)
    breadcrumbs = models.JSONField(default=list)
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    sync_id = models.UUIDField(null=True)
    sync_job_id = models.UUIDField(null=True)
    access_viewers = ArrayField(models.CharField(max_length=320), default=list, blank=True)
    access_is_public = models.BooleanField(default=True)

    class Meta:
        indexes = [
            models.Index(fields=["collection", "entity_type"]),
            models.Index(fields=["collection", "original_entity_id"]),
            GinIndex(fields=["access_viewers"], name="chunk_access_viewers_gin"),
        ]

    @property
    def public_id(self) -> str:
        return f"{self.original_entity_id}__chunk_{self.chunk_index}"


class KeywordPosting(models.Model):
    """One (chunk, stemmed term) posting of the BM25 index. Schema owned by migration 0003 (raw SQL).

    Declared so that Django knows the table (flushes, introspection); `chunk_id` is a plain
    column here on purpose: the database cascades deletions, Django never loads postings.
    """

    pk = models.CompositePrimaryKey("chunk_id", "term")
    collection_id = models.UUIDField()
    term = models.TextField()
    chunk_id = models.UUIDField()
    tf = models.SmallIntegerField()
    dl = models.IntegerField()
    impact = models.FloatField(default=0)  # BM25 term weight at the collection's impact_avgdl (migration 0013)

    class Meta:
        db_table = "collections_keyword_posting"


class KeywordStats(models.Model):
    """BM25 statistics of a collection (chunk count, total length). Schema owned by migration 0004."""

    collection_id = models.UUIDField(primary_key=True)
    chunk_count = models.BigIntegerField()
    total_length = models.BigIntegerField()
    impact_avgdl = models.FloatField(null=True)  # the reference length of the postings' impacts, set once
    next_ord = models.IntegerField(default=1)  # the ordinal the next written chunk gets (KeywordDoc, migration 0014)

    class Meta:
        db_table = "collections_keyword_stats"
        verbose_name_plural = "keyword stats"


class KeywordDoc(models.Model):
    """A chunk's ordinal in its collection's keyword index (1, 2, ..., never reused), which keyword
    segments name chunks by. Schema owned by migration 0014 (raw SQL); written by
    airweave.collections.keyword_index, gone with its chunk (ON DELETE CASCADE)."""

    pk = models.CompositePrimaryKey("collection_id", "ord")
    collection_id = models.UUIDField()
    ord = models.IntegerField()
    chunk_id = models.UUIDField(unique=True)
    entity_id = models.UUIDField()

    class Meta:
        db_table = "collections_keyword_doc"


class KeywordSegment(models.Model):
    """A collection's keyword segment: the postings of its chunks with ordinal <= max_ord, packed
    per term (KeywordSegmentTerm). Schema owned by migration 0014; written by
    airweave.collections.keyword_segments, read by search.keyword_segment."""

    collection_id = models.UUIDField(primary_key=True)
    max_ord = models.IntegerField()
    chunk_count = models.IntegerField()  # chunks it held when built
    built_at = models.DateTimeField()

    class Meta:
        db_table = "collections_keyword_segment"


class KeywordSegmentTerm(models.Model):
    """One term's postings in a keyword segment as packed big-endian arrays: ordinals (int4), term
    frequencies (int2), chunk lengths (int2). Schema owned by migration 0014; never loaded by Django."""

    pk = models.CompositePrimaryKey("collection_id", "term")
    collection_id = models.UUIDField()
    term = models.TextField()
    postings = models.IntegerField()
    ords = models.BinaryField()
    tfs = models.BinaryField()
    dls = models.BinaryField()

    class Meta:
        db_table = "collections_keyword_segment_term"


class KeywordTerm(models.Model):
    """Document frequency of one stemmed term in a collection. Schema owned by migration 0013 (raw SQL)."""

    pk = models.CompositePrimaryKey("collection_id", "term")
    collection_id = models.UUIDField()
    term = models.TextField()
    df = models.IntegerField()

    class Meta:
        db_table = "collections_keyword_term"
