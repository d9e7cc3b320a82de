"""The two ways to reach Qdrant, behind one small interface: the embedded Qdrant Edge engine
(a native library running Qdrant's own storage and HNSW in this process, a shard per
collection under the data directory) and a Qdrant server through ``qdrant-client`` (whose
in-process local mode runs the same code path without a server).

Both libraries are optional (``pip install memvault[qdrant]``) and imported only here, when
such an index is opened.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memvault.errors import ConfigurationError
from memvault.vectorindex.payload import AnyOf, Condition, Match, Range

# A scroll reads this many points per call.
_PAGE = 1_000


@dataclass(frozen=True, slots=True)
class Point:
    id: str
    vector: list[float]
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Found:
    id: str
    score: float
    memory_id: str


class PointStore(Protocol):
    async def collections(self) -> list[str]: ...
    async def ensure(self, name: str, dims: int) -> None: ...
    async def upsert(self, name: str, points: Sequence[Point]) -> None: ...
    async def delete(self, name: str, ids: Sequence[str]) -> None: ...
    async def query(
        self, name: str, vector: Sequence[float], where: Sequence[Condition], limit: int, ef: int
    ) -> list[Found]: ...
    async def scroll(
        self, name: str, where: Sequence[Condition] = ()
    ) -> list[tuple[str, dict[str, Any]]]: ...
    async def count(self, name: str) -> int: ...
    async def drop(self, name: str) -> None: ...
    async def maintain(self) -> None: ...
    async def close(self) -> None: ...


@dataclass
class EdgeStore:
    """Qdrant Edge: one shard directory per collection under ``root``, opened on first use
    and kept open. Its calls block, so they run in a thread. One process owns ``root`` at a
    time (an advisory lock held while the store is open): Edge keeps no lock of its own, and
    two processes writing one shard would corrupt it."""

    root: Path
    _shards: dict[str, Any] = field(default_factory=dict)
    _dirty: set[str] = field(default_factory=set)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _owner: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        import qdrant_edge

        self._q = qdrant_edge
        self.root.mkdir(parents=True, exist_ok=True)
        self._owner = _own(self.root)

    async def collections(self) -> list[str]:
        on_disk = {p.name for p in self.root.iterdir() if p.is_dir()}
        return sorted(on_disk | set(self._shards))

    async def _shard(self, name: str, dims: int | None = None) -> Any | None:
        shard: Any = self._shards.get(name)
        if shard is not None:
            return shard
        async with self._lock:
            if name in self._shards:
                return self._shards[name]
            path = self.root / name
            q = self._q
            if (path / "edge_config.json").exists():
                shard = await asyncio.to_thread(q.EdgeShard.load, str(path))
            elif dims is None:
                return None
            else:
                config = q.EdgeConfig(
                    vectors=q.EdgeVectorParams(size=dims, distance=q.Distance.Cosine),
                    max_search_threads=1,
                )
                shard = await asyncio.to_thread(q.EdgeShard.create, str(path), config)
                index = q.UpdateOperation.create_field_index(
                    "memory_id", q.PayloadSchemaType.Keyword
                )
                await asyncio.to_thread(shard.update, index)
            self._shards[name] = shard
            return shard

    async def ensure(self, name: str, dims: int) -> None:
        await self._shard(name, dims)

    async def upsert(self, name: str, points: Sequence[Point]) -> None:
        q = self._q
        shard = self._shards[name]
        op = q.UpdateOperation.upsert_points([q.Point(p.id, p.vector, p.payload) for p in points])
        await asyncio.to_thread(shard.update, op)
        self._dirty.add(name)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        shard = await self._shard(name)
        if shard is not None and ids:
            await asyncio.to_thread(shard.update, self._q.UpdateOperation.delete_points(list(ids)))
            self._dirty.add(name)

    def _filter(self, where: Sequence[Condition]) -> Any:
        q = self._q
        must: list[Any] = []
        for c in where:
            if isinstance(c, Match):
                must.append(q.FieldCondition(c.key, match=q.MatchValue(c.value)))
            elif isinstance(c, AnyOf):
                must.append(q.FieldCondition(c.key, match=q.MatchAny(list(c.values))))
            elif isinstance(c, Range):
                must.append(q.FieldCondition(c.key, range=q.RangeFloat(gte=c.gte, lt=c.lt)))
        return q.Filter(must=must) if must else None

    async def query(
        self, name: str, vector: Sequence[float], where: Sequence[Condition], limit: int, ef: int
    ) -> list[Found]:
        shard = await self._shard(name)
        if shard is None:
            return []
        q = self._q
        request = q.QueryRequest(
            limit=limit,
            query=q.Query.Nearest(list(vector)),
            filter=self._filter(where),
            with_payload=["memory_id"],
            params=q.SearchParams(hnsw_ef=ef),
        )
        found = await asyncio.to_thread(shard.query, request)
        return [Found(str(p.id), float(p.score), p.payload["memory_id"]) for p in found]

    async def scroll(
        self, name: str, where: Sequence[Condition] = ()
    ) -> list[tuple[str, dict[str, Any]]]:
        shard = await self._shard(name)
        if shard is None:
            return []
        q = self._q
        out: list[tuple[str, dict[str, Any]]] = []
        offset: Any = None
        while True:
            request = q.ScrollRequest(
                offset=offset, limit=_PAGE, filter=self._filter(where), with_payload=True
            )
            records, offset = await asyncio.to_thread(shard.scroll, request)
            out += [(str(r.id), dict(r.payload or {})) for r in records]
            if offset is None:
                return out

    async def count(self, name: str) -> int:
        shard = await self._shard(name)
        if shard is None:
            return 0
        return int(await asyncio.to_thread(shard.count, self._q.CountRequest(exact=True)))

    async def drop(self, name: str) -> None:
        async with self._lock:
            shard = self._shards.pop(name, None)
            self._dirty.discard(name)
            if shard is not None:
                await asyncio.to_thread(shard.close)
            await asyncio.to_thread(shutil.rmtree, self.root / name, True)

    async def maintain(self) -> None:
        """Build the HNSW graphs of what was written since (Edge has no background
        optimizer: until a segment is optimised, its points are searched exactly)."""
        dirty, self._dirty = self._dirty, set()
        for name in sorted(dirty):
            shard = self._shards.get(name)
            if shard is not None:
                await asyncio.to_thread(shard.optimize)

    async def close(self) -> None:
        async with self._lock:
            for shard in self._shards.values():
                await asyncio.to_thread(shard.close)
            self._shards.clear()
            if self._owner is not None:
                os.close(self._owner)  # the lock goes with the descriptor
                self._owner = None


def _own(root: Path) -> int:
    """Hold ``root``'s owner lock, or refuse to open it."""
    descriptor = os.open(root / ".owner.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise ConfigurationError(
            f"The Qdrant Edge index in {root} is open in another process (or another store "
            "of this one): one process owns an embedded index. Run one `memvault serve` with "
            "its worker in-process, reach that server with `--server URL`, or use a Qdrant "
            "server (MEMVAULT_QDRANT_URL) for several processes."
        ) from None
    return descriptor


class ClientStore:
    """A Qdrant server through ``qdrant-client`` (``url`` ``:memory:``: its local mode)."""

    def __init__(self, url: str, api_key: str | None = None) -> None:
        from qdrant_client import AsyncQdrantClient, models

        self._m = models
        self._local = url == ":memory:"
        if self._local:
            self._client = AsyncQdrantClient(location=":memory:")
        else:
            # No version probe at start: a server still starting must not fail the store.
            self._client = AsyncQdrantClient(
                url=url, api_key=api_key, timeout=5, check_compatibility=False
            )
        self._known: set[str] | None = None

    async def collections(self) -> list[str]:
        listed = await self._client.get_collections()
        self._known = {c.name for c in listed.collections}
        return sorted(self._known)

    async def _exists(self, name: str) -> bool:
        """Collections seen are remembered; an unseen one is asked for again (another
        process may have made it since)."""
        if self._known is None:
            await self.collections()
        assert self._known is not None
        if name not in self._known and await self._client.collection_exists(name):
            self._known.add(name)
        return name in self._known

    async def ensure(self, name: str, dims: int) -> None:
        if await self._exists(name):
            return
        m = self._m
        params = m.VectorParams(size=dims, distance=m.Distance.COSINE)
        await self._client.create_collection(name, vectors_config=params)
        if not self._local:  # local mode has no payload indexes (and says so)
            await self._client.create_payload_index(
                name, "memory_id", field_schema=m.PayloadSchemaType.KEYWORD
            )
        assert self._known is not None
        self._known.add(name)

    async def upsert(self, name: str, points: Sequence[Point]) -> None:
        structs = [self._m.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in points]
        await self._client.upsert(name, points=structs, wait=True)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        if ids and await self._exists(name):
            selector = self._m.PointIdsList(points=list(ids))
            await self._client.delete(name, points_selector=selector, wait=True)

    def _filter(self, where: Sequence[Condition]) -> Any:
        m = self._m
        must: list[Any] = []
        for c in where:
            if isinstance(c, Match):
                must.append(m.FieldCondition(key=c.key, match=m.MatchValue(value=c.value)))
            elif isinstance(c, AnyOf):
                must.append(m.FieldCondition(key=c.key, match=m.MatchAny(any=list(c.values))))
            elif isinstance(c, Range):
                must.append(m.FieldCondition(key=c.key, range=m.Range(gte=c.gte, lt=c.lt)))
        return m.Filter(must=must) if must else None

    async def query(
        self, name: str, vector: Sequence[float], where: Sequence[Condition], limit: int, ef: int
    ) -> list[Found]:
        if not await self._exists(name):
            return []
        # Local mode searches exactly and warns about search parameters it ignores.
        params = None if self._local else self._m.SearchParams(hnsw_ef=ef)
        found = await self._client.query_points(
            name,
            query=list(vector),
            query_filter=self._filter(where),
            limit=limit,
            with_payload=["memory_id"],
            search_params=params,
        )
        return [
            Found(str(p.id), float(p.score), str((p.payload or {})["memory_id"]))
            for p in found.points
        ]

    async def scroll(
        self, name: str, where: Sequence[Condition] = ()
    ) -> list[tuple[str, dict[str, Any]]]:
        if not await self._exists(name):
            return []
        out: list[tuple[str, dict[str, Any]]] = []
        offset: Any = None
        while True:
            records, offset = await self._client.scroll(
                name,
                scroll_filter=self._filter(where),
                limit=_PAGE,
                offset=offset,
                with_payload=True,
            )
            out += [(str(r.id), dict(r.payload or {})) for r in records]
            if offset is None:
                return out

    async def count(self, name: str) -> int:
        if not await self._exists(name):
            return 0
        return int((await self._client.count(name, exact=True)).count)

    async def drop(self, name: str) -> None:
        if await self._exists(name):
            await self._client.delete_collection(name)
        if self._known is not None:
            self._known.discard(name)

    async def maintain(self) -> None:
        return None  # a server optimises in the background

    async def close(self) -> None:
        await self._client.close()
