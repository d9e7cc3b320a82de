"""Tenant data keys (``per_tenant_keys``): each row holds one tenant's key wrapped under the
master key. The row-level policy shows a tenant only its own row; rotation and shredding run
across tenants."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import _Record
from memvault.db.tables import tenant_keys

_t = tenant_keys.c


@dataclasses.dataclass(frozen=True, slots=True)
class TenantKeyRow(_Record):
    tenant_id: str
    key_id: str
    wrapped: bytes
    nonce: bytes
    master_key_id: str
    created_at: datetime


async def get(conn: AsyncConnection, tenant_id: str) -> TenantKeyRow | None:
    row = (await conn.execute(sa.select(tenant_keys).where(_t.tenant_id == tenant_id))).first()
    return None if row is None else TenantKeyRow.from_row(row)


async def create(
    conn: AsyncConnection,
    tenant_id: str,
    *,
    key_id: str,
    wrapped: bytes,
    nonce: bytes,
    master_key_id: str,
) -> TenantKeyRow:
    """Insert this key unless another process made the tenant's first; answers the one kept."""
    await conn.execute(
        insert(tenant_keys)
        .values(
            tenant_id=tenant_id,
            key_id=key_id,
            wrapped=wrapped,
            nonce=nonce,
            master_key_id=master_key_id,
        )
        .on_conflict_do_nothing(index_elements=["tenant_id"])
    )
    kept = await get(conn, tenant_id)
    assert kept is not None  # just inserted, or inserted by the winner of the race
    return kept


async def destroy(conn: AsyncConnection, tenant_id: str) -> str | None:
    """Delete the tenant's key row in one statement; answers the destroyed key's id."""
    statement = tenant_keys.delete().where(_t.tenant_id == tenant_id).returning(_t.key_id)
    return (await conn.execute(statement)).scalar_one_or_none()


async def claim_to_rewrap(
    conn: AsyncConnection, master_key_id: str, batch: int
) -> list[TenantKeyRow]:
    """Keys still wrapped under an older master key; rows held elsewhere are skipped."""
    query = (
        sa.select(tenant_keys)
        .where(_t.master_key_id != master_key_id)
        .limit(batch)
        .with_for_update(skip_locked=True)
    )
    return [TenantKeyRow.from_row(row) for row in await conn.execute(query)]


async def rewrap(
    conn: AsyncConnection, tenant_id: str, *, wrapped: bytes, nonce: bytes, master_key_id: str
) -> None:
    await conn.execute(
        tenant_keys.update()
        .where(_t.tenant_id == tenant_id)
        .values(wrapped=wrapped, nonce=nonce, master_key_id=master_key_id)
    )


async def any_held(conn: AsyncConnection) -> bool:
    return bool((await conn.execute(sa.select(sa.exists().select_from(tenant_keys)))).scalar())


async def count_under_other_masters(conn: AsyncConnection, master_key_id: str) -> int:
    query = sa.select(sa.func.count()).where(_t.master_key_id != master_key_id)
    return int((await conn.execute(query)).scalar_one())
