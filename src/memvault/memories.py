"""``Memories``: a tenant's memories as a resource of ``AsyncMemory`` (``memory.memories``).

Validation, sealing and opening content, and one transaction per write that holds the row and
its history together.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import builtins
from collections import Counter
from datetime import UTC, datetime
from typing import Any, Unpack
from uuid import UUID

from memvault import deadline as answer
from memvault import jsonvalues
from memvault._compose import between_resources
from memvault._keywords import (
    MemoryFilterKeywords,
    MemoryInputKeywords,
    MemoryQueryKeywords,
    SearchRequestKeywords,
)
from memvault._sync import takes
from memvault.context import TenantContext
from memvault.db import embedding_queue, keywords, store
from memvault.db.audit import AuditEvent
from memvault.db.records import HistoryRow, MemoryRow
from memvault.db.replica import replica_reads
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.errors import Conflict, ContentTooLong, InvalidInput, NotFound
from memvault.graph.derive import Derivation
from memvault.graph.entity_recall import recall as graph_recall
from memvault.graph.graph import Graph
from memvault.keys.sealing import open_content, seal_content, to_record
from memvault.language import pii
from memvault.language.terms import blind_terms
from memvault.lifecycle.lifecycle import Lifecycle
from memvault.metrics import MEMORIES_STORED
from memvault.models import (
    TURN_SOURCE,
    AddResult,
    DedupInfo,
    Feedback,
    HistoryEntry,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    MemoryQuery,
    MemoryRecord,
    MemoryUpdate,
    MessagesRequest,
    Owner,
    SearchRequest,
    SearchResult,
)
from memvault.pipeline.ingest import Pipeline, Within
from memvault.retrieval.search import RECIPES
from memvault.retrieval.search import search as retrieval_search
from memvault.validation import parse_id, validated

# What enrichment decides about a text, so an edit of the text decides it again.
_ENRICHED = ("importance", "memory_type", "valid_until", "categories")


def one_memory(memory_id: UUID | str, user_id: str) -> tuple[UUID, str]:
    """A memory id and its owner, both checked before either reaches the store."""
    return parse_id(memory_id), validated(Owner, user_id=user_id).user_id


def _future(expires_at: datetime | None) -> None:
    # As on add: an expiry already past would delete by edit, which delete says plainly.
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise InvalidInput("expires_at is in the past.", details={"field": "expires_at"})


def _encode_cursor(row: MemoryRow) -> str:
    return base64.urlsafe_b64encode(f"{row.created_at.isoformat()}|{row.id}".encode()).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        created, ident = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        return datetime.fromisoformat(created), UUID(ident)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput(
            "The cursor is not one this server handed out.", details={"field": "cursor"}
        ) from None


def _bounded(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if metadata is None else jsonvalues.bounded(metadata)


class Memories:
    """A tenant's memories: the write pipeline, reads, edits, history and search. Deleting goes
    through ``lifecycle`` (for the receipt); an edit re-derives its facts through ``graph``."""

    def __init__(self, context: TenantContext, *, graph: Graph, lifecycle: Lifecycle) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self.actor = context.actor
        self._graph = graph
        self._lifecycle = lifecycle

    # --- sealing ------------------------------------------------------------------------------

    def _seal(self, memory_id: UUID, content: str) -> dict[str, Any]:
        return seal_content(self._backend.keys, self.tenant_id, memory_id, content)

    def _open(
        self, tenant_id: str, memory_id: UUID, ciphertext: bytes, nonce: bytes, key_id: str
    ) -> str:
        return open_content(self._backend.keys, tenant_id, memory_id, ciphertext, nonce, key_id)

    def _record(self, row: MemoryRow) -> MemoryRecord:
        return to_record(self._backend.keys, row)

    def _check_length(self, content: str, *, index: int | None = None) -> None:
        limit = self._backend.settings.max_content_chars
        if len(content) > limit:
            details: dict[str, Any] = {"limit": limit, "length": len(content)}
            if index is not None:
                details["index"] = index
            raise ContentTooLong(
                f"Content is {len(content)} characters; the limit is {limit}.", details=details
            )

    # --- CRUD ---------------------------------------------------------------------------------

    @scoped_to_tenant
    @takes(MemoryInput, positional=("content",))
    async def add(
        self,
        /,
        content: str,
        *,
        wait: bool = False,
        background: bool = False,
        **fields: Unpack[MemoryInputKeywords],
    ) -> AddResult:
        """Store one memory through the write pipeline (PII, embedding, dedup, enrichment).

        A text that fits the model's window is searchable when this returns; a longer one, or
        any with ``background=True``, is stored at once and finished by the worker (``wait=True``
        waits for that, up to ``wait_timeout_s``).
        """
        item = validated(MemoryInput, content=content, **fields)
        (result,) = await self.add_many([item], wait=wait, background=background)
        return result

    @scoped_to_tenant
    async def add_many(
        self,
        items: builtins.list[MemoryInput | dict[str, Any]],
        *,
        wait: bool = False,
        background: bool = False,
    ) -> builtins.list[AddResult]:
        """Store a batch as a batch: one embedding call, one transaction; results in order.

        Any invalid item (including a PII rejection) fails the whole batch, storing nothing.
        """
        cap = self._backend.settings.max_batch_items
        if not 0 < len(items) <= cap:
            raise InvalidInput(f"A batch holds 1 to {cap} memories.", details={"limit": cap})
        checked = [i if isinstance(i, MemoryInput) else validated(MemoryInput, **i) for i in items]
        return await self._ingest(checked, wait=wait, background=background)

    async def _ingest(
        self,
        checked: builtins.list[MemoryInput],
        *,
        wait: bool,
        background: bool = False,
        verbatim: bool = False,
        within: Within | None = None,
    ) -> builtins.list[AddResult]:
        for index, item in enumerate(checked):
            self._check_length(item.content, index=index)
        pipeline = Pipeline(self._backend, self._backend.judge, self.tenant_id, self.actor)
        session = checked[0].metadata.get("session_id")
        with self._context.audit(
            "store",
            checked[0].user_id,
            source_channel=checked[0].channel,
            session_id=session if isinstance(session, str) else None,
        ) as event:
            results = await pipeline.ingest(
                checked, background=background, verbatim=verbatim, within=within
            )
            event.memory_ids, event.result_count = [r.id for r in results], len(results)
            # How each was stored: new, folded into a duplicate, merged, replaced, kept.
            event.details = {"dedup": dict(Counter(r.dedup.action for r in results))}
        for result in results:
            MEMORIES_STORED.labels(result.dedup.action).inc()
        if len(checked) > 1:  # bulk work; single adds are autovacuum's steady state
            self._backend.analyzer.wrote(len(results))
        if wait:
            return [await self._waited(r) for r in results]
        return results

    @between_resources
    async def store_turns(
        self,
        request: MessagesRequest,
        conversation_id: str,
        channel: str,
        first_turn: int,
        *,
        wait: bool,
        within: Within,
    ) -> builtins.list[AddResult]:
        """The turns' memories (``conversations`` numbers them and calls this), and ``within``
        in their transaction: the write pipeline, verbatim, one batch."""
        items = [
            MemoryInput(
                content=m.content,
                index_text=m.index_text,
                user_id=request.user_id,
                app_id=request.app_id,
                channel=channel,
                source=TURN_SOURCE,
                occurred_at=request.occurred_at,
                infer=request.infer,
                metadata={
                    "role": m.role,
                    "speaker": m.name or m.role,
                    "turn": turn,
                    "session_id": conversation_id,
                },
            )
            for turn, m in enumerate(request.messages, start=first_turn)
        ]
        cap = self._backend.settings.max_batch_items
        if len(items) > cap:
            raise InvalidInput(f"A batch holds 1 to {cap} turns.", details={"limit": cap})
        return await self._ingest(items, wait=wait, verbatim=True, within=within)

    @scoped_to_tenant
    async def _waited(self, result: AddResult) -> AddResult:
        if result.embedded:
            return result
        try:
            record = await self._when_searchable(result.id, result.user_id)
        except NotFound:
            return await self._folded(result)
        return result.model_copy(update=record.model_dump())

    @scoped_to_tenant
    async def _folded(self, result: AddResult) -> AddResult:
        """A background add the worker found to be a duplicate was folded into an existing
        memory: answer with that one, as an inline add would have."""
        note = (await self.history(result.id, user_id=result.user_id))[-1].new_metadata or {}
        if "folded_into" not in note:
            raise NotFound("No such memory for this user.", details={"id": str(result.id)})
        target = await self.get(note["folded_into"], user_id=result.user_id)
        dedup = DedupInfo(action=note.get("dedup", "duplicate_exact"), existing_id=target.id)
        return result.model_copy(update={**target.model_dump(), "dedup": dedup})

    @scoped_to_tenant
    async def _when_searchable(self, memory_id: UUID, user_id: str) -> MemoryRecord:
        loop = asyncio.get_running_loop()
        wait_s = self._backend.settings.wait_timeout_s
        left = answer.remaining()
        if left is not None:  # answer while the caller still listens, pending if need be
            wait_s = max(0.0, min(wait_s, left / 2))
        deadline = loop.time() + wait_s
        delay = 0.002
        while True:  # polling, so not audited as a read each time
            record = await self._fetch(memory_id, user_id)
            if record.embedded or loop.time() >= deadline:
                return record
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.025)

    @scoped_to_tenant
    async def get(self, memory_id: UUID | str, *, user_id: str) -> MemoryRecord:
        ident, user_id = one_memory(memory_id, user_id)
        with self._context.audit(
            "retrieve", user_id, memory_ids=[ident], details={"via": "get"}
        ) as event:
            record = await self._fetch(ident, user_id)
            event.result_count = 1
        return record

    @scoped_to_tenant
    async def _fetch(self, ident: UUID, user_id: str) -> MemoryRecord:
        async with reading(self._backend.engine) as conn:
            row = await store.fetch_memory(conn, self.tenant_id, ident, user_id)
        if row is None:
            raise NotFound("No such memory for this user.", details={"id": str(ident)})
        return self._record(row)

    @scoped_to_tenant
    @takes(MemoryQuery)
    @replica_reads
    async def list(self, /, **query: Unpack[MemoryQueryKeywords]) -> MemoryPage:
        """One page of memories, newest first; pass ``next_cursor`` back for the next page.
        Takes every field of ``MemoryQuery`` (the filters, ``limit``, ``cursor``) as keywords."""
        page_query = validated(MemoryQuery, **query)
        cap = self._backend.settings.max_page_size
        if page_query.limit > cap:
            # The same shape as any other field the input models refuse (search's limit).
            problem = {"field": "limit", "problem": f"Input should be less than or equal to {cap}"}
            raise InvalidInput("The request is not valid.", details={"errors": [problem]})
        after = _decode_cursor(page_query.cursor) if page_query.cursor else None
        limit = page_query.limit
        with self._context.audit("retrieve", page_query.user_id, details={"via": "list"}) as event:
            async with reading(self._backend.engine) as conn:
                rows = await store.list_memories(conn, self.tenant_id, page_query, limit + 1, after)
            page = rows[:limit]
            event.result_count = len(page)
        next_cursor = _encode_cursor(page[-1]) if len(rows) > limit else None
        return MemoryPage(results=[self._record(r) for r in page], next_cursor=next_cursor)

    @scoped_to_tenant
    @takes(MemoryFilter)
    async def count(self, /, **filters: Unpack[MemoryFilterKeywords]) -> int:
        """How many of a user's memories match the filters: every field of ``MemoryFilter``,
        as ``list`` takes them, without reading or decrypting one of them."""
        scope = validated(MemoryFilter, **filters)
        async with reading(self._backend.engine) as conn:
            return await store.count_memories(conn, self.tenant_id, scope)

    @scoped_to_tenant
    async def update(
        self,
        memory_id: UUID | str,
        *,
        user_id: str,
        content: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: builtins.list[str] | None = None,
        importance: int | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryRecord:
        """Replace the content, merge metadata (a key set to None is removed), replace the
        tags, set the importance and/or move the expiry to ``expires_at`` (in the future).

        New content is enriched again (importance, type, expiry, categories follow the new
        text, but an importance given with it stands) and queued for re-embedding; an edit
        that changes nothing records nothing. A new expiry keeps the memory's id, so it keeps
        its place wherever it is ranked or paged."""
        ident, user_id = one_memory(memory_id, user_id)
        change = validated(
            MemoryUpdate,
            content=content,
            metadata=metadata,
            tags=tags,
            importance=importance,
            expires_at=expires_at,
        )
        _future(change.expires_at)
        new_text: str | None = None
        enriched: dict[str, Any] = {}
        derived = None
        if change.content is not None:
            # Secrets must not slip in through an edit either.
            new_text = pii.apply_policy(change.content, self._backend.settings.pii_policy).text
            self._check_length(new_text)
            enrichment, _ = await self._backend.judge.enrich(new_text, datetime.now(UTC))
            enriched = enrichment.model_dump(include={*_ENRICHED})
            # Not ``get``: reading the memory back is part of the edit, not a read to audit.
            derived = await self._graph.derive_edit(await self._fetch(ident, user_id), new_text)
        with self._context.audit("update", user_id, memory_ids=[ident]) as event:
            return await self._apply_update(
                ident, user_id, new_text, change, enriched, derived, event
            )

    async def _apply_update(
        self,
        ident: UUID,
        user_id: str,
        new_text: str | None,
        change: MemoryUpdate,
        enriched: dict[str, Any],
        derived: Derivation | None,
        event: AuditEvent,
    ) -> MemoryRecord:
        async with transaction(self._backend.engine) as conn:
            old = await store.fetch_memory(conn, self.tenant_id, ident, user_id, lock=True)
            if old is None:
                raise NotFound("No such memory for this user.", details={"id": str(ident)})
            values = self._edits(old, new_text, change)
            if "ciphertext" in values and old.source == TURN_SOURCE:
                raise Conflict(
                    "This memory is a conversation turn: what was said is kept as it was said. "
                    "Store the correction as a new memory or turn, or delete the turn.",
                    details={"id": str(ident), "source": TURN_SOURCE},
                )
            event.result_count = 1 if values else 0
            # What changed, by name (never the values: the audit holds no content).
            event.details = {
                "target": f"memory:{ident}",
                "changed": sorted(
                    {"content" if k == "ciphertext" else k for k in values}
                    - {"nonce", "key_id", "content_hash", "embedded"}
                ),
            }
            if not values:
                return self._record(old)
            if "ciphertext" in values:
                # A person's importance outranks the one enrichment guessed from the text.
                values.update(enriched)
                if change.importance is not None:
                    values["importance"] = change.importance
            row = await store.update_memory(conn, old, values, self.actor)
            if "ciphertext" in values:
                assert new_text is not None
                await embedding_queue.enqueue(conn, self.tenant_id, [ident])
                terms, length = blind_terms(self._backend.keys.current(self.tenant_id), new_text)
                await keywords.replace_terms(
                    conn, self.tenant_id, {ident: (row.user_id, terms, length)}
                )
                await self._graph.rederive(conn, ident, derived)
        return self._record(row)

    def _edits(self, old: MemoryRow, new_text: str | None, change: MemoryUpdate) -> dict[str, Any]:
        """The column values an edit really changes: none when it repeats what is stored."""
        values: dict[str, Any] = {}
        if new_text is not None and new_text != self._open(
            old.tenant_id, old.id, old.ciphertext, old.nonce, old.key_id
        ):
            # New text means old vectors no longer describe it: queue it for re-embedding.
            values.update(self._seal(old.id, new_text), embedded=False)
        if change.metadata is not None:
            merged = {**old.metadata, **change.metadata}
            merged = {k: v for k, v in merged.items() if v is not None}
            if merged != old.metadata:
                values["metadata"] = merged
        for name in ("tags", "importance", "expires_at"):
            given = getattr(change, name)
            if given is not None and given != getattr(old, name):
                values[name] = given
        return values

    @scoped_to_tenant
    async def delete(self, memory_id: UUID | str, *, user_id: str) -> None:
        """Delete a memory and everything derived from it (``erase`` answers the receipt)."""
        ident, user_id = one_memory(memory_id, user_id)
        try:
            await self._lifecycle.erase(ident, user_id=user_id)
        except NotFound:
            raise NotFound("No such memory for this user.", details={"id": str(ident)}) from None

    @scoped_to_tenant
    async def delete_all(self, *, user_id: str, app_id: str | None = None) -> int:
        """Delete every memory of a user (in one app, if given) and every graph row of theirs;
        returns how many memories (``erase_user`` answers the receipt)."""
        scope = validated(MemoryQuery, user_id=user_id, app_id=app_id)
        receipt = await self._lifecycle.erase_user(user_id=scope.user_id, app_id=scope.app_id)
        return receipt.memories

    @scoped_to_tenant
    async def feedback(self, memory_ids: builtins.list[UUID | str], *, user_id: str) -> int:
        """Say which memories an answer used: each of this user's named memories ranks a little
        higher in later searches (``reinforcement`` in the score breakdown). Searching and
        ``remember()`` never do this by themselves: being returned is not being used. Returns
        how many of the ids were this user's memories (others are not counted)."""
        request = validated(Feedback, user_id=user_id, memory_ids=memory_ids)
        async with transaction(self._backend.engine) as conn:
            return await store.reinforce(
                conn, self.tenant_id, request.user_id, set(request.memory_ids)
            )

    @scoped_to_tenant
    async def history(self, memory_id: UUID | str, *, user_id: str) -> builtins.list[HistoryEntry]:
        """Every ADD, UPDATE and DELETE of a memory, oldest first (kept after deletion)."""
        ident, user_id = one_memory(memory_id, user_id)
        async with reading(self._backend.engine) as conn:
            rows = await store.fetch_history(conn, self.tenant_id, ident, user_id)
        if not rows:
            raise NotFound("No such memory for this user.", details={"id": str(ident)})
        return [self._history_entry(r) for r in rows]

    def _history_entry(self, row: HistoryRow) -> HistoryEntry:
        def side(prefix: str) -> str | None:
            ciphertext = getattr(row, f"{prefix}_ciphertext")
            if ciphertext is None:
                return None
            return self._open(
                row.tenant_id,
                row.memory_id,
                ciphertext,
                getattr(row, f"{prefix}_nonce"),
                getattr(row, f"{prefix}_key_id"),
            )

        return HistoryEntry(
            id=row.id,
            memory_id=row.memory_id,
            action=row.action,
            old_content=side("old"),
            new_content=side("new"),
            old_metadata=_bounded(row.old_metadata),
            new_metadata=_bounded(row.new_metadata),
            actor=row.actor,
            created_at=row.created_at,
            claimed_actor=row.claimed_actor,
            claimed_at=row.claimed_at,
        )

    # --- search -------------------------------------------------------------------------------

    @scoped_to_tenant
    @takes(SearchRequest, positional=("query",))
    @replica_reads
    async def search(self, /, query: str, **options: Unpack[SearchRequestKeywords]) -> SearchResult:
        """This user's memories most relevant to ``query``: by meaning and by keywords (BM25
        on the blind index), fused (``recipe="hybrid"``), or by one of them alone.

        A time the query names ("last week", "in May 2023") is resolved against
        ``reference_time`` (default now) and boosts, or with ``time_mode="filter"``
        restricts, memories by ``occurred_at``. ``expand`` / ``hyde`` / ``self_query`` switch
        on the LLM recall techniques; ``context_window=n`` adds each conversational hit's
        neighbouring turns. ``result.diagnostics`` says what ran and how long it took."""
        request = validated(SearchRequest, query=query, **options)
        cap = self._backend.settings.max_query_chars
        if len(request.query) > cap:
            raise InvalidInput(
                f"A search query holds at most {cap} characters.",
                details={"field": "query", "limit": cap},
            )
        with self._context.audit(
            "retrieve", request.user_id, query=request.query, source_channel=request.channel
        ) as event:
            result = await retrieval_search(
                self._backend, self.tenant_id, request, RECIPES[request.recipe]
            )
            if request.include:
                recalled = await graph_recall(self._backend, self.tenant_id, request)
                result = result.model_copy(
                    update={"facts": recalled.facts, "entities": recalled.entities}
                )
            event.result_count = len(result.results)
            event.memory_ids = [hit.id for hit in result.results]
            channels = sorted({hit.channel for hit in result.results})
            if request.channel is None or channels != [request.channel]:
                # Matches from other channels than the one asked from are logged by name.
                event.target_channel = ",".join(channels) or None
        return result
