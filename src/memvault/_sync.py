"""The sync face is derived from the async core: one event loop in a daemon thread runs every
coroutine, so the logic is written once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="memvault-loop", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class _HasAsync(Protocol):
    _async: Any
    _loop: LoopThread


def blocking(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[_HasAsync, P], R]:
    """Turn ``AsyncMemory.x`` into a method that runs it on the owner's loop and waits."""
    name = method.__name__

    def call(self: _HasAsync, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._loop.run(getattr(self._async, name)(*args, **kwargs))
        return result

    call.__name__ = name
    call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call
