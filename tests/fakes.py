"""A real local HTTP server speaking the OpenAI embeddings API, scripted by the test."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMS = 8


def fake_vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    raw = [b - 127.5 for b in digest[:DIMS]]
    norm = sum(v * v for v in raw) ** 0.5
    return [v / norm for v in raw]


@dataclass
class Script:
    """What the server does next: fail N requests with a status, hang, then answer."""

    fail_next: int = 0
    fail_status: int = 503
    hang_s: float = 0.0
    requests: list[list[str]] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        script = self.script
        with script.lock:
            script.requests.append(list(body["input"]))
            failing = script.fail_next > 0
            if failing:
                script.fail_next -= 1
        script.received.set()
        if script.hang_s:
            time.sleep(script.hang_s)
        if failing:
            self._send(script.fail_status, {"error": {"message": "scripted failure"}})
            return
        data = [
            {"index": i, "embedding": fake_vector(t), "object": "embedding"}
            for i, t in enumerate(body["input"])
        ]
        self._send(200, {"data": data, "model": body["model"], "object": "list"})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@contextmanager
def running(server: ThreadingHTTPServer) -> Iterator[int]:
    """``server`` answering on daemon threads; its port. Shut down and closed after."""
    server.daemon_threads = True
    # A short poll keeps shutdown() (which waits for the next poll) from costing 0.5 s a use.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def embedding_server() -> Iterator[tuple[str, Script]]:
    script = Script()
    handler = type("Handler", (_Handler,), {"script": script})
    with running(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as port:
        yield f"http://127.0.0.1:{port}/v1", script


def closed_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
