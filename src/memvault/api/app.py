"""The FastAPI application: wiring only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.types import ASGIApp

from memvault import __version__
from memvault.api import errors
from memvault.api.limits import PayloadLimitEnvelope
from memvault.api.routes import memories, messages
from memvault.config import Settings
from memvault.service import AsyncMemory


class _MemvaultAPI(FastAPI):
    def build_middleware_stack(self) -> ASGIApp:
        # Outermost, so even FastAPI's own body limiter answers in the error envelope.
        return PayloadLimitEnvelope(super().build_middleware_stack(), self.max_body_size or 0)


def create_app(settings: Settings, *, memory: AsyncMemory | None = None) -> FastAPI:
    """Build the app. With ``memory`` given the caller owns the store; otherwise the app opens
    one from ``settings`` at start-up and closes it at shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if memory is not None:
            app.state.memory = memory
            yield
            return
        opened = await AsyncMemory.open(settings, actor="api")
        app.state.memory = opened
        try:
            yield
        finally:
            await opened.close()

    app = _MemvaultAPI(
        title="memvault",
        version=__version__,
        description="Long-term memory for AI agents.",
        lifespan=lifespan,
        max_body_size=settings.max_body_bytes,
    )
    errors.install(app)
    app.include_router(memories.router)
    app.include_router(messages.router)

    @app.get("/health", tags=["operations"])
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app
