"""Embedding with a cache and a fallback chain: the configured provider (retried with
exponential backoff), then the local model if installed, then hash vectors.

A batch is embedded by one model: if the primary fails, the whole batch goes to the fallback,
and the result says which model made it so vectors of different models never meet.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from memvault.embedding.base import Embedder, ProviderRejected, ProviderUnavailable
from memvault.embedding.cache import EmbeddingCache
from memvault.metrics import EMBEDDING_CACHE, EMBEDDING_ERRORS, EMBEDDING_FALLBACKS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Embedded:
    vectors: list[list[float]]
    model_id: str
    dimensions: int
    fallback: bool


def cache_key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_id}\x00{text}".encode()).digest()


class EmbeddingService:
    def __init__(
        self,
        primary: Embedder,
        fallbacks: Sequence[Embedder] = (),
        cache: EmbeddingCache | None = None,
        *,
        attempts: int = 5,
        retry_base_s: float = 0.5,
    ) -> None:
        self.primary = primary
        self.fallbacks = list(fallbacks)
        self.cache = cache
        self.attempts = attempts
        self.retry_base_s = retry_base_s

    @property
    def active_model(self) -> str:
        return self.primary.model_id

    async def embed_batch(self, texts: Sequence[str]) -> Embedded:
        try:
            vectors = await self._cached(self.primary, texts, retry=True)
            return Embedded(vectors, self.primary.model_id, len(vectors[0]), fallback=False)
        except (ProviderUnavailable, ProviderRejected) as exc:
            EMBEDDING_ERRORS.labels(self.primary.provider).inc()
            if not self.fallbacks:
                raise
            log.warning(
                "embedding provider %s failed (%s); falling back", self.primary.model_id, exc.code
            )
        for fallback in self.fallbacks:
            try:
                vectors = await self._cached(fallback, texts, retry=False)
            except (ProviderUnavailable, ProviderRejected):
                EMBEDDING_ERRORS.labels(fallback.provider).inc()
                continue
            EMBEDDING_FALLBACKS.labels(fallback.model_id).inc()
            return Embedded(vectors, fallback.model_id, len(vectors[0]), fallback=True)
        raise ProviderUnavailable("No embedding provider could embed the batch.")

    async def warm(self) -> None:
        """Load the primary model now, so the first request after a start does not wait."""
        await self.primary.warm()

    async def primary_healthy(self) -> bool:
        try:
            await self.primary.embed_batch(["health check"])
        except (ProviderUnavailable, ProviderRejected):
            return False
        return True

    async def _cached(
        self, embedder: Embedder, texts: Sequence[str], *, retry: bool
    ) -> list[list[float]]:
        keys = [cache_key(embedder.model_id, t) for t in texts]
        found: list[list[float] | None] = (
            await self.cache.get_many(keys) if self.cache else [None] * len(texts)
        )
        missing = [i for i, v in enumerate(found) if v is None]
        EMBEDDING_CACHE.labels("hit").inc(len(texts) - len(missing))
        EMBEDDING_CACHE.labels("miss").inc(len(missing))
        if missing:
            fresh = await self._call(embedder, [texts[i] for i in missing], retry=retry)
            for i, vector in zip(missing, fresh, strict=True):
                found[i] = vector
            if self.cache:
                await self.cache.set_many({keys[i]: v for i, v in zip(missing, fresh, strict=True)})
        return [v for v in found if v is not None]

    async def _call(
        self, embedder: Embedder, texts: list[str], *, retry: bool
    ) -> list[list[float]]:
        if not retry:
            return await embedder.embed_batch(texts)
        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.retry_base_s, max=30),
            retry=retry_if_exception_type(ProviderUnavailable),
            reraise=True,
        ):
            with attempt:
                return await embedder.embed_batch(texts)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def aclose(self) -> None:
        for embedder in (self.primary, *self.fallbacks):
            await embedder.aclose()
        if self.cache:
            await self.cache.aclose()
