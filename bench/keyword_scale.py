"""Keyword-leg (BM25 in SQL) latency at scale: 100k+ chunks of real scientific text.

Builds a collection of `--chunks` chunks cut from BEIR SciFact abstracts (random windows of
40-120 words, so term statistics stay those of real text), written straight into the chunk
table with a 1-dimension placeholder vector (no HNSW index covers it: this measures the
keyword index, not embeddings), indexes their postings with the product's own writer, then
times `search.retrieval.keyword_leg` for the SciFact test queries, unfiltered and with a
filter. Prints p50/p95/max, saves JSON, and deletes the collection unless --keep.

    .venv/bin/python bench/keyword_scale.py --dataset $SCIFACT --chunks 120000   # a BEIR SciFact folder
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")


def build(collection, corpus: list[str], n_chunks: int, seed: int = 7) -> None:
    """Write `n_chunks` chunks (10 per entity) with postings into `collection`."""
    from django.db import connection, transaction

    from airweave.collections import keyword_index
    from airweave.collections.models import Chunk, Entity, SourceConnection, Sync

    rng = random.Random(seed)
    words = [doc.split() for doc in corpus]
    sc = SourceConnection.objects.create(organization_id=collection.organization_id, collection=collection,
                                         name="synthetic", short_name="local_files", config={})
    Sync.objects.create(organization_id=collection.organization_id, source_connection=sc)
    placeholder = [1.0]
    done = 0
    while done < n_chunks:
        batch = min(5000, n_chunks - done)
        with transaction.atomic():
            entities = Entity.objects.bulk_create([
                Entity(organization_id=collection.organization_id, collection=collection, source_connection=sc,
                       entity_id=f"e{done + i}", entity_type="SyntheticEntity" if (i // 10) % 2 else "OtherEntity",
                       name=f"e{done + i}", content_hash="x")
                for i in range(0, batch, 10)])
            chunks = []
            for i in range(batch):
                doc = rng.choice(words)
                length = rng.randint(40, 120)
                start = rng.randint(0, max(0, len(doc) - length))
                entity = entities[i // 10]
                chunks.append(Chunk(id=uuid.uuid4(), organization_id=collection.organization_id, collection=collection,
                                    source_connection_id=sc.id, entity=entity, chunk_index=i % 10,
                                    text=" ".join(doc[start:start + length]), embedding=placeholder, dims=1,
                                    original_entity_id=entity.entity_id, name=entity.name, entity_type=entity.entity_type,
                                    source_name="local_files"))
            Chunk.objects.bulk_create(chunks, batch_size=1000)
            with connection.cursor() as cur:
                keyword_index.index_chunks(cur, [c.id for c in chunks])
        done += batch
        print(f"  {done} chunks written", flush=True)
    with connection.cursor() as cur:  # what autovacuum does after a bulk load: stats and visibility map
        cur.execute("VACUUM ANALYZE collections_chunk")
        cur.execute("VACUUM ANALYZE collections_keyword_posting")


def time_queries(collection, queries: list[str], condition) -> list[float]:
    from search.retrieval import RetrievalQuery, keyword_leg

    timings = []
    for text in queries:
        q = RetrievalQuery(collection_id=collection.id, dims=collection.vector_size, text=text, strategy="keyword",
                           condition=condition, limit=10)
        start = time.perf_counter()
        keyword_leg(q, 100)
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def summary(ms: list[float]) -> dict:
    ordered = sorted(ms)
    return {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
            "max_ms": round(ordered[-1], 1), "queries": len(ordered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(BENCH_DIR.parent.parent / "shared/data/scifact"))
    parser.add_argument("--chunks", type=int, default=120_000)
    parser.add_argument("--rebuild", action="store_true", help="delete and rebuild the collection")
    parser.add_argument("--keep", action="store_true", help="keep the collection for another run")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    from airweave.collections.models import Chunk, Collection
    from airweave.collections.services import collection_create
    from airweave.tenancy.services import organization_get_or_create
    from search.filters import compile_filter_groups

    folder = Path(args.dataset)
    corpus = [f"{d['title']} {d['text']}" for d in map(json.loads, open(folder / "corpus.jsonl", encoding="utf-8"))]
    test_ids = {line.split("\t")[0] for line in open(folder / "qrels/test.tsv", encoding="utf-8")} - {"query-id"}
    queries = [q["text"] for q in map(json.loads, open(folder / "queries.jsonl", encoding="utf-8")) if q["_id"] in test_ids]

    org = organization_get_or_create(name="bench")
    readable_id = f"keyword-scale-{args.chunks}"
    collection = Collection.objects.filter(organization=org, readable_id=readable_id).first()
    if collection and args.rebuild:
        collection.delete()
        collection = None
    if collection is None:
        collection = collection_create(organization=org, name="Keyword scale benchmark", readable_id=readable_id)
        started = time.perf_counter()
        build(collection, corpus, args.chunks)
        print(f"built in {time.perf_counter() - started:.0f} s")
    n = Chunk.objects.filter(collection=collection).count()
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM collections_keyword_posting WHERE collection_id = %s", [collection.id])
        postings = cur.fetchone()[0]
        cur.execute("SELECT pg_size_pretty(pg_total_relation_size('collections_keyword_posting'))")
        size = cur.fetchone()[0]

    time_queries(collection, queries[:5], compile_filter_groups(None))  # warm-up
    unfiltered = summary(time_queries(collection, queries, compile_filter_groups(None)))
    filtered = summary(time_queries(collection, queries, compile_filter_groups(
        [{"conditions": [{"field": "airweave_system_metadata.entity_type", "operator": "equals", "value": "SyntheticEntity"}]}])))
    result = {"benchmark": "keyword_scale", "chunks": n, "postings": postings, "postings_table_size": size,
              "unfiltered": unfiltered, "filtered_entity_type": filtered,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
              "command": " ".join(sys.argv), "measured_at": datetime.now().isoformat(timespec="seconds")}
    print(json.dumps(result, indent=2))
    out = BENCH_DIR / "results" / f"keyword-scale-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(result, indent=2))
    (BENCH_DIR / "results" / "keyword-scale-latest.json").write_text(json.dumps(result, indent=2))
    if not args.keep:
        collection.delete()


if __name__ == "__main__":
    main()
