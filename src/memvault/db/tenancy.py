"""Which tenant the current code runs for, told to PostgreSQL at the start of every transaction.

The row-level policies (migration 0005) let the service's role see a row only when its
``tenant_id`` equals the transaction's ``memvault.tenant`` setting, or when the transaction
says ``memvault.all_tenants = on``. The setting comes from a context variable, so it follows
the code through ``await`` and into SQLAlchemy's greenlets: ``AsyncMemory`` enters
``tenant_scope(its tenant)``; the worker and maintenance enter ``all_tenants()``. Code that
enters neither sees no tenant's rows at all — the safe default.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, TypeVar

from psycopg.pq import TransactionStatus
from psycopg.sql import Literal
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from memvault.db.driver_errors import store_errors

P = ParamSpec("P")
R = TypeVar("R")
APP_ROLE = "memvault_app"
_ALL = object()
_scope: ContextVar[object | str | None] = ContextVar("memvault_tenant_scope", default=None)
_SET = (
    "SELECT set_config('memvault.tenant', %(tenant)s, true), "
    "set_config('memvault.all_tenants', %(all)s, true)"
)
# Ranking transactions also turn nested loops off (see store.fetch_ranked) in the same round
# trip: one statement fewer per candidate list.
_SET_FOR_RANKING = _SET + ", set_config('enable_nestloop', 'off', true)"
# Behind a transaction pooler the connection's own settings (role, jit) cannot be given once
# at connect: each transaction takes them on, in the same round trip as the tenant.
_AS_APP = f", set_config('role', '{APP_ROLE}', true), set_config('jit', 'off', true)"
_ranking: ContextVar[bool] = ContextVar("memvault_ranking_transaction", default=False)
# The user a library call works for (its ``user_id``): what it embeds is cached under them, so
# erasing the user takes those entries (queries included) with them.
_user: ContextVar[str | None] = ContextVar("memvault_user_scope", default=None)


def current_owner() -> tuple[str, str] | None:
    """(tenant, user) of the call in progress, when it names one user of one tenant."""
    scope, user = _scope.get(), _user.get()
    return (scope, user) if isinstance(scope, str) and user is not None else None


def current_caller() -> tuple[str, str | None] | None:
    """(tenant, user or None) of the call in progress, when it works for one tenant."""
    scope = _scope.get()
    return (scope, _user.get()) if isinstance(scope, str) else None


def current_scope() -> object:
    """The scope transactions announce now: a tenant id, every tenant, or None (no tenant)."""
    return _scope.get()


# Set on a connection's info for its current transaction: nested loops are off in it.
NESTED_LOOPS_OFF = "memvault_nested_loops_off"


@contextmanager
def tenant_scope(tenant_id: str) -> Iterator[None]:
    token = _scope.set(tenant_id)
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def all_tenants() -> Iterator[None]:
    """For work that spans tenants by design: the worker, rotation, the sweep, admin tools."""
    token = _scope.set(_ALL)
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def ranking_transactions() -> Iterator[None]:
    """Transactions begun inside this block rank candidates: they start with nested loops
    off, told with the tenant (``store.fetch_ranked`` then needs no statement of its own)."""
    token = _ranking.set(True)
    try:
        yield
    finally:
        _ranking.reset(token)


def install(engine: AsyncEngine, *, per_transaction_role: bool = False) -> None:
    """Tell every transaction on ``engine`` the current scope, as transaction-local settings
    (with ``per_transaction_role``, the app role and the connection settings as well), in
    the round trip that begins the transaction.

    psycopg begins a transaction by sending ``BEGIN`` alone before its first statement: a
    round trip of its own, then another for the settings. So the driver's connections are
    kept in autocommit mode, where psycopg sends no ``BEGIN``, and every transaction begins
    with one simple query, ``BEGIN; SELECT set_config(name, value, true)``; psycopg's commit
    and rollback still end it (they act on the server's transaction state, not on the mode).
    A block that asks an isolation level of its own (``AUTOCOMMIT`` for ``VACUUM``, say) gets
    the mode it asked, and the settings in a statement of their own, as before."""
    suffix = _AS_APP if per_transaction_role else ""

    @event.listens_for(engine.sync_engine, "checkout")
    def _begin_ourselves(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        # Set at every checkout: SQLAlchemy resets a connection that ran at an isolation
        # level of its own to the driver's default (not autocommit) as it returns to the pool.
        driver = dbapi_connection.driver_connection
        if not driver.autocommit and driver.info.transaction_status == TransactionStatus.IDLE:
            dbapi_connection.autocommit = True

    @event.listens_for(engine.sync_engine, "begin")
    def _announce(conn: Any) -> None:
        scope = _scope.get()
        ranking = _ranking.get()
        sql = (_SET_FOR_RANKING if ranking else _SET) + suffix
        values = {
            "tenant": scope if isinstance(scope, str) else "",
            "all": "on" if scope is _ALL else "off",
        }
        driver = conn.connection.driver_connection
        if (
            driver.autocommit
            and "isolation_level" not in conn.get_execution_options()
            and driver.info.transaction_status == TransactionStatus.IDLE
        ):
            # No parameters, so psycopg sends it as one simple query: both statements in one
            # round trip. The values are quoted as literals by the driver.
            quoted = {name: Literal(value).as_string(driver) for name, value in values.items()}
            conn.exec_driver_sql("BEGIN; " + (sql % quoted))
        else:
            conn.exec_driver_sql(sql, values)
        conn.info[NESTED_LOOPS_OFF] = ranking


def scoped_to_tenant(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """Run an ``AsyncMemory`` method inside its view's tenant (an outage: StoreUnavailable),
    with the tenant's data key loaded first when keys are per tenant."""

    @functools.wraps(method)
    async def scoped(view: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        user = kwargs.get("user_id")
        token = _user.set(user if isinstance(user, str) else None)
        try:
            with tenant_scope(view.tenant_id), store_errors():
                await view._backend.load_tenant_keys((view.tenant_id,))
                return await method(view, *args, **kwargs)
        finally:
            _user.reset(token)

    return scoped


def across_tenants(
    method: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Run a coroutine function that spans tenants by design (an outage: StoreUnavailable)."""

    @functools.wraps(method)
    async def spanning(*args: P.args, **kwargs: P.kwargs) -> R:
        with all_tenants(), store_errors():
            return await method(*args, **kwargs)

    return spanning
