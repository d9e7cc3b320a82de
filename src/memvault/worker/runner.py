"""Claims embedding jobs in batches, embeds each batch in one provider call, and writes the
chunks, the ``embedded`` flag and the job outcome in one transaction.

Any number of workers, in any number of processes, share the queue: claims skip locked rows,
a lease returns a crashed worker's jobs, and a write checks that the memory still has the
content that was embedded (a newer edit has its own job) before it lands.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

import psycopg
import sqlalchemy as sa

from memvault.config import Settings
from memvault.db import jobs, vectors
from memvault.db.store import AnyRow
from memvault.db.tables import memories
from memvault.db.tenancy import across_tenants
from memvault.embedding.chunking import chunk, clean
from memvault.embedding.service import Embedded, EmbeddingService
from memvault.errors import MemvaultError
from memvault.metrics import EMBEDDING_JOBS
from memvault.pipeline.ingest import settle
from memvault.sealing import open_content

if TYPE_CHECKING:
    from memvault.runtime import Backend

log = logging.getLogger(__name__)
_m = memories.c


@dataclass
class _Prepared:
    job: AnyRow
    row: AnyRow
    chunks: list[str]


# /ready calls a worker alive while its heartbeat is fresher than worker_heartbeat_stale_s.
HEARTBEAT_S = 5.0
_serial = itertools.count(1)


class Worker:
    def __init__(self, backend: Backend, settings: Settings | None = None) -> None:
        self.backend = backend
        self.engine = backend.engine
        self.url = backend.url
        self.keys = backend.keys
        self.embeddings: EmbeddingService = backend.embeddings
        self.judge = backend.judge
        self.settings = settings or backend.settings
        self._indexed: set[str] = set()
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{next(_serial)}"

    # --- loop ---------------------------------------------------------------------------------

    @across_tenants
    async def run(self, stop: asyncio.Event, *, sweeper: bool = True) -> None:
        listener = await self._listen()
        next_sweep = next_beat = 0.0
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set():
                if loop.time() >= next_beat:
                    await self._guarded(self._beat())
                    next_beat = loop.time() + HEARTBEAT_S
                if sweeper and loop.time() >= next_sweep:
                    await self._guarded(self.sweep())
                    next_sweep = loop.time() + self.settings.worker_sweep_interval_s
                done = await self._guarded(self.run_once())
                if not done:
                    await self._idle(listener, stop)
        finally:
            if listener is not None:
                await listener.close()
            with contextlib.suppress(sa.exc.SQLAlchemyError, OSError, psycopg.Error):
                async with self.engine.begin() as conn:
                    await jobs.forget_worker(conn, self.worker_id)

    async def _beat(self) -> int:
        async with self.engine.begin() as conn:
            await jobs.heartbeat(conn, self.worker_id)
        return 1

    async def _guarded(self, work: object) -> int:
        try:
            return int(await work)  # type: ignore[misc]
        except (sa.exc.SQLAlchemyError, OSError, psycopg.Error) as exc:
            # The database is away; jobs stay queued. Try again shortly.
            log.warning("worker: %s; retrying", type(exc).__name__)
            await asyncio.sleep(1.0)
            return 0

    async def _listen(self) -> psycopg.AsyncConnection[object] | None:
        try:
            conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
            await conn.execute(f"LISTEN {jobs.CHANNEL}")
            return conn
        except psycopg.Error:
            log.warning("worker: cannot LISTEN, polling instead")
            return None

    async def _idle(
        self, listener: psycopg.AsyncConnection[object] | None, stop: asyncio.Event
    ) -> None:
        if listener is None or listener.closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
            return
        async for _ in listener.notifies(timeout=1.0, stop_after=1):
            break

    # --- one batch ----------------------------------------------------------------------------

    @across_tenants
    async def run_once(self) -> int:
        """Claim up to ``batch_size`` jobs (waiting ``batch_wait_ms`` to fill), process them."""
        size = self.settings.worker_batch_size
        claimed = list(await self._claim(size))
        if claimed and len(claimed) < size and self.settings.worker_batch_wait_ms:
            await asyncio.sleep(self.settings.worker_batch_wait_ms / 1000)
            claimed += await self._claim(size - len(claimed))
        if claimed:
            await self.process(claimed)
        return len(claimed)

    async def _claim(self, limit: int) -> Sequence[AnyRow]:
        async with self.engine.begin() as conn:
            return await jobs.claim(conn, limit, self.settings.worker_lease_s)

    async def process(self, claimed: Sequence[AnyRow]) -> None:
        prepared, broken = await self._prepare(claimed)
        for job, error in broken:
            await self._fail(job, error)
        if not prepared:
            return
        texts = [text for p in prepared for text in p.chunks]
        try:
            embedded = await self.embeddings.embed_batch(texts)
        except MemvaultError as exc:
            for p in prepared:
                await self._fail(p.job, f"{exc.code}: {exc.message}")
            return
        await self._ensure_index(embedded)
        written = await self._write(prepared, embedded)
        ingest = [p.row for p in prepared if p.job.kind == "ingest" and p.row.id in written]
        if ingest:
            await settle(self.backend, self.judge, ingest)

    async def _prepare(
        self, claimed: Sequence[AnyRow]
    ) -> tuple[list[_Prepared], list[tuple[AnyRow, str]]]:
        keys = [(j.tenant_id, j.memory_id) for j in claimed]
        async with self.engine.connect() as conn:
            rows = {
                (r.tenant_id, r.id): r
                for r in await conn.execute(
                    sa.select(memories).where(sa.tuple_(_m.tenant_id, _m.id).in_(keys))
                )
            }
        tokenizer = self.embeddings.primary.tokenizer()
        window = min(self.settings.chunk_tokens, self.embeddings.primary.max_tokens)
        prepared, broken = [], []
        for job in claimed:
            row = rows.get((job.tenant_id, job.memory_id))
            if row is None:
                continue  # deleted meanwhile; its job went with it
            try:
                text = clean(
                    open_content(
                        self.keys, row.tenant_id, row.id, row.ciphertext, row.nonce, row.key_id
                    ),
                    self.settings.embedding_max_chars,
                )
            except MemvaultError as exc:
                broken.append((job, f"{exc.code}: {exc.message}"))
                continue
            prepared.append(
                _Prepared(job, row, chunk(text, tokenizer, window, self.settings.chunk_overlap))
            )
        return prepared, broken

    async def _ensure_index(self, embedded: Embedded) -> None:
        if embedded.model_id not in self._indexed:
            await vectors.ensure_index(
                self.backend.ddl_engine, embedded.model_id, embedded.dimensions
            )
            self._indexed.add(embedded.model_id)

    async def _write(self, prepared: list[_Prepared], embedded: Embedded) -> set[UUID]:
        """Chunks, flags and job outcomes for the whole batch, in one transaction, set-wise."""
        by_tenant: dict[str, dict[UUID, tuple[str, list[list[float]]]]] = {}
        offset = 0
        for p in prepared:
            vecs = embedded.vectors[offset : offset + len(p.chunks)]
            offset += len(p.chunks)
            by_tenant.setdefault(p.row.tenant_id, {})[p.row.id] = (p.row.user_id, vecs)
        embedded_hash = {(p.row.tenant_id, p.row.id): p.row.content_hash for p in prepared}
        async with self.engine.begin() as conn:
            # Lock the rows and keep only those whose content is still what we embedded.
            current = await conn.execute(
                sa.select(_m.tenant_id, _m.id, _m.content_hash)
                .where(sa.tuple_(_m.tenant_id, _m.id).in_(list(embedded_hash)))
                .with_for_update()
            )
            unchanged = {
                (r.tenant_id, r.id)
                for r in current
                if embedded_hash[(r.tenant_id, r.id)] == r.content_hash
            }
            for tenant_id, batch in by_tenant.items():
                fresh = {k: v for k, v in batch.items() if (tenant_id, k) in unchanged}
                await vectors.replace_chunks(conn, tenant_id, fresh, embedded.model_id)
            # A background add becomes searchable only once it is settled (deduplicated):
            # whoever waits on it must not see it before it is perhaps folded away.
            settling = {(p.row.tenant_id, p.row.id) for p in prepared if p.job.kind == "ingest"}
            for keys, searchable in ((unchanged - settling, True), (unchanged & settling, False)):
                if keys:
                    await conn.execute(
                        memories.update()
                        .where(sa.tuple_(_m.tenant_id, _m.id).in_(list(keys)))
                        .values(embedded=searchable, embedding_model=embedded.model_id)
                    )
            await jobs.complete(conn, [p.job for p in prepared])
        EMBEDDING_JOBS.labels("fallback" if embedded.fallback else "done").inc(len(prepared))
        return {memory_id for _, memory_id in unchanged}

    async def _fail(self, job: AnyRow, error: str) -> None:
        async with self.engine.begin() as conn:
            status = await jobs.fail(
                conn,
                job,
                error,
                max_attempts=self.settings.worker_max_attempts,
                backoff_base_s=self.settings.worker_backoff_base_s,
            )
        EMBEDDING_JOBS.labels(status).inc()
        log.warning("embedding job %s: %s (%s)", job.id, status, error[:200])

    # --- housekeeping -------------------------------------------------------------------------

    @across_tenants
    async def sweep(self) -> int:
        """Queue unembedded memories, and fallback-embedded ones once the primary is back."""
        active = self.embeddings.active_model
        async with self.engine.begin() as conn:
            queued = await jobs.sweep(conn, active_model=None, limit=10_000)
            redo = await jobs.has_other_models(conn, active)
        if redo and await self.embeddings.primary_healthy():
            async with self.engine.begin() as conn:
                queued += await jobs.sweep(conn, active_model=active, limit=10_000)
        async with self.engine.begin() as conn:
            await jobs.purge_done(conn, older_than_s=86_400)
        cache = self.embeddings.cache
        purge = getattr(cache, "purge_expired", None)
        if purge is not None:
            await purge()
        return queued
