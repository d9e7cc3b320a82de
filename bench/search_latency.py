"""Search latency as a new user meets it: a fresh, never-analysed store, over HTTP.

    .venv/bin/python bench/search_latency.py [--baseline-ref 3375b0f] [--questions 40]
        [--large USERS --large-size 20 --big-users N --big-size 5000 [--no-locomo]]
        [--current-env MEMVAULT_X=1] [--baseline-env MEMVAULT_X=2]

Starts one private PostgreSQL (autovacuum off, so no table is analysed during the run) and
``memvault serve`` on it from this checkout, and with ``--baseline-ref`` a second server from
a ``git worktree`` of that ref, each on its own empty database, each in its own process with
background ANALYZE off (``MEMVAULT_ANALYZE_AFTER_ROWS=0``) and the embedding cache off. Each
LoCoMo dev conversation (../shared/bench/locomo_dev.json) is stored as one user through the
batch API (``infer: false``); then its questions (distinct texts, so no query embedding is
reused) are asked of both servers in turn, per recipe. Reports client-side latency
p50/p95/p99 per recipe and server, the ratio current / baseline, and the stage timings the
server reports in ``diagnostics.timings_ms``. ``--large`` adds USERS users of ``--large-size`` (20)
memories each and ``--big-users`` users of ``--big-size`` memories (synthetic texts), built through
the same batch API, and asks the big users ``--questions`` questions. ``--current-env`` and
``--baseline-env`` give one server a setting of its own (with ``--baseline-ref HEAD``: two
settings of the same code side by side). ``--floor`` measures, beside each question, what no
search can go below: the same question embedded in this process by the ONNX encoder the
servers run, and the asking user's memories (embedded beforehand, in this process) ranked by
exact cosine in numpy; it reports each server's percentiles over the floor's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg

from _corpus import memories as corpus
from _corpus import questions as corpus_questions
from locomo import DATA, turns
from memvault.crypto.envelope import generate_key
from memvault.db.embedded import EmbeddedPostgres
from memvault.embedding import LocalEmbedder, intra_op_threads

from _stats import percentile

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ("hybrid", "vector", "keyword")
STAGES = ("embed", "retrieve", "rank", "updates", "total")
# Memories a batch request stores: a batch of more than the pipeline's slice (100) that runs
# past its share of the request's deadline leaves the rest to the worker, and the bench runs
# none (served mode), so on a loaded machine a share of the store was never embedded: found by
# keywords only, and embedded again by every search that ranked one among its best.
BATCH = 100


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """One ``memvault serve`` process on its own database, from a source tree."""

    def __init__(
        self,
        name: str,
        src: Path,
        url: str,
        key: str,
        work: Path,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.name, self.port = name, free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(src),
            "MEMVAULT_DATABASE_URL": url,
            "MEMVAULT_ENCRYPTION_KEY": key,
            "MEMVAULT_DATA_DIR": str(work / name),
            "MEMVAULT_PORT": str(self.port),
            "MEMVAULT_AUTH": "off",
            "MEMVAULT_RATE_LIMIT_PER_S": "0",
            "MEMVAULT_LOG_LEVEL": "WARNING",
            "MEMVAULT_EMBEDDING_CACHE_TTL_S": "0",
            "MEMVAULT_ANALYZE_AFTER_ROWS": "0",
            "HF_HUB_OFFLINE": "1",
            **(settings or {}),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memvault.cli", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.client = httpx.AsyncClient(base_url=f"http://127.0.0.1:{self.port}", timeout=600)

    async def ready(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if (await self.client.get("/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.3)
        raise SystemExit(f"the {self.name} server did not start")

    async def store(self, items: list[dict[str, Any]]) -> None:
        began = time.perf_counter()
        for start in range(0, len(items), BATCH):
            answer = await self.client.post(
                "/v1/memories/batch", json={"memories": items[start : start + BATCH]}
            )
            answer.raise_for_status()
            done = start + BATCH
            if len(items) > 10_000 and done % 10_000 == 0:  # a long load says how it goes
                rate = done / (time.perf_counter() - began)
                said = f"{done:,} of {len(items):,} stored, {rate:.0f}/s"
                print(f"    {self.name}: {said}", flush=True)

    async def search(self, body: dict[str, Any]) -> tuple[float, dict[str, float]]:
        started = time.perf_counter()
        answer = await self.client.post("/v1/memories/search", json=body)
        elapsed = time.perf_counter() - started
        answer.raise_for_status()
        return elapsed, answer.json()["diagnostics"]["timings_ms"]

    async def close(self) -> None:
        await self.client.aclose()
        self.process.terminate()
        self.process.wait(timeout=60)


def locomo_items(sample: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "content": t["content"],
            "user_id": sample["sample_id"],
            "occurred_at": t["occurred_at"].isoformat(),
            "metadata": {"session_id": t["session_id"], "turn": t["turn"]},
            "infer": False,
            "pii_policy": "allow",
        }
        for t in turns(sample)
    ]


def synthetic_items(users: int, size: int, prefix: str) -> list[dict[str, Any]]:
    texts = corpus(users * size, seed=len(prefix) + size)
    return [
        {"content": text, "user_id": f"{prefix}{n // size}", "infer": False, "pii_policy": "allow"}
        for n, text in enumerate(texts)
    ]


class Floor:
    """The in-process floor: the question embedded by the servers' encoder (one process's
    share of the cores, as a one-worker server's), the asking user's memories ranked by exact
    cosine, the best 10 kept."""

    NAME = "floor (in process)"

    def __init__(self, work: Path) -> None:
        self.embedder = LocalEmbedder(cache_dir=work / "floor-models", threads=intra_op_threads(1))
        self.vectors: dict[str, np.ndarray] = {}

    async def add(self, items: list[dict[str, Any]]) -> None:
        by_user: dict[str, list[str]] = {}
        for item in items:
            by_user.setdefault(item["user_id"], []).append(item["content"])
        for user, texts in by_user.items():
            found = [
                await self.embedder.embed_batch(texts[n : n + 64]) for n in range(0, len(texts), 64)
            ]
            self.vectors[user] = _unit(np.array([v for batch in found for v in batch], np.float32))

    async def search(self, user: str, question: str) -> float:
        started = time.perf_counter()
        query = _unit(np.array([await self.embedder.embed(question)], np.float32))[0]
        similarity = self.vectors[user] @ query
        best = np.argpartition(-similarity, 10)[:10]
        best = best[np.argsort(-similarity[best])]
        return time.perf_counter() - started


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def load(
    servers: list[Server], args: argparse.Namespace, floor: Floor | None = None
) -> list[tuple[str, str]]:
    """Store the same data in every server (and the floor); the (user, question) pairs."""
    asked: list[tuple[str, str]] = []
    for sample in [] if args.no_locomo else json.loads(args.data.read_text()):
        items = locomo_items(sample)
        for server in servers:
            await server.store(items)
        if floor is not None:
            await floor.add(items)
        seen = list(dict.fromkeys(qa["question"] for qa in sample["qa"]))
        asked += [(sample["sample_id"], q) for q in seen[: args.questions]]
        print(f"  stored {sample['sample_id']}: {len(items)} turns", flush=True)
    if args.large:
        small = synthetic_items(args.large, args.large_size, "small-")
        big = synthetic_items(args.big_users, args.big_size, "big-")
        for server in servers:
            await server.store(small + big)
        if floor is not None:
            await floor.add(small + big)
        print(f"  stored {len(small)} + {len(big)} synthetic memories", flush=True)
        texts = corpus_questions(args.questions * max(args.big_users, 1), seed=9)
        asked += [(f"big-{n % max(args.big_users, 1)}", q) for n, q in enumerate(texts)]
    return asked


async def measure(
    servers: list[Server], asked: list[tuple[str, str]], recipe: str, floor: Floor | None = None
) -> tuple[dict[str, tuple[list[float], list[dict[str, float]]]], list[float]]:
    """Every question of every user, servers in alternating order, one request at a time;
    with ``floor``, the floor's time for each question too, right after the servers'."""
    found: dict[str, tuple[list[float], list[dict[str, float]]]] = {
        s.name: ([], []) for s in servers
    }
    floors: list[float] = []
    for n, (user, question) in enumerate(asked):
        body = {"query": question, "user_id": user, "recipe": recipe, "limit": 10}
        body["track_access"] = False
        for server in servers if n % 2 == 0 else servers[::-1]:
            elapsed, timings = await server.search(body)
            found[server.name][0].append(elapsed * 1000)
            found[server.name][1].append(timings)
        if floor is not None:
            floors.append(await floor.search(user, question) * 1000)
    return found, floors


def report_floor(
    found: dict[str, tuple[list[float], list[dict[str, float]]]], floors: list[float]
) -> None:
    cells = " / ".join(f"{percentile(floors, q):.2f}" for q in (50, 95, 99))
    print(f"{Floor.NAME}: p50 / p95 / p99 {cells} ms")
    for name, (wall, _) in found.items():
        ratios = " / ".join(
            f"{percentile(wall, q) / percentile(floors, q):.2f}" for q in (50, 95, 99)
        )
        print(f"ratio {name} / floor at p50 / p95 / p99: {ratios}")


def report(recipe: str, found: dict[str, tuple[list[float], list[dict[str, float]]]]) -> None:
    names = list(found)
    print(f"\nrecipe `{recipe}`, {len(found[names[0]][0])} searches per server (ms, over HTTP)")
    print("| server | p50 | p95 | p99 | " + " | ".join(f"{s} p50 / p95" for s in STAGES) + " |")
    print("|---|---|---|---|" + "---|" * len(STAGES))
    for name in names:
        wall, timings = found[name]
        cells = [f"{percentile(wall, q):.1f}" for q in (50, 95, 99)]
        for stage in STAGES:
            values = [t.get(stage, 0.0) for t in timings]
            cells.append(f"{percentile(values, 50):.1f} / {percentile(values, 95):.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if len(names) == 2:
        (a, _), (b, _) = found[names[0]], found[names[1]]
        ratios = " / ".join(f"{percentile(a, q) / percentile(b, q):.2f}" for q in (50, 95, 99))
        print(f"ratio {names[0]} / {names[1]} at p50 / p95 / p99: {ratios}")
    lists = sorted({k for t in found[names[0]][1] for k in t if k.startswith("retrieve:")})
    for key in lists:
        values = [t[key] for t in found[names[0]][1] if key in t]
        print(
            f"  {names[0]} {key}: p50 {percentile(values, 50):.2f} / "
            f"p95 {percentile(values, 95):.2f} ms"
        )


def worktree(ref: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", str(into), ref], check=True)
    return into


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pg = EmbeddedPostgres(work / "pg")
        pg.start()
        trees = {"current": ROOT / "src"}
        if args.baseline_ref:
            trees["baseline"] = worktree(args.baseline_ref, work / "baseline") / "src"
        with psycopg.connect(pg.admin_url(), autocommit=True) as conn:
            # No statistics for the whole run: what a new store has until autovacuum runs.
            conn.execute("ALTER SYSTEM SET autovacuum = off")
            conn.execute("SELECT pg_reload_conf()")
            for name in trees:
                conn.execute(f'CREATE DATABASE "{name}"')
        key = generate_key()
        servers: list[Server] = []
        try:
            for name, src in trees.items():  # one at a time: both create the app role
                settings = dict(s.split("=", 1) for s in getattr(args, f"{name}_env"))
                servers.append(Server(name, src, pg.admin_url(name), key, work, settings))
                await servers[-1].ready()
            floor = Floor(work) if args.floor else None
            asked = await load(servers, args, floor)
            for name in trees:
                with psycopg.connect(pg.admin_url(name)) as conn:
                    pending = conn.execute("SELECT count(*) FROM memories WHERE NOT embedded")
                    print(f"  {name}: {(pending.fetchone() or [0])[0]} memories not embedded")
            for server in servers:  # load the model and warm the pools, not measured
                for user, question in asked[:5]:
                    await server.search({"query": question + "?", "user_id": user})
            for recipe in args.recipes:
                found, floors = await measure(servers, asked, recipe, floor)
                report(recipe, found)
                if floors:
                    report_floor(found, floors)
            with psycopg.connect(pg.admin_url("current")) as conn:
                analysed = conn.execute(
                    "SELECT count(*) FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL "
                    "OR last_autoanalyze IS NOT NULL"
                ).fetchone()
            print(f"\ntables analysed during the run: {analysed[0] if analysed else '?'}")
        finally:
            for server in servers:
                await server.close()
            pg.stop()
            if args.baseline_ref:
                remove = ["git", "-C", str(ROOT), "worktree", "remove", "--force"]
                subprocess.run([*remove, str(work / "baseline")], check=False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--baseline-ref", help="git ref to measure side by side, e.g. 3375b0f")
    parser.add_argument("--questions", type=int, default=40, help="per conversation / big user")
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES))
    parser.add_argument("--large", type=int, default=0, help="small users to add")
    parser.add_argument("--large-size", type=int, default=20, help="memories per small user")
    parser.add_argument("--big-users", type=int, default=2)
    parser.add_argument("--big-size", type=int, default=5000)
    parser.add_argument("--no-locomo", action="store_true", help="only the --large store")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time each question embedded and ranked by exact cosine in this process",
    )
    for name in ("current", "baseline"):
        parser.add_argument(
            f"--{name}-env",
            action="append",
            default=[],
            metavar="MEMVAULT_NAME=VALUE",
            help=f"a setting for the {name} server only (repeatable), e.g. to compare settings "
            "with --baseline-ref HEAD",
        )
    asyncio.run(run(parser.parse_args()))
