"""Client transports that lose what a dying API host loses: the request on the way there, or
the answer on the way back after the server did the work."""

from __future__ import annotations

import httpx


class LosesConnections(httpx.AsyncBaseTransport):
    """The first ``times`` requests never reach the server."""

    def __init__(self, times: int) -> None:
        self.left, self.tries, self.inner = times, 0, httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.tries += 1
        if self.left > 0:
            self.left -= 1
            raise httpx.ConnectError("connection reset", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class LosesTheFirstAnswer(httpx.AsyncBaseTransport):
    """The first POST reaches the server and is done there; its answer never comes back, as
    when an API host dies mid-answer. ``tries`` counts the POSTs, ``keys`` holds every
    request's Idempotency-Key."""

    def __init__(self) -> None:
        self.tries, self.keys = 0, list[str | None]()
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.keys.append(request.headers.get("Idempotency-Key"))
        response = await self.inner.handle_async_request(request)
        if request.method == "POST":
            self.tries += 1
            if self.tries == 1:
                await response.aclose()
                raise httpx.ReadError("connection reset on the way back", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
