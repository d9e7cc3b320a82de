"""Webhooks' cost on the write path, and how fast the workers deliver (docs/events.md).

    .venv/bin/python bench/webhooks.py [--adds 100] [--rounds 5] [--users 50] [--events 1000]
        [--line 100]

One embedded PostgreSQL, hash embeddings (the model is not what is measured), one process, no
worker running during the adds (the events wait in the outbox).
Two tenants in the same store: ``plain`` has no subscription, ``hooked`` one subscription to
every event type, its endpoint a local HTTP server answering 204. Each round adds ``--adds``
memories (the whole write pipeline, extraction included) to each tenant, the two in turn
(which goes first alternates), and records each tenant's p95; the figures are the medians of
the rounds' p95s and p50s, and their ratio. Then ``--events`` memory events of ``--users``
users, and ``--line`` events of one user, are delivered by one worker's webhook step alone (as
many ticks as it takes), timed from the first claim to the last recorded outcome: deliveries
per second, signed, over HTTP. One user's events go one at a time (per-user order: a tick
sends each line's head only), so the second figure is the rate of one line.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memvault import AsyncMemory, Settings
from memvault.crypto.envelope import generate_key
from memvault.worker import Worker

from _stats import percentile, timed


class _Handler(BaseHTTPRequestHandler):
    received = 0
    # Keep-alive, as an endpoint behind any web server answers.
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        type(self).received += 1
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


async def _adds(memory: AsyncMemory, n: int, round_: int) -> list[float]:
    times: list[float] = []
    for i in range(n):
        with timed(times):
            await memory.add(f"Round {round_} note {i}: I met Sam at the Lyon office", user_id="u")
    return times


async def _overhead(store: AsyncMemory, adds: int, rounds: int) -> None:
    plain, hooked = store.for_tenant("plain"), store.for_tenant("hooked")
    p95s: dict[str, list[float]] = {"plain": [], "hooked": []}
    p50s: dict[str, list[float]] = {"plain": [], "hooked": []}
    await _adds(plain, 10, -1)  # warm both tenants' keys, caches and plans
    await _adds(hooked, 10, -1)
    for round_ in range(rounds):
        order = [("plain", plain), ("hooked", hooked)]
        for name, memory in order if round_ % 2 == 0 else order[::-1]:
            times = await _adds(memory, adds, round_)
            p95s[name].append(percentile(times, 95) * 1000)
            p50s[name].append(percentile(times, 50) * 1000)
    print(f"\nadd() latency, {adds} adds per tenant per round, {rounds} rounds (median of rounds)")
    print("| tenant | p50 ms | p95 ms |")
    print("|---|---|---|")
    for name in ("plain", "hooked"):
        p50, p95 = statistics.median(p50s[name]), statistics.median(p95s[name])
        print(f"| {name} | {p50:.2f} | {p95:.2f} |")
    ratio = statistics.median(p95s["hooked"]) / statistics.median(p95s["plain"])
    print(f"p95 ratio hooked / plain: {ratio:.3f}")
    print("per-round p95 plain :", " ".join(f"{v:.2f}" for v in p95s["plain"]))
    print("per-round p95 hooked:", " ".join(f"{v:.2f}" for v in p95s["hooked"]))


async def _drain(store: AsyncMemory) -> tuple[int, float, int]:
    """Deliver everything due with one worker's webhook step alone: (sent, seconds, ticks)."""
    dispatcher = Worker(store._backend).webhooks
    before, started, ticks = _Handler.received, time.perf_counter(), 0
    while await dispatcher.tick():
        ticks += 1
    took = time.perf_counter() - started
    await dispatcher.close()
    return _Handler.received - before, took, ticks


async def _throughput(store: AsyncMemory, events: int, users: int, line: int) -> None:
    await _drain(store)  # the hooked tenant's events from above, untimed
    memory = store.for_tenant("throughput")
    await memory.create_webhook(_url, event_types=["memory.created"])
    batch = store._backend.settings.webhook_batch
    for label, count, owners in (("many users", events, users), ("one user", line, 1)):
        for i in range(count):
            await memory.add(f"event {i}", user_id=f"user{i % owners}", infer=False)
        sent, took, ticks = await _drain(store)
        print(
            f"delivery, {label}: {sent} events of {owners} users in {took:.2f} s = "
            f"{sent / took:.0f}/s ({ticks} ticks, batch {batch})"
        )


_url = ""


async def main() -> None:
    global _url
    parser = argparse.ArgumentParser()
    parser.add_argument("--adds", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--line", type=int, default=100, help="events of one user, in order")
    args = parser.parse_args()
    ThreadingHTTPServer.request_queue_size = 128  # a batch connects at once
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    settings = Settings(
        data_dir=Path(tempfile.mkdtemp(prefix="bench-webhooks-")),
        encryption_key=generate_key(),
        embedding_provider="hash",
        webhook_allow_private=True,
        auth="off",
        # No worker in this process: deliveries are timed alone, after the adds.
        run_worker=False,
    )
    async with AsyncMemory(settings) as store:
        await store.for_tenant("hooked").create_webhook(_url)
        await _overhead(store, args.adds, args.rounds)
        await _throughput(store, args.events, args.users, args.line)
    server.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
