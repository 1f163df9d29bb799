"""The search pipeline service: one request → state → operations → results and completion.

Called by the REST endpoints (plain JSON and SSE), the websocket consumer and MCP tools. `emit`
receives every event of docs/api.md (start, operator_start/end, ..., results, done).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from airweave.collections.models import Collection
from airweave.events import EventStream
from airweave.observability.metrics import SEARCH_FAILURES, SEARCH_RESULTS, SEARCH_SECONDS
from airweave.observability.tracing import tracer
from airweave.providers.catalog import search_defaults
from airweave.tenancy.quotas import search_quota_consume
from search.factory import build_chains, build_operations
from search.filters import parse_filter_groups, parse_qdrant_filter
from search.instant import SearchRequestError, query_text
from search.operations.base import Context
from search.orchestrator import run_pipeline
from search.results import pipeline_result, v2_candidate
from search.state import Candidate, SearchState

STRATEGY_ALIASES = {"neural": "semantic"}


@dataclass
class PipelineRequest:
    """The pipeline endpoint's request (docs/api.md). Flags left None take defaults.yml's values."""

    query: str
    retrieval_strategy: str | None = None
    filter: dict | None = None  # Qdrant-style
    filter_groups: list | None = None  # v2 filter groups (tiers)
    offset: int = 0
    limit: int | None = None
    source_connection_ids: list | None = None
    expand_query: bool | None = None
    interpret_filters: bool | None = None
    rerank: bool | None = None
    generate_answer: bool | None = None
    recency_weight: float | None = None
    collapse_entities: bool = False
    plan: bool | None = None  # the classic tier's search plan


@dataclass
class PipelineResponse:
    results: list[dict]
    completion: str | None
    state: SearchState
    events: list[dict] = field(default_factory=list)


@dataclass
class PreparedSearch:
    """A validated request, ready to run: its state and its operations."""

    state: SearchState
    operations: list


def search_prepare(*, collection: Collection, request: PipelineRequest,
                   principals: list[str] | None, metered: bool = True, tier: str = "pipeline") -> PreparedSearch:
    """Validate `request` and build the state and operations. Raises SearchRequestError or FilterError,
    and QuotaExceeded when the organization used its searches of the month (a valid request counts one,
    unless `metered` is false: the searches an agentic run makes inside itself). `tier` labels
    the search's metrics and spans (pipeline, classic, agentic, ui).

    `principals` (required, from airweave.collections.access.principals_for) restricts what the
    caller sees; None is an organization-wide caller.

    Separate from running so that a streaming face can answer bad input with 422 before it starts.
    """
    defaults = search_defaults()
    strategy = request.retrieval_strategy or defaults["retrieval_strategy"]
    strategy = STRATEGY_ALIASES.get(strategy, strategy)
    if strategy not in ("hybrid", "semantic", "keyword"):
        raise SearchRequestError("retrieval_strategy must be hybrid, neural (semantic) or keyword", ["retrieval_strategy"])
    query = query_text(request.query)
    limit = request.limit if request.limit is not None else int(defaults["limit"])
    if not 1 <= limit <= 1000:
        raise SearchRequestError("limit must be between 1 and 1000", ["limit"])
    if request.offset < 0:
        raise SearchRequestError("offset must be 0 or more", ["offset"])
    if request.recency_weight is not None and not 0 <= request.recency_weight <= 1:
        raise SearchRequestError("recency_weight must be between 0 and 1", ["recency_weight"])
    # `is not None`: an empty list, "" or false is a wrong type (422), not "no filter".
    user_filter = (parse_qdrant_filter(request.filter) if request.filter is not None
                   else parse_filter_groups(request.filter_groups))
    flags = {"plan": request.plan, "expand_query": request.expand_query, "interpret_filters": request.interpret_filters,
             "rerank": request.rerank, "generate_answer": request.generate_answer,
             "recency": bool(request.recency_weight) or None}
    operations = build_operations(flags)
    state = SearchState(
        query=query, tier=tier, retrieval_strategy=strategy, limit=limit, offset=request.offset, collection_id=collection.id,
        readable_id=collection.readable_id, organization_id=collection.organization_id, dims=collection.vector_size,
        embedding_model=collection.embedding_model_name, principals=principals, user_filter=user_filter,
        source_connection_ids=request.source_connection_ids, collapse_entities=request.collapse_entities,
        recency_weight=request.recency_weight or 0.0, rrf_k=int(defaults.get("rrf_k", 60)),
        # Reordering operations pick from twice the page, so a fresher or better-reranked chunk can move up.
        overfetch=2 if any(op.name in ("reranking", "recency") for op in operations) else 1,
    )
    if metered:
        search_quota_consume(collection.organization_id)
    return PreparedSearch(state=state, operations=operations)


def search_run(prepared: PreparedSearch, stream: EventStream | None = None,
               render: Callable[[Candidate], dict] = pipeline_result) -> PipelineResponse:
    """Run a prepared search, emitting docs/api.md's events on `stream` (start … results, done).

    `render` shapes each result (the pipeline endpoint's shape by default; v2 for the tiers).
    """
    stream = stream or EventStream()
    state = prepared.state
    started = time.perf_counter()
    with tracer().start_as_current_span("search") as span:
        if span.is_recording():
            span.set_attributes({"airweave.search.tier": state.tier, "airweave.search.strategy": state.retrieval_strategy,
                                 "airweave.search.limit": state.limit, "airweave.search.offset": state.offset,
                                 "airweave.collection": state.readable_id, "airweave.search.request_id": state.request_id})
        stream.emit("start", request_id=state.request_id, query=state.query, collection_id=state.readable_id)
        ctx = Context(emit=stream.emit, chains=build_chains(prepared.operations))
        try:
            run_pipeline(prepared.operations, state, ctx)
        except Exception as exc:
            SEARCH_FAILURES.labels(state.tier).inc()
            stream.emit("error", message=str(exc))
            raise
        results = [render(c) for c in state.candidates[state.offset:state.offset + state.limit]]
        span.set_attribute("airweave.search.result_count", len(results))
    SEARCH_SECONDS.labels(state.tier, state.retrieval_strategy).observe(time.perf_counter() - started)
    SEARCH_RESULTS.labels(state.tier).observe(len(results))
    stream.emit("results", results=results)
    stream.emit("done", request_id=state.request_id)
    return PipelineResponse(results=results, completion=state.completion, state=state, events=stream.events)


def search_classic(*, collection: Collection, query: str, principals: list[str] | None,
                   filter_groups: list | None = None, limit: int = 100, offset: int = 0,
                   stream: EventStream | None = None) -> PipelineResponse:
    """The classic tier: a language model plans the search (queries, strategy, filters), then
    results are reranked; v2 results. Without a language model it is a hybrid search."""
    prepared = search_prepare(collection=collection, principals=principals, tier="classic", request=PipelineRequest(
        query=query, filter_groups=filter_groups, limit=limit, offset=offset, plan=True, expand_query=False,
        interpret_filters=False, rerank=True, generate_answer=False))
    return search_run(prepared, stream, render=v2_candidate)


def search_pipeline(*, collection: Collection, request: PipelineRequest, principals: list[str] | None,
                    stream: EventStream | None = None) -> PipelineResponse:
    """Validate and run a pipeline search over `collection` (see search_prepare and search_run)."""
    return search_run(search_prepare(collection=collection, request=request, principals=principals), stream)
