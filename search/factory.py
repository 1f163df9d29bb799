"""Request flags + defaults.yml `search_operations` → the operations to run, with their provider chains."""
from __future__ import annotations

from django.utils.module_loading import import_string

from airweave.providers.catalog import load_defaults
from airweave.providers.factory import chain_for
from search.operations.base import SearchOperation

CHAINED = ("search_plan", "query_expansion", "query_interpretation", "reranking", "generate_answer")


def build_operations(flags: dict[str, bool | None]) -> list[SearchOperation]:
    """Operations enabled for a request, in defaults.yml order.

    `flags` maps a flag name of defaults.yml (expand_query, interpret_filters, rerank,
    generate_answer, recency) to True/False, or None to take the default.
    """
    config = load_defaults()["search_operations"]
    enabled = {}
    for name, spec in config.items():
        flag = spec.get("flag")
        on = True if flag is None else (flags.get(flag) if flags.get(flag) is not None else bool(spec.get("default")))
        if on:
            enabled[name] = spec
    active = frozenset(enabled)
    operations = []
    for name, spec in enabled.items():
        options = {k: v for k, v in spec.items() if k not in ("class", "flag", "default")}
        operation = import_string(spec["class"])(active, **options)
        if operation.name != name:
            raise ValueError(f"defaults.yml names '{name}' but {spec['class']} is '{operation.name}'")
        operations.append(operation)
    return operations


def build_chains(operations: list[SearchOperation]) -> dict:
    """The provider chain of each operation that calls a provider."""
    return {op.name: chain_for(op.name) for op in operations if op.name in CHAINED}
