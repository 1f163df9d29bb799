"""Drill 5b: property tests of both filter languages (hypothesis).

Any input — well-formed, nearly well-formed or arbitrary JSON — either compiles to a SQL
condition that PostgreSQL runs, or raises FilterError naming the faulty location (which the API
answers as 422). Nothing else may happen: no other exception, no SQL that fails to run.
"""
from __future__ import annotations

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from search.filters import FIELDS, QDRANT_KEYS, V2_OPERATORS, FilterError, compile_filter_groups, compile_qdrant_filter

SETTINGS = settings(max_examples=150, deadline=None, database=None,
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
v2_groups = st.lists(st.fixed_dictionaries({"conditions": st.lists(st.one_of(v2_condition, json_values), max_size=4)}),
                     max_size=3)

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
        assert isinstance(error.loc, list) and error.loc and error.loc[0] == "filter", error.loc
        assert str(error), "a FilterError without a message"
        return
    with transaction.atomic(), connection.cursor() as cursor:  # the compiled SQL must run as it is
        cursor.execute(f"SELECT count(*) FROM collections_chunk c WHERE {condition.sql}", condition.params)


@pytest.mark.django_db
@SETTINGS
@given(spec=st.one_of(v2_groups, json_values))
def test_any_v2_filter_compiles_to_sql_that_runs_or_names_its_fault(spec):
    _runs_or_names_its_fault(compile_filter_groups, spec)


@pytest.mark.django_db
@SETTINGS
@given(spec=st.one_of(qdrant, json_values))
def test_any_qdrant_filter_compiles_to_sql_that_runs_or_names_its_fault(spec):
    _runs_or_names_its_fault(compile_qdrant_filter, spec)
