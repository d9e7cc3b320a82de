"""Cognitive memory in the lifecycle: what deletion removes of it, what cleanup does to it, and
the ``patterns`` job that learns strategies from conversations whose tools worked.

Everything joins through the lifecycle's registries (``DERIVED``/``OUTSIDE`` in deletion,
``CLEANUP_STEPS`` and ``schedule.register`` in jobs), filled when this module is imported;
``runtime.py`` (which builds every backend) imports it, so every path that can delete or
run a job has them.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import timedelta
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.cognitive.procedural import STRATEGIES, learned_sequence
from memvault.cognitive.sealed import seal_payload
from memvault.cognitive.session import TURNS
from memvault.cognitive.working import RedisWorkingStore, WorkingMemory, list_of, open_store
from memvault.db import cognitive as db
from memvault.db.cognitive_records import ConversationToolCall
from memvault.db.tables import conversation_turns, conversations, tool_invocations, working_memory
from memvault.lifecycle.deletion import InStore, Targets, register_derived, register_outside
from memvault.lifecycle.jobs import CLEANUP_STEPS
from memvault.lifecycle.schedule import Outcome, RunContext, ScheduledJob, register
from memvault.models import TURN_SOURCE

if TYPE_CHECKING:
    from memvault.backend import Backend


# --- deletion ----------------------------------------------------------------------------------


def _owner(targets: Targets) -> tuple[bool, str | None]:
    """Whether this deletion takes cognitive rows at all, and whose (None: the tenant's).
    Cognitive rows belong to a user, not to an app, so erasing one app's memories keeps them."""
    if targets.scope == "tenant":
        return True, None
    if targets.scope == "user" and targets.whole_user:
        return True, targets.user_id
    return False, None


# The tables whose rows one conversation owns beyond its turns (a conversation's deletion).
_OF_A_CONVERSATION = (conversations, tool_invocations, working_memory)


def _owned_rows(table: sa.Table) -> InStore:
    async def delete(conn: AsyncConnection, targets: Targets) -> int:
        takes, user_id = _owner(targets)
        conversation = targets.conversation_id
        if conversation is not None and targets.user_id is not None:
            if table not in _OF_A_CONVERSATION:
                return (
                    0
                    if table is not conversation_turns
                    else await db.delete_turns_of(conn, targets.tenant_id, targets.ids)
                )
            return await db.delete_conversation_rows(
                conn, table, targets.tenant_id, targets.user_id, conversation
            )
        if table is conversation_turns:
            # A deleted memory's turn goes whatever the scope: its words were that memory.
            gone = await db.delete_turns_of(conn, targets.tenant_id, targets.ids)
            return gone + (
                await db.delete_owned(conn, table, targets.tenant_id, user_id) if takes else 0
            )
        if not takes:
            return 0
        return await db.delete_owned(conn, table, targets.tenant_id, user_id)

    return delete


async def _redis_working_memory(backend: Backend, targets: Targets) -> int:
    takes, user_id = _owner(targets)
    whole_session = targets.conversation_id is not None and targets.user_id is not None
    if not (takes or whole_session) or backend.settings.redis_url is None:
        return 0
    if backend.working is None:
        backend.working = open_store(backend.settings, backend.engine)
    store = backend.working
    if not isinstance(store, RedisWorkingStore):
        return 0
    if whole_session:
        assert targets.user_id is not None and targets.conversation_id is not None
        return await store.forget_conversation(
            targets.tenant_id, targets.user_id, targets.conversation_id
        )
    return await store.forget(targets.tenant_id, user_id)


async def _deleted_turns_in_sessions(backend: Backend, targets: Targets) -> int:
    """A deleted turn's words leave its session's working memory as well (an erased user's
    or tenant's sessions go whole, by the steps above)."""
    takes, _ = _owner(targets)
    if targets.conversation_id is not None:  # the whole session goes (the steps above)
        return 0
    sessions: dict[tuple[str, str, str], set[int]] = defaultdict(set)
    for row in targets.rows:
        session, turn = row.metadata.get("session_id"), row.metadata.get("turn")
        if row.source == TURN_SOURCE and isinstance(session, str) and isinstance(turn, int):
            sessions[(row.user_id, row.channel, session)].add(turn)
    if takes or not sessions:
        return 0
    settings = backend.settings
    if backend.working is None:
        backend.working = open_store(settings, backend.engine)
    working = WorkingMemory(
        backend.working,
        backend.keys,
        ttl_s=settings.working_ttl_s,
        max_turns=settings.working_max_turns,
        max_thoughts=settings.working_max_thoughts,
    )
    removed = 0
    for session, gone in sessions.items():
        held = list_of(await working.read(targets.tenant_id, session, TURNS, ""), TURNS)
        kept = [t for t in held if not (isinstance(t, dict) and t.get("index") in gone)]
        if len(kept) == len(held):
            continue
        removed += len(held) - len(kept)
        if kept:
            await working.put(targets.tenant_id, session, TURNS, "", kept)
        else:
            await working.store.delete(targets.tenant_id, session, TURNS, "")
    return removed


for _table in db.OWNED_TABLES:
    register_derived(_table.name, _owned_rows(_table))
register_outside("working_memory_redis", _redis_working_memory)
register_outside("working_memory_turns", _deleted_turns_in_sessions)


# --- cleanup -----------------------------------------------------------------------------------


async def archive_conversations(ctx: RunContext) -> dict[str, int]:
    """Conversations idle past ``conversation_archive_after_days`` are archived (kept, and
    searchable, but out of the default listing)."""
    before = ctx.now - timedelta(days=ctx.settings.conversation_archive_after_days)
    async with ctx.backend.engine.begin() as conn:
        n = await db.archive_idle_conversations(conn, before, dry_run=ctx.dry_run)
    return {"would_archive" if ctx.dry_run else "archived": n}


async def purge_working_memory(ctx: RunContext) -> dict[str, int]:
    """Expired rows that abandoned sessions left in the UNLOGGED table (Redis expires its own)."""
    async with ctx.backend.engine.begin() as conn:
        if ctx.dry_run:
            return {"would_purge": await db.count_expired_working(conn, ctx.now)}
        return {"purged": await db.purge_expired_working(conn, ctx.now)}


CLEANUP_STEPS["conversations"] = archive_conversations
CLEANUP_STEPS["working_memory"] = purge_working_memory


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
    async with ctx.backend.engine.connect() as conn:
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
    async with ctx.backend.engine.begin() as conn:
        for values in rows:
            await db.insert_strategy(conn, values)
    return Outcome(
        {"learned": len(rows), "conversations": len(by_conversation)},
        changed={"learned": len(rows)},
    )


register(
    ScheduledJob(
        "patterns",
        "patterns_interval_s",
        patterns,
        description="strategies from conversations whose tools worked",
    )
)
