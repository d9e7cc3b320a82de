"""What cognitive memory takes and gives: conversations, working context, tool use,
strategies, goals, profiles and the ``remember()`` bundle's request.

Inputs are strict (unknown fields refused), as the rest of the API's are; every kind carries a
channel, ``_global`` unless a project channel is named.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from memvault import jsonvalues
from memvault.models import (
    Description,
    Identifier,
    Message,
    Metadata,
    Milliseconds,
    Query,
    Timestamp,
    Title,
)


def _storable(value: Any) -> Any:
    """Anything sealed as JSON must come back out through the API: no NaN, NUL, lone
    surrogate or hostile nesting (the rules metadata follows)."""
    jsonvalues.check(value)
    return value


JSONValue = Annotated[Any, AfterValidator(_storable)]
Weight = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]
Text = Annotated[str, AfterValidator(_storable)]

GLOBAL_CHANNEL = "_global"
GoalStatus = Literal["active", "completed", "abandoned", "blocked"]
Kind = Literal["episodic", "facts", "entities", "procedural", "goals", "profile", "working"]
ALL_KINDS: tuple[Kind, ...] = (
    "episodic",
    "facts",
    "entities",
    "procedural",
    "goals",
    "profile",
    "working",
)


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Owned(_Input):
    user_id: Identifier
    channel: Identifier = Field(default=GLOBAL_CHANNEL, description="_global or a project")


# --- episodic ----------------------------------------------------------------------------------


class ConversationStart(_Owned):
    conversation_id: Identifier | None = Field(
        default=None, description="your own id for it (default: a new UUID)"
    )
    title: Title | None = None
    started_at: Timestamp | None = None


class Turn(Message):
    """One turn to store: a message, and which model spoke it (for assistant turns)."""

    model: Identifier | None = None


class TurnsRequest(_Input):
    """Body of POST /v1/conversations/{id}/turns (``add_messages`` under another name)."""

    user_id: Identifier
    turns: list[Turn] = Field(min_length=1)
    occurred_at: Timestamp | None = None


class ConversationTurn(BaseModel):
    index: int
    role: str
    content: str
    memory_id: UUID
    occurred_at: datetime
    token_count: int
    model: str | None
    followed_by: int | None = Field(
        default=None, description="FOLLOWED_BY: the index of the next turn, null for the last"
    )


class RecentTurn(ConversationTurn):
    conversation_id: str
    channel: str


class Conversation(BaseModel):
    id: str = Field(description="the caller's id for it (or the UUID the store gave it)")
    user_id: str
    channel: str
    title: str | None
    turn_count: int = Field(description="turns it holds (a deleted turn is not counted)")
    started_at: datetime
    last_turn_at: datetime | None
    consolidated_at: datetime | None
    consolidated_turns: int = Field(
        default=0,
        description="turns consolidated into the knowledge graph so far (by turn index); the "
        "turns after them wait for the next consolidate run",
    )
    archived: bool
    turns: list[ConversationTurn] | None = None


class ConversationPage(BaseModel):
    results: list[Conversation]


class TurnHit(BaseModel):
    """A memory found by an episodic search, with the conversation it was a turn of."""

    memory_id: UUID
    content: str
    score: float
    channel: str
    occurred_at: datetime
    conversation_id: str | None
    turn_index: int | None
    session_id: str | None = Field(default=None, description="the session its metadata names")
    replaced_by: UUID | None = Field(
        default=None, description="a later memory among the hits that updates this one"
    )


# --- working memory ----------------------------------------------------------------------------


class WorkingValue(_Owned):
    """Body of PUT /v1/working/{conversation_id}/context/{key}."""

    value: JSONValue = None
    ttl_seconds: int | None = Field(default=None, ge=1, le=30 * 86_400)


class WorkingContext(BaseModel):
    user_id: str
    channel: str
    conversation_id: str
    turns: list[dict[str, Any]] = Field(description="the most recent turns, oldest first")
    values: dict[str, Any]
    thoughts: list[str] = Field(description="the thought stack, top last")
    active_goal: str | None


# --- procedural --------------------------------------------------------------------------------


class ToolUse(_Owned):
    """Body of POST /v1/tools/invocations."""

    tool_name: Identifier
    tool_input: JSONValue = None
    tool_output: JSONValue = None
    success: bool
    latency_ms: Milliseconds | None = None
    error: Text | None = Field(default=None, max_length=10_000)
    conversation_id: Identifier | None = None
    turn_index: int | None = Field(default=None, ge=0, le=2**31 - 1)  # an INTEGER column


class ToolInvocation(BaseModel):
    id: UUID
    user_id: str
    channel: str
    conversation_id: str | None
    turn_index: int | None
    tool_name: str
    tool_input: Any
    tool_output: Any
    error: str | None
    success: bool
    latency_ms: float | None
    created_at: datetime
    pii: dict[str, int] = Field(default_factory=dict, description="PII types redacted (counts)")


class ToolStats(BaseModel):
    tool_name: str
    channel: str
    uses: int
    success_rate: float
    avg_latency_ms: float | None


class StrategyInput(_Owned):
    """Body of POST /v1/strategies: learned from a conversation's tool sequence, or given."""

    description: Description
    context_pattern: Text | None = Field(default=None, max_length=2_000)
    conversation_id: Identifier | None = None
    tool_sequence: list[Identifier] | None = Field(default=None, max_length=100)

    @model_validator(mode="after")
    def _a_sequence_source(self) -> StrategyInput:
        if self.conversation_id is None and not self.tool_sequence:
            raise ValueError("give conversation_id (to learn from) or tool_sequence")
        return self


class Strategy(BaseModel):
    id: UUID
    user_id: str
    channel: str
    description: str
    context_pattern: str | None
    tool_sequence: list[str]
    success_count: int
    failure_count: int
    last_used: datetime | None
    created_at: datetime
    similarity: float | None = None
    score: float | None = Field(
        default=None,
        description="similarity x (success + 1) / (success + failure + 2): meaning first, "
        "shrunk toward an even chance until the strategy has a record",
    )


class Reinforcement(_Input):
    user_id: Identifier
    success: bool


# --- goals -------------------------------------------------------------------------------------


class GoalInput(_Owned):
    """Body of POST /v1/goals."""

    description: Description
    priority: int = Field(default=5, ge=1, le=10)
    deadline: Timestamp | None = None
    parent_id: UUID | None = None
    blocked_by: list[UUID] = Field(default=[], max_length=50)


class GoalCompletion(_Input):
    """Body of POST /v1/goals/{id}/complete."""

    user_id: Identifier
    status: Literal["completed", "abandoned"] = "completed"
    result: Text | None = Field(default=None, max_length=10_000)


class Goal(BaseModel):
    id: UUID
    user_id: str
    channel: str
    description: str
    priority: int
    status: GoalStatus = Field(description="blocked while a goal it waits on is unfinished")
    deadline: datetime | None
    parent_id: UUID | None
    blocked_by: list[UUID]
    result: str | None
    created_at: datetime
    completed_at: datetime | None


class GoalPage(BaseModel):
    results: list[Goal]


# --- profile -----------------------------------------------------------------------------------


class ProfileUpdate(_Owned):
    """Body of PATCH /v1/profile: preferences merge key by key (null removes one); expertise
    and style replace what was there."""

    preferences: Metadata | None = None
    expertise: list[Identifier] | None = Field(default=None, max_length=100)
    communication_style: Text | None = Field(default=None, max_length=1_000)


class Profile(BaseModel):
    user_id: str
    channel: str
    preferences: dict[str, Any] = {}
    expertise: list[str] = []
    communication_style: str | None = None
    updated_at: datetime | None = None


# --- remember ----------------------------------------------------------------------------------


class TimeWindow(_Input):
    after: Timestamp | None = None
    before: Timestamp | None = None


class RememberRequest(_Input):
    """Body of POST /v1/remember."""

    query: Query
    user_id: Identifier
    channel: Identifier = GLOBAL_CHANNEL
    conversation_id: Identifier | None = Field(
        default=None, description="adds this session's working context"
    )
    include: list[Kind] | None = Field(default=None, description="kinds to recall; unset: all")
    time_window: TimeWindow | None = None
    reference_time: Timestamp | None = Field(
        default=None, description="when the question is asked, for 'last week' (default: now)"
    )
    budget_tokens: int | None = Field(
        default=None, ge=16, le=100_000, description="unset: MEMVAULT_REMEMBER_BUDGET_TOKENS"
    )
    limit: int = Field(default=10, ge=1, le=50, description="candidates per kind")
    per_conversation: int | None = Field(
        default=None, ge=1, le=50, description="unset: MEMVAULT_REMEMBER_PER_CONVERSATION"
    )
    weights: dict[Kind | Literal["recency"], Weight] | None = Field(
        default=None,
        description="override MEMVAULT_REMEMBER_WEIGHTS per kind (episodic, facts, entities, "
        "procedural, recency)",
    )
    track_access: bool = Field(
        default=True,
        description="count what is recalled as accessed; false for a look that is not a use "
        "(the dashboard's recall debugger)",
    )
