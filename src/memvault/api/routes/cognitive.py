"""Cognitive memory over HTTP: conversations, working memory, tool use, strategies, goals,
the profile and ``remember``. Parse, call the service, shape the answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from memvault.api.deps import ReadMemory, WriteMemory
from memvault.api.schemas import CONFLICT, V1_ERRORS
from memvault.cognitive.models import (
    Conversation,
    ConversationPage,
    ConversationStart,
    Goal,
    GoalCompletion,
    GoalInput,
    GoalPage,
    Profile,
    ProfileUpdate,
    Reinforcement,
    RememberRequest,
    Strategy,
    StrategyInput,
    ToolInvocation,
    ToolUse,
    TurnsRequest,
    WorkingContext,
    WorkingValue,
)
from memvault.cognitive.wire import (
    Cleared,
    ContextValue,
    ConversationParams,
    GoalParams,
    OwnerInChannel,
    OwnerParams,
    RememberAnswer,
    StatsParams,
    StrategyPage,
    StrategyParams,
    ToolStatsPage,
    TurnPage,
)
from memvault.lifecycle.models import DeletionReceipt

router = APIRouter(prefix="/v1", tags=["cognitive"], responses=V1_ERRORS)


# --- conversations ------------------------------------------------------------------------------


@router.post("/conversations", status_code=status.HTTP_201_CREATED, responses=CONFLICT)
async def start_conversation(body: ConversationStart, memory: WriteMemory) -> Conversation:
    """Start a conversation ahead of its turns (409 if the user has one by that id)."""
    return await memory.start_conversation(**body.model_dump())


@router.get("/conversations")
async def list_conversations(
    params: Annotated[ConversationParams, Query()], memory: ReadMemory
) -> ConversationPage:
    return ConversationPage(results=await memory.list_conversations(**params.model_dump()))


@router.get("/conversations/{conversation_id}")
async def get_conversation(
    conversation_id: str, owner: Annotated[OwnerParams, Query()], memory: ReadMemory
) -> Conversation:
    return await memory.get_conversation(conversation_id, user_id=owner.user_id)


@router.post(
    "/conversations/{conversation_id}/turns",
    status_code=status.HTTP_201_CREATED,
    deprecated=True,
    summary="Add turns to a conversation (POST /v1/messages does the same)",
)
async def add_turns(
    conversation_id: str,
    body: TurnsRequest,
    memory: WriteMemory,
    wait: Annotated[bool, Query(description="answer once every turn is searchable")] = False,
) -> TurnPage:
    turns = await memory.add_turns(
        conversation_id,
        list(body.turns),
        user_id=body.user_id,
        occurred_at=body.occurred_at,
        wait=wait,
    )
    return TurnPage(results=turns)


@router.delete("/conversations/{conversation_id}")
async def delete_conversation(
    conversation_id: str, owner: Annotated[OwnerParams, Query()], memory: WriteMemory
) -> DeletionReceipt:
    """Delete a conversation from every store: its turns and all derived from them, its tool
    calls, its session's working memory and the conversation; answers the deletion receipt."""
    return await memory.erase_conversation(conversation_id, user_id=owner.user_id)


# --- working memory -----------------------------------------------------------------------------


@router.put("/working/{conversation_id}/context/{key}", status_code=status.HTTP_204_NO_CONTENT)
async def set_context(
    conversation_id: str, key: str, body: WorkingValue, memory: WriteMemory
) -> Response:
    await memory.set_context(
        conversation_id,
        key,
        body.value,
        user_id=body.user_id,
        channel=body.channel,
        ttl_seconds=body.ttl_seconds,
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/working/{conversation_id}/context/{key}")
async def get_context_value(
    conversation_id: str,
    key: str,
    owner: Annotated[OwnerInChannel, Query()],
    memory: ReadMemory,
) -> ContextValue:
    value = await memory.get_context_value(conversation_id, key, **owner.model_dump())
    return ContextValue(key=key, value=value)


@router.delete("/working/{conversation_id}/context/{key}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_context_value(
    conversation_id: str,
    key: str,
    owner: Annotated[OwnerInChannel, Query()],
    memory: WriteMemory,
) -> Response:
    await memory.delete_context_value(conversation_id, key, **owner.model_dump())
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/working/{conversation_id}")
async def get_context(
    conversation_id: str, owner: Annotated[OwnerInChannel, Query()], memory: ReadMemory
) -> WorkingContext:
    return await memory.get_context(conversation_id, **owner.model_dump())


@router.delete("/working/{conversation_id}")
async def clear_session(
    conversation_id: str, owner: Annotated[OwnerInChannel, Query()], memory: WriteMemory
) -> Cleared:
    return Cleared(deleted=await memory.clear_session(conversation_id, **owner.model_dump()))


# --- procedural ---------------------------------------------------------------------------------


@router.post("/tools/invocations", status_code=status.HTTP_201_CREATED)
async def record_tool_use(body: ToolUse, memory: WriteMemory) -> ToolInvocation:
    return await memory.record_tool_use(**body.model_dump())


@router.get("/tools/stats")
async def tool_stats(params: Annotated[StatsParams, Query()], memory: ReadMemory) -> ToolStatsPage:
    return ToolStatsPage(results=await memory.tool_stats(**params.model_dump()))


@router.post("/strategies", status_code=status.HTTP_201_CREATED)
async def learn_strategy(body: StrategyInput, memory: WriteMemory) -> Strategy:
    return await memory.learn_strategy(**body.model_dump())


@router.get("/strategies")
async def find_strategies(
    params: Annotated[StrategyParams, Query()], memory: ReadMemory
) -> StrategyPage:
    return StrategyPage(results=await memory.find_strategies(**params.model_dump()))


@router.post("/strategies/{strategy_id}/reinforce")
async def reinforce_strategy(
    strategy_id: str, body: Reinforcement, memory: WriteMemory
) -> Strategy:
    return await memory.reinforce_strategy(strategy_id, **body.model_dump())


# --- goals --------------------------------------------------------------------------------------


@router.post("/goals", status_code=status.HTTP_201_CREATED)
async def add_goal(body: GoalInput, memory: WriteMemory) -> Goal:
    return await memory.add_goal(**body.model_dump())


@router.get("/goals")
async def list_goals(params: Annotated[GoalParams, Query()], memory: ReadMemory) -> GoalPage:
    return GoalPage(results=await memory.list_goals(**params.model_dump()))


@router.get("/goals/{goal_id}")
async def get_goal(
    goal_id: str, owner: Annotated[OwnerParams, Query()], memory: ReadMemory
) -> Goal:
    return await memory.get_goal(goal_id, user_id=owner.user_id)


@router.post("/goals/{goal_id}/complete")
async def complete_goal(goal_id: str, body: GoalCompletion, memory: WriteMemory) -> Goal:
    return await memory.complete_goal(goal_id, **body.model_dump())


# --- profile and remember -----------------------------------------------------------------------


@router.get("/profile")
async def get_profile(owner: Annotated[OwnerInChannel, Query()], memory: ReadMemory) -> Profile:
    return await memory.get_profile(**owner.model_dump())


@router.patch("/profile")
async def update_profile(body: ProfileUpdate, memory: WriteMemory) -> Profile:
    return await memory.update_profile(**body.model_dump(exclude_unset=True))


@router.post("/remember")
async def remember(body: RememberRequest, memory: ReadMemory) -> RememberAnswer:
    bundle = await memory.remember(**body.model_dump(exclude_none=True))
    return RememberAnswer(**bundle.model_dump(), prompt=bundle.as_prompt())


__all__ = ["router"]
