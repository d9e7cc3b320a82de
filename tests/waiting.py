"""Waiting for an event, never for a length of time: poll until it has happened, and fail
with a message saying what never happened once the deadline passes.

    wait_until(lambda: proc.poll() is not None, 30, "the server never stopped")
    value = await wait_for(lambda: memory.get(i, user_id="u"), 10, "never stored")

The predicate's truthy result is returned, so the thing waited for can be used at once. A
predicate that raises one of ``ignore`` counts as "not yet" (a server not listening yet).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

# How often to look: short enough not to slow a test, long enough not to busy-wait.
INTERVAL_S = 0.02


class NeverHappened(AssertionError):
    """The event waited for did not happen before the deadline."""


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    message: str,
    *,
    ignore: tuple[type[BaseException], ...] = (),
    interval: float = INTERVAL_S,
) -> T:
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except ignore as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise NeverHappened(f"{message} (within {timeout:g} s)") from last
        time.sleep(interval)


async def wait_for(
    predicate: Callable[[], Awaitable[T]] | Callable[[], T],
    timeout: float,
    message: str,
    *,
    ignore: tuple[type[BaseException], ...] = (),
    interval: float = INTERVAL_S,
) -> T:
    """``wait_until`` inside an event loop: the predicate may be a coroutine function, and
    the loop keeps running (so background tasks make progress) while it waits."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = predicate()
            if isinstance(value, Awaitable):
                value = await value
            if value:
                return value  # type: ignore[return-value]
        except ignore as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise NeverHappened(f"{message} (within {timeout:g} s)") from last
        await asyncio.sleep(interval)
