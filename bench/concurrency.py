"""Concurrency on one user: many operations at once through ``AsyncMemory``, queued for the
connection pool rather than failed.

    .venv/bin/python bench/concurrency.py [--ops 200] [--rounds 3]

Opens a fresh embedded store (hash embedder: the figure is the store's, not a model's), adds
the memories the mix touches, then starts ``--ops`` operations at once on one user — a sixth
each of add, search, get, update, delete and list — and waits for all of them; ``--rounds``
times, each on a fresh user. Prints throughput (operations per second of wall time) per round
and the errors (there should be none). ``tests/test_concurrency.py`` runs the same mix.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from memvault import AsyncMemory, Settings

KINDS = ("add", "search", "get", "update", "delete", "list")
SYLLABLES = [
    *("ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "nex"),
    *("bra", "qui", "zo", "fen", "hal", "ru", "tim", "gos", "wa", "ly"),
]


def word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(3))


def text(i: int) -> str:
    """A text of made-up words (8,000 of them) that shares almost none with another, so dedup
    keeps each as it is: a memory of the mix is changed or removed by its own operation only."""
    rng = random.Random(i)
    return f"note {i}: " + " ".join(word(rng) for _ in range(6))


async def mixed_operations(memory: AsyncMemory, n: int, user_id: str) -> list[Awaitable[Any]]:
    """``n`` operations (not started), a sixth each of ``KINDS`` on one user. Each memory is
    read, updated or deleted by one operation only, so none is NotFound by another's doing;
    the memories they touch are added first, in one batch (what is measured is the mix: one
    by one over HTTP they cost a tenth of a second each and spent the rate limit's burst)."""
    per = n // len(KINDS) + 1
    stored = await memory.add_many(
        [{"content": text(i), "user_id": user_id} for i in range(3 * per)]
    )
    existing = [r.id for r in stored]
    targets = {
        "get": existing[:per],
        "update": existing[per : 2 * per],
        "delete": existing[2 * per :],
    }
    return [_operation(memory, i, user_id, targets) for i in range(n)]


def _operation(
    memory: AsyncMemory, i: int, user_id: str, targets: dict[str, list[Any]]
) -> Awaitable[Any]:
    kind, j = KINDS[i % len(KINDS)], i // len(KINDS)
    if kind == "add":
        return memory.add(text(10_000 + i), user_id=user_id)
    if kind == "search":
        return memory.search(word(random.Random(i)), user_id=user_id, limit=5)
    if kind == "get":
        return memory.get(targets["get"][j], user_id=user_id)
    if kind == "update":
        return memory.update(targets["update"][j], user_id=user_id, content=text(20_000 + i))
    if kind == "delete":
        return memory.delete(targets["delete"][j], user_id=user_id)
    return memory.list(user_id=user_id, limit=10)


async def _round(memory: AsyncMemory, ops: int, user_id: str) -> tuple[float, int]:
    pending = await mixed_operations(memory, ops, user_id)
    started = time.perf_counter()
    outcomes = await asyncio.gather(*pending, return_exceptions=True)
    elapsed = time.perf_counter() - started
    return ops / elapsed, sum(isinstance(o, BaseException) for o in outcomes)


async def run(ops: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=Path(data_dir), embedding_provider="hash", auth="off")
        async with AsyncMemory(settings) as memory:
            for n in range(rounds):
                rate, errors = await _round(memory, ops, f"bench-{n}")
                print(f"round {n + 1}: {ops} operations at once, {rate:.1f} ops/s, {errors} errors")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.ops, args.rounds))
