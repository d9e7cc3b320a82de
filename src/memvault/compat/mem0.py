"""mem0's API over memvault: ``from memvault.compat.mem0 import Memory`` instead of
``from mem0 import Memory``; the same method names, parameters, return shapes and refusals as
mem0ai 2.2.1 (``tests/test_compat_mem0_differential.py`` runs both side by side).

How mem0's model maps onto memvault's (docs/integrations.md, "mem0's API"):

* mem0 keeps every memory in one collection, and ``user_id`` / ``agent_id`` / ``run_id`` are
  fields of each memory that filters match. So does this API: every memory it stores lives
  under one memvault user, the *owner* (``"mem0"`` unless ``owner=`` names another), with the
  entity ids, ``role`` and ``actor_id`` in its metadata under ``"mem0"``. A memory id is
  therefore a plain UUID, as in mem0, and a memory added with ``user_id`` and ``agent_id`` is
  found by either. Deduplication (``infer=True``) stays within one mem0 session (the same
  entity ids, as mem0's extraction reads only that session's memories): the session is the
  memory's memvault ``app_id``.
* ``add`` stores each message's text through memvault's pipeline (``infer=True``: dedup and
  enrichment decide ADD / UPDATE / nothing; ``infer=False``: stored as given). A system
  message is instructions, not memory, and is skipped as mem0 skips it.
* What mem0 does and memvault does not (rerankers, procedural memory, custom prompts, expired
  results) raises :class:`NotSupported` naming it; bad input raises ``ValueError`` with
  mem0's message (:mod:`memvault.compat.mem0_input`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memvault import AsyncMemory as _AsyncService
from memvault import Memory as _SyncService
from memvault.client import AsyncMemoryClient as _AsyncClient
from memvault.client import MemoryClient as _SyncClient
from memvault.compat import mem0_input as rules
from memvault.compat.mem0_store import (
    CLIENT_ENTITIES,
    OWNER,
    PAGE,
    UNSET,
    Core,
    NotSupported,
    item,
    unsupported,
    when,
)


class Memory(Core):
    """mem0's ``Memory`` on memvault. ``Memory()`` opens memvault from ``MEMVAULT_*`` settings;
    pass an open ``memvault.Memory`` or ``memvault.MemoryClient`` to share one. ``owner`` is
    the memvault user every memory of this API lives under."""

    def __init__(
        self, memory: _SyncService | _SyncClient | None = None, *, owner: str = OWNER
    ) -> None:
        # One this object opened is its to close; one passed in belongs to the caller.
        self._opened = _SyncService() if memory is None else None
        super().__init__(memory if memory is not None else self._opened, owner)

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> Memory:
        if config_dict:
            raise unsupported("mem0's provider config (configure memvault with MEMVAULT_*)")
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
        entities = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return self._run(
            self._add(
                messages,
                entities,
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
        _no_extras(kwargs, "search")
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
        _no_extras(kwargs, "get_all")
        return self._run(self._get_all(filters, top_k, show_expired))

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = UNSET,
        data: str | None = None,
    ) -> dict[str, Any]:
        return self._run(self._update(memory_id, _text(text, data), metadata, expiration_date))

    def delete(self, memory_id: str) -> dict[str, Any]:
        return self._run(self._delete(memory_id))

    def delete_all(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        entities = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return self._run(self._delete_all(entities))

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return self._run(self._history(memory_id))

    def reset(self) -> None:
        """Delete every memory this API stored (its owner's), as mem0's ``reset`` empties its
        collection. Unguarded, as mem0's is: ``delete_all`` is the call that refuses to run
        without an entity id and names this one."""
        self._run(self._reset())


class AsyncMemory(Core):
    """mem0's ``AsyncMemory`` on memvault, over an open ``memvault.AsyncMemory`` or
    ``memvault.AsyncMemoryClient``; ``owner`` as on :class:`Memory`."""

    def __init__(self, memory: _AsyncService | _AsyncClient, *, owner: str = OWNER) -> None:
        super().__init__(memory, owner)

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
            raise unsupported("a per-call llm (configure memvault's LLM with MEMVAULT_LLM_*)")
        entities = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return await self._bridge.arun(
            self._add(
                messages,
                entities,
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
        _no_extras(kwargs, "search")
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
        _no_extras(kwargs, "get_all")
        return await self._bridge.arun(self._get_all(filters, top_k, show_expired))

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = UNSET,
        data: str | None = None,
    ) -> dict[str, Any]:
        return await self._bridge.arun(
            self._update(memory_id, _text(text, data), metadata, expiration_date)
        )

    async def delete(self, memory_id: str) -> dict[str, Any]:
        return await self._bridge.arun(self._delete(memory_id))

    async def delete_all(
        self, user_id: Any = None, agent_id: Any = None, run_id: Any = None
    ) -> dict[str, Any]:
        entities = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        return await self._bridge.arun(self._delete_all(entities))

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        return await self._bridge.arun(self._history(memory_id))

    async def reset(self) -> None:
        """As :meth:`Memory.reset`."""
        await self._bridge.arun(self._reset())


class MemoryClient(Core):
    """mem0's platform ``MemoryClient`` on a memvault server: ``host`` is memvault's URL and
    ``api_key`` a memvault key. Options travel as in mem0, as ``options`` or keywords, in
    mem0's v3 forms (entity ids in ``filters``, ``app_id`` among them, ``page``/``page_size``)
    and the older top-level ones."""

    _entities = CLIENT_ENTITIES

    def __init__(
        self,
        api_key: str | None = None,
        host: str | None = None,
        org_id: str | None = None,
        project_id: str | None = None,
        client: Any = None,
        *,
        owner: str = OWNER,
    ) -> None:
        if org_id or project_id:
            raise unsupported("org_id/project_id (a memvault key names its tenant)")
        if client is not None:
            raise unsupported("a custom httpx client (pass memvault's MemoryClient instead)")
        super().__init__(_SyncClient(host or "http://127.0.0.1:8765", api_key), owner)

    @classmethod
    def over(cls, memory: _SyncService | _SyncClient, *, owner: str = OWNER) -> MemoryClient:
        """The same API over an already open memvault ``Memory`` or ``MemoryClient``."""
        made = cls.__new__(cls)
        Core.__init__(made, memory, owner)
        return made

    def add(self, messages: Any, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        given = _only(_options(options, kwargs), _ADD | set(CLIENT_ENTITIES), "add")
        entities = _client_entities(given)
        return self._run(self._add(messages, entities, **given))

    def search(self, query: str, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        rules.no_entity_keywords(kwargs, "search")
        given = _only(_options(options, kwargs), _SEARCH, "search")
        return self._run(self._search(query, **given))

    def get(self, memory_id: str) -> dict[str, Any]:
        found = self._run(self._get(memory_id))
        if found is None:
            raise KeyError(f"No memory {memory_id!r}.")
        return found

    def get_all(self, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        """mem0's v3 page: ``{"count", "next", "previous", "results"}``; ``page`` counts
        from 1, ``page_size`` is 100 unless given (``top_k``, the older name, is taken too)."""
        rules.no_entity_keywords(kwargs, "get_all")
        given = _only(_options(options, kwargs), _GET_ALL, "get_all")
        if given.get("show_expired"):
            raise unsupported("show_expired (memvault never answers an expired memory)")
        size, number = given.get("page_size", given.get("top_k", PAGE)), given.get("page", 1)
        rules.search_params(top_k=size)
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValueError(f"Invalid page: {number!r}. Must be a positive integer.")
        return self._run(self._page(given.get("filters"), size, number, _dates(given)))

    def update(self, memory_id: str, options: Any = None, **kwargs: Any) -> dict[str, Any]:
        given = _options(options, kwargs, keep=("expiration_date",))
        given = _only(given, {"text", "metadata", "expiration_date"}, "update")
        return self._run(
            self._update(
                memory_id,
                given.get("text"),
                given.get("metadata"),
                given.get("expiration_date", UNSET),
            )
        )

    def delete(self, memory_id: str, delete_linked: bool = False) -> dict[str, Any]:
        if delete_linked:
            raise unsupported("delete_linked=True")
        return self._run(self._delete(memory_id))

    def delete_all(self, options: Any = None, **kwargs: Any) -> dict[str, str]:
        given = _only(_options(options, kwargs), {"filters", *CLIENT_ENTITIES}, "delete_all")
        result: dict[str, str] = self._run(self._delete_all(_client_entities(given)))
        return result

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return self._run(self._history(memory_id))

    def reset(self) -> dict[str, str]:
        """Delete every memory this API stored (its owner's), as mem0's deletes every user's."""
        self._run(self._reset())
        return {"message": "Client reset successful. All users and memories deleted."}

    async def _page(
        self, filters: Any, size: int, number: int, dates: dict[str, datetime]
    ) -> dict[str, Any]:
        scope = rules.read_filters(filters, self._entities)
        found = [item(r) async for r in self._matching(scope, **dates)]
        start = (number - 1) * size
        return {
            "count": len(found),
            "next": f"?page={number + 1}&page_size={size}" if start + size < len(found) else None,
            "previous": f"?page={number - 1}&page_size={size}" if number > 1 else None,
            "results": found[start : start + size],
        }


_ADD = {"filters", "metadata", "timestamp", "expiration_date", "infer"}
_SEARCH = {"top_k", "filters", "threshold", "rerank", "reference_date", "show_expired"}
_GET_ALL = {"filters", "page", "page_size", "top_k", "start_date", "end_date", "show_expired"}


def _text(text: str | None, data: str | None) -> str | None:
    # mem0's ``data`` is the deprecated name of ``text``.
    return data if text is None else text


def _options(options: Any, kwargs: dict[str, Any], keep: tuple[str, ...] = ()) -> dict[str, Any]:
    given = options.model_dump(exclude_unset=True) if hasattr(options, "model_dump") else {}
    given = {**(given or dict(options or {})), **kwargs}
    return {k: v for k, v in given.items() if v is not None or k in keep}


def _only(given: dict[str, Any], allowed: set[str], method: str) -> dict[str, Any]:
    if extra := sorted(set(given) - allowed):
        raise unsupported(f"{', '.join(extra)} in {method}()")
    return given


def _client_entities(given: dict[str, Any]) -> dict[str, Any]:
    """The entity ids of a client call: in ``filters`` (mem0's v3 form) or top level (the
    older one), taken out of ``given``; the two must not disagree."""
    filters = dict(given.pop("filters", None) or {})
    if extra := sorted(set(filters) - set(CLIENT_ENTITIES)):
        raise ValueError(f"filters here take entity ids only, not {', '.join(extra)}.")
    for name in CLIENT_ENTITIES:
        value = given.pop(name, None)
        if value is not None and filters.get(name, value) != value:
            raise ValueError(f"{name} is given twice, as {value!r} and {filters[name]!r}.")
        if value is not None:
            filters[name] = value
    return filters


def _dates(given: dict[str, Any]) -> dict[str, datetime]:
    dates = {"created_after": given.get("start_date"), "created_before": given.get("end_date")}
    return {name: moment for name, value in dates.items() if (moment := when(value)) is not None}


def _no_extras(kwargs: dict[str, Any], method: str) -> None:
    rules.no_entity_keywords(kwargs, method)  # mem0 refuses these too: entity ids go in filters
    if kwargs:
        raise unsupported(f"{', '.join(sorted(kwargs))} in {method}()")


__all__ = ["OWNER", "AsyncMemory", "Memory", "MemoryClient", "NotSupported"]
