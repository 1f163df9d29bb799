"""Instant search: embed the query, retrieve with one strategy, shape v2 SearchResults.

No language model is involved. Used by the REST endpoint, the `search` command and the benchmark.
"""
from __future__ import annotations

import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from airweave.collections.models import Collection
from airweave.observability.metrics import (
    EMBEDDING_BATCH_SECONDS, SEARCH_OPERATION_SECONDS, SEARCH_RESULTS, SEARCH_SECONDS,
)
from airweave.observability.tracing import tracer
from airweave.providers.catalog import search_defaults
from airweave.providers.embeddings import get_embedder
from airweave.tenancy.quotas import search_quota_consume
from search.filters import compile_filter_groups
from search.results import load_chunks, v2_result
from search.retrieval import STRATEGIES, RetrievalQuery, read_snapshot, retrieve

MAX_QUERY_CHARS = 2000


class SearchRequestError(ValueError):
    """Bad search input; `loc` says where (e.g. ["query"])."""

    def __init__(self, message: str, loc: list):
        super().__init__(message)
        self.loc = loc


def query_text(raw: str | None) -> str:
    """A search query as every tier takes it: stripped of surrounding whitespace.

    Raises SearchRequestError (loc ["query"]) when it is empty or holds a NUL character (which
    PostgreSQL text cannot take). Every face (REST, websocket, MCP, commands) reaches this check.
    """
    query = (raw or "").strip()
    if not query:
        raise SearchRequestError("query must not be empty", ["query"])
    if "\x00" in query:
        raise SearchRequestError("query must not contain NUL (\\u0000) characters", ["query"])
    return query


@dataclass
class InstantSearchRequest:
    query: str
    retrieval_strategy: str = "hybrid"
    filter: list | None = None
    limit: int = 100
    offset: int = 0
    collapse_entities: bool = False


@dataclass
class InstantSearchResponse:
    results: list[dict] = field(default_factory=list)


def search_instant(*, collection: Collection, request: InstantSearchRequest,
                   principals: list[str] | None) -> InstantSearchResponse:
    """Run an instant search over `collection` for a caller with `principals`.

    `principals` comes from airweave.collections.access.principals_for (None: an
    organization-wide caller, no access filter). Raises SearchRequestError or FilterError, and
    QuotaExceeded past the organization's monthly searches.
    """
    query = query_text(request.query)
    if len(query) > MAX_QUERY_CHARS:
        raise SearchRequestError(f"query must be at most {MAX_QUERY_CHARS} characters", ["query"])
    if request.retrieval_strategy not in STRATEGIES:
        raise SearchRequestError(f"retrieval_strategy must be one of {', '.join(STRATEGIES)}", ["retrieval_strategy"])
    if not 1 <= request.limit <= 1000:
        raise SearchRequestError("limit must be between 1 and 1000", ["limit"])
    if request.offset < 0:
        raise SearchRequestError("offset must be 0 or more", ["offset"])
    condition = compile_filter_groups(request.filter)
    search_quota_consume(collection.organization_id)
    started = time.perf_counter()
    with tracer().start_as_current_span("search") as span:
        if span.is_recording():
            span.set_attributes({"airweave.search.tier": "instant", "airweave.search.strategy": request.retrieval_strategy,
                                 "airweave.search.limit": request.limit, "airweave.search.offset": request.offset,
                                 "airweave.collection": collection.readable_id})
        vector = None
        if request.retrieval_strategy == "semantic":
            vector = _embed_query(collection.embedding_model_name, query)
        elif request.retrieval_strategy == "hybrid":
            # The keyword leg needs no vector: it runs while the query is embedded on another thread.
            vector = _embedding_pool().submit(contextvars.copy_context().run, _embed_query,
                                              collection.embedding_model_name, query)
        with read_snapshot(collection.id):  # the page is hydrated from the index the legs ranked
            with _operation("retrieval"):
                hits = retrieve(RetrievalQuery(
                    collection_id=collection.id, dims=collection.vector_size, text=query, query_vector=vector,
                    strategy=request.retrieval_strategy, condition=condition, principals=principals,
                    limit=request.limit, offset=request.offset, collapse=request.collapse_entities,
                    rrf_k=int(search_defaults().get("rrf_k", 60)),
                ))
            with _operation("hydrate"):
                results = hydrate(hits)
        span.set_attribute("airweave.search.result_count", len(results))
    SEARCH_SECONDS.labels("instant", request.retrieval_strategy).observe(time.perf_counter() - started)
    SEARCH_RESULTS.labels("instant").observe(len(results))
    return InstantSearchResponse(results=results)


_EMBEDDING_POOL: ThreadPoolExecutor | None = None
_EMBEDDING_POOL_LOCK = threading.Lock()


def _embedding_pool() -> ThreadPoolExecutor:
    """Threads that embed hybrid queries while their keyword leg runs (created on first use)."""
    global _EMBEDDING_POOL
    with _EMBEDDING_POOL_LOCK:
        if _EMBEDDING_POOL is None:
            _EMBEDDING_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding")
        return _EMBEDDING_POOL


def _embed_query(model_name: str, query: str) -> list[float]:
    """The query's vector with the collection's model, timed as the `embed_query` operation."""
    with _operation("embed_query"):
        started = time.perf_counter()
        vector = get_embedder(model_name).embed_queries([query])[0]
        EMBEDDING_BATCH_SECONDS.labels(model_name, "query").observe(time.perf_counter() - started)
    return vector


@contextmanager
def _operation(name: str):
    """A `search.<name>` span and the operation histogram around one step of the instant tier."""
    started = time.perf_counter()
    with tracer().start_as_current_span(f"search.{name}") as span:
        yield span
        elapsed = time.perf_counter() - started
        span.set_attribute("airweave.duration_ms", round(elapsed * 1000, 2))
    SEARCH_OPERATION_SECONDS.labels("instant", name).observe(elapsed)


def hydrate(hits) -> list[dict]:
    """Load the chunks (and their entities) of `hits` in one query; shape them as v2 SearchResults."""
    if not hits:
        return []
    chunks = load_chunks(h.chunk_id for h in hits)
    return [v2_result(chunks[h.chunk_id], h.score) for h in hits if h.chunk_id in chunks]
