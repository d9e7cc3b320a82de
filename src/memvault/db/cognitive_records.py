"""What ``db/cognitive.py`` hands back: one frozen record per shape of row, built the way
``db/records.py`` builds its own (by column name), so cognitive/ reads typed fields.

A sibling module rather than more classes in ``records.py``: cognitive memory's shapes are its
own, and they change with it. Content stays sealed: ciphertext, nonce and key id, never text.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from uuid import UUID

from memvault.db.records import _Record


@dataclasses.dataclass(frozen=True, slots=True)
class ConversationRow(_Record):
    """A row of ``conversations``; the payload holds the title."""

    tenant_id: str
    id: str
    user_id: str
    channel: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    turn_count: int
    started_at: datetime
    last_turn_at: datetime | None
    consolidated_at: datetime | None
    consolidated_turns: int
    archived: bool
    turns_present: int  # turns there now (deleted ones are not)


@dataclasses.dataclass(frozen=True, slots=True)
class TurnRow(_Record):
    """A row of ``conversation_turns``: order and provenance, no words."""

    tenant_id: str
    conversation_id: str
    turn_index: int
    user_id: str
    channel: str
    memory_id: UUID
    role: str
    model: str | None
    token_count: int
    occurred_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class TurnWithContent(TurnRow):
    """A turn with its memory's sealed content (bound to the memory, as every memory's is)."""

    ciphertext: bytes
    nonce: bytes
    key_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class WorkingRow(_Record):
    """A row of ``working_memory`` (the store without Redis)."""

    tenant_id: str
    user_id: str
    channel: str
    conversation_id: str
    slot: str
    key: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    expires_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class ToolInvocationRow(_Record):
    """A row of ``tool_invocations``; the payload holds input, output and error."""

    tenant_id: str
    id: UUID
    user_id: str
    channel: str
    conversation_id: str | None
    turn_index: int | None
    tool_name: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    success: bool
    latency_ms: float | None
    created_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class ToolStep(_Record):
    """One tool call of a conversation, in order: what a strategy's sequence is learned from."""

    tool_name: str
    success: bool


@dataclasses.dataclass(frozen=True, slots=True)
class ConversationToolCall(ToolStep):
    """One tool call with the conversation and owner it belongs to (the patterns job)."""

    tenant_id: str
    user_id: str
    channel: str
    conversation_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class ToolStatRow(_Record):
    """Per tool and channel: how often it ran, how often it worked, how long it took."""

    tool_name: str
    channel: str
    uses: int
    success_rate: float
    avg_latency_ms: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class StrategyRow(_Record):
    """A row of ``strategies``; the payload holds description and context pattern."""

    tenant_id: str
    id: UUID
    user_id: str
    channel: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    tool_sequence: list[str]
    source_conversation_id: str | None
    success_count: int
    failure_count: int
    last_used: datetime | None
    model: str
    created_at: datetime  # the vector stays in the database: nothing reads it back


@dataclasses.dataclass(frozen=True, slots=True)
class RankedStrategy(StrategyRow):
    """A strategy with its cosine similarity to the query (nearest first)."""

    similarity: float


@dataclasses.dataclass(frozen=True, slots=True)
class GoalRow(_Record):
    """A row of ``goals`` with its blockers: all of them, and those still open."""

    tenant_id: str
    id: UUID
    user_id: str
    channel: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    priority: int
    status: str
    deadline: datetime | None
    parent_id: UUID | None
    created_at: datetime
    completed_at: datetime | None
    open_blockers: list[UUID]
    blocked_by: list[UUID]


@dataclasses.dataclass(frozen=True, slots=True)
class ProfileRow(_Record):
    """A row of ``user_profiles``; the payload holds preferences, expertise and style."""

    tenant_id: str
    user_id: str
    channel: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    updated_at: datetime


__all__ = [
    "ConversationRow",
    "ConversationToolCall",
    "GoalRow",
    "ProfileRow",
    "RankedStrategy",
    "StrategyRow",
    "ToolInvocationRow",
    "ToolStatRow",
    "ToolStep",
    "TurnRow",
    "TurnWithContent",
    "WorkingRow",
]
