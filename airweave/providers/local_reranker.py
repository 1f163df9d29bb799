"""A local cross-encoder reranker, used only when its weights are on disk (nothing is downloaded).

The model comes from AIRWEAVE_LOCAL_RERANKER_PATH, or from the Hugging Face cache when a
cross-encoder (default `cross-encoder/ms-marco-MiniLM-L-6-v2`) is already there.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

DEFAULT_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
_LOCK = threading.Lock()
_MODELS: dict[str, object] = {}


def local_reranker_path() -> str | None:
    """The local path or cached model id of the cross-encoder, or None when it is not on disk."""
    configured = os.environ.get("AIRWEAVE_LOCAL_RERANKER_PATH")
    if configured:
        return configured if Path(configured).exists() else None
    cache = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    folder = cache / ("models--" + DEFAULT_MODEL.replace("/", "--"))
    return DEFAULT_MODEL if folder.exists() else None


class LocalCrossEncoder:
    """`rerank(query, documents, top_n)` → [(index, score)], best first."""

    def __init__(self, path: str):
        self.path = path

    def _model(self):
        with _LOCK:
            if self.path not in _MODELS:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                from sentence_transformers import CrossEncoder

                _MODELS[self.path] = CrossEncoder(self.path, device="cpu")
            return _MODELS[self.path]

    def rerank(self, query: str, documents: list[str], top_n: int) -> list[tuple[int, float]]:
        scores = self._model().predict([(query, d) for d in documents])
        order = sorted(range(len(documents)), key=lambda i: -float(scores[i]))
        return [(i, float(scores[i])) for i in order[:top_n]]
