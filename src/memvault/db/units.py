"""Units of work: how code outside db/ gets a connection. One call opens the transaction (or a
connection that only reads), names the tenant it works for when the caller has not already
(row-level security then shows that tenant's rows only; every tenant's for work that spans
them by design) and translates a driver's error once (db/driver_errors.py): the caller neither
imports SQLAlchemy nor catches its errors, and hands the connection to db/ functions.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memvault.db import idempotency
from memvault.db.driver_errors import SIDE_WORK_FAILED, store_errors
from memvault.db.tenancy import all_tenants, current_scope, tenant_scope

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
    from sqlalchemy.pool import Pool

log = logging.getLogger(__name__)


@asynccontextmanager
async def transaction(
    engine: AsyncEngine,
    tenant_id: str | None = None,
    *,
    every_tenant: bool = False,
    side_work: bool = False,
) -> AsyncIterator[AsyncConnection]:
    """A transaction, committed when the block ends and rolled back when it raises.

    Inside a keyed request (``keyed_request``), the first one of its tenant that writes marks
    the request's claim as written, in the same transaction: a commit and its mark cannot be
    parted by a server dying between them. ``side_work``: what it writes is not the request's
    result but upkeep a rerun of the request redoes safely (a cache fill, turn indices
    reserved before the turns are stored, undoing that reservation, what a deletion locks and
    drops from the caches before its own transaction), so it marks nothing."""
    with _scope(tenant_id, every_tenant), store_errors():
        claim = None if side_work else _claim_to_mark()
        marked = False
        async with engine.begin() as conn:
            yield conn
            # Last in the block, so the claim's row is locked only from here to the commit;
            # another of the request's transactions may have marked it meanwhile.
            if claim is not None and not claim.marked:
                marked = await idempotency.mark_written(conn, claim.tenant_id, claim.key)
        if marked and claim is not None:
            claim.marked = True


@dataclass(eq=False)
class _KeyedClaim:
    tenant_id: str
    key: str
    # Marked (or the request over): later transactions need not look.
    marked: bool = False


_keyed: ContextVar[_KeyedClaim | None] = ContextVar("memvault_keyed_request", default=None)


def _claim_to_mark() -> _KeyedClaim | None:
    """The running keyed request's claim, when a transaction opened now is the request's own
    work: of its tenant. Work across tenants (the worker, the audit flusher, trackers started
    from inside a request and copying its context) is never the request's write."""
    claim = _keyed.get()
    if claim is None or claim.marked or current_scope() != claim.tenant_id:
        return None
    return claim


@contextmanager
def keyed_request(tenant_id: str, key: str) -> Iterator[None]:
    """Within the block (and in the tasks it starts), the request claimed ``key``
    (``memvault.idempotency``): its first transaction of ``tenant_id`` that writes marks the
    claim in that transaction. When the block ends, tasks it started that outlive it (a
    flusher, a tracker) mark nothing more."""
    claim = _KeyedClaim(tenant_id, key)
    token = _keyed.set(claim)
    try:
        yield
    finally:
        _keyed.reset(token)
        claim.marked = True


@asynccontextmanager
async def reading(
    engine: AsyncEngine,
    tenant_id: str | None = None,
    *,
    every_tenant: bool = False,
    shared: bool = True,
) -> AsyncIterator[AsyncConnection]:
    """A connection for reads: whatever it began is rolled back when the block ends. Inside
    ``shared_reads`` (and for its tenant) the shared connection, one block at a time; with
    ``shared=False`` a connection of its own even there, for a long read that must run
    beside the others (a ranked scan) rather than wait its turn."""
    turns = _shared.get() if shared else None
    if (
        turns is not None
        and turns.engine is engine
        and tenant_id is None
        and not every_tenant
        and current_scope() == turns.scope
    ):
        async with turns.turn() as conn:
            yield conn
        return
    with _scope(tenant_id, every_tenant), store_errors():
        async with engine.connect() as conn:
            yield conn


@asynccontextmanager
async def read_released_behind(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection of its own for one read whose caller has what it wanted when the block
    ends (one of a search's candidate lists): the rollback and the return to the pool run
    behind it, a round trip off the caller's time. A block that fails waits for them, as
    ``reading``'s does. The caller's scope is the tenant."""
    with store_errors():
        conn = await engine.connect()
        try:
            yield conn
        except BaseException:
            # As SQLAlchemy's own blocks do: a cancelled caller still returns it to the pool.
            await asyncio.shield(conn.close())
            raise
    _release_behind(engine, conn)


def _release_behind(engine: AsyncEngine, conn: AsyncConnection) -> None:
    """Roll back and return ``conn`` to the pool in a task of its own: nothing was written, so
    the caller need not wait for that round trip."""
    task = asyncio.ensure_future(_released(conn))
    # Kept by the engine's pool: a task nothing refers to may be collected before it has run.
    # Per pool, since each store (and each test client's app) runs on an event loop of its own.
    releasing = _releasing.setdefault(engine.sync_engine.pool, set())
    releasing.add(task)
    task.add_done_callback(releasing.discard)


_releasing: weakref.WeakKeyDictionary[Pool, set[asyncio.Task[None]]] = weakref.WeakKeyDictionary()


async def reads_released(engine: AsyncEngine) -> None:
    """Wait until every read released behind its caller is back in ``engine``'s pool: before
    the pool is disposed of, so that none is left open and collected unclosed."""
    releasing = _releasing.get(engine.sync_engine.pool, set())
    while releasing:
        await asyncio.gather(*releasing, return_exceptions=True)


async def _released(conn: AsyncConnection) -> None:
    try:
        await conn.close()
    except SIDE_WORK_FAILED:
        # Nothing was written: a connection that broke at its rollback is the pool's to drop.
        log.debug("a read's connection failed as it was returned", exc_info=True)


@asynccontextmanager
async def shared_reads(engine: AsyncEngine) -> AsyncIterator[None]:
    """Within the block, every ``reading`` of the caller's tenant on ``engine`` — in this task
    and in the tasks it starts — takes turns on one connection: a recall made of many small
    reads (goals, profile, tool calls, turns of the hits...) pays for one transaction, its
    checkout, BEGIN, tenant setting and rollback, instead of one each. The small reads wait
    for each other, which costs nothing while the long ones (the query's embedding, the
    ranked searches, on connections of their own) run. A ``reading`` block must not wait for
    another task's ``reading`` (it would wait for itself): keep such blocks to db/ calls.
    When the block ends, the shared connection's rollback and return to the pool run behind
    the caller (``read_released_behind``); a block that fails waits for them."""
    shared = _Shared(engine, current_scope())
    token = _shared.set(shared)
    try:
        yield
    except BaseException:
        _shared.reset(token)
        await shared.release()
        raise
    _shared.reset(token)
    conn, shared.conn = shared.conn, None
    if conn is not None:
        _release_behind(engine, conn)


@dataclass(eq=False)
class _Shared:
    engine: AsyncEngine
    scope: object
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    conn: AsyncConnection | None = None
    holder: asyncio.Task[object] | None = None

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[AsyncConnection]:
        task = asyncio.current_task()
        if self.holder is not None and self.holder is task:  # nested in the same task
            assert self.conn is not None
            yield self.conn
            return
        async with self.lock:
            self.holder = task
            try:
                with store_errors():
                    if self.conn is None:
                        self.conn = await self.engine.connect()
                    try:
                        yield self.conn
                    except BaseException:
                        # A failed statement aborts the transaction, and a cancelled one may
                        # leave it mid-statement: the next turn starts on a fresh connection.
                        await self.release()
                        raise
            finally:
                self.holder = None

    async def release(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with store_errors():
                # As SQLAlchemy's own blocks do: a cancelled caller still returns it to the pool.
                await asyncio.shield(conn.close())


_shared: ContextVar[_Shared | None] = ContextVar("memvault_shared_reads", default=None)


def _scope(tenant_id: str | None, every_tenant: bool) -> ExitStack:
    """The tenant the unit works for; neither given, the caller's scope stands."""
    stack = ExitStack()
    if tenant_id is not None:
        stack.enter_context(tenant_scope(tenant_id))
    elif every_tenant:
        stack.enter_context(all_tenants())
    return stack
