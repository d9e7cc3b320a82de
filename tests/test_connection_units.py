"""Code outside db/ takes its connections from db/units.py, which names the tenant and reports
an outage as StoreUnavailable: the side writes that carry on past a failing store (the
embedding cache, access counts, a background settle) still carry on, a read asked to run
beside remember()'s shared ones does, and the operator's tools see the tenant they name (every
tenant when they name none)."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from uuid import uuid4

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from memvault import AsyncAdmin, AsyncMemory, Settings, StoreUnavailable
from memvault.backend import Backend
from memvault.db import store
from memvault.db.engine import create_engine
from memvault.db.tenancy import all_tenants, tenant_scope
from memvault.db.units import (
    read_released_behind,
    reading,
    reads_released,
    shared_reads,
    transaction,
)
from memvault.embedding.cache import PostgresCache
from memvault.metrics import CACHE_ERRORS
from memvault.pipeline.ingest import settle
from memvault.retrieval.reinforce import AccessTracker

BACKEND_PID = sa.text("SELECT pg_backend_pid()")


@pytest.fixture
async def away() -> AsyncIterator[AsyncEngine]:
    """A pool for a server that is not there: every connection is refused."""
    engine = create_engine("postgresql://nobody@127.0.0.1:1/none", pool_size=1)
    yield engine
    await engine.dispose()


async def test_the_postgres_cache_misses_while_the_store_is_away(away: AsyncEngine) -> None:
    cache = PostgresCache(away, 3600)
    errors = CACHE_ERRORS.labels("postgres")._value.get()
    assert await cache.get_many([b"one", b"two"]) == [None, None]
    await cache.set_many({b"one": [0.5, 0.25]})
    assert CACHE_ERRORS.labels("postgres")._value.get() == errors + 2
    # Forgetting a deleted memory's entries is no side write: its failure is the caller's.
    with pytest.raises(StoreUnavailable):
        await cache.forget_many([b"one"])


async def test_access_counts_wait_for_the_next_flush_while_the_store_is_away(
    away: AsyncEngine,
) -> None:
    tracker = AccessTracker(away, 3600.0)
    ident = uuid4()
    tracker.record("t", [ident])
    assert await tracker.flush() == 0
    assert tracker._retry == Counter({("memory", "t", ident): 1})
    await tracker.close()


async def test_a_background_settle_skips_a_memory_while_the_store_is_away(
    memory: AsyncMemory, backend: Backend, away: AsyncEngine, caplog: pytest.LogCaptureFixture
) -> None:
    added = await memory.add("I keep bees on the roof", user_id="u", infer=False)
    with tenant_scope(memory.tenant_id):
        async with reading(backend.engine) as conn:
            row = await store.fetch_memory(conn, memory.tenant_id, added.id, "u")
    assert row is not None
    reachable, backend.engine = backend.engine, away
    try:
        with all_tenants(), caplog.at_level(logging.WARNING, logger="memvault.pipeline.ingest"):
            await settle(backend, backend.judge, [row])
    finally:
        backend.engine = reachable
    assert "background dedup of a memory failed: StoreUnavailable" in caplog.text


async def test_a_read_of_its_own_runs_beside_the_shared_ones(backend: Backend) -> None:
    """A shared read holds the connection; a read with shared=False does not wait for it."""
    held, release = asyncio.Event(), asyncio.Event()

    async def holding() -> int:
        async with reading(backend.engine) as conn:
            pid: int = (await conn.execute(BACKEND_PID)).scalar_one()
            held.set()
            await release.wait()
        return pid

    async def own() -> int:
        await held.wait()
        async with reading(backend.engine, shared=False) as conn:
            pid: int = (await conn.execute(BACKEND_PID)).scalar_one()
        return pid

    with tenant_scope("default"):
        async with shared_reads(backend.engine):
            holder = asyncio.create_task(holding())
            try:
                # Taking turns, it would wait for the holder, which waits for it: a timeout.
                theirs = await asyncio.wait_for(own(), 10)
            finally:
                release.set()
            mine = await holder
    assert theirs != mine


async def test_the_admin_sees_the_tenant_it_names_or_every_tenant(
    make_settings: Callable[..., Settings],
) -> None:
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash", run_worker=False))
    try:
        for tenant, n in (("a", 1), ("b", 2)):
            for i in range(n):
                await memory.for_tenant(tenant).add(
                    f"note {i}", user_id="u", background=True, infer=False
                )
        admin = AsyncAdmin.of(memory)
        assert await admin.queue_counts(tenant_id="a") == {"queued": 1}
        assert await admin.queue_counts() == {"queued": 3}
        assert len(await admin.list_jobs(tenant_id="b")) == 2
        assert len(await admin.list_jobs()) == 3
        assert await admin.retry_jobs(tenant_id="a") == 0  # none failed
    finally:
        await memory.close()


async def test_a_transaction_stays_one_unit_of_its_tenant_after_a_block_in_autocommit(
    make_settings: Callable[..., Settings], database_url: str
) -> None:
    """Each transaction begins in the round trip that names its tenant: what it changed is
    undone when it fails, it sees its tenant's rows only (none when it names no tenant), and
    so it stays on a connection that ran a block at an isolation level of its own."""
    settings = make_settings(embedding_provider="hash", run_worker=False)
    memory = await AsyncMemory.open(settings)
    engine = create_engine(database_url, pool_size=1)
    ours = await memory.for_tenant("acme").add("acme plans", user_id="u", infer=False)
    await memory.for_tenant("globex").add("globex plans", user_id="u", infer=False)
    seen = sa.text("SELECT DISTINCT tenant_id FROM memories")
    raise_importance = sa.text("UPDATE memories SET importance = 9 WHERE id = :i")
    importance = sa.text("SELECT importance FROM memories WHERE id = :i")

    async def unit_and_scope() -> int:
        with tenant_scope("acme"):
            with pytest.raises(RuntimeError):
                async with transaction(engine) as conn:
                    assert (await conn.execute(raise_importance, {"i": ours.id})).rowcount == 1
                    raise RuntimeError("undo it")
            async with transaction(engine) as conn:
                assert (await conn.execute(importance, {"i": ours.id})).scalar_one() != 9
                assert set((await conn.execute(seen)).scalars()) == {"acme"}
                pid: int = (await conn.execute(BACKEND_PID)).scalar_one()
        async with transaction(engine) as conn:
            assert set((await conn.execute(seen)).scalars()) == set()
        return pid

    try:
        before = await unit_and_scope()
        async with engine.connect() as plain:
            autocommit = await plain.execution_options(isolation_level="AUTOCOMMIT")
            assert (await autocommit.execute(BACKEND_PID)).scalar_one() == before
        assert await unit_and_scope() == before  # the same connection, back in the pool
    finally:
        await engine.dispose()
        await memory.close()


async def test_reads_released_behind_their_callers_reuse_one_connection_each_for_its_tenant(
    make_settings: Callable[..., Settings], database_url: str
) -> None:
    """A search's candidate lists return their connections behind the search: many in a row
    on a pool of one connection reuse connections and leave none open, each sees only its own
    tenant's rows, and a failed read hands its error to the caller."""
    settings = make_settings(embedding_provider="hash", run_worker=False)
    memory = await AsyncMemory.open(settings)
    engine = create_engine(database_url, pool_size=1, pool_timeout_s=5)
    for tenant in ("acme", "globex"):
        await memory.for_tenant(tenant).add(f"{tenant} plans", user_id="u", infer=False)
    seen = sa.text("SELECT DISTINCT tenant_id FROM memories")
    try:
        pids = set()
        for n in range(10):
            tenant = ("acme", "globex")[n % 2]
            with tenant_scope(tenant):
                async with read_released_behind(engine) as conn:
                    assert set((await conn.execute(seen)).scalars()) == {tenant}
                    pids.add((await conn.execute(BACKEND_PID)).scalar_one())
        # Reused, not one per read: a release still under way when the next read starts may
        # take an overflow connection on a loaded machine, so the bound is not the pool's size.
        assert len(pids) < 10
        await reads_released(engine)
        pool = engine.sync_engine.pool
        assert isinstance(pool, sa.pool.QueuePool) and pool.checkedout() == 0  # none kept
        with tenant_scope("acme"), pytest.raises(DBAPIError):
            async with read_released_behind(engine) as conn:
                await conn.execute(sa.text("SELECT 1 / 0"))
        async with read_released_behind(engine) as conn:
            assert set((await conn.execute(seen)).scalars()) == set()
    finally:
        await reads_released(engine)
        await engine.dispose()
        await memory.close()
