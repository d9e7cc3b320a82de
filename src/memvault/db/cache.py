"""The PostgreSQL embedding cache (an UNLOGGED table): vectors by a digest of model and text."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.tables import embedding_cache

_c = embedding_cache.c


async def get_vectors(conn: AsyncConnection, keys: Sequence[bytes]) -> dict[bytes, bytes]:
    """Packed vectors of the keys found and not yet expired."""
    query = sa.select(_c.key, _c.embedding).where(
        _c.key.in_(list(keys)), _c.expires_at > sa.func.now()
    )
    return {row.key: row.embedding for row in await conn.execute(query)}


async def put_vectors(conn: AsyncConnection, packed: dict[bytes, bytes], expires: datetime) -> None:
    # In key order: two writers caching the same names in their own orders ("Xan", "Yu" and
    # "Yu", "Xan") each held one row the other wanted, and PostgreSQL broke the deadlock only
    # after deadlock_timeout (1 s) by failing one. In one order they queue instead.
    rows = [{"key": k, "embedding": v, "expires_at": expires} for k, v in sorted(packed.items())]
    if rows:
        await conn.execute(_PUT_VECTORS, rows)


# The rows go as parameter sets of one statement compiled once (psycopg sends them in a few
# multi-row round trips); a VALUES list of the batch's rows was compiled again on every call.
_INSERT_VECTORS = insert(embedding_cache)
_PUT_VECTORS = _INSERT_VECTORS.on_conflict_do_update(
    index_elements=["key"],
    set_={
        "embedding": _INSERT_VECTORS.excluded.embedding,
        "expires_at": _INSERT_VECTORS.excluded.expires_at,
    },
)


async def purge_expired(conn: AsyncConnection) -> None:
    await conn.execute(embedding_cache.delete().where(_c.expires_at <= sa.func.now()))


async def delete_vectors(conn: AsyncConnection, keys: Sequence[bytes]) -> int:
    """Forget these entries (a deleted memory's text must leave no trace, cached or not)."""
    if not keys:
        return 0
    return (
        await conn.execute(embedding_cache.delete().where(_c.key.in_(list(keys))))
    ).rowcount or 0


async def delete_owned(conn: AsyncConnection, tag: bytes) -> int:
    """Forget every entry made for one owner (its keys start with the owner's tag)."""
    starts = sa.func.substring(_c.key, 1, len(tag)) == tag
    return (await conn.execute(embedding_cache.delete().where(starts))).rowcount or 0
