"""SearchPlan (classic tier): a language model plans the search — primary query, variations,
retrieval strategy and filters over the collection's real values — before retrieval. Its prompt, filter
schema and reply check are QueryInterpretation's (search/filter_values.py)."""
from __future__ import annotations

from airweave.providers.errors import NoProviderAvailable
from search.filters import FilterError, parse_filter_groups
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.filter_values import collection_values, filter_items_schema, listed_conditions, values_prompt
from search.state import SearchState

SYSTEM = ("You plan searches over a document collection. Rewrite the user's question as the best primary "
          "search query, add a few differently worded variations, choose the retrieval strategy (keyword for "
          "exact names, codes and identifiers; semantic for paraphrased questions; hybrid otherwise), and add "
          "filters only when the question clearly asks for a subset. Use only the listed fields and values.")
SCHEMA = {
    "type": "object", "additionalProperties": False,
    "required": ["primary_query", "variations", "retrieval_strategy", "filters", "confidence"],
    "properties": {
        "primary_query": {"type": "string"},
        "variations": {"type": "array", "items": {"type": "string"}},
        "retrieval_strategy": {"type": "string", "enum": ["hybrid", "semantic", "keyword"]},
        "filters": filter_items_schema(with_operator=False),
        "confidence": {"type": "number"},
    },
}


class SearchPlan(SearchOperation):
    name = "search_plan"
    optional = True

    def execute(self, state: SearchState, ctx: Context) -> None:
        values = collection_values(state.collection_id, state.principals)
        try:
            plan, provider = ctx.chains["search_plan"].call(lambda model, spec: model.complete_json(
                system=SYSTEM, user=values_prompt(values, "Question", state.query), schema=SCHEMA,
                name="search_plan"))
        except NoProviderAvailable as exc:
            raise OperationSkipped(f"no language model available: {exc}") from None
        state.provider_used[self.name] = provider
        queries, seen = [], {state.query.strip().lower()}
        for text in [plan.get("primary_query", ""), *plan.get("variations", [])][: 1 + int(self.options.get("variations", 3))]:
            text = " ".join(str(text).split())[:1000]
            if text and text.lower() not in seen:
                seen.add(text.lower())
                queries.append(text)
        state.alternatives = queries
        if plan.get("retrieval_strategy") in ("hybrid", "semantic", "keyword"):
            state.retrieval_strategy = plan["retrieval_strategy"]
        confidence = float(plan.get("confidence") or 0)
        conditions = listed_conditions(plan.get("filters", []), values)
        if conditions and confidence >= float(self.options.get("min_confidence", 0.7)):
            try:
                state.interpreted_filter = parse_filter_groups([{"conditions": conditions}])
            except FilterError:
                conditions = []
        else:
            conditions = []
        ctx.emit("plan_done", op=self.name, queries=queries, retrieval_strategy=state.retrieval_strategy,
                 filters=conditions, confidence=confidence)
