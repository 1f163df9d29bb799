"""Freshness: the seconds from an edit at the vendor until search finds it, with a change notification
and without one.

Everything is real except the vendor: `manage.py migrate`, a new API key, daphne serving
airweave.asgi:application and a `manage.py qcluster` worker, on the default database (the
embedded PostgreSQL of `make run` unless DATABASE_URL says otherwise). The vendor is a local fake
GitLab (REST v4: the project, its issues with `updated_after`, served over HTTP on 127.0.0.1;
the server and worker run with AIRWEAVE_ALLOWED_PRIVATE_NETWORKS=127.0.0.1/32 so the SSRF guard
lets the source reach it). The bench:

1. creates a collection and a GitLab connection (issues only, an hourly cron schedule) and waits
   for its first sync;
2. sets the webhook secret token (PUT /source-connections/{id}/notifications) and reads the URL;
3. warms the server with one search (its query embedding model loads once), then `--trials` times: edits one issue in the fake (a new sentence, a new `updated_at`), POSTs the
   webhook exactly as GitLab does (`X-Gitlab-Event: Issue Hook`, `X-Gitlab-Token`), and polls
   instant search every `--poll` seconds until the issue comes back with the new sentence;
   The first `--warmup` edits are reported apart: each worker process loads the embedding model
   on its first job, which a running deployment has long done.
4. baseline: edits an issue without notifying and polls for `--baseline-seconds`: without a
   notification the edit waits for the next scheduled run (the cron interval, 3600 s here).

Prints and saves bench/results/freshness-<time>.json and freshness-latest.json: each trial's
seconds to searchable and the notify call's answer time, their median and max, the debounce
setting, and the baseline's outcome. Deletes its collection at the end.

    .venv/bin/python bench/freshness.py --trials 5
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import httpx

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
PROJECT = "acme/handbook"
TOKEN = "glpat-freshness-bench-0000"
CRON = "0 * * * *"


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class FakeGitLab:
    """A GitLab REST v4 of one project and its issues, on 127.0.0.1 (a thread of this process)."""

    def __init__(self, issues: int = 8):
        created = now_iso()
        self.lock = threading.Lock()
        self.project = {"id": 42, "name": "Handbook", "name_with_namespace": "Acme / Handbook",
                        "path_with_namespace": PROJECT, "description": "The company handbook", "default_branch": "main",
                        "web_url": f"https://gitlab.example/{PROJECT}", "created_at": created, "visibility": "private",
                        "namespace": {"full_path": "acme", "name": "Acme"}, "empty_repo": True}
        topics = ["expense reports", "on-call rota", "laptop refresh", "travel booking", "office access badges",
                  "parental leave", "security training", "code review etiquette"]
        self.issues = {iid: {"iid": iid, "id": 1000 + iid, "title": f"Handbook: {topics[(iid - 1) % len(topics)]}",
                             "description": f"How {topics[(iid - 1) % len(topics)]} work at Acme.", "state": "opened",
                             "created_at": created, "updated_at": created, "labels": ["handbook"],
                             "author": {"username": "mira"}, "user_notes_count": 0,
                             "web_url": f"https://gitlab.example/{PROJECT}/-/issues/{iid}"}
                       for iid in range(1, issues + 1)}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                path, q = unquote(parts.path), {k: v[-1] for k, v in parse_qs(parts.query).items()}
                if self.headers.get("PRIVATE-TOKEN") != TOKEN:
                    return self._send(401, {"message": "401 Unauthorized"})
                if path == f"/api/v4/projects/{PROJECT}":
                    return self._send(200, fake.project)
                if path == "/api/v4/projects/42/issues":
                    with fake.lock:
                        items = sorted(fake.issues.values(), key=lambda i: i["updated_at"])
                        if q.get("updated_after"):
                            items = [i for i in items if i["updated_at"] >= q["updated_after"]]
                        return self._send(200, items)
                return self._send(404, {"message": "404 Not Found"})

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def edit(self, iid: int, sentence: str) -> dict:
        """Append `sentence` to the issue's description, as a person editing it would; returns GitLab's Issue Hook body."""
        with self.lock:
            issue = self.issues[iid]
            issue["description"] += " " + sentence
            issue["updated_at"] = now_iso()
            return {"object_kind": "issue", "event_type": "issue", "user": {"username": "mira"},
                    "project": {"id": 42, "path_with_namespace": PROJECT, "web_url": self.project["web_url"]},
                    "object_attributes": {"id": issue["id"], "iid": iid, "title": issue["title"],
                                          "description": issue["description"], "updated_at": issue["updated_at"],
                                          "action": "update", "state": issue["state"]},
                    "changes": {"description": {"current": issue["description"]}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(*args: str, env: dict) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, capture_output=True, text=True,
                          env=env)
    if done.returncode:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def start(argv: list[str], log_path: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=ROOT, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT, env=env)


def wait_until(what: str, check, timeout: float, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    sys.exit(f"timed out after {timeout:.0f} s waiting for {what}")


def found(api: httpx.Client, collection: str, entity_id: str, sentence: str) -> bool:
    r = api.post(f"/collections/{collection}/search/instant", json={"query": sentence, "limit": 5})
    r.raise_for_status()
    return any(x["airweave_system_metadata"]["original_entity_id"] == entity_id
               and sentence in x["textual_representation"] for x in r.json()["results"])


def active_job(api: httpx.Client, connection_id: str) -> bool:
    jobs = api.get(f"/source-connections/{connection_id}/jobs", params={"limit": 1}).json()
    return bool(jobs) and jobs[0]["status"] in ("pending", "running", "cancelling")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2,
                        help="notified edits run first and reported apart: each worker process loads the embedding "
                             "model on its first job (2 worker processes by default)")
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between two searches")
    parser.add_argument("--baseline-seconds", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=120.0, help="give up on one trial after this long")
    args = parser.parse_args()

    fake = FakeGitLab()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "airweave.settings",
           "AIRWEAVE_ALLOWED_PRIVATE_NETWORKS": "127.0.0.1/32", "AIRWEAVE_PUBLIC_URL": base_url}
    logs = Path(tempfile.mkdtemp(prefix="freshness-"))
    (BENCH_DIR / "results").mkdir(exist_ok=True)
    manage("migrate", "--noinput", env=env)
    api_key = manage("create_api_key", "--name", "freshness-bench", "--days", "1", env=env).strip().splitlines()[-1]
    server = start([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "airweave.asgi:application"],
                   logs / "freshness-daphne.log", env)
    worker = start([sys.executable, str(ROOT / "manage.py"), "qcluster"], logs / "freshness-worker.log", env)
    collection = f"freshness-{uuid.uuid4().hex[:8]}"
    api = httpx.Client(base_url=base_url, headers={"x-api-key": api_key}, timeout=60)
    vendor = httpx.Client(timeout=30)
    try:
        wait_until("daphne", lambda: _answers(f"{base_url}/health"), 90)
        api.post("/collections", json={"name": "Freshness bench", "readable_id": collection}).raise_for_status()
        r = api.post("/source-connections", json={
            "short_name": "gitlab", "readable_collection_id": collection, "name": "Handbook (fake GitLab)",
            "config": {"gitlab_url": fake.url, "projects": [PROJECT], "include_merge_requests": False,
                       "include_notes": False, "include_files": False},
            "authentication": {"credentials": {"private_token": TOKEN}}, "schedule": {"cron": CRON}})
        if r.status_code != 201:
            sys.exit(f"creating the connection failed: {r.status_code} {r.text[:500]}")
        connection_id = r.json()["id"]
        started = time.monotonic()
        wait_until("the first sync", lambda: not active_job(api, connection_id)
                   and api.get(f"/source-connections/{connection_id}/jobs").json(), 300, 0.5)
        first_job = api.get(f"/source-connections/{connection_id}/jobs").json()[0]
        if first_job["status"] != "completed":
            sys.exit(f"the first sync ended {first_job['status']}: {first_job.get('error')}")
        first_sync_seconds = time.monotonic() - started
        found(api, collection, f"{PROJECT}#1", "warm-up")  # the server loads its query embedding model once
        secret = uuid.uuid4().hex
        api.put(f"/source-connections/{connection_id}/notifications", json={"signing_secret": secret}).raise_for_status()
        notify_url = api.get(f"/source-connections/{connection_id}/notifications").json()["url"]
        next_run = api.get(f"/source-connections/{connection_id}").json()["schedule"].get("next_run")

        trials = []
        for n in range(1, args.warmup + args.trials + 1):
            iid = (n - 1) % len(fake.issues) + 1
            sentence = f"Freshness probe {n}: badge readers moved to the {uuid.uuid4().hex[:6]} lobby"
            hook = fake.edit(iid, sentence)
            t0 = time.monotonic()
            answer = vendor.post(notify_url, json=hook, headers={"X-Gitlab-Event": "Issue Hook",
                                                                 "X-Gitlab-Token": secret,
                                                                 "X-Gitlab-Event-UUID": str(uuid.uuid4())})
            notify_ms = (time.monotonic() - t0) * 1000
            if answer.status_code >= 300:
                sys.exit(f"the notification answered {answer.status_code}: {answer.text[:300]}")
            wait_until(f"trial {n}", lambda: found(api, collection, f"{PROJECT}#{iid}", sentence), args.timeout,
                       args.poll)
            seconds = time.monotonic() - t0
            trials.append({"trial": n, "warmup": n <= args.warmup, "seconds_to_searchable": round(seconds, 3), "notify_answer_ms": round(notify_ms, 1),
                           "notify_status": answer.status_code, "outcome": answer.json().get("status")})
            print(f"{'warm-up' if n <= args.warmup else 'trial'} {n}: searchable after {seconds:.2f} s (notify answered {answer.status_code} in "
                  f"{notify_ms:.0f} ms, {answer.json().get('status')})", flush=True)
            wait_until("the job to end", lambda: not active_job(api, connection_id), args.timeout, 0.25)

        sentence = f"Unnotified edit: the {uuid.uuid4().hex[:6]} printer moved upstairs"
        fake.edit(1, sentence)
        t0, seen = time.monotonic(), False
        while time.monotonic() - t0 < args.baseline_seconds and not seen:
            seen = found(api, collection, f"{PROJECT}#1", sentence)
            time.sleep(args.poll)
        baseline = {"notified": False, "polled_seconds": args.baseline_seconds, "found": seen,
                    "schedule_cron": CRON, "schedule_interval_seconds": 3600, "next_scheduled_run": next_run}
        print(f"without a notification: {'found' if seen else 'not found'} within {args.baseline_seconds:.0f} s; "
              f"it waits for the next scheduled run ({CRON}: every 3600 s, next at {next_run})")
    finally:
        try:
            api.delete(f"/collections/{collection}")
        except httpx.HTTPError:
            pass
        for process in (worker, server):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        fake.server.shutdown()

    seconds = [t["seconds_to_searchable"] for t in trials if not t["warmup"]]
    summary = {"median_seconds": round(statistics.median(seconds), 3), "max_seconds": round(max(seconds), 3),
               "min_seconds": round(min(seconds), 3), "target_seconds": 10}
    print(f"edit → searchable with a notification: median {summary['median_seconds']:.2f} s, max "
          f"{summary['max_seconds']:.2f} s over {len(seconds)} trials (target ≤ 10 s); without one: the schedule "
          f"interval ({CRON}, 3600 s)")
    result = {"bench": "freshness", "when": datetime.now(timezone.utc).isoformat(), "source": "gitlab (local fake)",
              "trials": trials, "summary": summary, "baseline_without_notification": baseline,
              "first_sync_seconds": round(first_sync_seconds, 2),
              "debounce_seconds": float(os.environ.get("AIRWEAVE_NOTIFY_DEBOUNCE_SECONDS", 2.0)),
              "worker_poll_seconds": 0.5, "cpus": os.cpu_count(), "python": platform.python_version()}
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for name in (f"freshness-{stamp}.json", "freshness-latest.json"):
        (BENCH_DIR / "results" / name).write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved bench/results/freshness-{stamp}.json (server and worker logs in {logs})")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    main()
