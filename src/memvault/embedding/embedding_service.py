"""Embedding with a cache and a fallback chain: the configured provider (retried with
exponential backoff), then the local model if installed, then hash vectors.

A batch is embedded by one model: if the primary fails, the whole batch goes to the fallback,
and the result says which model made it so vectors of different models never meet.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from memvault.db.tenancy import current_owner
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


# Every cache key starts with its owner's tag: the tag of no one (the worker's batches, which
# serve many users), or its tenant's tag then its user's (HMACs), so a user's entries go when
# the user goes, and a tenant's when the tenant goes.
TENANT_TAG_BYTES = 4
OWNER_TAG_BYTES = 8
NO_OWNER = bytes(OWNER_TAG_BYTES)


def tenant_tag(secret: bytes, tenant_id: str) -> bytes:
    label = f"tenant\x00{tenant_id}".encode()
    return hmac.new(secret, label, hashlib.sha256).digest()[:TENANT_TAG_BYTES]


def owner_tag(secret: bytes, owner: tuple[str, str] | None) -> bytes:
    if owner is None:
        return NO_OWNER
    label = "\x00".join(("owner", *owner)).encode()
    user = hmac.new(secret, label, hashlib.sha256).digest()
    return tenant_tag(secret, owner[0]) + user[: OWNER_TAG_BYTES - TENANT_TAG_BYTES]


def cache_key(
    model_id: str, text: str, secret: bytes = b"", owner: tuple[str, str] | None = None
) -> bytes:
    """The cache's key for a text: keyed (HMAC) with a secret derived from the store's key, so
    a reader of the cache cannot confirm a guessed text; led by the owner's tag."""
    digest = hmac.new(secret, f"{model_id}\x00{text}".encode(), hashlib.sha256).digest()
    return owner_tag(secret, owner) + digest[: 32 - OWNER_TAG_BYTES]


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
        # The secrets cache keys are made with: the first makes new keys; all of them (keys
        # before a rotation) are what a deletion forgets. Set once the store's keys are open.
        self.cache_secrets: Callable[[], list[bytes]] = lambda: [b""]

    def cache_keys(
        self, model_id: str, texts: Sequence[str], owner: tuple[str, str] | None
    ) -> list[bytes]:
        """Every key these texts may be cached under for ``owner`` (every secret held)."""
        return [cache_key(model_id, t, s, owner) for s in self.cache_secrets() for t in texts]

    def owner_tags(self, owner: tuple[str, str]) -> list[bytes]:
        return [owner_tag(s, owner) for s in self.cache_secrets()]

    def tenant_tags(self, tenant_id: str) -> list[bytes]:
        """What every entry made for the tenant's users starts with (under each secret)."""
        return [tenant_tag(s, tenant_id) for s in self.cache_secrets()]

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
        secret, owner = self.cache_secrets()[0], current_owner()
        keys = [cache_key(embedder.model_id, t, secret, owner) for t in texts]
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
