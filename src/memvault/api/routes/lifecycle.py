"""Lifecycle and audit: the audit log (admin), deletions with receipts, memory health and its
actions, a tenant's erasure (admin), export and import."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request

from memvault.admin import AsyncAdmin
from memvault.api.deps import AdminMemory, ReadMemory, WriteMemory
from memvault.api.schemas import CONFLICT, V1_ERRORS, Owner
from memvault.lifecycle.models import (
    AuditPage,
    AuditQuery,
    DeletionReceipt,
    DeletionRequest,
    ExportPage,
    HealthActionRequest,
    HealthActionResult,
    ImportRequest,
    MemoryHealth,
)

router = APIRouter(prefix="/v1", tags=["lifecycle"], responses=V1_ERRORS)


@router.get("/audit")
async def audit_log(params: Annotated[AuditQuery, Query()], memory: AdminMemory) -> AuditPage:
    """This tenant's audit log, newest first (admin scope)."""
    since: datetime | None = params.since
    return await memory.audit_log(
        user_id=params.user_id, operation=params.operation, since=since, limit=params.limit
    )


@router.post("/deletions")
async def delete_with_receipt(body: DeletionRequest, memory: WriteMemory) -> DeletionReceipt:
    """Delete a memory, or all of a user's, from every store; answers the deletion receipt."""
    if body.memory_id is not None:
        return await memory.erase(body.memory_id, user_id=body.user_id)
    return await memory.erase_user(user_id=body.user_id, app_id=body.app_id)


@router.delete("/admin/tenant")
async def erase_tenant(request: Request, memory: AdminMemory) -> DeletionReceipt:
    """Erase the caller's whole tenant — memories, history, audit, API keys (admin scope)."""
    admin: AsyncAdmin = request.app.state.admin
    return await admin.erase_tenant(memory.tenant_id, actor=memory.actor)


@router.post("/admin/tenant/shred", responses=CONFLICT)
async def shred_tenant(request: Request, memory: AdminMemory) -> DeletionReceipt:
    """Crypto-shred the caller's tenant: destroy its data key, then erase it as
    `DELETE /v1/admin/tenant` does (admin scope; 409 unless per-tenant keys are on)."""
    admin: AsyncAdmin = request.app.state.admin
    return await admin.shred_tenant(memory.tenant_id, actor=memory.actor)


@router.get("/health/memory")
async def memory_health(owner: Annotated[Owner, Query()], memory: ReadMemory) -> MemoryHealth:
    """What this user's memories need, each finding with its recommended action."""
    return await memory.memory_health(user_id=owner.user_id)


@router.post("/health/memory/actions")
async def memory_health_action(
    body: HealthActionRequest, memory: WriteMemory
) -> HealthActionResult:
    """Act on a health finding (merge, archive, delete, retry_jobs) via the write path."""
    return await memory.health_action(body)


@router.get("/export")
async def export_memories(owner: Annotated[Owner, Query()], memory: ReadMemory) -> ExportPage:
    """Every memory of a user with its history and vectors, in the import format."""
    return ExportPage(results=await memory.export_memories(user_id=owner.user_id))


@router.post("/import")
async def import_memories(body: ImportRequest, memory: WriteMemory) -> dict[str, int]:
    """Load exported memories (ids, history and vectors kept); ids already here are skipped."""
    return await memory.import_memories(body.memories)
