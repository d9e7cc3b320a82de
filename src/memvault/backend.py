"""What every tenant view of a store shares: the pools, the keys, the models, the limits.

It sits above the domain packages whose parts it holds (docs/development.md, "Layers"): it
names the parts but starts nothing; ``runtime.py`` opens one. The pipeline, the worker and the
retrieval code below it take a ``Backend`` as a parameter, naming its type for the checker
alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.cognitive.working_store import WorkingStore
from memvault.config import Settings
from memvault.crypto.envelope import KeyringSource
from memvault.db import ratelimit
from memvault.db.analyze import Analyzer
from memvault.db.keywords import ScopeStatistics
from memvault.db.remembered import Remembered
from memvault.db.replica import ReadRouter
from memvault.db.units import reads_released, transaction
from memvault.db.vectors import ScopeSizes
from memvault.embedding.embedding_service import EmbeddingService
from memvault.keys import data_keys
from memvault.lifecycle.audit import Audit
from memvault.lifecycle.duplicates import DuplicateScans
from memvault.pipeline.judge import Judge
from memvault.retrieval.reinforce import AccessTracker
from memvault.vectorindex import VectorIndex, open_index

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine


@dataclass
class Backend:
    engine: AsyncEngine
    # The table owner's pool, for DDL (a model's vector index) and ANALYZE only: the app role
    # that runs everything else owns nothing.
    ddl_engine: AsyncEngine
    keys: KeyringSource
    settings: Settings
    url: str
    embeddings: EmbeddingService
    judge: Judge
    access: AccessTracker
    # Runs ANALYZE in the background after bulk writes, so plans stay good on a fresh store.
    analyzer: Analyzer
    # Audit rows, written in batches in the background (lifecycle/audit.py).
    audit: Audit
    key_file: Path | None = None
    # Routes search, list and remember() to a streaming replica (MEMVAULT_DATABASE_READ_URL).
    reads: ReadRouter | None = None
    # Opened on first use by cognitive memory: Redis when configured, else PostgreSQL.
    working: WorkingStore | None = None
    # Owners' vector scope sizes, so a search need not count them every time.
    scope_sizes: ScopeSizes = field(default_factory=ScopeSizes)
    # The server's pgvector scans HNSW iteratively (0.8 or later), read when the store opens:
    # a big owner's search then asks the index for its own nearest chunks (db/vectors.py).
    iterative_scans: bool = False
    # Where recall finds vectors (see ``vector_index``); opened on first use.
    index: VectorIndex | None = None
    # Owners' BM25 statistics, so a search of a large scope need not read them every time.
    keyword_stats: Remembered[ScopeStatistics] = field(default_factory=Remembered)
    # Owners' near-duplicate pairs as last found: memory health compares only what changed.
    duplicate_scans: DuplicateScans = field(default_factory=DuplicateScans)
    closers: list[Callable[[], None]] = field(default_factory=list)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _rate_takes: int = 0
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def vector_index(self) -> VectorIndex:
        """pgvector, or the Qdrant index the settings name (vectorindex/)."""
        if self.index is None:
            self.index = open_index(
                self.engine, self.settings, self.scope_sizes, iterative_scans=self.iterative_scans
            )
        return self.index

    async def load_tenant_keys(self, tenant_ids: Iterable[str]) -> None:
        """Load (or make) these tenants' data keys before their work (``per_tenant_keys``);
        nothing when that is off."""
        await data_keys.load(self.keys, self.engine, tenant_ids)

    def track(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` (a worker loop) on the current event loop until ``close``; it must
        return once ``stopping`` is set."""
        self._tasks.append(asyncio.create_task(work, name=name))

    async def take_rate_token(self, key: str, rate: float, burst: int, cost: float = 1) -> float:
        """The token bucket every server process over this database shares (when no Redis):
        0 when ``key`` may go ahead (``cost`` tokens taken), else the seconds until it may."""
        async with transaction(self.engine) as conn:
            wait = await ratelimit.take(conn, key, rate, burst, cost)
            self._rate_takes += 1
            if self._rate_takes % 1000 == 0:  # now and then, forget buckets long since full
                await ratelimit.prune(conn, burst / rate + 60)
        return wait

    async def close(self) -> None:
        self.stopping.set()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks.clear()
        await self.access.close()
        await self.audit.close()
        if self.working is not None:
            await self.working.aclose()
        await self.analyzer.close()
        if self.index is not None:
            await self.index.close()
        await self.embeddings.aclose()
        if self.judge.llm is not None:
            await self.judge.llm.aclose()
        await reads_released(self.engine)
        if self.reads is not None:
            await self.reads.close()
        await self.engine.dispose()
        await self.ddl_engine.dispose()
        for close in reversed(self.closers):
            await asyncio.to_thread(close)
        self.closers.clear()
