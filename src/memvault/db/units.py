"""Units of work: how code outside db/ gets a connection. One call opens the transaction (or a
connection that only reads), names the tenant it works for when the caller has not already
(row-level security then shows that tenant's rows only; every tenant's for work that spans
them by design) and translates a driver's error once (db/errors.py): the caller neither
imports SQLAlchemy nor catches its errors, and hands the connection to db/ functions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from memvault.db.errors import store_errors
from memvault.db.tenancy import all_tenants, tenant_scope

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


@asynccontextmanager
async def transaction(
    engine: AsyncEngine, tenant_id: str | None = None, *, every_tenant: bool = False
) -> AsyncIterator[AsyncConnection]:
    """A transaction, committed when the block ends and rolled back when it raises."""
    with _scope(tenant_id, every_tenant), store_errors():
        async with engine.begin() as conn:
            yield conn


@asynccontextmanager
async def reading(
    engine: AsyncEngine, tenant_id: str | None = None, *, every_tenant: bool = False
) -> AsyncIterator[AsyncConnection]:
    """A connection for reads: whatever it began is rolled back when the block ends."""
    with _scope(tenant_id, every_tenant), store_errors():
        async with engine.connect() as conn:
            yield conn


def _scope(tenant_id: str | None, every_tenant: bool) -> ExitStack:
    """The tenant the unit works for; neither given, the caller's scope stands."""
    stack = ExitStack()
    if tenant_id is not None:
        stack.enter_context(tenant_scope(tenant_id))
    elif every_tenant:
        stack.enter_context(all_tenants())
    return stack
