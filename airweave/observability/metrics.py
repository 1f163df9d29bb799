"""Prometheus metrics updated by the search and sync pipelines (prometheus_client).

Histograms and counters live in the process that updates them: search metrics in the web
process that serves `/metrics`. With `PROMETHEUS_MULTIPROC_DIR` set (prometheus_client's
multiprocess mode, one folder shared by the processes of one machine) the worker's embedding
and fallback figures are merged in too. Job counts by state, queue depth and sync throughput
are not here: `airweave.observability.collectors` reads them from the database at scrape time,
so they are right whichever machine ran the job.

Units: seconds for every duration; results are counts.
"""
from __future__ import annotations

from prometheus_client import Counter, Histogram

# Latency buckets from a cached keyword lookup (a few ms) to a classic search with a language model.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0)

SEARCH_SECONDS = Histogram(
    "airweave_search_duration_seconds", "Wall time of one search, by tier and retrieval strategy.",
    ["tier", "strategy"], buckets=LATENCY_BUCKETS)
SEARCH_OPERATION_SECONDS = Histogram(
    "airweave_search_operation_duration_seconds", "Wall time of one search pipeline operation.",
    ["tier", "operation"], buckets=LATENCY_BUCKETS)
SEARCH_RESULTS = Histogram(
    "airweave_search_results", "Results returned by one search (the page, after offset and limit).",
    ["tier"], buckets=(0, 1, 5, 10, 25, 50, 100, 250, 500, 1000))
SEARCH_FAILURES = Counter(
    "airweave_search_failures_total", "Searches that failed inside the pipeline (not refused input).", ["tier"])
SEARCH_READS = Counter(
    "airweave_search_reads_total",
    "Where a search read the index with DATABASE_REPLICA_URLS set: target replica or primary; reason replica, "
    "read_your_writes (no replica had replayed the collection's last sync) or replica_down (none reachable).",
    ["target", "reason"])
PROVIDER_FALLBACKS = Counter(
    "airweave_provider_fallbacks_total",
    "A provider of a fallback chain passed over: `reason` is error (a retryable failure) or circuit_open.",
    ["operation", "provider", "reason"])
EMBEDDING_BATCH_SECONDS = Histogram(
    "airweave_embedding_batch_seconds",
    "Wall time of one embedding call: kind=document (a sync slice of up to 256 chunks) or query.",
    ["model", "kind"], buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 60.0))
