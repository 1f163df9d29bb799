"""The keyword leg's fast plans give exactly the exhaustive BM25 ranking.

`search.retrieval.keyword_leg` runs MaxScore seeded from impact-ordered postings, or scores only
the chunks a selective filter keeps; `keyword_leg_exhaustive` scores every
posting of every query term. Over a corpus with Zipf-distributed terms and varied chunk lengths,
for many queries and depths (small depths force several rounds), unfiltered, filtered and
access-controlled, both return the same chunks with the same scores (up to ties at the cut).
"""
from __future__ import annotations

import random

import pytest

from airweave.collections.services import ChunkRecord, EntityRecord, entities_write
from connectors.services import source_connection_create
from search import retrieval
from search.filters import compile_filter_groups
from search.retrieval import RetrievalQuery, keyword_leg, keyword_leg_exhaustive

WORDS = ("honey bee hive queen wax pollen flower garden soil compost seed harvest bread flour yeast oven "
         "crust dough salt water planet orbit moon star comet telescope tyre wheel bicycle road tax invoice "
         "ledger audit budget river bridge stone castle tower knight dragon melody guitar violin rhythm").split()


def _text(rng: random.Random, words: int) -> str:
    # Zipf-like: word i is drawn with weight 1 / (i + 1), so df ranges from most chunks to a few.
    return " ".join(rng.choices(WORDS, weights=[1 / (i + 1) for i in range(len(WORDS))], k=words)) + "."


def _write(connection, collection, rng, entities: int, prefix: str, lengths=(4, 60)) -> None:
    unit = [1.0] + [0.0] * (collection.vector_size - 1)
    records = [EntityRecord(entity_id=f"{prefix}{e}", entity_type="Rare" if e % 25 == 0 else "Common" if e % 2 else "Other",
                            name=f"{prefix}{e}", content_hash=f"{prefix}{e}",
                            chunks=[ChunkRecord(text=_text(rng, rng.randint(*lengths)), embedding=unit)
                                    for _ in range(rng.randint(1, 8))],
                            access_viewers=["group:g1"] if e % 3 == 0 else [], access_is_public=e % 3 != 0)
               for e in range(entities)]
    entities_write(source_connection=connection, sync_id=connection.sync.id, sync_job_id=None, records=records)


@pytest.fixture
def corpus(make_collection, write_files):
    collection = make_collection()
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(write_files({"x.md": "x"}))},
                                          sync_immediately=False, for_api=False)
    _write(connection, collection, random.Random(7), 120, "e")
    return collection, connection


def _agree(fast, exact, depth):
    """Same scores in order; the same chunks above the last score (ties at the cut may differ)."""
    assert [round(h.score, 9) for h in fast] == [round(h.score, 9) for h in exact]
    if exact:
        cut = exact[-1].score - 1e-9
        assert {h.chunk_id for h in fast if h.score > cut + 2e-9} == {h.chunk_id for h in exact if h.score > cut + 2e-9}
        assert all(h.entity_pk is not None for h in fast)


QUERIES = ("honey bee", "dragon melody violin", "bread flour yeast oven crust", "tax", "the comet and the moon",
           "castle knight tower stone river bridge", "zzz unknownword", "seed seed seed harvest")
FILTERS = {
    "none": None,
    "half": [{"conditions": [{"field": "airweave_system_metadata.entity_type", "operator": "equals", "value": "Common"}]}],
    "rare": [{"conditions": [{"field": "airweave_system_metadata.entity_type", "operator": "equals", "value": "Rare"}]}],
}


def agree_on_every_query(collection, filter_name: str, principals) -> None:
    """keyword_leg gives the exhaustive ranking for every query of QUERIES at depths 1 to 400."""
    groups = FILTERS[filter_name]
    condition = compile_filter_groups(groups) if groups else None
    for text in QUERIES:
        for depth in (1, 3, 10, 50, 400):
            q = RetrievalQuery(collection_id=collection.id, dims=collection.vector_size, text=text, strategy="keyword",
                               principals=principals, **({"condition": condition} if condition else {}))
            _agree(keyword_leg(q, depth), keyword_leg_exhaustive(q, depth), depth)


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
@pytest.mark.parametrize("principals", [None, ["user:a@example.com"], ["user:a@example.com", "group:g1"]])
def test_fast_plans_match_the_exhaustive_ranking(corpus, filter_name, principals):
    agree_on_every_query(corpus[0], filter_name, principals)


def test_each_filtered_plan_matches(corpus, monkeypatch):
    """Both filtered plans, forced in turn, give the exhaustive ranking."""
    collection, _ = corpus
    condition = compile_filter_groups(FILTERS["half"])
    q = RetrievalQuery(collection_id=collection.id, dims=collection.vector_size, text="honey bread planet tax",
                       strategy="keyword", condition=condition)
    exact = keyword_leg_exhaustive(q, 20)
    for kept in (0, 10**9):  # 0: scoring the kept chunks; huge: reading impact lists with the filter
        monkeypatch.setattr(retrieval, "_estimated_rows", lambda *args, kept=kept: kept)
        _agree(keyword_leg(q, 20), exact, 20)


def test_rankings_stay_exact_when_the_mean_length_drifts(corpus):
    """Impacts are written at the collection's first mean length; after much longer chunks arrive
    (today's avgdl several times larger) the bound still holds and the answer stays exact."""
    collection, connection = corpus
    _write(connection, collection, random.Random(8), 60, "long", lengths=(150, 300))
    from airweave.collections.models import KeywordStats

    stats = KeywordStats.objects.get(collection_id=collection.id)
    assert stats.total_length / stats.chunk_count > 1.5 * stats.impact_avgdl
    for text in QUERIES:
        for depth in (1, 10, 100):
            q = RetrievalQuery(collection_id=collection.id, dims=collection.vector_size, text=text, strategy="keyword")
            _agree(keyword_leg(q, depth), keyword_leg_exhaustive(q, depth), depth)


def test_other_bm25_parameters_score_exhaustively(corpus, monkeypatch):
    """A tuning run patches k1 and b: the stored impacts no longer apply and the leg scores every posting."""
    collection, _ = corpus
    q = RetrievalQuery(collection_id=collection.id, dims=collection.vector_size, text="honey bee", strategy="keyword")
    default = keyword_leg(q, 10)
    monkeypatch.setattr(retrieval, "BM25_K1", 1.8)
    tuned = keyword_leg(q, 10)
    assert [h.score for h in tuned] == [h.score for h in keyword_leg_exhaustive(q, 10)]
    assert [round(h.score, 6) for h in tuned] != [round(h.score, 6) for h in default]
