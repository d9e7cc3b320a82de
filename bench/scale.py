"""Scale on one machine: API processes, workers, a read replica, store size.

    .venv/bin/python bench/scale.py [--duration 20] [--clients 50 200] [--jobs 3000]
        [--stores 10000 100000] [--parts api,workers,replica,store]

One PostgreSQL 16 (the pgserver wheel's, in a fresh folder) is the primary; a hot standby of it
(``pg_basebackup -R``, cluster/standby.py) serves the replica part. Every memvault process is
real (``memvault serve``, ``memvault worker``) and uses hash embeddings, so the figures are
the store's and the HTTP path's, not the model's. "Hosts" are processes of this one machine:
on a 2-core VM a second process adds no CPU, so these figures show what a second process costs
or gains here, not what a second host would.

With ``--host-cpu C`` (as root) every memvault process (each API process of a ``serve``, each
worker) runs as a host of its own: a CPU cgroup with a quota of C cores. On a shared box that is
the closest thing to hosts with CPUs of their own; without it a second process shares the same
cores as the first.

- **api**: ``memvault serve --workers 1`` vs ``2`` (one ``memvault worker`` beside it), at each
  ``--clients`` count: each client loops search (80 %) or add (20 %, inline), for
  ``--duration`` s after a 5 s warm-up. Requests/s, p50/p95 ms, errors (non-2xx or no answer).
- **workers**: 1 vs 2 ``memvault worker`` processes draining ``--jobs`` adds stored with
  ``async=true`` (queued before the workers start): jobs/s from the first to the last.
- **replica**: one API process, searches only, 50 clients, reads on the primary vs
  ``MEMVAULT_DATABASE_READ_URL`` on the standby (its transaction count shows it served them).
- **store**: each ``--stores`` size loaded through the library's batch add (500 users of
  ~10 memories, the rest as users of 5,000), then 100 searches as a small and as a 5,000-memory
  user (in-process, one at a time), the HNSW index rebuilt and timed, and disk per memory.
- **large**: a store grown to each ``--large`` size (10,000 / 100,000 / 1,000,000) through the
  import path (``import_memories``, the lines an export writes, vectors included), users of 90
  memories (10,000 of them at 1,000,000) and two of 50,000 (from 100,000 on). At each size the
  model's HNSW index is built as the store builds it (``CREATE INDEX CONCURRENTLY``, timed; it
  is dropped while the next size loads, as a bulk load would), then 100 searches over HTTP
  (``memvault serve``, one process) as the same 100 users of 90 memories at every size, and as
  a 50,000-memory user; the database's and the HNSW index's bytes per memory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg

from _corpus import memories as corpus
from http_load import Tally, client_loop, free_port

from _stats import summary_ms

# cluster/standby.py lives at the repository's root, beside bench/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cluster.standby import Standby

from memvault import AsyncMemory, Settings, auth
from memvault.crypto.envelope import generate_key
from memvault.db import vectors
from memvault.db.embedded import EmbeddedPostgres
from memvault.embedding.hashing import HashEmbedder

KEY = generate_key()
USERS = 50  # as http_load's clients
QUESTIONS = ["what does {u} like?", "where did {u} travel?", "what is {u} working on?"]


def env(url: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "MEMVAULT_DATABASE_URL": url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_EMBEDDING_PROVIDER": "hash",
        "MEMVAULT_RUN_WORKER": "false",
        "MEMVAULT_RATE_LIMIT_PER_S": "0",
        "MEMVAULT_LOG_LEVEL": "WARNING",
        **extra,
    }


def spawn(args: list[str], environment: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", *args],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=60)


async def wait_ready(base: str, key: str, timeout_s: float = 120) -> None:
    """Until a search answers (``/ready`` would also want a worker's heartbeat, and the
    worker part starts its workers later)."""
    deadline = time.monotonic() + timeout_s
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers) as client:
        while time.monotonic() < deadline:
            try:
                body = {"query": "ready?", "user_id": "user-0"}
                if (await client.post("/v1/memories/search", json=body)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise SystemExit("the server did not start")


async def drive(base: str, key: str, clients: int, duration: float, share: float) -> dict[str, Any]:
    await asyncio.gather(
        *(client_loop(base, key, n, time.monotonic() + 5, share, Tally()) for n in range(clients))
    )
    tally = Tally()
    started = time.monotonic()
    await asyncio.gather(
        *(client_loop(base, key, n, started + duration, share, tally) for n in range(clients))
    )
    elapsed = time.monotonic() - started
    answered = [x for v in tally.latency.values() for x in v]
    errors = sum(tally.errors.values())
    s = summary_ms(answered)
    return {
        "rps": (len(answered) + errors) / elapsed,
        "p50": s["p50"],
        "p95": s["p95"],
        "errors": errors,
    }


class Hosts:
    """memvault processes as hosts with a CPU quota each (cgroup v1's ``cpu`` controller, as
    root): ``cpu`` cores per host, or no quota at all when ``cpu`` is None."""

    ROOT = Path("/sys/fs/cgroup/cpu")

    def __init__(self, cpu: float | None) -> None:
        self.cpu = cpu
        self.groups: list[Path] = []
        if cpu is not None and not os.access(self.ROOT, os.W_OK):
            raise SystemExit(
                f"--host-cpu needs root and the cgroup v1 cpu controller at {self.ROOT}"
            )

    def place(self, pid: int) -> None:
        if self.cpu is None:
            return
        group = self.ROOT / f"memvault-bench-host-{len(self.groups)}"
        group.mkdir(exist_ok=True)
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text(str(int(self.cpu * 100_000)))
        (group / "cgroup.procs").write_text(str(pid))
        self.groups.append(group)

    def place_server(self, process: subprocess.Popen[bytes], api: int) -> None:
        """One host per API process: ``serve --workers N`` (N > 1) is a supervisor whose
        children serve, so each child is a host (the supervisor only watches them)."""
        if api == 1:
            self.place(process.pid)
            return
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        for child in children:
            self.place(int(child))

    def close(self) -> None:
        for group in self.groups:
            for pid in (group / "cgroup.procs").read_text().split():
                (self.ROOT / "cgroup.procs").write_text(pid)
            group.rmdir()
        self.groups = []


class Bench:
    def __init__(self, root: Path, hosts: Hosts) -> None:
        self.root = root
        self.primary = EmbeddedPostgres(root / "primary")
        self.url = ""
        self.key = ""
        self.hosts = hosts

    async def start(self) -> None:
        self.url = self.primary.start()
        memory = await AsyncMemory.open(
            Settings(database_url=self.url, encryption_key=KEY, embedding_provider="hash")
        )
        try:
            created = await auth.create_key(memory._backend.engine, "bench", "read,write", "b")
            self.key = created.key
            texts = corpus(1000, seed=11)
            seed = [
                {"content": t, "user_id": f"user-{i % USERS}", "infer": False}
                for i, t in enumerate(texts)
            ]
            for start in range(0, len(seed), 500):
                await memory.for_tenant("bench").add_many(seed[start : start + 500])
        finally:
            await memory.close()

    async def serve(
        self, api: int, workers: int, **extra: str
    ) -> tuple[str, list[subprocess.Popen[bytes]]]:
        port = free_port()
        environment = env(self.url, MEMVAULT_PORT=str(port), **extra)
        processes = [spawn(["serve", f"--workers={api}"], environment)]
        processes += [spawn(["worker"], environment) for _ in range(workers)]
        base = f"http://127.0.0.1:{port}"
        await wait_ready(base, self.key)
        self.hosts.place_server(processes[0], api)
        for worker in processes[1:]:
            self.hosts.place(worker.pid)
        return base, processes

    def sql(self, statement: str, url: str | None = None) -> Any:
        with psycopg.connect(url or self.primary.admin_url("memvault"), autocommit=True) as conn:
            cursor = conn.execute(statement)
            row = cursor.fetchone() if cursor.description else None
        return None if row is None else row[0]


async def part_api(bench: Bench, clients: list[int], duration: float) -> None:
    print("\n## API processes (1 worker beside them; 80 % search / 20 % add)")
    print("| API processes | clients | req/s | p50 ms | p95 ms | errors |")
    print("|---|---|---|---|---|---|")
    for api in (1, 2):
        base, processes = await bench.serve(api, 1)
        try:
            for count in clients:
                r = await drive(base, bench.key, count, duration, 0.8)
                print(
                    f"| {api} | {count} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} "
                    f"| {r['errors']} |",
                    flush=True,
                )
        finally:
            stop(processes)


async def part_workers(bench: Bench, jobs: int) -> None:
    print(f"\n## workers draining {jobs} background adds (async=true)")
    print("| worker processes | jobs | seconds | jobs/s |")
    print("|---|---|---|---|")
    pending = "SELECT count(*) FROM embedding_jobs WHERE status IN ('queued', 'processing')"
    # From the first job finished to the last, by the database's clock: a worker's start-up
    # (seconds of imports on a busy VM) is not counted.
    span = (
        "SELECT extract(epoch FROM max(updated_at) - min(updated_at)) FROM embedding_jobs "
        "WHERE status = 'done' AND created_at > now() - interval '1 hour' AND memory_id IN "
        "(SELECT id FROM memories WHERE tenant_id = 'bench' AND user_id LIKE 'drain-{n}-%')"
    )
    for workers in (1, 2):
        base, processes = await bench.serve(1, 0)
        try:
            await queue_adds(base, bench.key, jobs, workers)
            started = [spawn(["worker"], env(bench.url)) for _ in range(workers)]
            for worker in started:
                bench.hosts.place(worker.pid)
            processes += started
            while bench.sql(pending):
                await asyncio.sleep(0.1)
            elapsed = float(bench.sql(span.format(n=workers)))
            if elapsed <= 0:
                raise SystemExit(f"{jobs} jobs were drained in one batch: ask for more --jobs")
            print(f"| {workers} | {jobs} | {elapsed:.1f} | {jobs / elapsed:.1f} |", flush=True)
        finally:
            stop(processes)


async def queue_adds(base: str, key: str, jobs: int, salt: int) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    texts = corpus(jobs, seed=100 + salt)
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=300) as client:
        for start in range(0, jobs, 500):
            items = [
                {"content": f"{t} ({salt}.{start + i})", "user_id": f"drain-{salt}-{i % USERS}"}
                for i, t in enumerate(texts[start : start + 500])
            ]
            answer = await client.post("/v1/memories/batch?async=true", json={"memories": items})
            answer.raise_for_status()


async def part_replica(bench: Bench, duration: float) -> None:
    standby = Standby(bench.primary.socket_dir, bench.root)
    standby.copy()
    standby.start()
    replica_url = standby.url("memvault")
    served = "SELECT xact_commit FROM pg_stat_database WHERE datname = 'memvault'"
    print("\n## search only, 50 clients, one API process: primary vs standby reads")
    print("| reads on | req/s | p50 ms | p95 ms | errors | standby transactions |")
    print("|---|---|---|---|---|---|")
    try:
        for name, extra in (
            ("primary", {}),
            ("standby", {"MEMVAULT_DATABASE_READ_URL": replica_url}),
        ):
            base, processes = await bench.serve(1, 1, **extra)
            try:
                before = bench.sql(served, replica_url)
                r = await drive(base, bench.key, 50, duration, 1.0)
                used = bench.sql(served, replica_url) - before
                print(
                    f"| {name} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} "
                    f"| {r['errors']} | {used} |",
                    flush=True,
                )
            finally:
                stop(processes)
    finally:
        standby.stop("immediate")


async def part_store(bench: Bench, sizes: list[int]) -> None:
    print("\n## store size (hash embeddings; in-process searches, one at a time)")
    print(
        "| memories | loaded at /s | small user p50 / p95 ms | 5,000-memory user p50 / p95 ms "
        "| HNSW rebuild s | disk per memory | HNSW per memory |"
    )
    print("|---|---|---|---|---|---|---|")
    settings = Settings(database_url=bench.url, encryption_key=KEY, embedding_provider="hash")
    memory = (await AsyncMemory.open(settings)).for_tenant("store")
    try:
        loaded = 0
        for size in sizes:
            started = time.monotonic()
            await load(memory, loaded, size)
            rate = (size - loaded) / (time.monotonic() - started)
            loaded = size
            small = await searches(memory, [f"small-{n}" for n in range(500)])
            big = await searches(memory, ["big-0"])
            rebuild, disk, index = measure_store(bench)
            print(
                f"| {size:,} | {rate:.0f} | {small['p50']:.1f} / {small['p95']:.1f} "
                f"| {big['p50']:.1f} / {big['p95']:.1f} | {rebuild:.1f} | {disk / 1024:.1f} kB "
                f"| {index / 1024:.2f} kB |",
                flush=True,
            )
    finally:
        await memory.close()


async def load(memory: AsyncMemory, first: int, last: int) -> None:
    """Memories ``first`` to ``last``: the first 5,000 to 500 small users, then big users."""
    texts = corpus(last - first, seed=first)
    items = [
        {"content": f"{t} #{first + i}", "user_id": owner(first + i), "infer": False}
        for i, t in enumerate(texts)
    ]
    for start in range(0, len(items), 1000):
        await memory.add_many(items[start : start + 1000])


def owner(n: int) -> str:
    return f"small-{n % 500}" if n < 5000 else f"big-{(n - 5000) // 5000}"


def draw_question(rng: random.Random) -> str:
    return rng.choice(QUESTIONS).format(u=rng.choice(["Alice", "Bob", "Chen"]))


async def searches(memory: AsyncMemory, users: list[str]) -> dict[str, float]:
    rng = random.Random(7)
    took = []
    for n in range(100):
        question = draw_question(rng)
        started = time.perf_counter()
        await memory.search(question, user_id=users[n % len(users)])
        took.append(time.perf_counter() - started)
    return summary_ms(took)


def measure_store(bench: Bench) -> tuple[float, int, int]:
    """The HNSW index rebuilt (seconds), and the database's and the index's bytes per memory
    (every memory of the database: the other parts' too)."""
    index = bench.sql(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_chunks' "
        "AND indexdef ILIKE '%hnsw%' ORDER BY indexname LIMIT 1"
    )
    started = time.monotonic()
    bench.sql(f'REINDEX INDEX "{index}"')
    rebuild = time.monotonic() - started
    return rebuild, *bytes_per_memory(bench, index)


def bytes_per_memory(bench: Bench, index: str) -> tuple[int, int]:
    """The database's and the HNSW index's bytes over every memory in the database."""
    stored = bench.sql("SELECT count(*) FROM memories")
    disk = bench.sql("SELECT pg_database_size('memvault')")
    index_bytes = bench.sql(f"SELECT pg_relation_size('\"{index}\"')")
    return disk // stored, index_bytes // stored


SMALL_USER, BIG_USER = 90, 50_000
# Where the two 50,000-memory users sit in the load order: the first fills 10,000-60,000, the
# second 100,000-150,000; every other memory belongs to a user of 90, in order.
BIG_SPANS = ((10_000, "big-0"), (100_000, "big-1"))


def large_owner(n: int) -> str:
    small = n
    for start, name in BIG_SPANS:
        if start <= n < start + BIG_USER:
            return name
        if n >= start + BIG_USER:
            small -= BIG_USER
    return f"small-{small // SMALL_USER}"


async def part_large(bench: Bench, sizes: list[int]) -> None:
    print("\n## a large store, loaded through the import path (hash embeddings)")
    print(
        "| memories | users | loaded at /s | HNSW build s | 90-memory users p50 / p95 ms "
        "| 50,000-memory user p50 / p95 ms | disk per memory | HNSW per memory |"
    )
    print("|---|---|---|---|---|---|---|---|")
    # No ANALYZE started by the loader: the index build below would deadlock with it.
    settings = Settings(
        database_url=bench.url, encryption_key=KEY, embedding_provider="hash", analyze_after_rows=0
    )
    memory = await AsyncMemory.open(settings)
    model = HashEmbedder().model_id
    index = vectors.index_name(model)
    # What a bulk build of a large index wants (the default 64 MB spills the graph to disk).
    bench.sql("ALTER SYSTEM SET maintenance_work_mem = '3GB'")
    bench.sql("SELECT pg_reload_conf()")
    loaded = 0
    try:
        tenant = memory.for_tenant("bench")
        for size in sizes:
            bench.sql(f'DROP INDEX IF EXISTS "{index}"')
            started = time.monotonic()
            await import_range(tenant, loaded, size)
            rate = (size - loaded) / (time.monotonic() - started)
            loaded = size
            started = time.monotonic()
            await vectors.ensure_index(memory._backend.ddl_engine, model, 384)
            build = time.monotonic() - started
            users = bench.sql("SELECT count(DISTINCT user_id) FROM memories")
            small, big = await http_searches(bench, size)
            disk, index_bytes = bytes_per_memory(bench, index)
            big_text = f"{big['p50']:.1f} / {big['p95']:.1f}" if big else "n/a"
            print(
                f"| {size:,} | {users:,} | {rate:.0f} | {build:.1f} "
                f"| {small['p50']:.1f} / {small['p95']:.1f} | {big_text} "
                f"| {disk / 1024:.1f} kB | {index_bytes / 1024:.2f} kB |",
                flush=True,
            )
    finally:
        await memory.close()


async def import_range(tenant: AsyncMemory, first: int, last: int) -> None:
    """Memories ``first`` to ``last`` as export lines, one import per owner's run of lines
    (at most 5,000 a call), two imports at a time; progress every 100,000."""
    embedder = HashEmbedder()
    stamp = "2026-01-01T00:00:00Z"
    pending: set[asyncio.Task[Any]] = set()
    for start in range(first, last, 5_000):
        end = min(start + 5_000, last)
        texts = corpus(end - start, seed=start)
        runs: dict[str, list[dict[str, Any]]] = {}
        for n, text in zip(range(start, end), texts, strict=True):
            content = f"{text} #{n}"
            vector = embedder._vector(content)
            runs.setdefault(large_owner(n), []).append(
                {
                    "memvault_export": 2,
                    "kind": "memory",
                    "user_id": large_owner(n),
                    "id": str(uuid.UUID(int=n + 1)),
                    "content": content,
                    "occurred_at": stamp,
                    "created_at": stamp,
                    "updated_at": stamp,
                    "vectors": [{"model": embedder.model_id, "chunks": [vector]}],
                }
            )
        for lines in runs.values():
            if len(pending) >= 2:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
            pending.add(asyncio.create_task(tenant.import_memories(lines)))
        if end % 100_000 == 0:
            print(f"  {end:,} memories", flush=True)
    for task in asyncio.as_completed(pending):
        await task


async def http_searches(bench: Bench, size: int) -> tuple[dict[str, float], dict[str, float]]:
    """100 searches as the first 100 users of 90 memories, and 100 as a 50,000-memory user
    (none while the store is too small to hold one), one at a time over HTTP."""
    base, processes = await bench.serve(1, 0)
    rng = random.Random(7)
    headers = {"Authorization": f"Bearer {bench.key}"}
    found: list[dict[str, float]] = []
    try:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
            bigs = [name for start, name in BIG_SPANS if start + BIG_USER <= size]
            for users in ([f"small-{n}" for n in range(100)], bigs[:1]):
                took = []
                for n in range(100 if users else 0):
                    body = {"query": draw_question(rng), "user_id": users[n % len(users)]}
                    started = time.perf_counter()
                    answer = await client.post("/v1/memories/search", json=body)
                    took.append(time.perf_counter() - started)
                    answer.raise_for_status()
                found.append(summary_ms(took) if took else {})
    finally:
        stop(processes)
    return found[0], found[1]


async def run(args: argparse.Namespace) -> None:
    parts = set(args.parts.split(","))
    print(f"load at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
    hosts = Hosts(args.host_cpu)
    if args.host_cpu is not None:
        print(f"each memvault process a host of {args.host_cpu} cores (CPU quota)", flush=True)
    with tempfile.TemporaryDirectory(prefix="memvault-scale-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the server's user reaches the standby's folders through it
        bench = Bench(root, hosts)
        await bench.start()
        try:
            if "api" in parts:
                await part_api(bench, args.clients, args.duration)
            if "workers" in parts:
                await part_workers(bench, args.jobs)
            if "replica" in parts:
                await part_replica(bench, args.duration)
            if "store" in parts:
                await part_store(bench, args.stores)
            if "large" in parts:
                await part_large(bench, args.large)
        finally:
            bench.primary.stop()
            hosts.close()
    print(f"load at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--stores", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--large", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--parts", default="api,workers,replica,store")
    parser.add_argument("--host-cpu", type=float, default=None, help="cores per host (root)")
    asyncio.run(run(parser.parse_args()))
