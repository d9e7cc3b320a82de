"""SQL of curation: a tenant's users with what each holds (and one user's counts and growth,
counted by the database), the deletion receipts the audit log
keeps (a receipt is written into its ``delete`` row's details in the deleting transaction:
``lifecycle/deletion.py``), and a merge's moving of source links onto the memory it keeps (and
its undo's moving them back)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.graph import FactQuery, fact_conditions
from memvault.db.graph_lifecycle import user_consolidation_lag
from memvault.db.tables import (
    audit_log,
    conversations,
    entities,
    entity_mentions,
    fact_sources,
    facts,
    goals,
    memories,
    relation_sources,
    relations,
)

_a = audit_log.c
_m = memories.c


@dataclass(frozen=True, slots=True)
class UserCounts:
    user_id: str
    memories: int
    conversations: int
    facts: int
    last_activity: datetime | None


def _per_user(table: sa.Table, tenant_id: str, when: sa.ColumnElement[Any]) -> sa.Subquery:
    c = table.c
    return (
        sa.select(c.user_id, sa.func.count().label("n"), sa.func.max(when).label("last"))
        .where(c.tenant_id == tenant_id)
        .group_by(c.user_id)
        .subquery()
    )


async def users(conn: AsyncConnection, tenant_id: str, limit: int) -> list[UserCounts]:
    """Every user that holds a memory, a conversation or a fact, with how many of each (counted
    by the database, not by listing), most recently active first."""
    m = _per_user(memories, tenant_id, memories.c.created_at)
    c = _per_user(
        conversations,
        tenant_id,
        sa.func.coalesce(conversations.c.last_turn_at, conversations.c.started_at),
    )
    f = _per_user(facts, tenant_id, facts.c.recorded_at)
    everyone = sa.union(
        sa.select(m.c.user_id), sa.select(c.c.user_id), sa.select(f.c.user_id)
    ).subquery()
    last = sa.func.greatest(m.c.last, c.c.last, f.c.last)
    query = (
        sa.select(
            everyone.c.user_id,
            sa.func.coalesce(m.c.n, 0),
            sa.func.coalesce(c.c.n, 0),
            sa.func.coalesce(f.c.n, 0),
            last,
        )
        .select_from(everyone)
        .outerjoin(m, m.c.user_id == everyone.c.user_id)
        .outerjoin(c, c.c.user_id == everyone.c.user_id)
        .outerjoin(f, f.c.user_id == everyone.c.user_id)
        .order_by(last.desc().nulls_last(), everyone.c.user_id)
        .limit(limit)
    )
    return [UserCounts(*row) for row in await conn.execute(query)]


@dataclass(frozen=True, slots=True)
class UserTotals:
    """One user's holdings as the overview counts them: every memory, the conversations not
    archived and their turns, the facts true now, the unmerged entities, every goal."""

    memories: int
    conversations: int
    turns: int
    turns_unconsolidated: int
    facts: int
    entities: int
    goals: int


def _counted(table: sa.Table, *where: sa.ColumnElement[bool]) -> sa.ScalarSelect[Any]:
    return sa.select(sa.func.count()).select_from(table).where(*where).scalar_subquery()


async def user_totals(
    conn: AsyncConnection, tenant_id: str, user_id: str, now: datetime
) -> UserTotals:
    """Exact counts, counted by the database (no row leaves the server to be counted)."""
    c, e, g = conversations.c, entities.c, goals.c
    live = [c.tenant_id == tenant_id, c.user_id == user_id, c.archived.is_(False)]
    turns = sa.select(sa.func.coalesce(sa.func.sum(c.turn_count), 0)).where(*live).scalar_subquery()
    current = fact_conditions(tenant_id, FactQuery(user_id=user_id), now)
    query = sa.select(
        _counted(memories, _m.tenant_id == tenant_id, _m.user_id == user_id),
        _counted(conversations, *live),
        turns,
        _counted(facts, *current),
        _counted(entities, e.tenant_id == tenant_id, e.user_id == user_id, e.merged_into.is_(None)),
        _counted(goals, g.tenant_id == tenant_id, g.user_id == user_id),
    )
    n_memories, n_conversations, n_turns, n_facts, n_entities, n_goals = (
        await conn.execute(query)
    ).one()
    lag = await user_consolidation_lag(conn, tenant_id, user_id)
    return UserTotals(
        n_memories, n_conversations, int(n_turns), lag.turns, n_facts, n_entities, n_goals
    )


async def memories_per_day(
    conn: AsyncConnection, tenant_id: str, user_id: str, since: datetime
) -> dict[datetime, int]:
    """How many of the user's memories were written on each day (UTC) since ``since``, keyed
    by the day's start in UTC wall time: every memory, grouped by the database."""
    day = sa.func.date_trunc("day", sa.func.timezone("UTC", _m.created_at)).label("day")
    query = (
        sa.select(day, sa.func.count())
        .where(_m.tenant_id == tenant_id, _m.user_id == user_id, _m.created_at >= since)
        .group_by(day)
    )
    return {at: n for at, n in await conn.execute(query)}


async def receipts(
    conn: AsyncConnection,
    tenant_id: str,
    *,
    user_id: str | None,
    request_id: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    """The receipts of this tenant's deletions, newest first, as their audit rows hold them."""
    where = [_a.tenant_id == tenant_id, _a.operation == "delete", _a.details.has_key("receipt")]
    if user_id is not None:
        where.append(_a.user_id == user_id)
    if request_id is not None:
        where.append(_a.details["receipt"]["request_id"].astext == request_id)
    query = (
        sa.select(_a.details["receipt"]).where(*where).order_by(_a.at.desc(), _a.id).limit(limit)
    )
    return [dict(r) for (r,) in await conn.execute(query)]


# Each table of source links: what the memory is a source of (its column and table).
_LINKS = (
    (fact_sources, "fact_id", facts),
    (relation_sources, "relation_id", relations),
    (entity_mentions, "entity_id", entities),
)


@dataclass(frozen=True, slots=True)
class SourceLink:
    """A memory as the source of a fact or relation, or mentioning an entity."""

    table: str
    target: UUID
    memory_id: UUID


async def source_links(
    conn: AsyncConnection, tenant_id: str, memory_ids: Sequence[UUID]
) -> list[SourceLink]:
    found: list[SourceLink] = []
    for table, column, _ in _LINKS:
        query = sa.select(table.c[column], table.c.memory_id).where(
            table.c.tenant_id == tenant_id, table.c.memory_id.in_(list(memory_ids))
        )
        found.extend(SourceLink(table.name, *row) for row in await conn.execute(query))
    return found


async def adopt_sources(
    conn: AsyncConnection, tenant_id: str, keep: UUID, rest: Sequence[UUID]
) -> list[SourceLink]:
    """What the merged copies' texts were said to claim (facts, relations, mentions) becomes
    the kept memory's too, so nothing derived goes with the copies; the links it gained (the
    ones an undo takes back)."""
    moved: list[SourceLink] = []
    for table, column, _ in _LINKS:
        names = [c.name for c in table.c]
        picked = sa.select(
            *(
                sa.literal(keep, type_=sa.Uuid).label(c.name) if c.name == "memory_id" else c
                for c in table.c
            )
        ).where(table.c.tenant_id == tenant_id, table.c.memory_id.in_(list(rest)))
        result = await conn.execute(
            insert(table)
            .from_select(names, picked)
            .on_conflict_do_nothing()
            .returning(table.c[column], table.c.memory_id)
        )
        moved.extend(SourceLink(table.name, *row) for row in result)
    return moved


async def drop_links(conn: AsyncConnection, tenant_id: str, links: Sequence[SourceLink]) -> int:
    dropped = 0
    for table, column, _ in _LINKS:
        pairs = [(link.target, link.memory_id) for link in links if link.table == table.name]
        if pairs:
            result = await conn.execute(
                table.delete().where(
                    table.c.tenant_id == tenant_id,
                    sa.tuple_(table.c[column], table.c.memory_id).in_(pairs),
                )
            )
            dropped += result.rowcount
    return dropped


async def restore_links(
    conn: AsyncConnection, tenant_id: str, user_id: str, links: Sequence[SourceLink]
) -> int:
    """The links back where what they point at still stands (a fact erased since stays
    erased); how many went in."""
    restored = 0
    for table, column, target in _LINKS:
        mine = [link for link in links if link.table == table.name]
        if not mine:
            continue
        standing = set(
            (
                await conn.execute(
                    sa.select(target.c.id).where(
                        target.c.tenant_id == tenant_id,
                        target.c.id.in_([link.target for link in mine]),
                    )
                )
            ).scalars()
        )
        rows = [
            {
                "tenant_id": tenant_id,
                column: link.target,
                "memory_id": link.memory_id,
                "user_id": user_id,
            }
            for link in mine
            if link.target in standing
        ]
        if rows:
            query = insert(table).on_conflict_do_nothing().returning(table.c.memory_id)
            restored += len((await conn.execute(query, rows)).all())
    return restored
