"""Facts about an owner's scope remembered for a while, so a search need not read them again.

What is remembered only chooses how a statement runs (exact or looked-up ranking, statistics
read or given), never which memories qualify: a stale value costs time, or moves a score by
what the owner's writes since then changed.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Remembered(Generic[V]):
    """Values by key for ``ttl_s`` seconds, at most ``max_entries`` of them (the oldest
    dropped first)."""

    def __init__(self, ttl_s: float = 30.0, max_entries: int = 10_000) -> None:
        self.ttl_s, self.max_entries = ttl_s, max_entries
        self._seen: dict[Hashable, tuple[float, V]] = {}

    def get(self, key: Hashable) -> V | None:
        seen = self._seen.get(key)
        if seen is None or time.monotonic() - seen[0] > self.ttl_s:
            return None
        return seen[1]

    def put(self, key: Hashable, value: V) -> None:
        self._seen.pop(key, None)
        if len(self._seen) >= self.max_entries:
            del self._seen[next(iter(self._seen))]  # the oldest
        self._seen[key] = (time.monotonic(), value)

    def forget(self, key: Hashable) -> None:
        self._seen.pop(key, None)
