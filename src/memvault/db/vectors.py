"""Chunk vectors: writing them, per-model HNSW indexes, and nearest-neighbour search.

The ``embedding`` column has no fixed dimension; each model gets a partial HNSW index over
``embedding::vector(d)`` restricted to its rows, and queries use the same expression.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memvault.db.store import AnyRow, list_filters
from memvault.db.tables import memories, memory_chunks

_c = memory_chunks.c
_m = memories.c
_MODEL_ID = re.compile(r"^[A-Za-z0-9._/:@-]{1,200}$")
_INDEX_LOCK = 0x6D76696478  # "mvidx"


def _checked(model: str, dims: int) -> tuple[str, int]:
    if not _MODEL_ID.match(model) or not 0 < int(dims) <= 16_000:
        raise ValueError(f"unusable model id or dimension: {model!r}, {dims!r}")
    return model, int(dims)


def _cast(dims: int) -> sa.ColumnElement[Any]:
    return sa.literal_column(f"memory_chunks.embedding::vector({int(dims)})")


def index_name(model: str) -> str:
    return f"ix_memory_chunks_hnsw_{hashlib.sha256(model.encode()).hexdigest()[:12]}"


async def ensure_index(engine: AsyncEngine, model: str, dims: int) -> None:
    """Create the model's HNSW index if missing, without blocking writes (CONCURRENTLY)."""
    model, dims = _checked(model, dims)
    ddl = (
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {index_name(model)} ON memory_chunks "
        f"USING hnsw ((embedding::vector({dims})) vector_cosine_ops) "
        f"WHERE model = '{model}'"
    )
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        exists = await conn.execute(
            sa.text("SELECT 1 FROM pg_indexes WHERE indexname = :n"), {"n": index_name(model)}
        )
        if exists.first() is not None:
            return
        # Never wait for this lock: a concurrent build waits for every open transaction, and a
        # second builder queued on a lock would be one of them. Whoever holds it builds.
        locked = await conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": _INDEX_LOCK})
        if not locked.scalar():
            return
        try:
            await conn.execute(sa.text(ddl))
        finally:
            await conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _INDEX_LOCK})


async def replace_chunks(
    conn: AsyncConnection,
    tenant_id: str,
    vectors_by_memory: Mapping[UUID, tuple[str, Sequence[Sequence[float]]]],
    model: str,
) -> None:
    """Memories' vectors (memory id → (user id, one vector per chunk)), replacing every older
    vector of those memories, of any model, in the caller's transaction."""
    if not vectors_by_memory:
        return
    await conn.execute(
        memory_chunks.delete().where(
            _c.tenant_id == tenant_id, _c.memory_id.in_(list(vectors_by_memory))
        )
    )
    await conn.execute(
        memory_chunks.insert(),
        [
            {
                "tenant_id": tenant_id,
                "memory_id": memory_id,
                "model": model,
                "chunk_index": i,
                "user_id": user_id,
                "embedding": list(v),
            }
            for memory_id, (user_id, vecs) in vectors_by_memory.items()
            for i, v in enumerate(vecs)
        ],
    )


async def scope_size(
    conn: AsyncConnection, tenant_id: str, user_id: str, model: str, *, cap: int
) -> int:
    """How many chunks the owner has under ``model``, counting no further than ``cap + 1``
    (all the caller needs to choose exact or approximate search, at a bounded cost)."""
    limited = (
        sa.select(sa.literal(1))
        .select_from(memory_chunks)
        .where(_c.tenant_id == tenant_id, _c.user_id == user_id, _c.model == model)
        .limit(cap + 1)
        .subquery()
    )
    return int((await conn.execute(sa.select(sa.func.count()).select_from(limited))).scalar_one())


async def nearest(
    conn: AsyncConnection,
    tenant_id: str,
    filters: dict[str, Any],
    query: Sequence[float],
    model: str,
    dims: int,
    limit: int,
    *,
    exact: bool,
    ef_search: int,
) -> Sequence[AnyRow]:
    """Memories by their best chunk's cosine distance, filtered in SQL, nearest first.

    ``exact`` scores every chunk in the owner's scope (small scopes: fast and perfect);
    otherwise the HNSW index proposes candidates, over-fetched, then the filters apply.
    """
    model, dims = _checked(model, dims)
    probe = sa.cast(sa.bindparam("q", _vector_text(query), type_=sa.Text()), Vector(dims))
    distance = _cast(dims).op("<=>")(probe)
    if exact:
        candidates = sa.select(_c.memory_id, distance.label("distance")).where(
            _c.tenant_id == tenant_id, _c.user_id == filters["user_id"], _c.model == model
        )
    else:
        await conn.execute(sa.text(f"SET LOCAL hnsw.ef_search = {int(ef_search)}"))
        ann = (
            sa.select(_c.tenant_id, _c.memory_id, distance.label("distance"))
            .where(_c.model == model)
            .order_by(distance)
            .limit(max(ef_search, limit * 10))
            .subquery("ann")
        )
        candidates = sa.select(ann.c.memory_id, ann.c.distance).where(ann.c.tenant_id == tenant_id)
    scored = candidates.subquery("scored")
    best = (
        sa.select(scored.c.memory_id, sa.func.min(scored.c.distance).label("distance"))
        .group_by(scored.c.memory_id)
        .subquery("best")
    )
    statement = (
        sa.select(memories, best.c.distance)
        .join(best, sa.and_(_m.tenant_id == tenant_id, _m.id == best.c.memory_id))
        .where(*list_filters(tenant_id, filters))
        .order_by(best.c.distance, _m.id)
        .limit(limit)
    )
    return (await conn.execute(statement)).all()


def _vector_text(values: Sequence[float]) -> str:
    return "[" + ",".join(f"{float(v):.7g}" for v in values) + "]"


async def first_vector(
    conn: AsyncConnection, tenant_id: str, memory_id: UUID
) -> tuple[str, list[float]] | None:
    """A memory's first chunk vector and its model (what a background add is compared by)."""
    query = (
        sa.select(_c.model, _c.embedding)
        .where(_c.tenant_id == tenant_id, _c.memory_id == memory_id)
        .order_by(_c.chunk_index)
        .limit(1)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else (str(row.model), [float(x) for x in row.embedding])
