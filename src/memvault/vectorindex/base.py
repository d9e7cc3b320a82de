"""What recall asks of a vector index, whichever holds the vectors.

pgvector (the default) answers from the chunks PostgreSQL writes with each memory; Qdrant (the
embedded Qdrant Edge engine or a Qdrant server) holds a copy of them as points fed from an
outbox. Recall calls ``pages``; the deletion, the feeder and the tests use the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar
from uuid import UUID

from memvault.errors import StoreUnavailable

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.db.records import RankedMemory
    from memvault.models import MemoryFilter

log = logging.getLogger(__name__)
T = TypeVar("T")
# Every call to an external index is tried again after these pauses before it counts as down.
RETRY_DELAYS_S = (0.05, 0.1, 0.2)


class IndexUnavailable(StoreUnavailable):
    """The external vector index did not answer (after its retries)."""


@dataclass(frozen=True, slots=True)
class IndexHit:
    """A memory the index found: its best chunk's cosine distance (0 = same direction)."""

    memory_id: UUID
    distance: float


class VectorIndex(Protocol):
    # Fed from the outbox (an external index) or written with the chunks themselves (pgvector).
    fed: bool

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
        """One owner's memories nearest ``query``, a page per filter set (as
        ``db.vectors.nearest``): what recall reads."""
        ...

    async def search(
        self,
        tenant_id: str,
        filters: MemoryFilter,
        model: str,
        query: Sequence[float],
        limit: int,
    ) -> list[IndexHit]:
        """The owner's memories nearest ``query`` that the index's filters keep, best first."""
        ...

    async def upsert(self, tenant_id: str, memory_ids: Sequence[UUID]) -> int:
        """Make these memories' points match their rows and chunks (points written)."""
        ...

    async def delete(self, tenant_id: str, user_id: str, memory_ids: Sequence[UUID]) -> int:
        """Remove these memories' points (how many there were)."""
        ...

    async def count(self, tenant_id: str, user_id: str) -> int:
        """Points (chunk vectors) the owner has, of every model."""
        ...

    async def drop(self, tenant_id: str, user_id: str | None) -> int:
        """Remove a user's collections (every user's of the tenant, without one): the points
        they held."""
        ...

    async def close(self) -> None: ...


async def retrying(call: Callable[[], Awaitable[T]], what: str) -> T:
    """``call``, tried again after each of ``RETRY_DELAYS_S``; then ``IndexUnavailable``."""
    for delay in (*RETRY_DELAYS_S, None):
        try:
            return await call()
        except IndexUnavailable:
            raise
        # The engines raise their own kinds (a transport error, the native library's error);
        # all mean the same here: not done, try again, then report the index down.
        except Exception as exc:
            if delay is None:
                log.warning("vector index: %s failed (%s)", what, type(exc).__name__)
                raise IndexUnavailable(
                    "The vector index did not answer; try again shortly."
                ) from exc
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")
