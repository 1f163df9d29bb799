"""Drill 2: PostgreSQL is stopped and started again under a sync and a stream of searches.

A private embedded server (its own data folder) with its own daphne and worker: a 300-file sync
runs in the worker while a client searches without pause, and the server is stopped for a few
seconds. In the gap every search answers 503 with a JSON error that says the database is
unavailable (a streamed search too), never a 500 or a page; once the server is back the same web
process answers 200 again; the sync job ends (failed with `database_unavailable`, or completed
if the gap fell between its database calls) and is never left running; the next sync completes.
"""
from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.drills.corpus import write_corpus
from tests.drills.private_server import PrivateDatabase
from tests.processes import start_daphne, start_worker

FILES = 300
GAP_SECONDS = 4


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp("drill-restart")
    corpus = write_corpus(root / "corpus", FILES)
    small = write_corpus(root / "small", 10, seed=3)
    database = PrivateDatabase(AIRWEAVE_LOCAL_ROOTS=str(root), AIRWEAVE_RATE_LIMIT="", AIRWEAVE_SEARCH_RATE_LIMIT="")
    key = database.api_key()
    server, url = start_daphne(AIRWEAVE_WARM_UP="1", **database.env)
    worker = start_worker(**database.env)
    client = httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=60)
    try:
        yield {"db": database, "server": server, "worker": worker, "client": client, "corpus": corpus,
               "small": small}
    finally:
        client.close()
        worker_log, server_log = worker.stop(), server.stop()
        database.remove()
    # Tracebacks while the database is down are the logged failures of the gap; none may be a 500.
    assert " 500 " not in server_log, server_log[-3000:]


def _connection(client, name: str, path) -> dict:
    r = client.post("/source-connections", json={"short_name": "local_files", "name": name,
                                                  "readable_collection_id": "restart", "config": {"path": str(path)},
                                                  "sync_immediately": False})
    assert r.status_code in (200, 201), r.text
    return r.json()


def _wait_job(client, connection_id, predicate, timeout: float, what: str) -> dict:
    started = time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            jobs = client.get(f"/source-connections/{connection_id}/jobs").json()
        except httpx.HTTPError:
            jobs = []
        if isinstance(jobs, list) and jobs and predicate(jobs[0]):
            print(f"{what}: {time.monotonic() - started:.1f} s")
            return jobs[0]
        time.sleep(0.5)
    pytest.fail(f"{what} within {timeout} s")


class Searcher(threading.Thread):
    """Searches the collection without pause until stopped; keeps (status, content type, body) of each answer."""

    def __init__(self, client: httpx.Client):
        super().__init__(daemon=True)
        self.client, self.answers, self.halt = client, [], threading.Event()

    def run(self):
        while not self.halt.is_set():
            try:
                r = self.client.post("/collections/restart/search", json={"query": "harbour lantern", "limit": 3,
                                                                           "expand_query": False, "rerank": False,
                                                                           "generate_answer": False})
                self.answers.append((r.status_code, r.headers.get("content-type", ""), r.text))
            except httpx.HTTPError as exc:  # the web process itself must never drop a request
                self.answers.append((0, "", repr(exc)))
            time.sleep(0.05)


@pytest.mark.slow
def test_searches_answer_503_in_the_gap_and_the_sync_never_stays_running(stack):
    client, db = stack["client"], stack["db"]
    assert client.post("/collections", json={"name": "Restart", "readable_id": "restart"}).status_code == 201
    small = _connection(client, "small", stack["small"])
    assert client.post(f"/source-connections/{small['id']}/run").status_code == 200
    _wait_job(client, small["id"], lambda j: j["status"] == "completed", 180, "the small sync")
    big = _connection(client, "big", stack["corpus"])

    searcher = Searcher(client)
    searcher.start()
    assert client.post(f"/source-connections/{big['id']}/run").status_code == 200
    _wait_job(client, big["id"], lambda j: j["status"] == "running" and j["entities_inserted"] > 0, 180,
              "the big sync under way")
    daphne_pid = stack["server"].process.pid

    db.stop()
    time.sleep(GAP_SECONDS)
    gap = len(searcher.answers)
    stream = client.post("/collections/restart/search/stream", json={"query": "harbour"},
                         headers={"Accept": "text/event-stream"})
    ui = client.get("/ui/", follow_redirects=False)
    db.start()

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(a[0] == 200 for a in searcher.answers[gap:]):
        time.sleep(0.2)
    searcher.halt.set()
    searcher.join(30)

    statuses = [a[0] for a in searcher.answers]
    unavailable = [a for a in searcher.answers if a[0] == 503]
    assert set(statuses) <= {200, 503}, sorted(set(statuses))
    assert unavailable, "no search met the gap"
    for status, content_type, body in unavailable:
        assert content_type.startswith("application/json") and "database is unavailable" in body, body[:300]
    assert 200 in statuses[gap:], "the web process did not recover"
    assert stack["server"].process.poll() is None and stack["server"].process.pid == daphne_pid
    assert stream.status_code == 503 and stream.headers["content-type"].startswith("application/json"), stream.text
    assert "database is unavailable" in stream.json()["detail"] and stream.headers["retry-after"]
    assert ui.status_code in (302, 503) and "Traceback" not in ui.text  # no debug page

    ended = _wait_job(client, big["id"], lambda j: j["status"] not in ("pending", "running", "cancelling"), 300,
                      "the big sync ended")
    assert ended["status"] in ("failed", "completed"), ended
    if ended["status"] == "failed":
        assert ended["error_category"] == "database_unavailable", ended

    assert client.post(f"/source-connections/{big['id']}/run").status_code == 200
    done = _wait_job(client, big["id"], lambda j: j["status"] in ("completed", "failed"), 300, "the next sync")
    assert done["status"] == "completed", done
    detail = client.get(f"/source-connections/{big['id']}").json()
    assert detail["entities"]["total_entities"] == FILES, detail.get("entities")
    # The worker's events reach the web process again: its channel layer does not wait out a dead pool.
    assert "PoolTimeout" not in stack["worker"].output(), stack["worker"].output()[-3000:]
    print(f"searches: {len(statuses)} sent, {len(unavailable)} answered 503 in the gap, 0 errors; "
          f"the sync ended {ended['status']}")
