"""QueryInterpretation: a language model turns the query into filters over the collection's real values.

Applied only when the model's confidence reaches `min_confidence` (default 0.7); otherwise an
`interpretation_skipped` event gives the reason and the confidence.
"""
from __future__ import annotations

from django.db.models import Count

from airweave.collections.access import visible_q
from airweave.collections.models import Chunk
from airweave.providers.errors import NoProviderAvailable
from search.filters import FilterError, parse_filter_groups
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import SearchState

FIELDS = ("airweave_system_metadata.source_name", "airweave_system_metadata.entity_type", "breadcrumbs.name")
SYSTEM = ("You turn a search query into metadata filters when, and only when, the query clearly asks for a "
          "subset (a source, a type of item, a folder, a date range). Use only the fields and values listed. "
          "Give a confidence between 0 and 1 that the filters capture what the user meant.")
SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["filters", "confidence"],
    "properties": {
        "confidence": {"type": "number"},
        "filters": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["field", "operator", "value"],
            "properties": {"field": {"type": "string"}, "operator": {"type": "string"}, "value": {"type": "string"}}}},
    },
}


class QueryInterpretation(SearchOperation):
    name = "query_interpretation"
    optional = True

    def execute(self, state: SearchState, ctx: Context) -> None:
        values = collection_values(state.collection_id, state.principals)
        described = describe_values(values)
        try:
            reply, provider = ctx.chains["query_interpretation"].call(lambda model, spec: model.complete_json(
                system=SYSTEM, user=f"Fields and their values:\n{described}\n\nQuery: {state.query}",
                schema=SCHEMA, name="query_interpretation"))
        except NoProviderAvailable as exc:
            ctx.emit("interpretation_skipped", op=self.name, reason=f"no language model available: {exc}")
            raise OperationSkipped("no language model available") from None
        state.provider_used[self.name] = provider
        confidence = float(reply.get("confidence") or 0)
        state.interpretation_confidence = confidence
        minimum = float(self.options.get("min_confidence", 0.7))
        conditions = [f for f in reply.get("filters", []) if f.get("field") in values
                      and f.get("value") in values[f["field"]]]
        if not conditions:
            ctx.emit("interpretation_skipped", op=self.name, reason="no filter fits the query", confidence=confidence)
            raise OperationSkipped("no filter fits the query")
        if confidence < minimum:
            ctx.emit("interpretation_skipped", op=self.name, reason=f"confidence {confidence:.2f} below {minimum}",
                     confidence=confidence)
            raise OperationSkipped(f"confidence {confidence:.2f} below {minimum}")
        try:
            state.interpreted_filter = parse_filter_groups(
                [{"conditions": [{"field": f["field"], "operator": "equals", "value": f["value"]} for f in conditions]}])
        except FilterError as exc:
            ctx.emit("interpretation_skipped", op=self.name, reason=str(exc), confidence=confidence)
            raise OperationSkipped("the model's filter was invalid") from None
        ctx.emit("interpretation_done", op=self.name, filter=conditions, confidence=confidence)


def describe_values(values: dict[str, list[str]]) -> str:
    """The fields and values a language model may filter on, one line per field."""
    return "\n".join(f"- {field}: {', '.join(vals) or '(none)'}" for field, vals in values.items())


def collection_values(collection_id, principals: list[str] | None, per_field: int = 30) -> dict[str, list[str]]:
    """The most common values of the interpretable fields among the chunks the caller may see.

    One query per field. The values reach a language model and, as chosen filters, the caller's
    events: values of chunks hidden from the caller must not.
    """
    chunks = Chunk.objects.filter(visible_q(principals), collection_id=collection_id)
    by_type = chunks.values("entity_type").annotate(n=Count("id")).order_by("-n")[:per_field]
    by_source = chunks.values("source_name").annotate(n=Count("id")).order_by("-n")[:per_field]
    crumbs = set()
    for row in chunks.values_list("breadcrumbs", flat=True).distinct()[:500]:
        crumbs.update(b.get("name", "") for b in row or [])
    return {
        "airweave_system_metadata.source_name": [r["source_name"] for r in by_source],
        "airweave_system_metadata.entity_type": [r["entity_type"] for r in by_type],
        "breadcrumbs.name": sorted(c for c in crumbs if c)[:per_field],
    }
