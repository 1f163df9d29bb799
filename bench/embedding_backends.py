"""Local embedding backends compared on SciFact: torch vs onnx vs onnx-int8, in one run.

What it measures (all on real SciFact chunks, made as the sync makes them: title + blank line +
abstract, chunk_text with AIRWEAVE_CHUNK_TOKENS / AIRWEAVE_CHUNK_OVERLAP_TOKENS):

* Speed: sentences (chunks)/s of LocalEmbedder.embed on a fixed sample of chunks, each round
  running every backend once (the order rotating per round), --rounds rounds; medians reported.
  The machine may be shared, hence interleaved rounds and medians, never one backend after another.
* Query latency: one short query embedded alone (the single-thread path), median over 20.
* Agreement: cosine between each backend's and torch's vector of the same chunk (min / mean / p01).
* Quality: the whole corpus embedded once per backend; nDCG@10 / recall@100 on the 300 test
  queries for semantic search (exact cosine over chunks, a document ranked by its best chunk,
  as the product's exact scan does below AIRWEAVE_EXACT_SCAN_MAX_CHUNKS) and for a hybrid of that
  ranking with bm25s (RRF, k=60, top 100 of each). "mixed": documents embedded by torch, queries
  by the backend (an existing collection searched after the default changed).

Vectors are cached in bench/.cache/embeddings-<backend>.npy (keyed by the chunks' digest and the
exported model); --no-cache re-embeds. Run from the project folder:

    .venv/bin/python bench/embedding_backends.py --dataset ../shared/data/scifact [--rounds 5] [--sample 384]

Results: bench/results/embedding-backends-<YYYYMMDD-HHMMSS>.json and embedding-backends-latest.json.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_DIR = BENCH_DIR.parent
sys.path.insert(0, str(PROJECT_DIR))
sys.path.insert(0, str(BENCH_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from beir import Bm25sReference, evaluate, load_dataset  # noqa: E402

CACHE_DIR = BENCH_DIR / ".cache"
RESULTS_DIR = BENCH_DIR / "results"
BACKENDS = ("torch", "onnx", "onnx-int8")
RRF_K = 60
TOP_K = 100


def make_chunks(dataset, tokenizer, max_tokens: int, overlap: int) -> tuple[list[str], list[str]]:
    """(chunk texts, doc id of each chunk), in corpus order, as the sync chunks the documents."""
    from connectors.sync.chunking import chunk_text

    texts, owners = [], []
    for doc_id, (raw_title, text) in dataset.corpus.items():
        title = " ".join(raw_title.split())
        for piece in chunk_text(f"{title}\n\n{text}\n", tokenizer, max_tokens=max_tokens, overlap=overlap):
            texts.append(piece.text)
            owners.append(doc_id)
    return texts, owners


def semantic_run(doc_vectors, owners, query_vectors, qids) -> dict[str, list[str]]:
    """Top-TOP_K documents per query, a document scored by its best chunk (cosine)."""
    import numpy as np

    owners_arr = np.array(owners)
    run = {}
    for start in range(0, len(qids), 50):
        scores = query_vectors[start:start + 50] @ doc_vectors.T
        for row, qid in zip(scores, qids[start:start + 50]):
            ranked, seen = [], set()
            for i in np.argsort(-row)[: TOP_K * 8]:
                doc = owners_arr[i]
                if doc not in seen:
                    seen.add(doc)
                    ranked.append(str(doc))
                    if len(ranked) == TOP_K:
                        break
            run[qid] = ranked
    return run


def rrf(*runs: dict[str, list[str]]) -> dict[str, list[str]]:
    fused = {}
    for qid in runs[0]:
        scores: dict[str, float] = {}
        for run in runs:
            for rank, doc in enumerate(run.get(qid, [])[:TOP_K]):
                scores[doc] = scores.get(doc, 0.0) + 1.0 / (RRF_K + rank + 1)
        fused[qid] = sorted(scores, key=lambda d: -scores[d])[:TOP_K]
    return fused


def _scores(run, qrels) -> dict:
    return {k: v for k, v in evaluate(run, qrels).items() if k in ("ndcg@10", "recall@100", "mrr@10")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=str(PROJECT_DIR.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sample", type=int, default=384, help="chunks per speed round")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--no-quality", action="store_true", help="speed and agreement on the sample only")
    parser.add_argument("--quality-backends", default=None, help="backends embedding the corpus (default: --backends)")
    parser.add_argument("--docs", type=int, default=0,
                        help="quality on a corpus of N documents: every document judged for a test query, "
                             "then others drawn at random (seed 13); 0 = the whole corpus")
    parser.add_argument("--no-cache", action="store_true")
    args = parser.parse_args(argv)

    import django

    django.setup()
    import numpy as np
    from django.conf import settings

    from airweave.providers.local_embeddings import BULK_THREADS, LocalEmbedder

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    dataset = load_dataset(Path(args.dataset))
    full_corpus = len(dataset.corpus)
    if args.docs and args.docs < full_corpus:
        judged = {doc for judged in dataset.qrels["test"].values() for doc in judged}
        others = sorted(set(dataset.corpus) - judged)
        keep = judged | set(random.Random(13).sample(others, max(0, args.docs - len(judged))))
        dataset.corpus = {doc: value for doc, value in dataset.corpus.items() if doc in keep}
    embedders = {}
    load_s = {}
    for backend in backends:
        started = time.perf_counter()
        embedders[backend] = LocalEmbedder(backend=backend, batch_size=settings.AIRWEAVE_EMBEDDING_BATCH_SIZE)
        embedders[backend].embed(["warm up"])
        load_s[backend] = round(time.perf_counter() - started, 2)
        print(f"{backend}: loaded in {load_s[backend]} s (active backend {embedders[backend].active_backend})",
              flush=True)
        if embedders[backend].active_backend != backend:
            raise SystemExit(f"{backend} did not load; see the warning above")
    tokenizer = embedders[backends[0]].tokenizer
    texts, owners = make_chunks(dataset, tokenizer, settings.AIRWEAVE_CHUNK_TOKENS, settings.AIRWEAVE_CHUNK_OVERLAP_TOKENS)
    print(f"{len(dataset.corpus)} of {full_corpus} documents -> {len(texts)} chunks", flush=True)

    sample = random.Random(13).sample(texts, min(args.sample, len(texts)))
    rates: dict[str, list[float]] = {b: [] for b in backends}
    sample_vectors = {}
    for r in range(args.rounds):
        order = backends[r % len(backends):] + backends[: r % len(backends)]
        for backend in order:
            started = time.perf_counter()
            sample_vectors[backend] = embedders[backend].embed(sample)
            rates[backend].append(len(sample) / (time.perf_counter() - started))
        print(f"round {r + 1}: " + ", ".join(f"{b} {rates[b][-1]:.1f}/s" for b in backends), flush=True)
    latency = {}
    for backend in backends:
        times = []
        for _ in range(20):
            started = time.perf_counter()
            embedders[backend].embed_queries(["what causes obesity in mice fed a high fat diet"])
            times.append((time.perf_counter() - started) * 1000)
        latency[backend] = round(statistics.median(times), 2)
    speed = {b: {"median_sentences_per_s": round(statistics.median(v), 2), "rounds": [round(x, 2) for x in v],
                 "query_ms_median": latency[b], "load_s": load_s[b]} for b, v in rates.items()}
    if "torch" in speed:
        for b in backends:
            speed[b]["speedup_over_torch"] = round(speed[b]["median_sentences_per_s"]
                                                   / speed["torch"]["median_sentences_per_s"], 2)
            # Within a round both ran under the same load: the median of those ratios is the steadier figure.
            speed[b]["speedup_over_torch_per_round_median"] = round(statistics.median(
                x / t for x, t in zip(rates[b], rates["torch"])), 2)
    report = {"run_id": datetime.now().strftime("%Y%m%d-%H%M%S"), "dataset": Path(args.dataset).name,
              "command": " ".join([".venv/bin/python", "bench/embedding_backends.py", *(argv or sys.argv[1:])]),
              "machine": {"cpus": os.cpu_count(), "bulk_threads": BULK_THREADS, "platform": platform.platform(),
                          "loadavg_at_start": os.getloadavg()},
              "documents": len(dataset.corpus), "corpus_documents": full_corpus,
              "chunks": len(texts), "sample_chunks": len(sample), "rounds": args.rounds, "speed": speed}

    if not args.no_quality:
        backends = [b.strip() for b in (args.quality_backends or ",".join(backends)).split(",") if b.strip()]
        digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
        vectors = {}
        qids = list(dataset.qrels["test"])
        qtexts = [dataset.queries[q] for q in qids]
        for backend in backends:
            model_tag = str(getattr(embedders[backend]._model, "file", "torch"))
            tag = hashlib.sha256(f"{digest}|{model_tag}".encode()).hexdigest()[:16]
            path = CACHE_DIR / f"embeddings-{backend}-{tag}.npy"
            if path.exists() and not args.no_cache:
                vectors[backend] = np.load(path)
                print(f"{backend}: corpus vectors from {path.name}", flush=True)
            else:
                started = time.perf_counter()
                vectors[backend] = embedders[backend].embed(texts)
                print(f"{backend}: corpus embedded in {time.perf_counter() - started:.0f} s", flush=True)
                CACHE_DIR.mkdir(parents=True, exist_ok=True)
                np.save(path, vectors[backend])
        queries = {b: embedders[b].embed_queries(qtexts) for b in backends}
        bm25 = Bm25sReference(dataset).run(dict(zip(qids, qtexts)), 1.5, 0.75)
        qrels = dataset.qrels["test"]
        quality = {"bm25s": _scores(bm25, qrels)}
        for backend in backends:
            sem = semantic_run(vectors[backend], owners, queries[backend], qids)
            quality[backend] = {"semantic": _scores(sem, qrels), "hybrid": _scores(rrf(sem, bm25), qrels)}
            if backend != "torch" and "torch" in vectors:
                mixed = semantic_run(vectors["torch"], owners, queries[backend], qids)
                quality[backend]["mixed_torch_documents"] = {"semantic": _scores(mixed, qrels),
                                                             "hybrid": _scores(rrf(mixed, bm25), qrels)}
                cos = (vectors[backend] * vectors["torch"]).sum(axis=1)
                qcos = (queries[backend] * queries["torch"]).sum(axis=1)
                quality[backend]["cosine_to_torch"] = {
                    "chunks_min": round(float(cos.min()), 5), "chunks_mean": round(float(cos.mean()), 5),
                    "chunks_p01": round(float(np.percentile(cos, 1)), 5),
                    "queries_min": round(float(qcos.min()), 5), "queries_mean": round(float(qcos.mean()), 5)}
        if "torch" in quality:
            for backend in backends:
                for leg in ("semantic", "hybrid"):
                    quality[backend][leg]["ndcg@10_loss_vs_torch"] = round(
                        quality["torch"][leg]["ndcg@10"] - quality[backend][leg]["ndcg@10"], 4)
        report["quality"] = quality
    elif "torch" in sample_vectors:
        report["agreement_on_sample"] = {
            b: {"cosine_min": round(float((sample_vectors[b] * sample_vectors["torch"]).sum(1).min()), 5),
                "cosine_mean": round(float((sample_vectors[b] * sample_vectors["torch"]).sum(1).mean()), 5)}
            for b in backends if b != "torch"}

    print(json.dumps(report, indent=2))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    for name in (f"embedding-backends-{report['run_id']}.json", "embedding-backends-latest.json"):
        (RESULTS_DIR / name).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
