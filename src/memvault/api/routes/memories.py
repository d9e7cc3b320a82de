"""/v1/memories: parse, call the service, shape the answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from memvault.api.deps import ReadMemory, WriteMemory
from memvault.api.schemas import (
    CONFLICT,
    V1_ERRORS,
    DeleteAllParams,
    HistoryPage,
    ListParams,
    Owner,
)
from memvault.models import (
    AddResult,
    BatchRequest,
    BatchResult,
    DeleteResult,
    MemoryInput,
    MemoryPage,
    MemoryRecord,
    MemoryUpdate,
    SearchRequest,
    SearchResult,
)

router = APIRouter(prefix="/v1/memories", tags=["memories"], responses=V1_ERRORS)


Wait = Annotated[bool, Query(description="answer once the memory is searchable")]
Background = Annotated[
    bool, Query(alias="async", description="store now, embed / dedup / enrich in the worker")
]


@router.post("", status_code=status.HTTP_201_CREATED)
async def add_memory(
    body: MemoryInput, memory: WriteMemory, wait: Wait = False, background: Background = False
) -> AddResult:
    (result,) = await memory.add_many([body], wait=wait, background=background)
    return result


@router.post("/batch", status_code=status.HTTP_201_CREATED)
async def add_memories(
    body: BatchRequest, memory: WriteMemory, wait: Wait = False, background: Background = False
) -> BatchResult:
    """Bulk import: one embedding call and one transaction for the whole batch; an invalid
    item fails the batch (nothing stored) and the error names its index."""
    return BatchResult(
        results=await memory.add_many(list(body.memories), wait=wait, background=background)
    )


@router.post("/search")
async def search_memories(body: SearchRequest, memory: ReadMemory) -> SearchResult:
    return await memory.search(**body.model_dump())


@router.get("")
async def list_memories(params: Annotated[ListParams, Query()], memory: ReadMemory) -> MemoryPage:
    return await memory.list(**params.filters())


@router.delete("")
async def delete_all_memories(
    params: Annotated[DeleteAllParams, Query()], memory: WriteMemory
) -> DeleteResult:
    return DeleteResult(deleted=await memory.delete_all(**params.model_dump()))


@router.get("/{memory_id}")
async def get_memory(
    memory_id: str, owner: Annotated[Owner, Query()], memory: ReadMemory
) -> MemoryRecord:
    return await memory.get(memory_id, user_id=owner.user_id)


@router.patch("/{memory_id}", responses=CONFLICT)
async def update_memory(
    memory_id: str, body: MemoryUpdate, owner: Annotated[Owner, Query()], memory: WriteMemory
) -> MemoryRecord:
    return await memory.update(memory_id, user_id=owner.user_id, **body.model_dump())


@router.delete("/{memory_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_memory(
    memory_id: str, owner: Annotated[Owner, Query()], memory: WriteMemory
) -> Response:
    await memory.delete(memory_id, user_id=owner.user_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{memory_id}/history")
async def memory_history(
    memory_id: str, owner: Annotated[Owner, Query()], memory: ReadMemory
) -> HistoryPage:
    return HistoryPage(results=await memory.history(memory_id, user_id=owner.user_id))
