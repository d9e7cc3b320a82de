"""``remember()``: one recall across every kind of memory, as a scored, merged, diversified
bundle cut to a token budget — what an agent puts in its prompt before it answers."""

from __future__ import annotations

import asyncio
import builtins
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar, Unpack
from uuid import UUID
from weakref import WeakKeyDictionary

from memvault import tracing
from memvault._keywords import RememberRequestKeywords
from memvault._sync import takes
from memvault.cognitive.bundle import (
    RECENT_DAYS,
    RECENT_GOALS,
    RECENT_TOOL_CALLS,
    BundleDiagnostics,
    BundleItem,
    MemoryBundle,
    ToolOutcome,
    attach_sources,
    counted_together,
    diversify,
    fit,
    outcome_summary,
    show_replaced,
    weighted,
)
from memvault.cognitive.conversations import channel_search, turn_hits
from memvault.cognitive.goals import goal_of, listed
from memvault.cognitive.identifiers import recall_channels
from memvault.cognitive.kinds import (
    ALL_KINDS,
    Goal,
    Kind,
    Profile,
    RememberRequest,
    Strategy,
    TurnHit,
    WorkingContext,
)
from memvault.cognitive.strategies import INVOCATIONS, strategies_near
from memvault.db import recall as recent
from memvault.db.graph_walk import Support
from memvault.db.replica import replica_reads
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, shared_reads
from memvault.embedding.embedding_service import Embedded
from memvault.errors import InvalidInput, StoreUnavailable
from memvault.graph.entity_recall import recall
from memvault.models import EntityHit, FactHit, SearchRequest
from memvault.retrieval.recency import recency
from memvault.retrieval.search import embed_query
from memvault.text import STOP_WORDS, fold
from memvault.validation import validated

if TYPE_CHECKING:
    from memvault.cognitive.conversations import Conversations
    from memvault.cognitive.profile import Profiles
    from memvault.cognitive.strategies import Strategies
    from memvault.cognitive.working import Working
    from memvault.context import TenantContext

T = TypeVar("T")

# An entity is worth a line when something stands behind it: a current fact about it, or
# mentions by this many memories (a word picked up once, "Quick" of "Quick question", is not).
ENTITY_MIN_MENTIONS = 2
# Token counts of bundle lines by digest, per embedding model (whose tokenizer counts them).
_TOKEN_COUNTS: WeakKeyDictionary[object, dict[bytes, int]] = WeakKeyDictionary()


class Recall:
    """``remember()``: the recall that draws on every kind of memory, each from its resource."""

    def __init__(
        self,
        context: TenantContext,
        *,
        conversations: Conversations,
        strategies: Strategies,
        profiles: Profiles,
        working: Working,
    ) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self.conversations = conversations
        self.strategies = strategies
        self.profiles = profiles
        self.working = working

    @scoped_to_tenant
    @takes(RememberRequest, positional=("query",))
    @replica_reads
    async def remember(
        self, /, query: str, **fields: Unpack[RememberRequestKeywords]
    ) -> MemoryBundle:
        """Recall for a prompt: relevant turns, facts and entities, strategies, active goals,
        the profile, the live session and what happened lately (goals finished, tool calls
        and how they went), in ``channel`` and _global; scored by weights that are data, at
        most N turns per conversation, each text shown once, cut to ``budget_tokens`` of the
        model's tokenizer. ``bundle.as_prompt()`` is the block to put before the question."""
        request = validated(RememberRequest, query=query, **fields)
        kinds = set(request.include or ALL_KINDS)
        with tracing.span("memvault.remember", kinds=len(kinds)) as traced:
            bundle = await self._remember(request, kinds)
            counts = bundle.diagnostics.candidates
            traced.set(tokens=bundle.tokens, **{f"{k}_candidates": n for k, n in counts.items()})
            return bundle

    async def _remember(self, request: RememberRequest, kinds: set[Kind]) -> MemoryBundle:
        settings = self._backend.settings
        weights = check_weights(
            {**settings.remember_weights, **{str(k): v for k, v in (request.weights or {}).items()}}
        )
        channels = recall_channels(request.channel)
        timings: dict[str, float] = {}
        degraded: builtins.list[str] = []
        started = time.perf_counter()

        async def timed(name: str, wanted: bool, work: Callable[[], Awaitable[T]], empty: T) -> T:
            if not wanted:
                return empty
            begun = time.perf_counter()
            try:
                with tracing.span(f"memvault.remember.{name}"):
                    return await work()
            finally:
                timings[name] = round((time.perf_counter() - begun) * 1000, 3)

        # The question is embedded once, for every kind that compares by meaning.
        query_vector = asyncio.ensure_future(
            timed(
                "embed",
                bool(kinds & {"episodic", "procedural", "facts", "entities"}),
                lambda: embed_query(self._backend, request.query),
                None,
            )
        )
        no_hits: builtins.list[TurnHit] = []
        no_strategies: tuple[builtins.list[Strategy], builtins.list[ToolOutcome]] = ([], [])
        no_semantic: tuple[builtins.list[BundleItem], int] = ([], 0)
        no_goals: tuple[builtins.list[Goal], builtins.list[Goal]] = ([], [])
        now = request.reference_time or datetime.now(UTC)
        # The kinds start once the question is embedded: the encoder splits its matrix work
        # across the cores, and the small reads running beside it (goals, profile, tool calls)
        # stalled it, 3 ms becoming 10, on the path every ranked kind waits on. They are
        # short, so after the embedding they still end before the searches do.
        await query_vector
        # Each kind's small reads take turns on one connection (db/units.shared_reads); the
        # ranked searches keep connections of their own.
        async with shared_reads(self._backend.engine):
            (
                hits,
                (strategies, outcomes),
                (semantic, below_bar),
                (goals, finished),
                profile,
                working,
            ) = await asyncio.gather(
                timed(
                    "episodic",
                    "episodic" in kinds,
                    lambda: self._episodic(request, query_vector),
                    no_hits,
                ),
                timed(
                    "procedural",
                    "procedural" in kinds,
                    lambda: self._procedural(request, channels, now, query_vector),
                    no_strategies,
                ),
                timed(
                    "semantic",
                    bool(kinds & {"facts", "entities"}),
                    lambda: self._semantic(request, channels, weights, now, query_vector),
                    no_semantic,
                ),
                timed(
                    "goals", "goals" in kinds, lambda: self._goals(request, channels, now), no_goals
                ),
                timed("profile", "profile" in kinds, lambda: self._profile(request), None),
                timed(
                    "working",
                    "working" in kinds,
                    lambda: self._session_context(request, degraded),
                    None,
                ),
            )
        half_life = settings.remember_half_life_days
        episodic, diversity_demoted = diversify(
            self._turn_items(hits, weights, now, half_life),
            request.per_conversation or settings.remember_per_conversation,
        )
        semantic, episodic = attach_sources(semantic, episodic)
        semantic, episodic = show_replaced(semantic, episodic, _replaced(hits))
        bundle = MemoryBundle(
            query=request.query,
            user_id=request.user_id,
            channel=request.channel,
            channels=channels,
            episodic=episodic,
            semantic=semantic,
            procedural=self._strategy_items(strategies, weights, now, half_life),
            goals=goals,
            finished_goals=finished,
            tool_outcomes=outcomes,
            profile=profile,
            working=working,
            weights=weights,
            tokens=0,
            budget_tokens=request.budget_tokens or settings.remember_budget_tokens,
            diagnostics=BundleDiagnostics(
                timings_ms=timings,
                candidates={
                    "episodic": len(hits),
                    "procedural": len(strategies),
                    "semantic": len(semantic),
                    "goals": len(goals),
                    "finished_goals": len(finished),
                    "tool_outcomes": len(outcomes),
                },
                diversity_demoted=diversity_demoted,
                budget_dropped=0,
                entities_below_bar=below_bar,
                degraded=degraded,
            ),
        )
        begun = time.perf_counter()
        with tracing.span(
            "memvault.remember.bundle", budget_tokens=bundle.budget_tokens
        ) as fitting:
            model = self._backend.embeddings.primary
            known = _TOKEN_COUNTS.setdefault(model, {})
            fitted = fit(
                bundle, self._context.count_tokens, counted_together(model.tokenizer().spans, known)
            )
            fitting.set(dropped=fitted.diagnostics.budget_dropped)
        timings["budget"] = round((time.perf_counter() - begun) * 1000, 3)
        timings["total"] = round((time.perf_counter() - started) * 1000, 3)
        if request.track_access:
            self._reinforce(fitted)
        diagnostics = fitted.diagnostics.model_copy(update={"timings_ms": timings})
        return fitted.model_copy(update={"diagnostics": diagnostics})

    async def _episodic(
        self, request: RememberRequest, query_vector: Awaitable[Embedded | None]
    ) -> builtins.list[TurnHit]:
        window = request.time_window
        embedded = await query_vector
        hits = await channel_search(
            self._context,
            request.query,
            request.user_id,
            request.channel,
            window.after if window else None,
            window.before if window else None,
            # Accesses are counted for what survives the budget, not for every candidate.
            {
                "limit": request.limit,
                "track_access": False,
                **({"reference_time": request.reference_time} if request.reference_time else {}),
            },
            embedded,
        )
        return await turn_hits(self._context, hits)

    async def _procedural(
        self,
        request: RememberRequest,
        channels: builtins.list[str],
        now: datetime,
        query_vector: Awaitable[Embedded | None],
    ) -> tuple[builtins.list[Strategy], builtins.list[ToolOutcome]]:
        async def near() -> builtins.list[Strategy]:
            embedded = await query_vector
            if embedded is None:
                return []
            return await strategies_near(
                self._context, embedded, request.user_id, request.channel, min(request.limit, 5)
            )

        return await asyncio.gather(near(), self._tool_outcomes(request, channels, now))

    async def _tool_outcomes(
        self, request: RememberRequest, channels: builtins.list[str], now: datetime
    ) -> builtins.list[ToolOutcome]:
        """The session's latest tool calls first, then the user's latest, and how they went."""
        async with reading(self._backend.engine) as conn:
            rows = await recent.recent_tool_calls(
                conn,
                self.tenant_id,
                request.user_id,
                channels,
                request.conversation_id,
                now - timedelta(days=RECENT_DAYS),
                now,
                min(request.limit, RECENT_TOOL_CALLS),
            )
        outcomes = []
        for row in rows:
            payload = self._context.open_row(INVOCATIONS, (row.id,), row)
            outcomes.append(
                ToolOutcome(
                    id=str(row.id),
                    tool_name=row.tool_name,
                    channel=row.channel,
                    conversation_id=None
                    if row.conversation_id is None
                    else str(row.conversation_id),
                    success=row.success,
                    summary=outcome_summary(
                        payload.get("output"), payload.get("error"), row.success
                    ),
                    latency_ms=row.latency_ms,
                    created_at=row.created_at,
                )
            )
        return outcomes

    async def _semantic(
        self,
        request: RememberRequest,
        channels: builtins.list[str],
        weights: dict[str, float],
        now: datetime,
        query_vector: Awaitable[Embedded | None],
    ) -> tuple[builtins.list[BundleItem], int]:
        """Facts and entities with their graph neighbourhood (two hops from the entities the
        query names), from the channel and _global, as ``BundleItem``s of kind "facts" /
        "entities" scored with ``weighted`` (relevance 0..1 within the kind, recency); entities
        only above the bar (``_worth_showing``). Returns the items and how many entities
        fell below the bar."""
        wanted = [k for k in ("facts", "entities") if k in set(request.include or ALL_KINDS)]
        search = SearchRequest(
            query=request.query,
            user_id=request.user_id,
            limit=min(request.limit, 100),
            include=wanted,
            track_access=request.track_access,
        )
        found = await recall(
            self._backend,
            self.tenant_id,
            search,
            embedded=await query_vector,
            channels=channels,
            support=ENTITY_MIN_MENTIONS,
        )
        half_life = self._backend.settings.remember_half_life_days
        items: builtins.list[BundleItem] = []
        facts = found.facts or []
        best = max((f.score for f in facts), default=0.0)
        if request.reference_time is not None:
            # Asked as of a moment: a fact that only became true later is not yet the answer.
            facts = [f for f in facts if f.valid_from is None or f.valid_from <= now]
        for fact in facts:
            fresh = recency(fact.valid_from or fact.recorded_at, now, half_life)
            relevance = fact.score / best if best > 0 else 0.0
            score, parts = weighted("facts", relevance, fresh, weights)
            items.append(
                BundleItem(
                    kind="facts",
                    id=str(fact.id),
                    channel=fact.channel,
                    content=fact.claim,
                    score=score,
                    scores=parts,
                    occurred_at=fact.valid_from,
                    detail={
                        "subject": fact.subject,
                        "predicate": fact.predicate,
                        "object": fact.object if fact.object is not None else fact.value,
                        "confidence": fact.confidence,
                        "temporal": fact.temporal,
                        "memory_ids": [str(m) for m in fact.memory_ids],
                    },
                )
            )
        found_entities = found.entities or []
        entities = _worth_showing(found_entities, facts, found.entity_support)
        best = max((e.score for e in entities), default=0.0)
        for entity in entities:
            fresh = recency(entity.last_accessed or entity.first_seen, now, half_life)
            relevance = entity.score / best if best > 0 else 0.0
            score, parts = weighted("entities", relevance, fresh, weights)
            described = f": {entity.description}" if entity.description else ""
            items.append(
                BundleItem(
                    kind="entities",
                    id=str(entity.id),
                    channel=found.entity_channels.get(entity.id, "_global"),
                    content=f"{entity.name} ({entity.type}){described}",
                    score=score,
                    scores=parts,
                    detail={"type": entity.type, "aliases": entity.aliases},
                )
            )
        ranked = sorted(items, key=lambda i: (-i.score, i.kind, i.id))
        return ranked, len(found_entities) - len(entities)

    async def _goals(
        self, request: RememberRequest, channels: builtins.list[str], now: datetime
    ) -> tuple[builtins.list[Goal], builtins.list[Goal]]:
        """Active goals, and those finished lately with their results (one statement)."""
        async with reading(self._backend.engine) as conn:
            open_rows, finished_rows = await recent.goals_now_and_lately(
                conn,
                self.tenant_id,
                request.user_id,
                channels,
                now - timedelta(days=RECENT_DAYS),
                now,
                min(request.limit, RECENT_GOALS),
            )
        active = listed(self._context, open_rows, "active", request.limit)
        return active, [goal_of(self._context, r) for r in finished_rows]

    async def _profile(self, request: RememberRequest) -> Profile | None:
        profile = await self.profiles.get_profile(user_id=request.user_id, channel=request.channel)
        return profile if _has_content(profile) else None

    async def _session_context(
        self, request: RememberRequest, degraded: builtins.list[str]
    ) -> WorkingContext | None:
        if request.conversation_id is None:
            return None
        try:
            return await self.working.get_context(
                request.conversation_id, user_id=request.user_id, channel=request.channel
            )
        except StoreUnavailable:  # Redis down: recall the rest, and say what is missing
            degraded.append("working")
            return None

    def _turn_items(
        self,
        hits: builtins.list[TurnHit],
        weights: dict[str, float],
        now: datetime,
        half_life: float,
    ) -> builtins.list[BundleItem]:
        best = max((h.score for h in hits), default=0.0)
        items = []
        for hit in hits:
            relevance = hit.score / best if best > 0 else 0.0
            score, parts = weighted(
                "episodic", relevance, recency(hit.occurred_at, now, half_life), weights
            )
            conversation = hit.conversation_id or hit.session_id
            items.append(
                BundleItem(
                    kind="episodic",
                    id=str(hit.memory_id),
                    channel=hit.channel,
                    content=hit.content,
                    score=score,
                    scores=parts,
                    conversation_id=None if conversation is None else str(conversation),
                    occurred_at=hit.occurred_at,
                    detail={"turn_index": hit.turn_index},
                )
            )
        return items

    def _strategy_items(
        self,
        found: builtins.list[Strategy],
        weights: dict[str, float],
        now: datetime,
        half_life: float,
    ) -> builtins.list[BundleItem]:
        items = []
        for strategy in found:
            fresh = recency(strategy.last_used or strategy.created_at, now, half_life)
            score, parts = weighted("procedural", strategy.score or 0.0, fresh, weights)
            items.append(
                BundleItem(
                    kind="procedural",
                    id=str(strategy.id),
                    channel=strategy.channel,
                    content=strategy.description,
                    score=score,
                    scores=parts,
                    detail={
                        "tool_sequence": strategy.tool_sequence,
                        "success_count": strategy.success_count,
                        "failure_count": strategy.failure_count,
                    },
                )
            )
        return items

    def _reinforce(self, bundle: MemoryBundle) -> None:
        """Recalled memories count as accessed (written in the background, as search does)."""
        recalled = [UUID(i.id) for i in bundle.episodic]
        recalled += [UUID(s["id"]) for i in bundle.semantic for s in i.detail.get("sources", [])]
        if recalled:
            self._backend.access.record(self.tenant_id, recalled)


def _replaced(hits: builtins.list[TurnHit]) -> dict[str, tuple[str, datetime]]:
    """Each recalled memory a later recalled one updates: the later one's id and date."""
    by_id = {h.memory_id: h for h in hits}
    return {
        str(h.memory_id): (str(h.replaced_by), by_id[h.replaced_by].occurred_at)
        for h in hits
        if h.replaced_by is not None and h.replaced_by in by_id
    }


def _worth_showing(
    entities: builtins.list[EntityHit],
    facts: builtins.list[FactHit],
    support: dict[UUID, Support],
) -> builtins.list[EntityHit]:
    """Entities with something behind them: a current fact about them (one recalled here, or
    any in the graph), or mentions by ``ENTITY_MIN_MENTIONS`` memories; never a name that is
    only a stop word."""
    in_facts = {i for f in facts for i in (f.subject_id, f.object_id) if i is not None}
    return [
        e
        for e in entities
        if fold(e.name).strip() not in STOP_WORDS
        and (
            e.id in in_facts
            or (
                e.id in support
                and (support[e.id].facts or support[e.id].mentions >= ENTITY_MIN_MENTIONS)
            )
        )
    ]


def _has_content(profile: Profile) -> bool:
    return bool(profile.preferences or profile.expertise or profile.communication_style)


def check_weights(weights: dict[str, float]) -> dict[str, float]:
    if any(v < 0 for v in weights.values()):
        raise InvalidInput("remember weights must not be negative.")
    return weights
