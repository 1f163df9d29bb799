"""Memory footprint of the product as a user runs it: web + one worker + the embedded PostgreSQL.

Starts what `make run` starts, in a fresh data folder: `manage.py migrate`, then (instead of
`manage.py demo`, whose indexing of the docs runs in its own short-lived process and would only
add minutes) `manage.py create_api_key` for the API key, then
`manage.py qcluster` (one worker cluster: its sentinel, monitor, pusher and AIRWEAVE_WORKERS
worker processes) and daphne serving airweave.asgi:application on a free loopback port. The
embedded PostgreSQL is the one the settings start in that folder.

It samples every `--interval` seconds the memory of three process trees — web (daphne), worker
(qcluster and its children), PostgreSQL (the postmaster and its backends) — as PSS (proportional
set size: a page shared by n processes counts 1/n in each, so shared libraries, the forked
workers' copy-on-write pages and PostgreSQL's shared buffers are counted once; Linux, read from
/proc/<pid>/smaps_rollup) and as RSS (each process's resident set, shared pages counted again in
every process). Phases:

- idle: from the moment /health answers, `--idle-seconds` with nothing to do (the web process
  loads the embedding model in the background at start, as `make run` does: that is included);
- sync: a collection with a `local_files` connection over `--docs` SciFact documents written as
  Markdown (bench/beir.py's writer), created through the REST API, synced by the worker until
  the job ends; then one search through the API.

Prints the peaks and saves bench/results/footprint-<time>.json (and footprint-latest.json), with
the processes' breakdown at each peak. The data folder is removed afterwards (its server stopped).

    .venv/bin/python bench/footprint.py --dataset ../shared/data/scifact --docs 1000
    AIRWEAVE_WORKERS=1 .venv/bin/python bench/footprint.py --dataset ../shared/data/scifact

Targets (issue 13): at most 1.5 GB during a sync, 800 MB idle (sums of PSS).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx
import psutil

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
MB = 1024 * 1024
TARGETS_MB = {"idle": 800, "sync": 1500}
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> list[psutil.Process]:
    """The process `pid` and all its descendants ([] once it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def process_memory(process: psutil.Process) -> dict | None:
    """{pid, name, rss_mb, pss_mb} of one process (pss_mb None where the OS has no PSS); None if gone."""
    try:
        with process.oneshot():
            name = process.name()
            cmdline = " ".join(process.cmdline()[1:4])[:120]
            try:
                full = process.memory_full_info()
                rss, pss = full.rss, getattr(full, "pss", None)
            except psutil.AccessDenied:
                rss, pss = process.memory_info().rss, None
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    return {"pid": process.pid, "name": name, "cmdline": cmdline, "rss_mb": round(rss / MB, 1),
            "pss_mb": None if pss is None else round(pss / MB, 1)}


def sample(roots: dict[str, int]) -> dict:
    """One measurement of each part's tree: {part: {rss_mb, pss_mb, processes: [...]}} and totals."""
    parts = {}
    for part, pid in roots.items():
        processes = [m for m in (process_memory(p) for p in tree(pid)) if m is not None]
        parts[part] = {
            "rss_mb": round(sum(m["rss_mb"] for m in processes), 1),
            "pss_mb": round(sum((m["pss_mb"] if m["pss_mb"] is not None else m["rss_mb"]) for m in processes), 1),
            "processes": processes,
        }
    return {"parts": parts, "pss_mb": round(sum(p["pss_mb"] for p in parts.values()), 1),
            "rss_mb": round(sum(p["rss_mb"] for p in parts.values()), 1)}


class Phase:
    """The peaks of a phase: the largest total PSS sample (with its breakdown) and each part's own peak."""

    def __init__(self, name: str):
        self.name, self.samples, self.peak, self.part_peaks, self.started = name, 0, None, {}, time.monotonic()

    def add(self, measured: dict) -> None:
        self.samples += 1
        if self.peak is None or measured["pss_mb"] > self.peak["pss_mb"]:
            self.peak = measured
        for part, values in measured["parts"].items():
            best = self.part_peaks.setdefault(part, {"pss_mb": 0.0, "rss_mb": 0.0})
            best["pss_mb"] = max(best["pss_mb"], values["pss_mb"])
            best["rss_mb"] = max(best["rss_mb"], values["rss_mb"])
        self.last = measured

    def report(self) -> dict:
        return {"seconds": round(time.monotonic() - self.started, 1), "samples": self.samples,
                "peak_pss_mb": self.peak["pss_mb"], "peak_rss_mb": self.peak["rss_mb"],
                "target_mb": TARGETS_MB.get(self.name), "part_peaks": self.part_peaks,
                "at_peak": {part: {"pss_mb": v["pss_mb"], "rss_mb": v["rss_mb"], "processes": v["processes"]}
                            for part, v in self.peak["parts"].items()},
                "last_pss_mb": self.last["pss_mb"]}


def manage(env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def prepare_model(env: dict, data_dir: Path) -> None:
    """Have the embedding model's ONNX export in the data folder before the servers start, as
    `make run`'s demo leaves it: copied from the checkout's .data/models when there, else exported
    by a short-lived process. Otherwise the first server to embed would export it (importing torch)."""
    source = ROOT / ".data" / "models"
    if source.is_dir():
        shutil.copytree(source, data_dir / "models", dirs_exist_ok=True)
    manage(env, "shell", "-c", "from django.conf import settings; from airweave.providers.embeddings import "
                               "get_embedder; get_embedder(settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL).tokenizer")


def torch_loaded(roots: dict[str, int]) -> dict[str, int]:
    """{part: how many of its processes have libtorch mapped} (read from /proc/<pid>/maps)."""
    found = {}
    for part, pid in roots.items():
        count = 0
        for process in tree(pid):
            try:
                count += "libtorch" in Path(f"/proc/{process.pid}/maps").read_text()
            except OSError:
                pass
        found[part] = count
    return found


def postmaster_pid(data_dir: Path) -> int:
    """The embedded server's postmaster pid (first line of postmaster.pid)."""
    return int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])


def wait_health(base_url: str, server: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"daphne exited; see {log_path}")
        try:
            if httpx.get(f"{base_url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    sys.exit(f"daphne did not answer /health within 120 s; see {log_path}")


def sync_scifact(api: httpx.Client, docs_dir: Path, roots: dict, phase: Phase, interval: float,
                 timeout: float) -> dict:
    """Create the collection and its local_files connection through the API; sample until the job ends."""
    answer = api.post("/collections", json={"name": "SciFact footprint", "readable_id": "scifact-footprint"})
    answer.raise_for_status()
    answer = api.post("/source-connections", json={
        "short_name": "local_files", "readable_collection_id": "scifact-footprint", "name": "SciFact",
        "config": {"path": str(docs_dir)}, "sync_immediately": True})
    if answer.status_code not in (200, 201):
        sys.exit(f"POST /source-connections answered {answer.status_code}: {answer.text[:1000]}")
    connection_id = answer.json()["id"]
    deadline, job, next_poll = time.monotonic() + timeout, None, 0.0
    while time.monotonic() < deadline:
        phase.add(sample(roots))
        if time.monotonic() >= next_poll:
            jobs = api.get(f"/source-connections/{connection_id}/jobs").json()
            job = jobs[0] if jobs else None
            if job and job["status"] in ("completed", "failed", "cancelled"):
                return job
            next_poll = time.monotonic() + 2.0
        time.sleep(interval)
    sys.exit(f"the sync did not end within {timeout} s (last job: {job})")


def print_report(report: dict) -> None:
    print(f"\nFootprint (sums of PSS; RSS in brackets), {report['docs']} SciFact documents, "
          f"AIRWEAVE_WORKERS={report['settings']['AIRWEAVE_WORKERS']}, "
          f"backend {report['settings']['AIRWEAVE_LOCAL_EMBEDDING_BACKEND']}:")
    for name in ("idle", "sync"):
        phase = report[name]
        parts = ", ".join(f"{part} {v['pss_mb']:.0f} MB" for part, v in phase["at_peak"].items())
        verdict = "within" if phase["peak_pss_mb"] <= phase["target_mb"] else "OVER"
        print(f"  {name:5} peak {phase['peak_pss_mb']:7.0f} MB [{phase['peak_rss_mb']:.0f} MB RSS]"
              f"  ({parts})  target {phase['target_mb']} MB: {verdict}")
    print(f"  processes with libtorch mapped: idle {report['processes_with_torch']['idle']}, "
          f"after the sync {report['processes_with_torch']['after_sync']}")
    job = report["job"]
    print(f"  sync job: {job['status']}, {job.get('entities_inserted')} inserted, {report['sync']['seconds']} s")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "data" / "scifact",
                        help="BEIR SciFact folder (corpus.jsonl)")
    parser.add_argument("--docs", type=int, default=0, help="first N documents of the corpus (default: all 5,183)")
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("--timeout", type=float, default=3600.0, help="most seconds the sync may take")
    parser.add_argument("--label", default="", help="a word saved with the figures (e.g. before, after)")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    from beir import load_dataset, write_documents  # bench/beir.py: the same documents as the benchmark

    dataset = load_dataset(args.dataset)
    if args.docs:
        dataset.corpus = dict(list(dataset.corpus.items())[:args.docs])
    work = Path(tempfile.mkdtemp(prefix="airweave-footprint-"))
    work.chmod(0o755)  # the embedded server's own user (when run as root) must reach its data folder
    data_dir, docs_dir = work / "data", work / "docs"
    write_documents(dataset, docs_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="airweave.settings", AIRWEAVE_DATA_DIR=str(data_dir),
               AIRWEAVE_LOCAL_ROOTS=str(docs_dir), AIRWEAVE_RATE_LIMIT="", AIRWEAVE_SEARCH_RATE_LIMIT="")
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    processes: list[subprocess.Popen] = []
    try:
        manage(env, "migrate", "--noinput")
        key = manage(env, "create_api_key", "--name", "footprint").strip().splitlines()[-1]
        prepare_model(env, data_dir)
        worker_log, web_log = open(work / "worker.log", "wb"), open(work / "web.log", "wb")
        worker = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "qcluster"], cwd=ROOT, env=env,
                                  stdout=worker_log, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(worker)
        web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "airweave.asgi:application"], cwd=ROOT, env=env, stdout=web_log,
                               stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(web)
        wait_health(base_url, web, work / "web.log")
        roots = {"web": web.pid, "worker": worker.pid, "postgres": postmaster_pid(data_dir)}

        idle = Phase("idle")
        while time.monotonic() - idle.started < args.idle_seconds:
            idle.add(sample(roots))
            time.sleep(args.interval)

        torch_idle = torch_loaded(roots)
        api = httpx.Client(base_url=base_url, headers={"X-API-Key": key}, timeout=120)
        sync = Phase("sync")
        job = sync_scifact(api, docs_dir, roots, sync, args.interval, args.timeout)
        search = api.post("/collections/scifact-footprint/search/instant",
                          json={"query": "Vitamin D deficiency and bone density", "limit": 10})
        sync.add(sample(roots))
        torch_sync = torch_loaded(roots)
        report = {
            "benchmark": "footprint", "label": args.label, "when": datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.executable).name, *sys.argv]), "docs": len(dataset.corpus),
            "settings": {name: os.environ.get(name, default) for name, default in (
                ("AIRWEAVE_WORKERS", "2 (default)"), ("AIRWEAVE_LOCAL_EMBEDDING_BACKEND", "onnx (default)"),
                ("AIRWEAVE_EMBEDDING_BATCH_SIZE", "64 (default)"))},
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "memory_gb": round(psutil.virtual_memory().total / 1024 ** 3, 1)},
            "measure": "PSS summed over the process trees (RSS alongside)",
            "idle": idle.report(), "sync": sync.report(),
            "processes_with_torch": {"idle": torch_idle, "after_sync": torch_sync},
            "job": {k: job.get(k) for k in ("status", "entities_inserted", "entities_failed", "entities_skipped",
                                            "duration_seconds", "error")},
            "search_status": search.status_code, "search_results": len(search.json().get("results", []))
            if search.status_code == 200 else None,
        }
    finally:
        for process in reversed(processes):
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        from airweave.embedded_db import stop

        stop(data_dir)
        shutil.rmtree(work, ignore_errors=True)
    print_report(report)
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for name in (f"footprint-{stamp}.json", "footprint-latest.json"):
        (RESULTS_DIR / name).write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved bench/results/footprint-{stamp}.json")


if __name__ == "__main__":
    main()
