"""Offline ONNX export (and int8 quantisation) of a packaged sentence-transformers model.

The export reads only the packaged weights (no network): the BERT encoder is traced with
`torch.onnx.export` and, for int8, its MatMul weights are quantised with onnxruntime's dynamic
quantisation. Mean pooling and L2 normalisation stay outside the graph (LocalEmbedder does them
in numpy, as sentence-transformers' Pooling and Normalize modules do).

Files live in `<data dir>/models/<model>-onnx/<first 16 hex of the weights' SHA-256>/`
(`model.onnx`, `model-int8.onnx`, `manifest.json`): new packaged weights get a new folder, and a
folder whose manifest names other weights is never used. A file lock makes a second process wait
for the first one's export instead of exporting too; files appear by atomic rename only.

sentence-transformers' own `backend="onnx"` exports through optimum-onnx, whose only release
(0.1.0) requires transformers < 4.58 (this project runs transformers 5), hence this module.
"""
from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

FORMAT = 1  # bump when the exported graph changes (inputs, opset, quantisation): folders re-export
OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
VARIANTS = {"onnx": "model.onnx", "onnx-int8": "model-int8.onnx"}


class OnnxExportError(Exception):
    """The ONNX model could not be exported or quantised (missing onnx/onnxruntime, a failed trace)."""


def weights_digest(model_path: Path) -> str:
    """SHA-256 (hex, 64 chars) of the packaged weights file(s) of the model folder `model_path`.

    Raises OnnxExportError when the folder holds no `model.safetensors` / `pytorch_model.bin`.
    """
    digest = hashlib.sha256()
    files = [model_path / name for name in ("model.safetensors", "pytorch_model.bin") if (model_path / name).exists()]
    if not files:
        raise OnnxExportError(f"no weights file in {model_path}")
    for file in files:
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def exported_model(model_path: Path, models_dir: Path, model_name: str, variant: str) -> Path:
    """The path of the `variant` ("onnx" | "onnx-int8") ONNX file of the model at `model_path`,
    exporting it (once, under a file lock) into `models_dir` when it is not there yet.

    Raises OnnxExportError when export or quantisation fails, ValueError for an unknown variant.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r}; expected one of {sorted(VARIANTS)}")
    digest = weights_digest(model_path)
    folder = models_dir / f"{model_name}-onnx" / digest[:16]
    target = folder / VARIANTS[variant]
    if _is_current(folder, digest) and target.exists():
        return target
    try:
        from filelock import FileLock
    except ImportError as exc:  # pragma: no cover - filelock is a pinned requirement
        raise OnnxExportError(f"filelock is not installed: {exc}") from exc
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / ".export.lock"), timeout=600):
        if not (_is_current(folder, digest) and target.exists()):
            _export(model_path, folder, digest)
    return target


def _is_current(folder: Path, digest: str) -> bool:
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return manifest.get("weights_sha256") == digest and manifest.get("format") == FORMAT


def _export(model_path: Path, folder: Path, digest: str) -> None:
    """Export the fp32 graph and its int8 quantisation into `folder`, then write the manifest."""
    try:
        import onnx
        import onnxruntime
        import torch
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise OnnxExportError(f"the ONNX export needs onnx, onnxruntime and torch: {exc}") from exc

    logger.info("exporting %s to ONNX in %s (once per weights revision)", model_path, folder)
    fp32, int8 = folder / VARIANTS["onnx"], folder / VARIANTS["onnx-int8"]
    fp32_tmp, int8_tmp = fp32.with_suffix(".onnx.tmp"), int8.with_suffix(".onnx.tmp")
    try:
        model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()
        tokenizer = AutoTokenizer.from_pretrained(str(model_path))

        class _Encoder(torch.nn.Module):
            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                 token_type_ids=token_type_ids).last_hidden_state

        sample = tokenizer(["an example sentence", "a second, longer example sentence to pad"],
                           padding=True, return_tensors="pt")
        with torch.no_grad():
            torch.onnx.export(
                _Encoder(model), tuple(sample[name] for name in INPUT_NAMES), str(fp32_tmp),
                input_names=list(INPUT_NAMES), output_names=["last_hidden_state"],
                dynamic_axes={name: {0: "batch", 1: "tokens"} for name in (*INPUT_NAMES, "last_hidden_state")},
                opset_version=OPSET, dynamo=False,
            )
        del model
        gc.collect()
        onnx.checker.check_model(str(fp32_tmp))
        # The quantiser logs a line per tensor on the root logger: held at ERROR for those seconds.
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)
        try:
            quantize_dynamic(str(fp32_tmp), str(int8_tmp), weight_type=QuantType.QInt8, per_channel=True)
        finally:
            root.setLevel(level)
        os.replace(fp32_tmp, fp32)
        os.replace(int8_tmp, int8)
    except OnnxExportError:
        raise
    except Exception as exc:
        raise OnnxExportError(f"ONNX export of {model_path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        for tmp in (fp32_tmp, int8_tmp):
            tmp.unlink(missing_ok=True)
    manifest = {"format": FORMAT, "weights_sha256": digest, "source": str(model_path), "opset": OPSET,
                "torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
                "files": dict(VARIANTS)}
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, folder / "manifest.json")
