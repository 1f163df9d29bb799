"""AccessControlFilter: restricts a caller acting as a user to the chunks they may see.

`state.principals` comes from airweave.collections.access.principals_for: None for an
organization-wide API key (no filter, `access_control_skipped`), otherwise the user's
principals ([] sees public chunks only). UserFilter ANDs the condition into every retrieval.
"""
from __future__ import annotations

from search.operations.base import Context, OperationSkipped, SearchOperation
from search.retrieval import access_condition
from search.state import SearchState


class AccessControlFilter(SearchOperation):
    name = "access_control_filter"

    def execute(self, state: SearchState, ctx: Context) -> None:
        if state.principals is None:
            ctx.emit("access_control_skipped", op=self.name, reason="organization-wide caller")
            raise OperationSkipped("organization-wide caller: no access filter")
        state.access_condition = access_condition(state.principals)
