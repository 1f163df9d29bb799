"""Writes of the data model: collections, entities and their chunks.

Sync orchestration lives in connectors/sync; these are the model-level writes it calls.
"""
from __future__ import annotations

import re
import secrets
import string
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.conf import settings
from django.utils.text import slugify

from airweave.collections import keyword_index
from airweave.db_router import primary_lsn
from airweave.events import publish_domain_event
from airweave.collections.models import READABLE_ID_RE, AccessGroupMembership, Chunk, Collection, Entity, SourceConnection
from airweave.providers.catalog import embedding_model, indexed_dimensions


class CollectionError(ValueError):
    """Bad collection input. `field` names what to fix."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class CollectionConflict(Exception):
    """The readable_id is already taken in the organization."""


def _random_suffix(n: int = 6) -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(n))


def readable_id_from_name(name: str) -> str:
    """Slug of `name` + "-" + 6 random [a-z0-9] (docs/api.md, POST /collections)."""
    slug = re.sub(r"-+", "-", slugify(name)).strip("-") or "collection"
    return f"{slug[:100]}-{_random_suffix()}"


@dataclass(frozen=True)
class CollectionParams:
    """Checked input of a new collection: its name, readable id and pinned embedding model."""

    name: str
    readable_id: str
    embedding_model_name: str
    vector_size: int


def collection_name_check(name: str | None) -> str:
    """The stripped name. Raises CollectionError unless it is 4 to 64 characters long."""
    name = (name or "").strip()
    if not 4 <= len(name) <= 64:
        raise CollectionError("name must be 4 to 64 characters long", "name")
    return name


def collection_params_check(*, name: str, readable_id: str | None = None,
                            embedding_model_name: str | None = None) -> CollectionParams:
    """Check a new collection's input (every face that creates one: REST, admin, commands).

    `readable_id` None makes one from the name; `embedding_model_name` None takes
    AIRWEAVE_DEFAULT_EMBEDDING_MODEL. Raises CollectionError naming the field (bad name,
    readable_id, unknown model or a dimension without a vector index). Uniqueness is checked
    when the row is written.
    """
    name = collection_name_check(name)
    if readable_id is None:
        readable_id = readable_id_from_name(name)
    elif not READABLE_ID_RE.match(readable_id) or len(readable_id) > 128:
        raise CollectionError(
            "readable_id must be lowercase letters and digits separated by single hyphens, e.g. 'my-docs-2024'",
            "readable_id",
        )
    model_name = embedding_model_name or settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL
    try:
        model = embedding_model(model_name)
    except KeyError as exc:
        raise CollectionError(str(exc.args[0]), "embedding_model_name") from None
    if model.dimensions not in indexed_dimensions():
        raise CollectionError(f"no vector index for {model.dimensions} dimensions", "embedding_model_name")
    return CollectionParams(name=name, readable_id=readable_id, embedding_model_name=model.name,
                            vector_size=model.dimensions)


def collection_create(*, organization, name: str, readable_id: str | None = None, sync_config: dict | None = None,
                      embedding_model_name: str | None = None, created_by=None) -> Collection:
    """Create a collection, pinning its embedding model and vector size.

    Raises CollectionError (bad name, readable_id or model) and CollectionConflict (readable_id taken).
    """
    params = collection_params_check(name=name, readable_id=readable_id, embedding_model_name=embedding_model_name)
    try:
        with transaction.atomic():
            collection = Collection.objects.create(
                organization=organization, name=params.name, readable_id=params.readable_id, sync_config=sync_config,
                embedding_model_name=params.embedding_model_name, vector_size=params.vector_size,
                created_by=created_by, modified_by=created_by,
            )
    except IntegrityError:
        raise CollectionConflict(f"a collection with readable_id '{params.readable_id}' already exists") from None
    publish_domain_event(collection.organization_id, "collection.created", collection_event_payload(collection))
    return collection


def source_connection_event_payload(connection: SourceConnection) -> dict:
    """What a source_connection.* (and sync.*) event says about the connection."""
    return {"source_connection_id": str(connection.id), "source_connection_name": connection.name,
            "source_type": connection.short_name, "collection_readable_id": connection.collection.readable_id,
            "collection_name": connection.collection.name, "auth_method": connection.auth_method}


def collection_event_payload(collection: Collection) -> dict:
    """What a collection.* event says about the collection."""
    return {"collection_id": str(collection.id), "collection_readable_id": collection.readable_id,
            "collection_name": collection.name}


def collection_update(*, collection: Collection, name: str | None = None, sync_config: dict | None = None,
                      modified_by=None) -> Collection:
    """Rename a collection or change its sync_config. Raises CollectionError."""
    if name is not None:
        collection.name = collection_name_check(name)
    if sync_config is not None:
        collection.sync_config = sync_config
    collection.modified_by = modified_by or collection.modified_by
    collection.save()
    publish_domain_event(collection.organization_id, "collection.updated", collection_event_payload(collection))
    return collection


def collection_written_mark(*, source_connection_id) -> str:
    """Record the primary's WAL position on the collection of a source connection (`written_lsn`)
    after a sync job of it ended, so that searches of it read a replica only once it has replayed that far
    (airweave/db_router.py). Returns the position ("" and nothing written without replicas)."""
    lsn = primary_lsn()
    if lsn:
        Collection.objects.filter(source_connections=source_connection_id).update(written_lsn=lsn)
    return lsn


def collection_delete(*, collection: Collection) -> None:
    """Delete a collection with its connections, entities, chunks and postings."""
    payload, organization_id = collection_event_payload(collection), collection.organization_id
    collection.delete()
    publish_domain_event(organization_id, "collection.deleted", payload)


@dataclass
class ChunkRecord:
    """A chunk ready to write: its text and its vector (a sequence of floats)."""

    text: str
    embedding: object


@dataclass
class EntityRecord:
    """An entity ready to write, as plain data (the sync pipeline builds it from a source entity)."""

    entity_id: str
    entity_type: str
    name: str
    content_hash: str
    breadcrumbs: list[dict] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    raw_source_fields: dict = field(default_factory=dict)
    web_url: str = ""
    url: str = ""
    access_viewers: list[str] = field(default_factory=list)
    access_is_public: bool = True
    chunks: list[ChunkRecord] = field(default_factory=list)


def entities_write(*, source_connection, sync_id, sync_job_id, records: list[EntityRecord]) -> None:
    """Insert or replace entities and all their chunks in one transaction.

    An entity's old chunks and postings are replaced by the new ones atomically, so a reader
    sees either the old or the new version, never none.
    """
    if not records:
        return
    collection = source_connection.collection
    dims = collection.vector_size
    with transaction.atomic():
        existing = {
            e.entity_id: e
            for e in Entity.objects.filter(source_connection=source_connection,
                                           entity_id__in=[r.entity_id for r in records])
        }
        if existing:
            Chunk.objects.filter(entity__in=list(existing.values())).delete()
        new_chunks: list[Chunk] = []
        for record in records:
            entity = existing.get(record.entity_id) or Entity(
                organization_id=source_connection.organization_id, collection=collection,
                source_connection=source_connection, entity_id=record.entity_id,
            )
            entity.entity_type = record.entity_type
            entity.name = record.name[:1024]
            entity.breadcrumbs = record.breadcrumbs
            entity.source_created_at = record.created_at
            entity.source_updated_at = record.updated_at
            entity.content_hash = record.content_hash
            entity.raw_source_fields = record.raw_source_fields
            entity.web_url = record.web_url
            entity.url = record.url
            entity.access_viewers = record.access_viewers
            entity.access_is_public = record.access_is_public
            entity.last_sync_job_id = sync_job_id
            entity.save()
            for index, chunk in enumerate(record.chunks):
                new_chunks.append(Chunk(
                    id=uuid.uuid4(), organization_id=source_connection.organization_id, collection=collection,
                    source_connection_id=source_connection.id, entity=entity, chunk_index=index,
                    text=chunk.text, embedding=chunk.embedding, dims=dims,
                    original_entity_id=record.entity_id, name=entity.name, entity_type=record.entity_type,
                    source_name=source_connection.short_name, breadcrumbs=record.breadcrumbs,
                    created_at=record.created_at, updated_at=record.updated_at,
                    sync_id=sync_id, sync_job_id=sync_job_id,
                    access_viewers=record.access_viewers, access_is_public=record.access_is_public,
                ))
        Chunk.objects.bulk_create(new_chunks, batch_size=500)
        with connection.cursor() as cursor:
            keyword_index.index_chunks(cursor, [c.id for c in new_chunks])


def entities_delete(*, source_connection, entity_ids: list[str]) -> int:
    """Delete entities (with chunks and postings) of a connection by source entity id. Returns the count."""
    if not entity_ids:
        return 0
    deleted = 0
    for start in range(0, len(entity_ids), 1000):
        batch = entity_ids[start:start + 1000]
        with transaction.atomic():
            qs = Entity.objects.filter(source_connection=source_connection, entity_id__in=batch)
            Chunk.objects.filter(entity__in=qs).delete()
            deleted += qs.delete()[1].get("collections.Entity", 0)
    return deleted


# --- Credentials at rest ---

# Every column that holds a Fernet token (airweave/crypto.py). A new encrypted column is added here,
# so that key rotation (credentials_reencrypt) reaches it.
ENCRYPTED_FIELDS = [(SourceConnection, "encrypted_credentials"), (SourceConnection, "encrypted_notify_secret")]


@dataclass
class ReencryptReport:
    """What credentials_reencrypt did: rows seen, rows re-encrypted, and the rows no key decrypts
    (as "<model> <id>", never their content)."""

    checked: int = 0
    reencrypted: int = 0
    unreadable: list[str] = field(default_factory=list)


def credentials_reencrypt(*, dry_run: bool = False, batch_size: int = 200) -> ReencryptReport:
    """Re-encrypt every stored credential under the newest key of AIRWEAVE_FERNET_KEYS.

    Each batch is one transaction with its rows locked, so a connection being edited meanwhile
    is never overwritten with stale data. `dry_run` only checks that every token decrypts.
    Idempotent: running it twice leaves the same readable credentials. Never logs secrets.
    """
    from airweave.crypto import InvalidToken, decrypt_json, rotate_token

    report = ReencryptReport()
    for model, column in ENCRYPTED_FIELDS:
        last_pk = None
        while True:
            with transaction.atomic():
                rows = model.objects.exclude(**{column: ""}).order_by("pk")
                if last_pk is not None:
                    rows = rows.filter(pk__gt=last_pk)
                rows = list(rows.select_for_update().only("pk", column)[:batch_size])
                if not rows:
                    break
                for row in rows:
                    report.checked += 1
                    token = getattr(row, column)
                    try:
                        fresh = token if dry_run else rotate_token(token)
                        if dry_run:
                            decrypt_json(token)
                    except (InvalidToken, ValueError):
                        report.unreadable.append(f"{model.__name__} {row.pk}")
                        continue
                    if not dry_run and fresh != token:
                        model.objects.filter(pk=row.pk).update(**{column: fresh})
                        report.reencrypted += 1
                last_pk = rows[-1].pk
    return report


def access_memberships_replace(*, source_connection, memberships: set[tuple[str, str]]) -> dict[str, int]:
    """Make `memberships` ({(group_id, member)}) the connection's whole set of group memberships.

    Rows no longer listed are deleted, new ones inserted, unchanged ones left alone; one
    transaction, so searches see the old set or the new one. `member` is `user:<email>` or
    `group:<group id>` (see airweave.collections.access). Returns {"total", "added", "removed"}.
    """
    with transaction.atomic():
        current = dict(((g, m), pk) for pk, g, m in AccessGroupMembership.objects.filter(
            source_connection=source_connection).values_list("pk", "group_id", "member"))
        removed = [pk for key, pk in current.items() if key not in memberships]
        added = [AccessGroupMembership(organization_id=source_connection.organization_id,
                                       source_connection=source_connection, group_id=g, member=m)
                 for g, m in sorted(memberships) if (g, m) not in current]
        for start in range(0, len(removed), 1000):
            AccessGroupMembership.objects.filter(pk__in=removed[start:start + 1000]).delete()
        AccessGroupMembership.objects.bulk_create(added, batch_size=1000)
    return {"total": len(memberships), "added": len(added), "removed": len(removed)}
