"""``ingest(batch)``: the write pipeline, one function over a batch of memories.

    validate ─► PII (redact | reject) ─► [offline graph extraction] ─► embed (one call)
            ─► dedup ─► enrich ─► [LLM graph extraction] ─► one transaction

With ``infer``, the knowledge graph's claims are written in the memory's transaction; the
offline extractor runs before embedding so the names and claims it finds share the batch's
one model call, an LLM extractor after dedup so no paid call is spent on a duplicate.

Texts that fit the model's window go through inline, so ``add`` answers with a searchable,
deduplicated, enriched memory. Long texts and background adds are stored at once (PII already
applied) and queued: the worker embeds them and runs the same dedup and enrichment.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

import numpy as np
import numpy.typing as npt

from memvault import deadline, tracing
from memvault.db import embedding_queue, keywords, store, vectors
from memvault.db.driver_errors import SIDE_WORK_FAILED
from memvault.db.records import MemoryRow
from memvault.db.units import reading, transaction
from memvault.embedding.chunking import clean
from memvault.errors import ContentTooLong, InvalidInput, PIIRejected
from memvault.graph.derive import (
    Derivation,
    Pending,
    Source,
    derive_many,
    extract_many,
    finish,
    lock_names,
    write_many,
)
from memvault.graph.writer import Owner, Prepared, graph_texts
from memvault.keys.sealing import open_content, seal_content, to_record
from memvault.language import pii
from memvault.language.terms import blind_terms
from memvault.models import (
    TURN_SOURCE,
    AddResult,
    DedupInfo,
    FieldSource,
    MemoryFilter,
    MemoryInput,
    PIIInfo,
)
from memvault.pipeline import rules
from memvault.pipeline.decisions import Enrichment
from memvault.pipeline.judge import Judge

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)
_CHUNK_SPECIAL_TOKENS = 2
# Items a deadline-bound batch takes through the inline stages between two looks at the clock.
_SLICE = 100
# Work that commits with a batch's memories, given the connection and the results in order.
Within = Callable[[Any, list[AddResult]], Awaitable[None]]


@dataclass
class Draft:
    """One memory on its way through the pipeline."""

    index: int
    item: MemoryInput
    text: str
    pii: PIIInfo
    memory_id: UUID = field(default_factory=uuid4)
    vector: list[float] | None = None
    dedup: DedupInfo = field(default_factory=lambda: DedupInfo(action="stored_new"))
    target: MemoryRow | None = None  # the existing memory for duplicate / merge / replace
    final_text: str = ""
    final_vector: list[float] | None = None
    enrichment: Enrichment | None = None
    sources: dict[str, FieldSource] = field(default_factory=dict)
    twin_of: int | None = None  # index of an identical earlier item in the same batch
    terms: tuple[dict[int, int], int] | None = None  # blind keyword terms of final_text
    derived: Derivation | None = None  # what the text claims, for the knowledge graph
    # What search embeds and indexes when the caller named it (PII applied); "" is nothing.
    index_as: str | None = None

    @property
    def scope(self) -> tuple[str, str]:
        return self.item.user_id, self.item.app_id

    @property
    def indexed_text(self) -> str:
        return self.final_text if self.index_as is None else self.index_as

    @property
    def deduplicated(self) -> bool:
        # A memory found by another text than its own is the caller's record, kept as given.
        return self.item.infer and self.index_as is None


class Pipeline:
    def __init__(self, backend: Backend, judge: Judge, tenant_id: str, actor: str) -> None:
        self.backend = backend
        self.judge = judge
        self.tenant_id = tenant_id
        self.actor = actor
        self.settings = backend.settings
        # The model that embeds this batch; a fallback model replaces these in _embed.
        self.model = backend.embeddings.active_model
        self.dims = backend.embeddings.primary.dimensions or 0
        self.verbatim = False
        # A batch's distinct items so far (it may be deduplicated a slice at a time).
        self._first_of: dict[tuple[str, str, bytes], Draft] = {}
        self._seen = _Seen(self.settings.dedup_duplicate_threshold)

    async def ingest(
        self,
        items: list[MemoryInput],
        *,
        background: bool = False,
        verbatim: bool = False,
        within: Within | None = None,
    ) -> list[AddResult]:
        """``verbatim``: the items are conversation turns, what someone said: each is stored
        as it came (never folded into another memory, never deduplicated) and still learned
        from (the offline extractor's facts are written with it). ``within`` runs in the
        memories' own transaction with their results, in order (what must commit with them:
        a turn's row in its conversation)."""
        self.verbatim = verbatim
        with tracing.span("memvault.ingest", items=len(items), verbatim=verbatim) as whole:
            with tracing.span("memvault.ingest.pii", items=len(items)) as stage:
                drafts = [self._protect(i, item) for i, item in enumerate(items)]
                stage.set(redacted=sum(d.pii.redacted for d in drafts))
            # A named index text is embedded whole at write: the worker would embed the content.
            inline = [
                d
                for d in drafts
                if d.index_as is not None or (not background and self._fits_one_chunk(d.text))
            ]
            deferred = [d for d in drafts if d not in inline]
            if inline:
                inline, late = await self._inline_in_time(inline)
                deferred += late
            whole.set(inline=len(inline), deferred=len(deferred))
            with tracing.span("memvault.ingest.commit", items=len(drafts)):
                return await self._commit(inline, deferred, within)

    async def _inline_in_time(self, inline: list[Draft]) -> tuple[list[Draft], list[Draft]]:
        """The inline stages, a slice at a time when the caller has a deadline: once the next
        slice would take the stages past a quarter of the time left (the commit, graph writes
        included, takes up to twice as long again), the rest is stored as
        it is and left to the worker (said ``pending``), so the answer, with every item in
        it, comes in time. Without a deadline (the library) the whole batch goes through."""
        left = deadline.remaining()
        if left is None or len(inline) <= _SLICE:
            await self._inline(inline)
            return inline, []
        began, last = time.monotonic(), 0.0
        done: list[Draft] = []
        for start in range(0, len(inline), _SLICE):
            rest = inline[start:]
            if done and time.monotonic() - began + last > left / 4:
                # A named index text is embedded at write, never by the worker.
                named = [d for d in rest if d.index_as is not None]
                if named:
                    await self._inline(named)
                return done + named, [d for d in rest if d.index_as is None]
            part = rest[:_SLICE]
            sliced = time.monotonic()
            await self._inline(part)
            last = time.monotonic() - sliced
            done += part
        return done, []

    async def _inline(self, inline: list[Draft]) -> None:
        """The stages a text that fits the model's window goes through before its commit."""
        with tracing.span("memvault.ingest.extract", items=len(inline)) as stage:
            early = await self._extract_early(inline)
            stage.set(extracted=len(early))
        with tracing.span("memvault.ingest.embed", items=len(inline)) as stage:
            claims = graph_texts([c for p in early.values() if (c := p.claimed) is not None])
            graph_vectors = await self._embed(inline, claims)
            stage.set(graph_texts=len(claims))
        with tracing.span("memvault.ingest.dedup", items=len(inline)) as stage:
            await self._dedup(inline)
            actions = [d.dedup.action for d in inline]
            stage.set(
                new=sum(a in ("stored_new", "keep_both") for a in actions),
                duplicates=actions.count("duplicate_exact"),
                folded=sum(a in ("merge", "replace") for a in actions),
            )
        with tracing.span("memvault.ingest.enrich", items=len(inline)):
            await self._enrich(inline)
        with tracing.span("memvault.ingest.graph", items=len(inline)) as stage:
            await self._derive(inline, early, graph_vectors)
            stage.set(derived=sum(d.derived is not None for d in inline))

    def _source(self, draft: Draft) -> Source:
        item = draft.item
        owner = Owner(self.tenant_id, item.user_id, item.app_id, item.channel)
        return Source(owner, draft.final_text, item.metadata, item.occurred_at)

    async def _extract_early(self, drafts: list[Draft]) -> dict[int, Pending]:
        """The offline extractor's claims (0.3 ms a text), taken before embedding so their
        names and claims share the memories' one embedding call. An LLM extraction is a paid
        call: it waits until dedup knows which texts are new (see :meth:`_derive`)."""
        if self.verbatim:  # learned from at once, offline; an LLM takes them at consolidation
            wanted = drafts
        elif self.backend.judge.llm is not None:
            return {}
        else:
            wanted = [d for d in drafts if d.item.infer]
        pending = await extract_many(
            self.backend, [self._source(d) for d in wanted], offline=self.verbatim
        )
        return {d.index: p for d, p in zip(wanted, pending, strict=True)}

    async def _derive(
        self,
        drafts: list[Draft],
        early: dict[int, Pending],
        vectors: dict[str, list[float]],
    ) -> None:
        """With ``infer``, what each new or rewritten memory claims, for the knowledge graph
        (long texts and background adds: the worker does it once it has settled them). A text
        extracted early and left as it was keeps that extraction and its vectors; one that
        dedup rewrote is extracted again."""
        wanted = [
            d
            for d in drafts
            if (d.item.infer or self.verbatim) and d.dedup.action != "duplicate_exact"
        ]
        kept = [d for d in wanted if d.index in early and d.final_text == d.text]
        pending = [early[d.index] for d in kept]
        prepared = [
            Prepared(c, vectors, self.model) for p in pending if (c := p.claimed) is not None
        ]
        for draft, derived in zip(kept, finish(self.backend, pending, iter(prepared)), strict=True):
            draft.derived = derived
        early_kept = {d.index for d in kept}
        again = [d for d in wanted if d.index not in early_kept]
        sources = [self._source(d) for d in again]
        for draft, derived in zip(again, await derive_many(self.backend, sources), strict=True):
            draft.derived = derived

    # --- PII -----------------------------------------------------------------------------------

    def _protect(self, index: int, item: MemoryInput) -> Draft:
        policy = item.pii_policy or self.settings.pii_policy
        try:
            report = pii.apply_policy(item.content, policy)
        except PIIRejected as exc:
            raise PIIRejected(exc.message, details={**exc.details, "index": index}) from None
        limit = self.settings.max_content_chars
        if len(report.text) > limit:
            raise ContentTooLong(
                f"Content is {len(report.text)} characters; the limit is {limit}.",
                details={"limit": limit, "index": index},
            )
        if item.expires_at is not None and item.expires_at <= datetime.now(UTC):
            raise InvalidInput(
                "expires_at is in the past.", details={"field": "expires_at", "index": index}
            )
        info = PIIInfo(policy=policy, found=report.found, redacted=report.redacted)
        draft = Draft(index=index, item=item, text=report.text, pii=info, final_text=report.text)
        if item.index_text is not None:
            try:
                draft.index_as = pii.apply_policy(item.index_text, policy).text
            except PIIRejected as exc:
                details = {**exc.details, "index": index, "field": "index_text"}
                raise PIIRejected(exc.message, details=details) from None
            if not draft.index_as.strip():  # blank says nothing: found by nothing
                draft.index_as = ""
            if len(draft.index_as) > limit:
                raise ContentTooLong(
                    f"index_text is {len(draft.index_as)} characters; the limit is {limit}.",
                    details={"limit": limit, "index": index, "field": "index_text"},
                )
        return draft

    def _fits_one_chunk(self, text: str) -> bool:
        primary = self.backend.embeddings.primary
        size = min(self.settings.chunk_tokens, primary.max_tokens) - _CHUNK_SPECIAL_TOKENS
        if len(text) <= size:
            return True
        return len(primary.tokenizer().spans(text)) <= size

    # --- embed and dedup -----------------------------------------------------------------------

    async def _embed(self, drafts: list[Draft], extra: list[str]) -> dict[str, list[float]]:
        """The drafts' vectors, and those of ``extra`` texts (graph names and claims) from
        the same call: one model call a batch, not two."""
        limit = self.settings.embedding_max_chars
        wanted = [d for d in drafts if d.index_as != ""]
        texts = [clean(t, limit) for t in [*(d.indexed_text for d in wanted), *extra]]
        if not texts:
            return {}
        embedded = await self.backend.embeddings.embed_batch(texts)
        self.model, self.dims = embedded.model_id, embedded.dimensions
        for draft, vector in zip(wanted, embedded.vectors, strict=False):
            draft.vector = draft.final_vector = vector
        return dict(zip(extra, embedded.vectors[len(wanted) :], strict=True))

    async def _dedup(self, drafts: list[Draft]) -> None:
        keyring = self.backend.keys.current(self.tenant_id)
        first_of, seen, looked_up = self._first_of, self._seen, []
        for draft in drafts:
            if not draft.deduplicated or self.verbatim:
                continue
            key = (*draft.scope, keyring.content_hash(draft.text))
            if key in first_of:  # the same text twice in one batch: one memory
                draft.twin_of = first_of[key].index
                draft.dedup = DedupInfo(action="duplicate_exact", similarity=1.0, decided_by="hash")
                continue
            near = seen.near(draft)
            if near is not None:
                draft.twin_of = near.index
                draft.dedup = DedupInfo(
                    action="duplicate_exact", similarity=1.0, decided_by="vector"
                )
                continue
            first_of[key] = draft
            seen.add(draft)
            looked_up.append(draft)
        await self._dedup_stored(looked_up)

    async def _dedup_stored(self, drafts: list[Draft]) -> None:
        """Each draft against what is stored: the hashes of the whole batch in one statement,
        then the nearest memory of each draft no hash matched, an owner's drafts in one
        statement, all in one transaction (three round trips a draft, where a transaction of
        its own cost five)."""
        if not drafts:
            return
        keyring = self.backend.keys.current(self.tenant_id)
        similar: list[tuple[Draft, MemoryRow, float]] = []
        async with transaction(self.backend.engine) as conn:
            wanted = [(*d.scope, keyring.content_hashes(d.text)) for d in drafts]
            twins = await store.find_by_hashes(conn, self.tenant_id, wanted)
            unmatched: list[Draft] = []
            for draft, twin in zip(drafts, twins, strict=True):
                if twin is None:
                    unmatched.append(draft)
                    continue
                draft.target = twin
                draft.dedup = DedupInfo(
                    action="duplicate_exact",
                    existing_id=twin.id,
                    similarity=1.0,
                    decided_by="hash",
                )
            nearest = await self._nearest_stored_each(conn, unmatched)
            for draft, row in zip(unmatched, nearest, strict=True):
                if row is not None:
                    similar.append((draft, row, 1.0 - min(max(row.rank, 0.0), 1.0)))
        for draft, row, similarity in similar:
            await self._judge_similar(draft, row, similarity)

    async def _nearest_stored_each(self, conn: Any, drafts: list[Draft]) -> list[Any]:
        """:meth:`_nearest_stored` of each draft: an owner's drafts in one statement where its
        memories are few enough to score exactly (as one draft's search would), else a draft
        at a time through the vector index."""
        found: dict[int, Any] = {}
        owners: dict[tuple[str, str], list[Draft]] = {}
        for draft in drafts:
            owners.setdefault(draft.scope, []).append(draft)
        cap = self.settings.search_exact_max_chunks
        for owner, part in owners.items():
            scope = await vectors.known_scope_size(
                conn, self.tenant_id, owner[0], self.model, cap=cap, sizes=self.backend.scope_sizes
            )
            if scope == 0:
                continue
            if scope > cap:
                for draft in part:
                    found[draft.index] = await self._nearest_stored(conn, draft)
                continue
            queries = [d.vector or [] for d in part]
            rows = await vectors.nearest_each(
                conn, self.tenant_id, owner, queries, self.model, self.dims
            )
            found.update((d.index, row) for d, row in zip(part, rows, strict=True))
        return [found.get(d.index) for d in drafts]

    async def _nearest_stored(self, conn: Any, draft: Draft, *, exclude: UUID | None = None) -> Any:
        user_id, app_id = draft.scope
        (nearest,) = await vectors.nearest(
            conn,
            self.tenant_id,
            [MemoryFilter.model_construct(user_id=user_id, app_id=app_id)],
            draft.vector or [],
            self.model,
            self.dims,
            1,
            exact_max_chunks=self.settings.search_exact_max_chunks,
            ef_search=self.settings.hnsw_ef_search,
            exclude_id=exclude,
            sizes=self.backend.scope_sizes,
            derived_only=True,
            iterative_scans=self.backend.iterative_scans,
        )
        return nearest[0] if nearest else None

    async def _dedup_one(
        self, draft: Draft, hashes: list[bytes], *, exclude: UUID | None = None
    ) -> None:
        user_id, app_id = draft.scope
        async with transaction(self.backend.engine) as conn:
            twin = await store.find_by_hash(
                conn, self.tenant_id, user_id, app_id, hashes, exclude=exclude
            )
            if twin is not None:
                draft.target = twin
                draft.dedup = DedupInfo(
                    action="duplicate_exact", existing_id=twin.id, similarity=1.0, decided_by="hash"
                )
                return
            row = await self._nearest_stored(conn, draft, exclude=exclude)
        if row is None:
            return
        similarity = 1.0 - min(max(row.rank, 0.0), 1.0)
        await self._judge_similar(draft, row, similarity)

    async def _judge_similar(self, draft: Draft, row: MemoryRow, similarity: float) -> None:
        if similarity < self.settings.dedup_similar_threshold:
            return
        existing = open_content(
            self.backend.keys, row.tenant_id, row.id, row.ciphertext, row.nonce, row.key_id
        )
        # MiniLM scores "34 years old" and "35 years old" above 0.98: a near copy is a
        # duplicate only when the offline rules see no changed value in it either.
        near_copy = similarity >= self.settings.dedup_duplicate_threshold
        if near_copy and rules.decide_duplicate(existing, draft.text, similarity).action == "merge":
            draft.target = row
            draft.dedup = DedupInfo(
                action="duplicate_exact",
                existing_id=row.id,
                similarity=similarity,
                decided_by="vector",
            )
            return
        decision, source = await self.judge.decide(existing, draft.text, similarity)
        if decision.action == "keep_both":
            draft.dedup = DedupInfo(
                action="keep_both", existing_id=row.id, similarity=similarity, decided_by=source
            )
            return
        draft.target = row
        draft.dedup = DedupInfo(
            action=decision.action, existing_id=row.id, similarity=similarity, decided_by=source
        )
        if decision.action == "merge" and decision.merged_text:
            draft.final_text = decision.merged_text.strip()
            draft.final_vector = None  # embedded again below

    # --- enrich --------------------------------------------------------------------------------

    async def _enrich(self, drafts: list[Draft]) -> None:
        merged = [
            d for d in drafts if d.final_vector is None and d.final_text and d.index_as is None
        ]
        if merged:
            embedded = await self.backend.embeddings.embed_batch(
                [clean(d.final_text, self.settings.embedding_max_chars) for d in merged]
            )
            for draft, vector in zip(merged, embedded.vectors, strict=True):
                draft.final_vector = vector
        for draft in drafts:
            if draft.dedup.action == "duplicate_exact":
                continue
            reference = draft.item.occurred_at or datetime.now(UTC)
            if draft.item.infer:
                draft.enrichment, source = await self.judge.enrich(draft.final_text, reference)
            else:
                draft.enrichment, source = await Judge(None).enrich(draft.final_text, reference)
            draft.sources = {"importance": source, "memory_type": source, "categories": source}
            draft.sources.update(_occurred_source(draft, source))

    # --- background adds, after the worker embedded them -----------------------------------

    async def settle_one(
        self, row: MemoryRow, first: tuple[str, list[float]] | None = None
    ) -> None:
        """``first``: the memory's first chunk vector and its model, when the caller has it
        in hand (the worker that just embedded it); else it is read back from the store."""
        draft = await self._settling(row, first)
        if draft.vector is not None and not self.verbatim:
            await self._dedup_one(draft, self._hashes(draft), exclude=row.id)
        await self._settle([(row, draft)])

    async def settle_many(
        self, rows: list[MemoryRow], firsts: Mapping[UUID, tuple[str, list[float]]]
    ) -> list[MemoryRow]:
        """:meth:`settle_one` for rows of one tenant, all turns or none, with one graph
        embedding call and one transaction for all. Returns the rows left for
        :meth:`settle_one`: those whose dedup landed on a memory this batch folds away or
        rewrites (one at a time, they would have met it folded already)."""
        settled: list[tuple[MemoryRow, Draft]] = []
        later: list[MemoryRow] = []
        moved: set[UUID] = set()  # folded away, rewritten, or left for later
        for row in rows:
            draft = await self._settling(row, firsts.get(row.id))
            if draft.vector is not None and not self.verbatim:
                await self._dedup_one(draft, self._hashes(draft), exclude=row.id)
            if draft.target is not None and draft.target.id in moved:
                later.append(row)
                moved.add(row.id)
                continue
            if not _kept(draft):
                moved.add(row.id)
                if draft.target is not None and draft.dedup.action != "duplicate_exact":
                    moved.add(draft.target.id)
            settled.append((row, draft))
        await self._settle(settled)
        return later

    async def _settling(self, row: MemoryRow, first: tuple[str, list[float]] | None) -> Draft:
        """A background memory as a draft, with its vector."""
        keys = self.backend.keys
        text = open_content(keys, row.tenant_id, row.id, row.ciphertext, row.nonce, row.key_id)
        # What someone said is kept as said (a turn a deadline left to the worker), and
        # learned from by the offline rules, as a turn written inline is.
        self.verbatim = row.source == TURN_SOURCE
        item = MemoryInput(
            content=text,
            user_id=row.user_id,
            app_id=row.app_id,
            occurred_at=row.occurred_at,
            infer=not self.verbatim,
        )
        # As stored (not validated again): what the graph learns from it is the row's.
        item = item.model_copy(update={"metadata": row.metadata, "channel": row.channel})
        draft = Draft(
            index=0,
            item=item,
            text=text,
            final_text=text,
            memory_id=row.id,
            pii=PIIInfo(policy=self.settings.pii_policy, found={}, redacted=False),
        )
        if first is not None:
            self.model, vector = first
            self.dims = len(vector)
            draft.vector = draft.final_vector = vector
        else:
            draft.vector = draft.final_vector = await self._stored_vector(row)
        return draft

    def _hashes(self, draft: Draft) -> list[bytes]:
        return self.backend.keys.current(self.tenant_id).content_hashes(draft.text)

    async def _settle(self, settled: list[tuple[MemoryRow, Draft]]) -> None:
        """Deduplicated background memories enriched, the kept ones' claims extracted and
        embedded in one call, then all written in one transaction: kept ones take their
        enrichment and graph, the others fold into what they duplicate."""
        drafts = [d for _, d in settled]
        await self._enrich(drafts)
        kept = [d for d in drafts if _kept(d)]
        sources = [self._source(d) for d in kept]
        for draft, derived in zip(
            kept, await derive_many(self.backend, sources, offline=self.verbatim), strict=True
        ):
            draft.derived = derived
        async with transaction(self.backend.engine) as conn:
            await lock_names(conn, [d.derived for d in kept])
            for row, draft in settled:
                if _kept(draft):
                    values = {
                        k: v for k, v in self._enriched(draft).items() if k != "embedding_model"
                    }
                    await store.set_enrichment(conn, row.tenant_id, row.id, values)
                    continue
                if draft.dedup.action in ("merge", "replace") and draft.target is not None:
                    await self._fold_into(conn, draft)
                target = draft.target.id if draft.target is not None else None
                await store.delete_where(
                    conn,
                    store.owned_by(row.tenant_id, row.id, row.user_id),
                    "dedup",
                    note={"folded_into": str(target), "dedup": draft.dedup.action},
                )
            await write_many(conn, [(d.derived, d.memory_id) for d in kept])

    async def _stored_vector(self, row: MemoryRow) -> list[float] | None:
        async with reading(self.backend.engine) as conn:
            found = await vectors.first_vector(conn, row.tenant_id, row.id)
        if found is None:
            return None
        self.model, vector = found
        self.dims = len(vector)
        return vector

    async def _fold_into(self, conn: Any, draft: Draft) -> None:
        """The existing memory takes the new (or merged) text; its vectors are redone."""
        assert draft.target is not None
        old = await store.fetch_memory(
            conn, self.tenant_id, draft.target.id, draft.target.user_id, lock=True
        )
        if old is None:
            return
        values = {
            **seal_content(self.backend.keys, self.tenant_id, old.id, draft.final_text),
            **self._enriched(draft),
            "embedded": False,
        }
        await store.update_memory(conn, old, values, "dedup")
        await embedding_queue.enqueue(conn, self.tenant_id, [old.id])
        terms, length = blind_terms(self.backend.keys.current(self.tenant_id), draft.final_text)
        await keywords.replace_terms(conn, self.tenant_id, {old.id: (old.user_id, terms, length)})

    # --- write ---------------------------------------------------------------------------------

    async def _commit(
        self, inline: list[Draft], deferred: list[Draft], within: Within | None = None
    ) -> list[AddResult]:
        results: dict[int, AddResult] = {}
        chunks: dict[UUID, tuple[str, list[list[float]]]] = {}
        # New memories get their postings inserted; memories a merge or replace rewrote get
        # theirs replaced.
        fresh: dict[UUID, tuple[str, dict[int, int], int]] = {}
        changed: dict[UUID, tuple[str, dict[int, int], int]] = {}
        keyring = self.backend.keys.current(self.tenant_id)
        async with transaction(self.backend.engine) as conn:
            await store.lock_content(
                conn,
                [self._lock_key(d, keyring.content_hash(d.text)) for d in inline if d.deduplicated],
            )
            await lock_names(conn, [d.derived for d in inline if d.twin_of is None])
            writing = [d for d in inline if d.twin_of is None]
            rows = await self._write_all(conn, writing, keyring)
            # A merge or replace derives from the rewritten memory: a correction often lands
            # there, folded into what it corrects.
            await write_many(
                conn,
                [
                    (d.derived, rows[d.index].id)
                    for d in writing
                    if d.dedup.action != "duplicate_exact"
                ],
            )
            for draft in writing:
                row = rows[draft.index]
                if draft.dedup.action != "duplicate_exact":
                    if draft.index_as != "":
                        chunks[row.id] = (row.user_id, [draft.final_vector or []])
                    terms = draft.terms or blind_terms(keyring, draft.indexed_text)
                    target = fresh if row.id == draft.memory_id else changed
                    target[row.id] = (row.user_id, *terms)
                results[draft.index] = self._result(row, draft)
            await vectors.replace_chunks(conn, self.tenant_id, chunks, self.model)
            for kind in ("ingest", "embed"):
                # With infer, the worker dedups and (with an LLM) refines them once the
                # vectors exist; without, it only embeds them.
                queued = [
                    d for d in deferred if (d.item.infer or self.verbatim) == (kind == "ingest")
                ]
                stored = await store.insert_memories(
                    conn, [self._queued_values(d) for d in queued], self.actor, job_kind=kind
                )
                for draft in queued:
                    row = stored[draft.memory_id]
                    fresh[row.id] = (
                        row.user_id,
                        *(draft.terms or blind_terms(keyring, draft.text)),
                    )
                    draft.dedup = DedupInfo(action="pending" if kind == "ingest" else "stored_new")
                    draft.sources = dict.fromkeys(
                        ("importance", "memory_type", "categories"), "rules"
                    )
                    draft.sources.update(_occurred_source(draft, "rules"))
                    results[draft.index] = self._result(row, draft)
            await keywords.insert_terms(conn, self.tenant_id, fresh)
            await keywords.replace_terms(conn, self.tenant_id, changed)
            if within is not None:  # verbatim items have no twins: every result is here
                await within(conn, [results[i] for i in sorted(results)])
        for draft in inline:
            if draft.twin_of is not None:
                twin = results[draft.twin_of]
                results[draft.index] = twin.model_copy(
                    update={
                        "dedup": DedupInfo(
                            action="duplicate_exact",
                            existing_id=twin.id,
                            similarity=1.0,
                            decided_by="hash",
                        ),
                        "pii": draft.pii,
                    }
                )
        return [results[i] for i in sorted(results)]

    def _queued_values(self, draft: Draft) -> dict[str, Any]:
        """A memory left to the worker, with the offline enrichment now, so every stored
        memory carries it."""
        reference = draft.item.occurred_at or datetime.now(UTC)
        draft.enrichment = rules.enrich(draft.text, reference)
        return {
            **self._new_values(draft),
            **self._enriched(draft),
            "embedded": False,
            "embedding_model": None,
        }

    def _lock_key(self, draft: Draft, content_hash: bytes) -> str:
        user_id, app_id = draft.scope
        owner = hashlib.sha256(f"{self.tenant_id}\x00{user_id}\x00{app_id}".encode()).hexdigest()
        return f"{owner}:{content_hash.hex()}"

    async def _write_all(
        self, conn: Any, drafts: list[Draft], keyring: Any
    ) -> dict[int, MemoryRow]:
        """Each draft's row, by its index: the memory it duplicates, the one it rewrote, or
        its own, the new ones inserted together."""
        # Another writer may have stored the same text while we were deciding.
        fresh = [
            d for d in drafts if d.deduplicated and d.dedup.action in ("stored_new", "keep_both")
        ]
        wanted = [(*d.scope, keyring.content_hashes(d.text)) for d in fresh]
        twins = await store.find_by_hashes(conn, self.tenant_id, wanted)
        for draft, twin in zip(fresh, twins, strict=True):
            if twin is not None:
                draft.target = twin
                draft.dedup = DedupInfo(
                    action="duplicate_exact", existing_id=twin.id, similarity=1.0, decided_by="hash"
                )
        rows: dict[int, MemoryRow] = {}
        new: list[Draft] = []
        for draft in drafts:
            row = await self._rewrite(conn, draft)
            if row is not None:
                rows[draft.index] = row
            else:
                new.append(draft)
        values = [{**self._new_values(d), **self._enriched(d)} for d in new]
        inserted = await store.insert_memories(conn, values, self.actor)
        rows.update({d.index: inserted[d.memory_id] for d in new})
        return rows

    async def _rewrite(self, conn: Any, draft: Draft) -> MemoryRow | None:
        """The stored memory a duplicate, merge or replace lands on (rewritten for the last
        two); None for a draft stored as a memory of its own."""
        if draft.dedup.action == "duplicate_exact" and draft.target is not None:
            return draft.target
        if draft.dedup.action in ("merge", "replace") and draft.target is not None:
            old = await store.fetch_memory(
                conn, self.tenant_id, draft.target.id, draft.target.user_id, lock=True
            )
            if old is not None:
                values = {
                    **seal_content(self.backend.keys, self.tenant_id, old.id, draft.final_text),
                    **self._enriched(draft),
                }
                return await store.update_memory(conn, old, values, self.actor)
            draft.dedup = DedupInfo(action="stored_new")  # it was deleted meanwhile
        return None

    def _enriched(self, draft: Draft) -> dict[str, Any]:
        # Settled with no model: nothing to embed, so no sweep or reembed queues it.
        model = None if draft.index_as == "" else self.model
        values: dict[str, Any] = {"embedded": True, "embedding_model": model}
        if draft.enrichment is not None:
            e = draft.enrichment
            values.update(
                importance=e.importance,
                memory_type=e.memory_type,
                valid_until=e.valid_until,
                categories=e.categories,
            )
        return values

    def _new_values(self, draft: Draft) -> dict[str, Any]:
        fields = draft.item.model_dump(exclude={"content", "infer", "pii_policy", "index_text"})
        sealed = seal_content(self.backend.keys, self.tenant_id, draft.memory_id, draft.final_text)
        draft.terms = blind_terms(self.backend.keys.current(self.tenant_id), draft.indexed_text)
        if fields.get("occurred_at") is None and draft.enrichment is not None:
            # The event the text dates, when the caller gave no time of its own.
            fields["occurred_at"] = draft.enrichment.event_at
        return {
            **fields,
            **sealed,
            "tenant_id": self.tenant_id,
            "id": draft.memory_id,
            "term_count": draft.terms[1],
        }

    def _result(self, row: MemoryRow, draft: Draft) -> AddResult:
        record = to_record(self.backend.keys, row)
        sources = draft.sources or dict.fromkeys(
            ("importance", "memory_type", "categories"), "given"
        )
        return AddResult(**record.model_dump(), dedup=draft.dedup, pii=draft.pii, sources=sources)


async def settle(
    backend: Backend,
    judge: Judge,
    rows: list[MemoryRow],
    firsts: Mapping[UUID, tuple[str, list[float]]] | None = None,
) -> None:
    """The rest of the pipeline for memories added in the background, once the worker has
    embedded them: fold duplicates into what is already stored, else enrich and learn from
    them. ``firsts``: each memory's first chunk vector and model, by id, as the worker wrote
    them (a read a memory saved). A tenant's memories are settled together (a batch of 1,000
    took 1,000 transactions and 1,000 model calls one by one); when that fails, one by one,
    so one bad memory costs only its own dedup."""
    groups: dict[tuple[str, bool], list[MemoryRow]] = {}
    for row in rows:
        groups.setdefault((row.tenant_id, row.source == TURN_SOURCE), []).append(row)
    for (tenant_id, _), part in groups.items():
        try:
            part = await Pipeline(backend, judge, tenant_id, "worker").settle_many(
                part, firsts or {}
            )
        except SIDE_WORK_FAILED as exc:
            log.warning("settling a batch failed (%s); one at a time", type(exc).__name__)
        for row in part:
            pipeline = Pipeline(backend, judge, row.tenant_id, "worker")
            try:
                await pipeline.settle_one(row, (firsts or {}).get(row.id))
            except SIDE_WORK_FAILED as exc:
                # The memory is stored and searchable; only its dedup is skipped. Say so.
                log.warning("background dedup of a memory failed: %s", type(exc).__name__)


def _kept(draft: Draft) -> bool:
    return draft.dedup.action in ("stored_new", "keep_both")


def _occurred_source(draft: Draft, source: FieldSource) -> dict[str, FieldSource]:
    """Where the memory's occurred_at came from, when not simply the time it was stored."""
    if draft.item.occurred_at is not None:
        return {"occurred_at": "given"}
    if draft.enrichment is not None and draft.enrichment.event_at is not None:
        return {"occurred_at": source}
    return {}


class _Seen:
    """The vectors of a batch's distinct items so far, by owner, unit length in one growing
    matrix: an item is checked against all earlier ones in one product (item by item in
    Python, a batch of 1,000 took half a million cosines)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._by_scope: dict[tuple[str, str], tuple[list[Draft], npt.NDArray[np.float64]]] = {}

    def near(self, draft: Draft) -> Draft | None:
        """An earlier item of this owner that says the same thing (cosine ≥ the duplicate
        threshold): the database cannot see it yet."""
        found = self._by_scope.get(draft.scope)
        if found is None or not draft.vector:
            return None
        drafts, matrix = found
        if matrix.shape[1] != len(draft.vector):
            return None
        similarities = matrix[: len(drafts)] @ _unit(draft.vector)
        hits = np.flatnonzero(similarities >= self.threshold)
        return drafts[int(hits[0])] if len(hits) else None

    def add(self, draft: Draft) -> None:
        if not draft.vector:
            return
        vector = _unit(draft.vector)
        drafts, matrix = self._by_scope.get(draft.scope) or ([], np.zeros((8, len(vector))))
        if len(drafts) == len(matrix):
            matrix = np.concatenate([matrix, np.zeros_like(matrix)])
        matrix[len(drafts)] = vector
        drafts.append(draft)
        self._by_scope[draft.scope] = (drafts, matrix)


def _unit(vector: list[float]) -> npt.NDArray[np.float64]:
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm else array


__all__ = ["Draft", "Pipeline", "settle"]
