"""The sync pipeline (docs/architecture.md, The sync data flow).

source.generate_entities(cursor) → dedupe within the job → content hash → insert / update /
keep / delete → files converted to text → chunked → embedded in batches → written.
KEEP skips conversion and embedding entirely. Cancellation is checked between batches.

Embedding overlaps the rest: one background thread per job embeds a slice of chunks while this
thread writes the previous slice, then lists, converts and chunks the next batch (at most one
slice embedding and one waiting; every database and source call stays on this thread). Stage
seconds are busy time per stage, so with the overlap they may add up to more than the job's wall time.

Access: a source that declares `supports_access_control` first lists its group memberships
(stored per connection, replacing the last listing); each entity's access is normalised before
it is hashed (airweave.collections.access.normalize_access): group principals namespaced per
connection, no access list = closed. Other sources' entities are visible to the organization.
"""
from __future__ import annotations

import contextvars
import logging
import time
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from django.conf import settings
from django.db import connection as db_connection
from django.utils import timezone
from opentelemetry import trace

from airweave.availability import DATABASE_ERRORS, database_unavailable

from airweave.collections import selectors as collection_selectors
from airweave.collections.access import (
    GROUP_PREFIX, MEMBERSHIP_FIELD_MAX_CHARS, USER_PREFIX, normalize_access, user_principal,
)
from airweave.collections.keyword_index import keyword_stats_refresh
from airweave.collections.keyword_segments import keyword_segment_refresh
from airweave.collections.models import SyncCursor, SyncJob
from airweave.collections.services import (
    ChunkRecord, EntityRecord, access_memberships_replace, entities_delete, entities_write,
)
from airweave.events import make_event, publish_to_group, sync_job_group
from airweave.observability.metrics import EMBEDDING_BATCH_SECONDS
from airweave.observability.tracing import tracer
from airweave.providers.embeddings import ProviderUnavailable, get_embedder
from airweave.providers.errors import ProviderError
from airweave.tenancy.quotas import ENTITIES, quota_remaining
from connectors.base import AccessMembership, BaseEntity, BaseSource, BlobEntity, FileEntity, SkipEntity, SourceError
from connectors.converters import convert_bytes, convert_file
from connectors.registry import source_for_connection
from connectors.sync.chunking import chunk_text
from connectors.sync.jobs import S, sync_job_transition

logger = logging.getLogger(__name__)
EXAMPLES_PER_REASON = 5
# Chunks embedded per call while a batch is indexed: a large entity reports progress, and can be
# cancelled, every slice (about 10 s of MiniLM on 2 cores) instead of once at its end.
EMBED_SLICE_CHUNKS = 256
DATABASE_RETRY_SECONDS = 2


class JobCancelled(Exception):
    pass


@dataclass
class JobCounters:
    """Running counts of one job, flushed to the job row after every batch."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    kept: int = 0
    skipped: int = 0
    failed: int = 0
    chunks_embedded: int = 0
    encountered: Counter = field(default_factory=Counter)
    skip_reasons: dict = field(default_factory=lambda: defaultdict(lambda: {"count": 0, "examples": []}))
    notes: list = field(default_factory=list)
    memberships: dict | None = None  # {"total", "added", "removed"} when the source lists group memberships
    membership_skips: Counter = field(default_factory=Counter)
    # Seconds per stage (SyncJob.STAGES): listing (the source's listing, reading and hashing),
    # converting (files to text), chunking, embedding, writing (entities, chunks, deletions, stats).
    stages: dict = field(default_factory=lambda: dict.fromkeys(SyncJob.STAGES, 0.0))
    truncated: dict = field(default_factory=lambda: {"count": 0, "examples": []})
    current_entity: str = ""  # the entity whose chunks are being embedded, while a large one is

    def timed(self, stage: str, span: bool = False, **attributes):
        """A context manager adding the time spent inside it to `stage`; with `span`, also a
        `sync.<stage>` span (child of the current one) carrying `attributes`."""
        return _StageTimer(self.stages, stage, f"sync.{stage}" if span else None, attributes)

    def skip_membership(self, reason: str) -> None:
        self.membership_skips[reason] += 1

    def truncate(self, entity_id: str, reason: str) -> None:
        """Count an entity indexed in part (its first AIRWEAVE_MAX_CHUNKS_PER_ENTITY chunks)."""
        self.truncated["count"] += 1
        if len(self.truncated["examples"]) < EXAMPLES_PER_REASON:
            self.truncated["examples"].append({"entity_id": entity_id, "reason": reason})

    def skip(self, entity_id: str, reason: str) -> None:
        self.skipped += 1
        bucket = self.skip_reasons[reason.split(":", 1)[0].strip()]
        bucket["count"] += 1
        if len(bucket["examples"]) < EXAMPLES_PER_REASON:
            bucket["examples"].append({"entity_id": entity_id, "reason": reason})

    def job_fields(self) -> dict:
        details = {}
        if self.skip_reasons:
            details["skipped"] = {k: dict(v) for k, v in self.skip_reasons.items()}
        if self.truncated["count"]:
            details["truncated"] = dict(self.truncated)
        if self.notes:
            details["notes"] = self.notes
        if self.memberships is not None or self.membership_skips:
            details["access_memberships"] = {**(self.memberships or {}),
                                             "skipped": dict(self.membership_skips)}
        return {
            "entities_inserted": self.inserted, "entities_updated": self.updated,
            "entities_deleted": self.deleted, "entities_kept": self.kept,
            "entities_skipped": self.skipped, "entities_failed": self.failed,
            "chunks_embedded": self.chunks_embedded, "entities_encountered": dict(self.encountered),
            "error_details": details or None,
            "stage_seconds": {k: round(v, 3) for k, v in self.stages.items()},
        }

    def as_progress(self) -> dict:
        return {"inserted": self.inserted, "updated": self.updated, "deleted": self.deleted, "kept": self.kept,
                "skipped": self.skipped, "failed": self.failed, "entities_encountered": dict(self.encountered),
                "chunks_embedded": self.chunks_embedded, "current_entity": self.current_entity}


@dataclass
class _Slice:
    """Chunks being embedded in the background: `future` → (vectors (n, dims), seconds embedding)."""

    part: list[tuple[EntityRecord, ChunkRecord]]
    future: Future


@dataclass
class _Pending:
    entity: BaseEntity
    content_hash: str
    is_new: bool


class SyncPipeline:
    """Runs one sync job to its end. `on_progress(counters)` is called after every batch.

    `source` is the source instance to read; by default one is built from the connection's
    short name, config and decrypted credentials (the push API passes its own, holding the
    pushed documents, so that pushes and syncs share every rule of this pipeline).
    """

    def __init__(self, job: SyncJob, on_progress: Callable[[JobCounters], None] | None = None,
                 source: BaseSource | None = None):
        self.job = job
        self.source = source
        self.connection = job.source_connection
        self.collection = self.connection.collection
        self.on_progress = on_progress
        self.counters = JobCounters()
        self.batch_size = settings.AIRWEAVE_EMBEDDING_BATCH_SIZE
        self._embedder = None
        self._listing_span = None  # the open `sync.listing` span of the batch being listed
        self._embedding_thread: ThreadPoolExecutor | None = None
        self._in_flight: _Slice | None = None  # the slice embedding while this thread goes on
        self._chunks_left: dict[int, int] = {}  # id(record) → its chunks not embedded yet
        self._is_new: dict[str, bool] = {}

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = get_embedder(self.collection.embedding_model_name, self.batch_size)
        return self._embedder

    def run(self) -> SyncJob:
        """Run the job; never raises for a source or entity failure (the job is failed instead)."""
        job = self.job
        if not sync_job_transition(job, S.RUNNING):
            return job
        with tracer().start_as_current_span("sync.job", record_exception=False) as span:
            if span.is_recording():
                span.set_attributes({"airweave.sync_job.id": str(job.id), "airweave.source": self.connection.short_name,
                                     "airweave.source_connection.id": str(self.connection.id),
                                     "airweave.collection": self.collection.readable_id,
                                     "airweave.sync_job.force_full_sync": bool(job.force_full_sync)})
            self._run(job)
            if span.is_recording():
                c = self.counters
                span.set_attributes({"airweave.sync_job.status": job.status, "airweave.entities.inserted": c.inserted,
                                     "airweave.entities.updated": c.updated, "airweave.entities.deleted": c.deleted,
                                     "airweave.entities.kept": c.kept, "airweave.entities.skipped": c.skipped,
                                     "airweave.chunks_embedded": c.chunks_embedded})
                if job.status == S.FAILED:
                    span.set_status(trace.StatusCode.ERROR, job.error_category or "failed")
        return job

    def _run(self, job: SyncJob) -> None:
        try:
            self._sync()
        except JobCancelled:
            self._end(S.CANCELLED)
        except SourceError as exc:
            self._end(S.FAILED, error=str(exc), error_category=exc.category)
        except (ProviderUnavailable, ProviderError) as exc:
            self._end(S.FAILED, error=str(exc), error_category="embedding_provider")
        except Exception as exc:  # a bug or a dependency failure: the job fails, the worker lives
            if database_unavailable(exc):
                logger.warning("sync job %s: the database became unavailable: %s", job.id, exc)
                self._end(S.FAILED, error_category="database_unavailable",
                          error=f"the database became unavailable mid-sync ({type(exc).__name__}: "
                                f"{str(exc).strip()[:300]}); what was written is kept, the next sync completes the rest")
            else:
                logger.exception("sync job %s failed", job.id)
                self._end(S.FAILED, error=f"{type(exc).__name__}: {exc}", error_category="internal_error")
        else:
            self._end(S.COMPLETED)

    def _end(self, to: str, **fields) -> None:
        """Record the job's end (with its counters). While the database is unreachable, wait for it
        (every DATABASE_RETRY_SECONDS, up to AIRWEAVE_DB_RECOVERY_SECONDS), so that a database
        restart never leaves the job `running`; past that the sweeper's time window fails it."""
        deadline = time.monotonic() + settings.AIRWEAVE_DB_RECOVERY_SECONDS
        while True:
            try:
                sync_job_transition(self.job, to, **self.counters.job_fields(), **fields)
                return
            except DATABASE_ERRORS:
                if time.monotonic() > deadline:
                    raise
                db_connection.close()  # the next query opens a new connection
                time.sleep(DATABASE_RETRY_SECONDS)

    def _sync(self) -> None:
        source = self.source or source_for_connection(self.connection)
        try:
            self._sync_source(source)
        finally:
            self._end_listing_span(0)
            self._abandon_in_flight()
            source.close()

    def _sync_source(self, source) -> None:
        self.supports_access_control = bool(type(source).supports_access_control)
        if self.supports_access_control:
            self._sync_memberships(source)
        cursor_row = SyncCursor.objects.filter(sync_id=self.job.sync_id).first()
        cursor = {} if self.job.force_full_sync or cursor_row is None else cursor_row.data
        known = collection_selectors.entity_hashes(source_connection=self.connection)
        # New entities this job may add under the organization's entity quota (None: unlimited).
        allowance = quota_remaining(self.job.organization_id, ENTITIES,
                                    collection_selectors.entity_count(organization=self.job.organization_id))
        seen: set[str] = set()
        batch: list[_Pending] = []

        for entity in self._timed_listing(source.generate_entities(cursor)):
            if entity.entity_id in seen:
                continue
            seen.add(entity.entity_id)
            self.counters.encountered[entity.entity_type()] += 1
            entity.access_viewers, entity.access_is_public = normalize_access(
                supports_access_control=self.supports_access_control, source_connection_id=self.connection.id,
                viewers=entity.access_viewers, is_public=entity.access_is_public)
            if isinstance(entity, (FileEntity, BlobEntity)) and entity.size > settings.AIRWEAVE_MAX_FILE_BYTES:
                # Not even hashed: reading a huge file only to skip it would stall the job.
                self.counters.skip(entity.entity_id, f"file too large: {entity.size} bytes > limit "
                                                     f"{settings.AIRWEAVE_MAX_FILE_BYTES} bytes")
                continue
            try:
                with self.counters.timed("listing"):
                    content_hash = entity.content_hash()
            except (SkipEntity, OSError) as exc:
                self.counters.skip(entity.entity_id, getattr(exc, "reason", None) or f"unreadable: {exc}")
                continue
            if known.get(entity.entity_id) == content_hash:
                self.counters.kept += 1
                continue
            is_new = entity.entity_id not in known
            if is_new and allowance is not None:
                if allowance <= 0:
                    self.counters.skip(entity.entity_id, "quota: the organization's entity limit is reached "
                                                         "(AIRWEAVE_QUOTA_ENTITIES or its own quota)")
                    continue
                allowance -= 1
            batch.append(_Pending(entity, content_hash, is_new))
            if len(batch) >= self.batch_size:
                self._end_listing_span(len(batch))
                if not self._index(batch):  # else the previous batch's checkpoint came once it was written
                    self._checkpoint()
                batch = []
        self._end_listing_span(len(batch))
        self._index(batch)
        self._drain()

        with self.counters.timed("writing", span=True, **{"airweave.step": "deletions"}):
            if source.is_full_listing():
                self._delete_missing(known, seen)
            else:
                self._delete_absent(source, known, seen)
            reported = [entity_id for entity_id in dict.fromkeys(source.deleted_entity_ids())
                        if entity_id in known and entity_id not in seen]
            if reported:
                self.counters.deleted += entities_delete(source_connection=self.connection, entity_ids=reported)
            keyword_stats_refresh(self.collection.id)
            _refresh_keyword_segment(self.collection.id)
        self._checkpoint()
        SyncCursor.objects.update_or_create(sync_id=self.job.sync_id, defaults={"data": source.next_cursor()})

    def _timed_listing(self, entities):
        """The source's entities, the time spent producing each one counted as listing.

        One `sync.listing` span covers the listing (and hashing) of each batch: it opens when the
        batch's first entity is asked for and `_end_listing_span` closes it."""
        iterator = iter(entities)
        while True:
            if self._listing_span is None:
                self._listing_span = tracer().start_span("sync.listing")
            with self.counters.timed("listing"):
                try:
                    entity = next(iterator)
                except StopIteration:
                    return
            yield entity

    def _end_listing_span(self, batch_entities: int) -> None:
        span, self._listing_span = self._listing_span, None
        if span is not None:
            span.set_attribute("airweave.entities.to_index", batch_entities)
            span.end()

    def _sync_memberships(self, source) -> None:
        """Replace the connection's stored group memberships with the source's listing, if it gives one."""
        listing = source.generate_access_memberships()
        if listing is None:
            return
        memberships: set[tuple[str, str]] = set()
        for item in listing:
            problem = _membership_problem(item)
            if problem:
                self.counters.skip_membership(problem)
                continue
            memberships.add((item.group_id, _member_key(item.member)))
        self.counters.memberships = access_memberships_replace(source_connection=self.connection,
                                                               memberships=memberships)
        self._checkpoint()

    def _delete_missing(self, known: dict[str, str], seen: set[str]) -> None:
        missing = [entity_id for entity_id in known if entity_id not in seen]
        if not missing:
            return
        ratio = settings.AIRWEAVE_PARTIAL_LISTING_RATIO
        if not self.job.force_full_sync and len(seen) < ratio * len(known):
            self.counters.notes.append(
                f"partial listing guard: the listing returned {len(seen)} of {len(known)} known entities; "
                f"{len(missing)} deletions were not applied (run a forced full sync to apply them)"
            )
            return
        self.counters.deleted += entities_delete(source_connection=self.connection, entity_ids=missing)

    def _delete_absent(self, source: BaseSource, known: dict[str, str], seen: set[str]) -> None:
        """After an incremental run: delete known entities the source's cheap listing no longer has."""
        present = source.present_entity_ids()
        if present is None:
            return
        gone = [entity_id for entity_id in known if entity_id not in seen and entity_id not in present]
        if gone:
            self.counters.deleted += entities_delete(source_connection=self.connection, entity_ids=gone)

    def _index(self, batch: list[_Pending]) -> bool:
        """Convert, chunk, embed and write a batch of new or changed entities; True when it had
        chunks to embed (its last slice may still be embedding when this returns).

        The batch is converted, then chunked (one `sync.converting` and one `sync.chunking` span
        each) while the previous batch's last slice embeds: a batch's texts are held at once, as
        its chunks are until they are embedded."""
        if not batch:
            return False
        texts: list[tuple[_Pending, str]] = []
        with self.counters.timed("converting", span=True, **{"airweave.entities": len(batch)}):
            for pending in batch:
                try:
                    texts.append((pending, self._text_of(pending.entity)))
                except SkipEntity as exc:
                    self.counters.skip(pending.entity.entity_id, exc.reason)
        if not texts:
            return False
        tokenizer = self.embedder.tokenizer  # loading the model is not chunking
        records: list[EntityRecord] = []
        with self.counters.timed("chunking", span=True, **{"airweave.entities": len(texts)}):
            for i, (pending, text) in enumerate(texts):
                texts[i] = (pending, "")  # each text is let go once chunked
                pieces = chunk_text(text, tokenizer, max_tokens=self._max_tokens(),
                                    overlap=settings.AIRWEAVE_CHUNK_OVERLAP_TOKENS)
                if not pieces:
                    self.counters.skip(pending.entity.entity_id, "empty: no text to index")
                    continue
                limit = settings.AIRWEAVE_MAX_CHUNKS_PER_ENTITY
                if limit and len(pieces) > limit:
                    self.counters.truncate(pending.entity.entity_id, f"truncated: {len(pieces)} chunks, the first "
                                           f"{limit} indexed (AIRWEAVE_MAX_CHUNKS_PER_ENTITY)")
                    pieces = pieces[:limit]
                record = _record_of(pending)
                record.chunks = [ChunkRecord(text=p.text, embedding=None) for p in pieces]
                records.append(record)
        if not records:
            return False
        self._embed_and_write(records, {p.entity.entity_id: p.is_new for p in batch})
        return True

    def _embed_and_write(self, records: list[EntityRecord], is_new: dict[str, bool]) -> None:
        """Embed the records' chunks in slices of EMBED_SLICE_CHUNKS and write each record once its
        chunks are embedded, smallest first: the small entities of a batch are written before a
        large one, and counters (chunks embedded, the entity at work) move and cancellation is
        checked between the slices of a large one.

        Each slice is handed to the embedding thread before the previous one (of this batch or
        the last) is written; a checkpoint follows every write, so the one after a batch's last
        slice reports that batch written. The last slice is still embedding when this returns:
        the next call, or `_drain`, writes it."""
        records = sorted(records, key=lambda r: len(r.chunks))
        self._is_new.update(is_new)
        for record in records:
            self._chunks_left[id(record)] = len(record.chunks)
        work = [(record, chunk) for record in records for chunk in record.chunks]
        for start in range(0, len(work), EMBED_SLICE_CHUNKS):
            part = work[start:start + EMBED_SLICE_CHUNKS]
            previous, self._in_flight = self._in_flight, self._submit(part)
            self.counters.current_entity = part[-1][0].entity_id
            if previous is not None:
                self._write_embedded(previous)
                self._checkpoint()

    def _submit(self, part: list[tuple[EntityRecord, ChunkRecord]]) -> _Slice:
        """Start embedding `part` on the embedding thread (its spans children of the current one)."""
        if self._embedding_thread is None:
            self._embedding_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"embed-{self.job.pk}")
        embedder = self.embedder  # loaded here, not on the thread: a load failure fails the job as before
        texts = [chunk.text for _, chunk in part]
        future = self._embedding_thread.submit(contextvars.copy_context().run, self._embed_texts, embedder, texts)
        return _Slice(part, future)

    def _embed_texts(self, embedder, texts: list[str]):
        """On the embedding thread: (vectors, seconds) of one slice, in a `sync.embedding` span."""
        seconds = {"embedding": 0.0}
        with _StageTimer(seconds, "embedding", "sync.embedding", {"airweave.chunks": len(texts)}):
            vectors = embedder.embed(texts)
        EMBEDDING_BATCH_SECONDS.labels(self.collection.embedding_model_name, "document").observe(seconds["embedding"])
        return vectors, seconds["embedding"]

    def _write_embedded(self, embedded: _Slice) -> None:
        """Wait for a slice's vectors (re-raising the embedder's error), then write the records
        whose chunks are now all embedded and count them."""
        vectors, seconds = embedded.future.result()
        self.counters.stages["embedding"] += seconds
        done = []
        for (record, chunk), vector in zip(embedded.part, vectors):
            chunk.embedding = vector
            self._chunks_left[id(record)] -= 1
            if self._chunks_left[id(record)] == 0:
                del self._chunks_left[id(record)]
                done.append(record)
        self.counters.chunks_embedded += len(embedded.part)
        if done:
            with self.counters.timed("writing", span=True, **{"airweave.entities": len(done)}):
                entities_write(source_connection=self.connection, sync_id=self.job.sync_id,
                               sync_job_id=self.job.id, records=done)
            for record in done:
                if self._is_new.pop(record.entity_id):
                    self.counters.inserted += 1
                else:
                    self.counters.updated += 1

    def _drain(self) -> None:
        """Write the slice still embedding, if any."""
        embedded, self._in_flight = self._in_flight, None
        if embedded is not None:
            self._write_embedded(embedded)
        self.counters.current_entity = ""

    def _abandon_in_flight(self) -> None:
        """After a failure or a cancel: wait for the embedding thread, drop its slice, stop it."""
        embedded, self._in_flight = self._in_flight, None
        if embedded is not None:
            try:
                embedded.future.result()
            except Exception:  # the job already ends with the error that stopped it
                pass
        if self._embedding_thread is not None:
            self._embedding_thread.shutdown(wait=True)
            self._embedding_thread = None

    def _max_tokens(self) -> int:
        return min(settings.AIRWEAVE_CHUNK_TOKENS, self.embedder.max_tokens)

    def _text_of(self, entity: BaseEntity) -> str:
        """The text to chunk: the entity's content, headed by its name unless it starts with it.

        The name (a front-matter title, a page title) is often absent from the body, yet it is
        the strongest signal of what the entity is about, for both retrieval legs.
        """
        if isinstance(entity, FileEntity):
            text = convert_file(entity.path, max_bytes=settings.AIRWEAVE_MAX_FILE_BYTES).text
        elif isinstance(entity, BlobEntity):
            text = convert_bytes(entity.read_bytes(), entity.file_name,
                                 max_bytes=settings.AIRWEAVE_MAX_FILE_BYTES).text
        else:
            text = entity.textual_representation()
        name = " ".join((entity.name or "").split())
        head = " ".join(text.lstrip().lstrip("#")[: len(name) * 2 + 10].split())
        if name and not head.startswith(name):
            text = f"{name}\n\n{text}"
        return text

    def _checkpoint(self) -> None:
        """Flush counters, publish progress, and stop if a cancel was requested."""
        fields = self.counters.job_fields()
        SyncJob.objects.filter(pk=self.job.pk).update(last_progress_at=timezone.now(), **fields)
        publish_to_group(sync_job_group(self.job.id), make_event("progress", 0, **self.counters.as_progress()))
        if self.on_progress:
            self.on_progress(self.counters)
        status = SyncJob.objects.filter(pk=self.job.pk).values_list("status", flat=True).first()
        if status == S.CANCELLING:
            raise JobCancelled()


class _StageTimer:
    """Adds the wall time of its `with` block to `stages[stage]`; with a `span_name`, the block
    is also a span of that name (an exception leaving it is recorded on the span)."""

    def __init__(self, stages: dict, stage: str, span_name: str | None = None, attributes: dict | None = None):
        self.stages, self.stage = stages, stage
        self.span_name, self.attributes = span_name, attributes or {}
        self._span_cm = None

    def __enter__(self):
        if self.span_name:
            self._span_cm = tracer().start_as_current_span(self.span_name, attributes=self.attributes)
            self._span_cm.__enter__()
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.stages[self.stage] = self.stages.get(self.stage, 0.0) + time.perf_counter() - self.started
        if self._span_cm is not None:
            self._span_cm.__exit__(*exc)
        return False


def _membership_problem(item) -> str | None:
    """Why a yielded membership cannot be stored (one fixed reason per kind), or None when it can."""
    if not isinstance(item, AccessMembership):
        return "not an AccessMembership"
    if not isinstance(item.group_id, str) or not item.group_id.strip():
        return "empty group id"
    member = item.member if isinstance(item.member, str) else ""
    prefix = next((p for p in (USER_PREFIX, GROUP_PREFIX) if member.startswith(p)), None)
    if prefix is None or not member[len(prefix):].strip():
        return "member is neither user:<email> nor group:<group id>"
    if max(len(item.group_id), len(member)) > MEMBERSHIP_FIELD_MAX_CHARS:
        return f"id longer than {MEMBERSHIP_FIELD_MAX_CHARS} characters"
    return None


def _member_key(member: str) -> str:
    """Members as stored: user e-mail addresses lower-cased, group ids as the source gave them."""
    return user_principal(member[len(USER_PREFIX):]) if member.startswith(USER_PREFIX) else member


def _record_of(pending: _Pending) -> EntityRecord:
    e = pending.entity
    return EntityRecord(
        entity_id=e.entity_id, entity_type=e.entity_type(), name=e.name, content_hash=pending.content_hash,
        breadcrumbs=[b.as_dict() for b in e.breadcrumbs], created_at=e.created_at, updated_at=e.updated_at,
        raw_source_fields=e.raw_source_fields, web_url=e.web_url, url=e.url,
        access_viewers=list(e.access_viewers), access_is_public=e.access_is_public,
    )


def _refresh_keyword_segment(collection_id) -> None:
    """Rebuild the collection's keyword segment when due (airweave.collections.keyword_segments).
    A failed rebuild is logged and leaves the searches on the row-posting plans; it never fails the job."""
    try:
        keyword_segment_refresh(collection_id)
    except DATABASE_ERRORS:
        raise
    except Exception:
        logger.warning("keyword segment refresh of collection %s failed", collection_id, exc_info=True)
