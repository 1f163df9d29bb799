"""Filters: both filter languages → one internal form → one SQL condition over `collections_chunk c`.

* v2 filter groups (docs/api.md, tiers): `[{"conditions": [{"field", "operator", "value"}]}]` — AND
  inside a group, OR across groups; `contains` is a case-insensitive substring match; ordering
  operators apply to dates and chunk_index only.
* The Qdrant-style filter of the pipeline endpoint: `{must, should, must_not, minimum_should_match,
  min_should: {conditions, min_count}}` whose items are `{key, match: {value} | {any} | {except} |
  {text}}`, `{key, range: {gt, gte, lt, lte}}`, `{has_id: [...]}`, `{is_null: {key}}`, `{is_empty:
  {key}}` (or `{key, is_null: true | false}`) or a nested filter. Keys a condition does not know
  are refused, so a typo never silently widens the results.

The internal form is a tree of `Condition` leaves and `Group` nodes; `to_sql` renders it.
Every error is a FilterError naming the bad condition's location and showing a valid example.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as dt_timezone

from django.utils.dateparse import parse_date, parse_datetime
from django.utils.timezone import is_naive, make_aware

EXAMPLE = '[{"conditions": [{"field": "airweave_system_metadata.source_name", "operator": "equals", "value": "local_files"}]}]'
QDRANT_EXAMPLE = '{"must": [{"key": "source_name", "match": {"value": "local_files"}}]}'

V2_OPERATORS = {"equals": "eq", "not_equals": "ne", "contains": "contains", "in": "in", "not_in": "not_in",
                "greater_than": "gt", "less_than": "lt", "greater_than_or_equal": "gte", "less_than_or_equal": "lte"}
ORDERING_SQL = {"gt": ">", "lt": "<", "gte": ">=", "lte": "<="}

# field -> (SQL expression, kind); kind: "text", "date", "int", "crumb" (a key of the breadcrumbs array)
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
# The pipeline endpoint's payload keys: the v2 names, and the system metadata without its prefix.
QDRANT_KEYS = {**FIELDS, **{k.split(".", 1)[1]: v for k, v in FIELDS.items() if k.startswith("airweave_system_metadata.")},
               "breadcrumbs": ("breadcrumbs", "array")}


class FilterError(ValueError):
    """An invalid filter. `loc` points at the bad condition, e.g. ["filter", 0, "conditions", 1]."""

    def __init__(self, message: str, loc: list, example: str = EXAMPLE):
        super().__init__(f"{message}. A valid filter looks like: {example}")
        self.loc = loc


@dataclass(frozen=True)
class SQLCondition:
    """A SQL boolean expression with %s placeholders and its parameters."""

    sql: str
    params: tuple

    @staticmethod
    def true() -> "SQLCondition":
        return SQLCondition("TRUE", ())

    def and_(self, other: "SQLCondition") -> "SQLCondition":
        if other.sql == "TRUE":
            return self
        if self.sql == "TRUE":
            return other
        return SQLCondition(f"({self.sql} AND {other.sql})", self.params + other.params)


@dataclass(frozen=True)
class Condition:
    """A leaf: `field` (a FIELDS expression) `op` (eq ne contains in not_in gt lt gte lte is_null is_empty has_id) `values`."""

    field: str
    op: str
    values: tuple = ()


@dataclass(frozen=True)
class Group:
    """An inner node: kind "and", "or", "not" (none of the children) or "min" (at least `minimum` children)."""

    kind: str
    children: tuple = field(default_factory=tuple)
    minimum: int = 1


Node = Condition | Group


# --- v2 filter groups --------------------------------------------------------------------------

def parse_filter_groups(groups, loc_prefix=("filter",)) -> Node | None:
    """v2 filter groups → internal form (None for no filter). Raises FilterError."""
    if groups is None or groups == []:
        return None
    loc = list(loc_prefix)
    if not isinstance(groups, list):
        raise FilterError("filter must be a list of filter groups", loc)
    alternatives = []
    for g, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("conditions"), list) or set(group) - {"conditions"}:
            raise FilterError(f"filter group {g} must be an object with a 'conditions' list", loc + [g])
        conditions = tuple(_v2_condition(c, loc + [g, "conditions", i]) for i, c in enumerate(group["conditions"]))
        if conditions:
            alternatives.append(Group("and", conditions))
    return Group("or", tuple(alternatives)) if alternatives else None


def _v2_condition(condition, loc) -> Condition:
    if not isinstance(condition, dict) or set(condition) != {"field", "operator", "value"}:
        raise FilterError("a condition must be an object with exactly 'field', 'operator' and 'value'", loc)
    name, operator, value = condition["field"], condition["operator"], condition["value"]
    if not isinstance(name, str) or name not in FIELDS:
        raise FilterError(f"unknown field '{name}'; filterable fields: {', '.join(FIELDS)}", loc + ["field"])
    if not isinstance(operator, str) or operator not in V2_OPERATORS:
        raise FilterError(f"unknown operator '{operator}'; operators: {', '.join(V2_OPERATORS)}", loc + ["operator"])
    op = V2_OPERATORS[operator]
    kind = FIELDS[name][1]
    if op in ORDERING_SQL and kind not in ("date", "int"):
        raise FilterError(f"operator '{operator}' applies only to created_at, updated_at and chunk_index, not '{name}'",
                          loc + ["operator"])
    if op in ("in", "not_in"):
        if not isinstance(value, list) or not value:
            raise FilterError(f"operator '{operator}' takes a non-empty list as value", loc + ["value"])
        values = tuple(_coerce(v, kind, name, loc + ["value"]) for v in value)
    else:
        if isinstance(value, (list, dict)):
            raise FilterError(f"operator '{operator}' takes a single value, not a {type(value).__name__}", loc + ["value"])
        values = (_coerce(value, kind, name, loc + ["value"]),)
    return Condition(name, op, values)


def compile_filter_groups(groups, loc_prefix=("filter",)) -> SQLCondition:
    """v2 filter groups → SQL. Raises FilterError naming the bad condition."""
    return to_sql(parse_filter_groups(groups, loc_prefix))


# --- Qdrant-style filter of the pipeline endpoint ----------------------------------------------

MAX_NESTING = 16


def parse_qdrant_filter(spec, loc=("filter",)) -> Node | None:
    """Qdrant-style filter → internal form (None for no filter). Raises FilterError."""
    if spec is None or spec == {}:
        return None
    loc = list(loc)
    if len(loc) > 3 * MAX_NESTING:
        raise FilterError(f"filters nest at most {MAX_NESTING} levels deep", loc, QDRANT_EXAMPLE)
    if not isinstance(spec, dict):
        raise FilterError("filter must be an object with must / should / must_not", loc, QDRANT_EXAMPLE)
    unknown = set(spec) - {"must", "should", "must_not", "minimum_should_match", "min_should"}
    if unknown:
        raise FilterError(f"unknown filter clause(s): {', '.join(sorted(unknown))}", loc, QDRANT_EXAMPLE)
    min_should = spec.get("min_should")
    if isinstance(min_should, dict) and "conditions" in min_should:  # Qdrant's own form: its own conditions
        if "minimum_should_match" in spec:
            raise FilterError("give min_should or minimum_should_match, not both", loc + ["min_should"], QDRANT_EXAMPLE)
        spec = {**{k: v for k, v in spec.items() if k != "min_should"}, "_min": min_should}
    elif "should" not in spec and ("minimum_should_match" in spec or "min_should" in spec):
        clause = "minimum_should_match" if "minimum_should_match" in spec else "min_should"
        raise FilterError(f"{clause} counts the conditions of 'should', and this filter has none", loc + [clause],
                          QDRANT_EXAMPLE)
    parts = []
    for clause in ("must", "should", "must_not"):
        items = spec.get(clause)
        if items is None:
            continue
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            raise FilterError(f"'{clause}' must be a list of conditions", loc + [clause], QDRANT_EXAMPLE)
        children = tuple(_qdrant_item(item, loc + [clause, i]) for i, item in enumerate(items))
        if not children:
            continue
        if clause == "must":
            parts.append(Group("and", children))
        elif clause == "must_not":
            parts.append(Group("not", children))
        else:
            minimum = spec.get("minimum_should_match", spec.get("min_should", 1))
            if isinstance(minimum, dict):
                minimum = minimum.get("min_count", 1)
            if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
                raise FilterError("minimum_should_match must be a positive integer", loc + ["minimum_should_match"],
                                  QDRANT_EXAMPLE)
            parts.append(Group("min", children, minimum))
    if "_min" in spec:
        parts.append(_qdrant_min_should(spec["_min"], loc + ["min_should"]))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Group("and", tuple(parts))


def _qdrant_min_should(spec, loc) -> Node:
    """Qdrant's `min_should: {conditions: [...], min_count}`: at least min_count of its conditions."""
    if not isinstance(spec, dict) or set(spec) - {"conditions", "min_count"} or not isinstance(spec["conditions"], list):
        raise FilterError("min_should takes {conditions: [...], min_count}", loc, QDRANT_EXAMPLE)
    minimum = spec.get("min_count", 1)
    if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
        raise FilterError("min_should.min_count must be a positive integer", loc + ["min_count"], QDRANT_EXAMPLE)
    children = tuple(_qdrant_item(item, loc + ["conditions", i]) for i, item in enumerate(spec["conditions"]))
    if not children:
        raise FilterError("min_should needs at least one condition", loc + ["conditions"], QDRANT_EXAMPLE)
    return Group("min", children, minimum)


_CONDITION_KEYS = {"key", "match", "range"}


def _qdrant_item(item, loc) -> Node:
    if not isinstance(item, dict):
        raise FilterError("a condition must be an object", loc, QDRANT_EXAMPLE)
    if set(item) & {"must", "should", "must_not", "min_should", "minimum_should_match"}:
        return parse_qdrant_filter(item, loc) or Group("and", ())
    if "has_id" in item:
        _only(item, {"has_id"}, loc)
        ids = item["has_id"]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise FilterError("has_id takes a non-empty list of result ids", loc + ["has_id"], QDRANT_EXAMPLE)
        return Condition("id", "has_id", tuple(ids))
    for test in ("is_null", "is_empty"):
        if test in item:
            value = item[test]
            if isinstance(value, dict):  # Qdrant's form: {"is_null": {"key": "updated_at"}}
                _only(item, {test}, loc)
                _only(value, {"key"}, loc + [test])
                return Condition(_qdrant_key(value.get("key"), loc + [test, "key"]), test)
            if isinstance(value, bool):  # {"key": "updated_at", "is_null": false}
                _only(item, {"key", test}, loc)
                condition = Condition(_qdrant_key(item.get("key"), loc + ["key"]), test)
                return condition if value else Group("not", (condition,))
            raise FilterError(f"{test} takes {{\"key\": ...}} (or true / false beside a key)", loc + [test],
                              QDRANT_EXAMPLE)
    _only(item, _CONDITION_KEYS, loc)
    if "match" in item and "range" in item:
        raise FilterError("a condition takes match or range, not both: put each in its own condition", loc,
                          QDRANT_EXAMPLE)
    key = _qdrant_key(item.get("key"), loc + ["key"])
    kind = QDRANT_KEYS[key][1]
    if kind == "array":
        raise FilterError("'breadcrumbs' takes is_empty / is_null; match a breadcrumb with breadcrumbs.name, "
                          "breadcrumbs.entity_id or breadcrumbs.entity_type", loc + ["key"], QDRANT_EXAMPLE)
    if "match" in item:
        match = item["match"]
        if not isinstance(match, dict) or len(match) != 1 or next(iter(match)) not in ("value", "any", "except", "text"):
            raise FilterError("match takes exactly one of value, any, except, text", loc + ["match"], QDRANT_EXAMPLE)
        (how, value), = match.items()
        if how in ("any", "except"):
            if not isinstance(value, list) or not value:
                raise FilterError(f"match.{how} takes a non-empty list", loc + ["match", how], QDRANT_EXAMPLE)
            values = tuple(_coerce(v, kind, key, loc + ["match", how], QDRANT_EXAMPLE) for v in value)
            return Condition(key, "in" if how == "any" else "not_in", values)
        op = "contains" if how == "text" else "eq"
        return Condition(key, op, (_coerce(value, kind, key, loc + ["match", how], QDRANT_EXAMPLE),))
    if "range" in item:
        bounds = item["range"]
        if kind not in ("date", "int") or not isinstance(bounds, dict) or not bounds or set(bounds) - set(ORDERING_SQL):
            raise FilterError("range takes gt / gte / lt / lte on created_at, updated_at or chunk_index",
                              loc + ["range"], QDRANT_EXAMPLE)
        return Group("and", tuple(Condition(key, op, (_coerce(v, kind, key, loc + ["range", op], QDRANT_EXAMPLE),))
                                  for op, v in bounds.items()))
    raise FilterError("a condition needs match, range, has_id, is_null or is_empty", loc, QDRANT_EXAMPLE)


def _only(item: dict, allowed: set, loc) -> None:
    unknown = sorted(str(k) for k in set(item) - allowed)
    if unknown:
        raise FilterError(f"unknown field(s) in this condition: {', '.join(unknown)}; it takes "
                          f"{', '.join(sorted(allowed))}", loc, QDRANT_EXAMPLE)


def _qdrant_key(key, loc) -> str:
    if not isinstance(key, str) or key not in QDRANT_KEYS:
        raise FilterError(f"unknown key '{key}'; keys: {', '.join(QDRANT_KEYS)}", loc, QDRANT_EXAMPLE)
    return key


def compile_qdrant_filter(spec) -> SQLCondition:
    """Qdrant-style filter → SQL. Raises FilterError naming the bad condition."""
    return to_sql(parse_qdrant_filter(spec))


# --- internal form → SQL -------------------------------------------------------------------------

def to_sql(node: Node | None) -> SQLCondition:
    """Render the internal form over `collections_chunk c` (None → TRUE)."""
    if node is None:
        return SQLCondition.true()
    if isinstance(node, Group):
        rendered = [to_sql(child) for child in node.children]
        params = tuple(p for r in rendered for p in r.params)
        if not rendered:
            return SQLCondition.true() if node.kind in ("and", "not") else SQLCondition("FALSE", ())
        if node.kind == "and":
            return SQLCondition("(" + " AND ".join(r.sql for r in rendered) + ")", params)
        if node.kind == "or" or (node.kind == "min" and node.minimum == 1):
            return SQLCondition("(" + " OR ".join(r.sql for r in rendered) + ")", params)
        if node.kind == "not":
            return SQLCondition("NOT (" + " OR ".join(r.sql for r in rendered) + ")", params)
        counted = " + ".join(f"(CASE WHEN {r.sql} THEN 1 ELSE 0 END)" for r in rendered)
        return SQLCondition(f"(({counted}) >= %s)", params + (node.minimum,))
    return _condition_sql(node)


def _condition_sql(c: Condition) -> SQLCondition:
    if c.op == "has_id":
        return SQLCondition("c.id::text = ANY(%s)", (list(c.values),))
    expr, kind = QDRANT_KEYS[c.field]
    if kind == "array":  # the whole breadcrumbs array
        if c.op == "is_empty":
            return SQLCondition("(c.breadcrumbs IS NULL OR jsonb_array_length(c.breadcrumbs) = 0)", ())
        return SQLCondition("c.breadcrumbs IS NULL", ())
    if kind == "crumb":
        return _crumb_sql(expr, c)
    if c.op == "is_null":
        return SQLCondition(f"{expr} IS NULL", ())
    if c.op == "is_empty":
        return SQLCondition(f"({expr} IS NULL OR {expr}::text = '')", ())
    values = c.values
    if c.op == "eq":
        return SQLCondition(f"{expr} = %s", values)
    if c.op == "ne":
        return SQLCondition(f"{expr} IS DISTINCT FROM %s", values)
    if c.op == "contains":
        return SQLCondition(f"{expr}::text ILIKE %s", (_like(values[0]),))
    if c.op == "in":
        return SQLCondition(f"{expr} = ANY(%s)", (list(values),))
    if c.op == "not_in":
        return SQLCondition(f"({expr} IS NULL OR NOT ({expr} = ANY(%s)))", (list(values),))
    return SQLCondition(f"{expr} {ORDERING_SQL[c.op]} %s", values)


def _crumb_sql(key: str, c: Condition) -> SQLCondition:
    if c.op in ("is_null", "is_empty"):
        return SQLCondition(f"NOT EXISTS (SELECT 1 FROM jsonb_array_elements(c.breadcrumbs) AS b "
                            f"WHERE coalesce(b->>'{key}', '') <> '')", ())
    if c.op == "contains":
        return SQLCondition(f"EXISTS (SELECT 1 FROM jsonb_array_elements(c.breadcrumbs) AS b WHERE b->>'{key}' ILIKE %s)",
                            (_like(c.values[0]),))
    any_of = "(" + " OR ".join("c.breadcrumbs @> %s::jsonb" for _ in c.values) + ")"
    params = tuple(json.dumps([{key: v}]) for v in c.values)
    return SQLCondition(any_of if c.op in ("eq", "in") else f"NOT {any_of}", params)


def _like(value: str) -> str:
    escaped = str(value).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _coerce(value, kind: str, name: str, loc, example: str = EXAMPLE):
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise FilterError(f"'{name}' takes an integer value", loc, example)
        return value
    if kind == "date":
        if not isinstance(value, str):
            raise FilterError(f"'{name}' takes an ISO-8601 date or datetime string, e.g. 2024-05-01T00:00:00Z", loc, example)
        parsed = _parse_when(value)
        if parsed is None:
            raise FilterError(f"'{value}' is not an ISO-8601 date or datetime", loc, example)
        return parsed
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise FilterError(f"'{name}' takes a string value", loc, example)
    if "\x00" in str(value):
        raise FilterError(f"the value for '{name}' must not contain NUL characters", loc, example)
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
