"""Search reads on PostgreSQL streaming replicas; every write, and every other read, on the primary.

`DATABASE_REPLICA_URLS` (settings) adds the database aliases `replica_1`, `replica_2`, … Reads go
to a replica only inside `search_reads()`: the search tiers open it around the snapshot of one
search (`search.retrieval.read_snapshot`), so both legs, the keyword statistics and the hydration
of the page run on one replica connection. Everything else (the faces' selectors, the sync
pipeline, the admin) reads the primary, because those read what they have just written.

Read-your-writes (docs/scaling.md): when a sync job of a collection ends, the primary's WAL
position (`pg_current_wal_insert_lsn()`) is recorded on the collection (`Collection.written_lsn`). A
search of that collection uses a replica only once the replica has replayed past it
(`pg_last_wal_replay_lsn() >= written_lsn`), checked with one query on the replica before the
snapshot starts; otherwise it reads the primary.

A replica that cannot be reached, or that is no longer in recovery (promoted: it no longer
follows this primary), is passed over: the search reads the next replica or the primary, a
warning is logged, `airweave_search_reads_total{target="primary", reason="replica_down"}`
counts it, and the replica is not tried again for `AIRWEAVE_REPLICA_RETRY_SECONDS` (10 s).
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from airweave.observability.metrics import SEARCH_READS

logger = logging.getLogger(__name__)

REPLICA_PREFIX = "replica_"
_read_alias: ContextVar[str | None] = ContextVar("airweave_read_alias", default=None)
_down_until: dict[str, float] = {}
_down_lock = threading.Lock()
_turn = itertools.count()


def replica_aliases() -> list[str]:
    """The database aliases of the configured replicas (`replica_1`, …), in order; [] without any."""
    return [alias for alias in settings.DATABASES if alias.startswith(REPLICA_PREFIX)]


class ReplicaRouter:
    """Django database router: reads inside `search_reads()` on its alias, the rest on the primary.

    Writes always go to `default` (the primary); migrations never run on a replica (it is read
    only and receives the schema through replication).
    """

    def db_for_read(self, model, **hints):
        return _read_alias.get()

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # a replica holds the primary's very rows

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return False if db.startswith(REPLICA_PREFIX) else None


def search_connection():
    """The connection the current search reads: its replica's inside `search_reads()`, else the primary's."""
    return connections[_read_alias.get() or DEFAULT_DB_ALIAS]


def search_alias() -> str:
    """The alias of `search_connection()`."""
    return _read_alias.get() or DEFAULT_DB_ALIAS


@contextmanager
def search_reads(written_lsn: str = ""):
    """Route the enclosed reads to a replica that has replayed past `written_lsn` (a pg_lsn as
    text, e.g. "0/3000148"; "" for none recorded), or to the primary when none has or none is
    configured. Yields the alias chosen. Nested inside another `search_reads()`, keeps its alias.
    """
    current = _read_alias.get()
    if current is not None:
        yield current
        return
    alias = choose_read_alias(written_lsn)
    token = _read_alias.set(alias)
    try:
        yield alias
    finally:
        _read_alias.reset(token)


def choose_read_alias(written_lsn: str = "") -> str:
    """The alias a search should read: the first replica (taking turns) that answers, is in
    recovery and has replayed past `written_lsn`; else `default`. Counts the choice in
    `airweave_search_reads_total`. Never raises for a replica's failure (it is logged and the
    replica rested for AIRWEAVE_REPLICA_RETRY_SECONDS).
    """
    aliases = replica_aliases()
    if not aliases:
        return DEFAULT_DB_ALIAS
    start = next(_turn) % len(aliases)
    reason = "replica_down"
    for alias in aliases[start:] + aliases[:start]:
        if _resting(alias):
            continue
        try:
            in_recovery, caught_up = _replica_state(alias, written_lsn)
        except DatabaseError as exc:
            _rest(alias, f"unreachable: {str(exc).strip()}")
            continue
        if not in_recovery:
            _rest(alias, "not in recovery (promoted or not a standby)")
            continue
        if caught_up:
            SEARCH_READS.labels("replica", "replica").inc()
            return alias
        reason = "read_your_writes"
    SEARCH_READS.labels("primary", reason).inc()
    return DEFAULT_DB_ALIAS


def _replica_state(alias: str, written_lsn: str) -> tuple[bool, bool]:
    """(in recovery, replayed past written_lsn) of one replica; raises DatabaseError when unreachable.

    A kept connection (CONN_MAX_AGE) that broke since its last use is closed and opened again once.
    """
    connection = connections[alias]
    for attempt in range(2):
        try:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_is_in_recovery(), coalesce(%s = '' OR "
                            "pg_last_wal_replay_lsn() >= nullif(%s, '')::pg_lsn, false)", [written_lsn, written_lsn])
                in_recovery, caught_up = cur.fetchone()
            return bool(in_recovery), bool(caught_up)
        except DatabaseError:
            reused = connection.connection is not None and attempt == 0
            connection.close()
            if not reused:
                raise
    raise AssertionError("unreachable")


def _resting(alias: str) -> bool:
    with _down_lock:
        return _down_until.get(alias, 0.0) > time.monotonic()


def _rest(alias: str, why: str) -> None:
    logger.warning("replica %s passed over for %ss, searches read the primary meanwhile: %s", alias,
                   settings.AIRWEAVE_REPLICA_RETRY_SECONDS, why)
    try:
        connections[alias].close()
    except DatabaseError:
        pass
    with _down_lock:
        _down_until[alias] = time.monotonic() + settings.AIRWEAVE_REPLICA_RETRY_SECONDS


def replicas_reset() -> None:
    """Forget which replicas were passed over (they are tried again at the next search)."""
    with _down_lock:
        _down_until.clear()


def primary_lsn() -> str:
    """The primary's current WAL insert position as text (e.g. "0/3000148") when replicas are
    configured; "" without replicas (nothing needs it) or when the query fails.

    The insert position, not `pg_current_wal_lsn()` (the write position): with
    `synchronous_commit = off` a commit's record may still sit in the WAL buffers, behind the
    write position, and a replica that replayed "past" it would not yet show the commit.
    """
    if not replica_aliases():
        return ""
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cur:
            cur.execute("SELECT pg_current_wal_insert_lsn()::text")
            return cur.fetchone()[0]
    except DatabaseError:
        logger.warning("could not read the primary's WAL position", exc_info=True)
        return ""
