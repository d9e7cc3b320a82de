"""The adapters are written once, over the async face; a sync face (``Memory``,
``MemoryClient``) lends its async object and the loop thread that object lives on."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from memvault._sync import SyncFace

R = TypeVar("R")


class SyncCallOnLoop(asyncio.InvalidStateError, RuntimeError):
    """A synchronous adapter call made on the event loop that owns the async memory, which it
    would block. An ``asyncio.InvalidStateError``, as LangGraph's own async stores raise (their
    ``test_no_running_loop``), and a ``RuntimeError``, as this adapter raised before."""


class Bridge:
    """Runs the adapter's coroutines on the loop that owns the service object."""

    def __init__(self, memory: Any) -> None:
        if isinstance(memory, SyncFace):
            self.service: Any = memory._async
            self._loop: asyncio.AbstractEventLoop | None = memory._loop.loop
        else:
            self.service = memory
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None

    async def arun(self, coro: Coroutine[Any, Any, R]) -> R:
        """Await ``coro`` from whatever loop the caller is on."""
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - arun is always awaited
            running = None
        if loop is None:
            self._loop = running
            return await coro
        if loop is running:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    def run(self, coro: Coroutine[Any, Any, R]) -> R:
        """Run ``coro`` to its end from synchronous code."""
        loop = self._loop
        if loop is None:
            coro.close()
            raise RuntimeError(
                "This adapter was made outside the event loop of its async memory, so a "
                "synchronous call has no loop to run on: make it inside that loop, or pass a "
                "sync Memory / MemoryClient."
            )
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise SyncCallOnLoop(
                "A synchronous call on the event loop that owns the async memory would block "
                "it: use the a* method (await store.aget(...)), or pass a sync Memory."
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()
