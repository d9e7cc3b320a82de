"""Coalescing concurrent embedding calls into one model call.

Fifty requests each embedding one question would run the CPU model fifty times in turn; the
model embeds a batch of fifty short texts in little more time than one. Callers on one event
loop hand their texts to a single drainer, which takes everything waiting (up to
``max_texts``) per model call and hands each caller its own vectors, in arrival order — so
under load every caller waits for at most the batch in progress plus its own.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from weakref import WeakKeyDictionary, WeakSet

Vectors = list[list[float]]
_Waiting = tuple[list[str], "asyncio.Future[Vectors]"]


class Coalescer:
    def __init__(
        self,
        encode: Callable[[list[str]], Vectors],
        max_texts: int = 64,
        *,
        executor: Executor | None = None,
    ) -> None:
        """``executor``: where ``encode`` runs (default: asyncio's shared thread pool)."""
        self._encode = encode
        self._max_texts = max_texts
        self._executor = executor
        # One queue per event loop: a future belongs to the loop that made it.
        self._queues: WeakKeyDictionary[asyncio.AbstractEventLoop, deque[_Waiting]] = (
            WeakKeyDictionary()
        )
        self._drainers: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = (
            WeakKeyDictionary()
        )
        self._busy: WeakSet[asyncio.AbstractEventLoop] = WeakSet()  # a model call in flight

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, deque())
        if not queue and loop not in self._busy:
            # Nothing in flight: no one to share with, so no hop through the drainer.
            self._busy.add(loop)
            try:
                return await loop.run_in_executor(self._executor, self._encode, list(texts))
            finally:
                self._busy.discard(loop)
                self._start_drainer(loop)
        future: asyncio.Future[Vectors] = loop.create_future()
        queue.append((list(texts), future))
        if loop not in self._busy:
            self._start_drainer(loop)
        return await future

    def _start_drainer(self, loop: asyncio.AbstractEventLoop) -> None:
        drainer = self._drainers.get(loop)
        if self._queues.get(loop) and (drainer is None or drainer.done()):
            self._drainers[loop] = loop.create_task(self._drain(loop), name="memvault-embed-batch")

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        queue = self._queues[loop]
        while queue and loop not in self._busy:
            batch = [queue.popleft()]
            count = len(batch[0][0])
            while queue and count + len(queue[0][0]) <= self._max_texts:
                batch.append(queue.popleft())
                count += len(batch[-1][0])
            waiting = [(texts, future) for texts, future in batch if not future.done()]
            if not waiting:
                continue
            self._busy.add(loop)
            try:
                vectors = await loop.run_in_executor(
                    self._executor, self._encode, [t for texts, _ in waiting for t in texts]
                )
            except Exception as exc:
                for _, future in waiting:
                    if not future.done():
                        future.set_exception(exc)
                continue
            finally:
                self._busy.discard(loop)
            start = 0
            for texts, future in waiting:
                if not future.done():  # a caller that gave up (timeout) is skipped
                    future.set_result(vectors[start : start + len(texts)])
                start += len(texts)
