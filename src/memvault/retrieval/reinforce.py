"""Reinforcement: memories that keep being recalled rank a little higher.

A search only *records* which memories it returned; a background task writes the counts
(``access_count``, ``last_accessed``) in one statement per flush interval, so searching never
waits on a write and a burst of searches costs one UPDATE. Counts are best-effort: a flush that
fails is retried once with the next batch, then dropped — an access count is not a memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import Counter
from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from memvault.db import store
from memvault.db.tenancy import across_tenants

log = logging.getLogger(__name__)


def reinforcement(access_count: int, saturation: int = 50) -> float:
    """0 for a memory never recalled, rising with diminishing returns to 1 at ``saturation``."""
    return min(math.log1p(max(access_count, 0)) / math.log1p(saturation), 1.0)


class AccessTracker:
    def __init__(self, engine: AsyncEngine, interval_s: float) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self._pending: Counter[tuple[str, UUID]] = Counter()
        self._retry: Counter[tuple[str, UUID]] = Counter()
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def record(self, tenant_id: str, memory_ids: list[UUID]) -> None:
        self._pending.update((tenant_id, i) for i in memory_ids)
        if self._task is None or self._task.done():
            self._stop = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="memvault-access-tracker"
            )

    @across_tenants
    async def flush(self) -> int:
        """Write what has been recorded; returns how many memories were touched."""
        batch, self._pending = self._pending, Counter()
        batch.update(self._retry)
        retry, self._retry = self._retry, Counter()
        if not batch:
            return 0
        try:
            async with self._engine.begin() as conn:
                await store.record_access(conn, dict(batch), datetime.now(UTC))
        except SQLAlchemyError as exc:
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
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.flush()
