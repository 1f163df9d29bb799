"""Concurrent instant-search load against a real daphne, loopback only.

Starts the server the way `make run` does (`manage.py migrate`, `manage.py demo` for the demo
collection `docs` and a fresh API key, then daphne serving airweave.asgi:application on a free
port), warms it with one search (the embedding model loads once), then runs `--clients`
concurrent clients (asyncio + httpx, one connection each) for `--duration` seconds, each
sending instant searches back to back from a fixed list of questions about the docs. Prints and
saves (bench/results/load-<time>.json and load-latest.json): requests, errors by status (and by
exception), throughput, latency p50/p95/p99/max of the answered searches as the clients saw it, the rate-limit headers
the server answered with, and the server's own search histogram read from /metrics.

    .venv/bin/python bench/load.py --clients 50 --duration 60
    .venv/bin/python bench/load.py --base-url http://127.0.0.1:8000 --api-key KEY   # a running server

Only loopback addresses are accepted: this is a benchmark of one's own server, not a load tool.
The clients share the machine with the server (CPU they use is CPU the server does not get).
"""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse

import httpx

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
QUERIES = [
    "How does hybrid search combine keyword and vector results?",
    "How do I add a new source connector?",
    "What happens when a sync job is cancelled?",
    "How are access control lists applied to search results?",
    "Which embedding model is used by default?",
    "How do I connect an MCP client?",
    "What are the rate limits per organization?",
    "How are webhooks signed?",
    "What does the partial listing guard do?",
    "How do I run a worker on another machine?",
    "How are large files chunked?",
    "Where are the stage timings of a sync shown?",
]


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of `values` by linear interpolation (statistics' inclusive method)."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[max(0, min(998, round(q * 1000) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_loopback(base_url: str) -> None:
    host = urlparse(base_url).hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        sys.exit(f"refusing {base_url}: the load script only targets a server on this machine (127.0.0.1, ::1)")


def manage(*args: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def start_server(port: int, log_path: Path) -> tuple[subprocess.Popen, str]:
    """migrate, demo (returns its API key), daphne on 127.0.0.1:port; waits until /health answers."""
    manage("migrate", "--noinput")
    out = manage("demo", "--port", str(port))
    match = re.search(r"API key \(organization '[^']*', shown once\): (\S+)", out)
    if not match:
        sys.exit(f"no API key in the demo command's output:\n{out[-2000:]}")
    log = open(log_path, "wb")
    server = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                               "airweave.asgi:application"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"daphne exited; see {log_path}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return server, match.group(1)
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    server.terminate()
    sys.exit(f"daphne did not answer /health within 90 s; see {log_path}")


def server_histogram(base_url: str) -> dict:
    """The server's airweave_search_duration_seconds for the instant tier (count, sum) from /metrics."""
    try:
        text = httpx.get(f"{base_url}/metrics", timeout=10).text
    except httpx.HTTPError as exc:
        return {"error": str(exc)}
    found = {}
    for name in ("count", "sum"):
        values = re.findall(rf'^airweave_search_duration_seconds_{name}\{{strategy="hybrid",tier="instant"\}} (\S+)$',
                            text, re.M)
        if values:
            found[name] = float(values[0])
    return found


async def client_loop(client: httpx.AsyncClient, url: str, index: int, stop_at: float, latencies: list[float],
                      statuses: Counter, exceptions: Counter, headers_seen: dict) -> None:
    n = index
    while time.monotonic() < stop_at:
        body = {"query": QUERIES[n % len(QUERIES)], "limit": 10}
        n += 1
        started = time.perf_counter()
        try:
            response = await client.post(url, json=body)
        except httpx.HTTPError as exc:
            exceptions[type(exc).__name__] += 1
            continue
        if response.status_code == 200:
            latencies.append(time.perf_counter() - started)
        statuses[response.status_code] += 1
        if "RateLimit-Limit" in response.headers and not headers_seen:
            headers_seen.update({k: response.headers[k] for k in ("RateLimit-Limit", "RateLimit-Remaining")})


async def run_load(base_url: str, api_key: str, collection: str, clients: int, duration: float) -> dict:
    url = f"{base_url}/collections/{collection}/search/instant"
    latencies: list[float] = []
    statuses: Counter = Counter()
    exceptions: Counter = Counter()
    headers_seen: dict = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(headers={"X-API-Key": api_key}, limits=limits, timeout=120) as client:
        warm = await client.post(url, json={"query": QUERIES[0], "limit": 10})
        if warm.status_code != 200:
            sys.exit(f"warm-up search answered {warm.status_code}: {warm.text[:500]}")
        before = server_histogram(base_url)
        started = time.monotonic()
        stop_at = started + duration
        await asyncio.gather(*(client_loop(client, url, i, stop_at, latencies, statuses, exceptions, headers_seen)
                               for i in range(clients)))
        elapsed = time.monotonic() - started
    after = server_histogram(base_url)
    ok = latencies  # of the searches answered 200
    requests = sum(statuses.values()) + sum(exceptions.values())
    errors = {str(k): v for k, v in sorted(statuses.items()) if k != 200}
    errors.update({k: v for k, v in exceptions.items()})
    server = {}
    if "count" in before and "count" in after and after["count"] > before["count"]:
        count = after["count"] - before["count"]
        server = {"searches": int(count), "mean_ms": round((after["sum"] - before["sum"]) / count * 1000, 1)}
    return {
        "endpoint": "POST /collections/{id}/search/instant", "collection": collection, "clients": clients,
        "duration_s": round(elapsed, 2), "requests": requests, "ok": statuses.get(200, 0),
        "errors": errors, "error_count": requests - statuses.get(200, 0),
        "throughput_rps": round(requests / elapsed, 2),
        "latency_ms": {"p50": round(percentile(ok, 0.50) * 1000, 1), "p95": round(percentile(ok, 0.95) * 1000, 1),
                       "p99": round(percentile(ok, 0.99) * 1000, 1), "max": round(max(ok) * 1000, 1) if ok else None},
        "rate_limit_headers": headers_seen, "server_histogram": server,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (at most 600)")
    parser.add_argument("--base-url", help="a running server on this machine (default: start one)")
    parser.add_argument("--api-key", help="with --base-url: an API key of the collection's organization")
    parser.add_argument("--collection", default="docs")
    args = parser.parse_args()
    if not 1 <= args.clients <= 500 or not 1 <= args.duration <= 600:
        sys.exit("--clients must be 1..500 and --duration 1..600 seconds")
    server = None
    if args.base_url:
        require_loopback(args.base_url)
        if not args.api_key:
            sys.exit("--base-url needs --api-key")
        base_url, api_key = args.base_url.rstrip("/"), args.api_key
    else:
        port = free_port()
        (ROOT / ".data").mkdir(exist_ok=True)
        server, api_key = start_server(port, ROOT / ".data" / "load-daphne.log")
        base_url = f"http://127.0.0.1:{port}"
    try:
        result = asyncio.run(run_load(base_url, api_key, args.collection, args.clients, args.duration))
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
    settings_in_effect = {k: os.environ.get(k) for k in ("AIRWEAVE_RATE_LIMIT", "AIRWEAVE_SEARCH_RATE_LIMIT")
                          if os.environ.get(k) is not None}
    result.update({"server": "started by the script (daphne, settings of make run)" if server else base_url,
                   "environment_overrides": settings_in_effect, "cpus": os.cpu_count(), "python": platform.python_version(),
                   "when": datetime.now().isoformat(timespec="seconds")})
    lat = result["latency_ms"]
    print(f"{result['clients']} clients × {result['duration_s']} s: {result['requests']} requests, "
          f"{result['error_count']} errors {result['errors'] or ''}")
    print(f"throughput {result['throughput_rps']} req/s; latency p50 {lat['p50']} ms, p95 {lat['p95']} ms, "
          f"p99 {lat['p99']} ms, max {lat['max']} ms")
    if result["server_histogram"]:
        print(f"server side (/metrics): {result['server_histogram']['searches']} searches, "
              f"mean {result['server_histogram']['mean_ms']} ms")
    if result["rate_limit_headers"]:
        print(f"rate limit answered by the server: {result['rate_limit_headers']}")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = BENCH_DIR / "results" / f"load-{stamp}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    (BENCH_DIR / "results" / "load-latest.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
