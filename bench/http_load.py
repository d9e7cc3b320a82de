"""HTTP load: a real server on loopback, driven from this separate process.

    .venv/bin/python bench/http_load.py [--clients 50] [--duration 120] [--search-share 0.8]
                                        [--workers 1 2]

Starts ``memvault serve`` (embedded PostgreSQL, API keys required, default rate limits) in a
fresh data directory, gives each simulated client its own API key, seeds 1,000 memories,
then runs ``--clients`` concurrent clients for ``--duration`` seconds, each looping: search
(80 %) or add through the full offline pipeline (20 %). Reports throughput, latency
percentiles per operation, and errors (any non-2xx answer or transport failure), then reads
back every add the server acknowledged to confirm nothing was lost. With several ``--workers``
values it runs once per value (``memvault serve --workers N``, a fresh data directory each),
one after the other in the same invocation, and prints them side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from _corpus import memories as corpus
from memvault import AsyncMemory, Settings, auth

from _stats import summary_ms

USERS = 50
QUESTIONS = [
    "what does {u} like to eat?",
    "where did {u} travel last year?",
    "what is {u} working on?",
    "who are {u}'s friends?",
    "what sport does {u} play?",
    "what music does {u} listen to?",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def make_keys(data_dir: Path, count: int) -> list[str]:
    memory = await AsyncMemory.open(Settings(data_dir=data_dir, run_worker=False))
    try:
        return [
            (await auth.create_key(memory._backend.engine, "bench", "read,write", f"c{n}")).key
            for n in range(count)
        ]
    finally:
        await memory.close()


def start_server(data_dir: Path, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MEMVAULT_DATA_DIR": str(data_dir),
        "MEMVAULT_PORT": str(port),
        "MEMVAULT_AUTH": "required",
        "MEMVAULT_LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "serve", f"--workers={workers}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def wait_ready(base: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                # Ready: the model is loaded in every process that answered and a worker runs.
                if (await client.get(f"{base}/ready")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise SystemExit("the server did not start")


async def seed(base: str, key: str, texts: list[str]) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    items = [
        {"content": t, "user_id": f"user-{i % USERS}", "infer": False} for i, t in enumerate(texts)
    ]
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=300) as client:
        for start in range(0, len(items), 200):
            r = await client.post(
                "/v1/memories/batch", json={"memories": items[start : start + 200]}
            )
            r.raise_for_status()


class Tally:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {"search": [], "add": []}
        self.errors: dict[str, int] = {}
        self.acknowledged: list[tuple[str, str]] = []  # (user, id)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def client_loop(
    base: str, key: str, n: int, stop_at: float, share: float, tally: Tally
) -> None:
    rng = random.Random(n)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        count = 0
        while time.monotonic() < stop_at:
            user = f"user-{rng.randrange(USERS)}"
            count += 1
            op = "search" if rng.random() < share else "add"
            if op == "search":
                body: dict[str, Any] = {
                    "query": rng.choice(QUESTIONS).format(u=user),
                    "user_id": user,
                    "limit": 10,
                }
                path = "/v1/memories/search"
            else:
                body = {
                    "content": f"client {n} note {count}: {user} mentioned {rng.random():.6f}",
                    "user_id": user,
                }
                path = "/v1/memories"
            started = time.perf_counter()
            try:
                r = await client.post(path, json=body)
            except httpx.HTTPError as exc:
                tally.error(f"{op}: {type(exc).__name__}")
                continue
            tally.latency[op].append(time.perf_counter() - started)
            if r.status_code >= 300:
                tally.error(f"{op}: HTTP {r.status_code}")
            elif op == "add":
                tally.acknowledged.append((user, r.json()["id"]))


async def verify(base: str, key: str, acknowledged: list[tuple[str, str]]) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    missing = 0
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
        queue = list(acknowledged)

        async def check() -> None:
            nonlocal missing
            while queue:
                user, memory_id = queue.pop()
                while True:
                    r = await client.get(f"/v1/memories/{memory_id}", params={"user_id": user})
                    if r.status_code != 429:  # this key's rate limit: wait as told, ask again
                        break
                    await asyncio.sleep(float(r.headers.get("retry-after", "1")))
                if r.status_code == 404:
                    missing += 1
                else:
                    r.raise_for_status()

        await asyncio.gather(*(check() for _ in range(10)))
    return missing


async def measure(workers: int, clients: int, duration: float, share: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        keys = await make_keys(data_dir, clients)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(data_dir, port, workers)
        try:
            await wait_ready(base)
            await seed(base, keys[0], corpus(1000, seed=11))
            # Warm the model and the pools before measuring.
            warm = Tally()
            await asyncio.gather(
                *(
                    client_loop(base, keys[n], n, time.monotonic() + 5, share, warm)
                    for n in range(clients)
                )
            )
            print(
                f"\n## --workers {workers}: server on {base}; {clients} clients, "
                f"{duration:.0f} s, {share:.0%} search / {1 - share:.0%} add",
                flush=True,
            )
            tally = Tally()
            started = time.monotonic()
            await asyncio.gather(
                *(
                    client_loop(base, keys[n], n, started + duration, share, tally)
                    for n in range(clients)
                )
            )
            elapsed = time.monotonic() - started
            missing = await verify(base, keys[0], tally.acknowledged + warm.acknowledged)
        finally:
            server.terminate()
            server.wait(timeout=60)
    return report(tally, warm, elapsed, missing)


def report(tally: Tally, warm: Tally, elapsed: float, missing: int) -> dict[str, Any]:
    total = sum(len(v) for v in tally.latency.values()) + sum(tally.errors.values())
    everything = [x for v in tally.latency.values() for x in v]
    print(f"requests: {total} in {elapsed:.1f} s = {total / elapsed:.1f} req/s")
    print("| operation | requests | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for name, values in (*tally.latency.items(), ("all", everything)):
        s = summary_ms(values)
        print(f"| {name} | {len(values)} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} |")
    errors = sum(tally.errors.values())
    adds = len(tally.acknowledged) + len(warm.acknowledged)
    print(f"errors: {errors} {tally.errors or ''}")
    print(f"acknowledged adds: {adds}, missing afterwards: {missing}", flush=True)
    return {
        "rps": total / elapsed,
        "p50": summary_ms(everything)["p50"],
        "p95": summary_ms(everything)["p95"],
        "search_p95": summary_ms(tally.latency["search"])["p95"],
        "add_p95": summary_ms(tally.latency["add"])["p95"],
        "errors": errors,
        "adds": adds,
        "lost": missing,
    }


async def run(workers: list[int], clients: int, duration: float, share: float) -> None:
    results = {n: await measure(n, clients, duration, share) for n in workers}
    print("\n## side by side")
    print("| --workers | req/s | p50 ms | p95 ms | search p95 | add p95 | errors | adds | lost |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, r in results.items():
        print(
            f"| {n} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} | {r['search_p95']:.1f} "
            f"| {r['add_p95']:.1f} | {r['errors']} | {r['adds']} | {r['lost']} |"
        )
    if len(results) > 1:
        first, last = results[workers[0]], results[workers[-1]]
        print(
            f"throughput ratio {workers[-1]} / {workers[0]} workers: "
            f"{last['rps'] / first['rps']:.2f}x; p95 ratio {last['p95'] / first['p95']:.2f}x"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=120.0)
    parser.add_argument("--search-share", type=float, default=0.8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1], help="e.g. --workers 1 2")
    args = parser.parse_args()
    asyncio.run(run(args.workers, args.clients, args.duration, args.search_share))
