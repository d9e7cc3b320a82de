"""Read-your-writes across API processes (``memvault.consistency``): the token a request carries
(``Memvault-Read-After``) holds for everything it reads, and an answer to a request that used
the primary names the position it leaves (``Memvault-Written-Lsn``, only with a read URL).

Pure ASGI, so every route (and the dashboard) is covered the same way. A malformed token is
refused with the error envelope (422 ``invalid_input``) before the route runs; an empty one is
no token."""

from __future__ import annotations

from starlette.datastructures import State
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memvault.api.error_envelope import envelope
from memvault.consistency import READ_AFTER_HEADER, WRITTEN_HEADER, position
from memvault.errors import InvalidInput
from memvault.service import AsyncMemory, read_your_writes

_READ_AFTER = READ_AFTER_HEADER.lower().encode()
_WRITTEN = WRITTEN_HEADER.lower().encode()


class ReadYourWrites:
    def __init__(self, app: ASGIApp, state: State) -> None:
        self.app = app
        self.state = state  # the app's: the store is there once the app has started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        memory: AsyncMemory | None = getattr(self.state, "memory", None)
        if scope["type"] != "http" or memory is None:
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(_READ_AFTER, b"").decode("latin-1").strip()
        try:
            read_after = position(given) if given else None
        except InvalidInput as exc:
            refusal = envelope(exc.status_code, exc.code, exc.message, exc.details)
            await refusal(scope, receive, send)
            return
        with read_your_writes(memory, read_after) as request:

            async def send_with_position(message: Message) -> None:
                if message["type"] == "http.response.start":
                    written = await request.written()
                    if written is not None:
                        headers = [*message.get("headers", []), (_WRITTEN, written.encode())]
                        message = {**message, "headers": headers}
                await send(message)

            await self.app(scope, receive, send_with_position)
