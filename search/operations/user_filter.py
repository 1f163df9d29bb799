"""UserFilter: merges the request's filter, the interpreted filter, source connections and access into one condition."""
from __future__ import annotations

from search.filters import Group, SQLCondition, to_sql
from search.operations.base import Context, SearchOperation
from search.state import SearchState


class UserFilter(SearchOperation):
    name = "user_filter"
    REQUIRES = ("access_control_filter",)  # no pipeline retrieves without the access rule
    AFTER = ("search_plan", "query_interpretation")

    def execute(self, state: SearchState, ctx: Context) -> None:
        nodes = [n for n in (state.user_filter, state.interpreted_filter) if n is not None]
        condition = to_sql(Group("and", tuple(nodes)) if nodes else None)
        if state.source_connection_ids:
            condition = condition.and_(SQLCondition("c.source_connection_id = ANY(%s::uuid[])",
                                                    ([str(i) for i in state.source_connection_ids],)))
        if state.access_condition is not None:
            condition = condition.and_(state.access_condition)
        state.condition = condition
