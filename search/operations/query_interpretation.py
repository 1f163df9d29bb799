"""QueryInterpretation: a language model turns the query into filters over the collection's real values.

Applied only when the model's confidence reaches `min_confidence` (default 0.7); otherwise an
`interpretation_skipped` event gives the reason and the confidence. The prompt, the schema of the
filters and the check of the reply are shared with SearchPlan (search/filter_values.py).
"""
from __future__ import annotations

from airweave.providers.errors import NoProviderAvailable
from search.filter_values import collection_values, filter_items_schema, listed_conditions, values_prompt
from search.filters import FilterError, parse_filter_groups
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import SearchState

SYSTEM = ("You turn a search query into metadata filters when, and only when, the query clearly asks for a "
          "subset (a source, a type of item, a folder, a date range). Use only the fields and values listed. "
          "Give a confidence between 0 and 1 that the filters capture what the user meant.")
SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["filters", "confidence"],
    "properties": {"confidence": {"type": "number"}, "filters": filter_items_schema(with_operator=True)},
}


class QueryInterpretation(SearchOperation):
    name = "query_interpretation"
    optional = True

    def execute(self, state: SearchState, ctx: Context) -> None:
        values = collection_values(state.collection_id, state.principals)
        try:
            reply, provider = ctx.chains["query_interpretation"].call(lambda model, spec: model.complete_json(
                system=SYSTEM, user=values_prompt(values, "Query", state.query), schema=SCHEMA,
                name="query_interpretation"))
        except NoProviderAvailable as exc:
            ctx.emit("interpretation_skipped", op=self.name, reason=f"no language model available: {exc}")
            raise OperationSkipped("no language model available") from None
        state.provider_used[self.name] = provider
        confidence = float(reply.get("confidence") or 0)
        state.interpretation_confidence = confidence
        minimum = float(self.options.get("min_confidence", 0.7))
        conditions = listed_conditions(reply.get("filters", []), values)
        if not conditions:
            ctx.emit("interpretation_skipped", op=self.name, reason="no filter fits the query", confidence=confidence)
            raise OperationSkipped("no filter fits the query")
        if confidence < minimum:
            ctx.emit("interpretation_skipped", op=self.name, reason=f"confidence {confidence:.2f} below {minimum}",
                     confidence=confidence)
            raise OperationSkipped(f"confidence {confidence:.2f} below {minimum}")
        try:
            state.interpreted_filter = parse_filter_groups([{"conditions": conditions}])
        except FilterError as exc:
            ctx.emit("interpretation_skipped", op=self.name, reason=str(exc), confidence=confidence)
            raise OperationSkipped("the model's filter was invalid") from None
        ctx.emit("interpretation_done", op=self.name, filter=conditions, confidence=confidence)
