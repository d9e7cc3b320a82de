"""``AsyncMemory`` (the async core) and ``Memory`` (its sync face): the library's front door.

``AsyncMemory`` is made of resources (``memories``, ``conversations``, ``graph``, ``goals``, …),
each built with the tenant's context and the resources it needs; everything a caller does goes
through one of them.
"""

from __future__ import annotations

import builtins
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self, Unpack
from uuid import UUID

from memvault._compose import derive_delegates, resources, verb
from memvault._keywords import (
    MemoryInputKeywords,
    MemoryQueryKeywords,
    MessagesRequestKeywords,
    RememberRequestKeywords,
    SearchRequestKeywords,
)
from memvault._sync import SyncFace, derive_blocking, derive_resources
from memvault.backend import Backend
from memvault.cognitive.bundle import MemoryBundle
from memvault.cognitive.conversations import Conversations
from memvault.cognitive.goals import Goals
from memvault.cognitive.profile import Profiles
from memvault.cognitive.recall import Recall
from memvault.cognitive.strategies import Strategies
from memvault.cognitive.working import Working
from memvault.config import Settings
from memvault.context import TenantContext
from memvault.db.replica import RequestConsistency, request_consistency
from memvault.graph.graph import Graph
from memvault.idempotency import Once, WriteOnce
from memvault.lifecycle.health import Health
from memvault.lifecycle.lifecycle import Lifecycle
from memvault.memories import Memories
from memvault.models import (
    AddResult,
    HistoryEntry,
    MemoryPage,
    MemoryRecord,
    Message,
    SearchResult,
)
from memvault.operations import service_calls
from memvault.runtime import open_backend
from memvault.validation import parse_id as parse_id
from memvault.validation import validated as validated
from memvault.webhooks import Webhooks

if TYPE_CHECKING:
    from memvault._memory_methods import AsyncMemoryMethods as _AsyncMethods
    from memvault._memory_methods import MemoryMethods as _Methods
else:
    _Methods = _AsyncMethods = object


class AsyncMemory(_AsyncMethods):
    """Long-term memory for one tenant. Open with ``async with AsyncMemory(settings) as m:``
    (closed when the block ends), or ``m = await AsyncMemory.open(settings)`` and
    ``await m.close()``.

    Made of resources, each built here with the context and the resources it needs:
    ``memories``, ``conversations``, ``graph`` (facts and entities), ``goals``, ``strategies``,
    ``working`` (working memory), ``profile``, ``lifecycle``, ``health``, ``recall``
    (``remember()``) and ``webhooks``. The everyday verbs are methods here; every other
    operation is too, by its name in the operation table (``memory.complete_goal`` is
    ``memory.goals.complete_goal``).
    """

    memories: Memories
    conversations: Conversations
    graph: Graph
    goals: Goals
    strategies: Strategies
    working: Working
    profile: Profiles
    lifecycle: Lifecycle
    health: Health
    recall: Recall
    webhooks: Webhooks

    def __init__(
        self,
        backend: Backend | Settings,
        *,
        tenant_id: str = "default",
        actor: str = "library",
    ) -> None:
        self.tenant_id = tenant_id
        self.actor = actor
        # ``AsyncMemory(settings)`` opens the store on ``async with`` (opening is async work
        # an __init__ cannot await), so both doors open the same way: ``with Memory(settings)``.
        self._settings: Settings | None = None
        if isinstance(backend, Settings):
            self._settings = backend
        else:
            self._assemble(backend)

    def _assemble(self, backend: Backend) -> None:
        self._backend = backend
        context = TenantContext(backend, self.tenant_id, self.actor)
        self.lifecycle = Lifecycle(context)
        self.graph = Graph(context)
        self.memories = Memories(context, graph=self.graph, lifecycle=self.lifecycle)
        self.health = Health(context, self.memories)
        self.working = Working(context)
        self.conversations = Conversations(context, self.memories, self.working)
        self.strategies = Strategies(context)
        self.goals = Goals(context)
        self.profile = Profiles(context, self.graph)
        self.webhooks = Webhooks(context)
        self.recall = Recall(
            context,
            conversations=self.conversations,
            strategies=self.strategies,
            profiles=self.profile,
            working=self.working,
        )

    if not TYPE_CHECKING:  # the type checker keeps seeing only what the class declares

        def __getattr__(self, name: str) -> Any:
            # Only reached for what is missing: a store made from settings and not opened yet.
            if name != "_settings" and self.__dict__.get("_settings") is not None:
                raise RuntimeError(
                    "AsyncMemory(settings) opens the store on `async with AsyncMemory(settings) "
                    "as m:`; use it there, or open it with `await AsyncMemory.open(settings)` "
                    f"(asked for {name!r} before either)."
                )
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    async def open(
        cls, settings: Settings, *, tenant_id: str = "default", actor: str = "library"
    ) -> AsyncMemory:
        return cls(await open_backend(settings), tenant_id=tenant_id, actor=actor)

    def for_tenant(self, tenant_id: str, *, actor: str | None = None) -> AsyncMemory:
        """A view of the same store scoped to another tenant (sharing the connection pool)."""
        return AsyncMemory(self._backend, tenant_id=tenant_id, actor=actor or self.actor)

    def write_once(
        self, key: str, *, fingerprint: bytes, user_id: str | None
    ) -> AbstractAsyncContextManager[Once]:
        """Run a write once for its ``Idempotency-Key``: a retry of a request that finished gets
        its answer (``memvault.idempotency``)."""
        context = TenantContext(self._backend, self.tenant_id, self.actor)
        return WriteOnce(context).run(key, fingerprint=fingerprint, user_id=user_id)

    async def close(self) -> None:
        if self._settings is None:  # made from settings and never opened: nothing to close
            await self._backend.close()

    async def __aenter__(self) -> Self:
        if self._settings is not None:
            self._assemble(await open_backend(self._settings))
            self._settings = None
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- the everyday verbs ---------------------------------------------------------------------

    @verb(Memories.add)
    async def add(
        self,
        /,
        content: str,
        *,
        wait: bool = False,
        background: bool = False,
        **fields: Unpack[MemoryInputKeywords],
    ) -> AddResult:
        return await self.memories.add(content, wait=wait, background=background, **fields)

    @verb(Memories.search)
    async def search(self, /, query: str, **options: Unpack[SearchRequestKeywords]) -> SearchResult:
        return await self.memories.search(query, **options)

    @verb(Memories.get)
    async def get(self, memory_id: UUID | str, *, user_id: str) -> MemoryRecord:
        return await self.memories.get(memory_id, user_id=user_id)

    @verb(Memories.update)
    async def update(
        self,
        memory_id: UUID | str,
        *,
        user_id: str,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: builtins.list[str] | None = None,
        importance: int | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryRecord:
        return await self.memories.update(
            memory_id,
            user_id=user_id,
            content=content,
            metadata=metadata,
            tags=tags,
            importance=importance,
            expires_at=expires_at,
        )

    @verb(Memories.delete)
    async def delete(self, memory_id: UUID | str, *, user_id: str) -> None:
        await self.memories.delete(memory_id, user_id=user_id)

    @verb(Memories.list)
    async def list(self, /, **query: Unpack[MemoryQueryKeywords]) -> MemoryPage:
        return await self.memories.list(**query)

    @verb(Memories.history)
    async def history(self, memory_id: UUID | str, *, user_id: str) -> builtins.list[HistoryEntry]:
        return await self.memories.history(memory_id, user_id=user_id)

    @verb(Conversations.add_messages)
    async def add_messages(
        self,
        /,
        messages: builtins.list[Message | dict[str, Any]],
        *,
        wait: bool = False,
        **fields: Unpack[MessagesRequestKeywords],
    ) -> builtins.list[AddResult]:
        return await self.conversations.add_messages(messages, wait=wait, **fields)

    @verb(Recall.remember)
    async def remember(
        self, /, query: str, **fields: Unpack[RememberRequestKeywords]
    ) -> MemoryBundle:
        return await self.recall.remember(query, **fields)


def read_your_writes(
    memory: AsyncMemory, read_after: int | None
) -> AbstractContextManager[RequestConsistency]:
    """One API request's part in read-your-writes across processes (``memvault.consistency``):
    inside it, routed reads show at least ``read_after`` (a position a client carried back);
    ``await consistency.written()`` on what it yields is the position the answer names (None
    when the request used no primary, or the store has no read URL: then it costs nothing)."""
    return request_consistency(memory._backend.reads, read_after)


# Every other operation's name on the door is its resource's method (``memory.complete_goal``
# is ``memory.goals.complete_goal``), made from the operation table: an operation added there
# is on ``AsyncMemory``, ``Memory`` and the stub without a line here.
derive_delegates(AsyncMemory, service_calls())


class Memory(SyncFace, _Methods):
    """The synchronous face of :class:`AsyncMemory`, same methods, same behaviour: each public
    coroutine method of ``AsyncMemory`` has a blocking twin here, made by walking the class.

    ``Memory()`` reads ``MEMVAULT_*`` settings from the environment, like the CLI does; pass a
    :class:`~memvault.config.Settings` to be explicit.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        tenant_id: str = "default",
        actor: str = "library",
    ) -> None:
        super().__init__(AsyncMemory.open(settings or Settings(), tenant_id=tenant_id, actor=actor))

    @property
    def tenant_id(self) -> str:
        tenant: str = self._async.tenant_id
        return tenant


# A coroutine method added to AsyncMemory (or one of its parts) is on Memory without a line here;
# the type checker reads the same methods from the stub ``python -m memvault._stubs`` writes.
derive_blocking(Memory, AsyncMemory)
derive_resources(Memory, resources(AsyncMemory))


__all__ = ["AsyncMemory", "Memory", "read_your_writes"]
