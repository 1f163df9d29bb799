"""Runs search operations in dependency order, timing each and emitting operator_start/operator_end."""
from __future__ import annotations

import logging
import time
from graphlib import CycleError, TopologicalSorter

from airweave.observability.metrics import SEARCH_OPERATION_SECONDS
from airweave.observability.tracing import tracer
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import SearchState

logger = logging.getLogger(__name__)


class PipelineConfigError(Exception):
    """The set of operations cannot run: a cycle or a missing dependency (the message names it)."""


def execution_order(operations: list[SearchOperation]) -> list[SearchOperation]:
    """Topological order of `operations` (ties keep the given order). Raises PipelineConfigError."""
    by_name = {op.name: op for op in operations}
    if len(by_name) != len(operations):
        raise PipelineConfigError("two operations share a name")
    graph = {}
    for op in operations:
        missing = [d for d in op.depends_on() if d not in by_name]
        if missing:
            raise PipelineConfigError(f"operation '{op.name}' depends on {', '.join(missing)}, which is not in the pipeline")
        graph[op.name] = op.depends_on()
    sorter = TopologicalSorter(graph)
    try:
        sorter.prepare()
    except CycleError as exc:
        raise PipelineConfigError(f"operations depend on each other in a cycle: {' -> '.join(exc.args[1])}") from None
    position = {op.name: i for i, op in enumerate(operations)}
    ordered = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        ordered.extend(by_name[name] for name in ready)
        sorter.done(*ready)
    return ordered


def run_pipeline(operations: list[SearchOperation], state: SearchState, ctx: Context) -> SearchState:
    """Execute `operations` over `state` in dependency order; returns the state.

    Each operation's `operator_end` carries `skipped` (the reason) when it did nothing and
    `provider` (e.g. "groq/llama-3.3-70b-versatile") when a provider of its chain answered.

    Optional operations that raise are reported (`error` event) and skipped; required ones re-raise.
    """
    for op in execution_order(operations):
        with tracer().start_as_current_span(f"search.{op.name}") as span:
            _run_operation(op, state, ctx, span)
    return state


def _run_operation(op: SearchOperation, state: SearchState, ctx: Context, span) -> None:
    """One operation with its events, its time (state, histogram, span) and its failure handling."""
    ctx.emit("operator_start", name=op.name)
    started = time.perf_counter()
    try:
        op.execute(state, ctx)
    except OperationSkipped as skip:
        state.skipped[op.name] = skip.reason
    except Exception as exc:
        if not op.optional:
            raise  # the span records it on the way out
        logger.warning("search operation %s failed", op.name, exc_info=True)
        state.skipped[op.name] = f"failed: {exc}"
        ctx.emit("error", operation=op.name, message=str(exc))
    finally:
        elapsed = time.perf_counter() - started
        duration_ms = round(elapsed * 1000, 2)
        state.operation_metrics[op.name] = duration_ms
        SEARCH_OPERATION_SECONDS.labels(state.tier, op.name).observe(elapsed)
        extra = {"skipped": state.skipped[op.name]} if op.name in state.skipped else {}
        if op.name in state.provider_used:
            extra["provider"] = state.provider_used[op.name]
        if span.is_recording():
            span.set_attribute("airweave.search.operation", op.name)
            span.set_attribute("airweave.duration_ms", duration_ms)
            for key, value in extra.items():
                span.set_attribute(f"airweave.{key}", str(value))
        ctx.emit("operator_end", name=op.name, duration_ms=duration_ms, **extra)
