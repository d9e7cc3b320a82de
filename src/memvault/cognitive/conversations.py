"""Episodic memory: conversations and their turns.

A conversation is named by the caller (any identifier, unique per user) and grows through one
operation, ``add_messages``. A turn is an ordinary memory too (sealed, embedded, searchable,
deleted like any other) but kept verbatim: dedup never folds into it and no edit rewrites it.
The ``conversation_turns`` row holds only its place in the conversation (index, role, model,
token count) and the memory's id. FOLLOWED_BY is the turn order: each turn names the index of
the one after it.
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Unpack

from memvault._keywords import MessagesRequestKeywords
from memvault._sync import takes
from memvault.cognitive.identifiers import checked_id, recall_channels
from memvault.cognitive.kinds import (
    GLOBAL_CHANNEL,
    Conversation,
    ConversationStart,
    ConversationTurn,
    RecentTurn,
    Turn,
    TurnHit,
)
from memvault.db import cognitive as db
from memvault.db.cognitive_records import ConversationRow, TurnWithContent
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.embedding.embedding_service import Embedded
from memvault.errors import Conflict, InvalidInput, NotFound
from memvault.keys.sealing import open_content
from memvault.models import AddResult, Message, MessagesRequest, SearchHit, SearchRequest
from memvault.retrieval.search import RECIPES
from memvault.retrieval.search import search as retrieval_search
from memvault.validation import validated

if TYPE_CHECKING:
    from memvault.cognitive.working import Working
    from memvault.context import TenantContext
    from memvault.memories import Memories

TABLE = "conversations"


class Conversations:
    """Episodic memory: conversations, their turns, and the one way they grow."""

    def __init__(self, context: TenantContext, memories: Memories, working: Working) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self._memories = memories
        self._working = working

    @scoped_to_tenant
    @takes(MessagesRequest, positional=("messages",))
    async def add_messages(
        self,
        /,
        messages: builtins.list[Message | dict[str, Any]],
        *,
        wait: bool = False,
        **fields: Unpack[MessagesRequestKeywords],
    ) -> builtins.list[AddResult]:
        """Store a conversation (or the next part of one) turn by turn, under your own
        ``conversation_id`` (created on first use, appended to afterwards; without one, a new
        conversation). Each turn is kept verbatim as a turn of that conversation and as a
        searchable memory, enters the session's working memory, and is learned from at once
        (the offline extractor's facts are there when this returns). PII protection applies to
        every turn; an invalid turn stores none of them."""
        request = validated(MessagesRequest, messages=messages, **fields)
        return await self._append_turns(request, wait=wait)

    @scoped_to_tenant
    async def start_conversation(
        self,
        *,
        user_id: str,
        channel: str = GLOBAL_CHANNEL,
        title: str | None = None,
        started_at: datetime | None = None,
        conversation_id: str | None = None,
    ) -> Conversation:
        """A new, empty conversation (with a title, a channel or a start time); naming it is
        optional: ``add_messages`` creates a conversation on its first turn."""
        start = validated(
            ConversationStart,
            user_id=user_id,
            channel=channel,
            title=title,
            started_at=started_at,
            conversation_id=conversation_id,
        )
        ident = start.conversation_id or str(uuid.uuid4())
        async with transaction(self._backend.engine) as conn:
            row = await db.insert_conversation(conn, self._new_conversation(start, ident))
        if row is None:
            raise Conflict(
                "This user already has a conversation by that id; add turns to it.",
                details={"field": "conversation_id"},
            )
        return self._conversation(row, None)

    def _new_conversation(self, start: ConversationStart, ident: str) -> dict[str, Any]:
        values = {
            "tenant_id": self.tenant_id,
            "id": ident,
            "user_id": start.user_id,
            "channel": start.channel,
            **self._context.seal_row(TABLE, (ident,), {"title": start.title}),
        }
        if start.started_at is not None:
            values["started_at"] = start.started_at
        return values

    @scoped_to_tenant
    async def add_turns(
        self,
        conversation_id: str,
        turns: builtins.list[Turn | dict[str, Any]],
        *,
        user_id: str,
        occurred_at: datetime | None = None,
        wait: bool = False,
    ) -> builtins.list[ConversationTurn]:
        """``add_messages`` to one conversation, answered as its turns (the older way to
        append: the same operation)."""
        request = validated(
            MessagesRequest,
            messages=turns,
            user_id=user_id,
            # Turns added this way are dated when said (not by dates their words mention).
            occurred_at=occurred_at or datetime.now(UTC),
            conversation_id=checked_id(str(conversation_id), "conversation_id"),
        )
        stored = await self._append_turns(request, wait=wait)
        return [
            ConversationTurn(
                index=s.turn_index or 0,
                role=m.role,
                content=s.content,
                memory_id=s.id,
                occurred_at=s.occurred_at or s.created_at,
                token_count=self._context.count_tokens(s.content),
                model=m.model,
            )
            for s, m in zip(stored, request.messages, strict=True)
        ]

    async def _append_turns(
        self, request: MessagesRequest, *, wait: bool
    ) -> builtins.list[AddResult]:
        """The one way a conversation grows: its next indices reserved (the conversation made
        on first use), each turn stored verbatim as a memory with its turn row in the same
        transaction, then shown to the session's working memory. (A turn too long for one
        chunk is embedded by the worker; the consolidate job extracts its facts.)"""
        ident = request.conversation or str(uuid.uuid4())
        when = request.occurred_at or datetime.now(UTC)
        start = ConversationStart(user_id=request.user_id, channel=request.channel)
        start = start.model_copy(update={"title": request.title, "started_at": when})
        # Reserving indices is no keyed request's write: a rerun reserves others (a gap, no
        # copy), so a request that dies before its turns are stored may be run again.
        async with transaction(self._backend.engine, side_work=True) as conn:
            claimed = await db.claim_turns(
                conn, self._new_conversation(start, ident), len(request.messages), when
            )
        if claimed is None:
            raise InvalidInput(
                f"The conversation has fewer than {len(request.messages)} turn indices left "
                f"(turn indices end at {db.MAX_INTEGER}); continue in a new conversation.",
                details={"field": "conversation_id", "limit": db.MAX_INTEGER},
            )
        convo, created = claimed
        rows: builtins.list[dict[str, Any]] = []

        async def place_turns(conn: Any, stored: builtins.list[AddResult]) -> None:
            rows.extend(
                {
                    "tenant_id": self.tenant_id,
                    "conversation_id": ident,
                    "turn_index": convo.turn_count + n,
                    "user_id": request.user_id,
                    "channel": convo.channel,
                    "memory_id": result.id,
                    "role": message.role,
                    "model": message.model,
                    "token_count": self._context.count_tokens(result.content),
                    "occurred_at": when,
                }
                for n, (message, result) in enumerate(zip(request.messages, stored, strict=True))
            )
            await db.insert_turns(conn, rows)
            # Offline, extraction at write is all consolidation would do: these turns are
            # done, unless one was too long to extract now (the worker embeds it later).
            if self._backend.judge.llm is None and all(r.embedded for r in stored):
                span = (convo.turn_count, convo.turn_count + len(rows))
                await db.advance_watermark(
                    conn, self.tenant_id, request.user_id, ident, span, datetime.now(UTC)
                )

        try:
            stored = await self._memories.store_turns(
                request, ident, convo.channel, convo.turn_count, wait=wait, within=place_turns
            )
        except BaseException:
            if created:  # nothing a refused call sent may stay behind
                async with transaction(self._backend.engine, side_work=True) as conn:
                    await db.forget_empty_conversation(conn, self.tenant_id, request.user_id, ident)
            raise
        await self._working.remember_turns(request.user_id, convo.channel, ident, stored, rows)
        return [
            result.model_copy(update={"conversation_id": ident, "turn_index": row["turn_index"]})
            for result, row in zip(stored, rows, strict=True)
        ]

    @scoped_to_tenant
    async def get_conversation(
        self, conversation_id: str, *, user_id: str, turns: bool = True
    ) -> Conversation:
        ident = checked_id(str(conversation_id), "conversation_id")
        user_id = checked_id(user_id, "user_id")
        async with reading(self._backend.engine) as conn:
            row = await db.fetch_conversation(conn, self.tenant_id, ident, user_id, lock=False)
            if row is None:
                raise NotFound("No such conversation for this user.", details={"id": ident})
            turn_rows = (
                await db.fetch_turns(conn, self.tenant_id, user_id, ident) if turns else None
            )
        return self._conversation(row, turn_rows)

    @scoped_to_tenant
    async def list_conversations(
        self,
        *,
        user_id: str,
        channel: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
    ) -> builtins.list[Conversation]:
        """Newest first; a project channel lists its own and the global conversations."""
        user_id = checked_id(user_id, "user_id")
        channels = None if channel is None else recall_channels(channel)
        limit = min(max(limit, 1), self._backend.settings.max_page_size)
        async with reading(self._backend.engine) as conn:
            rows = await db.list_conversations(
                conn, self.tenant_id, user_id, channels, include_archived, limit
            )
        return [self._conversation(r, None) for r in rows]

    @scoped_to_tenant
    async def archive_conversation(
        self, conversation_id: str, *, user_id: str, archived: bool = True
    ) -> Conversation:
        ident = checked_id(str(conversation_id), "conversation_id")
        user_id = checked_id(user_id, "user_id")
        async with transaction(self._backend.engine) as conn:
            row = await db.fetch_conversation(conn, self.tenant_id, ident, user_id, lock=True)
            if row is None:
                raise NotFound("No such conversation for this user.", details={"id": ident})
            await db.set_conversation(conn, self.tenant_id, user_id, ident, {"archived": archived})
        return self._conversation(row, None).model_copy(update={"archived": archived})

    @scoped_to_tenant
    async def recent_turns(
        self,
        *,
        user_id: str,
        channels: Sequence[str] | None = None,
        hours: float = 24.0,
        limit: int = 20,
    ) -> builtins.list[RecentTurn]:
        """The user's latest turns in these channels (default: _global) within ``hours``,
        newest first."""
        user_id = checked_id(user_id, "user_id")
        names = [checked_id(c, "channels") for c in (channels or [GLOBAL_CHANNEL])]
        if not 0 < hours <= 24 * 366 or not 0 < limit <= 1_000:
            raise InvalidInput("hours must be in (0, 8784] and limit in 1..1000.")
        since = datetime.now(UTC) - timedelta(hours=hours)
        async with reading(self._backend.engine) as conn:
            rows = await db.recent_turns(conn, self.tenant_id, user_id, names, since, limit)
        return [
            RecentTurn(
                **self._turn(r, None).model_dump(),
                conversation_id=r.conversation_id,
                channel=r.channel,
            )
            for r in rows
        ]

    @scoped_to_tenant
    async def search_turns(
        self,
        query: str,
        *,
        user_id: str,
        channel: str = GLOBAL_CHANNEL,
        after: datetime | None = None,
        before: datetime | None = None,
        conversation_id: str | None = None,
        limit: int = 10,
    ) -> builtins.list[TurnHit]:
        """Conversation turns relevant to ``query`` within a time window (``occurred_at`` in
        [after, before)), in this channel and _global, each with its conversation."""
        options: dict[str, Any] = {"source": "conversation", "limit": limit}
        if conversation_id is not None:
            options["metadata"] = {
                "session_id": checked_id(str(conversation_id), "conversation_id")
            }
        hits = await channel_search(self._context, query, user_id, channel, after, before, options)
        return await turn_hits(self._context, hits[:limit])

    def _turn(self, row: TurnWithContent, next_index: int | None) -> ConversationTurn:
        content = open_content(
            self._backend.keys, row.tenant_id, row.memory_id, row.ciphertext, row.nonce, row.key_id
        )
        return ConversationTurn(
            index=row.turn_index,
            role=row.role,
            content=content,
            memory_id=row.memory_id,
            occurred_at=row.occurred_at,
            token_count=row.token_count,
            model=row.model,
            followed_by=next_index,
        )

    def _conversation(
        self, row: ConversationRow, turn_rows: Sequence[TurnWithContent] | None
    ) -> Conversation:
        payload = self._context.open_row(TABLE, (row.id,), row)
        turns = None
        if turn_rows is not None:
            following: list[int | None] = [r.turn_index for r in turn_rows[1:]]
            following.append(None)
            turns = [self._turn(r, n) for r, n in zip(turn_rows, following, strict=False)]
        return Conversation(
            id=row.id,
            user_id=row.user_id,
            channel=row.channel,
            title=payload.get("title"),
            turn_count=row.turns_present,
            started_at=row.started_at,
            last_turn_at=row.last_turn_at,
            consolidated_at=row.consolidated_at,
            consolidated_turns=row.consolidated_turns,
            archived=row.archived,
            turns=turns,
        )


async def channel_search(
    context: TenantContext,
    query: str,
    user_id: str,
    channel: str,
    after: datetime | None,
    before: datetime | None,
    options: dict[str, Any],
    query_embedding: Embedded | None = None,
) -> list[SearchHit]:
    """One search over the recalled channels (this one and _global), identical texts kept
    once (the better scored)."""
    cap = context.backend.settings.max_query_chars
    if len(query) > cap:
        raise InvalidInput(f"A query holds at most {cap} characters.", details={"field": "query"})
    window = {"occurred_after": after, "occurred_before": before}
    request = validated(
        SearchRequest,
        query=query,
        user_id=user_id,
        channels=recall_channels(channel),
        **{k: v for k, v in window.items() if v is not None},
        **options,
    )
    result = await retrieval_search(
        context.backend,
        context.tenant_id,
        request,
        RECIPES[request.recipe],
        query_embedding=query_embedding,
    )
    seen: set[str] = set()
    kept = []
    for hit in result.results:
        text = " ".join(hit.content.lower().split())
        if text not in seen:
            seen.add(text)
            kept.append(hit)
    return kept


async def turn_hits(context: TenantContext, hits: list[SearchHit]) -> list[TurnHit]:
    """Search hits as conversation turns: each with its conversation and index (read from the
    turn's row, else from the memory's own ``turn`` metadata), its session, and what replaced
    it. The one place a turn hit is built: episodic search and remember() answer the same."""
    if not hits:
        return []
    async with reading(context.backend.engine) as conn:
        turns = await db.turns_of_memories(conn, context.tenant_id, [h.id for h in hits])
    return [
        TurnHit(
            memory_id=h.id,
            content=h.content,
            score=h.score,
            channel=h.channel,
            occurred_at=h.occurred_at,
            conversation_id=turns[h.id].conversation_id if h.id in turns else None,
            turn_index=turns[h.id].turn_index if h.id in turns else _turn_of(h),
            session_id=str(h.metadata["session_id"]) if "session_id" in h.metadata else None,
            replaced_by=h.replaced_by,
        )
        for h in hits
    ]


def _turn_of(hit: SearchHit) -> int | None:
    turn = hit.metadata.get("turn")
    return turn if isinstance(turn, int) else None
