"""What a failover does to a connection in use: PostgreSQL (or HAProxy, marking the old primary
down) ends it in the middle of a transaction. Every statement after that answers
StoreUnavailable (503 store_unavailable), including one run by code that carried on past the
first failure in the same transaction, never an internal error."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from memvault.db.driver_errors import store_errors
from memvault.db.engine import create_engine
from memvault.db.tenancy import all_tenants
from memvault.errors import StoreUnavailable


async def test_statements_after_a_connection_lost_in_a_transaction_are_an_outage(
    database_url: str, raw: psycopg.Connection[Any]
) -> None:
    engine = create_engine(database_url, pool_size=1)
    try:
        with all_tenants():
            async with engine.connect() as conn:
                pid = await conn.scalar(sa.text("SELECT pg_backend_pid()"))
                raw.execute("SELECT pg_terminate_backend(%s)", (pid,))
                with pytest.raises(StoreUnavailable), store_errors():
                    await conn.execute(sa.text("SELECT 1"))
                # Code that logs a failed side write and goes on, on the same connection.
                with pytest.raises(StoreUnavailable), store_errors():
                    await conn.execute(sa.text("SELECT 2"))
            async with engine.connect() as conn:  # the pool has a fresh one
                assert await conn.scalar(sa.text("SELECT 3")) == 3
    finally:
        await engine.dispose()


async def test_a_write_that_reaches_a_read_only_server_is_an_outage(database_url: str) -> None:
    """In a failover's window the pooler or HAProxy may still reach a member in recovery: its
    refusal of a write is the store being away for a moment (503, Retry-After), not a 500."""
    engine = create_engine(database_url, pool_size=1)
    try:
        with all_tenants():
            async with engine.connect() as conn:
                await conn.execute(sa.text("SET default_transaction_read_only = on"))
                await conn.commit()
                with pytest.raises(StoreUnavailable) as refused, store_errors():
                    await conn.execute(sa.text("CREATE TEMPORARY TABLE t (x int)"))
                assert refused.value.retry_after
                await conn.rollback()
                await conn.execute(sa.text("RESET default_transaction_read_only"))
                await conn.commit()
    finally:
        await engine.dispose()
