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

Vectors = list[list[float]]
_Waiting = tuple[list[str], "asyncio.Future[Vectors]"]


class Coalescer:
    def __init__(self, encode: Callable[[list[str]], Vectors], max_texts: int = 64) -> None:
        self._encode = encode
        self._max_texts = max_texts
        # One queue per event loop: a future belongs to the loop that made it.
        self._queues: dict[
            asyncio.AbstractEventLoop, deque[tuple[list[str], asyncio.Future[Vectors]]]
        ] = {}
        self._drainers: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Vectors] = loop.create_future()
        self._queues.setdefault(loop, deque()).append((list(texts), future))
        drainer = self._drainers.get(loop)
        if drainer is None or drainer.done():
            self._drainers[loop] = loop.create_task(self._drain(loop), name="memvault-embed-batch")
        return await future

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        queue = self._queues[loop]
        while queue:
            batch = [queue.popleft()]
            count = len(batch[0][0])
            while queue and count + len(queue[0][0]) <= self._max_texts:
                batch.append(queue.popleft())
                count += len(batch[-1][0])
            waiting = [(texts, future) for texts, future in batch if not future.done()]
            if not waiting:
                continue
            try:
                vectors = await asyncio.to_thread(
                    self._encode, [t for texts, _ in waiting for t in texts]
                )
            except Exception as exc:
                for _, future in waiting:
                    if not future.done():
                        future.set_exception(exc)
                continue
            start = 0
            for texts, future in waiting:
                if not future.done():  # a caller that gave up (timeout) is skipped
                    future.set_result(vectors[start : start + len(texts)])
                start += len(texts)
