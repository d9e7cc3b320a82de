"""mem0's API over memvault: ``from memvault.compat.mem0 import Memory`` instead of
``from mem0 import Memory``; the same method names, parameters and return shapes.

How mem0's model maps onto memvault's (docs/integrations.md):

* mem0's entity ids become the memvault owner: ``user_id``, else ``agent:<agent_id>``, else
  ``run:<run_id>``; all three are kept in the memory's metadata under ``"mem0"`` and filter
  by containment there, so ``filters={"user_id": "u", "agent_id": "a"}`` means both.
* mem0 addresses a memory by id alone, memvault by id and owner; the ids this API answers
  carry both (``"<uuid>:<owner>"``) and are to be passed back as given.
* ``add`` stores each message's text through memvault's pipeline (``infer=True``: dedup and
  enrichment decide ADD / UPDATE / nothing; ``infer=False``: stored as given). A system
  message is instructions, not memory, and is skipped as mem0 skips it.
* What mem0 does and memvault does not (``reset``, rerankers, procedural memory, filter
  operators, custom prompts, expired results) raises :class:`NotSupported` naming it.
"""

from __future__ import annotations

from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any, TypeVar

from memvault import AsyncMemory as _AsyncService
from memvault import Memory as _SyncService
from memvault.client import AsyncMemoryClient as _AsyncClient
from memvault.client import MemoryClient as _SyncClient
from memvault.errors import NotFound
from memvault.integrations._faces import Bridge

R = TypeVar("R")
_KEY = "mem0"
_ENTITIES = ("user_id", "agent_id", "run_id")
_UNSET: Any = object()
_EVENTS = {
    "stored_new": "ADD",
    "keep_both": "ADD",
    "pending": "ADD",
    "merge": "UPDATE",
    "replace": "UPDATE",
}


class NotSupported(NotImplementedError):
    """A mem0 behaviour memvault does not have; the message names it."""


def _unsupported(what: str) -> NotSupported:
    return NotSupported(f"memvault's mem0-compatible API does not support {what}.")


def _owner(entities: dict[str, str | None]) -> str:
    if entities.get("user_id"):
        return str(entities["user_id"])
    if entities.get("agent_id"):
        return f"agent:{entities['agent_id']}"
    if entities.get("run_id"):
        return f"run:{entities['run_id']}"
    raise ValueError("At least one of 'user_id', 'agent_id' or 'run_id' must be provided.")


def _split(memory_id: str) -> tuple[str, str]:
    ident, sep, owner = str(memory_id).partition(":")
    if not sep or not owner:
        raise ValueError(
            f"{memory_id!r} is not an id this API gave out (they read '<uuid>:<owner>')."
        )
    return ident, owner


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _when(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return datetime.fromisoformat(str(value))


def _item(record: Any, owner: str, score: float | None = None) -> dict[str, Any]:
    metadata = dict(record.metadata)
    entities = metadata.pop(_KEY, {}) or {}
    item: dict[str, Any] = {
        "id": f"{record.id}:{owner}",
        "memory": record.content,
        "hash": None,
        "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at),
    }
    if score is not None:
        item["score"] = score
    for name in _ENTITIES:
        if entities.get(name):
            item[name] = entities[name]
    if record.expires_at is not None:
        item["expiration_date"] = _iso(record.expires_at)
    if metadata:
        item["metadata"] = metadata
    return item


def _messages(messages: Any) -> list[tuple[str, str]]:
    if isinstance(messages, str):
        return [("user", messages)]
    if isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list):
        raise ValueError("messages must be a string, a message dict or a list of them.")
    said = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "system" or not isinstance(content, str) or not content.strip():
            continue
        said.append((str(message.get("role", "user")), content))
    return said


def _scope(filters: dict[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
    """The owner and metadata containment filter that mem0's ``filters`` name."""
    filters = dict(filters or {})
    for logical in ("AND", "OR", "NOT"):
        if logical in filters:
            raise _unsupported(f"the {logical} filter")
    entities = {k: filters.pop(k) for k in _ENTITIES if k in filters}
    for key, value in filters.items():
        if isinstance(value, dict | list) or value == "*":
            raise _unsupported(f"filter operators (on {key!r}); give a value to match exactly")
    owner = _owner(entities)
    wanted: dict[str, Any] = dict(filters)
    named = {k: v for k, v in entities.items() if v}
    if named:
        wanted[_KEY] = named
    return owner, wanted or None


class _Core:
    """The operations, written once over memvault's async service."""

    def __init__(self, service: Any) -> None:
        self._bridge = Bridge(service)

    @property
    def _service(self) -> Any:
        return self._bridge.service

    async def _add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        if memory_type is not None:
            raise _unsupported(f"memory_type={memory_type!r} (procedural memory)")
        if prompt is not None:
            raise _unsupported("a custom extraction prompt")
        entities = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        owner = _owner(entities)
        named = {k: v for k, v in entities.items() if v}
        results = []
        for role, content in _messages(messages):
            stored = await self._service.add(
                content,
                user_id=owner,
                metadata={**(metadata or {}), _KEY: named, "role": role},
                occurred_at=_when(timestamp),
                expires_at=_when(expiration_date),
                infer=infer,
            )
            event = _EVENTS.get(stored.dedup.action)
            if event is not None:
                results.append(
                    {"id": f"{stored.id}:{owner}", "memory": stored.content, "event": event}
                )
        return {"results": results}

    async def _get(self, memory_id: str) -> dict[str, Any] | None:
        ident, owner = _split(memory_id)
        try:
            record = await self._service.get(ident, user_id=owner)
        except NotFound:
            return None
        return _item(record, owner)

    async def _get_all(
        self, filters: dict[str, Any] | None, top_k: int, show_expired: bool
    ) -> dict[str, Any]:
        if show_expired:
            raise _unsupported("show_expired (memvault never answers an expired memory)")
        owner, wanted = _scope(filters)
        found: list[dict[str, Any]] = []
        cursor = None
        while len(found) < top_k:
            page = await self._service.list(
                user_id=owner, metadata=wanted, limit=min(100, top_k - len(found)), cursor=cursor
            )
            found.extend(_item(r, owner) for r in page.results)
            cursor = page.next_cursor
            if cursor is None:
                break
        return {"results": found}

    async def _search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float | None = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
    ) -> dict[str, Any]:
        if rerank:
            raise _unsupported("rerank=True (memvault ranks by its own hybrid recall)")
        if explain:
            raise _unsupported("explain=True (memvault answers a score breakdown in `scores`)")
        if show_expired:
            raise _unsupported("show_expired (memvault never answers an expired memory)")
        owner, wanted = _scope(filters)
        result = await self._service.search(
            query,
            user_id=owner,
            metadata=wanted,
            limit=min(top_k, 100),
            reference_time=_when(reference_date),
            # mem0's threshold is a 0-1 similarity floor, which memvault's relevance is; the
            # service applies it before the cut, so top_k still fills from what passes.
            min_relevance=threshold,
        )
        return {"results": [_item(hit, owner, hit.relevance) for hit in result.results]}

    async def _update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
    ) -> dict[str, Any]:
        if expiration_date is not _UNSET:
            raise _unsupported("changing a memory's expiration_date after it is stored")
        ident, owner = _split(memory_id)
        await self._service.update(ident, user_id=owner, content=text or data, metadata=metadata)
        return {"message": "Memory updated successfully!"}

    async def _delete(self, memory_id: str) -> dict[str, Any]:
        ident, owner = _split(memory_id)
        await self._service.delete(ident, user_id=owner)
        return {"message": "Memory deleted successfully!"}

    async def _delete_all(
        self, user_id: str | None, agent_id: str | None, run_id: str | None
    ) -> dict[str, Any]:
        entities = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        owner = _owner(entities)
        if user_id and not agent_id and not run_id:
            await self._service.delete_all(user_id=owner)
        else:
            named = {k: v for k, v in entities.items() if v}
            while True:
                page = await self._service.list(user_id=owner, metadata={_KEY: named}, limit=100)
                for record in page.results:
                    await self._service.delete(record.id, user_id=owner)
                if page.next_cursor is None:
                    break
        return {"message": "Memories deleted successfully!"}

    async def _history(self, memory_id: str) -> list[dict[str, Any]]:
        ident, owner = _split(memory_id)
        entries = await self._service.history(ident, user_id=owner)
        return [
            {
                "id": str(entry.id),
                "memory_id": f"{entry.memory_id}:{owner}",
                "old_memory": entry.old_content,
                "new_memory": entry.new_content,
                "event": entry.action,
                "created_at": _iso(entry.created_at),
                "updated_at": None,
                "is_deleted": entry.action == "DELETE",
                "actor_id": None,
                "role": None,
            }
            for entry in entries
        ]

    def _run(self, coro: Coroutine[Any, Any, R]) -> R:
        return self._bridge.run(coro)


class Memory(_Core):
    """mem0's ``Memory`` on memvault. ``Memory()`` opens memvault from ``MEMVAULT_*`` settings;
    pass an open ``memvault.Memory`` or ``memvault.MemoryClient`` to share one."""

    def __init__(self, memory: _SyncService | _SyncClient | None = None) -> None:
        # One this object opened is its to close; one passed in belongs to the caller.
        self._opened = _SyncService() if memory is None else None
        super().__init__(memory if memory is not None else self._opened)

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> Memory:
        if config_dict:
            raise _unsupported("mem0's provider config (configure memvault with MEMVAULT_*)")
        return cls()

    def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any | None = None,
        expiration_date: Any | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        return self._run(
            self._add(
                messages,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                metadata=metadata,
                timestamp=timestamp,
                expiration_date=expiration_date,
                infer=infer,
                memory_type=memory_type,
                prompt=prompt,
            )
        )

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any | None = None,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        _no_entities(kwargs, "search")
        return self._run(
            self._search(
                query,
                top_k=top_k,
                filters=filters,
                threshold=threshold,
                rerank=rerank,
                explain=explain,
                reference_date=reference_date,
                show_expired=show_expired,
            )
        )

    def get(self, memory_id: str) -> dict[str, Any] | None:
        return self._run(self._get(memory_id))

    def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        _no_entities(kwargs, "get_all")
        return self._run(self._get_all(filters, top_k, show_expired))

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
    ) -> dict[str, Any]:
        return self._run(self._update(memory_id, text, metadata, expiration_date, data))

    def delete(self, memory_id: str) -> dict[str, Any]:
        return self._run(self._delete(memory_id))

    def delete_all(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        return self._run(self._delete_all(user_id, agent_id, run_id))

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return self._run(self._history(memory_id))

    def reset(self) -> None:
        raise _unsupported("reset() (erase a user with delete_all, or memvault's erase_user)")


class AsyncMemory(_Core):
    """mem0's ``AsyncMemory`` on memvault, over an open ``memvault.AsyncMemory`` or
    ``memvault.AsyncMemoryClient``."""

    def __init__(self, memory: _AsyncService | _AsyncClient) -> None:
        super().__init__(memory)

    async def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: Any | None = None,
        expiration_date: Any | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
        llm: Any = None,
    ) -> dict[str, Any]:
        if llm is not None:
            raise _unsupported("a per-call llm (configure memvault's LLM with MEMVAULT_LLM_*)")
        return await self._bridge.arun(
            self._add(
                messages,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                metadata=metadata,
                timestamp=timestamp,
                expiration_date=expiration_date,
                infer=infer,
                memory_type=memory_type,
                prompt=prompt,
            )
        )

    async def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: dict[str, Any] | None = None,
        threshold: float = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any | None = None,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        _no_entities(kwargs, "search")
        return await self._bridge.arun(
            self._search(
                query,
                top_k=top_k,
                filters=filters,
                threshold=threshold,
                rerank=rerank,
                explain=explain,
                reference_date=reference_date,
                show_expired=show_expired,
            )
        )

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        return await self._bridge.arun(self._get(memory_id))

    async def get_all(
        self,
        *,
        filters: dict[str, Any] | None = None,
        top_k: int = 20,
        show_expired: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        _no_entities(kwargs, "get_all")
        return await self._bridge.arun(self._get_all(filters, top_k, show_expired))

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = _UNSET,
        data: str | None = None,
    ) -> dict[str, Any]:
        return await self._bridge.arun(
            self._update(memory_id, text, metadata, expiration_date, data)
        )

    async def delete(self, memory_id: str) -> dict[str, Any]:
        return await self._bridge.arun(self._delete(memory_id))

    async def delete_all(
        self, user_id: Any = None, agent_id: Any = None, run_id: Any = None
    ) -> dict[str, Any]:
        return await self._bridge.arun(self._delete_all(user_id, agent_id, run_id))

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        return await self._bridge.arun(self._history(memory_id))

    async def reset(self) -> None:
        raise _unsupported("reset() (erase a user with delete_all, or memvault's erase_user)")


class MemoryClient(_Core):
    """mem0's platform ``MemoryClient`` on a memvault server: ``host`` is memvault's URL and
    ``api_key`` a memvault key. Options travel as in mem0, as ``options`` or keywords."""

    def __init__(
        self,
        api_key: str | None = None,
        host: str | None = None,
        org_id: str | None = None,
        project_id: str | None = None,
        client: Any = None,
    ) -> None:
        if org_id or project_id:
            raise _unsupported("org_id/project_id (a memvault key names its tenant)")
        if client is not None:
            raise _unsupported("a custom httpx client (pass memvault's MemoryClient instead)")
        super().__init__(_SyncClient(host or "http://127.0.0.1:8765", api_key))

    @classmethod
    def over(cls, memory: _SyncService | _SyncClient) -> MemoryClient:
        """The same API over an already open memvault ``Memory`` or ``MemoryClient``."""
        made = cls.__new__(cls)
        _Core.__init__(made, memory)
        return made

    def add(self, messages: Any, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        given = _options(options, kwargs)
        return self._run(self._add(messages, **_only(given, _ADD, "add")))

    def search(self, query: str, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        given = _options(options, kwargs)
        return self._run(self._search(query, **_only(given, _SEARCH, "search")))

    def get(self, memory_id: str) -> dict[str, Any]:
        found = self._run(self._get(memory_id))
        if found is None:
            raise KeyError(f"No memory {memory_id!r}.")
        return found

    def get_all(self, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        given = _only(_options(options, kwargs), {"filters", "top_k"}, "get_all")
        return self._run(self._get_all(given.get("filters"), int(given.get("top_k", 20)), False))

    def update(self, memory_id: str, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        given = _only(_options(options, kwargs), {"text", "metadata"}, "update")
        return self._run(self._update(memory_id, given.get("text"), given.get("metadata")))

    def delete(self, memory_id: str, delete_linked: bool = False) -> dict[str, Any]:
        if delete_linked:
            raise _unsupported("delete_linked=True")
        return self._run(self._delete(memory_id))

    def delete_all(self, options: Any = None, **kwargs: Any) -> dict[str, str]:
        given = _only(_options(options, kwargs), set(_ENTITIES), "delete_all")
        result: dict[str, str] = self._run(
            self._delete_all(given.get("user_id"), given.get("agent_id"), given.get("run_id"))
        )
        return result

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return self._run(self._history(memory_id))

    def reset(self) -> dict[str, str]:
        raise _unsupported("reset() (erase a user with delete_all, or memvault's erase_user)")


_ADD = {"user_id", "agent_id", "run_id", "metadata", "timestamp", "expiration_date", "infer"}
_SEARCH = {"top_k", "filters", "threshold", "rerank"}


def _options(options: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    given = dict(options or {}) if not hasattr(options, "model_dump") else options.model_dump()
    given.update(kwargs)
    return {k: v for k, v in given.items() if v is not None}


def _only(given: dict[str, Any], allowed: set[str], method: str) -> dict[str, Any]:
    if extra := sorted(set(given) - allowed):
        raise _unsupported(f"{', '.join(extra)} in {method}()")
    return given


def _no_entities(kwargs: dict[str, Any], method: str) -> None:
    if entities := sorted(set(kwargs) & set(_ENTITIES)):
        # mem0 refuses these too: entity ids go in filters.
        raise ValueError(
            f"Top-level entity parameters {set(entities)} are not supported in {method}(). "
            "Use filters={'user_id': '...'} instead."
        )
    if kwargs:
        raise _unsupported(f"{', '.join(sorted(kwargs))} in {method}()")


__all__ = ["AsyncMemory", "Memory", "MemoryClient", "NotSupported"]
