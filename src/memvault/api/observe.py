"""Per-request plumbing, outermost first: a request id, a deadline, a latency histogram and one
access-log line per request. Pure ASGI, so it wraps every route and every error the same way.

The access line names the route template and the query parameters' names, never a path or a
query value: ids, user ids and ``metadata`` filters can all say more than a log should."""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memvault import deadline, tracing
from memvault.api.error_envelope import envelope
from memvault.logs import request_id
from memvault.metrics import REQUEST_LATENCY

log = logging.getLogger("memvault.access")
_GOOD_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_GOOD_NAME = re.compile(r"[A-Za-z0-9_.\[\]-]{1,40}")


def query_names(query_string: bytes) -> str | None:
    """The query's parameter names, sorted and comma-joined; an odd-looking name is shown as
    '?', since a name too is whatever the caller typed."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    names = {name if _GOOD_NAME.fullmatch(name) else "?" for name, _ in pairs}
    return ",".join(sorted(names)) or None


# Handlers past their deadline, still unwinding; kept referenced until they finish.
_abandoned: set[asyncio.Task[None]] = set()


class RequestContext:
    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def _deadline(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = envelope(
            503,
            "request_timeout",
            f"The request took longer than {self.timeout_s:g} s and was stopped.",
        )
        response.headers["Retry-After"] = "1"
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _GOOD_ID.fullmatch(given) else uuid.uuid4().hex
        token = request_id.set(rid)
        # Current before the handler's task is made, so the task's spans are its children.
        traced = tracing.request(scope["method"], scope["headers"])
        started = time.perf_counter()
        status = 500
        responded = False
        sent = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status, responded, sent
            if timed_out:
                return  # the deadline answered for this request; the late handler is muted
            if message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            elif message["type"] == "http.response.start":
                status, responded = message["status"], True
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", rid.encode()),
                ]
            await send(message)

        async def handle() -> None:
            await self.app(scope, receive, send_with_id)

        timed_out = False
        with deadline.answer_within(self.timeout_s):  # the handler's task copies it
            handler = asyncio.create_task(handle())
        try:
            done, _ = await asyncio.wait({handler}, timeout=self.timeout_s)
            if handler in done:
                handler.result()  # re-raise what the app raised, as before
            elif not responded:
                await self._deadline(scope, receive, send_with_id)
                timed_out = True
            else:
                timed_out = True
        except asyncio.CancelledError:
            handler.cancel()
            raise
        finally:
            if not handler.done():
                # Cancelling a query on a frozen server can itself wait (psycopg tries to
                # cancel it server-side): the answer above does not wait for that.
                handler.cancel()
                _abandoned.add(handler)
                handler.add_done_callback(_abandoned.discard)
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            REQUEST_LATENCY.labels(scope["method"], route, f"{status // 100}xx").observe(elapsed)
            _log_access(scope, route, status, elapsed)
            traced.finish(route, status, sent)
            traced.close()
            request_id.reset(token)


def _log_access(scope: Scope, route: str, status: int, elapsed: float) -> None:
    ms = round(elapsed * 1000, 2)
    log.info(
        "%s %s %s %s ms",
        scope["method"],
        route,
        status,
        ms,
        extra={
            "method": scope["method"],
            "route": route,
            "query": query_names(scope.get("query_string", b"")),
            "status": status,
            "ms": ms,
        },
    )
