"""The orchestrator: dependency order, refusal of cycles and missing dependencies, timing and events."""
import pytest

from search.factory import build_operations
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.orchestrator import PipelineConfigError, execution_order, run_pipeline
from search.state import SearchState


def op(name, requires=(), after=(), optional=False, action=None):
    cls = type(name.title(), (SearchOperation,), {
        "name": name, "REQUIRES": tuple(requires), "AFTER": tuple(after), "optional": optional,
        "execute": lambda self, state, ctx: action(state, ctx) if action else state.alternatives.append(name),
    })
    return cls


def build(*classes):
    active = {c.name for c in classes}
    return [c(active) for c in classes]


def state():
    return SearchState(query="q", collection_id="c", dims=384, embedding_model="local/all-MiniLM-L6-v2")


def names(ops):
    return [o.name for o in ops]


def test_dependencies_run_first_and_ties_keep_the_given_order():
    ops = build(op("answer", requires=["retrieve"]), op("retrieve", requires=["embed"]), op("expand"),
                op("embed", after=["expand"]))
    assert names(execution_order(ops)) == ["expand", "embed", "retrieve", "answer"]


def test_after_only_orders_when_the_other_operation_is_present():
    ops = build(op("embed", after=["expand"]), op("retrieve", requires=["embed"]))
    assert names(execution_order(ops)) == ["embed", "retrieve"]


def test_missing_dependency_is_refused_with_its_name():
    with pytest.raises(PipelineConfigError, match="'retrieve' depends on embed"):
        execution_order(build(op("retrieve", requires=["embed"])))


def test_cycles_are_refused():
    with pytest.raises(PipelineConfigError, match="cycle"):
        execution_order(build(op("a", requires=["b"]), op("b", requires=["a"])))


def test_run_times_every_operation_and_emits_start_and_end():
    events = []
    ctx = Context(emit=lambda type, **payload: events.append((type, payload.get("name"))))
    s = run_pipeline(build(op("first"), op("second", requires=["first"])), state(), ctx)
    assert s.alternatives == ["first", "second"]
    assert events == [("operator_start", "first"), ("operator_end", "first"),
                      ("operator_start", "second"), ("operator_end", "second")]
    assert set(s.operation_metrics) == {"first", "second"}
    assert all(ms >= 0 for ms in s.operation_metrics.values())


def test_skipped_and_failed_optional_operations_are_reported_and_the_search_goes_on():
    def skip(state, ctx):
        raise OperationSkipped("nothing to do")

    def fail(state, ctx):
        raise RuntimeError("provider exploded")

    events = []
    ctx = Context(emit=lambda type, **payload: events.append((type, payload)))
    s = run_pipeline(build(op("skipper", action=skip), op("flaky", optional=True, action=fail), op("last")), state(), ctx)
    assert s.skipped == {"skipper": "nothing to do", "flaky": "failed: provider exploded"}
    assert s.alternatives == ["last"]
    ends = {p["name"]: p for t, p in events if t == "operator_end"}
    assert ends["skipper"]["skipped"] == "nothing to do"
    assert ("error", {"operation": "flaky", "message": "provider exploded"}) in events


def test_a_failing_required_operation_fails_the_search():
    def fail(state, ctx):
        raise RuntimeError("database down")

    with pytest.raises(RuntimeError, match="database down"):
        run_pipeline(build(op("retrieval", action=fail)), state(), Context(emit=lambda *a, **k: None))


def test_factory_follows_flags_and_defaults():
    default = names(build_operations({}))
    assert {"query_expansion", "embed_query", "retrieval", "reranking", "generate_answer"} <= set(default)
    assert "query_interpretation" not in default  # off by default
    assert "recency" not in default
    instant = names(build_operations({"expand_query": False, "rerank": False, "generate_answer": False}))
    assert instant == ["embed_query", "access_control_filter", "user_filter", "retrieval", "federated_search"]
    with_all = names(execution_order(build_operations({"interpret_filters": True, "recency": True})))
    assert with_all.index("query_interpretation") < with_all.index("user_filter") < with_all.index("retrieval")
    # Recency blends the reranked scores: before reranking, the reranker's scores would erase it.
    assert with_all.index("reranking") < with_all.index("recency") < with_all.index("generate_answer")
