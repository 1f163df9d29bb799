"""Drill 6: 30 clients search without pause while a 300-file sync runs and its worker is killed.

A real daphne and a real qcluster on the test database. The sync's worker is killed with
SIGKILL mid-embedding; the cluster replaces it, the job fails (`worker_lost`), and the next sync
completes — all while 30 concurrent clients search. Every answer is 200, or a declared 429/503;
no request errors, no 500.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections import Counter

import httpx
import pytest
from django_q.tasks import async_task

from airweave.collections.models import SyncJob
from airweave.collections.services import collection_create
from airweave.tenancy.models import Organization
from airweave.tenancy.services import api_key_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.drills.corpus import unique_word, write_corpus
from tests.processes import start_daphne, start_worker

CLIENTS, FILES = 30, 300
ALLOWED = {200, 429, 503}


def _wait(predicate, timeout: float, what: str, *logs):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"{what} within {timeout} s\n" + "\n".join(log.output()[-2000:] for log in logs))


@pytest.mark.slow
def test_thirty_concurrent_searches_hold_while_the_worker_is_killed(transactional_db, tmp_path):
    root = tmp_path / "load"
    corpus = write_corpus(root / "corpus", FILES)
    searched = write_corpus(root / "searched", 20, seed=11)
    org = Organization.objects.create(name=f"load-{uuid.uuid4().hex[:8]}")
    key = api_key_create(organization=org, name="load").key
    collection = collection_create(organization=org, name="Load", readable_id="load")
    small = source_connection_create(collection=collection, short_name="local_files",
                                     config={"path": str(searched)}, sync_immediately=False, for_api=False)
    assert sync_job_run(job_id=sync_job_start(source_connection=small, enqueue=False).id).status == "completed"
    big = source_connection_create(collection=collection, short_name="local_files", config={"path": str(corpus)},
                                   sync_immediately=False, for_api=False)

    # No rate limits: every search reaches the search path (a 429 would still be a declared answer).
    env = {"AIRWEAVE_LOCAL_ROOTS": str(root), "AIRWEAVE_RATE_LIMIT": "", "AIRWEAVE_SEARCH_RATE_LIMIT": ""}
    server, url = start_daphne(AIRWEAVE_WARM_UP="1", **env)
    worker = start_worker(**env)
    statuses, errors, halt = Counter(), [], threading.Event()

    def client(n: int):
        with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=180) as http:
            i = 0
            while not halt.is_set():
                query = f"{unique_word((n + i) % 20)} harbour"
                i += 1
                try:
                    r = http.post("/collections/load/search/instant", json={"query": query, "limit": 5})
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))
                    continue
                statuses[r.status_code] += 1
                if r.status_code not in ALLOWED:
                    errors.append(f"{r.status_code}: {r.text[:300]}")

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    try:
        for thread in threads:
            thread.start()
        job = sync_job_start(source_connection=big, enqueue=False)
        marker = tmp_path / "held.json"
        async_task("tests.drills.faults.run_sync_job_until", str(job.id), "embedding", 2, str(marker), sync=False)
        held = json.loads(_wait(lambda: marker.exists() and marker.read_text(), 300, "the embedding point", worker))
        os.kill(held["pid"], signal.SIGKILL)
        failed = _wait(lambda: SyncJob.objects.filter(pk=job.pk, status="failed").first(), 120,
                       "the killed worker's job failed", worker)
        assert failed.error_category == "worker_lost"
        again = sync_job_start(source_connection=big, enqueue=False)
        async_task("connectors.sync.tasks.run_sync_job", str(again.id), sync=False)
        done = _wait(lambda: SyncJob.objects.filter(pk=again.pk, status__in=SyncJob.FINAL_STATUSES).first(), 600,
                     "the next sync finished", worker)
        assert done.status == "completed", done.error
    finally:
        halt.set()
        for thread in threads:
            thread.join(200)
        worker_log, server_log = worker.stop(), server.stop()
    total = sum(statuses.values())
    print(json.dumps({"clients": CLIENTS, "searches": total, "statuses": dict(statuses), "errors": len(errors)}))
    assert not errors, errors[:10]
    assert total >= CLIENTS and statuses[200] > 0
    assert "Traceback" not in server_log, server_log[-3000:]
