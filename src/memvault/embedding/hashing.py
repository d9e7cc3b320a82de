"""Hashed bag-of-words vectors: deterministic, instant, always available. The last resort."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from memvault.embedding.base import Embedder
from memvault.text import WORD


class HashEmbedder(Embedder):
    provider = "hash"

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.model_id = f"hash/{dimensions}"

    def _vector(self, text: str) -> list[float]:
        dims = self.dimensions or 384
        vector = [0.0] * dims
        for word in WORD.findall(text.casefold()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % dims
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0:
            vector[0], norm = 1.0, 1.0
        return [v / norm for v in vector]

    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]
