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
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

import numpy as np
import psycopg

from memvault import tracing
from memvault.config import Settings
from memvault.db import embedding_queue, store, vectors
from memvault.db.driver_errors import STATEMENT_FAILED
from memvault.db.records import ClaimedJob, MemoryRow
from memvault.db.tenancy import across_tenants
from memvault.db.units import reading, transaction
from memvault.embedding.chunking import chunk, clean
from memvault.embedding.embedding_service import Embedded, EmbeddingService
from memvault.errors import MemvaultError, StoreUnavailable
from memvault.keys.sealing import open_content
from memvault.lifecycle import jobs as lifecycle_jobs
from memvault.metrics import EMBEDDING_JOBS, WORKER_ERRORS
from memvault.pipeline.ingest import settle
from memvault.vectorindex.feeder import Feeder
from memvault.worker.delivery import Dispatcher

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)


@dataclass
class _Prepared:
    job: ClaimedJob
    row: MemoryRow
    chunks: list[str]


# /ready calls a worker alive while its heartbeat is fresher than worker_heartbeat_stale_s.
HEARTBEAT_S = 5.0
_FIRST_BACKOFF_S, _MAX_BACKOFF_S = 0.5, 5.0
# What a failing store raises on the way here: a statement's error, or StoreUnavailable (an
# outage as the units of work and the service's own calls report it).
_STORE_ERRORS: tuple[type[BaseException], ...] = (
    *STATEMENT_FAILED,
    OSError,
    psycopg.Error,
    StoreUnavailable,
)
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
        self._failing_since: float | None = None
        self._backoff = _FIRST_BACKOFF_S
        self.index_feeder = Feeder(backend)
        self.webhooks = Dispatcher(backend)

    # --- loop ---------------------------------------------------------------------------------

    @across_tenants
    async def run(self, stop: asyncio.Event, *, sweeper: bool = True) -> None:
        """Process jobs until ``stop`` is set. Survives any store outage: every database call
        is guarded, the LISTEN connection is re-opened when it breaks, and retries back off."""
        notifications = embedding_queue.Notifications(self.url)
        next_sweep = next_beat = 0.0
        loop = asyncio.get_running_loop()
        # The first look comes a tick after start: a short-lived worker (a test, a CLI
        # command that waits on embeddings) never runs the lifecycle.
        next_schedule = loop.time() + self.settings.schedule_tick_s
        try:
            while not stop.is_set():
                if loop.time() >= next_beat:
                    await self._guarded(self._beat(), stop)
                    next_beat = loop.time() + HEARTBEAT_S
                if sweeper and loop.time() >= next_sweep:
                    await self._guarded(self.sweep(), stop)
                    next_sweep = loop.time() + self.settings.worker_sweep_interval_s
                if sweeper and self.settings.schedule_enabled and loop.time() >= next_schedule:
                    await self._guarded(self.scheduled(), stop)
                    next_schedule = loop.time() + self.settings.schedule_tick_s
                done = await self._guarded(self.run_once(), stop)
                done += await self._guarded(self.index_feeder.tick(reconcile=sweeper), stop)
                done += await self._guarded(self.webhooks.tick(), stop)
                if not done and not stop.is_set():
                    await self._idle(notifications, stop)
        finally:
            await notifications.close()
            await self.webhooks.close()
            with contextlib.suppress(*_STORE_ERRORS):
                async with transaction(self.engine) as conn:
                    await embedding_queue.forget_worker(conn, self.worker_id)

    async def _beat(self) -> int:
        async with transaction(self.engine) as conn:
            await embedding_queue.heartbeat(conn, self.worker_id)
        return 1

    async def _guarded(self, work: Coroutine[Any, Any, int], stop: asyncio.Event) -> int:
        """Run one step; a failure (the store away, or a bug) is logged once, counted, and
        retried after a backoff instead of ending the worker."""
        try:
            done = await work
        except _STORE_ERRORS as exc:
            await self._failed("store", exc, stop)
            return 0
        except Exception as exc:
            await self._failed("unexpected", exc, stop)
            return 0
        self._recovered()
        return done

    async def _failed(self, kind: str, exc: BaseException, stop: asyncio.Event) -> None:
        WORKER_ERRORS.labels(kind).inc()
        if self._failing_since is None:
            self._failing_since = time.monotonic()
            log.warning(
                "worker %s: %s (%s); retrying with backoff",
                self.worker_id,
                kind,
                type(exc).__name__,
            )
        delay, self._backoff = self._backoff, min(self._backoff * 2, _MAX_BACKOFF_S)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=delay)

    def _recovered(self) -> None:
        if self._failing_since is not None:
            log.warning(
                "worker %s: working again after %.1f s",
                self.worker_id,
                time.monotonic() - self._failing_since,
            )
        self._failing_since, self._backoff = None, _FIRST_BACKOFF_S

    async def _idle(
        self, notifications: embedding_queue.Notifications, stop: asyncio.Event
    ) -> None:
        """Wait up to a second for a new job (polling when LISTEN is unavailable), less when
        a webhook retry falls due sooner."""
        timeout = min(1.0, self.webhooks.next_retry_in())
        if not await notifications.wait(timeout=timeout):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=timeout)

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

    async def _claim(self, limit: int) -> Sequence[ClaimedJob]:
        async with transaction(self.engine) as conn:
            return await embedding_queue.claim(conn, limit, self.settings.worker_lease_s)

    async def process(self, claimed: Sequence[ClaimedJob]) -> None:
        with tracing.span("memvault.worker.batch", jobs=len(claimed)) as traced:
            await self._process(claimed, traced)

    async def _process(
        self, claimed: Sequence[ClaimedJob], traced: tracing.Stage | tracing.Off
    ) -> None:
        prepared, broken = await self._prepare(claimed)
        traced.set(broken=len(broken), chunks=sum(len(p.chunks) for p in prepared))
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
        traced.set(written=len(written), fallback=embedded.fallback)
        if ingest:
            firsts: dict[UUID, tuple[str, list[float]]] = {}
            offset = 0
            for p in prepared:
                if p.chunks and p.job.kind == "ingest":
                    # As the store keeps it (single precision): dedup compares the same vector.
                    first = np.asarray(embedded.vectors[offset], dtype=np.float32).tolist()
                    firsts[p.row.id] = (embedded.model_id, first)
                offset += len(p.chunks)
            with tracing.span("memvault.worker.settle", memories=len(ingest)):
                await settle(self.backend, self.judge, ingest, firsts)

    async def _prepare(
        self, claimed: Sequence[ClaimedJob]
    ) -> tuple[list[_Prepared], list[tuple[ClaimedJob, str]]]:
        await self.backend.load_tenant_keys({j.tenant_id for j in claimed})
        async with reading(self.engine) as conn:
            rows = await store.fetch_memories(conn, [(j.tenant_id, j.memory_id) for j in claimed])
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
        async with transaction(self.engine) as conn:
            # Lock the rows and keep only those whose content is still what we embedded.
            current = await store.lock_content_hashes(conn, list(embedded_hash))
            unchanged = {k for k, content in current.items() if embedded_hash[k] == content}
            for tenant_id, batch in by_tenant.items():
                fresh = {k: v for k, v in batch.items() if (tenant_id, k) in unchanged}
                await vectors.replace_chunks(conn, tenant_id, fresh, embedded.model_id)
            # A background add becomes searchable only once it is settled (deduplicated):
            # whoever waits on it must not see it before it is perhaps folded away.
            settling = {(p.row.tenant_id, p.row.id) for p in prepared if p.job.kind == "ingest"}
            for keys, searchable in ((unchanged - settling, True), (unchanged & settling, False)):
                await store.mark_embedded(
                    conn, list(keys), searchable=searchable, model=embedded.model_id
                )
            await embedding_queue.complete(conn, [p.job for p in prepared])
        EMBEDDING_JOBS.labels("fallback" if embedded.fallback else "done").inc(len(prepared))
        return {memory_id for _, memory_id in unchanged}

    async def _fail(self, job: ClaimedJob, error: str) -> None:
        async with transaction(self.engine) as conn:
            status = await embedding_queue.fail(
                conn,
                job,
                error,
                max_attempts=self.settings.worker_max_attempts,
                backoff_base_s=self.settings.worker_backoff_base_s,
            )
        EMBEDDING_JOBS.labels(status).inc()
        log.warning("embedding job %s: %s (%s)", job.id, status, error[:200])

    # --- housekeeping -------------------------------------------------------------------------

    async def scheduled(self) -> int:
        """Run the lifecycle jobs that are due (each once across every worker process)."""
        return len(await lifecycle_jobs.run_due(self.backend))

    @across_tenants
    async def sweep(self) -> int:
        """Queue unembedded memories, and fallback-embedded ones once the primary is back.
        Memories of a model no longer configured wait for ``reembed``: an operator asks for
        that rebuild and watches it, the sweep does not start it behind their back."""
        fallbacks = [f.model_id for f in self.embeddings.fallbacks]
        async with transaction(self.engine) as conn:
            queued = await embedding_queue.sweep(conn, active_model=None, limit=10_000)
            redo = await embedding_queue.has_models(conn, fallbacks)
        if redo and await self.embeddings.primary_healthy():
            async with transaction(self.engine) as conn:
                queued += await embedding_queue.sweep(
                    conn, active_model=None, models=fallbacks, limit=10_000
                )
        async with transaction(self.engine) as conn:
            await embedding_queue.purge_done(conn, older_than_s=86_400)
        cache = self.embeddings.cache
        purge = getattr(cache, "purge_expired", None)
        if purge is not None:
            await purge()
        return queued
