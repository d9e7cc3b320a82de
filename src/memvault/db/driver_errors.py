"""The one place where a failing database becomes ``StoreUnavailable`` (503 store_unavailable).

The service (``AsyncMemory`` and ``AsyncAdmin``) wraps every call in :func:`store_errors`, so
library callers and every route see the same error, and the faces never meet a driver's
exception. Errors about the request itself (a constraint, bad data) are not outages and pass
through unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import sqlalchemy.exc as sa_exc

from memvault.errors import StoreUnavailable, WriteConflict
from memvault.metrics import STORE_UNAVAILABLE

log = logging.getLogger(__name__)
RETRY_AFTER_S = 5.0
_CONFLICT_RETRY_AFTER_S = 1.0
# SQLSTATE read_only_sql_transaction: a write sent to a server in recovery.
_READ_ONLY = "25006"
# SQLAlchemy's code for "Can't reconnect until invalid transaction is rolled back".
_LOST_IN_TRANSACTION = "8s2b"
_OUTAGES: tuple[type[BaseException], ...] = (
    sa_exc.OperationalError,  # connection refused or lost, server shutting down, cancelled
    sa_exc.InterfaceError,  # a connection already closed underneath us
    sa_exc.TimeoutError,  # no pooled connection came free in time
    psycopg.OperationalError,
    psycopg.InterfaceError,
    ConnectionError,
)

# What the database layer raises when a statement fails, refused or the store away: code that
# carries on past a failed side write (a cache, access counts, the audit) catches these, named
# here so that no module outside db/ names the driver's types.
STATEMENT_FAILED: tuple[type[BaseException], ...] = (sa_exc.SQLAlchemyError,)
# A side read or write that failed (a cache, access counts, a background settle): a statement
# refused, or the store away, which a unit of work (db/units.py) reports as StoreUnavailable.
SIDE_WORK_FAILED: tuple[type[BaseException], ...] = (*STATEMENT_FAILED, StoreUnavailable)
# The connection failed (not the statement): a scheduled run stops for it instead of skipping
# the record it was on.
CONNECTION_FAILED: tuple[type[BaseException], ...] = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
)
# The server answered a statement with an error (DDL racing another process's, for one).
SERVER_REFUSED: tuple[type[BaseException], ...] = (sa_exc.DBAPIError,)


def refused_value(exc: BaseException) -> bool:
    """Whether the store refused a row for what it holds (a value out of range, a broken
    constraint, text it cannot encode), as opposed to being away or failing as a whole."""
    if isinstance(exc, sa_exc.DataError | sa_exc.IntegrityError):
        return True
    return type(exc) is sa_exc.StatementError  # the driver refused a value before sending it


def as_store_error(exc: BaseException) -> StoreUnavailable | None:
    """The ``StoreUnavailable`` an outage means (a ``WriteConflict`` for work PostgreSQL rolled
    back for a concurrent write), or None when ``exc`` is neither."""
    driver = exc.orig if isinstance(exc, sa_exc.DBAPIError) else exc
    # SQLSTATE class 40, transaction rollback: a deadlock, a serialization failure.
    if isinstance(driver, psycopg.Error) and (driver.sqlstate or "").startswith("40"):
        log.warning("write conflict: %s", type(driver).__name__)
        return WriteConflict(
            "A concurrent write conflicted with this request and PostgreSQL rolled it back; "
            "nothing of it was stored. Retry it.",
            retry_after=_CONFLICT_RETRY_AFTER_S,
        )
    outage = (
        isinstance(exc, _OUTAGES)
        # A server that refuses writes: during a failover the pooler or HAProxy may still
        # reach a member that is (again, or not yet no longer) a read-only replica.
        or (isinstance(driver, psycopg.Error) and driver.sqlstate == _READ_ONLY)
        or (isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated)
        # A statement after one that lost the connection, in the same transaction (code that
        # carries on past a failed cache or audit write): the connection is gone, an outage.
        or (isinstance(exc, sa_exc.PendingRollbackError) and exc.code == _LOST_IN_TRANSACTION)
    )
    if not outage:
        return None
    STORE_UNAVAILABLE.inc()
    log.warning("store unavailable: %s", type(exc).__name__)
    return StoreUnavailable(
        "The memory store (PostgreSQL) is unavailable. Retry after the time in Retry-After; "
        "an acknowledged write is never lost, and a write that got this answer may be retried.",
        retry_after=RETRY_AFTER_S,
    )


@contextmanager
def store_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        translated = as_store_error(exc)
        if translated is None:
            raise
        raise translated from exc
