"""What ``remember()`` reads beyond each kind's own statements: the goals open now with those
finished lately, and tool calls and how they went.

Rows come out sealed, as every cognitive statement's do; each filters by the tenant and user.
The statements are templates (built once, run with their values as parameters): they run on
every recall, where building them would cost more than running them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.cognitive import LISTED_GOALS, OPEN, list_goals_query
from memvault.db.cognitive_records import GoalRow, ToolInvocationRow
from memvault.db.tables import goal_blockers, goals, tool_invocations
from memvault.db.templates import param, template

_g = goals.c
_b = goal_blockers.c
_i = tool_invocations.c

FINISHED = ("completed", "abandoned")


async def goals_now_and_lately(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    channels: Sequence[str],
    since: datetime,
    until: datetime,
    limit: int,
) -> tuple[list[GoalRow], list[GoalRow]]:
    """The open goals (active or blocked, as ``cognitive.list_goals`` lists them) and those
    completed or abandoned in [since, until], the latest first, at most ``limit``: one
    statement for both."""
    query = template(("goals now and lately",), _goals_now_and_lately)
    values = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "statuses": list(OPEN),
        "channels": list(channels),
        "limit": LISTED_GOALS,
        "since": since,
        "until": until,
        "finished_limit": limit,
    }
    listed: tuple[list[GoalRow], list[GoalRow]] = ([], [])
    for row in await conn.execute(query, values):
        listed[row.finished].append(GoalRow.from_row(row))
    return listed


def _goals_now_and_lately() -> sa.CompoundSelect[Any]:
    now = list_goals_query(by_status=True, by_channel=True)
    lately = _finished_goals()
    return sa.union_all(
        now.add_columns(sa.literal_column("0").label("finished")),
        lately.add_columns(sa.literal_column("1").label("finished")),
    )


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
        .limit(param("finished_limit"))
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
