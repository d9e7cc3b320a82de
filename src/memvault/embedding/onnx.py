"""A sentence-transformers model (BERT-like transformer + mean pooling) through ONNX Runtime.

The graph is exported once, on this machine, from the model's own weights with
``torch.onnx.export`` (transformer, mean pooling and L2 normalisation inside the graph, dynamic
batch and sequence axes) and cached as ``<cache_dir>/<model>-<fingerprint>.onnx``. Nothing is
downloaded. Once the file exists, loading needs neither torch nor transformers: the session and
the model's own fast tokenizer (``tokenizer.json``) are all there is, which is why a query is
embedded in about a third of torch's time with the same vectors (``bench/encoder.py``).

The vectors stay fp32: dynamic int8 quantisation was measured at mean cosine 0.974 to fp32
(issue 10), below the 0.99 that lets stored vectors and new queries meet as one model.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import uuid
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

# Part of the cache file's name: a change to what the exported graph computes must change it.
EXPORT_VERSION = 1
_BATCH = 32  # texts per session run; sorted by length so a batch pads little


class ExportUnsupported(Exception):
    """This model cannot be run through the ONNX path (its pooling is not mean pooling)."""


def supports(model_dir: Path) -> bool:
    """A transformer followed by mean pooling: what the exported graph reproduces."""
    pooling = model_dir / "1_Pooling" / "config.json"
    if not (model_dir / "tokenizer.json").exists() or not pooling.exists():
        return False
    config = json.loads(pooling.read_text())
    others = ("cls_token", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens")
    return bool(config.get("pooling_mode_mean_tokens")) and not any(
        config.get(f"pooling_mode_{m}") for m in others
    )


def max_seq_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    return (
        int(json.loads(config.read_text()).get("max_seq_length", 512)) if config.exists() else 512
    )


def cache_file(model_dir: Path, cache_dir: Path, name: str | None = None) -> Path:
    """Where this model's export lives: named by a fingerprint of the weights and the config, so
    a changed model (or a changed export) never loads a stale graph."""
    digest = hashlib.sha256(f"export-v{EXPORT_VERSION}".encode())
    for path in sorted(model_dir.iterdir()):
        if path.suffix in (".safetensors", ".bin"):
            digest.update(f"{path.name}:{path.stat().st_size}".encode())
        elif path.name in ("config.json", "tokenizer.json"):
            digest.update(path.read_bytes())
    return cache_dir / f"{name or model_dir.name}-{digest.hexdigest()[:16]}.onnx"


def export(model_dir: Path, target: Path) -> None:
    """Write the graph to ``target`` atomically: a temporary file in the same directory, then a
    rename, so another process sees either no file or the whole file."""
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    target.parent.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    pooled = _mean_pooled_module()(model)
    sample = _tokenizer(model_dir).encode_batch(["an example", "a somewhat longer example text"])
    inputs = tuple(
        torch.tensor([getattr(e, field) for e in sample], dtype=torch.int64)
        for field in ("ids", "attention_mask", "type_ids")
    )
    names = ["input_ids", "attention_mask", "token_type_ids"]
    partial = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # The tracer's notes on shapes it specialised are about the export, not the caller:
            # the graph is checked against torch on real text (tests/test_encoder.py).
            warnings.simplefilter("ignore")
            torch.onnx.export(
                pooled,
                inputs,
                str(partial),
                input_names=names,
                output_names=["embedding"],
                dynamic_axes={
                    **{n: {0: "batch", 1: "sequence"} for n in names},
                    "embedding": {0: "batch"},
                },
                opset_version=17,
                dynamo=False,
            )
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def _mean_pooled_module() -> type[Any]:
    """Defined on demand: torch is imported only when there is something to export."""
    import torch

    class MeanPooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(dim=1)
            mean = summed / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    return MeanPooled


def _tokenizer(model_dir: Path, max_length: int | None = None) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_length or max_seq_length(model_dir))
    pad_id = tokenizer.token_to_id("[PAD]") or 0
    tokenizer.enable_padding(pad_id=pad_id, pad_token="[PAD]")
    return tokenizer


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def intra_op_threads(processes: int = 1) -> int:
    """Threads for one session run. Matrix work on short texts stops scaling after a few
    threads; on a small machine (2 cores) every core, since encodes already run one at a time,
    shared out when several server processes encode at once."""
    return max(1, min((os.cpu_count() or 1) // processes, 4))


class OnnxEncoder:
    """An inference session over a cached export, and the tokenizer that feeds it."""

    backend = "onnx"

    def __init__(self, model_dir: Path, onnx_file: Path, *, source: str, threads: int = 0) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or intra_op_threads()
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Worker threads spin while an encode runs (fast hand-offs between operators) and
        # stop when it ends: left spinning, they held a core that the search's PostgreSQL
        # backends needed right after the encode. In-process hybrid search on a 675-turn
        # store, retrieve p95 22 -> 18 ms; one short query still encodes in 3.4 ms (3.2
        # spinning on, 4.3 with spinning off altogether).
        options.add_session_config_entry("session.force_spinning_stop", "1")
        self._session = ort.InferenceSession(
            str(onnx_file), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = _tokenizer(model_dir)
        self._spans = _tokenizer(model_dir)
        self._spans.no_truncation()
        self._spans.no_padding()
        self.onnx_file = onnx_file
        self.source = source  # "exported" or "cached": whether this load wrote the file
        self.dimensions = int(self._session.get_outputs()[0].shape[1] or 0) or None
        self.max_tokens = max_seq_length(model_dir)

    @classmethod
    def load(
        cls, model_dir: Path, cache_dir: Path, name: str | None = None, *, threads: int = 0
    ) -> OnnxEncoder:
        """Open the cached export, exporting it first if this machine has none yet."""
        target = cache_file(model_dir, cache_dir, name)
        source = "cached"
        if not target.exists():
            # Processes (`serve --workers N`) and threads starting together export once.
            with _exclusive(target.with_name(f".{target.name}.lock")):
                if not target.exists():
                    export(model_dir, target)
                    source = "exported"
        return cls(model_dir, target, source=source, threads=threads)

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimensions or 0), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            chosen = order[start : start + _BATCH]
            out[chosen] = self._run([texts[i] for i in chosen])
        return out

    def _run(self, texts: list[str]) -> npt.NDArray[np.float32]:
        encoded = self._tokenizer.encode_batch(texts)
        feed = {
            name: np.array([getattr(e, field) for e in encoded], dtype=np.int64)
            for name, field in (
                ("input_ids", "ids"),
                ("attention_mask", "attention_mask"),
                ("token_type_ids", "type_ids"),
            )
        }
        result: npt.NDArray[np.float32] = self._session.run(["embedding"], feed)[0]
        return result

    def spans(self, text: str) -> list[tuple[int, int]]:
        encoding = self._spans.encode(text, add_special_tokens=False)
        return [(int(a), int(b)) for a, b in encoding.offsets]
