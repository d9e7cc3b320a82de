"""Write-path latency in embedded mode: ``add`` and ``get`` for N memories (default 10,000).

Measures the synchronous part of a write (validate, encrypt, insert row + history in one
transaction) and a read by id (select, decrypt), one call at a time, through ``AsyncMemory``
on the embedded PostgreSQL in a fresh temporary data dir.

    .venv/bin/python bench/write_path.py [--count 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
from pathlib import Path

from memvault import AsyncMemory, Settings

from _stats import print_table, summary_ms, timed

SENTENCES = [
    "prefers window seats on long flights",
    "is allergic to peanuts",
    "works at a robotics startup in Lyon",
    "has a daughter called Mia who plays chess",
    "asked to be reminded about the dentist on Friday",
    "uses vim and hates tabs",
    "is training for the Berlin marathon",
    "drinks oat milk flat whites",
]


async def run(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        memory = await AsyncMemory.open(Settings(data_dir=Path(tmp) / "data"))
        rng = random.Random(7)
        adds: list[float] = []
        gets: list[float] = []
        both: list[float] = []
        ids = []
        for i in range(count):
            user = f"user-{i % 100}"
            text = f"{user} {rng.choice(SENTENCES)} (note {i})"
            with timed(both):
                with timed(adds):
                    record = await memory.add(text, user_id=user, tags=["bench"], metadata={"n": i})
                with timed(gets):
                    await memory.get(record.id, user_id=user)
            ids.append(record.id)
            if (i + 1) % 2000 == 0:
                print(f"  {i + 1}/{count} written", flush=True)
        await memory.close()
    print_table(
        f"write path, embedded mode, {count} memories",
        {"add": summary_ms(adds), "get": summary_ms(gets), "add + get": summary_ms(both)},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    asyncio.run(run(parser.parse_args().count))


if __name__ == "__main__":
    main()
