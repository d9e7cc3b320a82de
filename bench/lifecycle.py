"""What the audit log costs a search: p50/p95 search latency with ``audit_level=reads`` (every
search recorded, batched and written in the background) against ``off``, in the same run, on
the same data, the two interleaved query by query.

    .venv/bin/python bench/lifecycle.py [--memories 2000] [--queries 400] [--users 4]

One private PostgreSQL (embedded) and one database; two library stores open on it, one per
level, with hash embeddings and the embedding cache off, so what differs between the two
columns is the audit alone. Also reports the ``verbose`` level (query text sealed) and how
many audit rows each level wrote.

    .venv/bin/python bench/lifecycle.py --consolidate 1000 [--turns 10]

The ``consolidate`` job instead: that many conversations of ``--turns`` turns each, stored
through the public API (start_conversation, add_turns), then one consolidate run with the
offline (rule) extractor: conversations per second, and the run's peak Python heap
(tracemalloc, in a second run over the same turns after their facts are dropped, since
tracing slows the run it measures) and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import shutil
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

import psycopg

from _corpus import memories as corpus
from _corpus import questions as corpus_questions
from memvault import AsyncMemory, Settings
from memvault.context import TenantContext
from memvault.crypto.envelope import generate_key
from memvault.db.embedded import EmbeddedPostgres
from memvault.lifecycle import jobs

from _stats import summary_ms

LEVELS = ("off", "reads", "verbose")


def _settings(url: str, key: str, work: Path, level: str) -> Settings:
    return Settings(
        database_url=url,
        encryption_key=key,
        data_dir=work / level,
        embedding_provider="hash",
        embedding_cache_ttl_s=0,
        audit_level=level,  # type: ignore[arg-type]
        run_worker=False,
    )


async def _fill(store: AsyncMemory, count: int, users: int) -> None:
    texts = corpus(count)
    for start in range(0, count, 500):
        items = [
            {"content": t, "user_id": f"user{(start + i) % users}", "infer": False}
            for i, t in enumerate(texts[start : start + 500])
        ]
        await store.add_many(items)


def _record_cost(store: AsyncMemory, calls: int = 20_000) -> dict[str, float]:
    """Per-call time of what a search adds on its own path: ``Audit.timed`` around nothing."""
    samples = []
    ids = [uuid.uuid4() for _ in range(10)]
    context = TenantContext(store._backend, store.tenant_id, store.actor)
    for _ in range(calls):
        start = time.perf_counter()
        with context.audit("retrieve", "user0", query="what did I say about the garden") as e:
            e.result_count, e.memory_ids = 10, ids
        samples.append(time.perf_counter() - start)
    store._backend.audit._pending.clear()  # measured, not meant to be written
    return {k: v * 1000 for k, v in summary_ms(samples).items()}


async def run(memories: int, queries: int, users: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="memvault-bench-lifecycle-"))
    pg = EmbeddedPostgres(work / "pg")
    try:
        pg.start()
        with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "bench"')
        url, key = pg.admin_url("bench"), generate_key()
        stores = {lvl: await AsyncMemory.open(_settings(url, key, work, lvl)) for lvl in LEVELS}
        await _fill(stores["off"], memories, users)
        asked = corpus_questions(queries)
        samples: dict[str, list[float]] = {lvl: [] for lvl in LEVELS}
        rng = random.Random(7)
        for warm in asked[:20]:  # plans and pools warm before anything is timed
            for store in stores.values():
                await store.search(warm, user_id="user0")
        for n, question in enumerate(asked):
            order = list(LEVELS)
            rng.shuffle(order)  # no level always goes first
            for lvl in order:
                start = time.perf_counter()
                await stores[lvl].search(question, user_id=f"user{n % users}")
                samples[lvl].append(time.perf_counter() - start)
        written = {}
        for lvl, store in stores.items():
            await store.flush_audit()
            page = await store.audit_log(operation="retrieve", limit=1000)
            mine = store._backend.audit.settings_id.hex()  # each level's settings differ
            written[lvl] = sum(1 for e in page.results if e.settings_id == mine)
        record_cost = {lvl: _record_cost(stores[lvl]) for lvl in ("reads", "verbose")}
        await asyncio.sleep(0)
        for store in stores.values():
            await store.close()
        base = summary_ms(samples["off"])
        print(f"\nsearch latency, {memories} memories, {users} users, {queries} queries per level")
        print("| audit level | p50 ms | p95 ms | p99 ms | p95 - off (ms) | audit rows |")
        print("|---|---|---|---|---|---|")
        for lvl in LEVELS:
            s = summary_ms(samples[lvl])
            print(
                f"| {lvl} | {s['p50']:.2f} | {s['p95']:.2f} | {s['p99']:.2f} | "
                f"{s['p95'] - base['p95']:+.2f} | {written[lvl]} |"
            )
        print("\nwhat recording one search costs the request itself (a timed block + a list")
        print("append; the insert happens later, in the background, in batches)")
        print("| audit level | p50 µs | p95 µs | p99 µs |")
        print("|---|---|---|---|")
        for lvl, cost in record_cost.items():
            print(f"| {lvl} | {cost['p50']:.1f} | {cost['p95']:.1f} | {cost['p99']:.1f} |")
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


async def _conversations(store: AsyncMemory, count: int, turns: int, users: int) -> None:
    texts = corpus(count * turns)
    gate = asyncio.Semaphore(8)

    async def one(n: int) -> None:
        async with gate:
            user = f"user{n % users}"
            convo = await store.start_conversation(user_id=user)
            said = texts[n * turns : (n + 1) * turns]
            roles = ("user", "assistant")
            await store.add_turns(
                convo.id,
                [{"role": roles[i % 2], "content": t} for i, t in enumerate(said)],
                user_id=user,
            )

    await asyncio.gather(*(one(n) for n in range(count)))


async def run_consolidate(count: int, turns: int, users: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="memvault-bench-consolidate-"))
    pg = EmbeddedPostgres(work / "pg")
    try:
        pg.start()
        with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
            conn.execute('CREATE DATABASE "bench"')
        url, key = pg.admin_url("bench"), generate_key()
        store = await AsyncMemory.open(_settings(url, key, work, "off"))
        start = time.perf_counter()
        await _conversations(store, count, turns, users)
        built = time.perf_counter() - start
        with psycopg.connect(url, autocommit=True) as raw:
            # Turns stored before consolidation have no facts yet; make sure of it.
            raw.execute("DELETE FROM entities")
            start = time.perf_counter()
            run = await jobs.run_job(store._backend, "consolidate")
            took = time.perf_counter() - start
            facts = raw.execute("SELECT count(*) FROM facts").fetchone()
            raw.execute("DELETE FROM entities")
            raw.execute("UPDATE conversations SET consolidated_at = NULL")
            tracemalloc.start()
            await jobs.run_job(store._backend, "consolidate")
            _, heap_peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        rss_peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        await store.close()
        print(f"\nconsolidate: {count} conversations x {turns} turns, {users} users")
        print(f"built through the API in {built:.1f} s; run outcome {run.outcome}: {run.counts}")
        print(
            "| conversations | turns | run s | conversations/s | turns/s | facts | "
            "peak heap MiB (tracemalloc) | peak RSS MiB (process) |"
        )
        print("|---|---|---|---|---|---|---|---|")
        print(
            f"| {count} | {count * turns} | {took:.1f} | {count / took:.1f} | "
            f"{count * turns / took:.0f} | {facts[0] if facts else 0} | "
            f"{heap_peak / 2**20:.1f} | {rss_peak_mib:.0f} |"
        )
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--consolidate", type=int, default=0, help="conversations (0: audit)")
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    if args.consolidate:
        asyncio.run(run_consolidate(args.consolidate, args.turns, args.users))
    else:
        asyncio.run(run(args.memories, args.queries, args.users))


if __name__ == "__main__":
    main()
