"""API key rows: only a hash of each secret is stored. This table has no row-level policy
(a key is looked up before its tenant is known), so only these functions touch it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import ApiKeyRow
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
) -> ApiKeyRow:
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
    return ApiKeyRow.from_row((await conn.execute(statement)).one())


async def list_keys(conn: AsyncConnection, tenant_id: str | None) -> list[ApiKeyRow]:
    query = sa.select(api_keys).order_by(_k.created_at, _k.id)
    if tenant_id is not None:
        query = query.where(_k.tenant_id == tenant_id)
    return [ApiKeyRow.from_row(row) for row in await conn.execute(query)]


async def revoke(conn: AsyncConnection, id_or_prefix: str) -> ApiKeyRow | None:
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
    return _key((await conn.execute(statement)).one_or_none())


async def by_prefix(conn: AsyncConnection, prefix: str) -> ApiKeyRow | None:
    return _key((await conn.execute(sa.select(api_keys).where(_k.prefix == prefix))).one_or_none())


def _key(row: Any) -> ApiKeyRow | None:
    return None if row is None else ApiKeyRow.from_row(row)
