"""The external vector index's side of PostgreSQL: the outbox its feeder claims, what a memory's
points must hold (its chunks and payload fields), and a recall page looked up from the index's
candidates.

The outbox is filled by triggers (migration 0017), in the transaction that writes a vector or
a payload field; ``set_feeding`` switches them on for an external index and off for pgvector.
Entries are claimed with a lease, like embedding jobs: a worker killed mid-sync leaves its
entries to the next claim once the lease runs out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memvault.db.records import RankedMemory, _Record
from memvault.db.store import (
    fetch_ranked,
    filter_values,
    page_parameters,
    ranked_page_template,
)
from memvault.db.tables import memories, memory_chunks, vector_index_outbox
from memvault.db.templates import param, template
from memvault.models import MemoryFilter

_o = vector_index_outbox.c
_c = memory_chunks.c
_m = memories.c
_TRIGGERS = (
    ("memory_chunks", "vector_index_outbox_chunks"),
    ("memories", "vector_index_outbox_memories"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class OutboxEntry(_Record):
    tenant_id: str
    memory_id: UUID
    user_id: str
    version: int
    attempts: int


@dataclasses.dataclass(frozen=True, slots=True)
class IndexedChunk(_Record):
    """One chunk vector of a memory with the memory's fields the index's payload holds
    (``embedding`` is None where only the payload was asked for)."""

    tenant_id: str
    memory_id: UUID
    user_id: str
    model: str
    chunk_index: int
    embedding: list[float] | None
    content_hash: bytes
    app_id: str
    project_id: str | None
    environment: str | None
    channel: str
    source: str | None
    tags: list[str]
    categories: list[str]
    importance: int | None
    memory_type: str
    tier: str
    created_at: datetime
    occurred_at: datetime


async def set_feeding(engine: AsyncEngine, on: bool) -> bool:
    """Switch the outbox triggers on (an external index) or off (pgvector); True when that
    changed anything. Run as the tables' owner; a no-op takes no lock."""
    wanted = "O" if on else "D"
    changed = False
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        for table, trigger in _TRIGGERS:
            state = await conn.scalar(
                sa.text("SELECT tgenabled FROM pg_trigger WHERE tgname = :n"), {"n": trigger}
            )
            if state is not None and state != wanted:
                verb = "ENABLE" if on else "DISABLE"
                await conn.execute(sa.text(f"ALTER TABLE {table} {verb} TRIGGER {trigger}"))
                changed = True
    return changed


async def claim(conn: AsyncConnection, limit: int, lease_s: float) -> list[OutboxEntry]:
    lease = sa.func.make_interval(0, 0, 0, 0, 0, 0, lease_s)
    free = sa.or_(_o.locked_until.is_(None), _o.locked_until < sa.func.now())
    picked = (
        sa.select(_o.tenant_id, _o.memory_id)
        .where(_o.available_at <= sa.func.now(), free)
        .order_by(_o.available_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("picked")
    )
    statement = (
        vector_index_outbox.update()
        .where(
            sa.tuple_(_o.tenant_id, _o.memory_id).in_(
                sa.select(picked.c.tenant_id, picked.c.memory_id)
            )
        )
        .values(locked_until=sa.func.now() + lease, attempts=_o.attempts + 1)
        .returning(_o.tenant_id, _o.memory_id, _o.user_id, _o.version, _o.attempts)
    )
    return [OutboxEntry.from_row(row) for row in await conn.execute(statement)]


def _claimed(entries: Sequence[OutboxEntry]) -> sa.ColumnElement[bool]:
    return sa.tuple_(_o.tenant_id, _o.memory_id, _o.version).in_(
        [(e.tenant_id, e.memory_id, e.version) for e in entries]
    )


async def done(conn: AsyncConnection, entries: Sequence[OutboxEntry]) -> None:
    """Remove the synced entries; one queued again by a later write (a new version) stays, and
    is free to claim at once."""
    if not entries:
        return
    await conn.execute(vector_index_outbox.delete().where(_claimed(entries)))
    keys = [(e.tenant_id, e.memory_id) for e in entries]
    await conn.execute(
        vector_index_outbox.update()
        .where(sa.tuple_(_o.tenant_id, _o.memory_id).in_(keys))
        .values(locked_until=None, available_at=sa.func.now())
    )


async def failed(
    conn: AsyncConnection, entries: Sequence[OutboxEntry], error: str, backoff_s: float
) -> None:
    """Try again after ``backoff_s`` (the index away): the entry is kept however long it is."""
    if not entries:
        return
    keys = [(e.tenant_id, e.memory_id) for e in entries]
    later = sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, backoff_s)
    await conn.execute(
        vector_index_outbox.update()
        .where(sa.tuple_(_o.tenant_id, _o.memory_id).in_(keys))
        .values(locked_until=None, available_at=later, last_error=error[:500])
    )


async def pending(conn: AsyncConnection) -> int:
    return int(await conn.scalar(sa.select(sa.func.count()).select_from(vector_index_outbox)) or 0)


def _chunk_columns(vectors: bool) -> list[Any]:
    embedding = _c.embedding if vectors else sa.null().label("embedding")
    names = [f.name for f in dataclasses.fields(IndexedChunk)]
    own = {"tenant_id", "memory_id", "user_id", "model", "chunk_index", "embedding"}
    return [
        _c.tenant_id,
        _c.memory_id,
        _c.user_id,
        _c.model,
        _c.chunk_index,
        embedding,
        *(_m[name] for name in names if name not in own),
    ]


def _chunks(vectors: bool) -> sa.Select[Any]:
    joined = memory_chunks.join(
        memories, sa.and_(_m.tenant_id == _c.tenant_id, _m.id == _c.memory_id)
    )
    return sa.select(*_chunk_columns(vectors)).select_from(joined)


async def chunks_of(
    conn: AsyncConnection, keys: Sequence[tuple[str, UUID]], *, vectors: bool = True
) -> list[IndexedChunk]:
    """Every chunk of these memories (tenant id, memory id), with its memory's payload."""
    if not keys:
        return []
    query = _chunks(vectors).where(sa.tuple_(_c.tenant_id, _c.memory_id).in_(list(keys)))
    return [_chunk(row) for row in await conn.execute(query)]


async def chunks_of_owner(
    conn: AsyncConnection, tenant_id: str, user_id: str, *, vectors: bool = False
) -> list[IndexedChunk]:
    query = _chunks(vectors).where(_c.tenant_id == tenant_id, _c.user_id == user_id)
    return [_chunk(row) for row in await conn.execute(query)]


def _chunk(row: Any) -> IndexedChunk:
    chunk = IndexedChunk.from_row(row)
    if chunk.embedding is None:
        return chunk
    return dataclasses.replace(chunk, embedding=[float(x) for x in chunk.embedding])


async def owners(conn: AsyncConnection) -> list[tuple[str, str, str]]:
    """Every (tenant, user, model) that has chunks: the collections an index should hold."""
    query = sa.select(_c.tenant_id, _c.user_id, _c.model).distinct()
    return [(str(t), str(u), str(m)) for t, u, m in await conn.execute(query)]


async def candidates_page(
    conn: AsyncConnection,
    tenant_id: str,
    filters: MemoryFilter,
    candidates: Sequence[tuple[UUID, float]],
    limit: int,
) -> list[RankedMemory]:
    """The index's candidates (memory id, distance) that pass every filter, as ranked memory
    rows, nearest first: the index narrows, PostgreSQL decides (tenant, owner, expiry and the
    filters the payload does not hold). Each candidate is looked up by id, as the HNSW path's
    cut is (``store.ranked_page_template``'s ``by_id``), in a statement built once per shape."""
    if not candidates:
        return []
    own = filter_values(tenant_id, filters)
    shape = tuple(own)
    statement = template(("index-candidates", shape, limit), _candidates_page, shape, limit)
    params = page_parameters([own]) | {
        "ids": [memory_id for memory_id, _ in candidates],
        "distances": [float(distance) for _, distance in candidates],
    }
    return await fetch_ranked(conn, statement, params)


def _candidates_page(shape: tuple[str, ...], limit: int) -> sa.Select[Any]:
    ids = sa.func.unnest(param("ids", type_=ARRAY(sa.Uuid())))
    distances = sa.func.unnest(param("distances", type_=ARRAY(sa.Float())))
    best = (
        sa.select(ids.label("memory_id"), distances.label("distance"))
        .cte("best")
        .prefix_with("MATERIALIZED")
    )
    return ranked_page_template(shape, best, best.c.distance, limit, by_id=True)


async def owner_chunks(conn: AsyncConnection, tenant_id: str, user_id: str) -> int:
    query = (
        sa.select(sa.func.count())
        .select_from(memory_chunks)
        .where(_c.tenant_id == tenant_id, _c.user_id == user_id)
    )
    return int(await conn.scalar(query) or 0)
