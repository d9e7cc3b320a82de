"""Oversized bodies get the error envelope.

FastAPI's ``max_body_size`` does the counting (declared or streamed); this outer layer refuses a
declared oversize before anything is read and gives every 413 the one envelope shape.

A 413 closes the connection (``Connection: close``): the body it refused is left unread, so the
connection cannot carry another request, and a client reading to the end of the answer gets it
at once instead of when the server's keep-alive timer runs out.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class PayloadLimitEnvelope:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.body = json.dumps(
            {
                "error": {
                    "code": "payload_too_large",
                    "message": f"The request body is larger than {max_bytes} bytes.",
                    "details": {"limit": max_bytes},
                }
            }
        ).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._send_413(send)
            return
        rewriting = False

        async def send_enveloped(message: Message) -> None:
            nonlocal rewriting
            if message["type"] == "http.response.start" and message["status"] == 413:
                rewriting = True
                return
            if rewriting:
                if not message.get("more_body", False):
                    await self._send_413(send)
                return
            await send(message)

        await self.app(scope, receive, send_enveloped)

    async def _send_413(self, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(self.body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": self.body})
