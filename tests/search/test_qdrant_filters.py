"""The pipeline endpoint's Qdrant-style filter: parsed to the same internal form as v2 groups.

Runs against the corpus of test_filters (synced once for this module too).
"""
from __future__ import annotations

import pytest

from search.filters import QDRANT_EXAMPLE, Condition, FilterError, Group, compile_qdrant_filter, parse_filter_groups, \
    parse_qdrant_filter
from search.instant import hydrate
from search.retrieval import RetrievalQuery, retrieve
from tests.search.test_filters import ALL, corpus  # noqa: F401  (module fixture)

pytestmark = pytest.mark.django_db


def matching(corpus, spec):  # noqa: F811
    hits = retrieve(RetrievalQuery(collection_id=corpus.collection.id, dims=corpus.collection.vector_size,
                                   text="documents", query_vector=corpus.query_vector, strategy="semantic",
                                   condition=compile_qdrant_filter(spec), limit=1000))
    return {r["airweave_system_metadata"]["original_entity_id"] for r in hydrate(hits)}


def test_both_languages_reach_the_same_internal_form():
    v2 = parse_filter_groups([{"conditions": [{"field": "airweave_system_metadata.source_name", "operator": "equals",
                                               "value": "local_files"}]}])
    qdrant = parse_qdrant_filter({"should": [{"must": [{"key": "airweave_system_metadata.source_name",
                                                         "match": {"value": "local_files"}}]}]})
    leaf = Condition("airweave_system_metadata.source_name", "eq", ("local_files",))
    assert v2 == Group("or", (Group("and", (leaf,)),))
    assert qdrant == Group("min", (Group("and", (leaf,)),), 1)


def test_must_match_value_and_short_keys(corpus):  # noqa: F811
    assert matching(corpus, {"must": [{"key": "source_name", "match": {"value": "local_files"}}]}) == ALL
    assert matching(corpus, {"must": [{"key": "name", "match": {"value": "Q1 report"}}]}) == {"reports/2023/q1.md"}


def test_match_any_and_except(corpus):  # noqa: F811
    any_ = {"must": [{"key": "original_entity_id", "match": {"any": ["readme.md", "notes/meeting.txt"]}}]}
    assert matching(corpus, any_) == {"readme.md", "notes/meeting.txt"}
    except_ = {"must": [{"key": "original_entity_id", "match": {"except": ["readme.md"]}}]}
    assert matching(corpus, except_) == ALL - {"readme.md"}


def test_must_not_and_should_with_minimum(corpus):  # noqa: F811
    spec = {"must_not": [{"key": "breadcrumbs.name", "match": {"value": "reports"}}]}
    assert matching(corpus, spec) == {"readme.md", "notes/meeting.txt", "notes/handbook.md"}
    should = [{"key": "breadcrumbs.name", "match": {"value": "reports"}},
              {"key": "breadcrumbs.name", "match": {"value": "2024"}},
              {"key": "name", "match": {"text": "report"}}]
    assert matching(corpus, {"should": should}) == {"reports/2023/q1.md", "reports/2024/q2.md"}
    assert matching(corpus, {"should": should, "minimum_should_match": 3}) == {"reports/2024/q2.md"}


def test_qdrant_min_should_counts_its_own_conditions(corpus):  # noqa: F811
    conditions = [{"key": "breadcrumbs.name", "match": {"value": "reports"}},
                  {"key": "breadcrumbs.name", "match": {"value": "2024"}},
                  {"key": "name", "match": {"text": "report"}}]
    assert matching(corpus, {"min_should": {"conditions": conditions, "min_count": 3}}) == {"reports/2024/q2.md"}
    assert matching(corpus, {"min_should": {"conditions": conditions, "min_count": 1}}) == {
        "reports/2023/q1.md", "reports/2024/q2.md"}
    spec = {"must_not": [{"key": "name", "match": {"value": "Q1 report"}}],
            "min_should": {"conditions": conditions, "min_count": 2}}
    assert matching(corpus, spec) == {"reports/2024/q2.md"}


def test_is_null_beside_a_key_takes_true_or_false(corpus):  # noqa: F811
    assert matching(corpus, {"must": [{"key": "updated_at", "is_null": True}]}) == set()
    assert matching(corpus, {"must": [{"key": "updated_at", "is_null": False}]}) == ALL
    assert matching(corpus, {"must": [{"key": "breadcrumbs", "is_empty": False}]}) == ALL - {"readme.md"}


def test_range_on_dates_and_chunk_index(corpus):  # noqa: F811
    spec = {"must": [{"key": "updated_at", "range": {"gte": "2024-01-01", "lt": "2024-07-01"}}]}
    assert matching(corpus, spec) == {"reports/2024/q2.md", "notes/meeting.txt"}
    assert matching(corpus, {"must": [{"key": "chunk_index", "range": {"gt": 0}}]}) == {"notes/handbook.md"}


def test_nested_filters_and_has_id(corpus):  # noqa: F811
    nested = {"must": [{"should": [{"key": "name", "match": {"value": "Q1 report"}},
                                   {"key": "name", "match": {"value": "Q2 Report"}}]},
                       {"must_not": [{"key": "updated_at", "range": {"lt": "2024-01-01"}}]}]}
    assert matching(corpus, nested) == {"reports/2024/q2.md"}
    from airweave.collections.models import Chunk

    row_id = str(Chunk.objects.get(collection=corpus.collection, original_entity_id="readme.md").id)
    assert matching(corpus, {"must": [{"has_id": [row_id]}]}) == {"readme.md"}


def test_is_empty_and_is_null(corpus):  # noqa: F811
    assert matching(corpus, {"must": [{"is_empty": {"key": "breadcrumbs"}}]}) == {"readme.md"}
    assert matching(corpus, {"must": [{"is_null": {"key": "updated_at"}}]}) == set()


@pytest.mark.parametrize("spec, loc", [
    ({"must": [{"key": "colour", "match": {"value": "red"}}]}, ["filter", "must", 0, "key"]),
    ({"must": [{"key": "name", "range": {"gt": 1}}]}, ["filter", "must", 0, "range"]),
    ({"must": [{"key": "name", "match": {"value": "a", "any": ["b"]}}]}, ["filter", "must", 0, "match"]),
    ({"must": [{"key": "name", "match": {"any": "b"}}]}, ["filter", "must", 0, "match", "any"]),
    ({"must": [{"key": "updated_at", "range": {"gt": "last week"}}]}, ["filter", "must", 0, "range", "gt"]),
    ({"should": [{"key": "name", "match": {"value": "a"}}], "minimum_should_match": 0}, ["filter", "minimum_should_match"]),
    ({"must": [{"key": "name"}]}, ["filter", "must", 0]),
    ({"where": []}, ["filter"]),
    ([], ["filter"]),
    # a typo or a second test in one condition must not be dropped silently (it would widen the results)
    ({"must": [{"key": "name", "match": {"value": "a"}, "mach": {"value": "b"}}]}, ["filter", "must", 0]),
    ({"must": [{"key": "chunk_index", "match": {"value": 1}, "range": {"gt": 3}}]}, ["filter", "must", 0]),
    ({"must": [{"has_id": ["x"], "key": "name"}]}, ["filter", "must", 0]),
    ({"must": [{"is_null": {"key": "name", "extra": 1}}]}, ["filter", "must", 0, "is_null"]),
    ({"must": [{"key": "name", "is_null": "yes"}]}, ["filter", "must", 0, "is_null"]),
    ({"minimum_should_match": 2, "must": [{"key": "name", "match": {"value": "a"}}]}, ["filter", "minimum_should_match"]),
    ({"min_should": {"conditions": [], "min_count": 1}}, ["filter", "min_should", "conditions"]),
    ({"min_should": {"conditions": [{"key": "name", "match": {"value": "a"}}], "min_count": 0}},
     ["filter", "min_should", "min_count"]),
    ({"min_should": {"conditions": [{"key": "colour", "match": {"value": "a"}}]}},
     ["filter", "min_should", "conditions", 0, "key"]),
])
def test_invalid_filters_name_the_condition_and_show_an_example(spec, loc):
    with pytest.raises(FilterError) as info:
        parse_qdrant_filter(spec)
    assert info.value.loc == loc
    assert QDRANT_EXAMPLE in str(info.value)


@pytest.mark.parametrize("spec", [{"must": [{"key": ["name"], "match": {"value": "a"}}]},
                                  {"must": [{"key": {"a": 1}, "match": {"value": "a"}}]}])
def test_non_string_keys_are_filter_errors(spec):
    with pytest.raises(FilterError):
        parse_qdrant_filter(spec)


@pytest.mark.parametrize("condition", [{"field": ["name"], "operator": "equals", "value": "a"},
                                       {"field": "name", "operator": {"x": 1}, "value": "a"}])
def test_non_string_v2_fields_and_operators_are_filter_errors(condition):
    with pytest.raises(FilterError):
        parse_filter_groups([{"conditions": [condition]}])
