"""Embedding throughput, add-to-searchable latency, and search at 10k and 100k memories.

    .venv/bin/python bench/ingest.py [--memories 5000] [--skip-scale]
    .venv/bin/python bench/ingest.py --bulk [--turns 2760] [--baseline-src ../main/src]

``--bulk`` measures bulk writes through the whole offline pipeline instead (bench/ingest_bulk.py).

1. Raw model throughput: ``LocalEmbedder.embed_batch`` on N short texts, batches of 64.
2. Sustained ingest, same run, into a fresh embedded store, timed from the first call until
   every memory is searchable, as memories/s and as a fraction of (1): N/2 memories through
   the queue (4 concurrent callers of ``add(background=True)``, the in-process worker
   embedding 64 at a time), and N/2 through ``add_many`` in batches of 64 (inline).
3. Add-to-searchable latency at idle, 200 adds each way: inline ``add`` (the full offline
   pipeline) and ``add(background=True, wait=True)`` through the queue and worker.
4. Search latency (query embedding included, cache off) and recall@10 of what ``search``
   returns against exact search, at 10k and 100k memories:
   - "1,000 users": memories spread over users sharing one table; each query is scoped to one
     user, so the default plan scores that user's chunks exactly.
   - "one user": every memory belongs to one user; the HNSW index answers.
   For scale, vectors are loaded in bulk: 10,000 distinct texts are embedded by the real
   model, and each stored vector is one of those plus small Gaussian noise (renormalised),
   written with its encrypted memory row through the same tables the worker writes. Queries
   go through the real ``search`` with real query embedding.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa

import ingest_bulk
from _corpus import memories, questions
from memvault import AsyncMemory, Settings
from memvault.db import vectors
from memvault.db.tables import memories as memories_table
from memvault.db.tables import memory_chunks
from memvault.embedding import LocalEmbedder
from memvault.keys.sealing import seal_content

from _stats import print_table, summary_ms, timed

MODEL = "local/all-MiniLM-L6-v2"


async def raw_throughput(texts: list[str]) -> float:
    embedder = LocalEmbedder()
    await embedder.embed_batch(["warm up"])
    start = time.perf_counter()
    for i in range(0, len(texts), 64):
        await embedder.embed_batch(texts[i : i + 64])
    return len(texts) / (time.perf_counter() - start)


async def _searchable_count(memory: AsyncMemory) -> int:
    async with memory._backend.ddl_engine.connect() as conn:
        return int(
            (
                await conn.execute(sa.text("SELECT count(*) FROM memories WHERE embedded"))
            ).scalar_one()
        )


async def ingest(data_dir: Path, texts: list[str]) -> tuple[dict[str, float], dict[str, Any]]:
    """Throughput of both ingest paths and add latency at idle, in one fresh store."""
    memory = await AsyncMemory.open(
        Settings(data_dir=data_dir, run_worker=True, worker_batch_size=64)
    )
    await memory._backend.embeddings.embed_batch(["warm up"])
    half = len(texts) // 2
    rates: dict[str, float] = {}

    # The queue: 4 callers add in the background, the in-process worker embeds in batches.
    queue: asyncio.Queue[str] = asyncio.Queue()
    for text in texts[:half]:
        queue.put_nowait(text)

    async def caller(n: int) -> None:
        while not queue.empty():
            await memory.add(queue.get_nowait(), user_id=f"user-{n}", background=True, infer=False)

    start = time.perf_counter()
    await asyncio.gather(*(caller(n) for n in range(4)))
    while await _searchable_count(memory) < half:
        await asyncio.sleep(0.02)
    rates["add(background) + worker"] = half / (time.perf_counter() - start)

    # Inline batches: add_many embeds each batch of 64 in one call and commits it searchable.
    start = time.perf_counter()
    for i in range(half, len(texts), 64):
        await memory.add_many(
            [{"content": t, "user_id": "batch", "infer": False} for t in texts[i : i + 64]]
        )
    rates["add_many (64 a batch), inline"] = (len(texts) - half) / (time.perf_counter() - start)

    latencies: dict[str, Any] = {
        "add, inline (full offline pipeline)": [],
        "add(background, wait=True), via the worker": [],
    }
    for i in range(200):
        with timed(latencies["add, inline (full offline pipeline)"]):
            record = await memory.add(f"inline probe {i}: {texts[-i - 1]}", user_id="probe")
        assert record.embedded
        with timed(latencies["add(background, wait=True), via the worker"]):
            record = await memory.add(
                f"queued probe {i}: {texts[i]}",
                user_id="probe",
                background=True,
                wait=True,
                infer=False,
            )
        assert record.embedded
        await asyncio.sleep(0.02)
    await memory.close()
    return rates, {k: summary_ms(v) for k, v in latencies.items()}


async def bulk_load(memory: AsyncMemory, base: np.ndarray, count: int, users: int) -> None:
    """``count`` memories: real base vectors plus noise, sealed rows, chunks; then the index."""
    backend, rng = memory._backend, np.random.default_rng(5)
    texts = memories(len(base), seed=3)
    async with backend.ddl_engine.begin() as conn:
        await conn.execute(sa.text(f"DROP INDEX IF EXISTS {vectors.index_name(MODEL)}"))
    for start in range(0, count, 2000):
        rows, chunks = [], []
        for i in range(start, min(count, start + 2000)):
            memory_id, user = uuid.uuid4(), f"user-{i % users}"
            vector = base[i % len(base)] + rng.normal(0, 0.02, base.shape[1])
            vector /= np.linalg.norm(vector)
            rows.append(
                {
                    "tenant_id": "default",
                    "id": memory_id,
                    "user_id": user,
                    "embedded": True,
                    "embedding_model": MODEL,
                    **seal_content(backend.keys, "default", memory_id, texts[i % len(texts)]),
                }
            )
            chunks.append(
                {
                    "tenant_id": "default",
                    "memory_id": memory_id,
                    "model": MODEL,
                    "chunk_index": 0,
                    "user_id": user,
                    "embedding": vector.tolist(),
                }
            )
        async with backend.ddl_engine.begin() as conn:
            await conn.execute(memories_table.insert(), rows)
            await conn.execute(memory_chunks.insert(), chunks)
    async with backend.ddl_engine.begin() as conn:
        await conn.execute(sa.text("SET maintenance_work_mem = '1GB'"))
        await conn.execute(sa.text("ANALYZE memories"))
        await conn.execute(sa.text("ANALYZE memory_chunks"))
    await vectors.ensure_index(backend.ddl_engine, MODEL, 384)


async def search_figures(
    memory: AsyncMemory, users: int, queries: list[str]
) -> tuple[dict[str, float], float]:
    rng = random.Random(11)
    default = memory._backend.settings
    exact = default.model_copy(update={"search_exact_max_chunks": 10**9})
    latencies, recalls = [], []
    for query in queries:
        user = f"user-{rng.randrange(users)}"
        with timed(latencies):
            got = await memory.search(query, user_id=user, limit=10)
        memory._backend.settings = exact
        truth = await memory.search(query, user_id=user, limit=10)
        memory._backend.settings = default
        expected = {h.id for h in truth.results}
        recalls.append(len(expected & {h.id for h in got.results}) / max(len(expected), 1))
    return summary_ms(latencies), sum(recalls) / len(recalls)


async def scale(
    tmp: Path, base: np.ndarray, count: int, users: int
) -> tuple[dict[str, float], float]:
    data_dir = tmp / f"scale-{count}-{users}"
    memory = await AsyncMemory.open(
        Settings(data_dir=data_dir, run_worker=False, embedding_cache_ttl_s=0)
    )
    t0 = time.perf_counter()
    await bulk_load(memory, base, count, users)
    print(
        f"  loaded {count:,} memories for {users:,} user(s) in {time.perf_counter() - t0:.0f}s",
        flush=True,
    )
    await memory.search("warm up", user_id="user-0")
    figures = await search_figures(memory, users, questions(300))
    await memory.close()
    return figures


async def main(count: int, skip_scale: bool) -> None:
    texts = memories(count)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        raw = await raw_throughput(texts)
        print(f"raw model throughput: {raw:.0f} texts/s", flush=True)
        rates, idle = await ingest(tmp / "ingest", texts)
        for label, rate in rates.items():
            print(
                f"sustained ingest, {label}: {rate:.0f} memories/s = {rate / raw:.0%} of raw",
                flush=True,
            )
        print_table("add → searchable at idle, 200 adds each", idle)
        if skip_scale:
            return
        base_texts = memories(10_000, seed=3)
        embedder = LocalEmbedder()
        base = np.array(
            [
                v
                for i in range(0, len(base_texts), 256)
                for v in await embedder.embed_batch(base_texts[i : i + 256])
            ]
        )
        rows: dict[str, dict[str, float]] = {}
        for total, users in ((10_000, 100), (100_000, 1_000), (100_000, 1)):
            figures, recall = await scale(tmp, base, total, users)
            label = f"search, {total:,} memories, {users:,} user(s)"
            rows[label] = figures
            print(f"  {label}: recall@10 vs exact = {recall:.3f}", flush=True)
        print_table("search latency (query embedding included)", rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=5_000)
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--bulk", action="store_true", help="bulk writes (bench/ingest_bulk.py)")
    parser.add_argument("--turns", type=int, default=2_760, help="--bulk: LoCoMo turns")
    parser.add_argument("--batch", type=int, default=100, help="--bulk: items a call")
    parser.add_argument("--baseline-src", help="--bulk: another checkout's src, measured first")
    parser.add_argument("--provider", default="local", help="--bulk: embedding provider")
    args = parser.parse_args()
    if args.bulk:
        ingest_bulk.run(args.turns, args.batch, args.baseline_src, args.provider)
    else:
        asyncio.run(main(args.memories, args.skip_scale))
