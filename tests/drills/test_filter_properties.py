"""Drill 5b: property tests of both filter languages (hypothesis).

Any input — well-formed, nearly well-formed or arbitrary JSON — either compiles to a SQL
condition that PostgreSQL runs, or raises FilterError naming the faulty location (which the API
answers as 422). Nothing else may happen: no other exception, no SQL that fails to run.
"""
from __future__ import annotations

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from search.filters import FIELDS, QDRANT_KEYS, V2_OPERATORS, FilterError, compile_filter_groups, compile_qdrant_filter

SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=30), st.sampled_from(["2024-01-31", "2024-01-31T10:00:00Z", "yesterday", "",
                                                           "local_files", "%", "_", "'; DROP TABLE x; --", "\x00"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                           max_leaves=20)
values = st.one_of(scalars, st.lists(scalars, max_size=4))

v2_condition = st.fixed_dictionaries({"field": st.one_of(st.sampled_from(sorted(FIELDS)), st.text(max_size=20)),
                                      "operator": st.one_of(st.sampled_from(sorted(V2_OPERATORS)), st.text(max_size=10)),
                                      "value": values})
text_fields = sorted(f for f, (_, kind) in FIELDS.items() if kind in ("text", "crumb"))
date_fields = sorted(f for f, (_, kind) in FIELDS.items() if kind == "date")
dates = st.one_of(st.dates().map(str), st.datetimes().map(lambda d: d.isoformat() + "Z"))
well_formed_condition = st.one_of(
    st.fixed_dictionaries({"field": st.sampled_from(text_fields),
                           "operator": st.sampled_from(["equals", "not_equals", "contains"]),
                           "value": st.text(max_size=20)}),
    st.fixed_dictionaries({"field": st.sampled_from(text_fields), "operator": st.sampled_from(["in", "not_in"]),
                           "value": st.lists(st.text(max_size=10), min_size=1, max_size=4)}),
    st.fixed_dictionaries({"field": st.sampled_from(date_fields),
                           "operator": st.sampled_from(["greater_than", "less_than", "greater_than_or_equal",
                                                        "less_than_or_equal", "equals"]), "value": dates}),
    st.fixed_dictionaries({"field": st.just("airweave_system_metadata.chunk_index"),
                           "operator": st.sampled_from(sorted(V2_OPERATORS)), "value": st.integers(-5, 2**40)}))
well_formed_groups = st.lists(st.fixed_dictionaries({"conditions": st.lists(well_formed_condition, max_size=4)}),
                              min_size=1, max_size=3)
v2_groups = st.lists(st.fixed_dictionaries({"conditions": st.lists(st.one_of(v2_condition, json_values), max_size=4)}),
                     max_size=3)

text_keys = sorted(k for k, (_, kind) in QDRANT_KEYS.items() if kind in ("text", "crumb"))
well_formed_leaf = st.one_of(
    st.fixed_dictionaries({"key": st.sampled_from(text_keys), "match": st.one_of(
        st.fixed_dictionaries({"value": st.text(max_size=15)}),
        st.fixed_dictionaries({"any": st.lists(st.text(max_size=10), min_size=1, max_size=3)}),
        st.fixed_dictionaries({"except": st.lists(st.text(max_size=10), min_size=1, max_size=3)}),
        st.fixed_dictionaries({"text": st.text(max_size=10)}))}),
    st.fixed_dictionaries({"key": st.sampled_from(["created_at", "updated_at"]),
                           "range": st.dictionaries(st.sampled_from(["gt", "gte", "lt", "lte"]), dates, min_size=1)}),
    st.fixed_dictionaries({"key": st.just("chunk_index"),
                           "range": st.dictionaries(st.sampled_from(["gt", "gte", "lt", "lte"]), st.integers(-3, 99),
                                                    min_size=1)}),
    st.fixed_dictionaries({"is_null": st.fixed_dictionaries({"key": st.sampled_from(text_keys)})}))
well_formed_qdrant = st.recursive(
    st.dictionaries(st.sampled_from(["must", "should", "must_not"]), st.lists(well_formed_leaf, min_size=1, max_size=3),
                    min_size=1),
    lambda inner: st.dictionaries(st.sampled_from(["must", "should", "must_not"]),
                                  st.lists(st.one_of(well_formed_leaf, inner), min_size=1, max_size=3), min_size=1),
    max_leaves=8)
keys = st.one_of(st.sampled_from(sorted(QDRANT_KEYS)), st.text(max_size=15))
match = st.one_of(st.fixed_dictionaries({"value": scalars}), st.fixed_dictionaries({"any": st.lists(scalars, max_size=3)}),
                  st.fixed_dictionaries({"except": st.lists(scalars, max_size=3)}),
                  st.fixed_dictionaries({"text": st.text(max_size=10)}), json_values)
bounds = st.dictionaries(st.sampled_from(["gt", "gte", "lt", "lte", "eq"]), scalars, max_size=3)
leaf = st.one_of(st.fixed_dictionaries({"key": keys, "match": match}), st.fixed_dictionaries({"key": keys, "range": bounds}),
                 st.fixed_dictionaries({"has_id": st.lists(scalars, max_size=3)}),
                 st.fixed_dictionaries({"is_null": st.one_of(st.fixed_dictionaries({"key": keys}), scalars)}),
                 st.fixed_dictionaries({"is_empty": st.fixed_dictionaries({"key": keys})}),
                 st.fixed_dictionaries({"key": keys, "is_null": st.booleans()}))
clauses = st.sampled_from(["must", "should", "must_not"])
qdrant = st.recursive(
    st.dictionaries(clauses, st.lists(leaf, max_size=3), max_size=3),
    lambda inner: st.one_of(
        st.dictionaries(clauses, st.lists(st.one_of(leaf, inner), max_size=3), max_size=3),
        st.fixed_dictionaries({"should": st.lists(st.one_of(leaf, inner), max_size=3),
                               "minimum_should_match": st.one_of(st.integers(-2, 5), scalars)}),
        st.fixed_dictionaries({"min_should": st.fixed_dictionaries({"conditions": st.lists(leaf, max_size=3),
                                                                    "min_count": st.one_of(st.integers(-2, 5), scalars)})})),
    max_leaves=12)


def _runs_or_names_its_fault(compile_, spec) -> None:
    try:
        condition = compile_(spec)
    except FilterError as error:
        event("refused with a FilterError")
        assert isinstance(error.loc, list) and error.loc and error.loc[0] == "filter", error.loc
        assert str(error), "a FilterError without a message"
        return
    event("compiled and ran")
    with transaction.atomic(), connection.cursor() as cursor:  # the compiled SQL must run as it is
        cursor.execute(f"SELECT count(*) FROM collections_chunk c WHERE {condition.sql}", condition.params)


@pytest.mark.django_db
@SETTINGS
@given(spec=st.one_of(well_formed_groups, v2_groups, json_values))
def test_any_v2_filter_compiles_to_sql_that_runs_or_names_its_fault(spec):
    _runs_or_names_its_fault(compile_filter_groups, spec)


@pytest.mark.django_db
@SETTINGS
@given(spec=st.one_of(well_formed_qdrant, qdrant, json_values))
def test_any_qdrant_filter_compiles_to_sql_that_runs_or_names_its_fault(spec):
    _runs_or_names_its_fault(compile_qdrant_filter, spec)
