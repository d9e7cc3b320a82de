"""Token buckets in PostgreSQL, for server processes that share no Redis.

One statement takes a token: the upsert refills the bucket for the time since its last take
(``rate`` a second, at most ``burst``), takes ``cost`` if there are that many (a negative cost
gives tokens back, up to ``burst``), and records whether it did,
all under the row lock ``ON CONFLICT`` holds, so concurrent takers in any number of processes
queue on the row and never both spend the last token. Time is the database's clock, so the
processes need not agree on theirs.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

_REFILLED = (
    "LEAST(CAST(:burst AS float8), b.tokens + CAST(:rate AS float8) * "
    "GREATEST(CAST(EXTRACT(EPOCH FROM EXCLUDED.at - b.at) AS float8), 0))"
)
_COST = "CAST(:cost AS float8)"
_TAKE = sa.text(
    f"""
    INSERT INTO rate_limit_buckets AS b (key, tokens, allowed, at)
    VALUES (:key, LEAST(CAST(:burst AS float8), CAST(:burst AS float8) - {_COST}), true,
            clock_timestamp())
    ON CONFLICT (key) DO UPDATE SET
        tokens = LEAST(CAST(:burst AS float8),
                       {_REFILLED} - CASE WHEN {_REFILLED} >= {_COST} THEN {_COST} ELSE 0 END),
        allowed = {_REFILLED} >= {_COST},
        at = EXCLUDED.at
    RETURNING allowed, tokens
    """
)
# A bucket idle for longer than a full refill is the same as no bucket.
_PRUNE = sa.text(
    "DELETE FROM rate_limit_buckets "
    "WHERE at < clock_timestamp() - make_interval(secs => CAST(:idle_s AS float8))"
)


async def take(conn: AsyncConnection, key: str, rate: float, burst: int, cost: float = 1) -> float:
    """Seconds until ``key`` may make a request; 0 when it may now (and ``cost`` was taken)."""
    values = {"key": key, "rate": rate, "burst": burst, "cost": float(cost)}
    row = (await conn.execute(_TAKE, values)).one()
    return 0.0 if row.allowed else (cost - float(row.tokens)) / rate


async def prune(conn: AsyncConnection, idle_s: float) -> int:
    return (await conn.execute(_PRUNE, {"idle_s": idle_s})).rowcount
