"""Connecting to PostgreSQL and bringing its schema up to date.

One code path for both modes: the embedded server only decides where the URL comes from.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from memvault.db import tenancy
from memvault.errors import StoreUnavailable

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Any fixed 64-bit number: every process that migrates takes this advisory lock first, so two
# servers starting at once apply each migration exactly once.
_MIGRATION_LOCK = 0x6D656D7661756C74  # "memvault"


def driver_url(url: str) -> sa.URL:
    """Accept plain ``postgresql://`` URLs and pin them to the psycopg 3 driver."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql+psycopg")


def libpq_url(url: str) -> str:
    """The same URL as plain libpq understands it (for LISTEN connections)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


# A server cut off by the network (a partition, a failed-over primary's host gone) is noticed
# by the kernel within seconds instead of TCP's minutes: data unacknowledged for 5 s, or an
# idle connection whose keepalives go unanswered, ends the connection, and the request answers
# 503 store_unavailable within its deadline. A live server acknowledges at once, however long
# its query runs; Unix sockets ignore these.
_NETWORK_LIMITS = {
    "connect_timeout": 5,
    "tcp_user_timeout": 5000,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
}


def create_engine(
    url: str,
    *,
    pool_size: int = 10,
    pool_timeout_s: float = 30.0,
    as_app: bool = True,
    transaction_pooler: bool = False,
) -> AsyncEngine:
    """A pool for ``url``. ``as_app``: every session runs as the app role, which owns nothing,
    so the row-level policies apply to it (the owner would bypass them), and every transaction
    names its tenant (see db/tenancy.py). ``as_app=False`` is for DDL and ANALYZE only.
    ``transaction_pooler``: ``url`` is a pooler handing each transaction whichever server
    connection is free, so the role and settings are told per transaction instead of once
    per connection (PgBouncer also refuses the ``options`` startup parameter).
    ``pool_timeout_s``: the deadline of a caller beyond the pool; until it passes the caller
    waits its turn (the pool queues waiters in order), then StoreUnavailable (503)."""
    options = "-c jit=off" + (f" -c role={tenancy.APP_ROLE}" if as_app else "")
    connect_args: dict[str, Any] = {"prepare_threshold": None, **_NETWORK_LIMITS}
    if not transaction_pooler:
        connect_args["options"] = options
    engine = create_async_engine(
        driver_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=1800,
        # Back-pressure, not failure: work beyond the pool waits here for a connection, and
        # only one that waited past its deadline fails (503 store_unavailable).
        pool_timeout=pool_timeout_s,
        # No server-side prepared statements: each query is planned with its real parameters,
        # which lets the planner match a model's partial vector index (and a transaction
        # pooler could not keep them: the next transaction may run on another connection).
        # JIT compiling a short OLTP query costs more than running it (seen: 400 ms on BM25).
        connect_args=connect_args,
    )
    _ping_when_idle(engine)
    if as_app:
        tenancy.install(engine, per_transaction_role=transaction_pooler)
    return engine


# A pooled connection unused for this long is pinged before it is handed out.
PING_AFTER_IDLE_S = 1.0


def _ping_when_idle(engine: AsyncEngine) -> None:
    """A connection that died with a restarted server is replaced before use, so memvault
    recovers by itself once PostgreSQL is back. Only a connection idle for a while is pinged:
    a restart takes longer than that, and a connection used a moment ago is alive (pinging
    every checkout cost a round trip per candidate list, ten per remember()). A connection
    that broke in between fails its statement, which invalidates the pool (a 503, once)."""
    dialect = engine.sync_engine.dialect

    # A connection just made is alive: it is not pinged. (A failed ping makes the pool connect
    # again; pinging that one too would fail the same way behind a pooler that accepts the
    # login but has no server, and three in a row end in an error that is not an outage.)
    @event.listens_for(engine.sync_engine, "connect")
    def _made(_dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _checked(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED_AT)
        if returned is not None and time.monotonic() - returned < PING_AFTER_IDLE_S:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                # The pool replaces the connection and checks out another.
                raise sa.exc.DisconnectionError() from exc
            raise


_RETURNED_AT = "memvault_returned_at"


def _alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


# Once per process: reading the scripts compiles every migration file (a third of a second,
# more on a loaded machine), and they do not change under a running process.
@functools.cache
def head_revision() -> str | None:
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


def migrate(url: str) -> None:
    """Apply every pending migration, holding an advisory lock so concurrent starts are safe."""
    engine = sa.create_engine(driver_url(url), poolclass=sa.NullPool)
    try:
        with engine.connect() as conn:
            # A store already at head (every start but the first after an upgrade) is not made
            # to wait for the lock, nor for alembic to compile every migration file again.
            if current_revision(conn) == head_revision():
                return
            # Every migration runs in this one transaction, which holds the lock to its end: no
            # unlock to forget, even on a connection a pooler shares between transactions.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            config = _alembic_config()
            config.attributes["connection"] = conn
            command.upgrade(config, "head")
            conn.commit()
    except OperationalError as exc:
        raise StoreUnavailable(
            "Cannot reach PostgreSQL to apply migrations; check MEMVAULT_DATABASE_URL."
        ) from exc
    finally:
        engine.dispose()


def current_revision(sync_conn: sa.Connection) -> str | None:
    return MigrationContext.configure(sync_conn).get_current_revision()


async def pgvector_version(conn: AsyncConnection) -> str | None:
    """The installed pgvector extension's version; None when it is missing."""
    found = await conn.execute(
        sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    )
    version = found.scalar()
    return None if version is None else str(version)
