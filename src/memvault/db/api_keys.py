"""API key rows: only a hash of each secret is stored. This table has no row-level policy
(a key is looked up before its tenant is known), so only these functions touch it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.store import AnyRow
from memvault.db.tables import api_keys

_k = api_keys.c


async def insert_key(
    conn: AsyncConnection,
    *,
    tenant_id: str,
    name: str | None,
    prefix: str,
    secret_hash: bytes,
    scopes: Sequence[str],
) -> AnyRow:
    statement = (
        api_keys.insert()
        .values(
            id=uuid.uuid4(),
            tenant_id=tenant_id,
            name=name,
            prefix=prefix,
            secret_hash=secret_hash,
            scopes=list(scopes),
        )
        .returning(api_keys)
    )
    row: AnyRow = (await conn.execute(statement)).one()
    return row


async def list_keys(conn: AsyncConnection, tenant_id: str | None) -> Sequence[AnyRow]:
    query = sa.select(api_keys).order_by(_k.created_at, _k.id)
    if tenant_id is not None:
        query = query.where(_k.tenant_id == tenant_id)
    return (await conn.execute(query)).all()


async def revoke(conn: AsyncConnection, id_or_prefix: str) -> AnyRow | None:
    """Revoke by id or prefix; revoking twice keeps the first time."""
    try:
        by = _k.id == uuid.UUID(id_or_prefix)
    except ValueError:
        by = _k.prefix == id_or_prefix
    statement = (
        api_keys.update()
        .where(by)
        .values(revoked_at=sa.func.coalesce(_k.revoked_at, sa.func.now()))
        .returning(api_keys)
    )
    row: AnyRow | None = (await conn.execute(statement)).one_or_none()
    return row


async def by_prefix(conn: AsyncConnection, prefix: str) -> AnyRow | None:
    return (await conn.execute(sa.select(api_keys).where(_k.prefix == prefix))).one_or_none()
