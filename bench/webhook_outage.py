"""An endpoint away for minutes, with the shipped retry settings: does every event arrive, once
by id, in order per user? (docs/events.md)

    .venv/bin/python bench/webhook_outage.py [--outage 120] [--users 5] [--events 6] [--wait 600]

The suite proves the same with retries in milliseconds (tests/test_webhooks.py); this runs it in
real time with the defaults (``MEMVAULT_WEBHOOK_BACKOFF_BASE_S`` 5 s, doubling, jittered). One
embedded PostgreSQL, hash embeddings, one worker running in this process as the embedded server
runs it, a local HTTP endpoint answering 204 that is *down* (its port refusing connections) for
``--outage`` seconds, during which ``--users`` users each add ``--events`` memories, spread over
the outage. Then the endpoint comes back, and the run waits until every event has arrived or
the wait passes. It prints how many arrived, how many were duplicates by ``webhook-id``
(at-least-once allows them; none is expected without a crash), whether each user's events came
in the order they happened, and how long after the endpoint's return the last one came.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from memvault import AsyncMemory, Settings
from memvault.crypto.envelope import generate_key
from memvault.worker import Worker


class Endpoint:
    """A receiver on a fixed port that can be taken down (connections refused) and back."""

    def __init__(self) -> None:
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.port = 0
        self._server: ThreadingHTTPServer | None = None

    def up(self) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                endpoint.received.append((self.headers["webhook-id"], json.loads(body)))
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        ThreadingHTTPServer.request_queue_size = 128
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--outage", type=float, default=120.0, help="seconds the endpoint is down")
    parser.add_argument("--users", type=int, default=5)
    parser.add_argument("--events", type=int, default=6, help="memories each user adds")
    parser.add_argument("--wait", type=float, default=600.0, help="longest wait after return")
    args = parser.parse_args()
    endpoint = Endpoint()
    endpoint.up()
    settings = Settings(
        data_dir=Path(tempfile.mkdtemp(prefix="bench-webhook-outage-")),
        encryption_key=generate_key(),
        embedding_provider="hash",
        webhook_allow_private=True,  # the endpoint is on 127.0.0.1
        auth="off",
        run_worker=False,  # the worker below, so that it is the one the run watches
    )
    async with AsyncMemory(settings) as store:
        await store.create_webhook(
            f"http://127.0.0.1:{endpoint.port}/hook", event_types=["memory.created"]
        )
        stop = asyncio.Event()
        worker = asyncio.create_task(Worker(store._backend).run(stop, sweeper=False))
        endpoint.down()
        went_down = time.monotonic()
        total = args.users * args.events
        pause = args.outage / total
        for i in range(total):  # spread over the outage, the users interleaved
            await store.add(f"note {i}", user_id=f"user{i % args.users}", infer=False)
            await asyncio.sleep(max(0.0, went_down + (i + 1) * pause - time.monotonic()))
        await asyncio.sleep(max(0.0, went_down + args.outage - time.monotonic()))
        print(f"endpoint down for {time.monotonic() - went_down:.0f} s, {total} events added")
        endpoint.up()
        back = time.monotonic()
        while len({i for i, _ in endpoint.received}) < total:
            if time.monotonic() - back > args.wait:
                break
            await asyncio.sleep(0.2)
        last = time.monotonic() - back
        stop.set()
        await worker
    endpoint.down()
    ids = Counter(i for i, _ in endpoint.received)
    first = {}
    for webhook_id, event in endpoint.received:
        first.setdefault(webhook_id, event)
    in_order = True
    for user in range(args.users):
        times = [
            e["data"]["created_at"] for e in first.values() if e["data"]["user_id"] == f"user{user}"
        ]
        in_order &= times == sorted(times)
    print(
        f"arrived: {len(ids)} of {total} events ({sum(ids.values()) - len(ids)} duplicates by id)"
    )
    print(f"in order per user: {'yes' if in_order else 'NO'}")
    print(f"last event arrived {last:.0f} s after the endpoint came back")


if __name__ == "__main__":
    asyncio.run(main())
