"""A real local HTTP server that answers LLM API calls from a script the test writes.

One server speaks both the OpenAI chat API (``/v1/chat/completions``) and Anthropic's Messages
API (``/v1/messages``): each request takes the next scripted :class:`Reply` and is recorded,
path, headers and body, so tests can check both what came back and what was sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, a JSON body (or raw text), after an optional delay."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    delay_s: float = 0.0
    # Only for a request whose body mentions this (e.g. a prompt's name): lets a test script
    # answers to calls that arrive concurrently, in any order.
    when: str | None = None

    def to(self, marker: str) -> Reply:
        return Reply(self.status, self.body, self.delay_s, marker)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]


@dataclass
class LLMServer:
    url: str  # http://127.0.0.1:PORT — no path
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    @property
    def calls(self) -> int:
        with self.lock:
            return len(self.requests)


# --- what the providers answer ---------------------------------------------------------------


def openai_reply(content: str | None, *, refusal: str | None = None) -> Reply:
    message = {"role": "assistant", "content": content, "refusal": refusal}
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


def anthropic_tool_reply(tool_input: dict[str, Any], name: str = "answer") -> Reply:
    block = {"type": "tool_use", "id": "toolu_test", "name": name, "input": tool_input}
    return _anthropic([block], stop_reason="tool_use")


def anthropic_text_reply(text: str) -> Reply:
    return _anthropic([{"type": "text", "text": text}], stop_reason="end_turn")


def _anthropic(content: list[dict[str, Any]], *, stop_reason: str) -> Reply:
    return Reply(
        body={
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": stop_reason,
        }
    )


def error_reply(status: int, message: str = "scripted failure", code: str = "test") -> Reply:
    return Reply(status=status, body={"error": {"message": message, "type": code}})


# --- the server ------------------------------------------------------------------------------

# When the script runs out: a status no provider retries, so a test fails loudly and at once.
_EXHAUSTED = Reply(status=418, body={"error": {"message": "script exhausted"}})


def _next_reply(replies: deque[Reply], body: str) -> Reply:
    for reply in replies:
        if reply.when is None or reply.when in body:
            replies.remove(reply)
            return reply
    return _EXHAUSTED


class _Handler(BaseHTTPRequestHandler):
    server_state: LLMServer

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"]))
        state = self.server_state
        with state.lock:
            state.requests.append(
                Received(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw),
                )
            )
            reply = _next_reply(state.replies, raw.decode())
        if reply.delay_s:
            time.sleep(reply.delay_s)
        payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        data = payload.encode()
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left; that is what the test wanted


@contextmanager
def llm_server() -> Iterator[LLMServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    state = LLMServer(url=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.RequestHandlerClass = type("Handler", (_Handler,), {"server_state": state})
    httpd.daemon_threads = True
    # A short poll keeps shutdown() (which waits for the next poll) from costing 0.5 s a test.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
