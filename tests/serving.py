"""A real HTTP server for tests: uvicorn in a daemon thread, on 127.0.0.1, a free port."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from memvault.cli import sends_at_once
from tests.waiting import wait_until


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn in a daemon thread on a free port; yield its base URL."""
    # As `memvault serve --workers N` does: without it, each request on a kept-alive
    # connection after the first waits ~40 ms for a delayed ACK (see cli.sends_at_once).
    sock = sends_at_once(socket.socket())
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, log_level="warning", ws="none")
    config.timeout_graceful_shutdown = 5
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:

        def started() -> bool:
            assert thread.is_alive(), "the server did not start"
            return bool(server.started)

        wait_until(started, 30, "the server never started", interval=0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
