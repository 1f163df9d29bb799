"""The operation contract: `name`, `depends_on()` and `execute(state, ctx)`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from search.state import SearchState


class OperationSkipped(Exception):
    """An operation decided not to run (no provider, nothing to do); `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Context:
    """What operations get besides the state: `emit(type, **payload)` and provider chains by operation."""

    emit: Callable[..., Any]
    chains: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


class SearchOperation:
    """Base class. `REQUIRES` must be present; `AFTER` only orders the operation when present.

    `optional` operations that fail are reported with an `error` event and the search goes on;
    a failure of a required operation (embedding, retrieval) fails the search.
    """

    name: ClassVar[str] = ""
    REQUIRES: ClassVar[tuple[str, ...]] = ()
    AFTER: ClassVar[tuple[str, ...]] = ()
    optional: ClassVar[bool] = False

    def __init__(self, active: set[str] | frozenset[str] = frozenset(), **options):
        self.active = set(active)
        self.options = options

    def depends_on(self) -> list[str]:
        return [*self.REQUIRES, *(name for name in self.AFTER if name in self.active)]

    def execute(self, state: SearchState, ctx: Context) -> None:
        raise NotImplementedError
