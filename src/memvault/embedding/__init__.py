"""Embedding providers (local, OpenAI-compatible, hash), the cache and chunking."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memvault.config import Settings
from memvault.embedding.base import Embedder, ProviderRejected, ProviderUnavailable
from memvault.embedding.cache import EmbeddingCache, PostgresCache, RedisCache
from memvault.embedding.embedding_service import Embedded, EmbeddingService
from memvault.embedding.hashing import HashEmbedder
from memvault.embedding.local import BUNDLED, LocalEmbedder, local_model_available
from memvault.embedding.onnx import intra_op_threads
from memvault.embedding.openai import OpenAIEmbedder

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedding_provider == "hash":
        return HashEmbedder(settings.embedding_dimensions or 384)
    if settings.embedding_provider == "openai":
        key = settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None
        return OpenAIEmbedder(
            base_url=settings.embedding_base_url,
            model=settings.embedding_model,
            api_key=key,
            dimensions=settings.embedding_dimensions,
            timeout_s=settings.embedding_timeout_s,
        )
    return _local(settings, settings.embedding_model)


def _local(settings: Settings, name: str = BUNDLED) -> LocalEmbedder:
    return LocalEmbedder(
        name,
        backend=settings.embedding_backend,
        cache_dir=settings.data_dir / "models",
        # Processes of one server encode at once: each gets its share of the cores.
        threads=settings.embedding_threads or intra_op_threads(settings.workers),
    )


def build_embedding_service(settings: Settings, engine: AsyncEngine) -> EmbeddingService:
    primary = build_embedder(settings)
    fallbacks: list[Embedder] = []
    if settings.embedding_fallback:
        if primary.provider != "local" and local_model_available():
            fallbacks.append(_local(settings))
        if primary.provider != "hash":
            fallbacks.append(HashEmbedder())
    cache: EmbeddingCache | None = None
    if settings.embedding_cache_ttl_s > 0:
        cache = (
            RedisCache(settings.redis_url.get_secret_value(), settings.embedding_cache_ttl_s)
            if settings.redis_url
            else PostgresCache(engine, settings.embedding_cache_ttl_s)
        )
    return EmbeddingService(
        primary,
        fallbacks,
        cache,
        attempts=settings.embedding_attempts,
        retry_base_s=settings.embedding_retry_base_s,
    )


__all__ = [
    "Embedded",
    "Embedder",
    "EmbeddingService",
    "HashEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "ProviderRejected",
    "ProviderUnavailable",
    "build_embedder",
    "build_embedding_service",
]
