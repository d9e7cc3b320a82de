"""Concurrent embedding calls share model calls, and each caller gets its own vectors."""

from __future__ import annotations

import asyncio
import threading

import pytest

from memvault.embedding.batching import Coalescer
from memvault.embedding.local import LocalEmbedder


class CountingModel:
    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.gate = threading.Event()
        self.entered = threading.Event()

    def encode(self, texts: list[str]) -> list[list[float]]:
        self.entered.set()
        self.gate.wait(5)  # hold the first call so the others pile up behind it
        self.calls.append(texts)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model failure")
        return [[float(len(t)), float(ord(t[0]))] for t in texts]


async def _in_model(model: CountingModel) -> None:
    """Until a model call is under way (the coalescer runs it in a thread)."""
    assert await asyncio.to_thread(model.entered.wait, 5)


async def _queued() -> None:
    """Until every task just created has run up to its wait: one turn of the loop."""
    await asyncio.sleep(0)


async def test_waiting_calls_are_served_by_one_model_call_in_order() -> None:
    model = CountingModel()
    coalescer = Coalescer(model.encode, max_texts=64)
    first = asyncio.create_task(coalescer.embed(["a"]))
    await _in_model(model)
    rest = [
        asyncio.create_task(coalescer.embed([f"{c}" * n, "zz"])) for n, c in enumerate("bcdef", 1)
    ]
    await _queued()
    model.gate.set()
    assert await first == [[1.0, 97.0]]
    for n, (task, c) in enumerate(zip(rest, "bcdef", strict=True), 1):
        assert await task == [[float(n), float(ord(c))], [2.0, 122.0]]
    assert len(model.calls) == 2  # the first alone, then the five waiting together
    assert len(model.calls[1]) == 10


async def test_batches_respect_the_size_cap() -> None:
    model = CountingModel()
    model.gate.set()
    coalescer = Coalescer(model.encode, max_texts=4)
    results = await asyncio.gather(*(coalescer.embed(["x", "y", "z"]) for _ in range(5)))
    assert all(len(r) == 3 for r in results)
    assert all(len(call) <= 4 for call in model.calls)


async def test_a_failure_reaches_the_callers_of_that_batch_only() -> None:
    model = CountingModel(fail_on="bad")
    coalescer = Coalescer(model.encode, max_texts=2)
    blocker = asyncio.create_task(coalescer.embed(["first"]))
    await _in_model(model)
    bad = asyncio.create_task(coalescer.embed(["bad", "b2"]))
    good = asyncio.create_task(coalescer.embed(["good"]))
    model.gate.set()
    await blocker
    with pytest.raises(RuntimeError, match="model failure"):
        await bad
    assert await good == [[4.0, 103.0]]


async def test_a_caller_that_gave_up_does_not_stop_the_others() -> None:
    model = CountingModel()
    coalescer = Coalescer(model.encode)
    blocker = asyncio.create_task(coalescer.embed(["first"]))
    await _in_model(model)
    impatient = asyncio.create_task(coalescer.embed(["gone"]))
    patient = asyncio.create_task(coalescer.embed(["kept"]))
    await _queued()
    impatient.cancel()
    model.gate.set()
    await blocker
    assert await patient == [[4.0, 107.0]]
    assert ["gone"] not in model.calls and all("gone" not in c for c in model.calls)


@pytest.mark.slow
async def test_the_local_model_gives_the_same_vectors_alone_or_together() -> None:
    embedder = LocalEmbedder()
    texts = ["I keep bees", "The report is due Monday", "Green tea, no sugar"]
    alone = [(await embedder.embed_batch([t]))[0] for t in texts]
    together = await asyncio.gather(*(embedder.embed_batch([t]) for t in texts))
    for a, (b,) in zip(alone, together, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
