"""The blocking methods of ``Memory``, for type checkers: generated from
``memvault.service.AsyncMemory`` by ``python -m memvault._stubs``; do not
edit. At run time ``derive_blocking`` makes the same methods from the same core."""

import builtins
import collections.abc
import datetime
import typing
import uuid

import memvault.cognitive.bundle
import memvault.cognitive.models
import memvault.graph.models
import memvault.lifecycle.models
import memvault.models

class MemoryMethods:
    def add(
        self,
        /,
        content: builtins.str,
        *,
        wait: builtins.bool = ...,
        background: builtins.bool = ...,
        **fields: typing.Any,
    ) -> memvault.models.AddResult: ...
    def add_fact(
        self,
        subject: builtins.str,
        predicate: builtins.str,
        *,
        user_id: builtins.str,
        object: builtins.str | None = ...,
        value: builtins.str | None = ...,
        valid_from: datetime.datetime | None = ...,
        confidence: builtins.float | None = ...,
        source: builtins.str | None = ...,
        channel: builtins.str | None = ...,
        app_id: builtins.str | None = ...,
    ) -> memvault.models.Fact: ...
    def add_goal(
        self, /, description: builtins.str, **fields: typing.Any
    ) -> memvault.cognitive.models.Goal: ...
    def add_many(
        self,
        items: builtins.list[memvault.models.MemoryInput | builtins.dict[builtins.str, typing.Any]],
        *,
        wait: builtins.bool = ...,
        background: builtins.bool = ...,
    ) -> builtins.list[memvault.models.AddResult]: ...
    def add_messages(
        self,
        /,
        messages: builtins.list[memvault.models.Message | builtins.dict[builtins.str, typing.Any]],
        *,
        wait: builtins.bool = ...,
        **fields: typing.Any,
    ) -> builtins.list[memvault.models.AddResult]: ...
    def add_turns(
        self,
        conversation_id: builtins.str,
        turns: builtins.list[
            memvault.cognitive.models.Turn | builtins.dict[builtins.str, typing.Any]
        ],
        *,
        user_id: builtins.str,
        occurred_at: datetime.datetime | None = ...,
        wait: builtins.bool = ...,
    ) -> builtins.list[memvault.cognitive.models.ConversationTurn]: ...
    def archive_conversation(
        self, conversation_id: builtins.str, *, user_id: builtins.str, archived: builtins.bool = ...
    ) -> memvault.cognitive.models.Conversation: ...
    def audit_log(
        self,
        *,
        user_id: builtins.str | None = ...,
        operation: builtins.str | None = ...,
        since: datetime.datetime | None = ...,
        limit: builtins.int = ...,
    ) -> memvault.lifecycle.models.AuditPage: ...
    def clear_session(
        self, conversation_id: builtins.str, *, user_id: builtins.str, channel: builtins.str = ...
    ) -> builtins.int: ...
    def complete_goal(
        self,
        goal_id: uuid.UUID | builtins.str,
        *,
        user_id: builtins.str,
        status: builtins.str = ...,
        result: builtins.str | None = ...,
    ) -> memvault.cognitive.models.Goal: ...
    def count(self, /, **filters: typing.Any) -> builtins.int: ...
    def delete(self, memory_id: uuid.UUID | builtins.str, *, user_id: builtins.str) -> None: ...
    def delete_all(
        self, *, user_id: builtins.str, app_id: builtins.str | None = ...
    ) -> builtins.int: ...
    def delete_context_value(
        self,
        conversation_id: builtins.str,
        key: builtins.str,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
    ) -> None: ...
    def entities(
        self,
        *,
        user_id: builtins.str,
        q: builtins.str | None = ...,
        type: builtins.str | None = ...,
        limit: builtins.int = ...,
    ) -> builtins.list[memvault.models.Entity]: ...
    def entity(
        self, entity_id: uuid.UUID | builtins.str, *, user_id: builtins.str
    ) -> memvault.graph.models.EntityDetail: ...
    def entity_graph(
        self,
        entity_id: uuid.UUID | builtins.str,
        *,
        user_id: builtins.str,
        depth: builtins.int = ...,
    ) -> memvault.graph.models.GraphView: ...
    def erase(
        self, memory_id: uuid.UUID | builtins.str, *, user_id: builtins.str
    ) -> memvault.lifecycle.models.DeletionReceipt: ...
    def erase_conversation(
        self, conversation_id: builtins.str, *, user_id: builtins.str
    ) -> memvault.lifecycle.models.DeletionReceipt: ...
    def erase_user(
        self, *, user_id: builtins.str, app_id: builtins.str | None = ...
    ) -> memvault.lifecycle.models.DeletionReceipt: ...
    def export_graph(
        self, *, format: builtins.str = ..., user_id: builtins.str | None = ...
    ) -> builtins.dict[builtins.str, builtins.str]: ...
    def export_memories(
        self, *, user_id: builtins.str
    ) -> builtins.list[builtins.dict[builtins.str, typing.Any]]: ...
    def fact_reviews(
        self, *, user_id: builtins.str, limit: builtins.int = ...
    ) -> builtins.list[memvault.graph.models.FactReview]: ...
    def facts(
        self,
        *,
        user_id: builtins.str,
        entity: builtins.str | None = ...,
        predicate: builtins.str | None = ...,
        valid_at: datetime.datetime | None = ...,
        known_at: datetime.datetime | None = ...,
        include_superseded: builtins.bool = ...,
        limit: builtins.int = ...,
    ) -> builtins.list[memvault.models.Fact]: ...
    def find_strategies(
        self,
        task: builtins.str,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
        limit: builtins.int = ...,
    ) -> builtins.list[memvault.cognitive.models.Strategy]: ...
    def flush_audit(self) -> builtins.int: ...
    def get(
        self, memory_id: uuid.UUID | builtins.str, *, user_id: builtins.str
    ) -> memvault.models.MemoryRecord: ...
    def get_context(
        self, conversation_id: builtins.str, *, user_id: builtins.str, channel: builtins.str = ...
    ) -> memvault.cognitive.models.WorkingContext: ...
    def get_context_value(
        self,
        conversation_id: builtins.str,
        key: builtins.str,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
    ) -> typing.Any: ...
    def get_conversation(
        self, conversation_id: builtins.str, *, user_id: builtins.str, turns: builtins.bool = ...
    ) -> memvault.cognitive.models.Conversation: ...
    def get_goal(
        self, goal_id: uuid.UUID | builtins.str, *, user_id: builtins.str
    ) -> memvault.cognitive.models.Goal: ...
    def get_profile(
        self, *, user_id: builtins.str, channel: builtins.str = ...
    ) -> memvault.cognitive.models.Profile: ...
    def health_action(
        self,
        request: memvault.lifecycle.models.HealthActionRequest
        | builtins.dict[builtins.str, typing.Any],
    ) -> memvault.lifecycle.models.HealthActionResult: ...
    def history(
        self, memory_id: uuid.UUID | builtins.str, *, user_id: builtins.str
    ) -> builtins.list[memvault.models.HistoryEntry]: ...
    def import_memories(
        self, lines: builtins.list[typing.Any]
    ) -> builtins.dict[builtins.str, builtins.int]: ...
    def learn_strategy(
        self, /, description: builtins.str, **fields: typing.Any
    ) -> memvault.cognitive.models.Strategy: ...
    def list(self, /, **query: typing.Any) -> memvault.models.MemoryPage: ...
    def list_conversations(
        self,
        *,
        user_id: builtins.str,
        channel: builtins.str | None = ...,
        include_archived: builtins.bool = ...,
        limit: builtins.int = ...,
    ) -> builtins.list[memvault.cognitive.models.Conversation]: ...
    def list_goals(
        self,
        *,
        user_id: builtins.str,
        status: typing.Literal["active", "completed", "abandoned", "blocked"] | None = ...,
        channel: builtins.str | None = ...,
        limit: builtins.int = ...,
    ) -> builtins.list[memvault.cognitive.models.Goal]: ...
    def memory_health(self, *, user_id: builtins.str) -> memvault.lifecycle.models.MemoryHealth: ...
    def merge_entities(
        self,
        entity_id: uuid.UUID | builtins.str,
        *,
        into: uuid.UUID | builtins.str,
        user_id: builtins.str,
    ) -> memvault.graph.models.EntityDetail: ...
    def pop_thought(
        self, conversation_id: builtins.str, *, user_id: builtins.str, channel: builtins.str = ...
    ) -> builtins.str | None: ...
    def promote(
        self, fact_id: uuid.UUID | builtins.str, *, user_id: builtins.str, reason: builtins.str
    ) -> memvault.models.Fact: ...
    def push_thought(
        self,
        conversation_id: builtins.str,
        thought: builtins.str,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
    ) -> builtins.list[builtins.str]: ...
    def recent_turns(
        self,
        *,
        user_id: builtins.str,
        channels: collections.abc.Sequence[builtins.str] | None = ...,
        hours: builtins.float = ...,
        limit: builtins.int = ...,
    ) -> builtins.list[memvault.cognitive.models.RecentTurn]: ...
    def record_tool_use(
        self, /, tool_name: builtins.str, **fields: typing.Any
    ) -> memvault.cognitive.models.ToolInvocation: ...
    def reinforce_strategy(
        self,
        strategy_id: uuid.UUID | builtins.str,
        *,
        user_id: builtins.str,
        success: builtins.bool,
    ) -> memvault.cognitive.models.Strategy: ...
    def remember(
        self, /, query: builtins.str, **fields: typing.Any
    ) -> memvault.cognitive.bundle.MemoryBundle: ...
    def resolve_fact_review(
        self, review_id: uuid.UUID | builtins.str, *, user_id: builtins.str, keep: builtins.str
    ) -> memvault.graph.models.ResolvedReview: ...
    def search(
        self, /, query: builtins.str, **options: typing.Any
    ) -> memvault.models.SearchResult: ...
    def search_turns(
        self,
        query: builtins.str,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
        after: datetime.datetime | None = ...,
        before: datetime.datetime | None = ...,
        conversation_id: builtins.str | None = ...,
        limit: builtins.int = ...,
    ) -> builtins.list[memvault.cognitive.models.TurnHit]: ...
    def set_active_goal(
        self,
        conversation_id: builtins.str,
        goal: builtins.str | None,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
    ) -> None: ...
    def set_context(
        self,
        conversation_id: builtins.str,
        key: builtins.str,
        value: typing.Any,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
        ttl_seconds: builtins.float | None = ...,
    ) -> None: ...
    def split_entity(
        self, entity_id: uuid.UUID | builtins.str, *, user_id: builtins.str
    ) -> memvault.graph.models.EntityDetail: ...
    def start_conversation(
        self,
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
        title: builtins.str | None = ...,
        started_at: datetime.datetime | None = ...,
        conversation_id: builtins.str | None = ...,
    ) -> memvault.cognitive.models.Conversation: ...
    def tool_stats(
        self, *, user_id: builtins.str, channel: builtins.str | None = ...
    ) -> builtins.list[memvault.cognitive.models.ToolStats]: ...
    def update(
        self,
        memory_id: uuid.UUID | builtins.str,
        *,
        user_id: builtins.str,
        content: builtins.str | None = ...,
        metadata: builtins.dict[builtins.str, typing.Any] | None = ...,
    ) -> memvault.models.MemoryRecord: ...
    def update_profile(self, /, **fields: typing.Any) -> memvault.cognitive.models.Profile: ...
    def update_profile_from_facts(
        self,
        facts: collections.abc.Iterable[builtins.tuple[builtins.str, builtins.str, builtins.str]],
        *,
        user_id: builtins.str,
        channel: builtins.str = ...,
    ) -> memvault.cognitive.models.Profile: ...
