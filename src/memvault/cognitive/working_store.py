"""Working memory: one live session's scratch space, keyed by (tenant, user, channel,
conversation), every entry with a TTL.

What a session holds is a set of slots: ``kv`` (named values), ``turns`` (the most recent turns,
bounded), ``thoughts`` (a stack) and ``goal`` (the active goal). Each entry is sealed before it
reaches a store, bound to its full key, so neither Redis nor PostgreSQL holds it in plaintext.
Two stores behave the same: Redis when configured (keys ``working:{tenant}:{user}:{channel}:
{conversation}:{slot}:{key}``, each with its own expiry), else an UNLOGGED PostgreSQL table
whose rows carry ``expires_at``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from memvault.crypto.envelope import KeyringSource, Sealed
from memvault.db import cognitive as db
from memvault.db.sealed_columns import payload_aad
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, StoreUnavailable

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from memvault.config import Settings

TABLE = "working_memory"
Session = tuple[str, str, str]  # user, channel, conversation
Clock = Callable[[], float]


@dataclass(frozen=True)
class Entry:
    slot: str
    key: str
    sealed: Sealed


class WorkingStore(Protocol):
    async def put(
        self, tenant_id: str, session: Session, slot: str, key: str, sealed: Sealed, ttl_s: float
    ) -> None: ...

    async def get(
        self, tenant_id: str, session: Session, slot: str | None = None, key: str | None = None
    ) -> list[Entry]: ...

    async def delete(
        self, tenant_id: str, session: Session, slot: str | None = None, key: str | None = None
    ) -> int: ...

    async def aclose(self) -> None: ...


class PostgresWorkingStore:
    """Rows of the UNLOGGED ``working_memory`` table; an expired row reads as absent, goes at
    the session's next write, and ``purge_expired`` clears what abandoned sessions left."""

    def __init__(self, engine: AsyncEngine, clock: Clock = time.time) -> None:
        self._engine = engine
        self._clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    async def put(
        self, tenant_id: str, session: Session, slot: str, key: str, sealed: Sealed, ttl_s: float
    ) -> None:
        user_id, channel, conversation_id = session
        now = self._now()
        # Working memory is a session's scratch state, set whole or dropped, never what a keyed
        # write stores: a keyed request changes it as upkeep (an erasure drops deleted turns
        # before its own transaction, which may still fail), and its rerun does so again.
        async with transaction(self._engine, side_work=True) as conn:
            await db.put_working(
                conn,
                {
                    "tenant_id": tenant_id,
                    "user_id": user_id,
                    "channel": channel,
                    "conversation_id": conversation_id,
                    "slot": slot,
                    "key": key,
                    "ciphertext": sealed.ciphertext,
                    "nonce": sealed.nonce,
                    "key_id": sealed.key_id,
                    "expires_at": now + timedelta(seconds=ttl_s),
                },
                now,
            )

    async def get(
        self, tenant_id: str, session: Session, slot: str | None = None, key: str | None = None
    ) -> list[Entry]:
        async with reading(self._engine) as conn:
            rows = await db.get_working(conn, tenant_id, session, slot, key, self._now())
        return [Entry(r.slot, r.key, Sealed(r.ciphertext, r.nonce, r.key_id)) for r in rows]

    async def delete(
        self, tenant_id: str, session: Session, slot: str | None = None, key: str | None = None
    ) -> int:
        async with transaction(self._engine, side_work=True) as conn:  # as put's
            return await db.delete_working(conn, tenant_id, session, slot, key)

    async def purge_expired(self) -> int:
        async with transaction(self._engine) as conn:
            return await db.purge_expired_working(conn, self._now())

    async def aclose(self) -> None:
        return None


def _part(value: str) -> str:
    """One key component, escaped so ``a:b`` + ``c`` never meets ``a`` + ``b:c``."""
    return value.replace("%", "%25").replace(":", "%3A")


def redis_key(tenant_id: str, session: Session, slot: str, key: str) -> str:
    return ":".join(["working", *(_part(p) for p in (tenant_id, *session, slot, key))])


def _index_key(tenant_id: str, session: Session) -> str:
    return ":".join(["working", *(_part(p) for p in (tenant_id, *session)), "index"])


def _pack(sealed: Sealed) -> bytes:
    return b"".join(
        (
            sealed.key_id.encode(),
            b"\x00",
            bytes([len(sealed.nonce)]),
            sealed.nonce,
            sealed.ciphertext,
        )
    )


def _unpack(blob: bytes) -> Sealed:
    key_id, _, rest = blob.partition(b"\x00")
    size = rest[0]
    return Sealed(ciphertext=rest[1 + size :], nonce=rest[1 : 1 + size], key_id=key_id.decode())


class RedisWorkingStore:
    """One Redis key per entry with its own expiry, and a per-session index set (expiring with
    the longest-lived entry) so a whole context is read or cleared without a keyspace scan."""

    def __init__(self, url: str) -> None:
        import redis.asyncio as redis

        self._redis: Any = redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)

    async def _run(self, commands: Callable[[Any], None]) -> list[Any]:
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                commands(pipe)
                result: list[Any] = await pipe.execute()
                return result
        except Exception as exc:  # redis raises many unrelated types; all mean "not now"
            raise StoreUnavailable(
                "Working memory (Redis) is unavailable.", details={"store": "redis"}
            ) from exc

    async def put(
        self, tenant_id: str, session: Session, slot: str, key: str, sealed: Sealed, ttl_s: float
    ) -> None:
        ms = max(int(ttl_s * 1000), 1)
        index = _index_key(tenant_id, session)

        def commands(pipe: Any) -> None:
            pipe.set(redis_key(tenant_id, session, slot, key), _pack(sealed), px=ms)
            pipe.sadd(index, f"{slot}\x00{key}")
            pipe.pexpire(index, ms, nx=True)
            pipe.pexpire(index, ms, gt=True)

        await self._run(commands)

    async def _members(self, tenant_id: str, session: Session) -> list[tuple[str, str]]:
        (members,) = await self._run(lambda p: p.smembers(_index_key(tenant_id, session)))
        found = [m.decode().split("\x00", 1) for m in members]
        return sorted((slot, key) for slot, key in found)

    async def get(
        self, tenant_id: str, session: Session, slot: str | None = None, key: str | None = None
    ) -> list[Entry]:
        wanted = [
            (s, k)
            for s, k in await self._members(tenant_id, session)
            if (slot is None or s == slot) and (key is None or k == key)
        ]
        if not wanted:
            return []
        names = [redis_key(tenant_id, session, s, k) for s, k in wanted]
        (blobs,) = await self._run(lambda p: p.mget(names))
        return [
            Entry(s, k, _unpack(blob)) for (s, k), blob in zip(wanted, blobs, strict=True) if blob
        ]

    async def delete(
        self, tenant_id: str, session: Session, slot: str | None = None, key: str | None = None
    ) -> int:
        members = await self._members(tenant_id, session)
        gone = [
            (s, k) for s, k in members if (slot is None or s == slot) and (key is None or k == key)
        ]
        if not gone:
            return 0
        index = _index_key(tenant_id, session)

        def commands(pipe: Any) -> None:
            pipe.delete(*(redis_key(tenant_id, session, s, k) for s, k in gone))
            pipe.srem(index, *(f"{s}\x00{k}" for s, k in gone))

        deleted, _ = await self._run(commands)
        return int(deleted)

    async def forget(self, tenant_id: str, user_id: str | None) -> int:
        """Every key of a user (of the whole tenant, for ``user_id`` None), index sets included:
        a keyspace scan, as an erasure is rare and must not miss a session."""
        parts = [tenant_id] if user_id is None else [tenant_id, user_id]
        pattern = ":".join(["working", *(_glob_literal(_part(p)) for p in parts), "*"])
        try:
            names = [name async for name in self._redis.scan_iter(match=pattern, count=1_000)]
        except Exception as exc:  # redis raises many unrelated types; all mean "not now"
            raise StoreUnavailable(
                "Working memory (Redis) is unavailable.", details={"store": "redis"}
            ) from exc
        if not names:
            return 0
        (deleted,) = await self._run(lambda p: p.delete(*names))
        return int(deleted)

    async def forget_conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> int:
        """Every key of one conversation's sessions (in whichever channel), index sets
        included."""
        owner = [_glob_literal(_part(p)) for p in (tenant_id, user_id)]
        pattern = ":".join(["working", *owner, "*", _glob_literal(_part(conversation_id)), "*"])
        wanted = _part(conversation_id)
        try:
            found = [name async for name in self._redis.scan_iter(match=pattern, count=1_000)]
        except Exception as exc:  # redis raises many unrelated types; all mean "not now"
            raise StoreUnavailable(
                "Working memory (Redis) is unavailable.", details={"store": "redis"}
            ) from exc
        # A glob's * may span components: keep the keys whose conversation component is it.
        names = [n for n in found if _component(n, 4) == wanted]
        if not names:
            return 0
        (deleted,) = await self._run(lambda p: p.delete(*names))
        return int(deleted)

    async def aclose(self) -> None:
        await self._redis.aclose()


def _component(name: str | bytes, n: int) -> str | None:
    """The ``n``-th ``:``-separated component of a key (0 is ``working``)."""
    text = name.decode() if isinstance(name, bytes) else name
    parts = text.split(":")
    return parts[n] if len(parts) > n else None


def _glob_literal(value: str) -> str:
    """``value`` matched as itself by a Redis SCAN pattern."""
    return "".join(f"\\{ch}" if ch in "*?[]\\" else ch for ch in value)


def open_store(settings: Settings, engine: AsyncEngine) -> WorkingStore:
    """Redis when ``redis_url`` is set, else the UNLOGGED table."""
    url = settings.redis_url.get_secret_value() if settings.redis_url else None
    return RedisWorkingStore(url) if url else PostgresWorkingStore(engine)


class WorkingMemory:
    """A session's slots over either store, sealing and opening as entries pass."""

    def __init__(
        self,
        store: WorkingStore,
        keys: KeyringSource,
        *,
        ttl_s: float,
        max_turns: int,
        max_thoughts: int,
    ) -> None:
        self.store = store
        self._keys = keys
        self.ttl_s = ttl_s
        self.max_turns = max_turns
        self.max_thoughts = max_thoughts

    def _aad(self, tenant_id: str, session: Session, slot: str, key: str) -> bytes:
        return payload_aad(TABLE, tenant_id, *session, slot, key)

    async def put(
        self,
        tenant_id: str,
        session: Session,
        slot: str,
        key: str,
        value: Any,
        ttl_s: float | None = None,
    ) -> None:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            raise InvalidInput(
                "A working-memory value must be JSON (objects, lists, text, numbers, booleans).",
                details={"field": "value"},
            ) from None
        sealed = self._keys.current(tenant_id).seal(text, self._aad(tenant_id, session, slot, key))
        await self.store.put(tenant_id, session, slot, key, sealed, ttl_s or self.ttl_s)

    def _open(self, tenant_id: str, session: Session, entry: Entry) -> Any:
        aad = self._aad(tenant_id, session, entry.slot, entry.key)
        return json.loads(self._keys.current(tenant_id).open(entry.sealed, aad))

    async def read(
        self, tenant_id: str, session: Session, slot: str | None = None, key: str | None = None
    ) -> dict[tuple[str, str], Any]:
        entries = await self.store.get(tenant_id, session, slot, key)
        held = self._keys.current(tenant_id).key_ids
        # A Redis entry sealed under a key since retired by rotation (which reseals only what
        # PostgreSQL holds) reads as expired: working memory is scratch space.
        return {
            (e.slot, e.key): self._open(tenant_id, session, e)
            for e in entries
            if e.sealed.key_id in held
        }

    async def push(
        self, tenant_id: str, session: Session, slot: str, item: Any, bound: int
    ) -> list[Any]:
        """Append to a bounded list slot (read, append, cut, write: a session has one writer)."""
        current = (await self.read(tenant_id, session, slot, "")).get((slot, ""), [])
        updated = [*current, item][-bound:]
        await self.put(tenant_id, session, slot, "", updated)
        return updated

    async def pop(self, tenant_id: str, session: Session, slot: str) -> Any:
        current: list[Any] = (await self.read(tenant_id, session, slot, "")).get((slot, ""), [])
        if not current:
            return None
        await self.put(tenant_id, session, slot, "", current[:-1])
        return current[-1]


def values_of(found: dict[tuple[str, str], Any], slot: str) -> dict[str, Any]:
    return {key: value for (s, key), value in sorted(found.items()) if s == slot}


def list_of(found: dict[tuple[str, str], Any], slot: str) -> Sequence[Any]:
    value = found.get((slot, ""), [])
    return value if isinstance(value, list) else []
