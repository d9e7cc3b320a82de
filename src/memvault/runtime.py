"""Opening a store from settings: where the database and the keys come from.

This is the only place that knows about embedded versus served mode; after it returns, both
run the same code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from memvault.config import Settings
from memvault.crypto import Keyring, KeyringSource, load_key_file, parse_key
from memvault.db import store
from memvault.db.analyze import Analyzer
from memvault.db.embedded import EmbeddedPostgres
from memvault.db.engine import create_engine, libpq_url, migrate
from memvault.db.vectors import ensure_index
from memvault.embedding import EmbeddingService, build_embedding_service
from memvault.errors import ConfigurationError, KeyMismatch
from memvault.llm import build_llm
from memvault.pipeline.judge import Judge
from memvault.retrieval.reinforce import AccessTracker
from memvault.worker.runner import Worker


@dataclass
class Backend:
    """What every tenant view of a store shares: the pool, the keys and the limits."""

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
    analyzer: Analyzer
    key_file: Path | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _workers: list[asyncio.Task[None]] = field(default_factory=list)

    def start_workers(self, concurrency: int) -> None:
        """Run embedding workers as tasks on the current event loop until ``close``."""
        for n in range(concurrency):
            worker = Worker(self)
            self._workers.append(
                asyncio.create_task(
                    worker.run(self._stop, sweeper=n == 0), name=f"memvault-worker-{n}"
                )
            )

    async def close(self) -> None:
        self._stop.set()
        if self._workers:
            await asyncio.gather(*self._workers, return_exceptions=True)
            self._workers.clear()
        await self.access.close()
        await self.analyzer.close()
        await self.embeddings.aclose()
        if self.judge.llm is not None:
            await self.judge.llm.aclose()
        await self.engine.dispose()
        await self.ddl_engine.dispose()
        for close in reversed(self.closers):
            await asyncio.to_thread(close)
        self.closers.clear()


async def open_backend(settings: Settings) -> Backend:
    closers: list[Callable[[], None]] = []
    if settings.database_url is None:
        server = EmbeddedPostgres(settings.pg_data_dir)
        url = await asyncio.to_thread(server.start)
        closers.append(server.stop)
    else:
        url = settings.database_url.get_secret_value()
    engine = ddl_engine = None
    try:
        await asyncio.to_thread(migrate, url)
        engine = create_engine(url, pool_size=settings.pool_size)
        ddl_engine = create_engine(url, pool_size=1, as_app=False)
        keys, key_file = await _open_keys(engine, settings)
        embeddings = build_embedding_service(settings, engine)
        if embeddings.primary.dimensions:
            await ensure_index(ddl_engine, embeddings.active_model, embeddings.primary.dimensions)
        backend = Backend(
            engine=engine,
            ddl_engine=ddl_engine,
            keys=keys,
            settings=settings,
            url=libpq_url(url),
            embeddings=embeddings,
            judge=Judge(build_llm(settings)),
            access=AccessTracker(engine, settings.reinforce_flush_s),
            analyzer=Analyzer(ddl_engine, settings.analyze_after_rows),
            key_file=key_file,
            closers=closers,
        )
        if settings.worker_in_process:
            backend.start_workers(settings.worker_concurrency)
        return backend
    except BaseException:
        for pool in (engine, ddl_engine):
            if pool is not None:
                await pool.dispose()
        for close in reversed(closers):
            await asyncio.to_thread(close)
        raise


async def _open_keys(engine: AsyncEngine, settings: Settings) -> tuple[KeyringSource, Path | None]:
    async with engine.begin() as conn:
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
    return source, key_file


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
        return KeyringSource(keyring), None
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
        initial, reload=lambda: load_key_file(path, create=False), watch=path
    ), path
