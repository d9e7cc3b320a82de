"""``AsyncAdmin`` / ``Admin``: the operator's door to a whole store.

``AsyncMemory`` is one tenant's data; everything that spans tenants or runs the store itself —
the job queue, re-embedding, expiry, key rotation, API keys, readiness, the worker — is here,
with the tenant an explicit argument where it matters. The faces (API, CLI, doctor) use these
two classes and never reach the database underneath.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

from memvault import auth, rotation
from memvault._sync import SyncFace, blocking
from memvault.auth import ApiKeyInfo, CreatedKey, Principal
from memvault.backend import Backend
from memvault.config import Settings
from memvault.db import embedding_queue, engine, vectors
from memvault.db.driver_errors import store_errors
from memvault.db.embedded import ServeLock, embedded_store_held
from memvault.db.tenancy import across_tenants, all_tenants
from memvault.db.units import reading, transaction
from memvault.embedding.base import Embedder
from memvault.errors import Conflict, MemvaultError
from memvault.keys.session_vault import SessionVault
from memvault.lifecycle import backup as backups
from memvault.lifecycle import deletion as lifecycle_deletion
from memvault.lifecycle import jobs
from memvault.lifecycle.reports import DeletionReceipt, JobStatus, ScheduledRun
from memvault.models import EmbeddingJob, RotationReport
from memvault.runtime import open_backend
from memvault.scheduling import Clock, utc_now
from memvault.service import AsyncMemory
from memvault.worker import Worker


@dataclass(frozen=True)
class Check:
    """One readiness or doctor check: what was looked at, and what was found."""

    ok: bool
    detail: str


@dataclass(frozen=True)
class SchemaStatus:
    pgvector: str | None
    revision: str | None
    head: str | None
    # pgvector 0.8 or later: a big owner's search walks the HNSW index for its own rows.
    iterative_scans: bool = False


class AsyncAdmin:
    """Whole-store operations. Open with ``await AsyncAdmin.open(settings)``, or take the one
    behind an open store with ``AsyncAdmin.of(memory)``."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    @classmethod
    async def open(cls, settings: Settings) -> AsyncAdmin:
        return cls(await open_backend(settings))

    @classmethod
    def of(cls, memory: AsyncMemory) -> AsyncAdmin:
        return cls(memory._backend)

    def memory(self, tenant_id: str = "default", *, actor: str = "library") -> AsyncMemory:
        """A tenant's view of this store (sharing its pools)."""
        return AsyncMemory(self._backend, tenant_id=tenant_id, actor=actor)

    @property
    def settings(self) -> Settings:
        return self._backend.settings

    @property
    def embedder(self) -> Embedder:
        """The configured embedding model (the doctor asks it how it runs)."""
        return self._backend.embeddings.primary

    @property
    def active_key_id(self) -> str:
        return self._backend.keys.current().active.key_id

    async def close(self) -> None:
        await self._backend.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- the job queue ----------------------------------------------------------------------

    async def list_jobs(
        self, *, tenant_id: str | None = None, status: str | None = None, limit: int = 50
    ) -> builtins.list[EmbeddingJob]:
        """Embedding jobs (of one tenant, or all), most recently changed first."""
        async with reading(self._backend.engine, tenant_id, every_tenant=tenant_id is None) as conn:
            rows = await embedding_queue.list_jobs(conn, status, limit)
        return [EmbeddingJob.model_validate(r, from_attributes=True) for r in rows]

    async def retry_jobs(
        self, job_ids: Sequence[int] | None = None, *, tenant_id: str | None = None
    ) -> int:
        """Put failed jobs (all, or these ids; of one tenant, or all) back in the queue."""
        async with transaction(
            self._backend.engine, tenant_id, every_tenant=tenant_id is None
        ) as conn:
            return await embedding_queue.retry_failed(conn, job_ids)

    async def queue_counts(self, *, tenant_id: str | None = None) -> dict[str, int]:
        async with reading(self._backend.engine, tenant_id, every_tenant=tenant_id is None) as conn:
            return await embedding_queue.counts(conn)

    async def worker_heartbeat_age(self) -> float | None:
        """Seconds since the freshest worker heartbeat; None when no worker is running."""
        async with reading(self._backend.engine, every_tenant=True) as conn:
            return await embedding_queue.last_heartbeat_age_s(conn)

    async def run_worker(self, stop: asyncio.Event, *, concurrency: int = 1) -> None:
        """Process embedding jobs until ``stop`` is set (what ``memvault worker`` runs)."""
        workers = [Worker(self._backend) for _ in range(concurrency)]
        await asyncio.gather(*(w.run(stop, sweeper=i == 0) for i, w in enumerate(workers)))

    # --- whole-store maintenance ------------------------------------------------------------

    async def reembed(self) -> int:
        """Queue every memory not yet embedded by the active model; returns how many."""
        total = 0
        while True:
            async with transaction(self._backend.engine, every_tenant=True) as conn:
                queued = await embedding_queue.sweep(
                    conn, active_model=self._backend.embeddings.active_model, limit=10_000
                )
            total += queued
            if queued < 10_000:
                # The worker rewrites the vectors later; autovacuum sees to their statistics.
                self._backend.analyzer.wrote(total)
                return total

    async def purge_expired(self) -> int:
        """Delete expired memories in every tenant — past ``expires_at`` (reads already hide
        them), or temporal and past ``valid_until``: what the scheduled ``cleanup`` deletes —
        through the deletion path: derived rows and cache entries go, receipts are audited."""
        with all_tenants(), store_errors():
            return await lifecycle_deletion.erase_expired(self._backend, datetime.now(UTC), "ttl")

    async def rotate_encryption_key(self, *, reload_grace_s: float = 1.5) -> RotationReport:
        """Re-encrypt every row under a new active key while reads and writes go on."""
        with store_errors():
            return await rotation.rotate(self._backend, reload_grace_s=reload_grace_s)

    # --- API keys ---------------------------------------------------------------------------

    async def create_api_key(
        self, tenant_id: str, scopes: str | Sequence[str] = "read,write", name: str | None = None
    ) -> CreatedKey:
        with store_errors():
            return await auth.create_key(self._backend.engine, tenant_id, scopes, name)

    async def list_api_keys(self, tenant_id: str | None = None) -> builtins.list[ApiKeyInfo]:
        with store_errors():
            return await auth.list_keys(self._backend.engine, tenant_id)

    async def revoke_api_key(self, key: str) -> ApiKeyInfo:
        with store_errors():
            return await auth.revoke_key(self._backend.engine, key)

    async def authenticate(self, authorization: str | None) -> Principal:
        with store_errors():
            return await auth.authenticate(self._backend.engine, authorization)

    def session_vault(self) -> SessionVault:
        """Where the dashboard keeps its sessions, so every server process finds them."""
        return SessionVault(self._backend)

    async def take_rate_token(self, key: str, rate: float, burst: int, cost: float = 1) -> float:
        with store_errors():
            return await self._backend.take_rate_token(key, rate, burst, cost)

    # --- health -----------------------------------------------------------------------------

    async def warm_model(self) -> None:
        """Load the embedding model now, rather than on the first request that needs it."""
        await self._backend.embeddings.warm()

    async def readiness(self, *, timeout_s: float = 5.0) -> dict[str, Check]:
        """The database answers, its schema is current, and a worker is alive."""
        try:
            async with asyncio.timeout(timeout_s):
                status = await self.schema_status()
                age = await self.worker_heartbeat_age()
        except (TimeoutError, MemvaultError) as exc:
            return {"database": Check(False, f"unreachable ({type(exc).__name__})")}
        stale = self.settings.worker_heartbeat_stale_s
        return {
            "database": Check(True, "reachable"),
            "migrations": Check(
                status.revision == status.head,
                f"at {status.revision}, code expects {status.head}",
            ),
            "worker": Check(
                age is not None and age <= stale,
                "no worker is running"
                if age is None
                else f"last heartbeat {age:.1f} s ago (stale after {stale:g} s)",
            ),
        }

    async def schema_status(self) -> SchemaStatus:
        async with reading(self._backend.engine) as conn:
            version = await engine.pgvector_version(conn)
            revision = await conn.run_sync(engine.current_revision)
        iterative = vectors.has_iterative_scans(version)
        return SchemaStatus(version, revision, engine.head_revision(), iterative)

    # --- the lifecycle: the schedule, a tenant's erasure, backup ----------------------------

    async def schedule(self, *, clock: Clock = utc_now) -> builtins.list[JobStatus]:
        """Every scheduled job: its interval, last run and outcome, when it is next due."""
        return await jobs.statuses(self._backend, clock=clock)

    async def run_scheduled(
        self, name: str, *, dry_run: bool = False, clock: Clock = utc_now
    ) -> ScheduledRun:
        """Run one job now, due or not (still only one runner across every process)."""
        return await jobs.run_job(self._backend, name, dry_run=dry_run, clock=clock)

    async def undo_scheduled(self, name: str, run_id: int) -> int:
        """Reverse one run (decay); returns how many values were put back."""
        return await jobs.undo(self._backend, name, run_id)

    async def scheduled_runs(
        self, job: str | None = None, limit: int = 20
    ) -> builtins.list[ScheduledRun]:
        return await jobs.history(self._backend, job, limit)

    @across_tenants
    async def erase_tenant(self, tenant_id: str, *, actor: str = "admin") -> DeletionReceipt:
        """Delete a whole tenant: its memories and all derived from them, its history, audit
        trail and API keys, and its data key with per-tenant keys; answers the receipt
        (itself kept in the tenant's audit log)."""
        return await lifecycle_deletion.erase(
            self._backend,
            tenant_id,
            lifecycle_deletion.tenant_where(tenant_id),
            scope="tenant",
            user_id=None,
            actor=actor,
        )

    async def shred_tenant(self, tenant_id: str, *, actor: str = "admin") -> DeletionReceipt:
        """Crypto-shred a tenant: ``erase_tenant``, which with per-tenant keys destroys the
        data key in the same transaction (the receipt names it), so a copy of its content
        anywhere else (a replica, a dump) can no longer be opened. Refused (Conflict) when
        keys are not per tenant: there would be no key to destroy."""
        if not self._backend.keys.per_tenant:
            raise Conflict(
                "Shredding needs per-tenant keys (MEMVAULT_PER_TENANT_KEYS=true): with one key "
                "for every tenant there is no tenant key to destroy. Erase the tenant instead.",
                details={"per_tenant_keys": False},
            )
        return await self.erase_tenant(tenant_id, actor=actor)

    async def backup(self, file: Path) -> int:
        """Dump the whole store into ``file`` (pg_dump); returns its size. The keys are not
        in it: back them up apart."""
        return await backups.backup(self._backend.settings, file)


class Admin(SyncFace):
    """The synchronous face of :class:`AsyncAdmin`, same methods, same behaviour."""

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(AsyncAdmin.open(settings or Settings()))

    list_jobs = blocking(AsyncAdmin.list_jobs)
    retry_jobs = blocking(AsyncAdmin.retry_jobs)
    queue_counts = blocking(AsyncAdmin.queue_counts)
    worker_heartbeat_age = blocking(AsyncAdmin.worker_heartbeat_age)
    reembed = blocking(AsyncAdmin.reembed)
    purge_expired = blocking(AsyncAdmin.purge_expired)
    rotate_encryption_key = blocking(AsyncAdmin.rotate_encryption_key)
    create_api_key = blocking(AsyncAdmin.create_api_key)
    list_api_keys = blocking(AsyncAdmin.list_api_keys)
    revoke_api_key = blocking(AsyncAdmin.revoke_api_key)
    readiness = blocking(AsyncAdmin.readiness)
    schema_status = blocking(AsyncAdmin.schema_status)
    # --- lifecycle ---
    schedule = blocking(AsyncAdmin.schedule)
    run_scheduled = blocking(AsyncAdmin.run_scheduled)
    undo_scheduled = blocking(AsyncAdmin.undo_scheduled)
    scheduled_runs = blocking(AsyncAdmin.scheduled_runs)
    erase_tenant = blocking(AsyncAdmin.erase_tenant)
    shred_tenant = blocking(AsyncAdmin.shred_tenant)
    backup = blocking(AsyncAdmin.backup)

    @property
    def settings(self) -> Settings:
        settings: Settings = self._async.settings
        return settings


__all__ = [
    "Admin",
    "AsyncAdmin",
    "Check",
    "SchemaStatus",
    # What a server process needs for its data directory, for the faces that start one.
    "ServeLock",
    "embedded_store_held",
]
