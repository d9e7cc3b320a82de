"""SQL of memory health (what a user's memories need) and of export / import (a user's
memories with their history and vectors, out and back in, ids kept)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.erasure import temporal_past_validity
from memvault.db.records import FailedJob
from memvault.db.tables import embedding_jobs, memories, memory_chunks, memory_history
from memvault.models import TURN_SOURCE

_m = memories.c
_h = memory_history.c
_c = memory_chunks.c
_j = embedding_jobs.c
SAMPLE = 50


def _owner(tenant_id: str, user_id: str) -> list[sa.ColumnElement[bool]]:
    return [_m.tenant_id == tenant_id, _m.user_id == user_id]


async def counts_where(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    conditions: Sequence[sa.ColumnElement[bool]],
) -> tuple[int, list[int]]:
    """How many memories the user has, and how many meet each condition: one pass over them."""
    counted = [sa.func.count().filter(c) for c in conditions]
    query = sa.select(sa.func.count(), *counted).select_from(memories)
    total, *each = (await conn.execute(query.where(*_owner(tenant_id, user_id)))).one()
    return int(total), [int(n) for n in each]


async def sample_where(
    conn: AsyncConnection, tenant_id: str, user_id: str, condition: sa.ColumnElement[bool]
) -> list[UUID]:
    """The first ``SAMPLE`` ids (oldest first) of the user's memories that meet ``condition``."""
    query = (
        sa.select(_m.id)
        .where(*_owner(tenant_id, user_id), condition)
        .order_by(_m.created_at, _m.id)
        .limit(SAMPLE)
    )
    return [r[0] for r in await conn.execute(query)]


def expired_temporal(now: datetime) -> sa.ColumnElement[bool]:
    """What the next cleanup deletes as expired for being temporal (db/erasure.py says)."""
    return temporal_past_validity(now)


def not_recalled_since(before: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(sa.func.coalesce(_m.last_accessed, _m.created_at) < before)


def low_importance_unrecalled(floor: int, before: datetime) -> sa.ColumnElement[bool]:
    """At or below the decay floor, never recalled, and written before ``before``; never a
    conversation turn (what was said is not noise to delete)."""
    return sa.and_(
        _m.importance <= floor,
        _m.access_count == 0,
        _m.created_at < before,
        _m.source.is_distinct_from(TURN_SOURCE),
    )


def vectorless(before: datetime) -> sa.ColumnElement[bool]:
    """Not searchable by meaning: never embedded (and not just written). A memory stored
    unindexed on purpose (embedded, no model) is not a problem to report."""
    has_chunks = sa.exists().where(_c.tenant_id == _m.tenant_id, _c.memory_id == _m.id)
    lost = sa.and_(~has_chunks, _m.embedding_model.is_not(None))
    return sa.and_(_m.created_at < before, sa.or_(_m.embedded.is_(False), lost))


async def failed_jobs(conn: AsyncConnection, tenant_id: str, user_id: str) -> list[FailedJob]:
    query = (
        sa.select(_j.id, _j.memory_id)
        .join(memories, sa.and_(_m.tenant_id == _j.tenant_id, _m.id == _j.memory_id))
        .where(_j.tenant_id == tenant_id, _m.user_id == user_id, _j.status == "failed")
        .order_by(_j.id)
    )
    return [FailedJob.from_row(r) for r in await conn.execute(query)]


_WINDOW = sa.text(
    """
    SELECT c.memory_id, c.created_at FROM memory_chunks c
    JOIN memories m ON m.tenant_id = c.tenant_id AND m.id = c.memory_id
    WHERE c.tenant_id = :tenant AND c.user_id = :user AND c.model = :model
      AND c.chunk_index = 0 AND m.source IS DISTINCT FROM :turn
    ORDER BY c.created_at DESC, c.memory_id LIMIT :scan
    """
)

# Every pair with a fresh member, within the window: fresh x window distances, not window^2.
_NEAR = sa.text(
    """
    WITH recent AS MATERIALIZED (
        SELECT memory_id, embedding FROM memory_chunks
        WHERE tenant_id = :tenant AND user_id = :user AND model = :model AND chunk_index = 0
          AND memory_id = ANY(CAST(:window AS uuid[]))
    ), fresh AS MATERIALIZED (
        SELECT memory_id, embedding FROM recent WHERE memory_id = ANY(CAST(:fresh AS uuid[]))
    )
    SELECT LEAST(a.memory_id, b.memory_id) AS a, GREATEST(a.memory_id, b.memory_id) AS b
    FROM fresh a JOIN recent b ON a.memory_id <> b.memory_id
    WHERE (b.memory_id <> ALL(CAST(:fresh AS uuid[])) OR a.memory_id < b.memory_id)
      AND (a.embedding <=> b.embedding) <= :distance
    LIMIT :pairs
    """
)


async def duplicate_window(
    conn: AsyncConnection, tenant_id: str, user_id: str, model: str, scan: int
) -> dict[UUID, datetime]:
    """The user's newest ``scan`` memories that a merge may touch (no conversation turn), each
    with when its first chunk was written (a new embedding is a new chunk row)."""
    params = {"tenant": tenant_id, "user": user_id, "model": model, "scan": scan}
    found = await conn.execute(_WINDOW, {**params, "turn": TURN_SOURCE})
    return {r.memory_id: r.created_at for r in found}


async def near_duplicate_pairs(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    model: str,
    similarity: float,
    *,
    window: Sequence[UUID],
    fresh: Sequence[UUID],
    pairs: int,
) -> list[tuple[UUID, UUID]]:
    """Pairs among ``window`` (memory ids) with at least one member in ``fresh``, whose first
    chunks are at least this similar (cosine) by the given model, each as (lower, higher)."""
    params = {
        "tenant": tenant_id,
        "user": user_id,
        "model": model,
        "distance": 1 - similarity,
        "window": list(window),
        "fresh": list(fresh),
        "pairs": pairs,
    }
    return [(r.a, r.b) for r in await conn.execute(_NEAR, params)]


async def set_tier(
    conn: AsyncConnection, tenant_id: str, user_id: str, ids: Sequence[UUID], tier: str
) -> int:
    query = (
        memories.update()
        .where(*_owner(tenant_id, user_id), _m.id.in_(list(ids)), _m.tier != tier)
        .values(tier=tier)
    )
    return (await conn.execute(query)).rowcount or 0


async def owned_unembedded(
    conn: AsyncConnection, tenant_id: str, user_id: str, ids: Sequence[UUID]
) -> list[UUID]:
    """Which of these ids are the user's memories without vectors."""
    query = sa.select(_m.id).where(
        *_owner(tenant_id, user_id), _m.id.in_(list(ids)), vectorless(datetime.max)
    )
    return [r[0] for r in await conn.execute(query)]
