"""The keyword leg over a keyword segment gives exactly the exhaustive BM25 ranking.

A segment is built over the corpus, then the corpus changes the way syncs change it: new chunks
(the segment's delta, scored from posting rows), deleted entities (still in the packed arrays,
dropped at look-up) and a longer mean length (today's avgdl, not the build's). For many queries,
depths, filters and access rules, the segment plan returns the exhaustive plan's chunks and scores.
"""
from __future__ import annotations

import random

import pytest
from django.db import connection as db

from airweave.collections.keyword_segments import keyword_segment_refresh, keyword_segment_state
from airweave.collections.models import Chunk, KeywordDoc, KeywordSegment
from airweave.collections.services import entities_delete
from search import keyword_segment, retrieval
from search.filters import compile_filter_groups
from search.retrieval import RetrievalQuery, keyword_leg, keyword_leg_exhaustive
from tests.search.test_keyword_plans import FILTERS, _agree, _write, agree_on_every_query, corpus  # noqa: F401


def _used_segment(monkeypatch) -> list:
    """Record each call of the segment plan (so a test knows it ran, not a fallback)."""
    calls = []
    original = keyword_segment.segment_scores

    def recording(*args, **kwargs):
        calls.append(args[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(keyword_segment, "segment_scores", recording)
    return calls


def test_ordinals_are_unique_and_dense_per_collection(corpus):
    collection, _ = corpus
    ords = KeywordDoc.objects.filter(collection_id=collection.id)
    assert sorted(ords.values_list("ord", flat=True)) == list(range(1, Chunk.objects.filter(collection=collection).count() + 1))
    assert set(ords.values_list("chunk_id", "entity_id")) == set(
        Chunk.objects.filter(collection=collection).values_list("id", "entity_id"))


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
@pytest.mark.parametrize("principals", [None, ["user:a@example.com"], ["user:a@example.com", "group:g1"]])
def test_segment_plan_matches_the_exhaustive_ranking(corpus, filter_name, principals, monkeypatch):
    collection, connection = corpus
    keyword_segment_refresh(collection.id, force=True)
    _write(connection, collection, random.Random(9), 15, "late", lengths=(80, 200))  # delta, longer chunks
    entities_delete(source_connection=connection, entity_ids=[f"e{e}" for e in range(0, 120, 7)])
    monkeypatch.setattr(retrieval, "_estimated_rows", lambda *args: 10**9)  # never the kept-chunks plan
    calls = _used_segment(monkeypatch)
    agree_on_every_query(collection, filter_name, principals)
    assert calls, "the segment plan never ran"


def test_a_large_delta_falls_back_to_the_row_postings(corpus, settings, monkeypatch):
    collection, connection = corpus
    keyword_segment_refresh(collection.id, force=True)
    settings.AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA = 3
    _write(connection, collection, random.Random(10), 5, "late")
    calls = _used_segment(monkeypatch)
    q = RetrievalQuery(collection_id=collection.id, dims=collection.vector_size, text="honey bee", strategy="keyword")
    _agree(keyword_leg(q, 20), keyword_leg_exhaustive(q, 20), 20)
    assert not calls


def test_refresh_builds_when_due_and_drops_below_the_minimum(corpus, settings):
    collection, connection = corpus
    settings.AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS = 1
    settings.AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA = 5
    built = keyword_segment_refresh(collection.id)
    chunks = Chunk.objects.filter(collection=collection).count()
    assert built["chunks"] == chunks and built["terms"] > 0
    assert keyword_segment_refresh(collection.id) is None  # nothing changed
    _write(connection, collection, random.Random(11), 1, "one", lengths=(4, 5))
    state = keyword_segment_state(collection.id)
    assert state.has_segment and 0 < state.delta <= 8
    if state.delta <= 5:
        assert keyword_segment_refresh(collection.id) is None  # a small delta waits
    _write(connection, collection, random.Random(12), 6, "more")
    assert keyword_segment_refresh(collection.id)["chunks"] == Chunk.objects.filter(collection=collection).count()
    entities_delete(source_connection=connection, entity_ids=[f"e{e}" for e in range(0, 120, 3)])
    assert keyword_segment_state(collection.id).deleted > 0
    assert keyword_segment_refresh(collection.id) is not None  # over a tenth deleted
    settings.AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS = 10**6
    assert keyword_segment_refresh(collection.id) is None
    assert not KeywordSegment.objects.filter(collection_id=collection.id).exists()


def test_packed_arrays_hold_each_posting_once(corpus):
    collection, _ = corpus
    keyword_segment_refresh(collection.id, force=True)
    with db.cursor() as cur:
        cur.execute("SELECT sum(postings), sum(length(ords)) / 4, sum(length(tfs)) / 2, sum(length(dls)) / 2 "
                    "FROM collections_keyword_segment_term WHERE collection_id = %s", [collection.id])
        postings, ords, tfs, dls = cur.fetchone()
        cur.execute("SELECT count(*) FROM collections_keyword_posting WHERE collection_id = %s", [collection.id])
        assert postings == ords == tfs == dls == cur.fetchone()[0]


@pytest.mark.parametrize("k", [1, 10, 108, 5000])
def test_best_first_cut_keeps_the_k_largest(k):
    """The strided-sample cut (taken above 65,536 scores) returns exactly the k largest positive scores."""
    import numpy as np

    rng = np.random.default_rng(k)
    scores = np.where(rng.random(400_000) < 0.6, 0.0, np.round(rng.gamma(2.0, 1.0, 400_000), 3))  # zeros and ties
    best = keyword_segment._best_first(scores, k)
    expected = np.sort(scores[scores > 0])[::-1][:k]
    assert np.array_equal(scores[best], expected)
    assert len(set(best.tolist())) == len(best)
    sparse = np.zeros(400_000)
    sparse[[5, 70_000, 399_999]] = [1.0, 3.0, 2.0]  # fewer positives than k in the sample: every positive
    assert keyword_segment._best_first(sparse, k).tolist() == [70_000, 399_999, 5][:k]


def test_a_segment_moves_the_cut_between_the_filtered_plans():
    """With a segment, scoring a filter's kept chunks one by one wins only while they are few: the
    0.1 % and 5 % filters of bench/scale.py at a million chunks go to the kept chunks and to the
    segment respectively; a 2 % filter goes to the segment, where the row plans would score its chunks."""
    stats = retrieval._KeywordStatistics(collection_id=None, n=1e6, avgdl=80.0, drift=1.0, terms=["a"] * 8,
                                         idf=[1.0] * 8, df=[55_000] * 8)
    cheaper = retrieval._scoring_kept_chunks_is_cheaper
    assert cheaper(stats, 1_000, 0.001, 100, segment=True)
    assert not cheaper(stats, 50_000, 0.05, 100, segment=True)
    assert not cheaper(stats, 20_000, 0.02, 100, segment=True)
    assert cheaper(stats, 20_000, 0.02, 100, segment=False)


def test_a_sync_job_refreshes_the_segment(make_collection, sync_folder, write_files, settings):
    """The end of a sync job refreshes the segment: built once the
    collection is large enough, rebuilt after more than the delta limit was written, and searched."""
    settings.AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS = 3
    settings.AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA = 1
    collection = make_collection()
    files = {f"note{i}.md": f"Note {i} about honey bees and the hive number {i}." for i in range(4)}
    folder = write_files(files)
    connection, _ = sync_folder(collection, folder)
    first = KeywordSegment.objects.get(collection_id=collection.id)
    assert first.chunk_count == Chunk.objects.filter(collection=collection).count() >= 4
    (folder / "extra1.md").write_text("A late note on queen bees.")
    (folder / "extra2.md").write_text("Another late note on drones.")
    sync_folder(collection, folder, connection=connection)
    second = KeywordSegment.objects.get(collection_id=collection.id)
    assert second.max_ord > first.max_ord and second.chunk_count == Chunk.objects.filter(collection=collection).count()
    q = RetrievalQuery(collection_id=collection.id, dims=collection.vector_size, text="queen bees", strategy="keyword")
    _agree(keyword_leg(q, 10), keyword_leg_exhaustive(q, 10), 10)
