"""Search at scale, side by side with anchors: latency, recall and index size by collection size.

For each size N of `--sizes` (default 10000,100000; 1000000 works but takes hours on 2 cores)
one run of this script:

* builds a collection of N chunks straight into the tables (COPY, not the sync pipeline).
  Texts: a pool of `--base-chunks` real SciFact chunks (title + the abstract's first sentences,
  at most BASE_MAX_WORDS words); chunk i is a variant of a pool chunk picked at random — its
  sentences shuffled and, when it has three or more, one of them dropped — so term statistics
  stay those of real scientific text. Vectors: the pool chunk's real all-MiniLM-L6-v2 vector
  (embedded once with the local model, cached under .data/bench/) plus Gaussian noise
  (sigma NOISE_SIGMA per coordinate, about cosine 0.93 to the original), re-normalised.
  Ten chunks per entity. Filter metadata (`entity_type`, per entity) so that the three filters
  keep 50 %, 5 % and 0.1 % of the chunks; access per entity so that a user principal sees
  USER_SHARE of them (half public, half through a group). Postings come from the product's own
  writer (keyword_index.index_chunks; the postings' own indexes are dropped during that load and
  re-created after it from their definitions), then the keyword segment as the end of a sync job
  builds it (keyword_segments.keyword_segment_refresh: from 5,000 chunks on); the 384-d HNSW
  index is dropped before the load and rebuilt after it with the product's ensure_vector_indexes
  (pgvector's advice for bulk loads), then VACUUM ANALYZE, as autovacuum would.
* times search.instant.search_instant (as the REST endpoint calls it, query embedding included)
  warm, for the SciFact test queries, limit 10: p50/p95/p99 for keyword, semantic and hybrid,
  unfiltered, with each filter, and for the user principal.
* times anchors on the same texts and vectors: bm25s (over the product's own lexemes, i.e. the
  same PostgreSQL Snowball stemming and stop words, the same k1/b and idf) and tantivy (its
  en_stem analyser, its default BM25) for keyword; the raw pgvector SQL of the HNSW index (same
  ef_search as the product's) and faiss HNSWFlat (M = 16, efConstruction = 64, as the product's
  index) for vectors. Each anchor is timed per query, top 10, one thread, query text analysis
  or embedding excluded; ours/anchor ratios are printed.
* recall@10 of the semantic results against the exact top 10 (numpy over the same vectors,
  same filter), both as the share of the exact ids found and as ann-benchmarks counts it (a result
  within 1e-3 of the exact 10th cosine distance counts: variants of one pool chunk tie within
  noise), and keyword top-10 overlap with exact BM25 (the bm25s run above).
* the build time of each part and sizes on disk (chunk table with TOAST, the 384-d HNSW index,
  the postings table with its indexes; the whole database's, which holds this collection only
  unless others were left in it).

Results: bench/results/scale-<timestamp>.json, scale-latest.json and a PNG (scale.png, p95
latency against collection size). The collection is deleted after each size unless --keep.

    .venv/bin/python bench/scale.py --sizes 10000,100000 [--queries 300] [--dataset $SCIFACT]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
sys.path.insert(0, str(PROJECT_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")

ORGANIZATION = "bench"
DIMS = 384  # all-MiniLM-L6-v2, the collections' default model (airweave/providers/defaults.yml)
BASE_MAX_WORDS = 150  # pool chunks stay under MiniLM's 256-token window
NOISE_SIGMA = 0.02  # noise norm ~ 0.02 * sqrt(384) = 0.39 -> cosine ~ 1 / sqrt(1 + 0.39^2) = 0.93
CHUNKS_PER_ENTITY = 10
LIMIT = 10
WARM_UP_QUERIES = 5
# Filter buckets by entity: the 0.1 % filter keeps "Rare", the 5 % one Rare + "Uncommon", the
# 50 % one Rare + Uncommon + "Common"; the other half is "Other".
FILTERS = {"filter_50": (0.5, ["Rare", "Uncommon", "Common"]), "filter_5": (0.05, ["Rare", "Uncommon"]),
           "filter_0.1": (0.001, ["Rare"])}
USER_SHARE = 0.2
USER_EMAIL = "reader@bench.example"
STRATEGIES = ("keyword", "semantic", "hybrid")
CONDITIONS = ("unfiltered", *FILTERS, "user")
# The anchors use the product's ef_search for a page of 10 (depth 100): search.retrieval.hnsw_ef_search(100).
HNSW_EF_SEARCH = None  # set in run(), once Django is set up


# --- data ------------------------------------------------------------------------------------

def load_scifact(folder: Path) -> tuple[list[str], list[str]]:
    """(documents as "title. text", test query texts in file order) of a BEIR SciFact folder."""
    docs = [f"{d['title']}. {d['text']}" for d in map(json.loads, open(folder / "corpus.jsonl", encoding="utf-8"))]
    test_ids = {line.split("\t")[0] for line in open(folder / "qrels/test.tsv", encoding="utf-8")} - {"query-id"}
    queries = [q["text"] for q in map(json.loads, open(folder / "queries.jsonl", encoding="utf-8"))
               if q["_id"] in test_ids]
    return docs, queries


def sentences(text: str) -> list[str]:
    """Split on sentence-ending punctuation followed by white space."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def pool_chunks(docs: list[str], n: int, seed: int) -> list[list[str]]:
    """`n` real chunks as lists of sentences: the first sentences of `n` random documents, up to BASE_MAX_WORDS words."""
    rng = random.Random(seed)
    pool = []
    for doc in rng.sample(docs, min(n, len(docs))):
        kept, words = [], 0
        for sentence in sentences(doc):
            if kept and words + len(sentence.split()) > BASE_MAX_WORDS:
                break
            kept.append(sentence)
            words += len(sentence.split())
        pool.append(kept)
    return pool


def cached_vectors(texts: list[str], cache_dir: Path, kind: str, embed) -> "np.ndarray":
    """Vectors of `texts` (float32 (n, DIMS), L2-normalised) from `embed`, cached by a hash of the texts."""
    import numpy as np

    digest = hashlib.sha256("\x1e".join(texts).encode()).hexdigest()[:16]
    path = cache_dir / f"scale-{kind}-{len(texts)}-{digest}.npy"
    if path.exists():
        return np.load(path)
    started = time.perf_counter()
    vectors = np.asarray(embed(texts), dtype=np.float32)
    print(f"  embedded {len(texts)} {kind} texts in {time.perf_counter() - started:.0f} s (cached in {path})", flush=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


@dataclass
class Corpus:
    """N synthetic chunks: texts, vectors (float32 (N, DIMS)), and per-entity metadata."""

    texts: list[str]
    vectors: object
    entity_types: list[str]  # one per entity
    entity_visible: list[bool]  # visible to the user principal, one per entity
    entity_public: list[bool]

    @property
    def n(self) -> int:
        """The number of chunks."""
        return len(self.texts)

    def entity_of(self, i: int) -> int:
        """The entity (0-based) that chunk `i` belongs to."""
        return i // CHUNKS_PER_ENTITY


def make_corpus(pool: list[list[str]], pool_vectors, n: int, seed: int) -> Corpus:
    """`n` chunk variants of the pool (see the module docstring) with their metadata."""
    import numpy as np

    rng = random.Random(seed)
    picks = [rng.randrange(len(pool)) for _ in range(n)]
    texts = []
    for j in picks:
        parts = list(pool[j])
        rng.shuffle(parts)
        if len(parts) >= 3:
            parts.pop(rng.randrange(len(parts)))
        texts.append(" ".join(parts))
    noise = np.random.default_rng(seed).normal(0.0, NOISE_SIGMA, size=(n, pool_vectors.shape[1])).astype(np.float32)
    vectors = pool_vectors[picks] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    entities = -(-n // CHUNKS_PER_ENTITY)
    return Corpus(texts, vectors, *entity_metadata(entities, rng))


def entity_metadata(entities: int, rng: random.Random) -> tuple[list[str], list[bool], list[bool]]:
    """Per entity: its filter bucket, whether the user sees it, whether it is public (shares as in FILTERS, USER_SHARE)."""
    order = list(range(entities))
    rng.shuffle(order)
    cut_rare = max(1, round(entities * FILTERS["filter_0.1"][0]))
    cut_uncommon = max(cut_rare + 1, round(entities * FILTERS["filter_5"][0]))
    cut_common = max(cut_uncommon + 1, round(entities * FILTERS["filter_50"][0]))
    types = [""] * entities
    for rank, e in enumerate(order):
        types[e] = ("Rare" if rank < cut_rare else "Uncommon" if rank < cut_uncommon
                    else "Common" if rank < cut_common else "Other")
    rng.shuffle(order)
    visible_cut = round(entities * USER_SHARE)
    visible, public = [False] * entities, [False] * entities
    for rank, e in enumerate(order):
        visible[e] = rank < visible_cut
        public[e] = rank < visible_cut // 2
    return types, visible, public


# --- building the collection -----------------------------------------------------------------

@dataclass
class Built:
    """A collection written by `build`, the chunk row ids in corpus order and the phase timings (s)."""

    collection: object
    chunk_ids: list
    group: str
    timings: dict = field(default_factory=dict)


def build(organization, corpus: Corpus, readable_id: str) -> Built:
    """Write `corpus` as a new collection: entities, chunks (COPY), postings, the HNSW index, VACUUM ANALYZE."""
    from django.db import connection

    from airweave.collections.access import group_principal
    from airweave.collections.models import SourceConnection, Sync
    from airweave.collections.services import collection_create

    collection = collection_create(organization=organization, name=f"Scale benchmark {corpus.n}",
                                   readable_id=readable_id)
    sc = SourceConnection.objects.create(organization_id=organization.id, collection=collection, name="synthetic",
                                         short_name="local_files", config={})
    Sync.objects.create(organization_id=organization.id, source_connection=sc)
    built = Built(collection, [uuid.uuid4() for _ in range(corpus.n)], group_principal(sc.id, "readers"))
    timings = built.timings
    with _timed(timings, "drop_hnsw_s"), connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM collections_chunk")
        if corpus.n >= cur.fetchone()[0]:  # else inserting through the index costs less than rebuilding it
            cur.execute(f"DROP INDEX IF EXISTS chunk_embedding_hnsw_{DIMS}")
    try:
        with _timed(timings, "entities_s"):
            entity_pks = write_entities(collection, sc, corpus, built.group)
        with _timed(timings, "chunks_copy_s"):
            copy_chunks(collection, sc, corpus, built, entity_pks)
        with _timed(timings, "postings_s"):
            write_postings(built.chunk_ids)
        with _timed(timings, "keyword_segment_s"):
            build_segment(collection)
    finally:
        with _timed(timings, "hnsw_build_s"):
            rebuild_hnsw()
    with _timed(timings, "vacuum_analyze_s"), connection.cursor() as cur:
        for table in ("collections_entity", "collections_chunk", "collections_keyword_posting"):
            cur.execute(f"VACUUM ANALYZE {table}")
    return built


def reuse(collection) -> Built:
    """A collection kept by an earlier run (--keep) with the same size, seed and pool, as `build` made it."""
    from airweave.collections.access import group_principal
    from airweave.collections.models import Chunk, KeywordSegment, SourceConnection

    rows = Chunk.objects.filter(collection=collection).values_list("id", "original_entity_id", "chunk_index")
    ordered = sorted(rows, key=lambda r: (int(r[1][1:]), r[2]))
    sc = SourceConnection.objects.get(collection=collection)
    timings = {"reused": True}
    if not KeywordSegment.objects.filter(collection_id=collection.id).exists():  # kept before segments existed
        with _timed(timings, "keyword_segment_s"):
            build_segment(collection)
    return Built(collection, [r[0] for r in ordered], group_principal(sc.id, "readers"), timings)


def build_segment(collection) -> None:
    """The keyword segment, as the end of a sync job builds it (airweave.collections.keyword_segments)."""
    from django.db import connection

    from airweave.collections.keyword_segments import keyword_segment_refresh

    built = keyword_segment_refresh(collection.id)
    print(f"  keyword segment: {built}", flush=True)
    with connection.cursor() as cur:
        cur.execute("VACUUM ANALYZE collections_keyword_doc")


def collection_for(organization, corpus: Corpus, readable_id: str, reuse_kept: bool) -> Built:
    """Reuse the kept collection `readable_id` (with --reuse), else build it anew (a leftover is deleted first)."""
    from airweave.collections.models import Collection

    kept = Collection.objects.filter(organization=organization, readable_id=readable_id).first()
    if kept and reuse_kept:
        return reuse(kept)
    if kept:
        kept.delete()
    return build(organization, corpus, readable_id)


class _timed:
    """Context manager adding the enclosed wall time (s) to `timings[key]`."""

    def __init__(self, timings: dict, key: str):
        self.timings, self.key = timings, key

    def __enter__(self):
        self.started = time.perf_counter()

    def __exit__(self, *exc):
        self.timings[self.key] = round(time.perf_counter() - self.started, 2)


def _access(corpus: Corpus, e: int, group: str) -> tuple[list[str], bool]:
    if corpus.entity_public[e]:
        return [], True
    return ([group] if corpus.entity_visible[e] else ["group:nobody-in-this-bench"]), False


def write_entities(collection, sc, corpus: Corpus, group: str) -> list:
    """One Entity row per CHUNKS_PER_ENTITY chunks (bulk_create, 5,000 a batch); their primary keys in order."""
    from airweave.collections.models import Entity

    pks = []
    for start in range(0, len(corpus.entity_types), 5000):
        rows = []
        for e in range(start, min(start + 5000, len(corpus.entity_types))):
            viewers, public = _access(corpus, e, group)
            rows.append(Entity(organization_id=collection.organization_id, collection=collection, source_connection=sc,
                               entity_id=f"e{e}", entity_type=corpus.entity_types[e], name=f"e{e}", content_hash="x",
                               access_viewers=viewers, access_is_public=public))
        pks += [entity.pk for entity in Entity.objects.bulk_create(rows)]
    return pks


def copy_chunks(collection, sc, corpus: Corpus, built: Built, entity_pks: list) -> None:
    """COPY every chunk row (text, vector as pgvector text, metadata, access) into collections_chunk."""
    from django.db import connection

    columns = ("id, organization_id, collection_id, source_connection_id, entity_id, chunk_index, text, embedding, "
               "dims, keyword_length, original_entity_id, name, entity_type, source_name, breadcrumbs, "
               "access_viewers, access_is_public")
    with connection.cursor() as cur, cur.cursor.copy(f"COPY collections_chunk ({columns}) FROM STDIN") as copy:
        for i, text in enumerate(corpus.texts):
            e = corpus.entity_of(i)
            viewers, public = _access(corpus, e, built.group)
            vector = "[" + ",".join(f"{x:.6f}" for x in corpus.vectors[i].tolist()) + "]"
            copy.write_row((built.chunk_ids[i], collection.organization_id, collection.id, sc.id, entity_pks[e],
                            i % CHUNKS_PER_ENTITY, text, vector, DIMS, 0, f"e{e}", f"e{e}", corpus.entity_types[e],
                            "local_files", "[]", viewers, public))


def write_postings(chunk_ids: list) -> None:
    """The product's keyword index writer over the new chunks, 5,000 a transaction. When the new
    chunks are most of the chunk table, the postings' indexes are dropped first and re-created from
    their own definitions after (a bulk load: one sort per index instead of one index insertion per
    posting); with a larger collection kept beside them, re-indexing its postings would cost more."""
    from django.db import connection, transaction

    from airweave.collections import keyword_index

    with connection.cursor() as cur:
        cur.execute("SELECT reltuples FROM pg_class WHERE relname = 'collections_chunk'")
        chunks_before = max(cur.fetchone()[0], 0) - len(chunk_ids)  # the new chunks are in the table already
        indexes = []
        if len(chunk_ids) >= chunks_before:
            cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'collections_keyword_posting'")
            indexes = cur.fetchall()
        for name, _ in indexes:
            cur.execute(f"DROP INDEX {name}")
    try:
        for start in range(0, len(chunk_ids), 5000):
            with transaction.atomic(), connection.cursor() as cur:
                keyword_index.index_chunks(cur, chunk_ids[start:start + 5000])
    finally:
        with connection.cursor() as cur:
            cur.execute("SET maintenance_work_mem = '2GB'")
            for _, definition in indexes:
                cur.execute(definition)
            cur.execute("RESET maintenance_work_mem")


def rebuild_hnsw() -> None:
    """Re-create the dropped HNSW index with the product's own DDL, with memory enough to build it in RAM."""
    from django.db import connection

    from airweave.collections.vector_indexes import ensure_vector_indexes

    with connection.cursor() as cur:
        cur.execute("SET maintenance_work_mem = '2GB'")
    try:
        ensure_vector_indexes()
    finally:
        with connection.cursor() as cur:
            cur.execute("RESET maintenance_work_mem")


def disk_sizes() -> dict:
    """Bytes on disk: chunk table (with TOAST), the 384-d HNSW index, postings (with indexes); rows in the tables."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"""SELECT pg_table_size('collections_chunk'), pg_relation_size('chunk_embedding_hnsw_{DIMS}'),
                               pg_total_relation_size('collections_keyword_posting'),
                               pg_total_relation_size('collections_keyword_segment_term'),
                               pg_total_relation_size('collections_keyword_doc'),
                               (SELECT count(*) FROM collections_chunk),
                               (SELECT count(*) FROM collections_keyword_posting)""")
        chunk, hnsw, postings, segments, docs, chunks, posting_rows = cur.fetchone()
    return {"chunk_table_bytes": chunk, "hnsw_index_bytes": hnsw, "postings_bytes": postings,
            "keyword_segments_bytes": segments, "keyword_docs_bytes": docs,
            "chunks_in_database": chunks, "postings_in_database": posting_rows}


# --- our search --------------------------------------------------------------------------------

def filter_groups(condition: str) -> list | None:
    """The v2 filter of a condition name (None unfiltered or for the user condition)."""
    if condition not in FILTERS:
        return None
    values = FILTERS[condition][1]
    return [{"conditions": [{"field": "airweave_system_metadata.entity_type", "operator": "in", "value": values}]}]


def user_principals(built: Built) -> list[str]:
    """The principals of a user in the readers group (as access.principals_for_user returns them)."""
    from airweave.collections.access import user_principal

    return [user_principal(USER_EMAIL), built.group]


def run_ours(built: Built, queries: list[str], strategy: str, condition: str) -> tuple[list[float], list[list[int]]]:
    """search_instant for each query after WARM_UP_QUERIES untimed ones: (latencies ms, top-10 corpus indices)."""
    from search.instant import InstantSearchRequest, search_instant

    principals = user_principals(built) if condition == "user" else None
    latencies, ranked = [], []
    for n, text in enumerate([*queries[:WARM_UP_QUERIES], *queries]):
        request = InstantSearchRequest(query=text, retrieval_strategy=strategy, filter=filter_groups(condition),
                                       limit=LIMIT)
        started = time.perf_counter()
        response = search_instant(collection=built.collection, request=request, principals=principals)
        elapsed = (time.perf_counter() - started) * 1000
        if n >= WARM_UP_QUERIES:
            latencies.append(elapsed)
            ranked.append([corpus_index(r) for r in response.results])
    return latencies, ranked


def corpus_index(result: dict) -> int:
    """The corpus position of a v2 result: entity e<k>, chunk index c -> k * CHUNKS_PER_ENTITY + c."""
    meta = result["airweave_system_metadata"]
    return int(meta["original_entity_id"][1:]) * CHUNKS_PER_ENTITY + meta["chunk_index"]


def condition_mask(corpus: Corpus, condition: str):
    """Boolean array over chunks: which ones a condition keeps."""
    import numpy as np

    entity_ok = [True] * len(corpus.entity_types)
    if condition in FILTERS:
        entity_ok = [t in FILTERS[condition][1] for t in corpus.entity_types]
    elif condition == "user":
        entity_ok = corpus.entity_visible
    return np.repeat(np.asarray(entity_ok), CHUNKS_PER_ENTITY)[:corpus.n]


# --- anchors -----------------------------------------------------------------------------------

def lexemes_by_chunk(chunk_ids: list) -> tuple[list[list[int]], dict[str, int]]:
    """Each chunk's terms as the product indexed them, as token ids (each repeated tf times) in corpus
    order, and the vocabulary {lexeme: id}. Read 10,000 chunks at a time, so 1M chunks fit in memory."""
    from django.db import connection

    position = {cid: i for i, cid in enumerate(chunk_ids)}
    tokens: list[list[int]] = [[] for _ in chunk_ids]
    vocab: dict[str, int] = {}
    with connection.cursor() as cur:
        for start in range(0, len(chunk_ids), 10_000):
            cur.execute("SELECT chunk_id, term, tf FROM collections_keyword_posting WHERE chunk_id = ANY(%s::uuid[])",
                        [chunk_ids[start:start + 10_000]])
            for chunk_id, term, tf in cur.fetchall():
                tokens[position[chunk_id]].extend([vocab.setdefault(term, len(vocab))] * tf)
    return tokens, vocab


def query_lexemes(queries: list[str]) -> list[list[str]]:
    """Each query's distinct lexemes under the product's text search configuration."""
    from django.db import connection

    from airweave.collections.keyword_index import TEXT_SEARCH_CONFIG

    with connection.cursor() as cur:
        cur.execute(f"SELECT q.ord, array(SELECT lexeme FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', q.t))) "
                    "FROM unnest(%s::text[]) WITH ORDINALITY AS q(t, ord) ORDER BY q.ord", [queries])
        return [list(row[1]) for row in cur.fetchall()]


def anchor_bm25s(corpus_tokens: tuple[list[list[int]], dict[str, int]], queries: list[list[str]],
                 ours: list[list[int]]) -> dict:
    """bm25s (Lucene idf, the product's k1/b) over the product's lexemes: build s, latencies, agreement with ours.

    `corpus_tokens` is what lexemes_by_chunk returns; `queries` are lexemes, `ours` our top 10 (corpus indices).

    The agreement is tie-aware: one of our top 10 counts as a match when its exact BM25 score
    reaches the exact 10th score (variants of one pool chunk can hold the same bag of words,
    so tied chunks at rank 10 are interchangeable). Scores are bm25s's float32.
    """
    import bm25s
    import numpy as np

    from search.retrieval import BM25_B, BM25_K1

    started = time.perf_counter()
    retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B, method="lucene")
    retriever.index(corpus_tokens, show_progress=False)
    build_s = time.perf_counter() - started
    vocab = retriever.vocab_dict
    latencies, matches = [], []
    for query, mine in zip(queries, ours):
        known = [t for t in query if t in vocab]
        if not known:
            continue
        started = time.perf_counter()
        retriever.retrieve([known], k=min(LIMIT, len(corpus_tokens[0])), show_progress=False, n_threads=1)
        latencies.append((time.perf_counter() - started) * 1000)
        scores = retriever.get_scores(known)
        k = min(LIMIT, int((scores > 0).sum()))
        if k:
            tenth = np.partition(scores, -k)[-k]
            matches.append(sum(scores[i] >= tenth * (1 - 1e-5) for i in mine[:k]) / k)
    return {"build_s": round(build_s, 2), **percentiles(latencies),
            "keyword_top10_agreement_with_ours": round(float(np.mean(matches)), 4) if matches else None}


def anchor_tantivy(texts: list[str], queries: list[str]) -> tuple[dict, list[float]]:
    """tantivy in memory (en_stem analyser, its own BM25): build s and per-query latencies for the top 10."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    builder.add_integer_field("pos", stored=True, fast=True)
    index = tantivy.Index(builder.build())
    started = time.perf_counter()
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for i, text in enumerate(texts):
        writer.add_document(tantivy.Document(text=text, pos=i))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    build_s = time.perf_counter() - started
    searcher = index.searcher()
    latencies = []
    for text in queries:
        started = time.perf_counter()
        query, _errors = index.parse_query_lenient(text, ["text"])
        searcher.search(query, LIMIT)
        latencies.append((time.perf_counter() - started) * 1000)
    return {"build_s": round(build_s, 2)}, latencies


def anchor_pgvector(built: Built, query_vectors) -> tuple[list[float], list[list[int]]]:
    """The bare HNSW query (the product's index and ef_search, no filter, no fusion, no hydration): latencies, top 10."""
    from django.db import connection, transaction

    position = {cid: i for i, cid in enumerate(built.chunk_ids)}
    sql = (f"SELECT id FROM collections_chunk WHERE dims = {DIMS} AND collection_id = %s "
           f"ORDER BY embedding::vector({DIMS}) <=> %s::vector({DIMS}) LIMIT {LIMIT}")
    latencies, ranked = [], []
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(f"SET LOCAL hnsw.ef_search = {HNSW_EF_SEARCH}")
        for vector in query_vectors:
            literal = "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"
            started = time.perf_counter()
            cur.execute(sql, [built.collection.id, literal])
            rows = cur.fetchall()
            latencies.append((time.perf_counter() - started) * 1000)
            ranked.append([position[r[0]] for r in rows])
    return latencies, ranked


def anchor_faiss(vectors, query_vectors) -> tuple[dict, list[float], list[list[int]]]:
    """faiss IndexHNSWFlat, inner product, M = 16, efConstruction = 64, efSearch = HNSW_EF_SEARCH, one thread."""
    import faiss

    faiss.omp_set_num_threads(1)
    started = time.perf_counter()
    index = faiss.IndexHNSWFlat(vectors.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 64
    index.add(vectors)
    build_s = time.perf_counter() - started
    index.hnsw.efSearch = HNSW_EF_SEARCH
    latencies, ranked = [], []
    for vector in query_vectors:
        started = time.perf_counter()
        _, ids = index.search(vector.reshape(1, -1), LIMIT)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked.append([int(i) for i in ids[0] if i >= 0])
    return {"build_s": round(build_s, 2), "bytes": int(faiss.serialize_index(index).size)}, latencies, ranked


def exact_top(vectors, query_vectors, mask) -> list[list[int]]:
    """Exact cosine top 10 among the chunks `mask` keeps (vectors are normalised: dot product)."""
    import numpy as np

    kept = np.flatnonzero(mask)
    scores = query_vectors @ vectors[kept].T
    k = min(LIMIT, len(kept))
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return [kept[row[np.argsort(-scores[q, row])]].tolist() for q, row in enumerate(top)]


# --- figures -------------------------------------------------------------------------------------

def percentiles(ms: list[float]) -> dict:
    """p50/p95/p99 (nearest rank) and mean of latencies in ms."""
    ordered = sorted(ms)
    if not ordered:
        return {}

    def rank(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * p // 100) - 1))], 2)

    return {"p50_ms": rank(50), "p95_ms": rank(95), "p99_ms": rank(99),
            "mean_ms": round(sum(ordered) / len(ordered), 2), "queries": len(ordered)}


def overlap_at_10(ours: list[list[int]], reference: list[list[int]]) -> float:
    """Mean |ours ∩ reference| / |reference| over queries with a non-empty reference (top 10 each)."""
    pairs = [(set(a[:LIMIT]), set(b[:LIMIT])) for a, b in zip(ours, reference) if b]
    return round(sum(len(a & b) / len(b) for a, b in pairs) / max(len(pairs), 1), 4)


def recall_within(ours: list[list[int]], exact: list[list[int]], vectors, query_vectors, epsilon: float = 1e-3) -> float:
    """ann-benchmarks' recall@10 ("knn" metric, metrics.py): a returned chunk counts when its cosine
    distance is at most the exact 10th distance + `epsilon`. Near-duplicate chunks (variants of one
    pool chunk here, re-synced copies in real collections) tie within noise; this counts any of them."""
    import numpy as np

    total, counted = 0, 0
    for q, (got, truth) in enumerate(zip(ours, exact)):
        if not truth:
            continue
        threshold = 1 - float(vectors[truth[-1]] @ query_vectors[q]) + epsilon
        distances = 1 - vectors[got[:LIMIT]] @ query_vectors[q] if got else np.array([])
        counted += int((distances <= threshold).sum())
        total += len(truth)
    return round(counted / max(total, 1), 4)


def measure_size(organization, pool, pool_vectors, queries, query_vectors, n: int, args: argparse.Namespace) -> dict:
    """Build a collection of `n` chunks, time ours and the anchors, and return the figures of this size."""
    print(f"\n== {n} chunks: building", flush=True)
    corpus = make_corpus(pool, pool_vectors, n, args.seed)
    built = collection_for(organization, corpus, f"scale-{n}-seed{args.seed}-pool{len(pool)}", args.reuse)
    print(f"  built: {built.timings}", flush=True)
    row: dict = {"chunks": n, "build": built.timings, "disk": disk_sizes(),
                 "shares": {c: round(float(condition_mask(corpus, c).mean()), 4) for c in CONDITIONS}}
    ours, ranked = {}, {}
    for strategy in args.strategies.split(","):
        for condition in CONDITIONS:
            latencies, ranked[strategy, condition] = run_ours(built, queries, strategy, condition)
            ours[f"{strategy}/{condition}"] = percentiles(latencies)
            print(f"  ours {strategy:<8} {condition:<11} {ours[f'{strategy}/{condition}']}", flush=True)
    row["ours"] = ours
    if ("semantic", "unfiltered") in ranked:
        exact = {c: exact_top(corpus.vectors, query_vectors, condition_mask(corpus, c)) for c in CONDITIONS}
        row["vector_recall@10"] = {c: overlap_at_10(ranked["semantic", c], exact[c]) for c in CONDITIONS}
        row["vector_recall@10_within_1e-3"] = {
            c: recall_within(ranked["semantic", c], exact[c], corpus.vectors, query_vectors) for c in CONDITIONS}
    row["anchors"] = anchors(built, corpus, queries, query_vectors, ranked)
    row["ratios_p50"] = ratios(ours, row["anchors"])
    if not args.keep:
        built.collection.delete()
    return row


def anchors(built: Built, corpus: Corpus, queries: list[str], query_vectors, ranked: dict) -> dict:
    """Time the four anchors and compare their answers with ours and with the exact top 10."""
    out = {}
    if ("keyword", "unfiltered") in ranked:
        out["bm25s"] = anchor_bm25s(lexemes_by_chunk(built.chunk_ids), query_lexemes(queries),
                                    ranked["keyword", "unfiltered"])
        build_info, latencies = anchor_tantivy(corpus.texts, queries)
        out["tantivy"] = {**build_info, **percentiles(latencies)}
    if ("semantic", "unfiltered") in ranked:
        out.update(vector_anchors(built, corpus, query_vectors))
    for name, figures in out.items():
        print(f"  anchor {name:<13} {figures}", flush=True)
    return out


def vector_anchors(built: Built, corpus: Corpus, query_vectors) -> dict:
    """The raw pgvector query and faiss HNSW: latencies and recall@10 against the exact top 10."""
    out = {}
    exact = exact_top(corpus.vectors, query_vectors, condition_mask(corpus, "unfiltered"))
    latencies, pg_ranked = anchor_pgvector(built, query_vectors)
    out["pgvector_sql"] = {**percentiles(latencies), "recall@10": overlap_at_10(pg_ranked, exact),
                           "recall@10_within_1e-3": recall_within(pg_ranked, exact, corpus.vectors, query_vectors)}
    build_info, latencies, faiss_ranked = anchor_faiss(corpus.vectors, query_vectors)
    out["faiss_hnsw"] = {**build_info, **percentiles(latencies), "recall@10": overlap_at_10(faiss_ranked, exact),
                         "recall@10_within_1e-3": recall_within(faiss_ranked, exact, corpus.vectors, query_vectors)}
    return out


ANCHOR_OF = {"keyword": ("bm25s", "tantivy"), "semantic": ("pgvector_sql", "faiss_hnsw")}


def ratios(ours: dict, anchor_figures: dict) -> dict:
    """ours p50 / anchor p50 for the unfiltered keyword and semantic searches."""
    return {f"{strategy}/{anchor}": round(ours[f"{strategy}/unfiltered"]["p50_ms"] / anchor_figures[anchor]["p50_ms"], 1)
            for strategy, names in ANCHOR_OF.items() for anchor in names
            if anchor_figures.get(anchor, {}).get("p50_ms") and f"{strategy}/unfiltered" in ours}


def embed_latency(embedder, queries: list[str]) -> dict:
    """Latency of embedding one query with the local model (part of every semantic and hybrid search)."""
    embedder.embed_queries(queries[:WARM_UP_QUERIES])
    latencies = []
    for text in queries:
        started = time.perf_counter()
        embedder.embed_queries([text])
        latencies.append((time.perf_counter() - started) * 1000)
    return percentiles(latencies)


# --- report --------------------------------------------------------------------------------------

def print_table(report: dict) -> None:
    """Latency p50/p95/p99 (ms) per strategy and condition, anchors, recall and sizes, one block per size."""
    embedding = report["query_embedding"]
    print(f"\nembedding one query (in every semantic and hybrid search): p50 {embedding['p50_ms']} ms, "
          f"p95 {embedding['p95_ms']} ms")
    for row in report["sizes"]:
        print(f"\n{row['chunks']:,} chunks  (build {row['build']}; disk MB: "
              + ", ".join(f"{k[:-6]} {v / 2**20:.0f}" for k, v in row["disk"].items() if k.endswith("_bytes")) + ")")
        print(f"{'search':<30}{'p50':>9}{'p95':>9}{'p99':>9}")
        for name, f in [*row["ours"].items(), *((f"anchor {a}", v) for a, v in row["anchors"].items())]:
            print(f"{name:<30}{f['p50_ms']:>9.1f}{f['p95_ms']:>9.1f}{f['p99_ms']:>9.1f}")
        if "vector_recall@10" in row:
            print("vector recall@10 against the exact top 10: ours " + ", ".join(
                f"{c} {v:.3f}" for c, v in row["vector_recall@10"].items())
                + f"; pgvector SQL {row['anchors']['pgvector_sql']['recall@10']:.3f}, "
                  f"faiss {row['anchors']['faiss_hnsw']['recall@10']:.3f}")
        if "vector_recall@10_within_1e-3" in row:
            print("vector recall@10 within 1e-3 of the exact 10th distance (ann-benchmarks): ours " + ", ".join(
                f"{c} {v:.3f}" for c, v in row["vector_recall@10_within_1e-3"].items())
                + f"; pgvector SQL {row['anchors']['pgvector_sql']['recall@10_within_1e-3']:.3f}, "
                  f"faiss {row['anchors']['faiss_hnsw']['recall@10_within_1e-3']:.3f}")
        if "bm25s" in row["anchors"]:
            print(f"keyword top-10 agreement with exact BM25 (bm25s, same lexemes, ties counted): "
                  f"{row['anchors']['bm25s']['keyword_top10_agreement_with_ours']:.3f}")
        print("ours / anchor, p50: " + ", ".join(f"{k} {v}x" for k, v in row["ratios_p50"].items()))


def markdown_table(report: dict) -> str:
    """The latency table of docs/benchmarks.md: one row per search, p50 / p95 / p99 ms per size."""
    sizes = report["sizes"]
    head = "| search | " + " | ".join(f"{row['chunks']:,} chunks p50 / p95 / p99 ms" for row in sizes) + " |"
    lines = [head, "|---|" + "---|" * len(sizes)]
    names = [*sizes[0]["ours"], *(f"anchor {a}" for a in sizes[0]["anchors"])]
    for name in names:
        cells = []
        for row in sizes:
            f = row["anchors"][name[7:]] if name.startswith("anchor ") else row["ours"][name]
            cells.append(f"{f['p50_ms']:.1f} / {f['p95_ms']:.1f} / {f['p99_ms']:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def draw(report: dict, path: Path) -> None:
    """p95 latency against collection size (log x): ours per strategy (unfiltered, solid), anchors dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["chunks"] for row in report["sizes"]]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for strategy in STRATEGIES:
        if all(f"{strategy}/unfiltered" in row["ours"] for row in report["sizes"]):
            ax.plot(sizes, [row["ours"][f"{strategy}/unfiltered"]["p95_ms"] for row in report["sizes"]], marker="o",
                    label=f"ours {strategy}")
    for anchor in ("bm25s", "tantivy", "pgvector_sql", "faiss_hnsw"):
        if all(anchor in row["anchors"] for row in report["sizes"]):
            ax.plot(sizes, [row["anchors"][anchor]["p95_ms"] for row in report["sizes"]], linestyle="--", marker=".",
                    label=f"anchor {anchor}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the collection")
    ax.set_ylabel("p95 latency, ms (log)")
    ax.set_title(f"Search latency at scale, {report['queries']} SciFact queries, top {LIMIT}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def machine_info() -> dict:
    """CPU count, platform, Python, PostgreSQL version and git revision."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SHOW server_version")
        pg = cur.fetchone()[0]
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_DIR, capture_output=True,
                              text=True).stdout.strip() or None
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "postgresql": pg, "git_revision": revision}


def save(report: dict, out_dir: Path) -> Path:
    """Write scale-<timestamp>.json, scale-latest.json and scale.png under `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1) + "\n"
    (out_dir / f"scale-{datetime.now():%Y%m%d-%H%M%S}.json").write_text(text)
    (out_dir / "scale-latest.json").write_text(text)
    draw(report, out_dir / "scale.png")
    return out_dir / "scale-latest.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (`argv`, default sys.argv[1:]) as run() takes it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated chunk counts (1000000 takes hours)")
    parser.add_argument("--dataset", default=str(PROJECT_DIR.parent / "shared/data/scifact"), help="BEIR SciFact folder")
    parser.add_argument("--queries", type=int, default=300, help="test queries to run (at most 300)")
    parser.add_argument("--base-chunks", type=int, default=2000, help="real chunks embedded once for the pool")
    parser.add_argument("--cache-dir", default=str(PROJECT_DIR / ".data/bench"), help="where embedded vectors are cached")
    parser.add_argument("--out", default=str(BENCH_DIR / "results"), help="folder of the JSON and PNG")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="ours to time (anchors follow: keyword "
                        "brings bm25s and tantivy, semantic the vector ones)")
    parser.add_argument("--keep", action="store_true", help="keep each collection instead of deleting it")
    parser.add_argument("--reuse", action="store_true", help="reuse a collection kept by an earlier run (--keep) "
                        "of the same size, seed and pool: no build, build figures omitted")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict:
    """Measure every size of `args.sizes`; save and return the report (Django must be set up)."""
    global HNSW_EF_SEARCH
    from django.conf import settings

    from airweave.providers.embeddings import get_embedder
    from airweave.tenancy.services import organization_get_or_create
    from search.retrieval import hnsw_ef_search

    HNSW_EF_SEARCH = hnsw_ef_search(100)
    docs, queries = load_scifact(Path(args.dataset))
    queries = queries[:args.queries]
    embedder = get_embedder(settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL)  # the collections' model (384-d MiniLM)
    pool = pool_chunks(docs, args.base_chunks, args.seed)
    cache = Path(args.cache_dir)
    pool_vectors = cached_vectors([" ".join(p) for p in pool], cache, "pool", embedder.embed)
    query_vectors = cached_vectors(queries, cache, "queries", embedder.embed_queries)
    organization = organization_get_or_create(name=ORGANIZATION)
    report = {"benchmark": "scale", "queries": len(queries), "limit": LIMIT, "base_chunks": len(pool),
              "noise_sigma": NOISE_SIGMA, "seed": args.seed, "hnsw_ef_search": HNSW_EF_SEARCH,
              "query_embedding": embed_latency(embedder, queries), "machine": machine_info(),
              "command": " ".join(["bench/scale.py", *sys.argv[1:]]) if sys.argv[0].endswith("scale.py") else None,
              "measured_at": datetime.now().isoformat(timespec="seconds"), "sizes": []}
    for n in (int(s) for s in args.sizes.split(",")):
        report["sizes"].append(measure_size(organization, pool, pool_vectors, queries, query_vectors, n, args))
    print_table(report)
    print("\n" + markdown_table(report))
    print(f"\nsaved {save(report, Path(args.out))}")
    return report


def main() -> None:
    """Parse the command line, set Django up and run."""
    import django

    args = parse_args()
    django.setup()
    run(args)


if __name__ == "__main__":
    main()
