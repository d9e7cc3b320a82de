"""Working memory as a resource (``memory.working``): one live session per (user, channel,
conversation) with named values, recent turns, a thought stack and the active goal."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from memvault._compose import between_resources
from memvault.cognitive.identifiers import checked_id
from memvault.cognitive.kinds import GLOBAL_CHANNEL, WorkingContext, WorkingValue
from memvault.cognitive.working_store import WorkingMemory, list_of, open_store, values_of
from memvault.db.tenancy import scoped_to_tenant
from memvault.errors import InvalidInput, NotFound
from memvault.validation import validated

if TYPE_CHECKING:
    from memvault.context import TenantContext

KV, TURNS, THOUGHTS, GOAL = "kv", "turns", "thoughts", "goal"


# The value name an agent may keep its active goal under, beside ``set_active_goal``.
ACTIVE_GOAL_KEY = "active_goal"


class Working:
    """Working memory: one live session per (user, channel, conversation)."""

    def __init__(self, context: TenantContext) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id

    def _working(self) -> WorkingMemory:
        settings = self._backend.settings
        if self._backend.working is None:
            self._backend.working = open_store(settings, self._backend.engine)
        return WorkingMemory(
            self._backend.working,
            self._backend.keys,
            ttl_s=settings.working_ttl_s,
            max_turns=settings.working_max_turns,
            max_thoughts=settings.working_max_thoughts,
        )

    @staticmethod
    def _session(conversation_id: str, user_id: str, channel: str) -> tuple[str, str, str]:
        return (
            checked_id(user_id, "user_id"),
            checked_id(channel, "channel"),
            checked_id(str(conversation_id), "conversation_id"),
        )

    @scoped_to_tenant
    async def set_context(
        self,
        conversation_id: str,
        key: str,
        value: Any,
        *,
        user_id: str,
        channel: str = GLOBAL_CHANNEL,
        ttl_seconds: float | None = None,
    ) -> None:
        """Keep ``value`` (any JSON) under ``key`` for ``ttl_seconds`` (default
        MEMVAULT_WORKING_TTL_S)."""
        session = self._session(conversation_id, user_id, channel)
        key = checked_id(key, "key")
        if ttl_seconds is not None and not 0 < ttl_seconds <= 30 * 86_400:
            raise InvalidInput(
                "ttl_seconds must be in (0, 2592000].", details={"field": "ttl_seconds"}
            )
        validated(WorkingValue, user_id=user_id, value=value)  # JSON-shaped, bounded
        await self._working().put(self.tenant_id, session, KV, key, value, ttl_seconds)

    @scoped_to_tenant
    async def get_context_value(
        self, conversation_id: str, key: str, *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> Any:
        session = self._session(conversation_id, user_id, channel)
        key = checked_id(key, "key")
        found = await self._working().read(self.tenant_id, session, KV, key)
        if (KV, key) not in found:
            raise NotFound("No such value in this session (or it expired).", details={"key": key})
        return found[(KV, key)]

    @scoped_to_tenant
    async def delete_context_value(
        self, conversation_id: str, key: str, *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> None:
        session = self._session(conversation_id, user_id, channel)
        key = checked_id(key, "key")
        if not await self._working().store.delete(self.tenant_id, session, KV, key):
            raise NotFound("No such value in this session (or it expired).", details={"key": key})

    @scoped_to_tenant
    async def get_context(
        self, conversation_id: str, *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> WorkingContext:
        """Everything the session holds now (an expired entry is simply absent)."""
        session = self._session(conversation_id, user_id, channel)
        found = await self._working().read(self.tenant_id, session)
        values = values_of(found, KV)
        # An agent that keeps its goal as a plain value ("active_goal") means the same goal.
        goal = found.get((GOAL, "")) or values.get(ACTIVE_GOAL_KEY)
        return WorkingContext(
            user_id=session[0],
            channel=session[1],
            conversation_id=session[2],
            turns=list(list_of(found, TURNS)),
            values=values,
            thoughts=[str(t) for t in list_of(found, THOUGHTS)],
            active_goal=goal if isinstance(goal, str) else None,
        )

    @scoped_to_tenant
    async def clear_session(
        self, conversation_id: str, *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> int:
        """Forget the session's working memory; returns how many entries went."""
        session = self._session(conversation_id, user_id, channel)
        return await self._working().store.delete(self.tenant_id, session)

    @scoped_to_tenant
    async def push_thought(
        self, conversation_id: str, thought: str, *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> builtins.list[str]:
        session = self._session(conversation_id, user_id, channel)
        working = self._working()
        stack = await working.push(self.tenant_id, session, THOUGHTS, thought, working.max_thoughts)
        return [str(t) for t in stack]

    @scoped_to_tenant
    async def pop_thought(
        self, conversation_id: str, *, user_id: str, channel: str = GLOBAL_CHANNEL
    ) -> str | None:
        session = self._session(conversation_id, user_id, channel)
        top = await self._working().pop(self.tenant_id, session, THOUGHTS)
        return None if top is None else str(top)

    @scoped_to_tenant
    async def set_active_goal(
        self,
        conversation_id: str,
        goal: str | None,
        *,
        user_id: str,
        channel: str = GLOBAL_CHANNEL,
    ) -> None:
        session = self._session(conversation_id, user_id, channel)
        working = self._working()
        if goal is None:
            await working.store.delete(self.tenant_id, session, GOAL, "")
        else:
            await working.put(self.tenant_id, session, GOAL, "", goal)

    @between_resources
    async def remember_turns(
        self, user_id: str, channel: str, conversation_id: str, stored: Any, rows: Any
    ) -> None:
        """A conversation's new turns (``stored`` their memories, ``rows`` their turn rows),
        appended to its session's recent turns (``conversations`` calls this as it appends)."""
        session = (user_id, channel, conversation_id)
        working = self._working()
        current = list(list_of(await working.read(self.tenant_id, session, TURNS, ""), TURNS))
        current += [
            {"index": r["turn_index"], "role": r["role"], "content": s.content}
            for r, s in zip(rows, stored, strict=True)
        ]
        await working.put(self.tenant_id, session, TURNS, "", current[-working.max_turns :])
