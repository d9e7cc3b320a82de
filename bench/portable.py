"""How long export and import of one user's whole memory take: a user with ``--memories``
memories (the offline extractor reading each, so the graph is filled too), ``--conversations``
conversations of ``--turns`` turns, a tool call, a goal and a strategy per conversation; then
export, erase, import into the same store, and a second import (every row found: nothing
written).

    .venv/bin/python bench/portable.py [--memories 1000] [--conversations 20] [--turns 10]

An embedded PostgreSQL in a temporary directory, the library in-process, hash embeddings (so
what is timed is the store's work, not a model's). Prints lines per kind, seconds for each
step and lines per second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from _corpus import memories as corpus
from memvault import AsyncMemory, Settings

USER = "bench"


async def run(memories: int, conversations: int, turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(  # type: ignore[call-arg]
            data_dir=Path(tmp),
            embedding_provider="hash",
            run_worker=False,
            deletion_history="purge",
        )
        async with await AsyncMemory.open(settings) as memory:
            texts = corpus(memories)
            started = time.perf_counter()
            for start in range(0, len(texts), 100):
                batch = [{"content": t, "user_id": USER} for t in texts[start : start + 100]]
                await memory.add_many(batch, wait=True)
            for n in range(conversations):
                convo = f"conversation-{n}"
                await memory.add_messages(
                    [
                        {
                            "role": "user" if i % 2 == 0 else "assistant",
                            "content": texts[i % len(texts)],
                        }
                        for i in range(n, n + turns)
                    ],
                    user_id=USER,
                    conversation_id=convo,
                    wait=True,
                )
                await memory.record_tool_use(
                    "search", user_id=USER, success=True, conversation_id=convo, latency_ms=5
                )
                await memory.add_goal(f"goal {n}", user_id=USER)
                await memory.learn_strategy(f"strategy {n}", user_id=USER, tool_sequence=["search"])
            print(f"filled in {time.perf_counter() - started:.1f} s")

            started = time.perf_counter()
            lines = await memory.export_memories(user_id=USER)
            exported = time.perf_counter() - started
            size = len("\n".join(json.dumps(line) for line in lines).encode())
            kinds = Counter(line["kind"] for line in lines)
            print(
                f"lines: {len(lines)} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})"
            )
            print(f"file: {size / 1e6:.1f} MB")
            print(f"export: {exported:.2f} s ({len(lines) / exported:.0f} lines/s)")
            await memory.erase_user(user_id=USER)
            lines = json.loads(json.dumps(lines))
            started = time.perf_counter()
            counts = await memory.import_memories(lines)
            imported = time.perf_counter() - started
            assert counts["imported"] == len(lines), counts
            print(f"import: {imported:.2f} s ({len(lines) / imported:.0f} lines/s)")
            started = time.perf_counter()
            again = await memory.import_memories(lines)
            second = time.perf_counter() - started
            assert again["imported"] == 0, again
            print(f"import again (all found): {second:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(run(args.memories, args.conversations, args.turns))


if __name__ == "__main__":
    main()
