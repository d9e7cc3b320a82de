"""Dashboard sessions where every server process finds them: in Redis when ``redis_url`` is
set, else in an UNLOGGED PostgreSQL table (the same choice as rate-limit buckets and working
memory). A browser signed in on one process is signed in on all of them.

A session is stored under the SHA-256 of its id and sealed (AES-256-GCM under the master
key, bound to that digest), so a reader of Redis or the database holds neither a session id
to present nor the API key behind it. Each read pushes the expiry on: an idle timeout.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import TYPE_CHECKING, Any

from memvault.crypto.envelope import Sealed, associated_data
from memvault.db import ui_sessions
from memvault.db.units import transaction
from memvault.errors import KeyMismatch, StoreUnavailable

if TYPE_CHECKING:
    from memvault.backend import Backend

# Expired rows are swept now and then by a save, rather than by a job of their own.
_PRUNE_EVERY = 500


class SessionVault:
    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        url = backend.settings.redis_url
        self._redis_url = url.get_secret_value() if url else None
        self._redis: Any = None
        self._saves = 0

    async def load(self, session_id: str, idle_s: float) -> dict[str, Any] | None:
        digest = _digest(session_id)
        if self._redis_url:
            payload = await self._redis_call("getex", _redis_key(digest), ex=int(idle_s))
        else:
            async with transaction(self._backend.engine) as conn:
                payload = await ui_sessions.load(conn, digest, idle_s)
        return None if payload is None else self._open(digest, bytes(payload))

    async def save(self, session_id: str, values: dict[str, Any], idle_s: float) -> None:
        digest = _digest(session_id)
        payload = self._seal(digest, values)
        if self._redis_url:
            await self._redis_call("set", _redis_key(digest), payload, ex=int(idle_s))
            return
        async with transaction(self._backend.engine) as conn:
            await ui_sessions.save(conn, digest, payload, idle_s)
            self._saves += 1
            if self._saves % _PRUNE_EVERY == 0:
                await ui_sessions.prune(conn)

    async def drop(self, session_id: str) -> None:
        digest = _digest(session_id)
        if self._redis_url:
            await self._redis_call("delete", _redis_key(digest))
            return
        async with transaction(self._backend.engine) as conn:
            await ui_sessions.drop(conn, digest)

    async def aclose(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def _redis_call(self, command: str, *args: Any, **options: Any) -> Any:
        if self._redis is None:
            import redis.asyncio as redis

            assert self._redis_url is not None
            self._redis = redis.from_url(
                self._redis_url, socket_timeout=2, socket_connect_timeout=2
            )
        try:
            return await getattr(self._redis, command)(*args, **options)
        except Exception as exc:  # redis raises many unrelated types; all mean "not now"
            raise StoreUnavailable(
                "Dashboard sessions (Redis) are unavailable.", details={"store": "redis"}
            ) from exc

    def _seal(self, digest: bytes, values: dict[str, Any]) -> bytes:
        keyring = self._backend.keys.current()
        sealed = keyring.seal(json.dumps(values), _aad(digest))
        envelope = {
            "k": sealed.key_id,
            "n": base64.b64encode(sealed.nonce).decode(),
            "c": base64.b64encode(sealed.ciphertext).decode(),
        }
        return json.dumps(envelope).encode()

    def _open(self, digest: bytes, payload: bytes) -> dict[str, Any] | None:
        try:
            envelope = json.loads(payload)
            sealed = Sealed(
                base64.b64decode(envelope["c"]), base64.b64decode(envelope["n"]), envelope["k"]
            )
            values: dict[str, Any] = json.loads(
                self._backend.keys.current().open(sealed, _aad(digest))
            )
        except (KeyMismatch, ValueError, KeyError, TypeError):
            return None  # sealed under a key since forgotten, or not a payload of ours
        return values


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode()).digest()


def _redis_key(digest: bytes) -> str:
    return f"memvault:ui:session:{digest.hex()}"


def _aad(digest: bytes) -> bytes:
    return associated_data("ui-session", digest.hex())
