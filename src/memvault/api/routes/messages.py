"""/v1/messages: remember a conversation turn by turn."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from memvault.api.deps import WriteMemory
from memvault.api.schemas import V1_ERRORS
from memvault.models import BatchResult, MessagesRequest

router = APIRouter(prefix="/v1/messages", tags=["messages"], responses=V1_ERRORS)


@router.post("", status_code=status.HTTP_201_CREATED)
async def add_messages(
    body: MessagesRequest,
    memory: WriteMemory,
    wait: Annotated[bool, Query(description="answer once every turn is searchable")] = False,
) -> BatchResult:
    """One memory per turn, with role, speaker, session and turn index in its metadata."""
    turns = body.model_dump(exclude={"messages"})
    results = await memory.add_messages(list(body.messages), wait=wait, **turns)
    return BatchResult(results=results)
