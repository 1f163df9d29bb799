"""The fields a language model may filter on, shared by QueryInterpretation and SearchPlan.

Both operations show a model the most common values of a few fields among the chunks the caller
may see, ask it for filters in a JSON schema, and keep only the filters whose field and value
were listed (a model cannot invent a source or a folder). This module builds that prompt and
that schema and checks the reply.
"""
from __future__ import annotations

from django.db.models import Count

from airweave.collections.access import visible_q
from airweave.collections.models import Chunk, Entity
from airweave.db_router import search_connection
from search.retrieval import read_snapshot

def filter_items_schema(*, with_operator: bool) -> dict:
    """The JSON schema of the `filters` array a model answers: [{field, (operator,) value}], strings."""
    keys = ["field", "operator", "value"] if with_operator else ["field", "value"]
    return {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": keys,
        "properties": {key: {"type": "string"} for key in keys}}}


def values_prompt(values: dict[str, list[str]], label: str, query: str) -> str:
    """The user message: the fields and their values (describe_values), then `label: query`."""
    return f"Fields and their values:\n{describe_values(values)}\n\n{label}: {query}"


def listed_conditions(filters: list[dict], values: dict[str, list[str]]) -> list[dict]:
    """The model's filters whose field and value are in `values`, as `equals` conditions (v2 filter
    language); the others are dropped."""
    return [{"field": f["field"], "operator": "equals", "value": f["value"]} for f in filters
            if f.get("field") in values and f.get("value") in values[f["field"]]]


def describe_values(values: dict[str, list[str]]) -> str:
    """The fields and values a language model may filter on, one line per field."""
    return "\n".join(f"- {field}: {', '.join(vals) or '(none)'}" for field, vals in values.items())


def collection_values(collection_id, principals: list[str] | None, per_field: int = 30) -> dict[str, list[str]]:
    """The most common values of the interpretable fields among the chunks the caller may see.

    One query per field. The values reach a language model and, as chosen filters, the caller's
    events: values of chunks hidden from the caller must not. A filter the model picks is kept
    only when its value is listed here, so the list holds the most common values, not the first
    ones alphabetically (which would make every later folder impossible to filter on).
    """
    with read_snapshot(collection_id):  # on a replica when one has replayed the collection's last sync
        chunks = Chunk.objects.filter(visible_q(principals), collection_id=collection_id)
        by_type = list(chunks.values("entity_type").annotate(n=Count("id")).order_by("-n")[:per_field])
        by_source = list(chunks.values("source_name").annotate(n=Count("id")).order_by("-n")[:per_field])
        return {
            "airweave_system_metadata.source_name": [r["source_name"] for r in by_source],
            "airweave_system_metadata.entity_type": [r["entity_type"] for r in by_type],
            "breadcrumbs.name": _breadcrumb_names(collection_id, principals, per_field),
        }


def _breadcrumb_names(collection_id, principals: list[str] | None, limit: int) -> list[str]:
    """Breadcrumb names by the number of visible entities under them, most first (ties by name)."""
    entities = Entity.objects.filter(visible_q(principals), collection_id=collection_id).values("breadcrumbs")
    sql, params = entities.query.sql_with_params()
    with search_connection().cursor() as cur:
        cur.execute(f"""
            SELECT b->>'name' AS name, count(*) AS n
            FROM ({sql}) e CROSS JOIN LATERAL jsonb_array_elements(
                CASE WHEN jsonb_typeof(e.breadcrumbs) = 'array' THEN e.breadcrumbs ELSE '[]'::jsonb END) AS b
            WHERE coalesce(b->>'name', '') <> ''
            GROUP BY 1 ORDER BY n DESC, name LIMIT %s""", [*params, limit])
        return [row[0] for row in cur.fetchall()]
