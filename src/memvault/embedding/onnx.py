"""A sentence-transformers BERT model (transformer + mean pooling) through ONNX Runtime.

The graph is built once, on this machine, from the model's own weights by
:mod:`memvault.embedding.bert_graph` (no torch, no transformers: safetensors' numpy loader and
the ``onnx`` package's helpers) and cached as ``<cache_dir>/<model>-<fingerprint>.onnx``, the
fingerprint covering the weights, the configs the graph is made from and the builder's version.
Nothing is downloaded. The session and the model's own fast tokenizer (``tokenizer.json``) are
all there is at run time, which is why a query is embedded in about a third of torch's time with
the same vectors (``bench/encoder.py``).

The vectors stay fp32: dynamic int8 quantisation was measured at mean cosine 0.974 to fp32,
below the 0.99 that lets stored vectors and new queries meet as one model.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

_BATCH = 32  # texts per session run; sorted by length so a batch pads little
_CHUNK = 1 << 20


def check(model_dir: Path) -> None:
    """Raise :class:`~memvault.embedding.bert_graph.ExportUnsupported` unless the graph builder
    reproduces this model. The builder (and the ``onnx`` package) is imported only when used."""
    from memvault.embedding.bert_graph import check as check_model

    check_model(model_dir)


def max_seq_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    return (
        int(json.loads(config.read_text()).get("max_seq_length", 512)) if config.exists() else 512
    )


def cache_file(model_dir: Path, cache_dir: Path, name: str | None = None) -> Path:
    """Where this model's graph lives: named by a digest of the weights, the configs the graph
    is built from and the builder's version, so a changed model (or builder) never loads a
    stale graph."""
    stamps = tuple((part, *_stamp(model_dir / part)) for part in _GRAPH_SOURCES)
    return cache_dir / f"{name or model_dir.name}-{_fingerprint(model_dir, stamps)}.onnx"


_GRAPH_SOURCES = ("config.json", "1_Pooling/config.json", "model.safetensors")


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


@functools.lru_cache(maxsize=8)
def _fingerprint(model_dir: Path, stamps: tuple[tuple[str, int, int], ...]) -> str:
    """Read once per process for unchanged files (``stamps``): the weights are ~90 MB."""
    from memvault.embedding.bert_graph import BUILDER_VERSION

    digest = hashlib.sha256(f"bert-graph-v{BUILDER_VERSION}".encode())
    for part, *_ in stamps:
        digest.update(f"\x00{part}\x00".encode())
        with open(model_dir / part, "rb") as handle:
            for block in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def write_graph(model_dir: Path, target: Path) -> None:
    """Build the graph and write it to ``target`` atomically: a temporary file in the same
    directory, then a rename, so another process sees either no file or the whole file."""
    from memvault.embedding.bert_graph import build

    model = build(model_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial")
    try:
        partial.write_bytes(model.SerializeToString())
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


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
    """An inference session over the model's graph, and the tokenizer that feeds it."""

    backend = "onnx"

    def __init__(
        self, model_dir: Path, graph: Path | bytes, *, source: str, threads: int = 0
    ) -> None:
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
            graph if isinstance(graph, bytes) else str(graph),
            options,
            providers=["CPUExecutionProvider"],
        )
        self._tokenizer = _tokenizer(model_dir)
        self._spans = _tokenizer(model_dir)
        self._spans.no_truncation()
        self._spans.no_padding()
        self.onnx_file = graph if isinstance(graph, Path) else None
        self.source = source  # "built", "cached" or "built in memory" (no cache directory)
        self.dimensions = int(self._session.get_outputs()[0].shape[1] or 0) or None
        self.max_tokens = max_seq_length(model_dir)

    @classmethod
    def load(
        cls, model_dir: Path, cache_dir: Path | None, name: str | None = None, *, threads: int = 0
    ) -> OnnxEncoder:
        """Open the cached graph, building it first if this machine has none yet; with no cache
        directory, build it in memory (a second or two) for this process alone."""
        if cache_dir is None:
            from memvault.embedding.bert_graph import build

            graph = build(model_dir).SerializeToString()
            return cls(model_dir, graph, source="built in memory", threads=threads)
        target = cache_file(model_dir, cache_dir, name)
        source = "cached"
        if not target.exists():
            # Processes (`serve --workers N`) and threads starting together build it once.
            with _exclusive(target.with_name(f".{target.name}.lock")):
                if not target.exists():
                    write_graph(model_dir, target)
                    source = "built"
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
