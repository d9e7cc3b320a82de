"""The keywords of the methods that take a model's fields (``takes``), one TypedDict
per model: its fields less the parameters those methods name, with the model's types.
Generated from the models by ``python -m memvault._stubs``; do not edit. Such a
method annotates its ``**fields`` with ``Unpack[<Model>Keywords]``, so the type
checker refuses a misspelt keyword in its source and on every face."""

# ruff: noqa: E501
# fmt: off

from __future__ import annotations

import builtins
import datetime
import typing
import uuid

if typing.TYPE_CHECKING:
    import memvault.cognitive.kinds


class GoalInputKeywords(typing.TypedDict, total=False):
    """``memvault.cognitive.kinds.GoalInput``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    channel: builtins.str | None
    priority: builtins.int | None
    deadline: datetime.datetime | None
    parent_id: uuid.UUID | builtins.str | None
    blocked_by: builtins.list[uuid.UUID | builtins.str] | None


class MemoryFilterKeywords(typing.TypedDict, total=False):
    """``memvault.models.MemoryFilter``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    app_id: builtins.str | None
    project_id: builtins.str | None
    environment: builtins.str | None
    channel: builtins.str | None
    source: builtins.str | None
    tags: builtins.list[builtins.str] | None
    metadata: builtins.dict[builtins.str, typing.Any] | None
    created_after: datetime.datetime | None
    created_before: datetime.datetime | None
    tags_any: builtins.list[builtins.str] | None
    categories: builtins.list[builtins.str] | None
    memory_type: typing.Literal['persistent', 'temporal'] | None
    tier: typing.Literal['hot', 'warm', 'cold'] | None
    min_importance: builtins.int | None
    occurred_after: datetime.datetime | None
    occurred_before: datetime.datetime | None
    channels: builtins.list[builtins.str] | None


class MemoryInputKeywords(typing.TypedDict, total=False):
    """``memvault.models.MemoryInput``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    app_id: builtins.str | None
    project_id: builtins.str | None
    environment: builtins.str | None
    channel: builtins.str | None
    source: builtins.str | None
    tags: builtins.list[builtins.str] | None
    metadata: builtins.dict[builtins.str, typing.Any] | None
    occurred_at: datetime.datetime | None
    expires_at: datetime.datetime | None
    infer: builtins.bool | None
    pii_policy: typing.Literal['redact', 'reject', 'allow'] | None
    index_text: builtins.str | None


class MemoryQueryKeywords(typing.TypedDict, total=False):
    """``memvault.models.MemoryQuery``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    app_id: builtins.str | None
    project_id: builtins.str | None
    environment: builtins.str | None
    channel: builtins.str | None
    source: builtins.str | None
    tags: builtins.list[builtins.str] | None
    metadata: builtins.dict[builtins.str, typing.Any] | None
    created_after: datetime.datetime | None
    created_before: datetime.datetime | None
    tags_any: builtins.list[builtins.str] | None
    categories: builtins.list[builtins.str] | None
    memory_type: typing.Literal['persistent', 'temporal'] | None
    tier: typing.Literal['hot', 'warm', 'cold'] | None
    min_importance: builtins.int | None
    occurred_after: datetime.datetime | None
    occurred_before: datetime.datetime | None
    channels: builtins.list[builtins.str] | None
    limit: builtins.int | None
    cursor: builtins.str | None


class MessagesRequestKeywords(typing.TypedDict, total=False):
    """``memvault.models.MessagesRequest``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    app_id: builtins.str | None
    channel: builtins.str | None
    conversation_id: builtins.str | None
    session_id: builtins.str | None
    title: builtins.str | None
    occurred_at: datetime.datetime | None
    infer: builtins.bool | None
    first_turn: builtins.int | None


class ProfileUpdateKeywords(typing.TypedDict, total=False):
    """``memvault.cognitive.kinds.ProfileUpdate``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    channel: builtins.str | None
    preferences: builtins.dict[builtins.str, typing.Any] | None
    expertise: builtins.list[builtins.str] | None
    communication_style: builtins.str | None


class RememberRequestKeywords(typing.TypedDict, total=False):
    """``memvault.cognitive.kinds.RememberRequest``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    channel: builtins.str | None
    conversation_id: builtins.str | None
    include: builtins.list[typing.Literal['episodic', 'facts', 'entities', 'procedural', 'goals', 'profile', 'working']] | None
    time_window: memvault.cognitive.kinds.TimeWindow | None
    reference_time: datetime.datetime | None
    budget_tokens: builtins.int | None
    limit: builtins.int | None
    per_conversation: builtins.int | None
    weights: builtins.dict[typing.Literal['episodic', 'facts', 'entities', 'procedural', 'goals', 'profile', 'working'] | typing.Literal['recency'], builtins.float] | None
    track_access: builtins.bool | None


class SearchRequestKeywords(typing.TypedDict, total=False):
    """``memvault.models.SearchRequest``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    app_id: builtins.str | None
    project_id: builtins.str | None
    environment: builtins.str | None
    channel: builtins.str | None
    source: builtins.str | None
    tags: builtins.list[builtins.str] | None
    metadata: builtins.dict[builtins.str, typing.Any] | None
    created_after: datetime.datetime | None
    created_before: datetime.datetime | None
    tags_any: builtins.list[builtins.str] | None
    categories: builtins.list[builtins.str] | None
    memory_type: typing.Literal['persistent', 'temporal'] | None
    tier: typing.Literal['hot', 'warm', 'cold'] | None
    min_importance: builtins.int | None
    occurred_after: datetime.datetime | None
    occurred_before: datetime.datetime | None
    channels: builtins.list[builtins.str] | None
    limit: builtins.int | None
    min_relevance: builtins.float | None
    recipe: typing.Literal['hybrid', 'vector', 'keyword', 'recent'] | None
    reference_time: datetime.datetime | None
    time_mode: typing.Literal['boost', 'filter', 'off'] | None
    expand: builtins.bool | None
    hyde: builtins.bool | None
    self_query: builtins.bool | None
    fact_keys: builtins.bool | None
    context_window: builtins.int | None
    track_access: builtins.bool | None
    include: builtins.list[typing.Literal['facts', 'entities']] | None


class StrategyInputKeywords(typing.TypedDict, total=False):
    """``memvault.cognitive.kinds.StrategyInput``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    channel: builtins.str | None
    context_pattern: builtins.str | None
    conversation_id: builtins.str | None
    tool_sequence: builtins.list[builtins.str] | None


class ToolUseKeywords(typing.TypedDict, total=False):
    """``memvault.cognitive.kinds.ToolUse``'s fields taken as keywords."""

    user_id: typing.Required[builtins.str]
    channel: builtins.str | None
    tool_input: typing.Any
    tool_output: typing.Any
    success: typing.Required[builtins.bool]
    latency_ms: builtins.float | None
    error: builtins.str | None
    conversation_id: builtins.str | None
    turn_index: builtins.int | None
