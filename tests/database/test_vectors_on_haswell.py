"""pgvector of the embedded server on a CPU with AVX2 and no AVX-512, emulated by QEMU.

Catches a pgvector built for its build machine's CPU (AVX-512 code paths) on any machine,
including one that has AVX-512. Set AIRWEAVE_PG_BIN_DIR to run it against another server's
binaries (e.g. an earlier wheel's, which this test must fail).
"""
from __future__ import annotations

import os
import platform
import re
import shutil
from pathlib import Path

import pytest

from airweave.embedded_db import bin_dir
from tests.database import pg_single

QEMU = shutil.which("qemu-x86_64")
pytestmark = [
    pytest.mark.skipif(platform.machine() != "x86_64", reason="the emulated CPU model is an x86-64 one"),
    pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 is missing (Debian package qemu-user; .ci/run installs it)"),
]
ROWS, DIMENSIONS = 300, 384


def _row_ids(output: str) -> list[int]:
    return [int(v) for v in re.findall(r'\bid = "(\d+)"', output)]


def test_vector_work_runs_on_a_haswell_cpu():
    server_bin = Path(os.environ.get("AIRWEAVE_PG_BIN_DIR") or bin_dir())
    prefix = [QEMU, "-cpu", "Haswell"]
    folder = pg_single.scratch_folder()
    try:
        pgdata = folder / "data"
        pg_single.initdb(server_bin, pgdata, prefix)
        vector_of = ("(SELECT array_agg(sin({i} * j + j / 7.0)::real ORDER BY j)"
                     f" FROM generate_series(1, {DIMENSIONS}) j)::vector({DIMENSIONS})")
        done = pg_single.single_user(server_bin, pgdata, [
            "CREATE EXTENSION vector",
            f"CREATE TABLE items (id int PRIMARY KEY, embedding vector({DIMENSIONS}))",
            f"INSERT INTO items SELECT i, {vector_of.format(i='i')} FROM generate_series(1, {ROWS}) i",
            "SELECT 'distances', round((embedding <-> embedding)::numeric, 6) AS l2,"
            " round((embedding <=> embedding)::numeric, 6) AS cosine FROM items WHERE id = 1",
            "CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops)",
            "SET enable_seqscan = off",
            f"EXPLAIN SELECT id FROM items ORDER BY embedding <=> {vector_of.format(i=42)} LIMIT 3",
            f"SELECT id FROM items ORDER BY embedding <=> {vector_of.format(i=42)} LIMIT 3",
        ], prefix)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    output = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                       if not line.startswith("qemu-x86_64: warning:"))  # TCG lacks some Haswell bits
    assert done.returncode == 0, f"postgres --single under QEMU (Haswell) exited with {done.returncode}:\n{output[-3000:]}"
    assert "ERROR" not in output, output[-3000:]
    assert re.search(r'l2 = "0(\.0+)?"', output) and re.search(r'cosine = "0(\.0+)?"', output), output[-3000:]
    assert "Index Scan using items_hnsw" in output, output[-3000:]
    assert _row_ids(output)[:1] == [42], output[-3000:]
