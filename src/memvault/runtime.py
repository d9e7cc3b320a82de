"""Opening a store from settings: where the database and the keys come from.

This is the only place that knows about embedded versus served mode; after it returns, both
run the same code.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memvault import tracing
from memvault.backend import Backend
from memvault.config import Settings
from memvault.crypto.envelope import Keyring, KeyringSource, cache_secrets, load_key_file, parse_key
from memvault.db import store, tenant_keys
from memvault.db.analyze import Analyzer
from memvault.db.embedded import EmbeddedPostgres, WorkerLock
from memvault.db.engine import create_engine, libpq_url, migrate
from memvault.db.replica import ReadRouter, RoutedEngine
from memvault.db.units import reading, transaction
from memvault.db.vector_outbox import set_feeding
from memvault.db.vectors import ensure_index, iterative_scans
from memvault.embedding import build_embedding_service
from memvault.errors import ConfigurationError, KeyMismatch
from memvault.lifecycle.audit import Audit
from memvault.llm import build_llm
from memvault.pipeline.judge import Judge
from memvault.retrieval.reinforce import AccessTracker
from memvault.worker.runner import Worker

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

# How soon a process takes over the worker of one that exited: a try costs one non-blocking
# flock(), so trying every second costs nothing and leaves the queue unattended for at most that.
WORKER_CLAIM_INTERVAL_S = 1.0


def start_workers(backend: Backend, concurrency: int) -> None:
    """Run embedding workers as tasks on the current event loop until the backend closes."""
    for n in range(concurrency):
        worker = Worker(backend)
        backend.track(worker.run(backend.stopping, sweeper=n == 0), f"memvault-worker-{n}")


def start_workers_once_per_data_dir(backend: Backend, lock: WorkerLock, concurrency: int) -> None:
    """Run the workers here if no other process on this data directory does; otherwise keep
    trying, so a process takes over when the one that ran them exits."""
    if lock.try_acquire():
        backend.closers.append(lock.release)
        start_workers(backend, concurrency)
        return
    backend.track(_claim_workers(backend, lock, concurrency), "memvault-claim")


async def _claim_workers(backend: Backend, lock: WorkerLock, concurrency: int) -> None:
    while not backend.stopping.is_set():
        if lock.try_acquire():
            backend.closers.append(lock.release)
            start_workers(backend, concurrency)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(backend.stopping.wait(), WORKER_CLAIM_INTERVAL_S)


async def open_backend(settings: Settings) -> Backend:
    if settings.database_read_url is not None and settings.database_url is None:
        raise ConfigurationError(
            "MEMVAULT_DATABASE_READ_URL names a replica of MEMVAULT_DATABASE_URL, which is unset "
            "(the embedded server has no replicas): set both, or neither."
        )
    # Before the database starts: a missing extra fails here, not after a minute of set-up.
    tracing.configure(settings.tracing)
    closers: list[Callable[[], None]] = []
    if settings.database_url is None:
        server = EmbeddedPostgres(settings.pg_data_dir)
        url = await asyncio.to_thread(server.start)
        closers.append(server.stop)
    else:
        url = settings.database_url.get_secret_value()
    direct = _direct_url(settings, url)
    engine = ddl_engine = None
    reads: ReadRouter | None = None
    try:
        await asyncio.to_thread(migrate, direct)
        engine = create_engine(
            url,
            pool_size=settings.pool_size,
            pool_timeout_s=settings.pool_timeout_s,
            transaction_pooler=settings.database_pooler == "transaction",
        )
        ddl_engine = create_engine(direct, pool_size=1, as_app=False)
        reads = _read_router(settings, engine)
        keys, key_file = await _open_keys(engine, settings)
        embeddings = build_embedding_service(settings, engine)
        embeddings.cache_secrets = lambda: cache_secrets(keys.current())
        if embeddings.primary.dimensions:
            await ensure_index(ddl_engine, embeddings.active_model, embeddings.primary.dimensions)
        await set_feeding(ddl_engine, settings.vector_index != "pgvector")
        iterative = False
        if settings.search_iterative_scans:
            async with transaction(engine) as conn:
                iterative = await iterative_scans(conn)
        backend = Backend(
            # Writers that keep the engine for later (access counts, audit, cache) hold the
            # primary's own: a task they start inside a routed read must not write to a replica.
            engine=engine if reads is None else RoutedEngine(engine.sync_engine),
            ddl_engine=ddl_engine,
            keys=keys,
            settings=settings,
            url=libpq_url(direct),
            embeddings=embeddings,
            judge=Judge(build_llm(settings)),
            access=AccessTracker(engine, settings.reinforce_flush_s),
            analyzer=Analyzer(ddl_engine, settings.analyze_after_rows),
            audit=Audit(engine, ddl_engine, keys, settings),
            key_file=key_file,
            closers=closers,
            reads=reads,
            iterative_scans=iterative,
        )
        if settings.vector_index != "pgvector":
            # Opened now, so that an index it cannot open (an embedded one another process
            # owns, a missing extra) stops the start, not the first search.
            backend.vector_index  # noqa: B018
        if reads is not None:
            await reads.sample()
            backend.track(reads.watch(backend.stopping), "memvault-replica-watch")
        if settings.worker_in_process and settings.embedded:
            lock = WorkerLock(settings.data_dir)
            start_workers_once_per_data_dir(backend, lock, settings.worker_concurrency)
        elif settings.worker_in_process:
            start_workers(backend, settings.worker_concurrency)
        return backend
    except BaseException:
        for pool in (engine, ddl_engine, reads.replica if reads else None):
            if pool is not None:
                await pool.dispose()
        for close in reversed(closers):
            await asyncio.to_thread(close)
        raise


def _read_router(settings: Settings, primary: AsyncEngine) -> ReadRouter | None:
    """Search, list and remember() on a replica, when MEMVAULT_DATABASE_READ_URL names one."""
    if settings.database_read_url is None:
        return None
    replica = create_engine(
        settings.database_read_url.get_secret_value(),
        pool_size=settings.pool_size,
        pool_timeout_s=settings.pool_timeout_s,
        transaction_pooler=settings.database_pooler == "transaction",
    )
    return ReadRouter(
        primary,
        replica,
        max_lag_s=settings.database_read_max_lag_s,
        own_writes_wait_s=settings.database_read_own_writes_wait_s,
    )


def _direct_url(settings: Settings, url: str) -> str:
    """Where migrations, index builds and LISTEN connect: each needs a session of its own
    (a lock held across statements, a notification channel), which a transaction pooler
    does not keep."""
    if settings.database_direct_url is not None:
        return settings.database_direct_url.get_secret_value()
    if settings.database_pooler == "transaction" and settings.database_url is not None:
        raise ConfigurationError(
            "MEMVAULT_DATABASE_POOLER=transaction needs MEMVAULT_DATABASE_DIRECT_URL: a URL past "
            "the pooler (PostgreSQL itself, or a PgBouncer database in session mode) for "
            "migrations, index builds and the workers' LISTEN."
        )
    return url


async def _open_keys(engine: AsyncEngine, settings: Settings) -> tuple[KeyringSource, Path | None]:
    async with transaction(engine) as conn:
        registered = await store.registered_key_ids(conn)
        source, key_file = _key_source(settings, has_sealed_data=bool(registered))
        keyring = source.current()
        missing = sorted(registered - keyring.key_ids)
        if missing:
            raise KeyMismatch(
                f"This database holds memories sealed with key id(s) {', '.join(missing)}, but "
                f"the configured key is {keyring.active.key_id}. Set MEMVAULT_ENCRYPTION_KEY to "
                "the key they were written with (while rotating, list the old one in "
                "MEMVAULT_ENCRYPTION_OLD_KEYS). Nothing was read or written.",
                details={"missing_key_ids": missing, "active_key_id": keyring.active.key_id},
            )
        await store.register_key(conn, keyring.active.key_id)
    if not settings.per_tenant_keys:
        await _refuse_shared_key_over_tenant_keys(engine)
    return source, key_file


async def _refuse_shared_key_over_tenant_keys(engine: AsyncEngine) -> None:
    """A process without per-tenant keys on a store that has them could open none of their
    content and would seal new content under the shared key (out of reach of shredding)."""
    async with reading(engine, every_tenant=True) as conn:
        held = await tenant_keys.any_held(conn)
    if held:
        raise ConfigurationError(
            "This store seals tenants under their own data keys: set "
            "MEMVAULT_PER_TENANT_KEYS=true on every memvault process. Nothing was read or written."
        )


def _key_source(settings: Settings, *, has_sealed_data: bool) -> tuple[KeyringSource, Path | None]:
    if settings.encryption_key is not None:
        old = (
            settings.encryption_old_keys.get_secret_value() if settings.encryption_old_keys else ""
        )
        keyring = Keyring(
            parse_key(settings.encryption_key.get_secret_value()),
            [
                parse_key(k, name="MEMVAULT_ENCRYPTION_OLD_KEYS")
                for k in old.split(",")
                if k.strip()
            ],
        )
        return KeyringSource(keyring, per_tenant=settings.per_tenant_keys), None
    if settings.database_url is not None:
        raise ConfigurationError(
            "MEMVAULT_ENCRYPTION_KEY is required when MEMVAULT_DATABASE_URL is set. Generate one "
            "with `memvault keys generate` and give every memvault process the same key."
        )
    path = settings.key_file
    if not path.exists() and has_sealed_data:
        raise ConfigurationError(
            f"The key file {path} is missing, but the database holds encrypted memories. Restore "
            "the key file from backup or set MEMVAULT_ENCRYPTION_KEY; a new key cannot read them."
        )
    initial = load_key_file(path, create=True)
    return KeyringSource(
        initial,
        reload=lambda: load_key_file(path, create=False),
        watch=path,
        per_tenant=settings.per_tenant_keys,
    ), path
