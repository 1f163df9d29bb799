"""The retrieval SQL: vector leg (pgvector HNSW), keyword leg (BM25 in SQL), fusion, collapse.

Both legs read `collections_chunk c` restricted to one collection, the caller's filter and,
for user principals, the access condition. Fusion is Reciprocal Rank Fusion
(score = Σ 1 / (k + rank), Cormack et al., SIGIR 2009). Pagination happens after fusion.
"""
from __future__ import annotations

import json
import math
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, transaction

from airweave.collections import keyword_index
from airweave.collections.keyword_index import TEXT_SEARCH_CONFIG
from airweave.collections.models import Collection
from airweave.collections.vector_indexes import vector_cast
from airweave.db_router import replica_aliases, search_alias, search_connection, search_reads
from search import keyword_segment
from search.filters import SQLCondition

# BM25 parameters: the ones the postings' impacts were written with (keyword_index); bench/beir.py
# --tune patches these two, and the keyword leg then scores exhaustively.
BM25_K1 = keyword_index.BM25_K1
BM25_B = keyword_index.BM25_B
STRATEGIES = ("hybrid", "semantic", "keyword")


@dataclass
class RetrievalQuery:
    """What to retrieve. `query_vector` is required for semantic and hybrid: a list of floats, or a
    concurrent.futures.Future of one (the instant tier embeds a hybrid query while the keyword leg
    runs; the vector leg waits for it)."""

    collection_id: object
    dims: int
    text: str
    query_vector: object = None
    strategy: str = "hybrid"
    condition: SQLCondition = field(default_factory=SQLCondition.true)
    principals: list[str] | None = None  # None: no access filter (org-wide caller)
    limit: int = 100
    offset: int = 0
    collapse: bool = False
    rrf_k: int = 60


@dataclass
class Hit:
    """One ranked chunk: its row id, entity row id and score."""

    chunk_id: object
    entity_pk: object
    score: float
    ranks: dict | None = None  # hybrid: {"vector": rank or None, "keyword": rank or None} (1-based)


@contextmanager
def read_snapshot(collection_id=None):
    """Run the enclosed queries in one REPEATABLE READ, READ ONLY transaction, on a replica when
    one is configured and has replayed the collection's last sync (airweave/db_router.py), else
    on the primary. Every query of the retrieval reads `search_connection()`, and ORM reads
    inside (the hydration, `search.results.load_chunks`) are routed to the same alias.

    A search reads the chunks several times (each leg, the keyword leg's entity lookup, the
    hydration of the page); in READ COMMITTED each statement sees the commits made before it, so
    an entity re-indexed between two of them (its old chunks deleted, new ones written in one
    transaction) would vanish from the answer. Inside one snapshot every statement sees the
    index as it was when the first one ran. Inside an outer transaction (a test's, or a caller's
    own) its isolation is kept and nothing is changed.
    """
    with search_reads(_written_lsn(collection_id)):
        connection = search_connection()
        if connection.in_atomic_block:
            yield
            return
        with transaction.atomic(using=connection.alias):
            with search_connection().cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield


def _written_lsn(collection_id) -> str:
    """The collection's `written_lsn` read on the primary; "" without replicas (no query then)."""
    if collection_id is None or not replica_aliases():
        return ""
    return Collection.objects.using(DEFAULT_DB_ALIAS).filter(pk=collection_id).values_list(
        "written_lsn", flat=True).first() or ""


def retrieve(q: RetrievalQuery) -> list[Hit]:
    """Rank chunks for `q` and return the page [offset, offset + limit). Raises ValueError on a bad strategy."""
    if q.strategy not in STRATEGIES:
        raise ValueError(f"unknown retrieval_strategy '{q.strategy}'")
    # The keyword leg first: a hybrid query's vector may still be computing (a Future, see RetrievalQuery).
    keyword = _fetch(keyword_leg, q) if q.strategy in ("hybrid", "keyword") else None
    vector = _fetch(vector_leg, q) if q.strategy in ("hybrid", "semantic") else None
    legs = [leg for leg in (vector, keyword) if leg is not None]
    ranked = legs[0] if len(legs) == 1 else rrf_fuse(legs, k=q.rrf_k, by_entity=q.collapse)
    if len(legs) == 2:
        _annotate_ranks(ranked, dict(zip(("vector", "keyword"), legs)), by_entity=q.collapse)
    return ranked[q.offset:q.offset + q.limit]


def _annotate_ranks(ranked: list[Hit], legs: dict[str, list[Hit]], by_entity: bool) -> None:
    """Set each fused hit's `ranks`: the 1-based rank each leg gave it (None when that leg missed it)."""
    positions = {}
    for name, leg in legs.items():
        seen = {}
        for rank, hit in enumerate(leg, start=1):
            seen.setdefault(hit.entity_pk if by_entity else hit.chunk_id, rank)
        positions[name] = seen
    for hit in ranked:
        key = hit.entity_pk if by_entity else hit.chunk_id
        hit.ranks = {name: seen.get(key) for name, seen in positions.items()}


def candidate_depth(q: RetrievalQuery) -> int:
    """How many chunks each leg fetches first: enough for the page after fusion (and collapse)."""
    depth = max(100, 2 * (q.offset + q.limit))
    if q.collapse:
        depth *= 3
    return min(depth, MAX_DEPTH)


MAX_DEPTH = 20_000


def _fetch(leg, q: RetrievalQuery) -> list[Hit]:
    """Run one leg; when collapsing, fetch deeper until the page is full or the leg runs dry.

    Entities with many matching chunks could otherwise fill the whole candidate list and hide
    every other entity.
    """
    depth = candidate_depth(q)
    while True:
        hits = leg(q, depth)
        if not q.collapse:
            return hits
        collapsed = collapse(hits)
        if len(collapsed) >= q.offset + q.limit or len(hits) < depth or depth >= MAX_DEPTH:
            return collapsed
        depth = min(depth * 4, MAX_DEPTH)


def access_condition(principals: list[str] | None) -> SQLCondition:
    """The access rule over chunks `c`: public, or sharing a principal with the caller (GIN-indexed).

    None (an organization-wide caller) gives TRUE; [] gives public chunks only.
    """
    if principals is None:
        return SQLCondition.true()
    return SQLCondition("(c.access_is_public OR c.access_viewers && %s::varchar[])", (list(principals),))


def _where(q: RetrievalQuery) -> tuple[str, list]:
    condition = q.condition.and_(access_condition(q.principals))
    return "c.collection_id = %s AND " + condition.sql, [q.collection_id, *condition.params]


def chunk_count(collection_id) -> int:
    """Chunks in a collection, cached for 60 s (chooses exact scan vs HNSW, feeds BM25's N)."""
    key = f"chunk-count:{collection_id}"
    value = cache.get(key)
    if value is None:
        with search_connection().cursor() as cur:
            cur.execute("SELECT count(*) FROM collections_chunk WHERE collection_id = %s", [collection_id])
            value = cur.fetchone()[0]
        cache.set(key, value, 60)
    return value


def hnsw_ef_search(depth: int) -> int:
    """pgvector's hnsw.ef_search for a leg of `depth`: max(AIRWEAVE_HNSW_EF_SEARCH, depth), at most 1,000
    (pgvector's own maximum)."""
    return min(max(settings.AIRWEAVE_HNSW_EF_SEARCH, depth), 1000)


def vector_leg(q: RetrievalQuery, depth: int) -> list[Hit]:
    """Nearest chunks by cosine similarity (score = 1 - cosine distance).

    Small collections are scanned exactly; larger ones go through the per-dimension partial
    HNSW index with pgvector's iterative scan, so a selective filter cannot starve the top-k.
    """
    where, params = _where(q)
    query_vector = q.query_vector.result() if isinstance(q.query_vector, Future) else q.query_vector
    vector = "[" + ",".join(f"{float(x):.7g}" for x in query_vector) + "]"
    cast = vector_cast(q.dims)
    exact = chunk_count(q.collection_id) <= settings.AIRWEAVE_EXACT_SCAN_MAX_CHUNKS
    distance = "(c.embedding <=> %s::vector)" if exact else f"(c.embedding::{cast} <=> %s::{cast})"
    sql = f"""
        SELECT id, entity_id, 1 - d AS score FROM (
            SELECT c.id, c.entity_id, {distance} AS d
            FROM collections_chunk c
            WHERE c.dims = %s AND {where}
            ORDER BY {distance}
            LIMIT %s
        ) ranked ORDER BY d
    """
    with transaction.atomic(using=search_alias()), search_connection().cursor() as cur:
        if not exact:
            cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(hnsw_ef_search(depth))])
        cur.execute(sql, [vector, q.dims, *params, vector, depth])
        return [Hit(r[0], r[1], float(r[2])) for r in cur.fetchall()]


def keyword_leg(q: RetrievalQuery, depth: int) -> list[Hit]:
    """The `depth` best chunks by BM25 (best first): Σ idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)).

    idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)) (Lucene's variant, as in bm25s), with N and
    avgdl from collections_keyword_stats and df from collections_keyword_term; filters narrow the
    candidates, never the statistics. The answer is exact (the same chunks and scores as
    `keyword_leg_exhaustive`); docs/search.md, "The keyword leg", says how it is found fast:
    for a filter that keeps few chunks, scoring just those chunks; for a collection with a keyword
    segment (and a delta within AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA), the segment's packed postings
    scored with numpy plus the delta's rows (search/keyword_segment.py); else MaxScore seeded from
    impact-ordered postings.
    With BM25 parameters other than the ones the postings were written with (a tuning run), it
    falls back to the exhaustive plan.
    """
    if (BM25_K1, BM25_B) != (keyword_index.BM25_K1, keyword_index.BM25_B):
        return keyword_leg_exhaustive(q, depth)
    where, params = _where(q)
    filtered = q.condition.sql != "TRUE" or q.principals is not None
    with transaction.atomic(using=search_alias()), search_connection().cursor() as cur:
        stats = _keyword_statistics(cur, q)
        if stats is None:
            return []
        share = 1.0
        delta = None if stats.segment_max_ord is None else _segment_delta(cur, q.collection_id, stats.segment_max_ord)
        segment = delta is not None and delta <= settings.AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA
        if filtered:
            kept = _estimated_rows(cur, where, params)
            share = min(1.0, max(kept, 1) / stats.n)
            if _scoring_kept_chunks_is_cheaper(stats, kept, share, depth, segment):
                return _score_filtered_chunks(cur, stats, where, params, depth)
        if segment:
            return _segment_top(cur, stats, depth, (where, params) if filtered else None, share, delta)
        return _threshold_top(cur, stats, depth, (where, params) if filtered else None)


# Rough unit costs, derived from timings of bench/scale.py's collections on 2 cores (100k and 1M
# chunks; docs/benchmarks.md): scoring a kept chunk from its own postings ~1.2 µs per query term
# (5,000 chunks of 8 terms in 54 ms); reading a segment ~30 ns per posting (fetch, weights and sum);
# checking a candidate against the filter ~20 µs (a primary-key probe of a wide chunk row, mostly
# outside shared buffers; 20-37 µs in EXPLAIN ANALYZE).
_KEPT_CHUNK_TERM_SECONDS = 1.2e-6
_SEGMENT_POSTING_SECONDS = 30e-9
_CANDIDATE_LOOKUP_SECONDS = 20e-6


def _scoring_kept_chunks_is_cheaper(stats: "_KeywordStatistics", kept: float, share: float, depth: int,
                                    segment: bool) -> bool:
    """Whether a filter keeps so few chunks (PostgreSQL's estimate `kept`, `share` of the collection)
    that scoring each from its own postings beats reading the terms' lists: the segment's arrays
    and its first batch of candidate look-ups with one, or about depth / share chunk look-ups per
    term without."""
    if not segment:
        return kept <= len(stats.terms) * depth / share
    scoring_kept = kept * len(stats.terms) * _KEPT_CHUNK_TERM_SECONDS
    reading_segment = (sum(stats.df) * _SEGMENT_POSTING_SECONDS
                       + keyword_segment.first_batch_size(depth, share) * _CANDIDATE_LOOKUP_SECONDS)
    return scoring_kept <= reading_segment


def _segment_delta(cur, collection_id, max_ord: int) -> int:
    """Chunks written since the collection's keyword segment was built, counted up to the limit + 1."""
    cur.execute("SELECT count(*) FROM (SELECT 1 FROM collections_keyword_doc WHERE collection_id = %s AND ord > %s "
                "LIMIT %s) d", [collection_id, max_ord, settings.AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA + 1])
    return cur.fetchone()[0]


def _segment_top(cur, stats: "_KeywordStatistics", depth: int, filtered: tuple[str, list] | None,
                 share: float, delta: int) -> list[Hit]:
    """The exact top `depth`: the segment's chunks scored from their packed postings
    (search/keyword_segment.py), merged with the `delta` chunks written since its build, scored
    from their posting rows."""
    scores = keyword_segment.segment_scores(cur, stats.collection_id, stats.terms, stats.idf, stats.avgdl,
                                            BM25_K1, BM25_B)
    where, params = filtered or (None, [])
    hits = [Hit(*row) for row in keyword_segment.segment_top(cur, stats.collection_id, scores, depth, where, params,
                                                             share)]
    if delta:
        written_since = ("c.id IN (SELECT d.chunk_id FROM collections_keyword_doc d "
                         "WHERE d.collection_id = %s AND d.ord > %s)")
        hits += _score_filtered_chunks(cur, stats, f"{where or 'TRUE'} AND {written_since}",
                                       [*params, stats.collection_id, stats.segment_max_ord], depth)
    hits.sort(key=lambda hit: -hit.score)
    return hits[:depth]


@dataclass
class _KeywordStatistics:
    """A query's BM25 inputs in one collection: its terms (with df > 0) and their idf."""

    collection_id: object
    n: float  # chunks
    avgdl: float  # mean chunk length in terms, now
    drift: float  # max(1, avgdl / impact_avgdl): stored impacts times this bound today's weights
    terms: list[str]
    idf: list[float]
    df: list[int] = field(default_factory=list)  # chunks holding each term
    segment_max_ord: int | None = None  # the collection's keyword segment holds ordinals <= this; None: none

    @property
    def weight_args(self) -> list:
        """The five parameters of `_weight_sql`: k1, k1, b, b, today's avgdl."""
        return [BM25_K1, BM25_K1, BM25_B, BM25_B, self.avgdl]


def _keyword_statistics(cur, q: RetrievalQuery) -> _KeywordStatistics | None:
    """N, avgdl and the query's terms with their df; None when the query has no indexed term."""
    cur.execute(f"""
        SELECT s.chunk_count, s.total_length, s.impact_avgdl, t.term, t.df, g.max_ord
        FROM collections_keyword_stats s
        JOIN collections_keyword_term t ON t.collection_id = s.collection_id AND t.df > 0
             AND t.term = ANY(ARRAY(SELECT lexeme FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', %s))))
        LEFT JOIN collections_keyword_segment g ON g.collection_id = s.collection_id
        WHERE s.collection_id = %s ORDER BY t.term""", [q.text, q.collection_id])
    rows = cur.fetchall()
    if not rows:
        return None
    n = float(max(rows[0][0], 1))
    avgdl = max(rows[0][1] / n, 1.0)
    reference = rows[0][2] or avgdl
    return _KeywordStatistics(
        collection_id=q.collection_id, n=n, avgdl=avgdl, drift=max(1.0, avgdl / reference),
        terms=[r[3] for r in rows], idf=[math.log(1 + (n - r[4] + 0.5) / (r[4] + 0.5)) for r in rows],
        df=[r[4] for r in rows], segment_max_ord=rows[0][5])


def _estimated_rows(cur, where: str, params: list) -> float:
    """PostgreSQL's estimate of the chunks that pass `where` (planning only, nothing is read)."""
    cur.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM collections_chunk c WHERE {where}", params)
    plan = cur.fetchone()[0]
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"]


# Relative slack on the ceilings: impacts are stored as float4 (about 6e-8 relative error).
_IMPACT_SLACK = 1 + 1e-6


def _weight_sql(alias: str) -> str:
    """SQL of the saturated, length-normalised term frequency of postings `alias` (five %s: k1, k1, b, b, avgdl)."""
    return (f"{alias}.tf * (%s::float8 + 1) / ({alias}.tf + %s::float8 * (1 - %s::float8 + %s::float8 * {alias}.dl"
            f" / %s::float8))")


# The idf of posting p's term, looked up in two arrays (two %s: idf values, terms): no join, so
# PostgreSQL estimates the postings from its statistics of `term` and hashes the sums.
_IDF_OF_TERM = "(%s::float8[])[array_position(%s::text[], p.term)]"


def _threshold_top(cur, stats: _KeywordStatistics, depth: int, filtered: tuple[str, list] | None) -> list[Hit]:
    """The exact top `depth` by MaxScore (Turtle and Flood, "Query evaluation: strategies and
    optimizations", Information Processing & Management 31(6), 1995) over impact-ordered postings.

    1. The `depth` best postings of each term (with `filtered`, of chunks that pass it) give each
       term's ceiling (its highest weight, times drift) and θ, the depth-th best sum over the
       chunks seen there: a lower bound of the true depth-th score.
    2. The terms whose ceilings sum below θ (the common, low-idf ones: optional) cannot lift a chunk
       into the top alone, so every chunk of the top holds one of the others (essential). Only the
       essential terms' postings are read and summed; a chunk is kept when that sum plus the
       optional ceilings reaches θ, and θ rises to the depth-th of these sums (each a lower bound
       of its chunk's score); only chunks still within the optional ceilings of θ get their
       optional terms looked up by (chunk, term).
    """
    ceilings, theta = _ceilings_and_floor(cur, stats, depth, filtered)
    optional, headroom = [], 0.0
    for t in sorted(range(len(stats.terms)), key=lambda t: ceilings[t]):
        if headroom + ceilings[t] >= theta:
            break
        optional.append(t)
        headroom += ceilings[t]
    essential = [t for t in range(len(stats.terms)) if t not in optional]
    weight = stats.weight_args
    terms = [stats.terms[t] for t in essential]
    idf = [stats.idf[t] for t in essential]
    optional_terms = [stats.terms[t] for t in optional]
    optional_idf = [stats.idf[t] for t in optional]
    essential_sums = f"""
        SELECT p.chunk_id, sum({_IDF_OF_TERM} * {_weight_sql('p')}) AS part
        FROM collections_keyword_posting p
        WHERE p.collection_id = %s AND p.term = ANY(%s)
        GROUP BY p.chunk_id
        HAVING sum({_IDF_OF_TERM} * {_weight_sql('p')}) >= %s"""
    essential_args = [idf, terms, *weight, stats.collection_id, terms, idf, terms, *weight, theta - headroom]
    if filtered is not None:
        return _max_score_filtered(cur, stats, depth, headroom, filtered, essential_sums, essential_args,
                                   optional_terms, optional_idf)
    rest, rest_args = "0", []
    if optional:
        rest = f"""coalesce((SELECT sum({_IDF_OF_TERM} * {_weight_sql('p')}) FROM collections_keyword_posting p
                             WHERE p.chunk_id = k.chunk_id AND p.term = ANY(%s)), 0)"""
        rest_args = [optional_idf, optional_terms, *weight, optional_terms]
    cur.execute(f"""
        WITH kept AS MATERIALIZED ({essential_sums}
        ), floor AS (  -- each part is a lower bound of its chunk's score: so is the depth-th of theirs
            SELECT part FROM kept ORDER BY part DESC OFFSET %s LIMIT 1
        ), scored AS (
            SELECT k.chunk_id, k.part + {rest} AS score FROM kept k
            WHERE k.part + %s >= coalesce((SELECT part FROM floor), 0)
        )
        SELECT s.chunk_id, ch.entity_id, s.score FROM (SELECT * FROM scored ORDER BY score DESC LIMIT %s) s
        JOIN collections_chunk ch ON ch.id = s.chunk_id ORDER BY s.score DESC""",
                [*essential_args, depth - 1, *rest_args, headroom, depth])
    return [Hit(r[0], r[1], float(r[2])) for r in cur.fetchall()]


def _max_score_filtered(cur, stats: _KeywordStatistics, depth: int, headroom: float, filtered: tuple[str, list],
                        essential_sums: str, essential_args: list, optional_terms: list, optional_idf: list) -> list[Hit]:
    """MaxScore's second step under a filter: the chunks of the essential sums are checked against
    the filter best sum first, in batches, and those that pass get their optional terms added, until
    no chunk left can beat the depth-th exact score even with every optional term. Checking every
    kept chunk would cost one primary-key look-up each."""
    where, where_args = filtered
    scores: dict = {}  # exact scores of the chunks that passed, checked so far
    entity: dict = {}
    # A server-side cursor: the sums are computed once, and only the rows the walk reaches cross
    # to Python (tens of thousands of UUIDs would cost more to convert than to check).
    with search_connection().connection.cursor(name="keyword_essential_sums") as sums:
        sums.execute(f"SELECT chunk_id, part FROM ({essential_sums}) e ORDER BY part DESC", essential_args)
        batch = 2 * depth
        while step := sums.fetchmany(batch):
            # Later chunks score at most their essential sum plus every optional ceiling.
            if len(scores) >= depth and step[0][1] + headroom < _kth(scores.values(), depth):
                break
            cur.execute(f"SELECT c.id, c.entity_id FROM collections_chunk c WHERE c.id = ANY(%s) AND {where}",
                        [[chunk_id for chunk_id, _ in step], *where_args])
            passed = dict(cur.fetchall())
            entity.update(passed)
            fresh = {chunk_id: part for chunk_id, part in step if chunk_id in passed}
            if optional_terms and fresh:
                cur.execute(f"""SELECT p.chunk_id, sum({_IDF_OF_TERM} * {_weight_sql('p')})
                                FROM collections_keyword_posting p
                                WHERE p.chunk_id = ANY(%s) AND p.term = ANY(%s) GROUP BY p.chunk_id""",
                            [optional_idf, optional_terms, *stats.weight_args, list(fresh), optional_terms])
                for chunk_id, extra in cur.fetchall():
                    fresh[chunk_id] += float(extra)
            scores.update(fresh)
            batch *= 2
    ranked = sorted(scores.items(), key=lambda item: -item[1])[:depth]
    return [Hit(chunk_id, entity[chunk_id], score) for chunk_id, score in ranked]


def _kth(values, k: int) -> float:
    """The k-th largest of `values` (there must be at least k)."""
    return sorted(values, reverse=True)[k - 1]


def _ceilings_and_floor(cur, stats: _KeywordStatistics, depth: int,
                        filtered: tuple[str, list] | None) -> tuple[list[float], float]:
    """(each term's ceiling: drift · idf · its highest impact, 0 without postings; θ: the depth-th
    largest sum of weights over the chunks among the `depth` best postings of some term, 0 when
    fewer chunks are seen)."""
    join, where_args = "", []
    if filtered is not None:
        where, where_args = filtered
        join = f"JOIN collections_chunk c ON c.id = p.chunk_id AND {where}"
    cur.execute(f"""
        WITH top AS MATERIALIZED (
            SELECT q.i, q.idf, x.chunk_id, x.tf, x.dl, x.impact
            FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS q(term, idf, i)
            CROSS JOIN LATERAL (SELECT p.chunk_id, p.tf, p.dl, p.impact FROM collections_keyword_posting p {join}
                                WHERE p.collection_id = %s AND p.term = q.term
                                ORDER BY p.impact DESC LIMIT %s) x
        ), floor AS (
            SELECT sum(t.idf * {_weight_sql('t')}) AS s FROM top t GROUP BY t.chunk_id ORDER BY s DESC OFFSET %s LIMIT 1
        )
        SELECT i, max(impact), (SELECT s FROM floor) FROM top GROUP BY i""",
                [stats.terms, stats.idf, *where_args, stats.collection_id, depth, *stats.weight_args, depth - 1])
    ceilings = [0.0] * len(stats.terms)
    theta = 0.0
    for i, impact, floor in cur.fetchall():
        ceilings[i - 1] = stats.drift * stats.idf[i - 1] * float(impact) * _IMPACT_SLACK
        theta = float(floor or 0.0)
    return ceilings, theta


def _score_filtered_chunks(cur, stats: _KeywordStatistics, where: str, params: list, depth: int) -> list[Hit]:
    """The top `depth` of the chunks that pass `where`, each scored from its own postings of the
    query terms (for filters that keep few chunks: no term's whole list is read)."""
    cur.execute(f"""
        SELECT c.id, c.entity_id, s.score FROM collections_chunk c
        CROSS JOIN LATERAL (
            SELECT sum({_IDF_OF_TERM} * {_weight_sql('p')}) AS score FROM collections_keyword_posting p
            WHERE p.chunk_id = c.id AND p.term = ANY(%s)
        ) s
        WHERE {where} AND s.score IS NOT NULL
        ORDER BY s.score DESC LIMIT %s""",
                [stats.idf, stats.terms, *stats.weight_args, stats.terms, *params, depth])
    return [Hit(r[0], r[1], float(r[2])) for r in cur.fetchall()]


def keyword_leg_exhaustive(q: RetrievalQuery, depth: int) -> list[Hit]:
    """`keyword_leg` by scoring every posting of every query term (df counted in the same pass):
    the reference the fast plans are tested against, and the plan for BM25 parameters other than
    the stored impacts' (bench/beir.py --tune)."""
    where, params = _where(q)
    filtered = q.condition.sql != "TRUE" or q.principals is not None
    if filtered:
        tail = f"""SELECT s.chunk_id, c.entity_id, s.score FROM scored s JOIN collections_chunk c ON c.id = s.chunk_id
                   WHERE {where} ORDER BY s.score DESC LIMIT %s"""
    else:
        tail = "SELECT s.chunk_id, c.entity_id, s.score FROM scored s JOIN collections_chunk c ON c.id = s.chunk_id " \
               "ORDER BY s.score DESC LIMIT %s"
    sql = f"""
        WITH terms AS (
            SELECT array_agg(DISTINCT t.lexeme) AS list FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', %s)) AS t
        ), stats AS (
            SELECT greatest(chunk_count, 1)::float8 AS n,
                   greatest(total_length::float8 / greatest(chunk_count, 1), 1) AS avgdl
            FROM collections_keyword_stats WHERE collection_id = %s
        ), p AS (
            SELECT p.chunk_id, p.tf::float8 AS tf, p.dl::float8 AS dl, count(*) OVER (PARTITION BY p.term)::float8 AS df
            FROM collections_keyword_posting p, terms
            WHERE p.collection_id = %s AND p.term = ANY(terms.list)
        ), scored AS (
            SELECT p.chunk_id,
                   sum(ln(1 + (st.n - p.df + 0.5) / (p.df + 0.5)) * p.tf * (%s::float8 + 1)
                       / (p.tf + %s::float8 * (1 - %s::float8 + %s::float8 * p.dl / st.avgdl))) AS score
            FROM p CROSS JOIN stats st
            GROUP BY p.chunk_id
        )
        {tail}
    """
    k1, b = BM25_K1, BM25_B
    args = [q.text, q.collection_id, q.collection_id, k1, k1, b, b, *(params if filtered else []), depth]
    with transaction.atomic(using=search_alias()), search_connection().cursor() as cur:
        # Common terms put tens of thousands of postings through the df window's sort: keep it in memory.
        cur.execute("SET LOCAL work_mem = '64MB'")
        cur.execute(sql, args)
        return [Hit(r[0], r[1], float(r[2])) for r in cur.fetchall()]


def collapse(hits: list[Hit]) -> list[Hit]:
    """Keep the best-ranked chunk of each entity, in order."""
    seen, out = set(), []
    for hit in hits:
        if hit.entity_pk not in seen:
            seen.add(hit.entity_pk)
            out.append(hit)
    return out


def rrf_fuse(legs: list[list[Hit]], k: int = 60, by_entity: bool = False) -> list[Hit]:
    """Reciprocal Rank Fusion of ranked lists (ranks start at 1). Ties keep first-seen order.

    With `by_entity`, hits of one entity are fused as one item, shown by its best-ranked chunk.
    """
    scores: dict[object, float] = {}
    best: dict[object, tuple[int, Hit]] = {}
    for leg in legs:
        for rank, hit in enumerate(leg, start=1):
            key = hit.entity_pk if by_entity else hit.chunk_id
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            if key not in best or rank < best[key][0]:
                best[key] = (rank, hit)
    ordered = sorted(scores, key=lambda key: -scores[key])
    return [Hit(best[key][1].chunk_id, best[key][1].entity_pk, scores[key], best[key][1].ranks) for key in ordered]
