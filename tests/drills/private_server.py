"""A private embedded PostgreSQL for the drills that stop the database: its own data folder, its
own daphne and worker. The server the rest of the suite uses is never stopped."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from airweave.embedded_db import stop
from tests.database.pg_single import scratch_folder
from tests.processes import manage, subprocess_env


class PrivateDatabase:
    """The product's embedded server in a scratch folder (`AIRWEAVE_DATA_DIR`), migrated."""

    def __init__(self, **env):
        self.folder = scratch_folder()
        self.env = {"AIRWEAVE_DATA_DIR": str(self.folder), "AIRWEAVE_DATABASE_NAME": "postgres", **env}
        done = manage("migrate", "--noinput", **self.env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    def api_key(self, org: str = "drill") -> str:
        done = manage("create_api_key", "--org", org, **self.env)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        """Stop the server (pg_ctl stop, fast mode: every connection is cut)."""
        stop(self.folder)
        assert not (self.folder / "pg" / "postmaster.pid").exists()

    def start(self) -> None:
        """Start it again, on the same socket (as any process of the product would)."""
        code = f"from pathlib import Path; from airweave.embedded_db import start; start(Path({str(self.folder)!r}))"
        done = subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, env=subprocess_env(**self.env),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]

    def remove(self) -> None:
        stop(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)

    @property
    def data_dir(self) -> Path:
        return self.folder
