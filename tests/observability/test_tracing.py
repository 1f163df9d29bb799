"""OpenTelemetry spans, caught by the SDK's in-memory exporter: one search's spans (names,
parent and children, tier, strategy, result count) for the pipeline and the instant tier, and
one sync's stage spans; without an OTLP endpoint no provider is installed (the no-op tracer)."""
from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from airweave.observability import tracing
from search.instant import InstantSearchRequest, search_instant
from search.pipeline import PipelineRequest, search_pipeline

pytestmark = pytest.mark.django_db

DOCS = {"bees.md": "# Beekeeping\nThe queen bee lives in the hive; the beekeeper harvests honey in autumn.",
        "bread.md": "# Sourdough\nFeed the starter with flour and water, then bake the loaf in a hot oven.",
        "notes/jupiter.txt": "Jupiter is the largest planet; its Great Red Spot is a storm larger than the Earth."}
STAGES = ("sync.listing", "sync.converting", "sync.chunking", "sync.embedding", "sync.writing")


@pytest.fixture
def spans():
    """The finished spans of the test (an SDK provider routed to an in-memory exporter)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.tracing_use(provider)
    try:
        yield exporter
    finally:
        tracing.tracing_use(None)
        provider.shutdown()


@pytest.fixture
def collection(make_collection, sync_folder, write_files):
    collection = make_collection(readable_id="traced-docs")
    sync_folder(collection, write_files(DOCS))
    return collection


def by_name(finished) -> dict[str, list]:
    found: dict[str, list] = {}
    for span in finished:
        found.setdefault(span.name, []).append(span)
    return found


def test_pipeline_search_spans(spans, collection):
    spans.clear()
    response = search_pipeline(collection=collection, principals=None, request=PipelineRequest(
        query="honey from the hive", retrieval_strategy="hybrid", limit=2, expand_query=False,
        interpret_filters=False, rerank=False, generate_answer=False))
    found = by_name(spans.get_finished_spans())
    (root,) = found["search"]
    assert root.parent is None
    assert root.attributes["airweave.search.tier"] == "pipeline"
    assert root.attributes["airweave.search.strategy"] == "hybrid"
    assert root.attributes["airweave.search.result_count"] == len(response.results) == 2
    assert root.attributes["airweave.collection"] == "traced-docs"
    children = [s for s in spans.get_finished_spans() if s.parent is not None]
    assert {s.parent.span_id for s in children} == {root.context.span_id}
    assert {s.context.trace_id for s in children} == {root.context.trace_id}
    names = [s.name for s in sorted(children, key=lambda s: s.start_time)]
    # Every operation that ran, in the orchestrator's order, each one span.
    assert names == [f"search.{name}" for name in response.state.operation_metrics]
    assert names.index("search.embed_query") < names.index("search.retrieval")
    (embed,) = found["search.embed_query"]
    assert embed.attributes["airweave.provider"] == "local/all-MiniLM-L6-v2"
    assert embed.attributes["airweave.duration_ms"] == response.state.operation_metrics["embed_query"]
    for name, reason in response.state.skipped.items():
        assert found[f"search.{name}"][0].attributes["airweave.skipped"] == reason


def test_keyword_search_marks_the_skipped_embedding(spans, collection):
    spans.clear()
    search_pipeline(collection=collection, principals=None, request=PipelineRequest(
        query="sourdough", retrieval_strategy="keyword", limit=3, expand_query=False, interpret_filters=False,
        rerank=False, generate_answer=False))
    found = by_name(spans.get_finished_spans())
    assert found["search"][0].attributes["airweave.search.strategy"] == "keyword"
    assert "keyword" in found["search.embed_query"][0].attributes["airweave.skipped"]


def test_instant_search_spans(spans, collection):
    spans.clear()
    response = search_instant(collection=collection, principals=None,
                              request=InstantSearchRequest(query="storm on a planet", retrieval_strategy="semantic",
                                                           limit=1))
    found = by_name(spans.get_finished_spans())
    (root,) = found["search"]
    assert root.attributes["airweave.search.tier"] == "instant"
    assert root.attributes["airweave.search.strategy"] == "semantic"
    assert root.attributes["airweave.search.result_count"] == len(response.results) == 1
    assert sorted(s.name for s in spans.get_finished_spans() if s.parent is not None) == [
        "search.embed_query", "search.hydrate", "search.retrieval"]
    assert all(s.parent.span_id == root.context.span_id for s in spans.get_finished_spans() if s.parent)


def test_sync_stage_spans(spans, make_collection, sync_folder, write_files):
    collection = make_collection(readable_id="traced-sync")
    connection, job = sync_folder(collection, write_files(DOCS))
    finished = spans.get_finished_spans()
    found = by_name(finished)
    (root,) = found["sync.job"]
    assert root.parent is None
    assert root.attributes["airweave.sync_job.id"] == str(job.id)
    assert root.attributes["airweave.source"] == "local_files"
    assert root.attributes["airweave.sync_job.status"] == "completed"
    assert root.attributes["airweave.entities.inserted"] == 3
    assert root.attributes["airweave.chunks_embedded"] == job.chunks_embedded >= 3
    for stage in STAGES:
        assert found.get(stage), f"no {stage} span"
        assert all(s.parent.span_id == root.context.span_id for s in found[stage])
        assert all(s.context.trace_id == root.context.trace_id for s in found[stage])
    assert found["sync.converting"][0].attributes["airweave.entities"] == 3
    assert sum(s.attributes["airweave.chunks"] for s in found["sync.embedding"]) == job.chunks_embedded
    assert sum(s.attributes.get("airweave.entities", 0) for s in found["sync.writing"]) == 3
    assert sum(s.attributes["airweave.entities.to_index"] for s in found["sync.listing"]) == 3
    # Stage spans lie inside the job's span.
    assert all(root.start_time <= s.start_time <= s.end_time <= root.end_time for s in finished if s is not root)

    # A second run keeps every entity: listing, no conversion or embedding.
    spans.clear()
    sync_folder(collection, None, connection=connection)
    names = {s.name for s in spans.get_finished_spans()}
    assert "sync.listing" in names and "sync.embedding" not in names and "sync.converting" not in names
    assert by_name(spans.get_finished_spans())["sync.job"][0].attributes["airweave.entities.kept"] == 3


def test_no_endpoint_no_tracing():
    assert tracing.tracing_configure(environ={}) is False
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)
    with tracing.tracer().start_as_current_span("search") as span:
        assert not span.is_recording()
