"""The FastAPI application: wiring only."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from memvault import __version__
from memvault.admin import AsyncAdmin
from memvault.api import docs, error_envelope, gauges
from memvault.api.limits import PayloadLimitEnvelope
from memvault.api.observe import RequestContext
from memvault.api.ratelimit import RateLimiter
from memvault.api.read_your_writes import ReadYourWrites
from memvault.api.routes import api_routes
from memvault.config import Settings
from memvault.consistency import READ_AFTER_HEADER, WRITTEN_HEADER
from memvault.paths import EncodedSlashes
from memvault.service import AsyncMemory
from memvault.ui import install as install_dashboard

log = logging.getLogger(__name__)


class _MemvaultAPI(FastAPI):
    request_timeout_s: float = 60.0

    def build_middleware_stack(self) -> ASGIApp:
        # Outermost, so even FastAPI's own body limiter answers in the error envelope, and
        # every response (errors included) carries a request id and is timed and logged.
        inner = PayloadLimitEnvelope(super().build_middleware_stack(), self.max_body_size or 0)
        return RequestContext(inner, self.request_timeout_s)


@asynccontextmanager
async def _gauges(admin: AsyncAdmin) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(gauges.keep_fresh(admin, stop), name="memvault-gauges")
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)


def _load_model(admin: AsyncAdmin, *, then_freeze: bool) -> asyncio.Task[None]:
    """Load the embedding model in a thread while the server starts answering: /ready says
    503 until it is in memory, so no request routed by readiness waits seconds for it."""

    async def load() -> None:
        try:
            await admin.warm_model()
        finally:
            if then_freeze:
                freeze_start_up()

    task = asyncio.create_task(load(), name="memvault-model-load")
    task.add_done_callback(_log_model_load)
    return task


def freeze_start_up() -> None:
    """Set what a started server holds (the app, the model and its tokenizer: some 200,000
    objects) aside from the garbage collector, whose full collections then walk only what
    requests made: in-process at 10,000 memories, one full collection paused remember() for
    97 ms about once in 100 calls. A server's choice, not a library's: frozen objects are never
    collected, which a host process that builds and drops apps should not be made to keep."""
    gc.collect()
    gc.freeze()


def _log_model_load(task: asyncio.Task[None]) -> None:
    if task.cancelled():
        return
    if (exc := task.exception()) is not None:
        log.error("embedding model failed to load: %s", type(exc).__name__)
    else:
        log.info("embedding model loaded")


def create_app_from_env() -> FastAPI:
    """The app from ``MEMVAULT_*`` environment variables: what each process of
    ``memvault serve --workers N`` imports (``uvicorn --factory``)."""
    return create_app(Settings(), serving=True)


def create_app(
    settings: Settings, *, memory: AsyncMemory | None = None, serving: bool = False
) -> FastAPI:
    """Build the app. With ``memory`` given the caller owns the store; otherwise the app opens
    one from ``settings`` at start-up and closes it at shutdown. ``serving``: the app is the
    process (``memvault serve``), which then freezes what start-up made (``freeze_start_up``)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened = memory if memory is not None else await AsyncMemory.open(settings, actor="api")
        admin = AsyncAdmin.of(opened)
        redis_url = settings.redis_url.get_secret_value() if settings.redis_url else None
        limiter = RateLimiter(
            settings.rate_limit_per_s,
            settings.rate_limit_burst,
            redis_url,
            shared=admin.take_rate_token,
        )
        app.state.memory, app.state.admin, app.state.rate_limiter = opened, admin, limiter
        # Its own buckets (their keys start ui-sign-in:), a minute's failures at a time.
        per_min = settings.ui_sign_in_failures_per_min
        sign_ins = RateLimiter(
            per_min / 60, max(per_min, 1), redis_url, shared=admin.take_rate_token
        )
        app.state.sign_in_limiter = sign_ins
        app.state.model_load = _load_model(admin, then_freeze=serving)
        try:
            async with _gauges(admin):
                yield
        finally:
            app.state.model_load.cancel()
            await limiter.aclose()
            await sign_ins.aclose()
            await app.state.ui_sessions.aclose()
            if memory is None:
                await opened.close()

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
        # FastAPI traces through the process's global OpenTelemetry provider when a host
        # application has set one, naming the raw path and query (user ids, filters) and
        # logging validation errors with their input: memvault's own request span
        # (api/observe.py, memvault/tracing.py) replaces it.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.request_timeout_s = settings.request_timeout_s
    error_envelope.install(app)
    docs.install(app)
    # A request's consistency token holds for all it reads, and an answer names the primary's
    # position it leaves; inside CORS, whose headers a refused token's answer carries too.
    app.add_middleware(ReadYourWrites, state=app.state)
    # An id holding "/" arrives as %2F and must stay one path segment (paths.py).
    app.add_middleware(EncodedSlashes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID", READ_AFTER_HEADER],
            expose_headers=["X-Request-ID", "Retry-After", WRITTEN_HEADER],
        )
    app.router.routes.extend(api_routes())
    install_dashboard(app)
    return app
