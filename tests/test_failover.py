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
