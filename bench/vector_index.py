"""The vector indexes side by side: recall through memvault, and the indexes' own search speed,
memory and disk at growing sizes.

    .venv/bin/python bench/vector_index.py [--sizes 10000 100000] [--queries 200] \
        [--recipes hybrid vector] [--no-locomo] [--layout USERS PER_USER]

1. **Recall** (LoCoMo dev, the protocol of bench/locomo.py): the conversations are imported once
   into a store on pgvector; the same store is then opened with Qdrant Edge and with
   qdrant-client's local mode, each index filled by the reconcile sweep from PostgreSQL's
   vectors (its repairs counted), and every category 1-4 question is asked through
   ``search`` (hybrid and vector recipes) of each. R@k per index and recipe.
2. **Speed and footprint** at each size: random unit vectors (384 dims, the bundled model's)
   in pgvector's HNSW (memvault's index: vector_cosine_ops, ef_search = memvault's
   hnsw_ef_search) and in a Qdrant Edge shard made by memvault's own ``EdgeStore`` (after its
   HNSW is built), the same queries against both: p50/p95 of a top-10 search, recall@10
   against the exact answer, build time, disk (PostgreSQL: table + HNSW index; Edge: the shard
   directory) and the growth of this process's RSS while the shard is open and searched.
3. **Collection layout** (``--layout USERS PER_USER``): the same vectors in Qdrant Edge as one
   collection per user (memvault's layout) and as one shared collection filtered by a
   ``user_id`` payload index; each query asks one user's nearest. Build time, p50/p95, disk,
   RSS growth.
Print ``uptime`` beside the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from memvault import AsyncMemory, Settings
from memvault.db.embedded import EmbeddedPostgres
from memvault.vectorindex.engines import EdgeStore, Point
from memvault.vectorindex.feeder import Feeder
from memvault.vectorindex.payload import Match
from recall import KS, load_locomo, score

from _stats import summary_ms

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
DIMS = 384
EF_SEARCH = Settings.model_fields["hnsw_ef_search"].default
INDEXES: dict[str, dict[str, Any]] = {
    "pgvector": {},
    "qdrant-edge": {"vector_index": "qdrant-edge"},
    "qdrant-client (local)": {"vector_index": "qdrant", "qdrant_url": ":memory:"},
}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def du_mb(path: Path) -> float:
    """Blocks in use, as du counts them (Edge preallocates sparse files)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 1e6


# --- 1. recall through memvault -----------------------------------------------------------------


async def recall(tmp: Path, recipes: list[str]) -> None:
    base = {"data_dir": tmp / "data", "run_worker": False, "embedding_cache_ttl_s": 0}
    questions = None
    print("\n| index | recipe | n | R@1 | R@5 | R@10 | p50 ms | p95 ms | sweep repairs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, extra in INDEXES.items():
        memory = await AsyncMemory.open(Settings(**base, **extra))
        if questions is None:
            t0 = time.perf_counter()
            questions = await load_locomo(memory, SHARED / "locomo_dev.json", infer=False)
            print(f"  imported in {time.perf_counter() - t0:.0f}s", flush=True)
        feeder = Feeder(memory._backend)
        repairs: Counter[str] = await feeder.reconcile()
        for recipe in recipes:
            got = await score(memory, questions, recipe)
            lat = summary_ms(got.latencies)
            cells = " | ".join(f"{got.recall[k]:.3f}" for k in KS)
            print(
                f"| {name} | {recipe} | {len(questions)} | {cells} | {lat['p50']:.1f} | "
                f"{lat['p95']:.1f} | {dict(repairs) or '-'} |",
                flush=True,
            )
        await memory.close()


# --- 2. speed and footprint ---------------------------------------------------------------------


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def exact_top10(data: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    found = []
    for start in range(0, len(queries), 50):  # 50 rows of scores at a time: 200 MB at 1M
        scores = queries[start : start + 50] @ data.T
        found += [set(np.argpartition(-row, 10)[:10].tolist()) for row in scores]
    return found


def pgvector_side(
    url: str, data: np.ndarray, queries: np.ndarray
) -> tuple[list[float], list[list[int]], dict[str, float]]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.execute("DROP TABLE IF EXISTS bench_vectors")
        conn.execute(f"CREATE TABLE bench_vectors (id int PRIMARY KEY, embedding vector({DIMS}))")
        t0 = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy("COPY bench_vectors (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy,
        ):
            copy.set_types(["int4", "vector"])
            for i, v in enumerate(data):
                copy.write_row((i, v))
        # The graph must fit in memory while it is built, or pgvector builds it on disk, far
        # slower (it says so in a notice): ~4 kB per vector of 384 dims.
        conn.execute(f"SET maintenance_work_mem = '{max(1, len(data) * 4 // 1_000_000)}GB'")
        conn.execute(
            "CREATE INDEX bench_hnsw ON bench_vectors USING hnsw (embedding vector_cosine_ops)"
        )
        built = time.perf_counter() - t0
        conn.execute("ANALYZE bench_vectors")
        sizes = conn.execute(
            "SELECT pg_table_size('bench_vectors'), pg_relation_size('bench_hnsw')"
        ).fetchone()
        assert sizes is not None
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        times, found = [], []
        for q in queries:
            t = time.perf_counter()
            rows = conn.execute(
                "SELECT id FROM bench_vectors ORDER BY embedding <=> %s LIMIT 10", (q,)
            ).fetchall()
            times.append(time.perf_counter() - t)
            found.append([r[0] for r in rows])
        conn.execute("DROP TABLE bench_vectors")
    return times, found, {"build_s": built, "disk_mb": (sizes[0] + sizes[1]) / 1e6}


async def edge_side(
    root: Path, data: np.ndarray, queries: np.ndarray
) -> tuple[list[float], list[list[int]], dict[str, float]]:
    before = rss_mb()
    store = EdgeStore(root)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(len(data))]
    t0 = time.perf_counter()
    await store.ensure("bench", DIMS)
    for start in range(0, len(data), 1000):
        batch = [
            Point(ids[i], data[i].tolist(), {"memory_id": ids[i]})
            for i in range(start, min(start + 1000, len(data)))
        ]
        await store.upsert("bench", batch)
    await store.maintain()
    built = time.perf_counter() - t0
    times, found = [], []
    for q in queries:
        t = time.perf_counter()
        hits = await store.query("bench", q.tolist(), [], 10, EF_SEARCH)
        times.append(time.perf_counter() - t)
        found.append([uuid.UUID(h.id).int - 1 for h in hits])
    footprint = {"build_s": built, "disk_mb": du_mb(root), "rss_growth_mb": rss_mb() - before}
    await store.close()
    shutil.rmtree(root, ignore_errors=True)
    return times, found, footprint


def recall10(found: list[list[int]], exact: list[set[int]]) -> float:
    return float(np.mean([len(set(f) & e) / 10 for f, e in zip(found, exact, strict=True)]))


async def speed(tmp: Path, sizes: list[int], n_queries: int) -> None:
    server = EmbeddedPostgres(tmp / "pg")
    url = await asyncio.to_thread(server.start)
    try:
        rng = np.random.default_rng(7)
        queries = unit(np.random.default_rng(11), n_queries)
        print(
            "\n| vectors | index | build s | p50 ms | p95 ms | recall@10 | disk MB "
            "| RSS growth MB |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for size in sizes:
            data = unit(rng, size)
            exact = exact_top10(data, queries)
            for name in ("pgvector HNSW", "Qdrant Edge"):
                times, found, foot = (
                    await asyncio.to_thread(pgvector_side, url, data, queries)
                    if name == "pgvector HNSW"
                    else await edge_side(tmp / f"edge-{size}", data, queries)
                )
                lat = summary_ms(times)
                growth = foot.get("rss_growth_mb")
                print(
                    f"| {size:,} | {name} | {foot['build_s']:.0f} | {lat['p50']:.2f} | "
                    f"{lat['p95']:.2f} | {recall10(found, exact):.3f} | {foot['disk_mb']:.0f} | "
                    f"{'-' if growth is None else f'{growth:.0f}'} |",
                    flush=True,
                )
            print(f"  ({uptime()})", flush=True)
    finally:
        await asyncio.to_thread(server.stop)


async def layout(tmp: Path, users: int, per_user: int, n_queries: int) -> None:
    data = unit(np.random.default_rng(5), users * per_user)
    queries = unit(np.random.default_rng(13), n_queries)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(len(data))]
    owner = [i % users for i in range(len(data))]
    print("\n| layout | users x vectors | build s | p50 ms | p95 ms | disk MB | RSS growth MB |")
    print("|---|---|---|---|---|---|---|")
    for shape in ("collection per user", "one collection, user filter"):
        before, root = rss_mb(), tmp / shape.replace(" ", "-").replace(",", "")
        store = EdgeStore(root)
        t0 = time.perf_counter()
        batches: dict[str, list[Point]] = {}
        for i, v in enumerate(data):
            name = f"u{owner[i]}" if shape.startswith("collection") else "all"
            payload = {"memory_id": ids[i], "user_id": f"u{owner[i]}"}
            batches.setdefault(name, []).append(Point(ids[i], v.tolist(), payload))
        for name, points in batches.items():
            await store.ensure(name, DIMS)
            if name == "all":
                q = store._q
                index = q.UpdateOperation.create_field_index("user_id", q.PayloadSchemaType.Keyword)
                await asyncio.to_thread(store._shards[name].update, index)
            for start in range(0, len(points), 1000):
                await store.upsert(name, points[start : start + 1000])
        await store.maintain()
        built = time.perf_counter() - t0
        times = []
        for n, qv in enumerate(queries):
            user = f"u{n % users}"
            name, where = (
                (user, []) if shape.startswith("collection") else ("all", [Match("user_id", user)])
            )
            t = time.perf_counter()
            await store.query(name, qv.tolist(), where, 10, EF_SEARCH)
            times.append(time.perf_counter() - t)
        lat = summary_ms(times)
        print(
            f"| {shape} | {users:,} x {per_user:,} | {built:.0f} | {lat['p50']:.2f} | "
            f"{lat['p95']:.2f} | {du_mb(root):.0f} | {rss_mb() - before:.0f} |",
            flush=True,
        )
        await store.close()
        shutil.rmtree(root, ignore_errors=True)
    print(f"  ({uptime()})", flush=True)


async def main(args: argparse.Namespace) -> None:
    print(f"start: {uptime()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        if args.locomo:
            await recall(Path(tmp) / "recall", args.recipes)
            print(f"  ({uptime()})", flush=True)
        if args.sizes:
            await speed(Path(tmp), args.sizes, args.queries)
        if args.layout:
            await layout(Path(tmp), *args.layout, args.queries)
    print(f"end: {uptime()}  (pid {os.getpid()})", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-locomo", dest="locomo", action="store_false")
    parser.add_argument("--recipes", nargs="+", default=["hybrid", "vector"])
    parser.add_argument("--layout", nargs=2, type=int, metavar=("USERS", "PER_USER"))
    asyncio.run(main(parser.parse_args()))
