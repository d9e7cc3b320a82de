"""The sync face is derived from the async core: one event loop in a daemon thread runs every
coroutine, so the logic is written once."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, Self, TypeVar

from pydantic import BaseModel

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
    # The async method's own signature, less the coroutine: what help() and IDEs show.
    call.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return call


def takes(
    model: type[BaseModel], *, positional: tuple[str, ...] = ()
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Give a method written as ``f(self, *positional, **fields)`` the signature its callers see:
    ``positional`` first, then every other field of ``model`` as a keyword with the model's
    type and default, then the method's own keyword-only parameters. The fields are defined once
    (in ``models.py``); ``Memory``, ``AsyncMemory`` and both clients derive their keywords."""

    def decorate(method: Callable[P, R]) -> Callable[P, R]:
        own = inspect.signature(method).parameters.values()
        head = [p for p in own if p.kind is not inspect.Parameter.KEYWORD_ONLY][
            : 1 + len(positional)
        ]
        tail = [p for p in own if p.kind is inspect.Parameter.KEYWORD_ONLY]
        taken = {p.name for p in (*head, *tail)}
        fields = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if info.is_required() else info.default,
                annotation=info.annotation,
            )
            for name, info in model.model_fields.items()
            if name not in taken
        ]
        method.__signature__ = inspect.signature(method).replace(  # type: ignore[attr-defined]
            parameters=[*head, *fields, *tail]
        )
        return method

    return decorate


class SyncFace:
    """Base of the sync faces (``Memory``, ``MemoryClient``, ``Admin``): an async object living
    on its own loop thread, closed with it."""

    _async: Any

    def __init__(self, opening: Coroutine[Any, Any, Any]) -> None:
        self._loop = LoopThread()
        try:
            self._async = self._loop.run(opening)
        except BaseException:
            self._loop.stop()
            raise

    def close(self) -> None:
        if self._loop.loop.is_running():
            self._loop.run(self._async.close())
            self._loop.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
