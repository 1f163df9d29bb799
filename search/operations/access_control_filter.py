"""AccessControlFilter: restricts a user principal to the chunks they may see."""
from __future__ import annotations

from search.filters import SQLCondition
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import SearchState


class AccessControlFilter(SearchOperation):
    name = "access_control_filter"

    def execute(self, state: SearchState, ctx: Context) -> None:
        if state.principals is None:
            ctx.emit("access_control_skipped", op=self.name, reason="organization-wide caller")
            raise OperationSkipped("organization-wide caller: no access filter")
        state.access_condition = SQLCondition("(c.access_is_public OR c.access_viewers && %s::varchar[])",
                                              (list(state.principals),))
