"""Write-path latency in embedded mode, one call at a time through ``AsyncMemory``.

    .venv/bin/python bench/write_path.py [--count 10000] [--pipeline-adds 500]

1. Store only: ``add`` (validate, PII check, encrypt, insert the row, its history and its
   embedding job in one transaction; ``background=True, infer=False`` so nothing else runs)
   and ``get`` (select, decrypt) for N memories.
2. Full offline pipeline: with N memories stored, ``add`` of new memories through PII,
   embedding (all-MiniLM-L6-v2, inline), deduplication (hash + vector + rules), enrichment
   (rules), the offline graph extractor and its writes (entities, facts, their keys, in the
   memory's transaction) and the insert of row, chunk and history — no LLM configured.
   Beside it, in the same run and interleaved one for one: the same pipeline with the graph
   step given nothing to write (the extractor stubbed to claim nothing, so the graph's own
   share shows), and ``add`` with ``infer=False`` (PII, inline embedding, insert: no dedup,
   enrichment by rules, no graph).
3. Conversation turns: ``add_messages`` of one turn to the user's running conversation (its
   ``session_id``), interleaved with the arms above: a turn is kept verbatim (no dedup), and —
   since turns became one memory — also a conversation turn row, a line of working memory and
   input to the offline extractor at write.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
from pathlib import Path

from _corpus import memories
from memvault import AsyncMemory, Settings
from memvault.admin import AsyncAdmin
from memvault.graph import derive
from memvault.graph.claims import Extraction
from memvault.runtime import start_workers

from _stats import print_table, summary_ms, timed


async def store_only(memory: AsyncMemory, texts: list[str]) -> dict[str, dict[str, float]]:
    adds: list[float] = []
    gets: list[float] = []
    both: list[float] = []
    for i, text in enumerate(texts):
        user = f"user-{i % 100}"
        with timed(both):
            with timed(adds):
                record = await memory.add(
                    text,
                    user_id=user,
                    tags=["bench"],
                    metadata={"n": i},
                    background=True,
                    infer=False,
                )
            with timed(gets):
                await memory.get(record.id, user_id=user)
        if (i + 1) % 2000 == 0:
            print(f"  {i + 1}/{len(texts)} stored", flush=True)
    return {
        "add (store only)": summary_ms(adds),
        "get": summary_ms(gets),
        "add + get": summary_ms(both),
    }


async def full_pipeline(memory: AsyncMemory, texts: list[str]) -> dict[str, dict[str, float]]:
    """Each arm's latencies, the three interleaved so load falls on them alike."""
    await memory.add("warm up the model and the date parser tomorrow", user_id="warm")
    # The pipeline's graph step looks the extractor up in its module at each call.
    step = vars(derive)
    real_extract = step["extract"]

    async def claims_nothing(text: str, **_: object) -> Extraction:
        return Extraction()

    arms: dict[str, list[float]] = {"graph": [], "no graph": [], "off": [], "turn": []}
    rng = random.Random(3)
    for n, text in enumerate(texts):
        arm = list(arms)[n % len(arms)]
        step["extract"] = claims_nothing if arm == "no graph" else real_extract
        user = f"user-{rng.randrange(100)}"
        with timed(arms[arm]):
            if arm == "turn":
                turn = [{"role": "user", "content": text}]
                await memory.add_messages(turn, user_id=user, session_id=f"chat-{user}")
            else:
                await memory.add(text, user_id=user, infer=arm != "off")
    step["extract"] = real_extract
    return {arm: summary_ms(samples) for arm, samples in arms.items()}


async def graph_size(memory: AsyncMemory) -> tuple[int, int]:
    """(entities, current facts) the offline extractor wrote for the bench's users."""
    entities = facts = 0
    for k in range(100):
        entities += len(await memory.entities(user_id=f"user-{k}", limit=1000))
        facts += len(await memory.facts(user_id=f"user-{k}", limit=1000))
    return entities, facts


async def run(count: int, pipeline_adds: int) -> None:
    texts = memories(count + pipeline_adds, seed=21)
    with tempfile.TemporaryDirectory() as tmp:
        # No worker while the store-only adds are timed: it would compete for the 2 cores.
        memory = await AsyncMemory.open(Settings(data_dir=Path(tmp) / "data", run_worker=False))
        rows = await store_only(memory, texts[:count])
        print("  embedding what was stored ...", flush=True)
        start_workers(memory._backend, 1)
        while (await AsyncAdmin.of(memory).queue_counts()).get("queued", 0):
            await asyncio.sleep(1)
        arms = await full_pipeline(memory, texts[count:])
        rows[f"add, infer on: offline pipeline + graph ({count:,} stored)"] = arms["graph"]
        rows["add, infer on, extractor claims nothing"] = arms["no graph"]
        rows["add, infer off"] = arms["off"]
        rows["add_messages, one turn"] = arms["turn"]
        entities, facts = await graph_size(memory)
        print(f"  graph written by the infer-on adds: {entities} entities, {facts} facts")
        await memory.close()
    print_table(f"write path, embedded mode, {count:,} memories", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--pipeline-adds", type=int, default=600)
    args = parser.parse_args()
    asyncio.run(run(args.count, args.pipeline_adds))


if __name__ == "__main__":
    main()
