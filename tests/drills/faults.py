"""Fault points for the drills, run inside a real worker process as django-q2 tasks.

`run_sync_job_until(job_id, stage, after, marker)` runs a sync job through the product's own
pipeline, but when the pipeline reaches `stage` for the `after`-th time it writes its pid to the
file `marker` and waits there, so that the test can SIGKILL the process at that exact point:

- ``listing``: before the source yields its `after`-th entity (earlier batches are written);
- ``embedding``: inside the `after`-th call of the embedding model;
- ``writing``: inside the `after`-th write of a batch, after its chunks were inserted and before
  the transaction commits (the keyword postings are being written).

Only the drills enqueue these; the product's task entry points are in connectors/sync/tasks.py.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from airweave.collections import keyword_index
from connectors.sync import pipeline
from connectors.sync.services import sync_job_run

STAGES = ("listing", "embedding", "writing")


def _hold(marker: str, stage: str) -> None:
    Path(marker).write_text(json.dumps({"pid": os.getpid(), "stage": stage}))
    while True:  # until the drill kills this process
        time.sleep(1)


class _Countdown:
    def __init__(self, after: int):
        self.left = after

    def reached(self) -> bool:
        self.left -= 1
        return self.left == 0


class _EmbedderHeld:
    """The pipeline's embedder, held inside its `after`-th `embed` call."""

    def __init__(self, embedder, countdown: _Countdown, marker: str):
        self._embedder, self._countdown, self._marker = embedder, countdown, marker

    def __getattr__(self, name):
        return getattr(self._embedder, name)

    def embed(self, texts):
        vectors = self._embedder.embed(texts)  # the model really runs
        if self._countdown.reached():
            _hold(self._marker, "embedding")
        return vectors


def run_sync_job_until(job_id: str, stage: str, after: int, marker: str) -> str:
    """Run job `job_id`, holding at `stage` (see the module's docstring); its status if never held."""
    assert stage in STAGES, stage
    countdown = _Countdown(after)
    saved = (pipeline.SyncPipeline._timed_listing, pipeline.get_embedder, keyword_index.index_chunks)
    if stage == "listing":
        def timed_listing(self, entities, _original=saved[0]):
            for entity in _original(self, entities):
                if countdown.reached():
                    _hold(marker, stage)
                yield entity
        pipeline.SyncPipeline._timed_listing = timed_listing
    elif stage == "embedding":
        pipeline.get_embedder = lambda *args, _original=saved[1]: _EmbedderHeld(_original(*args), countdown, marker)
    else:
        def index_chunks(cursor, chunk_ids, _original=saved[2]):
            _original(cursor, chunk_ids)
            if countdown.reached():
                _hold(marker, stage)
        keyword_index.index_chunks = index_chunks
    try:
        return sync_job_run(job_id=job_id).status
    finally:
        pipeline.SyncPipeline._timed_listing, pipeline.get_embedder, keyword_index.index_chunks = saved
