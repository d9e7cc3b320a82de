"""Reads from a streaming replica (``MEMVAULT_DATABASE_READ_URL``): search, list and
``remember()`` read there when it is fresh enough, and a caller sees its own writes.

How fresh the replica is, is measured, not guessed: every few tenths of a second the watcher
notes the time and the primary's WAL position, then asks the replica how far it has replayed.
Once the replica has replayed past a position, everything committed on the primary before that
position was noted is visible on the replica: the replica is *visible through* that time. A read
goes to the replica only while ``now - visible_through`` is within ``read_max_lag_s``.

Read-your-writes, in the process: the primary's pool notes, per tenant and user, when a call
last used it (a write, or a read such as waiting for the worker to finish an add) outside a
routed read. That caller's next routed read goes to the replica only once the replica is
visible through that moment; if it is not yet, the read asks the primary for its WAL position
and waits up to ``database_read_own_writes_wait_s`` for the replica to replay it, else reads
the primary. These notes cover library callers, and any caller whose next request comes back
to the same process.

Read-your-writes across processes, by a token (``memvault.consistency``): an API request runs
inside ``request_consistency``. When it used the primary outside a routed read, its answer
names the primary's WAL position once it was done (``Memvault-Written-Lsn``); a later request
that carries the position back (``Memvault-Read-After``), to any process, reads on the replica
only once the replica has replayed past it, waiting for that as long as above, else on the
primary. The position is trusted for nothing but waiting: one beyond the primary's own is
waited for as the primary's, so a bogus one costs its sender the bounded wait at most. The
HTTP client carries the token by itself; a raw-HTTP caller copies the header.

A read that fails on the replica (the replica down, a query cancelled by recovery, a statement
a standby refuses) is run again on the primary, and reads stay there until the watcher reaches
the replica again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

import psycopg
import sqlalchemy as sa
import sqlalchemy.exc as sa_exc
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memvault import consistency
from memvault.db.tenancy import current_caller
from memvault.errors import StoreUnavailable

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

_PRIMARY_LSN = sa.text("SELECT pg_current_wal_lsn()::text")
_REPLAYED_LSN = sa.text("SELECT pg_last_wal_replay_lsn()::text")
# Positions noted but not yet replayed, at most (beyond the lag bound they are moot anyway).
_MAX_PENDING = 1_000
# SQLSTATEs after which a read is retried on the primary: a standby refusing a write or a
# lock (25006), a query cancelled by a conflict with recovery (40001).
_STANDBY_REFUSED = ("25006", "40001")


@dataclass(frozen=True)
class _Route:
    replica: AsyncEngine | None  # None: the read runs on the primary


_route: ContextVar[_Route | None] = ContextVar("memvault_read_route", default=None)


class RoutedEngine(AsyncEngine):
    """The primary's pool, except inside a read routed to the replica, where connections
    come from the replica's pool: the code under search, list and remember() asks for
    ``backend.engine`` as always and reads wherever the call was routed."""

    def connect(self) -> AsyncConnection:
        route = _route.get()
        if route is not None and route.replica is not None:
            return route.replica.connect()
        return super().connect()


@dataclass
class RequestConsistency:
    """One API request's part in read-your-writes across processes: the primary's position
    its routed reads must show (the token it carried), and whether it used the primary
    outside a routed read (then its answer names the position it leaves)."""

    router: ReadRouter | None
    read_after: int | None
    used_primary: bool = False

    async def written(self) -> str | None:
        """The primary's WAL position now, when the request used it; else None, at no cost."""
        if self.router is None or not self.used_primary:
            return None
        return await self.router.written_position()


_request: ContextVar[RequestConsistency | None] = ContextVar("memvault_request", default=None)


@contextlib.contextmanager
def request_consistency(
    router: ReadRouter | None, read_after: int | None
) -> Iterator[RequestConsistency]:
    """Run a request (everything it awaits) as one ``RequestConsistency``."""
    request = RequestConsistency(router, read_after)
    token = _request.set(request)
    try:
        yield request
    finally:
        _request.reset(token)


class Callers:
    """When each tenant's callers last used the primary outside a routed read (monotonic)."""

    def __init__(self) -> None:
        self._user: dict[tuple[str, str], float] = {}
        self._unnamed: dict[str, float] = {}  # calls that named no user
        self._tenant: dict[str, float] = {}  # the latest of either, for reads naming no user

    def note(self, tenant: str, user: str | None, at: float) -> None:
        if user is None:
            self._unnamed[tenant] = at
        else:
            self._user[(tenant, user)] = at
        self._tenant[tenant] = at

    def last(self, tenant: str, user: str | None) -> float | None:
        if user is None:
            return self._tenant.get(tenant)
        marks = [m for m in (self._user.get((tenant, user)), self._unnamed.get(tenant)) if m]
        return max(marks, default=None)

    def forget_through(self, visible: float) -> None:
        """Drop what the replica already shows."""
        self._user = {k: at for k, at in self._user.items() if at > visible}
        self._unnamed = {k: at for k, at in self._unnamed.items() if at > visible}
        self._tenant = {k: at for k, at in self._tenant.items() if at > visible}


class ReadRouter:
    """Chooses, per call, whether a read runs on the replica or the primary."""

    def __init__(
        self,
        primary: AsyncEngine,
        replica: AsyncEngine,
        *,
        max_lag_s: float,
        own_writes_wait_s: float,
    ) -> None:
        self.primary = primary
        self.replica = replica
        self.max_lag_s = max_lag_s
        self.own_writes_wait_s = own_writes_wait_s
        self.interval_s = min(0.5, max_lag_s / 4)
        self.callers = Callers()
        self.visible_through = float("-inf")
        self.replayed = -1  # the furthest position the replica was seen to have replayed
        self._pending: deque[tuple[float, int]] = deque(maxlen=_MAX_PENDING)
        self._reachable = False
        event.listen(primary.sync_engine, "checkin", self._returned)

    def _returned(self, _dbapi_connection: Any, _record: Any) -> None:
        caller = current_caller()
        if caller is not None and _route.get() is None:
            self.callers.note(*caller, time.monotonic())
            if (request := _request.get()) is not None:
                request.used_primary = True

    # --- watching the replica -----------------------------------------------------------------

    async def watch(self, stopping: asyncio.Event) -> None:
        """Note how far the replica has replayed, until ``stopping`` is set."""
        while not stopping.is_set():
            await self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.interval_s)

    async def sample(self) -> None:
        at = time.monotonic()
        try:
            position = await self._primary_position()
        except sa_exc.SQLAlchemyError:
            return  # the primary's outage is the requests' to report
        self._pending.append((at, position))
        try:
            replayed = await self._replayed()
        except sa_exc.SQLAlchemyError as exc:
            self._unreachable(exc)
            return
        self._advance(replayed)
        self.callers.forget_through(self.visible_through)

    def _advance(self, replayed: int | None) -> None:
        if replayed is None:  # not in recovery: promoted, or not a replica at all
            self._unreachable(None)
            return
        if not self._reachable:
            log.info("replica reachable: reads may go to it")
        self._reachable = True
        self.replayed = max(self.replayed, replayed)
        while self._pending and self._pending[0][1] <= replayed:
            self.visible_through = max(self.visible_through, self._pending.popleft()[0])

    def _unreachable(self, exc: BaseException | None) -> None:
        if self._reachable:
            reason = type(exc).__name__ if exc is not None else "not in recovery"
            log.warning("replica unavailable (%s): reads go to the primary", reason)
        self._reachable = False

    async def _primary_position(self) -> int:
        async with self.primary.connect() as conn:
            return consistency.position((await conn.execute(_PRIMARY_LSN)).scalar_one())

    async def _replayed(self) -> int | None:
        async with self.replica.connect() as conn:
            found = (await conn.execute(_REPLAYED_LSN)).scalar()
        return None if found is None else consistency.position(found)

    # --- routing ------------------------------------------------------------------------------

    async def run(self, read: Callable[[], Awaitable[R]]) -> R:
        """``read`` on the replica when it may, else (or when it fails there) on the primary."""
        if _route.get() is not None:  # inside a routed read already: keep its choice
            return await read()
        if await _on(_Route(None), self._replica_may_serve):  # the router's own queries
            # are not the caller's: they must not count as its use of the primary
            try:
                return await _on(_Route(self.replica), read)
            except Exception as exc:
                if not _replica_failed(exc):
                    raise
                self._unreachable(exc)
        return await _on(_Route(None), read)

    def lag_s(self) -> float:
        """How far behind the primary the replica is known to be (inf: not reachable)."""
        return time.monotonic() - self.visible_through if self._reachable else float("inf")

    async def _replica_may_serve(self) -> bool:
        if not self._reachable:
            return False
        caller = current_caller()
        last = None if caller is None else self.callers.last(*caller)
        if last is not None and last > self.visible_through:
            return await self._catch_up()
        request = _request.get()
        after = None if request is None else request.read_after
        if after is not None and after > self.replayed:
            # Past the token the replica may still be behind on others' writes: the lag
            # bound holds as for any read.
            return await self._catch_up(after) and self.lag_s() <= self.max_lag_s
        return self.lag_s() <= self.max_lag_s

    async def _catch_up(self, after: int | None = None) -> bool:
        """Wait (briefly) until the replica has replayed what the primary holds now, or only
        ``after`` when given (a position a request carried; never beyond the primary's own:
        a position the primary has not reached is no write a replica could show)."""
        deadline = time.monotonic() + self.own_writes_wait_s
        at = time.monotonic()
        try:
            now = await self._primary_position()
            self._pending.append((at, now))
            target = now if after is None else min(after, now)
            delay = 0.002
            while True:
                replayed = await self._replayed()
                self._advance(replayed)
                if replayed is not None and replayed >= target:
                    return True
                if replayed is None or time.monotonic() + delay > deadline:
                    return False
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.025)
        except sa_exc.SQLAlchemyError as exc:
            self._unreachable(exc)
            return False

    async def written_position(self) -> str | None:
        """The primary's WAL position, for a request's answer to carry; None when the primary
        does not answer (the request's own work is done: its answer is not failed for this)."""
        try:
            # As the router's own query, not the caller's use of the primary.
            return consistency.position_text(await _on(_Route(None), self._primary_position))
        except (sa_exc.SQLAlchemyError, StoreUnavailable) as exc:
            log.warning("primary's WAL position not read (%s): no token given", type(exc).__name__)
            return None

    async def close(self) -> None:
        event.remove(self.primary.sync_engine, "checkin", self._returned)
        await self.replica.dispose()


async def _on(route: _Route, read: Callable[[], Awaitable[R]]) -> R:
    token = _route.set(route)
    try:
        return await read()
    finally:
        _route.reset(token)


def _replica_failed(exc: BaseException) -> bool:
    """Whether a read failed for the replica's sake (an outage, a standby's refusal), as
    opposed to the request itself."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, StoreUnavailable | sa_exc.OperationalError | sa_exc.InterfaceError):
            return True
        if isinstance(seen, psycopg.Error) and (seen.sqlstate or "") in _STANDBY_REFUSED:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def replica_reads(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """Run a read-only ``AsyncMemory`` method on the replica when the store has one and may
    (see the module's docstring); nested in another such method, it keeps that one's choice."""

    @functools.wraps(method)
    async def routed(view: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        router: ReadRouter | None = view._backend.reads
        if router is None:
            return await method(view, *args, **kwargs)
        return await router.run(functools.partial(method, view, *args, **kwargs))

    return routed
