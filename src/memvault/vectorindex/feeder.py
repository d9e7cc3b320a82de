"""Feeds an external vector index from the outbox, and repairs its drift now and then.

A worker calls ``tick`` in its loop: it claims a batch of outbox entries (with a lease: a
worker killed mid-sync leaves them to the next claim), syncs their memories' points, and
removes the entries a later write has not queued again. While the index is away the entries
wait, backing off; nothing is lost, since the outbox is written in the memory's own
transaction. Every ``vector_index_reconcile_interval_s`` the whole index is compared with
PostgreSQL and repaired (``QdrantIndex.reconcile``), the first time on the worker's first tick;
the repairs are counted.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import TYPE_CHECKING

from memvault.db import vector_outbox
from memvault.db.units import transaction
from memvault.metrics import VECTOR_INDEX_REPAIRS, VECTOR_INDEX_SYNCS
from memvault.vectorindex.base import IndexUnavailable
from memvault.vectorindex.qdrant import QdrantIndex

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)
BATCH = 256
_FIRST_BACKOFF_S, _MAX_BACKOFF_S = 0.5, 60.0


class Feeder:
    def __init__(self, backend: Backend) -> None:
        self._engine = backend.engine
        self._settings = backend.settings
        index = backend.vector_index
        self.index = index if isinstance(index, QdrantIndex) else None
        # The first tick reconciles: an index new to this store (or behind after a crash or a
        # spell under pgvector) is filled from PostgreSQL at once, not minutes later.
        self._next_reconcile = time.monotonic()

    async def tick(self, *, reconcile: bool = True) -> int:
        """Sync a batch from the outbox, and (``reconcile``) repair drift when due; the work
        done (0: idle)."""
        if self.index is None:
            return 0
        done = await self.run_once()
        if reconcile and time.monotonic() >= self._next_reconcile:
            self._next_reconcile = (
                time.monotonic() + self._settings.vector_index_reconcile_interval_s
            )
            done += sum((await self.reconcile()).values())
        return done

    async def run_once(self) -> int:
        """Sync one batch of queued memories; how many were synced."""
        if self.index is None:
            return 0
        lease = self._settings.worker_lease_s
        async with transaction(self._engine, every_tenant=True) as conn:
            entries = await vector_outbox.claim(conn, BATCH, lease)
        if not entries:
            return 0
        try:
            await self.index.sync([(e.tenant_id, e.user_id, e.memory_id) for e in entries])
        except IndexUnavailable as exc:
            attempts = max(e.attempts for e in entries)
            backoff = min(_MAX_BACKOFF_S, _FIRST_BACKOFF_S * 2 ** (attempts - 1))
            async with transaction(self._engine, every_tenant=True) as conn:
                await vector_outbox.failed(conn, entries, exc.message, backoff)
            VECTOR_INDEX_SYNCS.labels("retry").inc(len(entries))
            return 0
        async with transaction(self._engine, every_tenant=True) as conn:
            await vector_outbox.done(conn, entries)
        VECTOR_INDEX_SYNCS.labels("done").inc(len(entries))
        return len(entries)

    async def reconcile(self) -> Counter[str]:
        """Repair whatever differs between the index and PostgreSQL; the repairs by kind."""
        if self.index is None:
            return Counter()
        repairs = await self.index.reconcile()
        await self.index.maintain()
        for kind, n in repairs.items():
            VECTOR_INDEX_REPAIRS.labels(kind).inc(n)
        if repairs:
            log.warning("vector index: the sweep repaired %s", dict(repairs))
        return repairs
