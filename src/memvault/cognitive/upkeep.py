"""Cognitive memory in the lifecycle: what cleanup does to it, and the ``patterns`` job that
learns strategies from conversations whose tools worked. The scheduler's table
(lifecycle/jobs.py) names both; what deletion removes of cognitive memory is the data
catalogue's (db/catalogue.py, lifecycle/deletion_steps.py).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import timedelta

from memvault.cognitive.payloads import seal_payload
from memvault.cognitive.strategies import STRATEGIES, learned_sequence
from memvault.db import cognitive as db
from memvault.db.cognitive_records import ConversationToolCall
from memvault.db.units import reading, transaction
from memvault.scheduling import Outcome, RunContext, ScheduledJob

# --- cleanup -----------------------------------------------------------------------------------


async def archive_conversations(ctx: RunContext) -> dict[str, int]:
    """Conversations idle past ``conversation_archive_after_days`` are archived (kept, and
    searchable, but out of the default listing)."""
    before = ctx.now - timedelta(days=ctx.settings.conversation_archive_after_days)
    async with transaction(ctx.backend.engine) as conn:
        n = await db.archive_idle_conversations(conn, before, dry_run=ctx.dry_run)
    return {"would_archive" if ctx.dry_run else "archived": n}


async def purge_working_memory(ctx: RunContext) -> dict[str, int]:
    """Expired rows that abandoned sessions left in the UNLOGGED table (Redis expires its own)."""
    async with transaction(ctx.backend.engine) as conn:
        if ctx.dry_run:
            return {"would_purge": await db.count_expired_working(conn, ctx.now)}
        return {"purged": await db.purge_expired_working(conn, ctx.now)}


# --- patterns ----------------------------------------------------------------------------------

Conversation = tuple[str, str, str, str]  # tenant, user, channel, conversation


def worked(calls: list[ConversationToolCall], min_steps: int) -> list[str] | None:
    """The tool sequence a conversation teaches: its successful calls in order (a repeat
    counted once), when there are at least ``min_steps`` and the last call succeeded (a
    conversation that ended in a failure did not work)."""
    sequence = learned_sequence(calls)
    if not calls or not calls[-1].success or len(sequence) < min_steps:
        return None
    return sequence


def description_of(sequence: list[str]) -> str:
    return "Tool sequence that worked: " + " -> ".join(sequence)


async def patterns(ctx: RunContext) -> Outcome:
    """Strategies from the tool sequences of conversations that worked, each sequence learned
    once per conversation (a rerun, or a conversation that did not change, learns nothing)."""
    settings = ctx.settings
    since = ctx.now - timedelta(days=settings.patterns_lookback_days)
    async with reading(ctx.backend.engine) as conn:
        calls = await db.tool_calls_of_recent_conversations(conn, since)
        by_conversation: dict[Conversation, list[ConversationToolCall]] = defaultdict(list)
        for call in calls:
            owner = (call.tenant_id, call.user_id, call.channel, call.conversation_id)
            by_conversation[owner].append(call)
        taught = {
            owner: sequence
            for owner, found in by_conversation.items()
            if (sequence := worked(found, settings.patterns_min_steps)) is not None
        }
        known = await db.learned_sequences(conn, sorted({(t, u, c) for t, u, _, c in taught}))
    new = {
        owner: sequence
        for owner, sequence in sorted(taught.items())
        if (owner[0], owner[1], owner[3], tuple(sequence)) not in known
    }
    if ctx.dry_run:
        return Outcome({"would_learn": len(new), "conversations": len(by_conversation)})
    texts = [description_of(sequence) for sequence in new.values()]
    embedded = await ctx.backend.embeddings.embed_batch(texts) if texts else None
    await ctx.backend.load_tenant_keys({owner[0] for owner in new})
    rows = []
    for (owner, sequence), text, vector in zip(
        new.items(), texts, embedded.vectors if embedded else [], strict=True
    ):
        tenant_id, user_id, channel, conversation_id = owner
        ident = uuid.uuid4()
        payload = {"description": text, "context_pattern": None}
        rows.append(
            {
                "tenant_id": tenant_id,
                "id": ident,
                "user_id": user_id,
                "channel": channel,
                "tool_sequence": sequence,
                "source_conversation_id": conversation_id,
                "model": embedded.model_id if embedded else "",
                "embedding": vector,
                **seal_payload(ctx.backend.keys, STRATEGIES, (tenant_id, ident), payload),
            }
        )
    async with transaction(ctx.backend.engine) as conn:
        for values in rows:
            await db.insert_strategy(conn, values)
    return Outcome(
        {"learned": len(rows), "conversations": len(by_conversation)},
        changed={"learned": len(rows)},
    )


PATTERNS = ScheduledJob(
    "patterns",
    "patterns_interval_s",
    patterns,
    description="strategies from conversations whose tools worked",
)
