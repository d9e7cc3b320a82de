"""Which memories a deletion takes, and the rows keyed by a memory that go with them: the
conditions and statements lifecycle/deletion.py runs, so it builds no SQL itself.

A ``MemoryCondition`` picks memory rows; one is built here for each scope (a memory, a
conversation's turns, a user or one app of theirs, a tenant, a list of ids, the expired).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING
from uuid import UUID

import sqlalchemy as sa

from memvault.db.tables import conversation_turns, memories

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

# A condition on the memories table: which rows a deletion (or a job) takes.
MemoryCondition = sa.ColumnElement[bool]

_m = memories.c


def memory_where(tenant_id: str, memory_id: UUID, user_id: str) -> MemoryCondition:
    return sa.and_(_m.tenant_id == tenant_id, _m.id == memory_id, _m.user_id == user_id)


def conversation_where(tenant_id: str, user_id: str, conversation_id: str) -> MemoryCondition:
    """The memories that are this conversation's turns."""
    t = conversation_turns.c
    turns = sa.select(t.memory_id).where(
        t.tenant_id == tenant_id, t.user_id == user_id, t.conversation_id == conversation_id
    )
    return sa.and_(_m.tenant_id == tenant_id, _m.user_id == user_id, _m.id.in_(turns))


def user_where(tenant_id: str, user_id: str, app_id: str | None) -> MemoryCondition:
    where = [_m.tenant_id == tenant_id, _m.user_id == user_id]
    if app_id is not None:
        where.append(_m.app_id == app_id)
    return sa.and_(*where)


def tenant_where(tenant_id: str) -> MemoryCondition:
    return _m.tenant_id == tenant_id


def memories_where(tenant_id: str, user_id: str, memory_ids: Sequence[UUID]) -> MemoryCondition:
    return sa.and_(_m.tenant_id == tenant_id, _m.user_id == user_id, _m.id.in_(list(memory_ids)))


def expired_where(now: datetime) -> MemoryCondition:
    """The one definition of expired: past ``expires_at``, or temporal and past
    ``valid_until``. The scheduled cleanup and ``memvault cleanup`` both delete these."""
    return sa.or_(
        sa.and_(_m.expires_at.is_not(None), _m.expires_at <= now),
        temporal_past_validity(now),
    )


def temporal_past_validity(now: datetime) -> MemoryCondition:
    """The temporal half of expired (memory health reports these before cleanup runs)."""
    return sa.and_(_m.memory_type == "temporal", _m.valid_until.is_not(None), _m.valid_until <= now)


def in_tenant(where: MemoryCondition, tenant_id: str) -> MemoryCondition:
    """``where``, narrowed to one tenant's memories."""
    return sa.and_(_m.tenant_id == tenant_id, where)


def one_of(where: MemoryCondition, memory_id: UUID) -> MemoryCondition:
    """``where``, narrowed to one memory."""
    return sa.and_(where, _m.id == memory_id)


async def delete_by_memory(
    conn: AsyncConnection, table: sa.Table, tenant_id: str, ids: Sequence[UUID]
) -> int:
    """Rows of ``table`` (chunks, postings, jobs, decay records) that belong to these memories."""
    if not ids:
        return 0
    column = table.c.memory_id if "memory_id" in table.c else table.c.item_id
    query = table.delete().where(table.c.tenant_id == tenant_id, column.in_(list(ids)))
    return (await conn.execute(query)).rowcount or 0
