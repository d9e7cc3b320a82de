"""SQL of a health merge's undo record (``merge_undos``): written with the merge, read and
emptied by its undo, gone when it expires (the scheduled cleanup) or with its user."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import _Record
from memvault.db.tables import merge_undos

_u = merge_undos.c


@dataclass(frozen=True, slots=True)
class MergeUndoRow(_Record):
    tenant_id: str
    id: UUID
    user_id: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    created_at: datetime
    expires_at: datetime
    undone_at: datetime | None


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(merge_undos.insert().values(values))


async def claim(
    conn: AsyncConnection, tenant_id: str, merge_id: UUID, user_id: str, now: datetime
) -> MergeUndoRow | None:
    """The user's undo record of this merge, unexpired, locked for its undo."""
    query = (
        sa.select(merge_undos)
        .where(
            _u.tenant_id == tenant_id,
            _u.id == merge_id,
            _u.user_id == user_id,
            _u.expires_at > now,
        )
        .with_for_update()
    )
    found = (await conn.execute(query)).first()
    return None if found is None else MergeUndoRow.from_row(found)


async def mark_undone(
    conn: AsyncConnection, tenant_id: str, merge_id: UUID, emptied: dict[str, Any], now: datetime
) -> None:
    """The payload replaced by an empty one: what it held is back in the memories."""
    await conn.execute(
        merge_undos.update()
        .where(_u.tenant_id == tenant_id, _u.id == merge_id)
        .values(**emptied, undone_at=now)
    )


async def count_expired(conn: AsyncConnection, now: datetime) -> int:
    query = sa.select(sa.func.count()).select_from(merge_undos).where(_u.expires_at <= now)
    return int((await conn.execute(query)).scalar_one())


async def purge_expired(conn: AsyncConnection, now: datetime) -> int:
    result = await conn.execute(merge_undos.delete().where(_u.expires_at <= now))
    return int(result.rowcount)
