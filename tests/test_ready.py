"""Readiness waits for the embedding model: no request routed by /ready waits for a load."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any

import httpx

from memvault.api import create_app
from memvault.config import Settings
from memvault.embedding import HashEmbedder
from memvault.service import AsyncMemory
from tests.conftest import backend_of
from tests.waiting import wait_for


class GatedEmbedder(HashEmbedder):
    """Hash vectors behind a 'model' that finishes loading when the test opens the gate."""

    def __init__(self) -> None:
        super().__init__(384)
        self.gate = asyncio.Event()
        self.loading = asyncio.Event()  # set when start-up begins loading the model

    async def warm(self) -> None:
        self.loading.set()
        await self.gate.wait()


async def poll(http: httpx.AsyncClient, done: Callable[[dict[str, Any]], bool]) -> httpx.Response:
    async def answered() -> httpx.Response | None:
        response = await http.get("/ready")
        return response if done(response.json()) else None

    return await wait_for(answered, 30, "/ready never got there")


async def test_ready_is_503_until_the_model_is_loaded(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(embedding_provider="hash", run_worker=True)
    memory = await AsyncMemory.open(settings)
    gated = GatedEmbedder()
    backend_of(memory).embeddings.primary = gated
    app = create_app(settings, memory=memory)
    transport = httpx.ASGITransport(app=app)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://memvault") as http,
        ):
            # Everything else ready (the worker has beaten): only the model holds it back.
            waiting = await poll(http, lambda body: body["checks"]["worker"]["ok"])
            assert waiting.status_code == 503
            assert waiting.json()["checks"]["model"] == {
                "ok": False,
                "detail": "loading the embedding model",
            }
            gated.gate.set()
            ready = await poll(http, lambda body: body["status"] == "ready")
            assert ready.status_code == 200
            assert ready.json()["checks"]["model"] == {"ok": True, "detail": "loaded"}
    finally:
        await memory.close()


async def test_the_local_model_is_loaded_at_start(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(run_worker=True)
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://memvault") as http,
    ):
        ready = await poll(http, lambda body: body["status"] == "ready")
        assert ready.status_code == 200
        primary = backend_of(app.state.memory).embeddings.primary
        assert primary.load().encoder.backend == "onnx"


async def test_a_serving_app_sets_start_up_aside_from_the_collector_once_loaded(
    make_settings: Callable[..., Settings],
) -> None:
    """`memvault serve` freezes what start-up made, after the model loads (full collections
    then walk only what requests made); an app built inside another program leaves the
    program's collector alone."""
    settings = make_settings(embedding_provider="hash")
    try:
        for serving in (False, True):
            gc.unfreeze()
            memory = await AsyncMemory.open(settings)
            gated = GatedEmbedder()
            backend_of(memory).embeddings.primary = gated
            app = create_app(settings, memory=memory, serving=serving)
            async with app.router.lifespan_context(app):
                await asyncio.wait_for(gated.loading.wait(), 30)
                assert gc.get_freeze_count() == 0  # the model is still loading
                gated.gate.set()
                await app.state.model_load
                assert (gc.get_freeze_count() > 0) is serving
            await memory.close()
    finally:
        gc.unfreeze()
