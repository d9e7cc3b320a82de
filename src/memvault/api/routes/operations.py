"""Operations: liveness, readiness, Prometheus metrics, and the tenant's job queue (admin)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from memvault.admin import AsyncAdmin
from memvault.api.deps import AdminMemory
from memvault.api.schemas import V1_ERRORS
from memvault.models import EmbeddingJob

router = APIRouter(tags=["operations"])


class JobPage(BaseModel):
    results: list[EmbeddingJob]


class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    checks: dict[str, Check]


@router.get("/health")
async def health() -> dict[str, str]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@router.get("/ready", responses={503: {"model": Readiness}})
async def ready(request: Request) -> JSONResponse:
    """Readiness: the embedding model is loaded, the database answers, its schema is current,
    and a worker is alive."""
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


@router.get("/metrics", response_class=Response)
async def metrics() -> Response:
    """Prometheus metrics: request latency per route, queue depth, job outcomes, embedding
    cache hits and misses, provider and LLM fallbacks, memories stored, store outages.

    Answered from memory, never from the database: queue gauges are refreshed in the
    background, so a hung store cannot hang the scrape that should show it."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


@router.get("/v1/admin/jobs", responses=V1_ERRORS)
async def tenant_jobs(
    request: Request,
    memory: AdminMemory,
    status: Annotated[Literal["queued", "processing", "done", "failed"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> JobPage:
    """This tenant's embedding jobs, most recently changed first (admin scope)."""
    admin: AsyncAdmin = request.app.state.admin
    found = await admin.list_jobs(tenant_id=memory.tenant_id, status=status, limit=limit)
    return JobPage(results=found)


@router.post("/v1/admin/jobs/retry", responses=V1_ERRORS)
async def retry_tenant_jobs(request: Request, memory: AdminMemory) -> dict[str, int]:
    """Put this tenant's failed jobs back in the queue (admin scope)."""
    admin: AsyncAdmin = request.app.state.admin
    return {"retried": await admin.retry_jobs(tenant_id=memory.tenant_id)}
