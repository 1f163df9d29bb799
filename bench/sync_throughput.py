"""Sync throughput: the real pipeline's chunks/s against raw encoding of the same chunks, one run.

The first --docs SciFact documents are written as Markdown files (as bench/beir.py writes them)
and synced through the real pipeline (a `local_files` connection of a fresh collection in the
organization "bench", the checkout's own database, sync_job_run in this process). Then the
chunks that sync stored are embedded again in one `LocalEmbedder.embed` call ("raw": for the
torch backend that is SentenceTransformer.encode with the pipeline's batch size; for ONNX the
same tokenise → onnxruntime → mean-pool → normalise path without any pipeline around it).
With --rounds N the two alternate N times (raw, pipeline, raw, pipeline, ...), each pipeline
round on a new collection; medians are reported with the ratio pipeline / raw (target ≥ 0.9),
and the stage seconds of the median round (busy time per stage: embedding overlaps the rest).

    .venv/bin/python bench/sync_throughput.py --dataset ../shared/data/scifact [--docs 600] [--rounds 3]
    AIRWEAVE_LOCAL_EMBEDDING_BACKEND=torch .venv/bin/python bench/sync_throughput.py ...

Results: bench/results/sync-throughput-<backend>-<YYYYMMDD-HHMMSS>.json and
sync-throughput-<backend>-latest.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
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

from beir import CACHE_DIR, ORGANIZATION, load_dataset, write_documents  # noqa: E402

RESULTS_DIR = BENCH_DIR / "results"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=str(PROJECT_DIR.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--docs", type=int, default=600, help="documents synced per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.conf import settings

    from airweave.collections.models import Chunk, Collection
    from airweave.collections.services import collection_create, collection_delete
    from airweave.providers.embeddings import get_embedder
    from airweave.tenancy.services import organization_get_or_create
    from connectors.services import source_connection_create
    from connectors.sync.services import sync_job_run, sync_job_start

    dataset = load_dataset(Path(args.dataset))
    dataset.corpus = dict(list(dataset.corpus.items())[: args.docs])
    docs_dir = (CACHE_DIR / f"{dataset.name}_{args.docs}_docs").resolve()
    write_documents(dataset, docs_dir)
    organization = organization_get_or_create(name=ORGANIZATION)

    rounds = []
    for r in range(args.rounds):
        readable_id = f"sync-throughput-{r}"
        for stale in Collection.objects.filter(organization=organization, readable_id=readable_id):
            collection_delete(collection=stale)
        collection = collection_create(organization=organization, name=f"sync throughput {r}", readable_id=readable_id)
        connection = source_connection_create(collection=collection, short_name="local_files", name="SciFact files",
                                              config={"path": str(docs_dir)}, sync_immediately=False, for_api=False)
        embedder = get_embedder(collection.embedding_model_name, settings.AIRWEAVE_EMBEDDING_BATCH_SIZE)
        embedder.embed(["warm up"])  # the model loads outside both measurements

        texts = None
        if r > 0:  # raw first from round 2 on (round 1 needs the pipeline's chunks)
            texts = rounds[-1]["_texts"]
        raw_s = None
        if texts is not None:
            started = time.perf_counter()
            embedder.embed(texts)
            raw_s = time.perf_counter() - started

        started = time.perf_counter()
        job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
        pipeline_s = time.perf_counter() - started
        if job.status != "completed":
            raise SystemExit(f"sync {job.status}: {job.error}")
        chunk_texts = list(Chunk.objects.filter(entity__source_connection=connection)
                           .order_by("entity__entity_id", "chunk_index").values_list("text", flat=True))
        if raw_s is None:
            started = time.perf_counter()
            embedder.embed(chunk_texts)
            raw_s = time.perf_counter() - started
        row = {"round": r + 1, "chunks": job.chunks_embedded, "entities": job.entities_inserted,
               "pipeline_s": round(pipeline_s, 2), "raw_encode_s": round(raw_s, 2),
               "pipeline_chunks_per_s": round(job.chunks_embedded / pipeline_s, 2),
               "raw_chunks_per_s": round(len(chunk_texts) / raw_s, 2),
               "stage_seconds": job.stage_seconds, "_texts": chunk_texts}
        row["ratio"] = round(row["pipeline_chunks_per_s"] / row["raw_chunks_per_s"], 3)
        rounds.append(row)
        print(f"round {r + 1}: pipeline {row['pipeline_chunks_per_s']} chunks/s ({pipeline_s:.1f} s), "
              f"raw encode {row['raw_chunks_per_s']} chunks/s ({raw_s:.1f} s), ratio {row['ratio']}; "
              f"stages {job.stage_seconds}", flush=True)
        collection_delete(collection=collection)
    for row in rounds:
        del row["_texts"]
    ratios = [row["ratio"] for row in rounds]
    median_round = sorted(rounds, key=lambda row: row["ratio"])[len(rounds) // 2]
    report = {
        "run_id": datetime.now().strftime("%Y%m%d-%H%M%S"),
        "command": " ".join([".venv/bin/python", "bench/sync_throughput.py", *(argv or sys.argv[1:])]),
        "backend": embedder.active_backend, "documents": args.docs, "rounds": rounds,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "loadavg_at_end": os.getloadavg()},
        "median": {"pipeline_chunks_per_s": statistics.median(r["pipeline_chunks_per_s"] for r in rounds),
                   "raw_chunks_per_s": statistics.median(r["raw_chunks_per_s"] for r in rounds),
                   "ratio": statistics.median(ratios), "stage_seconds_of_median_round": median_round["stage_seconds"]},
    }
    print(f"\n{report['backend']}: pipeline {report['median']['pipeline_chunks_per_s']} chunks/s, raw encode "
          f"{report['median']['raw_chunks_per_s']} chunks/s, ratio {report['median']['ratio']} (median of {len(rounds)})")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    for name in (f"sync-throughput-{report['backend']}-{report['run_id']}.json",
                 f"sync-throughput-{report['backend']}-latest.json"):
        (RESULTS_DIR / name).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
