"""Reinforcement from what callers say they used, and the access counts the lifecycle keeps.

``reinforcement`` turns a memory's ``reinforced_count`` (``memories.feedback``) into its ranking
boost. :class:`AccessTracker` only counts what recalls returned, which ranks nothing.

A search only *records* which memories (and graph facts and entities) it returned; a
background task writes the counts (``access_count``, ``last_accessed``)
in one statement per table and flush interval, so recall never waits on a write and a burst
of searches costs one UPDATE. Counts are best-effort: a flush that
fails is retried once with the next batch, then dropped — an access count is not a memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from uuid import UUID

from memvault.db import graph_walk, store
from memvault.db.driver_errors import SIDE_WORK_FAILED
from memvault.db.tenancy import across_tenants
from memvault.db.units import transaction

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)


def reinforcement(reinforced_count: int, saturation: int = 50) -> float:
    """0 for a memory no caller said it used, rising with diminishing returns to 1 at
    ``saturation``."""
    return min(math.log1p(max(reinforced_count, 0)) / math.log1p(saturation), 1.0)


class AccessTracker:
    def __init__(self, engine: AsyncEngine, interval_s: float) -> None:
        self._engine = engine
        self._interval_s = interval_s
        # (what, tenant, id) → accesses: what is "memory", "fact" or "entity".
        self._pending: Counter[tuple[str, str, UUID]] = Counter()
        self._retry: Counter[tuple[str, str, UUID]] = Counter()
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def record(self, tenant_id: str, memory_ids: list[UUID]) -> None:
        self._record("memory", tenant_id, memory_ids)

    def record_graph(self, tenant_id: str, fact_ids: list[UUID], entity_ids: list[UUID]) -> None:
        self._record("fact", tenant_id, fact_ids)
        self._record("entity", tenant_id, entity_ids)

    def _record(self, what: str, tenant_id: str, ids: list[UUID]) -> None:
        if not ids:
            return
        self._pending.update((what, tenant_id, i) for i in ids)
        if self._task is None or self._task.done():
            self._stop = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="memvault-access-tracker"
            )

    @across_tenants
    async def flush(self) -> int:
        """Write what has been recorded; returns how many rows were touched."""
        batch, self._pending = self._pending, Counter()
        batch.update(self._retry)
        retry, self._retry = self._retry, Counter()
        if not batch:
            return 0
        try:
            counts: dict[str, dict[tuple[str, UUID], int]] = {
                what: {} for what in ("memory", "fact", "entity")
            }
            for (what, tenant_id, i), n in batch.items():
                counts[what][(tenant_id, i)] = n
            at = datetime.now(UTC)
            async with transaction(self._engine) as conn:
                await store.record_access(conn, counts["memory"], at)
                await graph_walk.record_access(conn, counts["fact"], counts["entity"], at)
        except SIDE_WORK_FAILED as exc:
            log.warning("writing access counts failed (%s)", type(exc).__name__)
            # Counts already retried once are dropped.
            self._retry = Counter({k: n for k, n in batch.items() if k not in retry})
            return 0
        return len(batch)

    async def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._interval_s)
            await self.flush()

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            # A flusher started by another event loop (an app served from its own thread,
            # say) cannot be awaited from this one; the flush below writes what it held.
            if self._task.get_loop() is asyncio.get_running_loop():
                await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.flush()
