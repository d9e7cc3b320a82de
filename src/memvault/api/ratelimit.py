"""Per-key token buckets: ``rate_limit_per_s`` tokens a second, up to ``rate_limit_burst``.

A request takes one token; a caller may take another ``cost``, and a negative cost gives tokens
back (the dashboard's sign-in takes one per attempt before checking the key, so parallel
guesses cannot all slip past, and gives it back when the key was right).

With Redis configured every server process shares one bucket per key (an atomic Lua script,
timed by Redis's clock so processes need not agree on theirs); without it they share one in
PostgreSQL (``shared``: an UNLOGGED table and one upsert, db/ratelimit.py). If the shared store
stops answering, the process falls back to its own buckets rather than refusing or waving
through every request.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from memvault.metrics import CACHE_ERRORS

log = logging.getLogger(__name__)

_TAKE = """
local rate, burst, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(now - at, 0) * rate)
local wait = 0
if tokens >= cost then
    tokens = math.min(burst, tokens - cost)
else
    wait = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


class LocalBuckets:
    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, burst
        self._state: dict[str, tuple[float, float]] = {}

    def take(self, key: str, cost: float = 1) -> float:
        """Seconds to wait before this request would be allowed; 0 when it is."""
        now = time.monotonic()
        tokens, at = self._state.get(key, (float(self.burst), now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= cost:
            self._state[key] = (min(self.burst, tokens - cost), now)
            return 0.0
        self._state[key] = (tokens, now)
        if len(self._state) > 100_000:  # forget idle keys rather than grow without bound
            self._state = {k: v for k, v in self._state.items() if now - v[1] < 60}
        return (cost - tokens) / self.rate


SharedTake = Callable[[str, float, int, float], Awaitable[float]]


class RateLimiter:
    def __init__(
        self,
        rate: float,
        burst: int,
        redis_url: str | None = None,
        *,
        shared: SharedTake | None = None,
    ) -> None:
        self.enabled = rate > 0
        self.rate, self.burst = rate, burst
        self._local = LocalBuckets(rate, burst) if self.enabled else None
        self._shared = shared
        self._redis: Any = None
        self._script: Any = None
        if self.enabled and redis_url:
            import redis.asyncio as redis

            self._redis = redis.Redis.from_url(redis_url)
            self._script = self._redis.register_script(_TAKE)

    async def take(self, key: str, cost: float = 1) -> float:
        """0 when the request may go ahead (``cost`` tokens taken; a negative cost gives them
        back), else the seconds until it could."""
        if self._local is None:
            return 0.0
        if self._script is not None:
            try:
                wait = float(
                    await self._script(
                        keys=[f"memvault:rl:{key}"], args=[self.rate, self.burst, cost]
                    )
                )
                return wait if math.isfinite(wait) else 0.0
            except Exception as exc:  # any Redis failure: keep limiting, locally
                CACHE_ERRORS.labels("redis-ratelimit").inc()
                log.warning(
                    "rate limiter: redis failed (%s); using local buckets", type(exc).__name__
                )
        elif self._shared is not None:
            try:
                return await self._shared(key, self.rate, self.burst, cost)
            except Exception as exc:  # the database failing: keep limiting, locally
                CACHE_ERRORS.labels("postgres-ratelimit").inc()
                log.warning(
                    "rate limiter: postgres failed (%s); using local buckets", type(exc).__name__
                )
        return self._local.take(key, cost)

    async def aclose(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
