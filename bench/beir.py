"""BEIR benchmark (SciFact by default): retrieval quality, search latency and sync throughput.

What it measures, against the checkout's own database (the embedded PostgreSQL, not the test DB):

* Sync: the corpus is written as one Markdown file per document (front matter `title:`, body =
  title + blank line + text) under bench/.cache/<dataset>_docs/ and indexed through the real
  pipeline (a `local_files` source connection, sync_job_start + sync_job_run in this process).
  Reported: first-sync wall time, chunks embedded, chunks/s; then an immediate re-sync of the
  unchanged folder: wall time, entities kept, embedder calls (must be 0) and the speedup.
* Quality and latency of search_instant for the keyword, semantic and hybrid strategies on the
  test queries (ids of qrels/test.tsv), at document level (collapse_entities=True, documents
  identified by `airweave_system_metadata.original_entity_id` minus ".md"): nDCG@10,
  recall@100, MRR@10 (trec_eval definitions, graded gains, log2 discount) and per-query latency
  p50/p95 measured around search_instant after one warm-up query.
* A reference BM25 run: bm25s (Lucene idf) over whole documents (title + text) with the
  PyStemmer English stemmer and English stop words, default parameters and with k1/b tuned on
  the train split (qrels/train.tsv) over a small grid.
* --tune: the same grid for our keyword leg (search.retrieval.BM25_K1 / BM25_B, patched in this
  process only) chosen on train, reported on test.
* --rrf-k 10,30,60: hybrid with other RRF k values (search.retrieval.retrieve called directly,
  query vectors embedded once per run), on train and test.

Run from the project folder:

    .venv/bin/python bench/beir.py --dataset $SCIFACT [--reindex] [--tune] [--rrf-k 10,30,60]

`$SCIFACT` is a BEIR SciFact folder (`make bench` passes its SCIFACT variable: by default the
data folder beside the checkout).

The collection (organization "bench", readable_id `--collection`, default "beir-<dataset>") is
reused when it is fully indexed, so tuning runs skip the sync; --reindex deletes and rebuilds it.
Without a sync in this run, the sync figures of the collection's last rebuild (kept in
bench/.cache/<collection>-sync.json) are carried into the JSON. Results go to
bench/results/<dataset>-<YYYYMMDD-HHMMSS>.json and bench/results/<dataset>-latest.json.
"""
from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

# Imports of the project (and of bm25s, torch) live inside the functions: django.setup() runs in main().
BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
CACHE_DIR = BENCH_DIR / ".cache"
RESULTS_DIR = BENCH_DIR / "results"
ORGANIZATION = "bench"
STRATEGIES = ("keyword", "semantic", "hybrid")
TOP_K = 100
GRID_K1 = (0.9, 1.2, 1.5, 1.8)
GRID_B = (0.5, 0.65, 0.75, 0.9)
PROGRESS_EVERY_S = 15.0


# --- dataset and metrics ---------------------------------------------------------------------

@dataclass
class Dataset:
    """A BEIR dataset: corpus {doc_id: (title, text)}, queries {qid: text}, qrels {split: {qid: {doc_id: grade}}}."""

    name: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, dict[str, int]]]


def load_dataset(folder: Path) -> Dataset:
    """Read corpus.jsonl, queries.jsonl and qrels/{test,train}.tsv (ids kept as strings)."""
    corpus, queries, qrels = {}, {}, {}
    with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            corpus[str(doc["_id"])] = (doc.get("title") or "", doc.get("text") or "")
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            query = json.loads(line)
            queries[str(query["_id"])] = query["text"]
    for split in ("test", "train"):
        path = folder / "qrels" / f"{split}.tsv"
        if not path.exists():
            continue
        judged: dict[str, dict[str, int]] = {}
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                judged.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
        qrels[split] = judged
    return Dataset(folder.resolve().name, corpus, queries, qrels)


def ndcg_at(ranked: list[str], judged: dict[str, int], k: int = 10) -> float:
    """nDCG@k with linear graded gains and a log2(rank + 1) discount; ideal DCG from the qrels."""
    dcg = sum(judged.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked[:k], start=1))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], judged: dict[str, int], k: int = 100) -> float:
    """Share of the relevant documents (grade > 0) found in the top k."""
    relevant = {doc for doc, g in judged.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at(ranked: list[str], judged: dict[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document in the top k, else 0."""
    for rank, doc in enumerate(ranked[:k], start=1):
        if judged.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def evaluate(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict:
    """Mean nDCG@10, recall@100 and MRR@10 over every judged query (a query missing from `run` scores 0)."""
    per_query = {qid: ndcg_at(run.get(qid, []), judged) for qid, judged in qrels.items()}
    return {
        "ndcg@10": statistics.fmean(per_query.values()),
        "recall@100": statistics.fmean(recall_at(run.get(qid, []), j) for qid, j in qrels.items()),
        "mrr@10": statistics.fmean(mrr_at(run.get(qid, []), j) for qid, j in qrels.items()),
        "queries": len(qrels),
        "per_query_ndcg@10": {qid: round(v, 4) for qid, v in per_query.items()},
    }


def latency_summary(latencies_ms: list[float]) -> dict:
    """p50 / p95 / mean of per-query latencies in milliseconds (linear interpolation)."""
    cuts = statistics.quantiles(latencies_ms, n=100, method="inclusive")
    return {"p50_ms": cuts[49], "p95_ms": cuts[94], "mean_ms": statistics.fmean(latencies_ms)}


# --- indexing through the real sync pipeline -------------------------------------------------

def write_documents(dataset: Dataset, folder: Path) -> int:
    """Write one `<doc_id>.md` per document, leaving identical files untouched; remove stale ones.

    Returns the number of files written. The title goes to the front matter (as a JSON string,
    which YAML reads as a double-quoted scalar) and heads the body, so it is indexed once: its
    whitespace is normalised as the entity name is, so the pipeline does not prepend it again.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for doc_id, (raw_title, text) in dataset.corpus.items():
        title = " ".join(raw_title.split())
        content = f"---\ntitle: {json.dumps(title, ensure_ascii=False)}\n---\n{title}\n\n{text}\n".encode()
        path = folder / f"{doc_id}.md"
        if not path.exists() or path.read_bytes() != content:
            path.write_bytes(content)
            written += 1
    wanted = {f"{doc_id}.md" for doc_id in dataset.corpus}
    for path in folder.glob("*.md"):
        if path.name not in wanted:
            path.unlink()
    return written


def find_collection(organization, readable_id: str):
    """The organization's collection with this readable_id, or None."""
    from airweave.collections.models import Collection

    return Collection.objects.filter(organization=organization, readable_id=readable_id).first()


def is_fully_indexed(collection, docs_dir: Path, n_docs: int) -> bool:
    """True when the collection's local_files connection points at `docs_dir`, its latest job
    completed and it holds one entity per document."""
    from airweave.collections.models import SyncJob

    connection = collection.source_connections.filter(short_name="local_files", config__path=str(docs_dir)).first()
    if connection is None:
        return False
    latest = SyncJob.objects.filter(source_connection=connection).order_by("-created_at").first()
    return bool(latest and latest.status == "completed" and connection.entities.count() == n_docs)


def timed_sync(connection, label: str) -> tuple[object, float]:
    """Start a job for `connection` and run it in this process; print progress. Returns (job, seconds)."""
    from connectors.sync.services import sync_job_run, sync_job_start

    started = time.perf_counter()
    last_print = [started]

    def on_progress(counters) -> None:
        now = time.perf_counter()
        if now - last_print[0] >= PROGRESS_EVERY_S:
            last_print[0] = now
            done = counters.inserted + counters.updated + counters.kept + counters.skipped + counters.failed
            elapsed = now - started
            print(f"  [{label}] {elapsed:7.1f}s  entities={done}  chunks={counters.chunks_embedded} "
                  f"({counters.chunks_embedded / elapsed:.1f} chunks/s)", flush=True)

    job = sync_job_start(source_connection=connection, enqueue=False)
    job = sync_job_run(job_id=job.id, on_progress=on_progress)
    seconds = time.perf_counter() - started
    print(f"  [{label}] {job.status} in {seconds:.1f}s: inserted={job.entities_inserted} kept={job.entities_kept} "
          f"skipped={job.entities_skipped} failed={job.entities_failed} chunks_embedded={job.chunks_embedded}",
          flush=True)
    if job.status != "completed":
        raise SystemExit(f"{label} sync {job.status}: {job.error}")
    return job, seconds


def build_index(organization, readable_id: str, docs_dir: Path, dataset: Dataset) -> tuple[object, dict]:
    """Create the collection and its local_files connection, sync it, re-sync it; return (collection, figures)."""
    from django.conf import settings

    from airweave.collections.services import collection_create
    from airweave.providers.embeddings import get_embedder
    from connectors.services import source_connection_create

    collection = collection_create(organization=organization, name=f"BEIR {dataset.name}"[:64], readable_id=readable_id)
    connection = source_connection_create(collection=collection, short_name="local_files", name=f"Files in {docs_dir}",
                                          config={"path": str(docs_dir)}, sync_immediately=False, for_api=False)
    embedder = get_embedder(collection.embedding_model_name)  # the process-wide LocalEmbedder the pipeline uses
    started = time.perf_counter()
    embedder.embed(["warm-up"])  # model load is not indexing time
    model_load_s = time.perf_counter() - started

    first, first_s = timed_sync(connection, "first sync")
    calls_before = embedder.calls
    again, again_s = timed_sync(connection, "re-sync")
    figures = {
        "measured_at": datetime.now().isoformat(timespec="seconds"),
        "documents": len(dataset.corpus),
        "model_load_s": model_load_s,
        "chunk_tokens": settings.AIRWEAVE_CHUNK_TOKENS, "chunk_overlap_tokens": settings.AIRWEAVE_CHUNK_OVERLAP_TOKENS,
        "embedding_batch_size": settings.AIRWEAVE_EMBEDDING_BATCH_SIZE,
        "first_sync": {
            "wall_s": first_s, "job_duration_s": first.duration_seconds, "entities_inserted": first.entities_inserted,
            "entities_skipped": first.entities_skipped, "entities_failed": first.entities_failed,
            "chunks_embedded": first.chunks_embedded, "chunks_per_s": first.chunks_embedded / first_s,
            "docs_per_s": first.entities_inserted / first_s,
        },
        "resync": {
            "wall_s": again_s, "job_duration_s": again.duration_seconds, "entities_kept": again.entities_kept,
            "entities_inserted": again.entities_inserted, "entities_updated": again.entities_updated,
            "chunks_embedded": again.chunks_embedded, "embedder_calls": embedder.calls - calls_before,
        },
        "speedup_first_over_resync": first_s / again_s,
    }
    return collection, figures


def sync_figures_path(readable_id: str) -> Path:
    """Where the sync figures of the collection's last (re)index are kept between runs."""
    return CACHE_DIR / f"{readable_id}-sync.json"


def saved_sync_figures(readable_id: str) -> dict | None:
    """The figures of the collection's last (re)index, marked as carried over, or None."""
    try:
        return {**json.loads(sync_figures_path(readable_id).read_text()), "carried_over": True}
    except (OSError, ValueError):
        return None


def ensure_index(dataset: Dataset, readable_id: str, reindex: bool):
    """Return (collection, sync figures): reuse a fully indexed collection unless `reindex`.

    The figures of a rebuild are also kept in bench/.cache, so runs that reuse the collection
    (or a run that fails after indexing) still report them.
    """
    from airweave.collections.services import collection_delete
    from airweave.tenancy.services import organization_get_or_create

    organization = organization_get_or_create(name=ORGANIZATION)
    docs_dir = (CACHE_DIR / f"{dataset.name}_docs").resolve()
    written = write_documents(dataset, docs_dir)
    print(f"documents: {len(dataset.corpus)} files in {docs_dir} ({written} written)", flush=True)
    collection = find_collection(organization, readable_id)
    if collection is not None and not reindex and is_fully_indexed(collection, docs_dir, len(dataset.corpus)):
        print(f"reusing collection {readable_id} (fully indexed; --reindex to rebuild)", flush=True)
        return collection, saved_sync_figures(readable_id)
    if collection is not None:
        print(f"deleting collection {readable_id}", flush=True)
        collection_delete(collection=collection)
    print(f"indexing into collection {readable_id} through the sync pipeline", flush=True)
    collection, figures = build_index(organization, readable_id, docs_dir, dataset)
    sync_figures_path(readable_id).write_text(json.dumps(figures, indent=1) + "\n")
    return collection, figures


# --- our search ------------------------------------------------------------------------------

def doc_id_of(entity_id: str) -> str:
    """`<doc_id>.md` -> `<doc_id>`."""
    return entity_id.removesuffix(".md")


def warm_up(collection, strategy: str, text: str) -> float:
    """One search_instant call kept out of the figures (connections, caches, model load); its ms."""
    from search.instant import InstantSearchRequest, search_instant

    started = time.perf_counter()
    search_instant(collection=collection, principals=None, request=InstantSearchRequest(
        query=text, retrieval_strategy=strategy, limit=TOP_K, collapse_entities=True))
    return (time.perf_counter() - started) * 1000


def instant_run(collection, strategy: str, queries: dict[str, str]) -> tuple[dict[str, list[str]], list[float]]:
    """search_instant for each query: (ranked doc ids per qid, latencies in ms)."""
    from search.instant import InstantSearchRequest, search_instant

    run, latencies = {}, []
    for qid, text in queries.items():
        request = InstantSearchRequest(query=text, retrieval_strategy=strategy, limit=TOP_K, collapse_entities=True)
        started = time.perf_counter()
        response = search_instant(collection=collection, principals=None, request=request)
        latencies.append((time.perf_counter() - started) * 1000)
        run[qid] = [doc_id_of(r["airweave_system_metadata"]["original_entity_id"]) for r in response.results]
    return run, latencies


class DirectSearcher:
    """search.retrieval.retrieve with a RetrievalQuery built as search_instant builds it, minus
    hydration; query vectors are embedded once and kept for the whole run. RRF k defaults to
    the product's (defaults.yml)."""

    def __init__(self, collection):
        from airweave.collections.models import Entity
        from airweave.providers.catalog import search_defaults
        from airweave.providers.embeddings import get_embedder

        self.collection = collection
        self.default_rrf_k = int(search_defaults().get("rrf_k", 60))
        self.embedder = get_embedder(collection.embedding_model_name)
        self.doc_of_entity = {pk: doc_id_of(eid) for pk, eid in
                              Entity.objects.filter(collection=collection).values_list("pk", "entity_id")}
        self.vectors: dict[str, object] = {}

    def ranked(self, text: str, strategy: str, rrf_k: int | None = None) -> list[str]:
        """Top-100 document ids for one query."""
        from search.filters import compile_filter_groups
        from search.retrieval import RetrievalQuery, retrieve

        vector = None
        if strategy != "keyword":
            if text not in self.vectors:
                self.vectors[text] = self.embedder.embed([text])[0]
            vector = self.vectors[text]
        hits = retrieve(RetrievalQuery(
            collection_id=self.collection.id, dims=self.collection.vector_size, text=text, query_vector=vector,
            strategy=strategy, condition=compile_filter_groups(None), limit=TOP_K, collapse=True,
            rrf_k=self.default_rrf_k if rrf_k is None else rrf_k))
        return [self.doc_of_entity[h.entity_pk] for h in hits]

    def run(self, queries: dict[str, str], strategy: str, rrf_k: int | None = None) -> dict[str, list[str]]:
        """Ranked doc ids for every query."""
        return {qid: self.ranked(text, strategy, rrf_k) for qid, text in queries.items()}


@contextmanager
def bm25_params(k1: float, b: float):
    """Set search.retrieval.BM25_K1 / BM25_B in this process for the duration of the block."""
    from search import retrieval

    saved = retrieval.BM25_K1, retrieval.BM25_B
    retrieval.BM25_K1, retrieval.BM25_B = k1, b
    try:
        yield
    finally:
        retrieval.BM25_K1, retrieval.BM25_B = saved


def tune_ours(searcher: DirectSearcher, train: dict[str, str], test: dict[str, str], dataset: Dataset) -> dict:
    """Grid-search our keyword leg's k1/b on train; report test figures (keyword and hybrid) with the best."""
    grid = []
    for k1 in GRID_K1:
        for b in GRID_B:
            started = time.perf_counter()
            with bm25_params(k1, b):
                scores = evaluate(searcher.run(train, "keyword"), dataset.qrels["train"])
            grid.append({"k1": k1, "b": b, "train_ndcg@10": scores["ndcg@10"],
                         "train_recall@100": scores["recall@100"]})
            print(f"  ours k1={k1} b={b}: train nDCG@10={scores['ndcg@10']:.4f} "
                  f"({time.perf_counter() - started:.0f}s)", flush=True)
    best = max(grid, key=lambda row: row["train_ndcg@10"])
    with bm25_params(best["k1"], best["b"]):
        test_figures = {strategy: _strip(evaluate(searcher.run(test, strategy), dataset.qrels["test"]))
                        for strategy in ("keyword", "hybrid")}
    return {"grid": grid, "best": {"k1": best["k1"], "b": best["b"]}, "test": test_figures}


def rrf_sweep(searcher: DirectSearcher, ks: list[int], train: dict[str, str], test: dict[str, str],
              dataset: Dataset) -> dict:
    """Hybrid (collapsed) with each RRF k on train and test; the best k is chosen on train."""
    rows = []
    for k in ks:
        train_scores = evaluate(searcher.run(train, "hybrid", rrf_k=k), dataset.qrels["train"])
        test_scores = evaluate(searcher.run(test, "hybrid", rrf_k=k), dataset.qrels["test"])
        rows.append({"rrf_k": k, "train_ndcg@10": train_scores["ndcg@10"], "test": _strip(test_scores)})
        print(f"  rrf k={k}: train nDCG@10={train_scores['ndcg@10']:.4f} test nDCG@10={test_scores['ndcg@10']:.4f}",
              flush=True)
    return {"rows": rows, "best_on_train": max(rows, key=lambda r: r["train_ndcg@10"])["rrf_k"]}


def _strip(scores: dict) -> dict:
    """Scores without the per-query detail."""
    return {k: v for k, v in scores.items() if k != "per_query_ndcg@10"}


# --- reference BM25 (bm25s) ------------------------------------------------------------------

class Bm25sReference:
    """bm25s over whole documents (title + text), PyStemmer English, English stop words."""

    def __init__(self, dataset: Dataset):
        import bm25s
        import Stemmer

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # one debug line per index() otherwise
        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        self.doc_ids = list(dataset.corpus)
        texts = [f"{title}\n\n{text}" for title, text in dataset.corpus.values()]
        self.corpus_tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)

    def run(self, queries: dict[str, str], k1: float, b: float) -> dict[str, list[str]]:
        """Top-100 doc ids per query (documents with score 0 dropped)."""
        retriever = self.bm25s.BM25(k1=k1, b=b)
        retriever.index(self.corpus_tokens, show_progress=False)
        qids = list(queries)
        tokens = self.bm25s.tokenize([queries[q] for q in qids], stopwords="en", stemmer=self.stemmer,
                                     return_ids=False, show_progress=False)
        docs, scores = retriever.retrieve(tokens, k=TOP_K, show_progress=False)
        return {qid: [self.doc_ids[d] for d, s in zip(docs[i], scores[i]) if s > 0] for i, qid in enumerate(qids)}


def bm25s_reference(dataset: Dataset, train: dict[str, str], test: dict[str, str]) -> dict:
    """bm25s with its defaults (k1=1.5, b=0.75) and with k1/b tuned on train, both on test."""
    reference = Bm25sReference(dataset)
    grid = []
    for k1 in GRID_K1:
        for b in GRID_B:
            scores = evaluate(reference.run(train, k1, b), dataset.qrels["train"])
            grid.append({"k1": k1, "b": b, "train_ndcg@10": scores["ndcg@10"],
                         "train_recall@100": scores["recall@100"]})
    best = max(grid, key=lambda row: row["train_ndcg@10"])
    return {
        "default": {"k1": 1.5, "b": 0.75, **evaluate(reference.run(test, 1.5, 0.75), dataset.qrels["test"])},
        "tuned": {"k1": best["k1"], "b": best["b"],
                  **evaluate(reference.run(test, best["k1"], best["b"]), dataset.qrels["test"])},
        "grid": grid,
    }


# --- report ----------------------------------------------------------------------------------

def machine_info() -> dict:
    """CPU count, platform, Python, PostgreSQL version and git revision."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SHOW server_version")
        pg = cur.fetchone()[0]
    try:
        revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_DIR, capture_output=True,
                                  text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        revision = None
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(), "machine": platform.machine(),
            "python": platform.python_version(), "postgresql": pg, "git_revision": revision}


def print_report(report: dict) -> None:
    """The results table, then tuning, RRF and sync figures."""
    print(f"\n{report['dataset']} test ({report['test_queries']} queries), collection {report['collection']}, "
          f"ours k1={report['parameters']['bm25_k1']} b={report['parameters']['bm25_b']} "
          f"rrf_k={report['parameters']['rrf_k']}")
    print(f"{'strategy':<32}{'nDCG@10':>9}{'R@100':>9}{'MRR@10':>9}{'p50 ms':>9}{'p95 ms':>9}")
    for strategy, row in report["ours"].items():
        print(f"{strategy:<32}{row['ndcg@10']:>9.4f}{row['recall@100']:>9.4f}{row['mrr@10']:>9.4f}"
              f"{row['p50_ms']:>9.1f}{row['p95_ms']:>9.1f}")
    for label, row in report["bm25s"].items():
        if label == "grid":
            continue
        name = f"bm25s {label} (k1={row['k1']}, b={row['b']})"
        print(f"{name:<32}{row['ndcg@10']:>9.4f}{row['recall@100']:>9.4f}{row['mrr@10']:>9.4f}{'-':>9}{'-':>9}")
    ratio = report["ours"]["keyword"]["ndcg@10"] / report["bm25s"]["tuned"]["ndcg@10"]
    print(f"keyword nDCG@10 / bm25s tuned: {ratio:.3f}")
    if "tune" in report:
        tune = report["tune"]
        print(f"\n--tune: best on train k1={tune['best']['k1']} b={tune['best']['b']}; test with it: "
              + ", ".join(f"{s} nDCG@10={v['ndcg@10']:.4f} R@100={v['recall@100']:.4f} MRR@10={v['mrr@10']:.4f}"
                          for s, v in tune["test"].items()))
    if "rrf" in report:
        print("\nhybrid by RRF k: " + ", ".join(
            f"k={r['rrf_k']}: train {r['train_ndcg@10']:.4f} / test {r['test']['ndcg@10']:.4f}"
            for r in report["rrf"]["rows"]) + f" (best on train: {report['rrf']['best_on_train']})")
    sync = report.get("sync")
    if sync:
        first, again = sync["first_sync"], sync["resync"]
        origin = f" (measured {sync['measured_at']}, carried over)" if sync.get("carried_over") else ""
        print(f"\nsync{origin}: first {first['wall_s']:.1f}s, {first['chunks_embedded']} chunks, "
              f"{first['chunks_per_s']:.1f} chunks/s; re-sync {again['wall_s']:.2f}s, kept {again['entities_kept']}, "
              f"embedder calls {again['embedder_calls']}; speedup {sync['speedup_first_over_resync']:.1f}x")


def save_report(report: dict) -> Path:
    """Write the JSON report (timestamped and -latest), each through a temporary file."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{report['dataset']}-{report['run_id']}.json"
    for target in (path, RESULTS_DIR / f"{report['dataset']}-latest.json"):
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(report, indent=1, default=float) + "\n")
        tmp.replace(target)
    return path


# --- main ------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, type=Path,
                        help="BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/)")
    parser.add_argument("--collection", help="readable_id of the collection (default: beir-<dataset>)")
    parser.add_argument("--reindex", action="store_true", help="delete and rebuild the collection, measuring the sync")
    parser.add_argument("--tune", action="store_true", help="grid-search our keyword leg's BM25 k1/b on train")
    parser.add_argument("--rrf-k", type=lambda s: [int(k) for k in s.split(",") if k.strip()], default=[],
                        help="comma-separated RRF k values to evaluate hybrid with, e.g. 10,30,60")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Index (or reuse), evaluate every strategy and the bm25s reference, tune if asked, report."""
    args = parse_args(argv)
    sys.path.insert(0, str(PROJECT_DIR))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")
    import django

    django.setup()
    from airweave.providers.catalog import search_defaults
    from search import retrieval

    dataset = load_dataset(args.dataset)
    readable_id = args.collection or f"beir-{dataset.name}".lower()
    test = {qid: dataset.queries[qid] for qid in dataset.qrels["test"]}
    train = {qid: dataset.queries[qid] for qid in dataset.qrels.get("train", {})}
    run_id = datetime.now().strftime("%Y%m%d-%H%M%S")

    collection, sync = ensure_index(dataset, readable_id, args.reindex)

    ours = {}
    warm_text = next(iter(train.values()), next(iter(test.values())))
    for strategy in STRATEGIES:
        warmup_ms = warm_up(collection, strategy, warm_text)
        run, latencies = instant_run(collection, strategy, test)
        ours[strategy] = {**evaluate(run, dataset.qrels["test"]), **latency_summary(latencies), "warmup_ms": warmup_ms}
        print(f"  {strategy}: nDCG@10={ours[strategy]['ndcg@10']:.4f} p50={ours[strategy]['p50_ms']:.1f} ms",
              flush=True)

    print("bm25s reference (grid on train)...", flush=True)
    report = {
        "run_id": run_id, "dataset": dataset.name, "collection": readable_id,
        "command": shlex.join(sys.orig_argv), "machine": machine_info(),
        "parameters": {"bm25_k1": retrieval.BM25_K1, "bm25_b": retrieval.BM25_B,
                       "rrf_k": int(search_defaults().get("rrf_k", 60)), "top_k": TOP_K, "collapse_entities": True,
                       "embedding_model": collection.embedding_model_name, "grid_k1": GRID_K1, "grid_b": GRID_B},
        "documents": len(dataset.corpus), "test_queries": len(test), "train_queries": len(train),
        "ours": ours, "bm25s": bm25s_reference(dataset, train, test), "sync": sync,
    }
    if args.tune or args.rrf_k:
        searcher = DirectSearcher(collection)
        if args.tune:
            print("tuning our keyword leg on train...", flush=True)
            report["tune"] = tune_ours(searcher, train, test, dataset)
        if args.rrf_k:
            print("hybrid RRF k sweep...", flush=True)
            report["rrf"] = rrf_sweep(searcher, args.rrf_k, train, test, dataset)
    print_report(report)
    print(f"\nsaved {save_report(report)}")


if __name__ == "__main__":
    main()
