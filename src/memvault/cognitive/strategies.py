"""Procedural memory: what tools were used and how it went, the strategies learned from it,
and per-tool statistics.

Tool inputs and outputs are what an agent saw, so they pass the PII filter before they are
sealed (redacted even where the store's policy would reject a memory: a tool log that cannot be
written is worse than one with a placeholder in it).
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Unpack
from uuid import UUID

from memvault._keywords import StrategyInputKeywords, ToolUseKeywords
from memvault._sync import takes
from memvault.cognitive.identifiers import checked_id, recall_channels
from memvault.cognitive.kinds import (
    GLOBAL_CHANNEL,
    Strategy,
    StrategyInput,
    ToolInvocation,
    ToolStats,
    ToolUse,
)
from memvault.db import cognitive as db
from memvault.db.cognitive_records import ConversationRow, StrategyRow, ToolStep
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.embedding.embedding_service import Embedded
from memvault.errors import InvalidInput, NotFound, PIIRejected
from memvault.language import pii
from memvault.retrieval.search import embed_query
from memvault.validation import parse_id, validated

if TYPE_CHECKING:
    from memvault.context import TenantContext

INVOCATIONS, STRATEGIES = "tool_invocations", "strategies"


def success_weight(success_count: int, failure_count: int) -> float:
    """Laplace's rule of succession: 0.5 with no record, toward the observed rate with one."""
    return (success_count + 1) / (success_count + failure_count + 2)


def strategy_score(similarity: float, success_count: int, failure_count: int) -> float:
    return max(similarity, 0.0) * success_weight(success_count, failure_count)


def scrub(value: Any, policy: str, found: dict[str, int]) -> Any:
    """``value`` with PII in every string redacted (keys and structure kept)."""
    if isinstance(value, str):
        try:
            report = pii.apply_policy(value, "allow" if policy == "allow" else "redact")
        except PIIRejected as exc:  # says where a secret is without giving it: drop the text
            for kind, count in exc.details.get("found", {}).items():
                found[kind] = found.get(kind, 0) + count
            return "[REDACTED]"
        if report.redacted:
            for kind, count in report.found.items():
                found[kind] = found.get(kind, 0) + count
        return report.text
    if isinstance(value, dict):
        return {k: scrub(v, policy, found) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, policy, found) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**8:
        text = scrub(str(value), policy, found)  # a card or phone number sent as a number
        return value if text == str(value) else text
    return value


def learned_sequence(rows: Sequence[ToolStep]) -> builtins.list[str]:
    """The tools that worked, in order, a repeated call counted once."""
    sequence: builtins.list[str] = []
    for row in rows:
        if row.success and (not sequence or sequence[-1] != row.tool_name):
            sequence.append(row.tool_name)
    return sequence


class Strategies:
    """Procedural memory: tool calls and how they went, and the strategies learned from them."""

    def __init__(self, context: TenantContext) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id

    @scoped_to_tenant
    @takes(ToolUse, positional=("tool_name",))
    async def record_tool_use(
        self, /, tool_name: str, **fields: Unpack[ToolUseKeywords]
    ) -> ToolInvocation:
        """Log one tool call (input, output and error PII-filtered and sealed)."""
        use = validated(ToolUse, tool_name=tool_name, **fields)
        found: dict[str, int] = {}
        policy = self._backend.settings.pii_policy
        payload = {
            "input": scrub(use.tool_input, policy, found),
            "output": scrub(use.tool_output, policy, found),
            "error": scrub(use.error, policy, found),
        }
        ident = uuid.uuid4()
        values = {
            "tenant_id": self.tenant_id,
            "id": ident,
            "user_id": use.user_id,
            "channel": use.channel,
            "conversation_id": use.conversation_id,
            "turn_index": use.turn_index,
            "tool_name": use.tool_name,
            "success": use.success,
            "latency_ms": use.latency_ms,
            **self._context.seal_row(INVOCATIONS, (ident,), payload),
        }
        async with transaction(self._backend.engine) as conn:
            if use.conversation_id is not None:
                await self._owned_conversation(conn, use.conversation_id, use.user_id)
            row = await db.insert_invocation(conn, values)
        return ToolInvocation(
            id=row.id,
            user_id=row.user_id,
            channel=row.channel,
            conversation_id=row.conversation_id,
            turn_index=row.turn_index,
            tool_name=row.tool_name,
            tool_input=payload["input"],
            tool_output=payload["output"],
            error=payload["error"],
            success=row.success,
            latency_ms=row.latency_ms,
            created_at=row.created_at,
            pii=found,
        )

    async def _owned_conversation(
        self, conn: Any, conversation_id: str, user_id: str
    ) -> ConversationRow:
        row = await db.fetch_conversation(
            conn, self.tenant_id, conversation_id, user_id, lock=False
        )
        if row is None:
            raise NotFound(
                "No such conversation for this user.", details={"id": str(conversation_id)}
            )
        return row

    @scoped_to_tenant
    async def tool_stats(
        self, *, user_id: str, channel: str | None = None
    ) -> builtins.list[ToolStats]:
        """Usage, success rate and average latency per tool and channel."""
        user_id = checked_id(user_id, "user_id")
        channels = None if channel is None else [checked_id(channel, "channel")]
        async with reading(self._backend.engine) as conn:
            rows = await db.tool_stats(conn, self.tenant_id, user_id, channels)
        return [
            ToolStats(
                tool_name=r.tool_name,
                channel=r.channel,
                uses=r.uses,
                success_rate=float(r.success_rate),
                avg_latency_ms=None if r.avg_latency_ms is None else float(r.avg_latency_ms),
            )
            for r in rows
        ]

    @scoped_to_tenant
    @takes(StrategyInput, positional=("description",))
    async def learn_strategy(
        self, /, description: str, **fields: Unpack[StrategyInputKeywords]
    ) -> Strategy:
        """Keep a strategy: the tool sequence of a conversation (its successful calls, in
        order) or one given, described for later tasks to find by meaning."""
        given = validated(StrategyInput, description=description, **fields)
        sequence = list(given.tool_sequence or [])
        async with reading(self._backend.engine) as conn:
            if given.conversation_id is not None:
                await self._owned_conversation(conn, given.conversation_id, given.user_id)
                rows = await db.conversation_tools(
                    conn, self.tenant_id, given.user_id, given.conversation_id
                )
                sequence = sequence or learned_sequence(list(rows))
        if not sequence:
            raise InvalidInput(
                "The conversation has no successful tool calls to learn from.",
                details={"field": "conversation_id"},
            )
        text = given.description + (f"\n{given.context_pattern}" if given.context_pattern else "")
        embedded = await self._backend.embeddings.embed_batch([text])
        ident = uuid.uuid4()
        payload = {"description": given.description, "context_pattern": given.context_pattern}
        values = {
            "tenant_id": self.tenant_id,
            "id": ident,
            "user_id": given.user_id,
            "channel": given.channel,
            "tool_sequence": sequence,
            "source_conversation_id": given.conversation_id,
            "model": embedded.model_id,
            "embedding": embedded.vectors[0],
            **self._context.seal_row(STRATEGIES, (ident,), payload),
        }
        async with transaction(self._backend.engine) as conn:
            row = await db.insert_strategy(conn, values)
        return strategy_of(self._context, row)

    @scoped_to_tenant
    async def find_strategies(
        self, task: str, *, user_id: str, channel: str = GLOBAL_CHANNEL, limit: int = 5
    ) -> builtins.list[Strategy]:
        """Strategies for ``task``, best first by ``score = similarity x (s + 1) / (s + f + 2)``
        (s, f: successes and failures), from this channel and _global."""
        user_id = checked_id(user_id, "user_id")
        if not task.strip() or not 1 <= limit <= 100:
            raise InvalidInput("Give a task and a limit of 1 to 100.", details={"field": "task"})
        embedded = await embed_query(self._backend, task)
        if embedded is None:  # no model could embed the task: nothing to compare by meaning
            return []
        return await strategies_near(self._context, embedded, user_id, channel, limit)

    @scoped_to_tenant
    async def reinforce_strategy(
        self, strategy_id: UUID | str, *, user_id: str, success: bool
    ) -> Strategy:
        ident = parse_id(strategy_id, field="strategy_id")
        user_id = checked_id(user_id, "user_id")
        async with transaction(self._backend.engine) as conn:
            row = await db.reinforce_strategy(
                conn, self.tenant_id, ident, user_id, success, datetime.now(UTC)
            )
        if row is None:
            raise NotFound("No such strategy for this user.", details={"id": str(ident)})
        return strategy_of(self._context, row)


async def strategies_near(
    context: TenantContext, embedded: Embedded, user_id: str, channel: str, limit: int
) -> list[Strategy]:
    """The user's strategies nearest a task's embedding, best first by score."""
    async with reading(context.backend.engine) as conn:
        rows = await db.nearest_strategies(
            conn,
            context.tenant_id,
            user_id,
            recall_channels(channel),
            embedded.model_id,
            embedded.vectors[0],
            max(4 * limit, 20),
        )
    # Ranked on the plain columns: only the strategies kept are opened.
    ranked = sorted(
        rows,
        key=lambda r: (
            -strategy_score(float(r.similarity), r.success_count, r.failure_count),
            str(r.id),
        ),
    )
    return [strategy_of(context, r, similarity=float(r.similarity)) for r in ranked[:limit]]


def strategy_of(
    context: TenantContext, row: StrategyRow, *, similarity: float | None = None
) -> Strategy:
    """A strategy row, opened."""
    payload = context.open_row(STRATEGIES, (row.id,), row)
    return Strategy(
        id=row.id,
        user_id=row.user_id,
        channel=row.channel,
        description=payload["description"],
        context_pattern=payload.get("context_pattern"),
        tool_sequence=list(row.tool_sequence),
        success_count=row.success_count,
        failure_count=row.failure_count,
        last_used=row.last_used,
        created_at=row.created_at,
        similarity=similarity,
        score=None
        if similarity is None
        else strategy_score(similarity, row.success_count, row.failure_count),
    )
