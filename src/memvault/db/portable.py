"""SQL of the portable export: every row a user owns, table by table, out as column mappings
(the format carries each column, so a typed record per table would only repeat the schema), and
back in with its key kept, a row already there left as it is.

Which tables hold a user's rows is the catalogue's (db/catalogue.py): ``OWNED`` below is what
export reads and import writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db import catalogue
from memvault.db.tables import (
    conversation_turns,
    conversations,
    user_profiles,
)

# A row as plain column values (vectors as lists of floats), not a SQLAlchemy row.
Columns = dict[str, Any]

# Each kind of a user's data and its table, and what an export holds, leaves to be rebuilt or
# leaves out: all read from the catalogue of where user data lives (db/catalogue.py).
TABLES: dict[str, sa.Table] = {
    p.kind: catalogue.table(p) for p in catalogue.places(export="line") if p.kind is not None
}
# Child tables (turns, sources, blockers, mentions) travel inside their parent's line.
OWNED = (*TABLES.values(), *catalogue.tables(export="inside"))
REBUILT = {p.name: p.why for p in catalogue.places(export="rebuilt")}
LEFT_OUT = {p.name: p.why for p in catalogue.places(export="left_out")}
_ORDER = {
    "memories": ("created_at", "id"),
    "entities": ("first_seen", "id"),
    "facts": ("recorded_at", "id"),
    "relations": ("recorded_at", "id"),
    "fact_reviews": ("created_at", "id"),
    "entity_merges": ("created_at", "id"),
    "fact_promotions": ("promoted_at", "fact_id"),
    "conversations": ("started_at", "id"),
    "tool_invocations": ("created_at", "id"),
    "strategies": ("created_at", "id"),
    "goals": ("created_at", "id"),
    "user_profiles": ("channel",),
}


def _plain(value: Any) -> Any:
    # pgvector hands vectors back as numpy arrays.
    if hasattr(value, "tolist") and not isinstance(value, list | str | bytes):
        return [float(v) for v in value.tolist()]
    return value


def _row(found: Any) -> Columns:
    return {k: _plain(v) for k, v in found._mapping.items()}


async def owned(
    conn: AsyncConnection, table: sa.Table, tenant_id: str, user_id: str
) -> list[Columns]:
    """Every row of ``table`` the user owns, oldest first."""
    c = table.c
    query = (
        sa.select(table)
        .where(c.tenant_id == tenant_id, c.user_id == user_id)
        .order_by(*(c[name] for name in _ORDER[table.name]))
    )
    return [_row(r) for r in await conn.execute(query)]


async def children(
    conn: AsyncConnection,
    table: sa.Table,
    tenant_id: str,
    column: str,
    parents: Sequence[Any],
    *,
    user_id: str | None = None,
) -> list[Columns]:
    """Rows of a child table (history, chunks, turns, sources, blockers) of these parents
    (and of this user, where parents are keyed per user)."""
    if not parents:
        return []
    c = table.c
    where = [c.tenant_id == tenant_id, c[column].in_(list(parents))]
    if user_id is not None:
        where.append(c.user_id == user_id)
    order = [col for col in c if col.name not in ("tenant_id", "embedding")]
    query = sa.select(table).where(*where).order_by(*order)
    return [_row(r) for r in await conn.execute(query)]


async def owners(
    conn: AsyncConnection, table: sa.Table, tenant_id: str, ids: Sequence[Any]
) -> dict[Any, set[str]]:
    """Which users hold a row of ``table`` under each of these ids in the tenant."""
    if not ids:
        return {}
    c = table.c
    query = sa.select(c.id, c.user_id).where(c.tenant_id == tenant_id, c.id.in_(list(ids)))
    found: dict[Any, set[str]] = {}
    for ident, user in await conn.execute(query):
        found.setdefault(ident, set()).add(user)
    return found


async def conversation_ids(
    conn: AsyncConnection, tenant_id: str, user_id: str, ids: Sequence[Any]
) -> set[Any]:
    """Which of these conversations the user has."""
    if not ids:
        return set()
    c = conversations.c
    query = sa.select(c.id).where(
        c.tenant_id == tenant_id, c.user_id == user_id, c.id.in_(list(ids))
    )
    return {r[0] for r in await conn.execute(query)}


async def held_turns(
    conn: AsyncConnection, tenant_id: str, user_id: str, ids: Sequence[Any]
) -> dict[Any, dict[int, Any]]:
    """Each of these conversations of the user: its turns there, index to memory id."""
    if not ids:
        return {}
    t = conversation_turns.c
    query = sa.select(t.conversation_id, t.turn_index, t.memory_id).where(
        t.tenant_id == tenant_id, t.user_id == user_id, t.conversation_id.in_(list(ids))
    )
    found: dict[Any, dict[int, Any]] = {ident: {} for ident in ids}
    for ident, index, memory_id in await conn.execute(query):
        found[ident][index] = memory_id
    return found


async def profile_channels(
    conn: AsyncConnection, tenant_id: str, user_id: str, channels: Sequence[str]
) -> set[str]:
    c = user_profiles.c
    query = sa.select(c.channel).where(
        c.tenant_id == tenant_id, c.user_id == user_id, c.channel.in_(list(channels))
    )
    return {r[0] for r in await conn.execute(query)}


async def insert_new(
    conn: AsyncConnection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
) -> int:
    """Insert the rows whose key is free; says how many went in. One statement for all the
    rows (SQLAlchemy batches their values; the statement is compiled once)."""
    if not rows:
        return 0
    key = next(iter(table.primary_key.columns))
    query = insert(table).on_conflict_do_nothing().returning(key)
    return len((await conn.execute(query, list(rows))).all())
