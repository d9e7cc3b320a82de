"""The embedding provider interface: one abstract method, ``embed_batch``."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol

from memvault.errors import MemvaultError


class ProviderUnavailable(MemvaultError):
    """The provider could not answer now (timeout, 5xx, 429, connection refused): retryable."""

    status_code = 503
    code = "embedding_unavailable"


class ProviderRejected(MemvaultError):
    """The provider refused the request itself (bad key, unknown model): retrying won't help."""

    status_code = 502
    code = "embedding_rejected"


class Tokenizer(Protocol):
    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of each token, in order."""
        ...


class WhitespaceTokenizer:
    """For providers whose tokenizer is not available locally: words approximate tokens."""

    _word = re.compile(r"\S+")

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._word.finditer(text)]


class Embedder(ABC):
    """A model that turns texts into vectors. ``model_id`` names provider and model."""

    provider: str
    model_id: str
    dimensions: int | None
    max_tokens: int = 512

    @abstractmethod
    async def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""

    async def embed(self, text: str) -> list[float]:
        return (await self.embed_batch([text]))[0]

    async def warm(self) -> None:
        """Load whatever the first embed would otherwise wait for (a local model)."""
        return None

    def tokenizer(self) -> Tokenizer:
        return WhitespaceTokenizer()

    async def aclose(self) -> None:
        return None
