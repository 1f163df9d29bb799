"""The database's vector support, checked once per database by every process on first use.

Every process of the product (the web server, the worker, `migrate`, `make run`'s commands)
runs one cheap pgvector operation the first time it connects to a database: 384-dimension
vectors cast from text and compared with the three distances the product uses. When pgvector
is missing, older than 0.8, wrong, or kills the backend (a pgvector built for CPU features this
machine lacks dies with SIGILL), the process stops with one message that says what failed, on
which CPU, and the way out, instead of a loop of crashes and recovery-mode errors.

An installed extension older than the server's (a data folder of an earlier wheel) is brought
up to date here with `ALTER EXTENSION vector UPDATE`.
"""
from __future__ import annotations

import logging
import math
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg

logger = logging.getLogger(__name__)

MIN_PGVECTOR = (0, 8, 0)
MIN_POSTGRES = 15
PROBE_DIMENSIONS = 384  # the local model's; short vectors skip the SIMD loops that crash
EXIT_CODE = 78  # EX_CONFIG of sysexits.h: the configuration (here the database) is unusable
WAY_OUT = ("Way out: set DATABASE_URL to any PostgreSQL 15+ with pgvector 0.8+ "
           "(e.g. DATABASE_URL=postgres://user:password@host:5432/dbname), then run `manage.py doctor`.")


@dataclass(frozen=True)
class CpuInfo:
    """What the machine's CPU is and whether it has the SIMD sets pgvector builds use."""

    model: str
    arch: str
    avx2: bool | None  # None: not an x86 CPU, or its flags could not be read
    avx512: bool | None

    def describe(self) -> str:
        """One line, e.g. "AMD EPYC (x86_64; AVX2: yes, AVX-512: no)"."""
        if self.avx2 is None:
            return f"{self.model} ({self.arch})"
        yes_no = {True: "yes", False: "no"}
        return f"{self.model} ({self.arch}; AVX2: {yes_no[self.avx2]}, AVX-512: {yes_no[self.avx512]})"


def cpu_info(cpuinfo_path: Path = Path("/proc/cpuinfo")) -> CpuInfo:
    """The CPU of this machine, from /proc/cpuinfo on Linux, else from `platform`."""
    arch = platform.machine() or "unknown"
    model, flags = platform.processor() or arch, None
    try:
        text = cpuinfo_path.read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name" and value and model == (platform.processor() or arch):
            model = value
        elif key == "flags" and flags is None:
            flags = set(value.split())
    if flags is None or arch not in ("x86_64", "AMD64", "i686", "i386"):
        return CpuInfo(model=model, arch=arch, avx2=None, avx512=None)
    return CpuInfo(model=model, arch=arch, avx2="avx2" in flags, avx512="avx512f" in flags)


@dataclass(frozen=True)
class VectorSupport:
    """What the probe found on a healthy server."""

    server_version: str  # e.g. "18.4"
    pgvector_version: str  # e.g. "0.8.5"; the installed extension after any update
    updated_from: str | None  # the version found installed when it was older, else None
    installed: bool  # False: pgvector is available but `migrate` has not created it here yet


class VectorSupportError(Exception):
    """The database cannot do the product's vector work. `str()` is the whole message."""

    def __init__(self, what: str, cpu: CpuInfo | None = None):
        self.what = what
        cpu = cpu or cpu_info()
        super().__init__(f"{what}\nThis machine's CPU: {cpu.describe()}.\n{WAY_OUT}")


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _probe_vectors() -> tuple[str, str, float, float, float]:
    """Two 384-dimension vectors as pgvector text and their L2, cosine and inner-product
    distances as pgvector defines them (`<->`, `<=>`, `<#>` = negative inner product)."""
    a = [math.sin(i) for i in range(PROBE_DIMENSIONS)]
    b = [math.cos(i / 3) for i in range(PROBE_DIMENSIONS)]
    # pgvector stores float4: compare against float4-rounded inputs.
    a = [float(f"{x:.6g}") for x in a]
    b = [float(f"{x:.6g}") for x in b]
    dot = sum(x * y for x, y in zip(a, b))
    l2 = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    cosine = 1 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))
    as_text = lambda v: "[" + ",".join(f"{x:.6g}" for x in v) + "]"  # noqa: E731
    return as_text(a), as_text(b), l2, cosine, -dot


def _run_vector_operation(cursor) -> None:
    a, b, l2, cosine, negative_dot = _probe_vectors()
    dims = PROBE_DIMENSIONS
    cursor.execute(
        f"SELECT %s::vector({dims}) <-> %s::vector({dims}), %s::vector({dims}) <=> %s::vector({dims}),"
        f" %s::vector({dims}) <#> %s::vector({dims})", (a, b, a, b, a, b))
    got = cursor.fetchone()
    for name, value, expected in zip(("L2", "cosine", "inner product"), got, (l2, cosine, negative_dot)):
        if not math.isclose(value, expected, rel_tol=1e-3, abs_tol=1e-3):
            raise VectorSupportError(
                f"pgvector computes wrong {name} distances: {value} for two {dims}-dimension vectors "
                f"whose distance is {expected:.6f}.")


def probe(connection: psycopg.Connection, *, update: bool = True) -> VectorSupport:
    """Check `connection`'s server (an autocommit psycopg connection) for the product's vector work.

    Updates an installed pgvector older than the server's when `update` is true. When pgvector
    is available but not created in this database yet, the operation runs inside a transaction
    that creates the extension and is rolled back.
    Returns a VectorSupport. Raises VectorSupportError with the whole message.
    """
    cpu = cpu_info()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('server_version'), current_setting('server_version_num')::int")
            server_version, version_num = cursor.fetchone()
            if version_num < MIN_POSTGRES * 10000:
                raise VectorSupportError(f"PostgreSQL {server_version} is older than {MIN_POSTGRES}.", cpu)
            cursor.execute("SELECT default_version, installed_version FROM pg_available_extensions"
                           " WHERE name = 'vector'")
            row = cursor.fetchone()
            if row is None:
                raise VectorSupportError(
                    f"pgvector is not installed on this PostgreSQL {server_version} server "
                    "(no extension named `vector` is available).", cpu)
            available, installed = row
            if _version_tuple(available) < MIN_PGVECTOR:
                raise VectorSupportError(
                    f"pgvector {available} is older than {'.'.join(map(str, MIN_PGVECTOR))}.", cpu)
            updated_from = None
            if installed and update and _version_tuple(installed) < _version_tuple(available):
                cursor.execute("ALTER EXTENSION vector UPDATE")
                updated_from, installed = installed, available
            if installed:
                _run_vector_operation(cursor)
            else:
                with connection.transaction(force_rollback=True):
                    cursor.execute("CREATE EXTENSION vector")
                    _run_vector_operation(cursor)
    except psycopg.OperationalError as error:
        if connection.closed or connection.broken:
            raise VectorSupportError(
                "The PostgreSQL backend died while computing a pgvector distance (the server closed "
                "the connection; its log shows `terminated by signal 4: Illegal instruction` when "
                "pgvector was built for CPU features this machine lacks).", cpu) from error
        raise VectorSupportError(f"A pgvector operation failed: {error}", cpu) from error
    except psycopg.Error as error:
        raise VectorSupportError(f"A pgvector operation failed: {error}".strip(), cpu) from error
    return VectorSupport(server_version=server_version, pgvector_version=installed or available,
                         updated_from=updated_from, installed=bool(installed))


_checked: set[tuple] = set()
_suspended = False


def suspend_self_check() -> None:
    """Stop checking on connect in this process (for `manage.py doctor`, which reports instead)."""
    global _suspended
    _suspended = True


def check_on_connect(sender, connection, **kwargs) -> None:
    """`connection_created` receiver: probe each database once per process; stop it on failure.

    A failing database ends the process with EXIT_CODE after printing the message to stderr:
    nothing of the product works without vectors, and every later query would fail or crash.
    """
    if _suspended or connection.vendor != "postgresql":
        return
    params = connection.settings_dict
    key = (params.get("HOST"), params.get("PORT"), params.get("NAME"))
    if key in _checked:
        return
    _checked.add(key)
    try:
        support = probe(connection.connection)
    except VectorSupportError as error:
        sys.stderr.write(f"\nThe database cannot store or search vectors.\n{error}\n")
        sys.stderr.flush()
        os._exit(EXIT_CODE)
    if support.updated_from:
        logger.warning("pgvector updated from %s to %s in database %s", support.updated_from,
                       support.pgvector_version, params.get("NAME"))
