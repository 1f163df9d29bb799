"""The retrieval SQL: vector leg (pgvector HNSW), keyword leg (BM25 in SQL), fusion, collapse.

Both legs read `collections_chunk c` restricted to one collection, the caller's filter and,
for user principals, the access condition. Fusion is Reciprocal Rank Fusion
(score = Σ 1 / (k + rank), Cormack et al., SIGIR 2009). Pagination happens after fusion.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, transaction

from airweave.collections.keyword_index import TEXT_SEARCH_CONFIG
from airweave.collections.models import Collection
from airweave.collections.vector_indexes import vector_cast
from airweave.db_router import replica_aliases, search_alias, search_connection, search_reads
from search.filters import SQLCondition

# BM25 parameters (Robertson & Zaragoza 2009; Lucene's idf variant, as in bm25s). Chosen on the
# SciFact train split by `bench/beir.py --tune` (grid k1 0.9-1.8 x b 0.5-0.9; best k1 = 1.2, b = 0.5).
BM25_K1 = 1.2
BM25_B = 0.5
# A filtered keyword search looks scored chunks up one by one when it expects to need at most
# max(MIN, SHARE x the collection's chunks) lookups, and joins them with the filtered chunks
# otherwise (measured with bench/keyword_scale.py at 120k chunks: see docs/search.md).
KEYWORD_WALK_MIN = 2000
KEYWORD_WALK_SHARE = 0.1
STRATEGIES = ("hybrid", "semantic", "keyword")


@dataclass
class RetrievalQuery:
    """What to retrieve. `query_vector` is required for semantic and hybrid (list of floats)."""

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
    legs = []
    if q.strategy in ("hybrid", "semantic"):
        legs.append(_fetch(vector_leg, q))
    if q.strategy in ("hybrid", "keyword"):
        legs.append(_fetch(keyword_leg, q))
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


def vector_leg(q: RetrievalQuery, depth: int) -> list[Hit]:
    """Nearest chunks by cosine similarity (score = 1 - cosine distance).

    Small collections are scanned exactly; larger ones go through the per-dimension partial
    HNSW index with pgvector's iterative scan, so a selective filter cannot starve the top-k.
    """
    where, params = _where(q)
    vector = "[" + ",".join(f"{float(x):.7g}" for x in q.query_vector) + "]"
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
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(max(40, min(depth, 1000)))])
        cur.execute(sql, [vector, q.dims, *params, vector, depth])
        return [Hit(r[0], r[1], float(r[2])) for r in cur.fetchall()]


def keyword_leg(q: RetrievalQuery, depth: int) -> list[Hit]:
    """BM25 over the keyword postings: Σ idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)).

    idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)) (Lucene's variant, as in bm25s), with N and
    avgdl from collections_keyword_stats and df counted over the collection's postings of the
    query terms in the same single index-only pass that scores them; filters narrow the
    candidates, never the statistics.
    """
    where, params = _where(q)
    filtered = q.condition.sql != "TRUE" or q.principals is not None
    if filtered and _walk_pays(q, where, params, depth):
        # Walk the scored chunks best first, looking each up by primary key, until `depth` pass
        # the filter (OFFSET 0 keeps the lookup a per-row nested loop that LIMIT stops early).
        tail = f"""SELECT s.chunk_id, c.entity_id, s.score
                   FROM (SELECT chunk_id, score FROM scored ORDER BY score DESC) s
                   CROSS JOIN LATERAL (SELECT c.entity_id FROM collections_chunk c
                                       WHERE c.id = s.chunk_id AND {where} OFFSET 0) c
                   LIMIT %s"""
    elif filtered:  # a selective filter: one hash join of the scored chunks with the filtered ones
        tail = f"""SELECT s.chunk_id, c.entity_id, s.score FROM scored s JOIN collections_chunk c ON c.id = s.chunk_id
                   WHERE {where} ORDER BY s.score DESC LIMIT %s"""
    else:
        tail = "SELECT chunk_id, NULL, score FROM scored ORDER BY score DESC LIMIT %s"
    tail_args = [*(params if filtered else []), depth]
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
    args = [q.text, q.collection_id, q.collection_id, k1, k1, b, b, *tail_args]
    with transaction.atomic(using=search_alias()), search_connection().cursor() as cur:
        # Common terms put tens of thousands of postings through the df window's sort: keep it in memory.
        cur.execute("SET LOCAL work_mem = '64MB'")
        cur.execute(sql, args)
        rows = cur.fetchall()
        if not rows:
            return []
        if filtered:
            return [Hit(r[0], r[1], float(r[2])) for r in rows]
        cur.execute("SELECT id, entity_id FROM collections_chunk WHERE id = ANY(%s)", [[r[0] for r in rows]])
        entity_of = dict(cur.fetchall())
    return [Hit(r[0], entity_of[r[0]], float(r[2])) for r in rows if r[0] in entity_of]


def _walk_pays(q: RetrievalQuery, where: str, params: list, depth: int) -> bool:
    """True when looking scored chunks up one by one should find `depth` filtered hits sooner
    than a join reading all the collection's chunk rows: PostgreSQL's own estimate of the filter's
    selectivity s says about depth / s lookups are needed."""
    total = chunk_count(q.collection_id)
    with search_connection().cursor() as cur:
        cur.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM collections_chunk c WHERE {where}", params)
        plan = cur.fetchone()[0]
    estimated = (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"]
    selectivity = min(1.0, max(estimated, 1) / max(total, 1))
    return depth / selectivity <= max(KEYWORD_WALK_MIN, total * KEYWORD_WALK_SHARE)


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
