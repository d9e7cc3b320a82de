"""Qdrant as the vector index: points fed from PostgreSQL's chunks, searched with the
filters its payload holds, the candidates then looked up (and filtered again) in PostgreSQL.

PostgreSQL stays the source of truth. Every call to Qdrant is retried (``base.retrying``);
while Qdrant stays away, recall answers from PostgreSQL's own vectors (the same memories,
exactly ranked) and the outbox keeps what is to be synced.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.db import vector_outbox, vectors
from memvault.db.store import lookup_fetch
from memvault.db.units import reading
from memvault.db.vector_outbox import IndexedChunk
from memvault.vectorindex.base import IndexHit, IndexUnavailable, retrying
from memvault.vectorindex.engines import Point, PointStore
from memvault.vectorindex.payload import (
    PREFIX,
    AnyOf,
    collection,
    conditions,
    owner_prefix,
    payload,
    point_id,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

    from memvault.config import Settings
    from memvault.db.records import RankedMemory
    from memvault.models import MemoryFilter

log = logging.getLogger(__name__)
Owned = tuple[str, str, UUID]  # tenant, user, memory


class QdrantIndex:
    fed = True

    def __init__(self, store: PointStore, engine: AsyncEngine, settings: Settings) -> None:
        self.store = store
        self._engine = engine
        self._settings = settings

    # --- recall -------------------------------------------------------------------------------

    async def pages(
        self,
        conn: AsyncConnection,
        tenant_id: str,
        pages: Sequence[MemoryFilter],
        query: Sequence[float],
        model: str,
        dims: int,
        limit: int,
    ) -> list[list[RankedMemory]]:
        found = []
        for filters in pages:
            try:
                found.append(await self._page(conn, tenant_id, filters, query, model, limit))
            except IndexUnavailable:
                # PostgreSQL holds every vector: recall answers from it meanwhile.
                (rows,) = await vectors.nearest(
                    conn,
                    tenant_id,
                    [filters],
                    query,
                    model,
                    dims,
                    limit,
                    exact_max_chunks=self._settings.search_exact_max_chunks,
                    ef_search=self._settings.hnsw_ef_search,
                )
                found.append(rows)
        return found

    async def _page(
        self,
        conn: AsyncConnection,
        tenant_id: str,
        filters: MemoryFilter,
        query: Sequence[float],
        model: str,
        limit: int,
    ) -> list[RankedMemory]:
        """The nearest candidates the payload's filters keep, then those PostgreSQL keeps; a
        page they cannot fill (a filter the payload lacks) asks the index for more."""
        fetch = lookup_fetch(limit)
        while True:
            hits = await self.search(tenant_id, filters, model, query, fetch)
            candidates = [(h.memory_id, h.distance) for h in hits]
            rows = await vector_outbox.candidates_page(conn, tenant_id, filters, candidates, limit)
            if len(rows) >= limit or len(hits) < fetch:
                return rows
            fetch *= 4

    async def search(
        self,
        tenant_id: str,
        filters: MemoryFilter,
        model: str,
        query: Sequence[float],
        limit: int,
    ) -> list[IndexHit]:
        name = collection(tenant_id, filters.user_id, model)
        where = conditions(filters)
        ef = self._settings.hnsw_ef_search
        # A memory of several chunks has several points: ask for more than the memories wanted.
        found = await retrying(
            functools.partial(self.store.query, name, query, where, limit * 2, ef), "search"
        )
        best: dict[UUID, float] = {}
        for point in found:
            memory_id, distance = UUID(point.memory_id), 1.0 - point.score
            best[memory_id] = min(distance, best.get(memory_id, distance))
        ranked = sorted(best.items(), key=lambda item: (item[1], item[0]))[:limit]
        return [IndexHit(memory_id, distance) for memory_id, distance in ranked]

    # --- keeping the points true --------------------------------------------------------------

    async def upsert(self, tenant_id: str, memory_ids: Sequence[UUID]) -> int:
        async with reading(self._engine, tenant_id) as conn:
            chunks = await vector_outbox.chunks_of(conn, [(tenant_id, m) for m in memory_ids])
        return await self._sync({(c.tenant_id, c.user_id, c.memory_id) for c in chunks}, chunks)

    async def sync(self, owned: Sequence[Owned]) -> int:
        """Make these memories' points what their rows and chunks say: points written for
        every chunk (new ones first), then the memory's other points removed (an old
        version's, or all of a memory deleted or left without vectors)."""
        async with reading(self._engine, every_tenant=True) as conn:
            chunks = await vector_outbox.chunks_of(conn, [(t, m) for t, _, m in owned])
        return await self._sync(set(owned), chunks)

    async def _sync(self, owned: set[Owned], chunks: Sequence[IndexedChunk]) -> int:
        points: dict[str, list[Point]] = defaultdict(list)
        dims: dict[str, int] = {}
        wanted: set[str] = set()
        for chunk in chunks:
            assert chunk.embedding is not None
            name = collection(chunk.tenant_id, chunk.user_id, chunk.model)
            pid = point_id(chunk)
            points[name].append(Point(pid, chunk.embedding, payload(chunk)))
            dims[name] = len(chunk.embedding)
            wanted.add(pid)
            owned.add((chunk.tenant_id, chunk.user_id, chunk.memory_id))
        for name, batch in points.items():
            await retrying(
                functools.partial(self.store.ensure, name, dims[name]), "create a collection"
            )
            await retrying(functools.partial(self.store.upsert, name, batch), "upsert")
        by_owner: dict[tuple[str, str], set[UUID]] = defaultdict(set)
        for tenant_id, user_id, memory_id in owned:
            by_owner[(tenant_id, user_id)].add(memory_id)
        for (tenant_id, user_id), memory_ids in by_owner.items():
            await self._remove(tenant_id, user_id, memory_ids, keep=wanted)
        return sum(len(batch) for batch in points.values())

    async def _remove(
        self, tenant_id: str, user_id: str, memory_ids: set[UUID], *, keep: set[str]
    ) -> int:
        """Remove the memories' points but those in ``keep``, from each of the owner's
        collections; how many went."""
        where = [AnyOf("memory_id", tuple(sorted(str(m) for m in memory_ids)))]
        removed = 0
        for name in await self._collections(owner_prefix(tenant_id, user_id)):
            held = await retrying(functools.partial(self.store.scroll, name, where), "scroll")
            gone = [pid for pid, _ in held if pid not in keep]
            if gone:
                await retrying(functools.partial(self.store.delete, name, gone), "delete")
                removed += len(gone)
        return removed

    async def _collections(self, prefix: str) -> list[str]:
        names = await retrying(self.store.collections, "list collections")
        return [n for n in names if n.startswith(prefix)]

    async def delete(self, tenant_id: str, user_id: str, memory_ids: Sequence[UUID]) -> int:
        if not memory_ids:
            return 0
        return await self._remove(tenant_id, user_id, set(memory_ids), keep=set())

    async def count(self, tenant_id: str, user_id: str) -> int:
        total = 0
        for name in await self._collections(owner_prefix(tenant_id, user_id)):
            total += await retrying(functools.partial(self.store.count, name), "count")
        return total

    async def drop(self, tenant_id: str, user_id: str | None) -> int:
        total = 0
        for name in await self._collections(owner_prefix(tenant_id, user_id)):
            total += await retrying(functools.partial(self.store.count, name), "count")
            await retrying(functools.partial(self.store.drop, name), "drop a collection")
        return total

    # --- repairing drift ----------------------------------------------------------------------

    async def reconcile(self) -> Counter[str]:
        """Compare every collection with PostgreSQL and repair what differs: points missing,
        payloads stale, points no memory has (any more), collections no owner has. The
        counts say what was repaired."""
        async with reading(self._engine, every_tenant=True) as conn:
            owners = await vector_outbox.owners(conn)
        expected = {collection(t, u, m): (t, u, m) for t, u, m in owners}
        repairs: Counter[str] = Counter()
        for name in await self._collections(f"{PREFIX}-"):
            if name not in expected:
                repairs["orphaned"] += await retrying(
                    functools.partial(self.store.count, name), "count"
                )
                await retrying(functools.partial(self.store.drop, name), "drop a collection")
        for name, owner in sorted(expected.items()):
            repairs += await self._reconcile_owner(name, *owner)
        return repairs

    async def _reconcile_owner(
        self, name: str, tenant_id: str, user_id: str, model: str
    ) -> Counter[str]:
        async with reading(self._engine, every_tenant=True) as conn:
            chunks = await vector_outbox.chunks_of_owner(conn, tenant_id, user_id)
        want: dict[str, tuple[UUID, dict[str, Any]]] = {
            point_id(c): (c.memory_id, payload(c)) for c in chunks if c.model == model
        }
        have = dict(await retrying(functools.partial(self.store.scroll, name), "scroll"))
        missing = want.keys() - have.keys()
        stale = {pid for pid in want.keys() & have.keys() if have[pid] != want[pid][1]}
        orphaned = sorted(have.keys() - want.keys())
        if orphaned:
            await retrying(functools.partial(self.store.delete, name, orphaned), "delete")
        redo = {want[pid][0] for pid in missing | stale}
        if redo:
            await self.sync([(tenant_id, user_id, m) for m in sorted(redo)])
        return Counter(missing=len(missing), stale=len(stale), orphaned=len(orphaned))

    async def maintain(self) -> None:
        await retrying(self.store.maintain, "optimize")

    async def close(self) -> None:
        await self.store.close()
