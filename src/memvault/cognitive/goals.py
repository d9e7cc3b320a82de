"""Goals (with subgoals and blocking edges).

A goal's stored status is what its owner said (active, completed, abandoned, or blocked by
hand); a goal still waiting on an unfinished goal *reads* as blocked, so completing the blocker
unblocks it without touching it.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Unpack
from uuid import UUID

from memvault._keywords import GoalInputKeywords
from memvault._sync import takes
from memvault.cognitive.identifiers import checked_id, recall_channels
from memvault.cognitive.kinds import (
    Goal,
    GoalCompletion,
    GoalInput,
    GoalStatus,
)
from memvault.db import cognitive as db
from memvault.db import webhooks
from memvault.db.cognitive_records import GoalRow
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound
from memvault.validation import parse_id, validated

if TYPE_CHECKING:
    from memvault.context import TenantContext

GOALS = "goals"
_STATUSES = ("active", "completed", "abandoned", "blocked")


def read_status(stored: str, open_blockers: Iterable[UUID]) -> GoalStatus:
    if stored == "active" and list(open_blockers):
        return "blocked"
    return stored  # type: ignore[return-value]


class Goals:
    """Goals a user works towards, open or completed."""

    def __init__(self, context: TenantContext) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id

    @scoped_to_tenant
    @takes(GoalInput, positional=("description",))
    async def add_goal(self, /, description: str, **fields: Unpack[GoalInputKeywords]) -> Goal:
        """A goal (optionally a subgoal of ``parent_id``, waiting on ``blocked_by``)."""
        given = validated(GoalInput, description=description, **fields)
        ident = uuid.uuid4()
        values = {
            "tenant_id": self.tenant_id,
            "id": ident,
            "user_id": given.user_id,
            "channel": given.channel,
            "priority": given.priority,
            "deadline": given.deadline,
            "parent_id": given.parent_id,
            **self._context.seal_row(
                GOALS, (ident,), {"description": given.description, "result": None}
            ),
        }
        linked = {*given.blocked_by, *([given.parent_id] if given.parent_id else [])}
        async with transaction(self._backend.engine) as conn:
            if linked and await db.count_owned_goals(
                conn, self.tenant_id, given.user_id, list(linked)
            ) != len(linked):
                raise NotFound("A parent or blocking goal does not exist for this user.")
            await db.insert_goal(conn, values, sorted(set(given.blocked_by)))
        return await self.get_goal(ident, user_id=given.user_id)

    @scoped_to_tenant
    async def get_goal(self, goal_id: UUID | str, *, user_id: str) -> Goal:
        ident = parse_id(goal_id, field="goal_id")
        user_id = checked_id(user_id, "user_id")
        async with reading(self._backend.engine) as conn:
            rows = await db.fetch_goals(conn, self.tenant_id, user_id, [ident])
        if not rows:
            raise NotFound("No such goal for this user.", details={"id": str(ident)})
        return goal_of(self._context, rows[0])

    @scoped_to_tenant
    async def list_goals(
        self,
        *,
        user_id: str,
        status: GoalStatus | None = None,
        channel: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Goal]:
        """Goals by priority (then deadline); ``status`` as each reads now (a goal waiting on an
        unfinished goal is ``blocked``); a project channel lists its own and _global's."""
        user_id = checked_id(user_id, "user_id")
        if status is not None and status not in _STATUSES:
            raise InvalidInput(
                f"status is one of {', '.join(_STATUSES)}.", details={"field": "status"}
            )
        stored = None if status is None else (list(db.OPEN) if status in db.OPEN else [status])
        channels = None if channel is None else recall_channels(channel)
        async with reading(self._backend.engine) as conn:
            rows = await db.list_goals(
                conn, self.tenant_id, user_id, stored, channels, db.LISTED_GOALS
            )
        return listed(self._context, rows, status, limit)

    @scoped_to_tenant
    async def complete_goal(
        self,
        goal_id: UUID | str,
        *,
        user_id: str,
        status: str = "completed",
        result: str | None = None,
    ) -> Goal:
        """Finish a goal (completed or abandoned) with its result; goals it blocked unblock."""
        ident = parse_id(goal_id, field="goal_id")
        done = validated(GoalCompletion, user_id=user_id, status=status, result=result)
        async with transaction(self._backend.engine) as conn:
            rows = await db.fetch_goals(conn, self.tenant_id, done.user_id, [ident])
            if not rows:
                raise NotFound("No such goal for this user.", details={"id": str(ident)})
            payload = {**self._context.open_row(GOALS, (ident,), rows[0]), "result": done.result}
            await db.finish_goal(
                conn,
                self.tenant_id,
                ident,
                done.user_id,
                {
                    "status": done.status,
                    "completed_at": datetime.now(UTC),
                    **self._context.seal_row(GOALS, (ident,), payload),
                },
            )
            if done.status == "completed":
                data = {"goal_id": str(ident), "user_id": done.user_id, "status": done.status}
                event = webhooks.Event(self.tenant_id, "goal.completed", data, done.user_id)
                await webhooks.emit(conn, [event])
        return await self.get_goal(ident, user_id=done.user_id)


def listed(
    context: TenantContext, rows: Iterable[GoalRow], status: GoalStatus | None, limit: int
) -> builtins.list[Goal]:
    """Goal rows as listed: opened, only those reading as ``status`` (when given), at most
    ``limit``."""
    goals = [goal_of(context, r) for r in rows]
    return [g for g in goals if status is None or g.status == status][: max(limit, 1)]


def goal_of(context: TenantContext, row: GoalRow) -> Goal:
    """A goal row, opened, with the status its open blockers give it."""
    payload = context.open_row(GOALS, (row.id,), row)
    return Goal(
        id=row.id,
        user_id=row.user_id,
        channel=row.channel,
        description=payload["description"],
        priority=row.priority,
        status=read_status(row.status, row.open_blockers),
        deadline=row.deadline,
        parent_id=row.parent_id,
        blocked_by=sorted(row.blocked_by),
        result=payload.get("result"),
        created_at=row.created_at,
        completed_at=row.completed_at,
    )
