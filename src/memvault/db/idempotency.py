"""The SQL of keyed writes (``memvault.idempotency``): claim a key, keep its answer, free it."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import IdempotentWriteRow
from memvault.db.tables import idempotent_writes as _w

_NOW = sa.func.now()


def _seconds(value: float) -> Any:
    return sa.func.make_interval(0, 0, 0, 0, 0, 0, value)


async def claim(
    conn: AsyncConnection,
    tenant_id: str,
    key: str,
    *,
    user_id: str,
    fingerprint: bytes,
    lease_s: float,
    keep_s: float,
) -> IdempotentWriteRow | None:
    """Claim ``key`` for a request about to run: None when it is now ours; else the row that
    holds it (a claim still running, a claim whose request wrote, or the answer of the first
    request). An answer past its time, and a claim whose lease lapsed before its request
    wrote anything (its server died mid-request), no longer hold it."""
    lapsed_unwritten = sa.and_(
        _w.c.status.is_(None), _w.c.committed_at.is_(None), _w.c.lease_until < _NOW
    )
    await conn.execute(
        _w.delete().where(
            _w.c.tenant_id == tenant_id,
            _w.c.key == key,
            sa.or_(_w.c.expires_at < _NOW, lapsed_unwritten),
        )
    )
    inserted = await conn.execute(
        insert(_w)
        .values(
            tenant_id=tenant_id,
            key=key,
            user_id=user_id,
            fingerprint=fingerprint,
            lease_until=_NOW + _seconds(lease_s),
            expires_at=_NOW + _seconds(keep_s),
        )
        .on_conflict_do_nothing()
        .returning(_w.c.key)
    )
    if inserted.first() is not None:
        return None
    held = await conn.execute(
        sa.select(_w, (_w.c.lease_until < _NOW).label("lapsed")).where(
            _w.c.tenant_id == tenant_id, _w.c.key == key
        )
    )
    row = held.first()
    return IdempotentWriteRow.from_row(row) if row is not None else None


async def renew(conn: AsyncConnection, tenant_id: str, key: str, lease_s: float) -> None:
    """Hold a running claim a while longer (the request is still at work)."""
    await conn.execute(
        _w.update()
        .where(_w.c.tenant_id == tenant_id, _w.c.key == key, _w.c.status.is_(None))
        .values(lease_until=_NOW + _seconds(lease_s))
    )


async def mark_written(conn: AsyncConnection, tenant_id: str, key: str) -> bool:
    """In the keyed request's own write transaction, before it commits: its claim now stands
    for a request that wrote, and commits (or rolls back) with the write. A transaction that
    changed nothing (no transaction id assigned: it only read) marks nothing. True when the
    claim was marked."""
    marked = await conn.execute(
        _w.update()
        .where(
            _w.c.tenant_id == tenant_id,
            _w.c.key == key,
            _w.c.status.is_(None),
            _w.c.committed_at.is_(None),
            sa.func.pg_current_xact_id_if_assigned().is_not(None),
        )
        .values(committed_at=_NOW)
        .returning(_w.c.key)
    )
    return marked.first() is not None


async def keep(
    conn: AsyncConnection, tenant_id: str, key: str, status: int, sealed: dict[str, Any]
) -> None:
    """The claim's answer, for the retries of the same request."""
    await conn.execute(
        _w.update()
        .where(_w.c.tenant_id == tenant_id, _w.c.key == key)
        .values(status=status, **sealed)
    )


async def release(conn: AsyncConnection, tenant_id: str, key: str) -> None:
    """Free a claim whose request failed before it wrote: its retry runs it again. One whose
    request wrote and then failed is not freed (running it again would write twice): its lease
    ends now, and its retries are told it was done and its answer lost."""
    mine = sa.and_(_w.c.tenant_id == tenant_id, _w.c.key == key, _w.c.status.is_(None))
    await conn.execute(_w.delete().where(mine, _w.c.committed_at.is_(None)))
    await conn.execute(
        _w.update().where(mine, _w.c.committed_at.is_not(None)).values(lease_until=_NOW)
    )


async def purge_expired(conn: AsyncConnection, limit: int) -> int:
    """Delete up to ``limit`` answers past their time (every tenant's)."""
    expired = sa.select(_w.c.tenant_id, _w.c.key).where(_w.c.expires_at < _NOW).limit(limit)
    result = await conn.execute(_w.delete().where(sa.tuple_(_w.c.tenant_id, _w.c.key).in_(expired)))
    return int(result.rowcount)
