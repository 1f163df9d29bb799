"""Runs search operations in dependency order, timing each and emitting operator_start/operator_end."""
from __future__ import annotations

import logging
import time
from graphlib import CycleError, TopologicalSorter

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
        ctx.emit("operator_start", name=op.name)
        started = time.perf_counter()
        try:
            op.execute(state, ctx)
        except OperationSkipped as skip:
            state.skipped[op.name] = skip.reason
        except Exception as exc:
            if not op.optional:
                raise
            logger.warning("search operation %s failed", op.name, exc_info=True)
            state.skipped[op.name] = f"failed: {exc}"
            ctx.emit("error", operation=op.name, message=str(exc))
        finally:
            duration_ms = round((time.perf_counter() - started) * 1000, 2)
            state.operation_metrics[op.name] = duration_ms
            extra = {"skipped": state.skipped[op.name]} if op.name in state.skipped else {}
            if op.name in state.provider_used:
                extra["provider"] = state.provider_used[op.name]
            ctx.emit("operator_end", name=op.name, duration_ms=duration_ms, **extra)
    return state
