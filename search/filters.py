"""Filters: the v2 filter groups of API.md compiled to one SQL condition over `collections_chunk c`.

FilterGroup list: `[{"conditions": [{"field", "operator", "value"}, ...]}, ...]` — AND inside a
group, OR across groups. Fields and operators are those of API.md; ordering operators apply to
dates and chunk_index only; `contains` is a case-insensitive substring match.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils.dateparse import parse_date, parse_datetime
from datetime import timezone as dt_timezone

from django.utils.timezone import is_naive, make_aware

EXAMPLE = '[{"conditions": [{"field": "airweave_system_metadata.source_name", "operator": "equals", "value": "local_files"}]}]'

ORDERING = {"greater_than": ">", "less_than": "<", "greater_than_or_equal": ">=", "less_than_or_equal": "<="}
OPERATORS = ("equals", "not_equals", "contains", "in", "not_in", *ORDERING)

# field -> (SQL expression, kind) ; kind: "text", "date", "int", "crumb"
FIELDS = {
    "entity_id": ("(c.original_entity_id || '__chunk_' || c.chunk_index)", "text"),
    "name": ("c.name", "text"),
    "created_at": ("c.created_at", "date"),
    "updated_at": ("c.updated_at", "date"),
    "breadcrumbs.entity_id": ("entity_id", "crumb"),
    "breadcrumbs.name": ("name", "crumb"),
    "breadcrumbs.entity_type": ("entity_type", "crumb"),
    "airweave_system_metadata.entity_type": ("c.entity_type", "text"),
    "airweave_system_metadata.source_name": ("c.source_name", "text"),
    "airweave_system_metadata.original_entity_id": ("c.original_entity_id", "text"),
    "airweave_system_metadata.chunk_index": ("c.chunk_index", "int"),
    "airweave_system_metadata.sync_id": ("c.sync_id::text", "text"),
    "airweave_system_metadata.sync_job_id": ("c.sync_job_id::text", "text"),
}


class FilterError(ValueError):
    """An invalid filter. `loc` points at the bad condition, e.g. ["filter", 0, "conditions", 1]."""

    def __init__(self, message: str, loc: list):
        super().__init__(f"{message}. A valid filter looks like: {EXAMPLE}")
        self.loc = loc


@dataclass(frozen=True)
class SQLCondition:
    """A SQL boolean expression with %s placeholders and its parameters."""

    sql: str
    params: tuple

    @staticmethod
    def true() -> "SQLCondition":
        return SQLCondition("TRUE", ())


def compile_filter_groups(groups, loc_prefix=("filter",)) -> SQLCondition:
    """Compile v2 filter groups to SQL. Raises FilterError naming the bad condition."""
    if groups is None or groups == []:
        return SQLCondition.true()
    loc = list(loc_prefix)
    if not isinstance(groups, list):
        raise FilterError("filter must be a list of filter groups", loc)
    group_sql, params = [], []
    for g, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("conditions"), list) or set(group) - {"conditions"}:
            raise FilterError(f"filter group {g} must be an object with a 'conditions' list", loc + [g])
        parts = []
        for i, condition in enumerate(group["conditions"]):
            sql, p = _compile_condition(condition, loc + [g, "conditions", i])
            parts.append(sql)
            params.extend(p)
        if parts:
            group_sql.append("(" + " AND ".join(parts) + ")")
    if not group_sql:
        return SQLCondition.true()
    return SQLCondition("(" + " OR ".join(group_sql) + ")", tuple(params))


def _compile_condition(condition, loc) -> tuple[str, list]:
    if not isinstance(condition, dict) or set(condition) != {"field", "operator", "value"}:
        raise FilterError("a condition must be an object with exactly 'field', 'operator' and 'value'", loc)
    field, op, value = condition["field"], condition["operator"], condition["value"]
    if field not in FIELDS:
        raise FilterError(f"unknown field '{field}'; filterable fields: {', '.join(FIELDS)}", loc + ["field"])
    if op not in OPERATORS:
        raise FilterError(f"unknown operator '{op}'; operators: {', '.join(OPERATORS)}", loc + ["operator"])
    expr, kind = FIELDS[field]
    if op in ORDERING and kind not in ("date", "int"):
        raise FilterError(f"operator '{op}' applies only to created_at, updated_at and chunk_index, not '{field}'", loc + ["operator"])
    if op in ("in", "not_in"):
        if not isinstance(value, list) or not value:
            raise FilterError(f"operator '{op}' takes a non-empty list as value", loc + ["value"])
        values = [_coerce(v, kind, field, loc + ["value"]) for v in value]
    else:
        if isinstance(value, (list, dict)):
            raise FilterError(f"operator '{op}' takes a single value, not a {type(value).__name__}", loc + ["value"])
        values = [_coerce(value, kind, field, loc + ["value"])]
    if kind == "crumb":
        return _crumb_condition(expr, op, values)
    if op == "equals":
        return f"{expr} = %s", values
    if op == "not_equals":
        return f"{expr} IS DISTINCT FROM %s", values
    if op == "contains":
        return f"{expr}::text ILIKE %s", [_like(values[0])]
    if op == "in":
        return f"{expr} = ANY(%s)", [values]
    if op == "not_in":
        return f"({expr} IS NULL OR NOT ({expr} = ANY(%s)))", [values]
    return f"{expr} {ORDERING[op]} %s", values


def _crumb_condition(key: str, op: str, values: list) -> tuple[str, list]:
    import json

    def has(v):
        return "c.breadcrumbs @> %s::jsonb", [json.dumps([{key: v}])]

    if op in ("equals", "in"):
        parts = [has(v) for v in values]
        return "(" + " OR ".join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
    if op in ("not_equals", "not_in"):
        parts = [has(v) for v in values]
        return "NOT (" + " OR ".join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
    # contains
    return (f"EXISTS (SELECT 1 FROM jsonb_array_elements(c.breadcrumbs) AS b WHERE b->>'{key}' ILIKE %s)",
            [_like(values[0])])


def _like(value: str) -> str:
    escaped = str(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _coerce(value, kind: str, field: str, loc):
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise FilterError(f"'{field}' takes an integer value", loc)
        return value
    if kind == "date":
        if not isinstance(value, str):
            raise FilterError(f"'{field}' takes an ISO-8601 date or datetime string, e.g. 2024-05-01T00:00:00Z", loc)
        parsed = _parse_when(value)
        if parsed is None:
            raise FilterError(f"'{value}' is not an ISO-8601 date or datetime", loc)
        return parsed
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise FilterError(f"'{field}' takes a string value", loc)
    if "\x00" in str(value):
        raise FilterError(f"the value for '{field}' must not contain NUL characters", loc)
    return str(value)


def _parse_when(value: str) -> datetime | None:
    try:
        parsed = parse_datetime(value)
        if parsed is None:
            d = parse_date(value)
            parsed = datetime(d.year, d.month, d.day) if d else None
    except ValueError:
        return None
    if parsed is not None and is_naive(parsed):
        parsed = make_aware(parsed, dt_timezone.utc)
    return parsed
