"""What ``remember()`` reads beyond each kind's own statements: what happened lately (goals
finished, tool calls and how they went) and how well supported the entities it recalled are.

Rows come out sealed, as every cognitive statement's do; each filters by the tenant and user.
The statements are templates (built once, run with their values as parameters): they run on
every recall, where building them would cost more than running them.
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
from memvault.db.templates import param, template

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
    query = template(("finished goals",), _finished_goals)
    values = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "channels": list(channels),
        "since": since,
        "until": until,
        "limit": limit,
    }
    return [GoalRow.from_row(row) for row in await conn.execute(query, values)]


def _finished_goals() -> sa.Select[Any]:
    blocked_by = (
        sa.select(sa.func.coalesce(sa.func.array_agg(_b.blocker_id), sa.text("'{}'::uuid[]")))
        .where(_b.tenant_id == _g.tenant_id, _b.goal_id == _g.id)
        .scalar_subquery()
        .label("blocked_by")
    )
    # A finished goal waits on nothing: whatever blocked it no longer counts.
    open_blockers: sa.Label[Any] = sa.literal_column("'{}'::uuid[]").label("open_blockers")
    return (
        sa.select(goals, open_blockers, blocked_by)
        .where(
            _g.tenant_id == param("tenant_id"),
            _g.user_id == param("user_id"),
            _g.status.in_(FINISHED),
            _g.channel.in_(param("channels", expanding=True)),
            _g.completed_at >= param("since"),
            _g.completed_at <= param("until"),
        )
        .order_by(_g.completed_at.desc(), _g.id)
        .limit(param("limit"))
    )


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
    query = template(("recent tool calls",), _recent_tool_calls)
    values = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "channels": list(channels),
        "conversation_id": conversation_id,
        "since": since,
        "until": until,
        "limit": limit,
    }
    return [ToolInvocationRow.from_row(row) for row in await conn.execute(query, values)]


def _recent_tool_calls() -> sa.Select[Any]:
    # No conversation given: NULL matches none, and the latest come first.
    here = _i.conversation_id == param("conversation_id", type_=sa.Text)
    return (
        sa.select(tool_invocations)
        .where(
            _i.tenant_id == param("tenant_id"),
            _i.user_id == param("user_id"),
            _i.channel.in_(param("channels", expanding=True)),
            _i.created_at >= param("since"),
            _i.created_at <= param("until"),
        )
        .order_by(sa.case((here, 0), else_=1), _i.created_at.desc(), _i.id)
        .limit(param("limit"))
    )


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
    query = template(("entity support",), _entity_support)
    rows = await conn.execute(query, {"tenant_id": tenant_id, "ids": list(entity_ids)})
    return {row.id: Support(int(row.mentions), int(row.facts)) for row in rows}


def _entity_support() -> sa.Select[Any]:
    ids = sa.func.unnest(param("ids", type_=sa.ARRAY(sa.Uuid)))
    wanted = ids.table_valued("id").render_derived(name="wanted")
    mentions = (
        sa.select(sa.func.count())
        .where(_e.tenant_id == param("tenant_id"), _e.entity_id == wanted.c.id)
        .scalar_subquery()
    )
    about = (
        sa.select(sa.func.count())
        .where(
            _f.tenant_id == param("tenant_id"),
            sa.or_(_f.subject_id == wanted.c.id, _f.object_id == wanted.c.id),
            _f.superseded_at.is_(None),
        )
        .scalar_subquery()
    )
    return sa.select(wanted.c.id, mentions.label("mentions"), about.label("facts"))
