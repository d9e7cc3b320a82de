"""The default index: the chunk vectors PostgreSQL writes with each memory, searched through
``db.vectors`` (exactly in small scopes, by HNSW in large ones). Nothing to feed: a memory's
vectors are indexed in the transaction that stores them, and go with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from memvault.db import vector_outbox, vectors
from memvault.db.units import reading
from memvault.vectorindex.base import IndexHit

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

    from memvault.config import Settings
    from memvault.db.records import RankedMemory
    from memvault.models import MemoryFilter


class PgVectorIndex:
    fed = False

    def __init__(
        self,
        engine: AsyncEngine,
        settings: Settings,
        sizes: vectors.ScopeSizes,
        *,
        iterative_scans: bool = False,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._sizes = sizes
        self._iterative_scans = iterative_scans

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
        return await vectors.nearest(
            conn,
            tenant_id,
            pages,
            query,
            model,
            dims,
            limit,
            exact_max_chunks=self._settings.search_exact_max_chunks,
            ef_search=self._settings.hnsw_ef_search,
            sizes=self._sizes,
            iterative_scans=self._iterative_scans,
        )

    async def search(
        self,
        tenant_id: str,
        filters: MemoryFilter,
        model: str,
        query: Sequence[float],
        limit: int,
    ) -> list[IndexHit]:
        async with reading(self._engine, tenant_id) as conn:
            (found,) = await self.pages(conn, tenant_id, [filters], query, model, len(query), limit)
        return [IndexHit(row.id, row.rank) for row in found]

    async def upsert(self, tenant_id: str, memory_ids: Sequence[UUID]) -> int:
        return 0  # written with the memory, in its transaction

    async def delete(self, tenant_id: str, user_id: str, memory_ids: Sequence[UUID]) -> int:
        return 0  # the chunks go with their memory, in the deleting transaction

    async def count(self, tenant_id: str, user_id: str) -> int:
        async with reading(self._engine, tenant_id) as conn:
            return await vector_outbox.owner_chunks(conn, tenant_id, user_id)

    async def drop(self, tenant_id: str, user_id: str | None) -> int:
        return 0

    async def close(self) -> None:
        return None
