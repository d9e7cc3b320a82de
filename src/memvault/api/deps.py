"""Dependencies shared by routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from memvault.service import AsyncMemory


def get_memory(request: Request) -> AsyncMemory:
    memory: AsyncMemory = request.app.state.memory
    return memory


MemoryDep = Annotated[AsyncMemory, Depends(get_memory)]
