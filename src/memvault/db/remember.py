"""What ``remember()`` reads beyond each kind's own statements: what happened lately (goals
finished, tool calls and how they went) and how well supported the entities it recalled are.

Rows come out sealed, as every cognitive statement's do; each filters by the tenant and user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.cognitive_records import GoalRow, ToolInvocationRow
from memvault.db.tables import entity_mentions, facts, goal_blockers, goals, tool_invocations

_g = goals.c
_b = goal_blockers.c
_i = tool_invocations.c
_f = facts.c
_e = entity_mentions.c

FINISHED = ("completed", "abandoned")


async def finished_goals(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    channels: Sequence[str],
    since: datetime,
    until: datetime,
    limit: int,
) -> list[GoalRow]:
    """Goals completed or abandoned in [since, until], the latest first."""
    blocked_by = (
        sa.select(sa.func.coalesce(sa.func.array_agg(_b.blocker_id), sa.text("'{}'::uuid[]")))
        .where(_b.tenant_id == _g.tenant_id, _b.goal_id == _g.id)
        .scalar_subquery()
        .label("blocked_by")
    )
    # A finished goal waits on nothing: whatever blocked it no longer counts.
    open_blockers: sa.Label[Any] = sa.literal_column("'{}'::uuid[]").label("open_blockers")
    query = (
        sa.select(goals, open_blockers, blocked_by)
        .where(
            _g.tenant_id == tenant_id,
            _g.user_id == user_id,
            _g.status.in_(FINISHED),
            _g.channel.in_(list(channels)),
            _g.completed_at >= since,
            _g.completed_at <= until,
        )
        .order_by(_g.completed_at.desc(), _g.id)
        .limit(limit)
    )
    return [GoalRow.from_row(row) for row in await conn.execute(query)]


async def recent_tool_calls(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    channels: Sequence[str],
    conversation_id: str | None,
    since: datetime,
    until: datetime,
    limit: int,
) -> list[ToolInvocationRow]:
    """Tool calls made in [since, until], the given conversation's first, then the latest."""
    where = [
        _i.tenant_id == tenant_id,
        _i.user_id == user_id,
        _i.channel.in_(list(channels)),
        _i.created_at >= since,
        _i.created_at <= until,
    ]
    order: list[sa.ColumnElement[object]] = []
    if conversation_id is not None:
        order.append(sa.case((_i.conversation_id == conversation_id, 0), else_=1))
    query = (
        sa.select(tool_invocations)
        .where(*where)
        .order_by(*order, _i.created_at.desc(), _i.id)
        .limit(limit)
    )
    return [ToolInvocationRow.from_row(row) for row in await conn.execute(query)]


@dataclass(frozen=True)
class Support:
    """How much stands behind an entity: memories that mention it, current facts about it."""

    mentions: int
    facts: int


async def entity_support(
    conn: AsyncConnection, tenant_id: str, entity_ids: Sequence[UUID]
) -> dict[UUID, Support]:
    if not entity_ids:
        return {}
    ids = sa.values(sa.column("id", sa.Uuid), name="wanted").data([(i,) for i in entity_ids])
    mentions = (
        sa.select(sa.func.count())
        .where(_e.tenant_id == tenant_id, _e.entity_id == ids.c.id)
        .scalar_subquery()
    )
    about = (
        sa.select(sa.func.count())
        .where(
            _f.tenant_id == tenant_id,
            sa.or_(_f.subject_id == ids.c.id, _f.object_id == ids.c.id),
            _f.superseded_at.is_(None),
        )
        .scalar_subquery()
    )
    query = sa.select(ids.c.id, mentions.label("mentions"), about.label("facts"))
    return {row.id: Support(int(row.mentions), int(row.facts)) for row in await conn.execute(query)}
