"""Dashboard sessions in PostgreSQL, for server processes that share no Redis: one UNLOGGED
row per session, found by the digest of its id, holding a sealed payload and when it idles
out. Reading a session pushes its expiry on (an idle timeout, not a fixed lifetime), writing
only when less than the idle time minus a quarter of an hour is left; time is the database's
clock, so the processes need not agree on theirs."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

_LOAD = sa.text(
    "SELECT payload, expires_at < clock_timestamp() + make_interval(secs => :fresh_s) AS stale "
    "FROM ui_sessions WHERE digest = :digest AND expires_at > clock_timestamp()"
)
_TOUCH = sa.text(
    "UPDATE ui_sessions SET expires_at = clock_timestamp() + make_interval(secs => :idle_s) "
    "WHERE digest = :digest"
)
# A read pushes the expiry on only once it has come this close: most page views then read
# without writing a row.
_SLACK_S = 900.0
_SAVE = sa.text(
    "INSERT INTO ui_sessions (digest, payload, expires_at) "
    "VALUES (:digest, :payload, clock_timestamp() + make_interval(secs => :idle_s)) "
    "ON CONFLICT (digest) DO UPDATE SET payload = EXCLUDED.payload, "
    "expires_at = EXCLUDED.expires_at"
)
_DROP = sa.text("DELETE FROM ui_sessions WHERE digest = :digest")
_PRUNE = sa.text("DELETE FROM ui_sessions WHERE expires_at <= clock_timestamp()")


async def load(conn: AsyncConnection, digest: bytes, idle_s: float) -> bytes | None:
    fresh_s = max(idle_s - _SLACK_S, 0.0)
    row = (await conn.execute(_LOAD, {"digest": digest, "fresh_s": fresh_s})).one_or_none()
    if row is None:
        return None
    if row.stale:
        await conn.execute(_TOUCH, {"digest": digest, "idle_s": idle_s})
    return bytes(row.payload)


async def save(conn: AsyncConnection, digest: bytes, payload: bytes, idle_s: float) -> None:
    await conn.execute(_SAVE, {"digest": digest, "payload": payload, "idle_s": idle_s})


async def drop(conn: AsyncConnection, digest: bytes) -> None:
    await conn.execute(_DROP, {"digest": digest})


async def prune(conn: AsyncConnection) -> int:
    return (await conn.execute(_PRUNE)).rowcount
