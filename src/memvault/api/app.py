"""The FastAPI application: wiring only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from memvault import __version__
from memvault.api import docs, errors, gauges
from memvault.api.limits import PayloadLimitEnvelope
from memvault.api.observe import RequestContext
from memvault.api.ratelimit import RateLimiter
from memvault.api.routes import memories, messages, operations
from memvault.config import Settings
from memvault.service import AsyncMemory


class _MemvaultAPI(FastAPI):
    request_timeout_s: float = 60.0

    def build_middleware_stack(self) -> ASGIApp:
        # Outermost, so even FastAPI's own body limiter answers in the error envelope, and
        # every response (errors included) carries a request id and is timed and logged.
        inner = PayloadLimitEnvelope(super().build_middleware_stack(), self.max_body_size or 0)
        return RequestContext(inner, self.request_timeout_s)


@asynccontextmanager
async def _gauges(memory: AsyncMemory) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(gauges.keep_fresh(memory, stop), name="memvault-gauges")
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)


def create_app(settings: Settings, *, memory: AsyncMemory | None = None) -> FastAPI:
    """Build the app. With ``memory`` given the caller owns the store; otherwise the app opens
    one from ``settings`` at start-up and closes it at shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis_url = settings.redis_url.get_secret_value() if settings.redis_url else None
        limiter = RateLimiter(settings.rate_limit_per_s, settings.rate_limit_burst, redis_url)
        app.state.rate_limiter = limiter
        try:
            if memory is not None:
                app.state.memory = memory
                async with _gauges(memory):
                    yield
                return
            opened = await AsyncMemory.open(settings, actor="api")
            app.state.memory = opened
            try:
                async with _gauges(opened):
                    yield
            finally:
                await opened.close()
        finally:
            await limiter.aclose()

    app = _MemvaultAPI(
        title="memvault",
        version=__version__,
        description="Long-term memory for AI agents. Every /v1 route needs "
        "`Authorization: Bearer <API key>` unless the server runs with MEMVAULT_AUTH=off.",
        lifespan=lifespan,
        max_body_size=settings.max_body_bytes,
        # Served by api/docs.py from packaged assets instead of a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.request_timeout_s = settings.request_timeout_s
    errors.install(app)
    docs.install(app)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            expose_headers=["X-Request-ID", "Retry-After"],
        )
    app.include_router(memories.router)
    app.include_router(messages.router)
    app.include_router(operations.router)
    return app
