"""`manage.py doctor` against real databases: healthy, a stopped server, a server without pgvector."""
from __future__ import annotations

import time

import pytest

from airweave.health import worker_clusters
from tests.processes import free_port, manage, start_worker

CHECK_NAMES = ("python", "cpu", "database", "pgvector", "vector round trip", "hnsw indexes", "embedding model",
               "worker", "disk")
# The machine's own PostgreSQL: trust auth, database `test`, and no pgvector.
SYSTEM_POSTGRES = "postgres://root@127.0.0.1:5432/test"


def _lines(output: str) -> dict[str, str]:
    """{check name: its status word} from the report."""
    found = {}
    for line in output.splitlines():
        for name in sorted(CHECK_NAMES, key=len, reverse=True):
            if line[6:].startswith(name + " "):
                found.setdefault(name, line[:4].strip())
                break
    return found


@pytest.mark.django_db(transaction=True)
def test_a_healthy_install_passes_every_check():
    worker = start_worker()
    try:
        deadline = time.monotonic() + 60
        while not worker_clusters():
            assert worker.process.poll() is None and time.monotonic() < deadline, worker.output()[-3000:]
            time.sleep(0.5)
        report = manage("doctor")
    finally:
        worker.stop()
    assert report.returncode == 0, report.stdout + report.stderr
    assert _lines(report.stdout) == {name: "OK" for name in CHECK_NAMES}, report.stdout
    assert "pgvector 0.8.5" in report.stdout and "All 9 checks passed." in report.stdout


def test_a_stopped_database_is_named_and_fails():
    report = manage("doctor", DATABASE_URL=f"postgres://postgres@127.0.0.1:{free_port()}/postgres")
    assert report.returncode == 1, report.stdout + report.stderr
    lines = _lines(report.stdout)
    assert lines["database"] == "FAIL" and "pgvector" not in lines, report.stdout
    assert "cannot connect" in report.stdout and "fix: start that server or correct DATABASE_URL" in report.stdout
    assert lines["python"] == "OK" and lines["worker"] == "FAIL"  # every other check still runs
    assert "Traceback" not in report.stderr, report.stderr


def test_a_server_without_pgvector_is_named_and_fails():
    report = manage("doctor", DATABASE_URL=SYSTEM_POSTGRES)
    if "cannot connect" in report.stdout:
        pytest.skip("no system PostgreSQL answers on 127.0.0.1:5432")
    assert report.returncode == 1, report.stdout + report.stderr
    assert _lines(report.stdout)["pgvector"] == "FAIL", report.stdout
    assert "pgvector is not installed on this PostgreSQL" in report.stdout
    assert "DATABASE_URL to any PostgreSQL 15+ with pgvector 0.8+" in report.stdout


def test_migrate_stops_with_one_message_on_a_server_without_pgvector():
    done = manage("migrate", "--noinput", DATABASE_URL=SYSTEM_POSTGRES)
    if "Connection refused" in done.stderr:
        pytest.skip("no system PostgreSQL answers on 127.0.0.1:5432")
    assert done.returncode == 78, done.stdout + done.stderr
    assert done.stderr.count("The database cannot store or search vectors.") == 1, done.stderr
    assert "This machine's CPU:" in done.stderr and "Way out: set DATABASE_URL" in done.stderr
    assert "Traceback" not in done.stderr and "Applying" not in done.stdout
