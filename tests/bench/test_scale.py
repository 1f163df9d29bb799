"""bench/scale.py end to end at a tiny size, so the benchmark keeps running as the code around it changes.

Marked slow: loading the local model, embedding the small pool and the anchors' imports take
15-20 s on a quiet 2-core machine, and over a minute when other runs share it.
"""
from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from django.db import connection

from airweave.collections.models import Chunk, Collection
from tests.conftest import PROJECT_DIR, SHARED_DATA

SCIFACT = SHARED_DATA / "scifact"


def load_scale():
    spec = importlib.util.spec_from_file_location("bench_scale", PROJECT_DIR / "bench" / "scale.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").exists(), reason="needs the SciFact data folder")
@pytest.mark.django_db(transaction=True)  # VACUUM and the HNSW rebuild run outside a transaction
def test_scale_runs_at_a_tiny_size(tmp_path, settings):
    settings.AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS = 100  # the keyword leg reads a segment, as at scale
    scale = load_scale()
    args = scale.parse_args(["--sizes", "300", "--queries", "8", "--base-chunks", "30", "--dataset", str(SCIFACT),
                             "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")])

    report = scale.run(args)

    (row,) = report["sizes"]
    assert row["chunks"] == 300
    assert row["shares"]["unfiltered"] == 1.0 and row["shares"]["filter_50"] == pytest.approx(0.5, abs=0.05)
    assert row["shares"]["user"] == pytest.approx(scale.USER_SHARE, abs=0.05)
    assert set(row["ours"]) == {f"{s}/{c}" for s in scale.STRATEGIES for c in scale.CONDITIONS}
    assert all(figures["queries"] == 8 for figures in row["ours"].values())
    # 300 chunks are scanned exactly: every filtered and access-restricted top 10 is the exact one.
    assert all(recall == 1.0 for recall in row["vector_recall@10"].values())
    assert row["anchors"]["bm25s"]["keyword_top10_agreement_with_ours"] == 1.0
    assert row["disk"]["hnsw_index_bytes"] > 0 and row["disk"]["postings_bytes"] > 0
    assert row["disk"]["keyword_segments_bytes"] > 0 and "keyword_segment_s" in row["build"]
    saved = json.loads((tmp_path / "out" / "scale-latest.json").read_text())
    assert saved["sizes"][0]["chunks"] == 300
    assert (tmp_path / "out" / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The collection is gone and the product's HNSW index is back.
    assert not Collection.objects.filter(readable_id__startswith="scale-").exists()
    assert not Chunk.objects.exists()
    with connection.cursor() as cur:
        cur.execute(f"SELECT to_regclass('chunk_embedding_hnsw_{scale.DIMS}')")
        assert cur.fetchone()[0] is not None
