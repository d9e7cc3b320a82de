"""Goals (with subgoals and blocking edges) and the user profile.

A goal's stored status is what its owner said (active, completed, abandoned, or blocked by
hand); a goal still waiting on an unfinished goal *reads* as blocked, so completing the blocker
unblocks it without touching it.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Unpack
from uuid import UUID

from memvault._keywords import GoalInputKeywords, ProfileUpdateKeywords
from memvault._sync import takes
from memvault.cognitive.identifiers import checked_id, recall_channels
from memvault.cognitive.kinds import (
    GLOBAL_CHANNEL,
    Goal,
    GoalCompletion,
    GoalInput,
    GoalStatus,
    Profile,
    ProfileUpdate,
)
from memvault.db import cognitive as db
from memvault.db import webhooks
from memvault.db.cognitive_records import GoalRow, ProfileRow
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound
from memvault.graph.claims import SELF
from memvault.graph.views import FactsQuery
from memvault.models import Fact
from memvault.validation import parse_id, validated

if TYPE_CHECKING:
    from memvault.context import TenantContext
    from memvault.graph.knowledge import Graph

GOALS, PROFILES = "goals", "user_profiles"
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
        stored = (
            None
            if status is None
            else (["active", "blocked"] if status in ("active", "blocked") else [status])
        )
        channels = None if channel is None else recall_channels(channel)
        async with reading(self._backend.engine) as conn:
            rows = await db.list_goals(conn, self.tenant_id, user_id, stored, channels, 1_000)
        goals = [goal_of(self._context, r) for r in rows]
        return [g for g in goals if status is None or g.status == status][: max(limit, 1)]

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


# Predicates that say what the user likes, knows or how they talk; the rest of the graph's
# facts about the user (where they live, work, …) stay facts, not profile.
LIKING = frozenset({"prefers", "likes", "loves", "enjoys"})
DISLIKING = frozenset({"dislikes", "hates"})
EXPERTISE = frozenset({"expert_in", "works_with", "skilled_in", "knows_language", "speaks"})
STYLE = frozenset({"communication_style", "prefers_style", "style"})


def is_profile_predicate(predicate: str) -> bool:
    name = predicate.lower().replace(" ", "_")
    return name in LIKING | DISLIKING | EXPERTISE | STYLE or name.startswith("favourite_")


def profile_update_from_facts(
    facts: Iterable[tuple[str, str, str]],
) -> dict[str, Any]:
    """Integration point for the knowledge graph: (subject, predicate, object) facts about the
    user as ``update_profile`` keywords. Predicates it knows: prefers / likes / loves / enjoys
    and dislikes / hates (a preference), favourite_<thing> (the thing's value), expert_in /
    works_with / skilled_in / speaks (expertise), communication_style."""
    preferences: dict[str, Any] = {}
    expertise: builtins.list[str] = []
    style: str | None = None
    for _, predicate, obj in facts:
        name = predicate.lower().replace(" ", "_")
        if name in LIKING:
            preferences[obj] = True
        elif name in DISLIKING:
            preferences[obj] = False
        elif name.startswith("favourite_"):
            preferences[name] = obj
        elif name in EXPERTISE and obj not in expertise:
            expertise.append(obj)
        elif name in STYLE:
            style = obj
    changes: dict[str, Any] = {}
    if preferences:
        changes["preferences"] = preferences
    if expertise:
        changes["expertise"] = expertise
    if style is not None:
        changes["communication_style"] = style
    return changes


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


class Profiles:
    """A user's profile per channel, learned from the graph's facts about them."""

    def __init__(self, context: TenantContext, graph: Graph) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self._graph = graph

    @scoped_to_tenant
    @takes(ProfileUpdate)
    async def update_profile(self, /, **fields: Unpack[ProfileUpdateKeywords]) -> Profile:
        """Merge preferences key by key (None removes one); expertise and style replace."""
        change = validated(ProfileUpdate, **fields)
        async with transaction(self._backend.engine) as conn:
            rows = await db.fetch_profiles(
                conn, self.tenant_id, change.user_id, [change.channel], lock=True
            )
            current = self._profile_payload(rows[0]) if rows else {}
            merged = {**current.get("preferences", {}), **(change.preferences or {})}
            payload = {
                "preferences": {k: v for k, v in merged.items() if v is not None},
                "expertise": change.expertise
                if change.expertise is not None
                else current.get("expertise", []),
                "communication_style": change.communication_style
                if change.communication_style is not None
                else current.get("communication_style"),
            }
            key = (change.user_id, change.channel)
            await db.put_profile(
                conn,
                {
                    "tenant_id": self.tenant_id,
                    "user_id": change.user_id,
                    "channel": change.channel,
                    **self._context.seal_row(PROFILES, key, payload),
                },
            )
        return await self.get_profile(user_id=change.user_id, channel=change.channel)

    @scoped_to_tenant
    async def get_profile(self, *, user_id: str, channel: str = GLOBAL_CHANNEL) -> Profile:
        """The user's profile as a project channel sees it: _global's, overridden by the
        project's own (preferences key by key)."""
        user_id = checked_id(user_id, "user_id")
        channels = recall_channels(channel)
        rows = await self._learn_profile(user_id, channels)
        if rows is None:  # it learned something: read the profiles it changed
            async with reading(self._backend.engine) as conn:
                rows = await db.fetch_profiles(conn, self.tenant_id, user_id, channels, lock=False)
        by_channel = {r.channel: r for r in rows}
        merged = Profile(user_id=user_id, channel=channels[0])
        for name in reversed(channels):  # _global first, the project's over it
            if name not in by_channel:
                continue
            payload = self._profile_payload(by_channel[name])
            merged = merged.model_copy(
                update={
                    "preferences": {**merged.preferences, **payload.get("preferences", {})},
                    "expertise": payload.get("expertise") or merged.expertise,
                    "communication_style": payload.get("communication_style")
                    or merged.communication_style,
                    "updated_at": max(
                        filter(None, (merged.updated_at, by_channel[name].updated_at))
                    ),
                }
            )
        return merged

    @scoped_to_tenant
    async def update_profile_from_facts(
        self, facts: Iterable[tuple[str, str, str]], *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> Profile:
        """Facts about the user (subject, predicate, object) as profile changes; expertise is
        added to what the profile already lists, not replacing it."""
        changes = profile_update_from_facts(facts)
        if not changes:
            return await self.get_profile(user_id=user_id, channel=channel)
        if "expertise" in changes:
            async with reading(self._backend.engine) as conn:
                rows = await db.fetch_profiles(
                    conn, self.tenant_id, checked_id(user_id, "user_id"), [channel], lock=False
                )
            known = self._profile_payload(rows[0]).get("expertise", []) if rows else []
            changes["expertise"] = list(dict.fromkeys([*known, *changes["expertise"]]))
        return await self.update_profile(user_id=user_id, channel=channel, **changes)

    async def _learn_profile(
        self, user_id: str, channels: builtins.list[str]
    ) -> builtins.list[ProfileRow] | None:
        """The graph's facts about the user (subject SELF) recorded since a channel's profile
        last changed, folded into it: each fact once, so a preference the user removed by
        hand after the fact was learned stays removed. The channels' profile rows as read,
        or None when it changed them."""
        async with reading(self._backend.engine) as conn:
            rows = await db.fetch_profiles(conn, self.tenant_id, user_id, channels, lock=False)
        since = {r.channel: r.updated_at for r in rows}
        # Only what was recorded after the oldest of the channels' profiles: a read costs one
        # lookup when nothing is new, however many facts the user has stated about themselves.
        unseen = min(since.values()) if len(since) == len(channels) else None
        facts: builtins.list[Fact] = await self._graph.read_facts(
            FactsQuery(user_id=user_id, entity=SELF, limit=1_000), recorded_after=unseen
        )
        changed = False
        for channel in channels:
            learned = [
                (f.subject, f.predicate, f.object if f.object is not None else f.value or "")
                for f in sorted(facts, key=lambda f: f.recorded_at)
                if f.channel == channel
                and f.subject == SELF
                and is_profile_predicate(f.predicate)
                and (since.get(channel) is None or f.recorded_at > since[channel])
            ]
            if learned:
                await self.update_profile_from_facts(learned, user_id=user_id, channel=channel)
                changed = True
        return None if changed else rows

    def _profile_payload(self, row: ProfileRow) -> dict[str, Any]:
        payload: dict[str, Any] = self._context.open_row(PROFILES, (row.user_id, row.channel), row)
        return payload
