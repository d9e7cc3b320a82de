"""The hand-written handlers: operations that are more than one call of the service (readiness
checks, Prometheus text, whole-tenant work through ``Admin``, a path that answers two service
methods). The operation table (``memvault.operations``) still declares each one's path, scope
and docs and names its handler here; the route is made from both."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import Query, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from memvault.admin import AsyncAdmin
from memvault.api.deps import AdminMemory, WriteMemory
from memvault.lifecycle.reports import DeletionReceipt, DeletionRequest
from memvault.models import EmbeddingJob


class JobPage(BaseModel):
    results: list[EmbeddingJob]


class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    checks: dict[str, Check]


async def health() -> dict[str, str]:
    return {"status": "ok"}


async def ready(request: Request) -> JSONResponse:
    admin: AsyncAdmin = request.app.state.admin
    found = await admin.readiness()
    checks = {"model": _model_check(request.app.state.model_load)}
    checks.update({name: Check(ok=c.ok, detail=c.detail) for name, c in found.items()})
    good = all(c.ok for c in checks.values())
    body = Readiness(status="ready" if good else "not_ready", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if good else 503)


def _model_check(load: asyncio.Task[None]) -> Check:
    if not load.done():
        return Check(ok=False, detail="loading the embedding model")
    if load.cancelled() or load.exception() is not None:
        return Check(ok=False, detail="the embedding model failed to load; see the server log")
    return Check(ok=True, detail="loaded")


async def metrics() -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


async def tenant_jobs(
    request: Request,
    memory: AdminMemory,
    status: Annotated[Literal["queued", "processing", "done", "failed"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> JobPage:
    admin: AsyncAdmin = request.app.state.admin
    found = await admin.list_jobs(tenant_id=memory.tenant_id, status=status, limit=limit)
    return JobPage(results=found)


async def retry_tenant_jobs(request: Request, memory: AdminMemory) -> dict[str, int]:
    admin: AsyncAdmin = request.app.state.admin
    return {"retried": await admin.retry_jobs(tenant_id=memory.tenant_id)}


async def deletions(body: DeletionRequest, memory: WriteMemory) -> DeletionReceipt:
    # One path, two service methods: the body's memory_id picks which.
    if body.memory_id is not None:
        return await memory.erase(body.memory_id, user_id=body.user_id)
    return await memory.erase_user(user_id=body.user_id, app_id=body.app_id)


async def erase_tenant(request: Request, memory: AdminMemory) -> DeletionReceipt:
    admin: AsyncAdmin = request.app.state.admin
    return await admin.erase_tenant(memory.tenant_id, actor=memory.actor)


async def shred_tenant(request: Request, memory: AdminMemory) -> DeletionReceipt:
    admin: AsyncAdmin = request.app.state.admin
    return await admin.shred_tenant(memory.tenant_id, actor=memory.actor)


# What a handler's route needs beyond the table: readiness documents its 503 answer, metrics
# answer Prometheus text rather than JSON.
ROUTE_OPTIONS: dict[str, dict[str, Any]] = {
    "ready": {"responses": {503: {"model": Readiness}}},
    "metrics": {"response_class": Response},
}
