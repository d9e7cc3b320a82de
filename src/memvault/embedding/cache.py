"""The embedding cache: Redis when configured, else an UNLOGGED PostgreSQL table.

A failing cache degrades to a miss (counted in ``memvault_cache_errors_total``); it never fails
a write. Keys are HMACs under a secret derived from the store's key, led by a tag of the user
whose call embedded the text (``embedding.service.cache_key``): neither store holds any text, a
reader of either cannot confirm a guessed one, and an erased user's entries are found by tag.
"""

from __future__ import annotations

import array
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from memvault.db import cache
from memvault.db.driver_errors import SIDE_WORK_FAILED
from memvault.db.units import reading, transaction
from memvault.metrics import CACHE_ERRORS

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)


def pack(vector: list[float]) -> bytes:
    return array.array("f", vector).tobytes()


def unpack(raw: bytes) -> list[float]:
    return array.array("f", raw).tolist()


class EmbeddingCache(Protocol):
    async def get_many(self, keys: Sequence[bytes]) -> list[list[float] | None]: ...

    async def set_many(self, items: dict[bytes, list[float]]) -> None: ...

    async def forget_many(self, keys: Sequence[bytes]) -> int: ...

    async def forget_owned(self, tag: bytes) -> int: ...

    async def aclose(self) -> None: ...


class PostgresCache:
    def __init__(self, engine: AsyncEngine, ttl_s: int) -> None:
        self._engine = engine
        self._ttl = timedelta(seconds=ttl_s)

    async def get_many(self, keys: Sequence[bytes]) -> list[list[float] | None]:
        try:
            async with reading(self._engine) as conn:
                found = {k: unpack(v) for k, v in (await cache.get_vectors(conn, keys)).items()}
        except SIDE_WORK_FAILED as exc:
            CACHE_ERRORS.labels("postgres").inc()
            log.warning("embedding cache read failed: %s", type(exc).__name__)
            return [None] * len(keys)
        return [found.get(k) for k in keys]

    async def set_many(self, items: dict[bytes, list[float]]) -> None:
        if not items:
            return
        expires = datetime.now(UTC) + self._ttl
        try:
            # A cache fill is no keyed request's write: a lost one is refilled, not repeated.
            async with transaction(self._engine, side_work=True) as conn:
                await cache.put_vectors(conn, {k: pack(v) for k, v in items.items()}, expires)
        except SIDE_WORK_FAILED as exc:
            CACHE_ERRORS.labels("postgres").inc()
            log.warning("embedding cache write failed: %s", type(exc).__name__)

    async def forget_many(self, keys: Sequence[bytes]) -> int:
        """Drop entries (a deleted memory's); unlike a read, a failure here is raised."""
        # A deletion drops these before its own transaction, which may still fail: what it
        # dropped is no keyed request's write (its retry must run, and drops them again).
        async with transaction(self._engine, side_work=True) as conn:
            return await cache.delete_vectors(conn, keys)

    async def forget_owned(self, tag: bytes) -> int:
        """Drop every entry made for one owner (an erased user's); a failure is raised."""
        async with transaction(self._engine, side_work=True) as conn:
            return await cache.delete_owned(conn, tag)

    async def purge_expired(self) -> None:
        async with transaction(self._engine) as conn:
            await cache.purge_expired(conn)

    async def aclose(self) -> None:
        return None


class RedisCache:
    """Vectors as packed float32 under ``memvault:emb:<hex key>`` with a TTL."""

    def __init__(self, url: str, ttl_s: int) -> None:
        import redis.asyncio as redis

        self._redis: Any = redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._ttl = max(ttl_s, 1)

    @staticmethod
    def _name(key: bytes) -> str:
        return f"memvault:emb:{key.hex()}"

    async def get_many(self, keys: Sequence[bytes]) -> list[list[float] | None]:
        try:
            values = await self._redis.mget([self._name(k) for k in keys])
        except Exception as exc:  # redis raises many unrelated types; any of them is a miss
            CACHE_ERRORS.labels("redis").inc()
            log.warning("embedding cache read failed: %s", type(exc).__name__)
            return [None] * len(keys)
        return [unpack(v) if v else None for v in values]

    async def set_many(self, items: dict[bytes, list[float]]) -> None:
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for key, vector in items.items():
                    pipe.set(self._name(key), pack(vector), ex=self._ttl)
                await pipe.execute()
        except Exception as exc:
            CACHE_ERRORS.labels("redis").inc()
            log.warning("embedding cache write failed: %s", type(exc).__name__)

    async def forget_many(self, keys: Sequence[bytes]) -> int:
        """Drop entries (a deleted memory's); unlike a read, a failure here is raised."""
        if not keys:
            return 0
        return int(await self._redis.delete(*(self._name(k) for k in keys)))

    async def forget_owned(self, tag: bytes) -> int:
        """Drop every entry made for one owner (an erased user's); a failure is raised."""
        names = [n async for n in self._redis.scan_iter(match=f"memvault:emb:{tag.hex()}*")]
        return int(await self._redis.delete(*names)) if names else 0

    async def aclose(self) -> None:
        await self._redis.aclose()
