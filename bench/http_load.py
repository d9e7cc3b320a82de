"""HTTP load: a real server on loopback, driven from this separate process.

    .venv/bin/python bench/http_load.py [--clients 50] [--duration 120] [--search-share 0.8]

Starts ``memvault serve`` (embedded PostgreSQL, API keys required, default rate limits) in a
fresh data directory, gives each simulated client its own API key, seeds 1,000 memories,
then runs ``--clients`` concurrent clients for ``--duration`` seconds, each looping: search
(80 %) or add through the full offline pipeline (20 %). Reports throughput, latency
percentiles per operation, and errors (any non-2xx answer or transport failure), then reads
back every add the server acknowledged to confirm nothing was lost.
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
            (await auth.create_key(memory.backend.engine, "bench", "read,write", f"c{n}")).key
            for n in range(count)
        ]
    finally:
        await memory.close()


def start_server(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MEMVAULT_DATA_DIR": str(data_dir),
        "MEMVAULT_PORT": str(port),
        "MEMVAULT_AUTH": "required",
        "MEMVAULT_LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def wait_ready(base: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(f"{base}/health")).status_code == 200:
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


async def run(clients: int, duration: float, share: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        keys = await make_keys(data_dir, clients)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(data_dir, port)
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
                f"server on {base}; {clients} clients, {duration:.0f} s, "
                f"{share:.0%} search / {1 - share:.0%} add",
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
            total = sum(len(v) for v in tally.latency.values()) + sum(tally.errors.values())
            everything = [x for v in tally.latency.values() for x in v]
            print(f"\nrequests: {total} in {elapsed:.1f} s = {total / elapsed:.1f} req/s")
            print("| operation | requests | p50 ms | p95 ms | p99 ms |")
            print("|---|---|---|---|---|")
            for name, values in (*tally.latency.items(), ("all", everything)):
                s = summary_ms(values)
                print(
                    f"| {name} | {len(values)} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} |"
                )
            print(f"errors: {sum(tally.errors.values())} {tally.errors or ''}")
            missing = await verify(base, keys[0], tally.acknowledged + warm.acknowledged)
            print(
                f"acknowledged adds: {len(tally.acknowledged) + len(warm.acknowledged)}, "
                f"missing afterwards: {missing}",
                flush=True,
            )
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=120.0)
    parser.add_argument("--search-share", type=float, default=0.8)
    args = parser.parse_args()
    asyncio.run(run(args.clients, args.duration, args.search_share))
