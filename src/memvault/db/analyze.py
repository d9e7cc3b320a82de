"""Table statistics after bulk work: ``ANALYZE`` in the background, at most one at a time.

Retrieval keeps its plan without statistics (see ``vectors.nearest`` and ``keywords.bm25``),
but every other statement plans better with them, and autovacuum gathers them only a minute
or more after an import. Bulk operations (a batch of adds, an import, reembed, key rotation)
count the rows they wrote here; past a threshold the touched tables are analysed on the
owner's pool (the app role owns nothing, so it may not), without holding up the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)
_ANALYZE = sa.text("ANALYZE memories, memory_chunks, memory_terms")


class Analyzer:
    """Counts rows written by bulk work and analyses the tables once enough have changed."""

    def __init__(self, owner_engine: AsyncEngine, threshold: int) -> None:
        self._engine = owner_engine
        self._threshold = threshold  # 0: never (autovacuum alone)
        self._pending = 0
        self._task: asyncio.Task[None] | None = None

    def wrote(self, rows: int) -> None:
        """Note ``rows`` written by bulk work; start ANALYZE when past the threshold, unless
        one is already running (the rows wait for the next bulk write then)."""
        self._pending += rows
        if not self._threshold or self._pending < self._threshold or self.running:
            return
        self._pending = 0
        self._task = asyncio.get_running_loop().create_task(
            self._analyze(), name="memvault-analyze"
        )

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def idle(self) -> None:
        """Wait for a running ANALYZE to finish."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def close(self) -> None:
        if self.running and self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _analyze(self) -> None:
        try:
            async with self._engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(_ANALYZE)
        except SQLAlchemyError as exc:
            # Statistics are an optimisation: autovacuum gathers them later anyway.
            log.warning("background ANALYZE failed (%s); autovacuum will do it", type(exc).__name__)
