"""Unit tests of search.retrieval's fusion and collapse on hand-made Hit lists (no database)."""
from __future__ import annotations

import pytest

from search.retrieval import MAX_DEPTH, Hit, RetrievalQuery, candidate_depth, collapse, rrf_fuse


def h(chunk, entity=None, score=0.0):
    return Hit(chunk_id=chunk, entity_pk=entity or chunk[0], score=score)


def ids(hits):
    return [x.chunk_id for x in hits]


def test_rrf_scores_are_sums_of_reciprocal_ranks():
    vector = [h("a1"), h("b1"), h("c1")]
    keyword = [h("c1"), h("a1")]
    fused = rrf_fuse([vector, keyword], k=60)
    assert ids(fused) == ["a1", "c1", "b1"]
    scores = {x.chunk_id: x.score for x in fused}
    assert scores["a1"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c1"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b1"] == pytest.approx(1 / 62)


def test_rrf_ignores_the_legs_own_scores():
    # Raw scores of different legs are not comparable; only ranks count.
    vector = [h("a1", score=0.99), h("b1", score=0.98)]
    keyword = [h("b1", score=42.0), h("a1", score=0.01)]
    fused = rrf_fuse([vector, keyword])
    assert fused[0].score == pytest.approx(fused[1].score)


def test_rrf_document_in_both_legs_beats_a_single_top_rank():
    vector = [h("x1"), h("both1")]
    keyword = [h("y1"), h("both1")]
    assert ids(rrf_fuse([vector, keyword]))[0] == "both1"


def test_rrf_ties_keep_first_seen_order():
    fused = rrf_fuse([[h("a1"), h("b1")], [h("b1"), h("a1")]])
    assert ids(fused) == ["a1", "b1"]
    fused = rrf_fuse([[h("b1"), h("a1")], [h("a1"), h("b1")]])
    assert ids(fused) == ["b1", "a1"]


def test_rrf_k_changes_the_weights():
    # With a small k the top rank of one leg dominates; with a large k agreement dominates.
    vector = [h("a1"), h("c1"), h("d1"), h("b1")]
    keyword = [h("b1"), h("c1"), h("e1"), h("a1")]
    assert ids(rrf_fuse([vector, keyword], k=0))[:2] == ["a1", "b1"]  # 1 + 1/4 each vs c: 1/2 + 1/2
    assert ids(rrf_fuse([vector, keyword], k=1000))[0] == "c1"


def test_rrf_of_one_leg_keeps_its_order_and_of_none_is_empty():
    leg = [h("c1"), h("a1"), h("b1")]
    assert ids(rrf_fuse([leg])) == ["c1", "a1", "b1"]
    assert rrf_fuse([]) == []
    assert rrf_fuse([[], []]) == []
    assert ids(rrf_fuse([[], leg])) == ["c1", "a1", "b1"]


def test_rrf_keeps_entity_of_each_hit():
    fused = rrf_fuse([[h("a1", "A"), h("b1", "B")], [h("b1", "B")]])
    assert {(x.chunk_id, x.entity_pk) for x in fused} == {("a1", "A"), ("b1", "B")}


def test_rrf_by_entity_fuses_chunks_of_one_entity_and_shows_the_best_ranked():
    # Legs already collapsed (as retrieve() does): one hit per entity per leg.
    vector = [h("a2", "A"), h("b1", "B")]
    keyword = [h("b1", "B"), h("a1", "A")]
    fused = rrf_fuse([vector, keyword], by_entity=True)
    assert [x.entity_pk for x in fused] == ["A", "B"]  # tie: first seen first
    assert fused[0].chunk_id == "a2"  # rank 1 in the vector leg beats rank 2 in the keyword leg
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1].chunk_id == "b1"


def test_rrf_by_entity_yields_one_hit_per_entity():
    vector = [h("a1", "A"), h("b1", "B"), h("c1", "C")]
    keyword = [h("c2", "C"), h("a3", "A")]
    fused = rrf_fuse([vector, keyword], by_entity=True)
    assert sorted(x.entity_pk for x in fused) == ["A", "B", "C"]
    assert {x.entity_pk: x.chunk_id for x in fused} == {"A": "a1", "B": "b1", "C": "c2"}  # c2: rank 1 < rank 3


def test_rrf_without_by_entity_keeps_chunks_apart():
    fused = rrf_fuse([[h("a1", "A"), h("a2", "A")], [h("a2", "A")]])
    assert ids(fused) == ["a2", "a1"]


def test_collapse_keeps_the_first_chunk_of_each_entity_in_order():
    hits = [h("a2", "A", 0.9), h("b1", "B", 0.8), h("a1", "A", 0.7), h("c3", "C", 0.6), h("b2", "B", 0.5)]
    out = collapse(hits)
    assert ids(out) == ["a2", "b1", "c3"]
    assert [x.score for x in out] == [0.9, 0.8, 0.6]
    assert collapse([]) == []
    assert ids(collapse([h("a1", "A")])) == ["a1"]


def test_collapse_does_not_modify_its_input():
    hits = [h("a1", "A"), h("a2", "A")]
    collapse(hits)
    assert ids(hits) == ["a1", "a2"]


def test_candidate_depth_covers_the_page():
    base = dict(collection_id=None, dims=384, text="q")
    assert candidate_depth(RetrievalQuery(**base, limit=10, offset=0)) >= 10
    deep = RetrievalQuery(**base, limit=100, offset=900)
    assert candidate_depth(deep) >= 1000
    assert candidate_depth(RetrievalQuery(**base, limit=100, offset=900, collapse=True)) >= candidate_depth(deep)
    assert candidate_depth(RetrievalQuery(**base, limit=1000, offset=100000)) <= MAX_DEPTH
