"""The operations of mem0's API, written once over memvault's async service; the faces
(:mod:`memvault.compat.mem0`: ``Memory``, ``AsyncMemory``, ``MemoryClient``) only pass their
arguments here. What the answers look like (mem0's ``MemoryItem``, history rows) is shaped here
too, and how mem0's model maps onto memvault's is said in :mod:`memvault.compat.mem0`."""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import AsyncIterator, Coroutine, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from memvault.compat import mem0_input as rules
from memvault.errors import InvalidInput, NotFound
from memvault.integrations._faces import Bridge

log = logging.getLogger(__name__)
R = TypeVar("R")
OWNER = "mem0"
_KEY = "mem0"
CLIENT_ENTITIES = ("user_id", "agent_id", "app_id", "run_id")
# The fields mem0 lifts out of a memory's payload beside its metadata, in mem0's order.
_PROMOTED = (
    "user_id",
    "agent_id",
    "app_id",
    "run_id",
    "actor_id",
    "role",
    "attributed_to",
    "expiration_date",
)
_IDENTITY = frozenset({"user_id", "agent_id", "app_id", "run_id", "actor_id"})
PAGE = 100  # memvault's largest page (MEMVAULT_MAX_PAGE_SIZE's default)
_HISTORY_IDS = uuid.UUID("6f1d5d8e-3c55-4c1b-9a51-6d656d307631")
UNSET: Any = object()
_EVENTS = {
    "stored_new": "ADD",
    "keep_both": "ADD",
    "pending": "ADD",
    "merge": "UPDATE",
    "replace": "UPDATE",
}


class NotSupported(NotImplementedError):
    """A mem0 behaviour memvault does not have; the message names it."""


def unsupported(what: str) -> NotSupported:
    return NotSupported(f"memvault's mem0-compatible API does not support {what}.")


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def when(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return datetime.fromisoformat(str(value))


def _expires_at(day: str | None) -> datetime | None:
    # mem0 hides a memory once its expiration date is past, so it lives through that day (UTC).
    if day is None:
        return None
    return datetime.combine(date.fromisoformat(day) + timedelta(days=1), datetime.min.time(), UTC)


def _hash(text: str) -> str:
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def _address(memory_id: Any) -> tuple[uuid.UUID, str | None] | None:
    """A memory id as a caller gives it: a plain UUID, or the form this API gave out before
    its ids were plain UUIDs, ``"<uuid>:<owner>"``, where the owner is the memvault user the
    memory was stored under then (the entity id: ``user_id``, else ``agent:<agent_id>``, else
    ``run:<run_id>``). None for anything else."""
    text = str(memory_id).strip()
    ident, sep, owner = text.partition(":")
    try:
        return uuid.UUID(ident if sep else text), (owner or None) if sep else None
    except ValueError:
        return None


def _stored_before(metadata: Mapping[str, Any], owner: str) -> bool:
    """Whether a memory under memvault user ``owner`` is one this API stored before its ids
    were plain UUIDs: its entity ids under this API's key name that owner as that API named
    it, and its role sits beside them (where that API kept it). Any other memory of that user
    is not this API's to read by an old-form id (another owner's, or the user's own)."""
    named = metadata.get(_KEY)
    if not isinstance(named, Mapping) or "role" in named or "role" not in metadata:
        return False
    if named.get("user_id"):
        return bool(named["user_id"] == owner)
    if named.get("agent_id"):
        return bool(f"agent:{named['agent_id']}" == owner)
    return bool(named.get("run_id")) and f"run:{named['run_id']}" == owner


def _session(entities: Mapping[str, str]) -> str:
    """The memvault ``app_id`` of a mem0 session: mem0's own session key (its entity ids,
    sorted), or its digest where that is longer than an identifier may be."""
    key = "&".join(f"{name}={entities[name]}" for name in sorted(entities))
    return key if len(key) <= 255 else f"mem0-session:{hashlib.sha256(key.encode()).hexdigest()}"


def _parts(record: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A memory's own metadata and the fields this API keeps beside it."""
    metadata = dict(record.metadata)
    return metadata, dict(metadata.pop(_KEY, None) or {})


def _fields(record: Any) -> dict[str, Any]:
    """A memory as mem0's payload holds it: what a filter is tested on."""
    metadata, mine = _parts(record)
    return {
        **metadata,
        **mine,
        "data": record.content,
        "hash": _hash(record.content),
        "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at),
    }


def item(record: Any, score: Any = UNSET) -> dict[str, Any]:
    """mem0's ``MemoryItem``: ``score`` is a search's, None on ``get``, absent from
    ``get_all`` (``UNSET``)."""
    metadata, mine = _parts(record)
    answer: dict[str, Any] = {
        "id": str(record.id),
        "memory": record.content,
        "hash": _hash(record.content),
        "metadata": metadata or None,
        "score": None if score is UNSET else score,
        "created_at": _iso(record.created_at),
        "updated_at": _iso(record.updated_at),
    }
    if score is UNSET:
        del answer["score"]
    answer.update((key, mine[key]) for key in _PROMOTED if key in mine)
    return answer


def _messages(messages: Any) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, dict):
        return [messages]
    if not isinstance(messages, list):
        raise ValueError("messages must be str, dict, or list[dict]")
    said = []
    for message in messages:
        # mem0 skips a message without a role or content, and a system message (instructions).
        if not isinstance(message, dict) or message.get("role") in (None, "system"):
            continue
        if isinstance(message.get("content"), str) and message["content"].strip():
            said.append(message)
    return said


def _own_metadata(metadata: Mapping[str, Any] | None, context: str) -> dict[str, Any]:
    """The caller's metadata, less the identity keys mem0 drops from it (scope is set by the
    entity ids alone) and refused if it uses this API's own key."""
    given = dict(metadata or {})
    if _KEY in given:
        raise ValueError(f"metadata[{_KEY!r}] is where memvault's mem0 API keeps entity ids.")
    for key in _IDENTITY & set(given):
        log.warning(
            "%s: ignoring metadata[%r]: identity fields cannot be set through metadata",
            context,
            key,
        )
        del given[key]
    return given


class Core:
    """The operations, written once over memvault's async service."""

    _entities: tuple[str, ...] = rules.ENTITIES

    def __init__(self, service: Any, owner: str = OWNER) -> None:
        self._bridge = Bridge(service)
        self._owner = owner

    @property
    def _service(self) -> Any:
        return self._bridge.service

    async def _add(
        self,
        messages: Any,
        entities: Mapping[str, Any],
        *,
        metadata: dict[str, Any] | None = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        day = rules.expiration(expiration_date)
        ids = rules.entities(entities, self._entities)
        own = _own_metadata(metadata, "add()")
        if not ids:
            raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.")
        if memory_type is not None:
            raise unsupported(f"memory_type={memory_type!r} (procedural memory)")
        if prompt is not None:
            raise unsupported("a custom extraction prompt")
        mine: dict[str, Any] = {**ids, "expiration_date": day} if day else dict(ids)
        results = []
        for message in _messages(messages):
            said = {**mine, "role": message["role"]}
            if message.get("name"):
                said["actor_id"] = message["name"]
            stored = await _checked(
                self._service.add(
                    message["content"],
                    user_id=self._owner,
                    app_id=_session(ids),
                    metadata={**own, _KEY: said},
                    occurred_at=when(timestamp),
                    expires_at=_expires_at(day),
                    infer=infer,
                )
            )
            event = _EVENTS.get(stored.dedup.action)
            if event is None:
                continue
            result = {"id": str(stored.id), "memory": stored.content, "event": event}
            if not infer:  # mem0 names who said a raw message, and in what role
                result |= {"actor_id": message.get("name") or None, "role": message["role"]}
            results.append(result)
        return {"results": results}

    def _owners(self, memory_id: Any) -> tuple[uuid.UUID | None, list[str]]:
        """The memory's UUID and the memvault users it may live under: this API's owner, and
        for an old-form id the user it names, where memories stored before plain ids stay
        (so an id a caller kept from then still reads, updates, deletes and has a history)."""
        address = _address(memory_id)
        if address is None:
            return None, []
        ident, old = address
        return ident, [self._owner] + ([old] if old and old != self._owner else [])

    async def _record(self, memory_id: Any) -> Any | None:
        ident, owners = self._owners(memory_id)
        for owner in owners:
            try:
                record = await self._service.get(ident, user_id=owner)
            except NotFound:
                continue
            if owner == self._owner or _stored_before(record.metadata, owner):
                return record
        return None

    async def _get(self, memory_id: Any) -> dict[str, Any] | None:
        record = await self._record(memory_id)
        return None if record is None else item(record, None)

    async def _matching(self, scope: rules.Filters, **listing: Any) -> AsyncIterator[Any]:
        """Every memory ``scope`` selects, newest first."""
        cursor = None
        while True:
            page = await _checked(
                self._service.list(
                    user_id=self._owner,
                    metadata=_containment(scope),
                    limit=PAGE,
                    cursor=cursor,
                    **listing,
                )
            )
            for record in page.results:
                if scope.test is None or scope.test(_fields(record)):
                    yield record
            cursor = page.next_cursor
            if cursor is None:
                return

    async def _get_all(
        self, filters: dict[str, Any] | None, top_k: Any, show_expired: bool
    ) -> dict[str, Any]:
        rules.search_params(top_k=top_k)
        scope = rules.read_filters(filters, self._entities)
        if show_expired:
            raise unsupported("show_expired (memvault never answers an expired memory)")
        found: list[dict[str, Any]] = []
        if top_k > 0:
            async for record in self._matching(scope):
                found.append(item(record))
                if len(found) >= top_k:
                    break
        return {"results": found}

    async def _search(
        self,
        query: Any,
        *,
        top_k: Any = 20,
        filters: dict[str, Any] | None = None,
        threshold: Any = 0.1,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
    ) -> dict[str, Any]:
        rules.search_params(threshold=threshold, top_k=top_k)
        text = rules.query(query)
        scope = rules.read_filters(filters, self._entities)
        if rerank:
            raise unsupported("rerank=True (memvault ranks by its own hybrid recall)")
        if explain:
            raise unsupported("explain=True (memvault answers a score breakdown in `scores`)")
        if show_expired:
            raise unsupported("show_expired (memvault never answers an expired memory)")
        if top_k == 0:
            return {"results": []}
        found = await _checked(
            self._service.search(
                text,
                user_id=self._owner,
                metadata=_containment(scope),
                limit=PAGE if scope.test is not None else min(top_k, PAGE),
                reference_time=when(reference_date),
                # mem0's threshold is a 0-1 similarity floor, which memvault's relevance is;
                # the service applies it before the cut, so top_k fills from what passes.
                min_relevance=0.1 if threshold is None else threshold,
            )
        )
        hits = [h for h in found.results if scope.test is None or scope.test(_fields(h))]
        if len(found.results) == PAGE and len(hits) < top_k:
            # The rest of the ranking is out of reach: say so rather than answer short.
            raise unsupported(
                f"a search that must look past memvault's best {PAGE} hits (top_k above "
                f"{PAGE}, or an operator filter that keeps fewer than top_k of them); narrow "
                "it with entity ids or exact metadata values"
            )
        return {"results": [item(hit, hit.relevance) for hit in hits[:top_k]]}

    async def _update(
        self,
        memory_id: Any,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        expiration_date: Any = UNSET,
    ) -> dict[str, Any]:
        if text is None and metadata is None and expiration_date is UNSET:
            raise ValueError("At least one of text, metadata, or expiration_date must be provided.")
        record = await self._record(memory_id)
        if record is None:
            raise ValueError(
                f"Memory with id {memory_id} not found. Please provide a valid 'memory_id'"
            )
        changes = _own_metadata(metadata, "update()") if metadata is not None else {}
        expires_at = None
        if expiration_date is not UNSET:
            day = rules.expiration(expiration_date)
            if day is None:
                raise unsupported("clearing a memory's expiration_date (move it later instead)")
            changes[_KEY] = {**_parts(record)[1], "expiration_date": day}
            expires_at = _expires_at(day)
        await _checked(
            self._service.update(
                record.id,
                user_id=record.user_id,
                content=text,
                metadata=changes or None,
                expires_at=expires_at,
            )
        )
        return {"message": "Memory updated successfully!"}

    async def _delete(self, memory_id: Any) -> dict[str, Any]:
        record = await self._record(memory_id)
        if record is None:
            raise ValueError(f"Memory with id {memory_id} not found")
        await _checked(self._service.delete(record.id, user_id=record.user_id))
        return {"message": "Memory deleted successfully!"}

    async def _delete_all(self, entities: Mapping[str, Any]) -> dict[str, Any]:
        scope = rules.Filters(rules.entities(entities, self._entities))
        if not scope.entities:
            raise ValueError(
                "At least one filter is required to delete all memories. If you want to "
                "delete all memories, use the `reset()` method."
            )
        while True:  # each round deletes the page it listed, so the next starts afresh
            page = await _checked(
                self._service.list(user_id=self._owner, metadata=_containment(scope), limit=PAGE)
            )
            for record in page.results:
                await _checked(self._service.delete(record.id, user_id=self._owner))
            if not page.results:
                return {"message": "Memories deleted successfully!"}

    async def _reset(self) -> None:
        """Everything this API stored: its owner's memories, history and derived rows."""
        await _checked(self._service.delete_all(user_id=self._owner))

    async def _history(self, memory_id: Any) -> list[dict[str, Any]]:
        ident, owners = self._owners(memory_id)
        entries: list[Any] = []
        for owner in owners:
            try:
                entries = list(await self._service.history(ident, user_id=owner))
            except NotFound:
                continue
            if entries and owner != self._owner:
                first = entries[0].new_metadata or entries[0].old_metadata or {}
                entries = entries if _stored_before(first, owner) else []
            if entries:
                break
        if not entries:
            return []
        created = _iso(entries[0].created_at)
        return [_change(entry, created) for entry in entries]

    def _run(self, coro: Coroutine[Any, Any, R]) -> R:
        return self._bridge.run(coro)


def _change(entry: Any, created: str) -> dict[str, Any]:
    """One history entry as mem0's: a UUID of its own (derived from memvault's entry, so it
    is the same on every read), the memory's creation beside the change's time."""
    said = (entry.new_metadata or entry.old_metadata or {}).get(_KEY) or {}
    return {
        "id": str(uuid.uuid5(_HISTORY_IDS, f"{entry.memory_id}/{entry.id}")),
        "memory_id": str(entry.memory_id),
        "old_memory": entry.old_content,
        "new_memory": entry.new_content,
        "event": entry.action,
        "created_at": created,
        "updated_at": created if entry.action == "ADD" else _iso(entry.created_at),
        "is_deleted": entry.action == "DELETE",
        "actor_id": said.get("actor_id"),
        "role": said.get("role"),
    }


def _containment(scope: rules.Filters) -> dict[str, Any] | None:
    """The exact matches as memvault's metadata containment: the fields this API keeps (entity
    ids, ``role``, ``actor_id``, …) under its key, the caller's own at the top."""
    mine = {**{k: v for k, v in scope.metadata.items() if k in _PROMOTED}, **scope.entities}
    wanted: dict[str, Any] = {k: v for k, v in scope.metadata.items() if k not in _PROMOTED}
    if mine:
        wanted[_KEY] = mine
    return wanted or None


async def _checked(call: Coroutine[Any, Any, R]) -> R:
    """memvault's refusal of bad input as mem0's: a ``ValueError``."""
    try:
        return await call
    except InvalidInput as exc:
        raise ValueError(str(exc)) from exc
