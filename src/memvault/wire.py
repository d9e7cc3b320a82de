"""Requests and answers as the HTTP API speaks them and the library does not (query
parameters, pages, counts of cognitive memory and the graph), defined once for the server's
routes and the HTTP client's route table (``memvault.operations``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memvault.cognitive.bundle import MemoryBundle
from memvault.cognitive.kinds import (
    GLOBAL_CHANNEL,
    ConversationTurn,
    GoalStatus,
    Strategy,
    ToolStats,
)
from memvault.graph.views import FactReview
from memvault.models import Entity, Fact


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OwnerInChannel(_Params):
    user_id: str
    channel: str = GLOBAL_CHANNEL


class ConversationParams(_Params):
    user_id: str
    channel: str | None = Field(default=None, description="a project lists its own and _global's")
    include_archived: bool = False
    limit: int = Field(default=50, ge=1, le=100)


class OwnerParams(_Params):
    user_id: str


class StrategyParams(OwnerInChannel):
    task: str = Field(min_length=1, max_length=2_000)
    limit: int = Field(default=5, ge=1, le=100)


class GoalParams(_Params):
    user_id: str
    status: GoalStatus | None = None
    channel: str | None = None
    limit: int = Field(default=100, ge=1, le=1_000)


class StatsParams(_Params):
    user_id: str
    channel: str | None = None


class TurnPage(BaseModel):
    results: list[ConversationTurn]


class ContextValue(BaseModel):
    key: str
    value: Any


class Cleared(BaseModel):
    deleted: int


class StrategyPage(BaseModel):
    results: list[Strategy]


class ToolStatsPage(BaseModel):
    results: list[ToolStats]


class RememberAnswer(MemoryBundle):
    prompt: str = Field(description="bundle.as_prompt(): the block to put before the question")


__all__ = [
    "Cleared",
    "ContextValue",
    "ConversationParams",
    "GoalParams",
    "OwnerInChannel",
    "OwnerParams",
    "RememberAnswer",
    "StatsParams",
    "StrategyPage",
    "StrategyParams",
    "ToolStatsPage",
    "TurnPage",
]


# --- the graph ---------------------------------------------------------------------------------


class FactList(BaseModel):
    results: list[Fact]


class EntityList(BaseModel):
    results: list[Entity]


class ReviewList(BaseModel):
    results: list[FactReview]
