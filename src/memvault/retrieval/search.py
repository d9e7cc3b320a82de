"""Search strategies as data, and the hybrid search they drive.

A search runs one or more *probes* — the question itself; the question limited to the time it
names; statements and a hypothetical answer from an LLM; the question under LLM-read filters —
and each probe feeds ranked lists (vector: HNSW or exact; keyword: blind-index BM25). Every list
is fused by score-aware reciprocal rank fusion, then blended with importance, recency, validity,
reinforcement and the time match into the final score.

BM25 and cosine scores live on different scales, so fusion works on ranks; but a first place
is only worth what the match behind it is worth, so each rank's share is scaled by the list's
evidence for that item: BM25 over the query's best possible score (the IDF mass of its words),
similarity above a floor relative to the list's best. A strong keyword match still wins where
the small embedding model is unsure; a word every memory shares no longer outvotes meaning.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from memvault import tracing
from memvault.db import graph_walk, keywords, store, tenancy, vectors
from memvault.db.records import MemoryRow, RankedMemory
from memvault.db.units import read_released_behind, transaction
from memvault.embedding.chunking import clean
from memvault.embedding.embedding_service import Embedded
from memvault.errors import MemvaultError
from memvault.keys.sealing import open_content, to_record
from memvault.language.terms import query_term_ids, query_terms
from memvault.language.when import TimeRange, about_now, parse_time
from memvault.models import (
    MemoryFilter,
    MemoryRecord,
    SearchDiagnostics,
    SearchHit,
    SearchRequest,
    SearchResult,
    TimeReport,
)
from memvault.retrieval import techniques, updates
from memvault.retrieval.recency import recency
from memvault.retrieval.reinforce import reinforcement

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend

log = logging.getLogger(__name__)
RecipeName = Literal["hybrid", "vector", "keyword", "recent"]
# The list filters, applied in SQL by store.list_filters; the rest of a request steers the
# search itself.
FILTER_FIELDS = frozenset(MemoryFilter.model_fields)


@dataclass(frozen=True)
class SearchConfig:
    """One named way to search: which candidate sources, how many, how they are fused."""

    name: str
    vector_weight: float
    keyword_weight: float
    candidates: int = 50
    rrf_k: int = 60
    # The final score: relevance (fused, scaled so the best candidate is 1) plus these
    # weights times importance (0.1-1.0), recency (halving every half_life_days of
    # occurred_at age), reinforcement (0-1, from the times a caller said the memory helped:
    # being returned is not being used, so no search moves what the next one ranks) and the
    # time match (1 when a memory falls in the span the query names), times expired_factor for
    # a temporal memory past valid_until.
    importance_weight: float = 0.02
    recency_weight: float = 0.02
    # Ages count from the moment the question is asked; as a tie-breaker recency halves over
    # a year (30 days cost 0.003 R@10 on conversations and 0.01 all@10 on months of sessions
    # against a year, in bench/fusion_replay.py).
    half_life_days: float = 365.0
    reinforcement_weight: float = 0.02
    time_weight: float = 0.25
    # Mild: an expired plan is still the evidence of what happened (0.5 cost 0.02 R@10 on the
    # LoCoMo dev split, where most dated turns have long expired).
    expired_factor: float = 0.9
    # When the question asks what is latest ("any news recently?"), recency ranks instead of
    # breaking ties: at least this weight, at most this half-life.
    latest_recency_weight: float = 0.5
    latest_half_life_days: float = 7.0
    # When the question asks how something stands now ("where do I keep it now?", "my
    # current score") without naming a period, a memory whose every fact a newer fact has
    # replaced (the graph's system time) ranks at this share of its score: it told what held
    # then, not what holds now. Recency alone cannot say which answer is current: raising it
    # for such questions (0.5 over 30 days) put "Lucy moved to Bristol two years ago" under
    # newer memories about other things (personal facts R@10 0.968 -> 0.963).
    superseded_factor: float = 0.5
    # Score-aware fusion: a keyword match counts in full once its BM25 reaches this share of
    # the query's best possible score, less below it; a vector match counts as its similarity
    # above vector_floor, relative to the list's best.
    # Tuned on the three development sets together (bench/recall.py), never on one alone.
    keyword_full_at: float = 0.5
    vector_floor: float | None = 0.15
    rank_share: float = 0.05
    # How much each extra probe's lists count, relative to the question's own.
    probe_weights: dict[str, float] = field(
        default_factory=lambda: {
            "time": 0.5,
            "expansion": 0.5,
            "hyde": 0.5,
            "self_query": 0.5,
        }
    )


RECIPES: dict[str, SearchConfig] = {
    # Tuned on conversations, preferences and personal facts together (bench/recall.py): a
    # keyword list weighs more where its match carries the query's evidence (names, rare
    # words in conversations) and next to nothing where it matches only common words.
    "hybrid": SearchConfig("hybrid", vector_weight=0.6, keyword_weight=1.0, rrf_k=30),
    "vector": SearchConfig("vector", vector_weight=1.0, keyword_weight=0.0),
    "keyword": SearchConfig("keyword", vector_weight=0.0, keyword_weight=1.0),
    # What happened lately, among what is relevant: recency outweighs relevance.
    "recent": SearchConfig(
        "recent",
        vector_weight=0.6,
        keyword_weight=1.0,
        rrf_k=30,
        recency_weight=2.0,
        half_life_days=7.0,
    ),
}


@dataclass(frozen=True)
class Probe:
    """One way into the store: a text for the vector and/or keyword lists, under filters."""

    name: str
    text: str
    weight: float
    vector: bool = True
    keyword: bool = True
    # Fields of MemoryFilter this probe sets over the request's own.
    filters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranked:
    relevance: float
    importance: float
    recency: float
    validity: float
    reinforcement: float
    time: float
    latest: bool = False

    def final(self, recipe: SearchConfig) -> float:
        recency_weight = recipe.recency_weight
        if self.latest:
            recency_weight = max(recency_weight, recipe.latest_recency_weight)
        boost = (
            recipe.importance_weight * self.importance
            + recency_weight * self.recency
            + recipe.reinforcement_weight * self.reinforcement
            + recipe.time_weight * self.time
        )
        return (self.relevance + boost) * self.validity


def rank(
    row: MemoryRow,
    fused: float,
    best: float,
    recipe: SearchConfig,
    now: datetime,
    when: TimeRange | None = None,
    superseded: bool = False,
) -> Ranked:
    """The documented blend, for one candidate row. ``now`` is the moment the question is
    asked (its reference time): ages and expiry are measured from there, so a question asked
    at a date ranks as it would have then."""
    expired = (
        row.memory_type == "temporal" and row.valid_until is not None and row.valid_until <= now
    )
    validity = recipe.expired_factor if expired else 1.0
    if superseded:
        validity *= recipe.superseded_factor
    latest = when is not None and when.recent
    half_life = recipe.half_life_days
    if latest:
        half_life = min(half_life, recipe.latest_half_life_days)
    return Ranked(
        relevance=fused / best if best else 0.0,
        importance=(row.importance or 5) / 10,
        recency=recency(row.occurred_at, now, half_life),
        validity=validity,
        reinforcement=reinforcement(row.reinforced_count),
        time=1.0 if when is not None and when.contains(row.occurred_at) else 0.0,
        latest=latest,
    )


class _Clock:
    """The stage timings a search reports (``diagnostics.timings_ms``); with tracing on, each
    lap is also a span, child of the search's, so the two never disagree."""

    def __init__(self) -> None:
        self.started = self.mark = time.perf_counter()
        self.timings: dict[str, float] = {}

    def lap(self, name: str, *, traced: bool = True) -> None:
        now = time.perf_counter()
        self.timings[name] = round((now - self.mark) * 1000, 3)
        if traced:
            tracing.record(f"memvault.search.{name}", now - self.mark)
        self.mark = now

    def total(self) -> dict[str, float]:
        return {**self.timings, "total": round((time.perf_counter() - self.started) * 1000, 3)}


async def search(
    backend: Backend,
    tenant_id: str,
    request: SearchRequest,
    recipe: SearchConfig,
    *,
    query_embedding: Embedded | None = None,
) -> SearchResult:
    """``query_embedding``: the query's vector when the caller has it already (remember()
    embeds a question once for every kind it recalls)."""
    with tracing.span("memvault.search", recipe=recipe.name, limit=request.limit) as traced:
        found = await _search(backend, tenant_id, request, recipe, query_embedding)
        techniques = found.diagnostics.techniques if found.diagnostics else {}
        traced.set(
            hits=len(found.results),
            degraded=found.degraded,
            **{f"{name}_ms": t.ms for name, t in techniques.items()},
        )
        return found


async def _search(
    backend: Backend,
    tenant_id: str,
    request: SearchRequest,
    recipe: SearchConfig,
    query_embedding: Embedded | None,
) -> SearchResult:
    clock = _Clock()
    now = datetime.now(UTC)
    reference = request.reference_time or now
    # The request was validated on the way in; its filter fields need no second pass.
    filters = MemoryFilter.model_construct(**request.model_dump(include=set(FILTER_FIELDS)))
    when = parse_time(request.query, reference) if request.time_mode != "off" else None
    if when is not None and request.time_mode == "filter":
        filters = _narrowed(filters, when)

    settings = backend.settings
    switches: list[tuple[techniques.Technique, bool | None, bool]] = [
        ("expansion", request.expand, settings.recall_expand),
        ("hyde", request.hyde, settings.recall_hyde),
        ("self_query", request.self_query, settings.recall_self_query),
    ]
    wanted = {name for name, asked, default in switches if (default if asked is None else asked)}
    base_embedding, extras = await asyncio.gather(
        _embed(backend, [request.query])
        if recipe.vector_weight and query_embedding is None
        else _given(query_embedding if recipe.vector_weight else None),
        techniques.run(
            backend.judge.llm,
            request.query,
            wanted,
            reference=reference,
            timeout_s=settings.recall_llm_timeout_s,
        ),
    )
    source: Literal["rules", "llm"] = "rules"
    if when is None and extras.self_query is not None and request.time_mode != "off":
        when = _llm_time(extras.filters())
        source = "llm"
    probes = _probes(request, recipe, filters, when, extras)
    extra_texts = [p.text for p in probes[1:] if p.vector and p.text != request.query]
    extra_embedding = (
        await _embed(backend, extra_texts) if recipe.vector_weight and extra_texts else None
    )
    clock.lap("embed")

    vectors_by_text = _vectors(request.query, base_embedding, extra_texts, extra_embedding)
    # Each keyword list's best possible score, filled in as the list is read.
    keyword_ceilings: dict[str, float] = {}
    weights, fetches = _lists(
        backend, tenant_id, request, recipe, filters, probes, vectors_by_text, keyword_ceilings
    )
    fact_keys = settings.graph_fact_keys if request.fact_keys is None else request.fact_keys
    if fact_keys:
        _fact_lists(backend, tenant_id, request, recipe, filters, vectors_by_text, weights, fetches)
    lists = await _retrieve(backend, fetches, weights, clock)
    # Evidence decides between two sources; one source alone ranks as it found.
    both = bool(recipe.vector_weight and recipe.keyword_weight)
    ceilings = dict(keyword_ceilings) if both else None
    if ceilings is not None and FACT_KEYWORD in weights:
        # A fact holds a few words: its evidence is the share of the query's words it holds
        # (keyword_evidence divides by keyword_full_at; this ceiling undoes that).
        words = len(query_terms(backend.keys.current(tenant_id), request.query))
        ceilings[FACT_KEYWORD] = words / recipe.keyword_full_at
    now_asked = when is None and about_now(request.query)
    own = {f"{p.name}:{kind}" for p in probes if p.text == request.query for kind in _KINDS}
    relevance = relevances(lists, own, keyword_ceilings)
    ranked = _rank(
        lists,
        weights,
        recipe,
        reference,
        when,
        max(request.limit, updates.POOL if settings.search_updates_first else 0),
        ceilings,
        superseded=await _superseded(backend, tenant_id, lists) if now_asked else frozenset(),
        keep=_at_least(relevance, request.min_relevance),
    )
    clock.lap("rank")
    ranked, replaced = await _updates_first(
        backend, tenant_id, request, ranked, vectors_by_text.get(request.query), when, reference
    )
    ranked = ranked[: request.limit]
    clock.lap("updates")
    context = (
        await _context(backend, tenant_id, [row for row, _ in ranked], request.context_window)
        if request.context_window
        else {}
    )
    hits = [
        _hit(backend, row, scores, relevance.get(row.id, 0.0), context.get(row.id)).model_copy(
            update={"replaced_by": replaced.get(row.id)}
        )
        for row, scores in ranked
    ]
    if request.context_window:
        clock.lap("context")
    if request.track_access and hits:
        backend.access.record(tenant_id, [hit.id for hit in hits])

    model = base_embedding.model_id if base_embedding else backend.embeddings.active_model
    degraded = bool(recipe.vector_weight) and (base_embedding is None or base_embedding.fallback)
    for name, report in extras.reports.items():
        clock.timings[name] = round(report.ms, 3)
    diagnostics = SearchDiagnostics(
        timings_ms=clock.total(),
        time=TimeReport(
            expression=when.expression,
            after=when.after,
            before=when.before,
            mode="filter" if request.time_mode == "filter" else "boost",
            source=source,
        )
        if when is not None
        else None,
        techniques=extras.reports,
    )
    return SearchResult(
        results=hits, model=model, degraded=degraded, recipe=recipe.name, diagnostics=diagnostics
    )


async def _given(embedded: Embedded | None) -> Embedded | None:
    return embedded


async def embed_query(backend: Backend, query: str) -> Embedded | None:
    """The query's vector as search makes it (None when no model could embed it)."""
    return await _embed(backend, [query])


async def _embed(backend: Backend, texts: list[str]) -> Embedded | None:
    try:
        return await backend.embeddings.embed_batch(
            [clean(t, backend.settings.embedding_max_chars) for t in texts]
        )
    except MemvaultError as exc:
        # No model could embed the query: answer from keywords alone, and say so.
        log.warning("query embedding failed (%s); keyword results only", exc.code)
        return None


def _vectors(
    query: str, base: Embedded | None, extra_texts: list[str], extra: Embedded | None
) -> dict[str, tuple[Embedded, int]]:
    """Each probe text's vector, as (embedding batch, index); only vectors of the base
    query's model are kept, so every list compares one model."""
    found: dict[str, tuple[Embedded, int]] = {}
    if base is not None:
        found[query] = (base, 0)
        if extra is not None and extra.model_id == base.model_id:
            found.update({t: (extra, n) for n, t in enumerate(extra_texts)})
    return found


def _narrowed(filters: MemoryFilter, when: TimeRange) -> MemoryFilter:
    """The filters with the query's time span intersected into the occurred_at range."""
    return filters.model_copy(update=_span(filters, when))


def _span(filters: MemoryFilter, when: TimeRange) -> dict[str, Any]:
    after = [t for t in (filters.occurred_after, when.after) if t is not None]
    before = [t for t in (filters.occurred_before, when.before) if t is not None]
    return {
        "occurred_after": max(after, default=None),
        "occurred_before": min(before, default=None),
    }


def _llm_time(found: dict[str, Any]) -> TimeRange | None:
    after, before = found.get("occurred_after"), found.get("occurred_before")
    if after is None and before is None:
        return None
    return TimeRange(after, before, "(read by the language model)")


def _probes(
    request: SearchRequest,
    recipe: SearchConfig,
    filters: MemoryFilter,
    when: TimeRange | None,
    extras: techniques.Extras,
) -> list[Probe]:
    weights = recipe.probe_weights
    probes = [Probe("query", request.query, 1.0)]
    if when is not None and request.time_mode == "boost":
        probes.append(Probe("time", request.query, weights["time"], filters=_span(filters, when)))
    probes += [
        Probe(f"expansion{n}", text, weights["expansion"])
        for n, text in enumerate(extras.statements, start=1)
    ]
    if extras.hypothesis:
        probes.append(Probe("hyde", extras.hypothesis, weights["hyde"], keyword=False))
    sq_filters = extras.filters()
    if extras.self_query is not None and sq_filters:
        if request.time_mode == "off":
            sq_filters.pop("occurred_after", None)
            sq_filters.pop("occurred_before", None)
        text = (extras.self_query.query or "").strip() or request.query
        probes.append(Probe("self_query", text, weights["self_query"], filters=sq_filters))
    return probes


# One candidate list: the statements that fetch it, given a connection of its own.
Fetch = Callable[["AsyncConnection"], Awaitable[dict[str, Sequence[RankedMemory]]]]


def _lists(
    backend: Backend,
    tenant_id: str,
    request: SearchRequest,
    recipe: SearchConfig,
    filters: MemoryFilter,
    probes: list[Probe],
    vectors_by_text: dict[str, tuple[Embedded, int]],
    ceilings: dict[str, float],
) -> tuple[dict[str, float], dict[str, Fetch]]:
    """Every probe's vector and keyword lists, by name: their fusion weights, and the fetches
    that read them. Lists of one text (the question, and the question narrowed to the time it
    names) are read together, by one ranking in one statement; a keyword fetch notes each
    list's ceiling in ``ceilings``."""
    weights: dict[str, float] = {}
    by_vector: dict[str, dict[str, MemoryFilter]] = {}
    by_words: dict[str, dict[str, MemoryFilter]] = {}
    for probe in probes:
        probe_filters = filters.model_copy(update=probe.filters)
        if probe.vector and recipe.vector_weight and probe.text in vectors_by_text:
            weights[f"{probe.name}:vector"] = recipe.vector_weight * probe.weight
            by_vector.setdefault(probe.text, {})[f"{probe.name}:vector"] = probe_filters
        if probe.keyword and recipe.keyword_weight:
            weights[f"{probe.name}:keyword"] = recipe.keyword_weight * probe.weight
            by_words.setdefault(probe.text, {})[f"{probe.name}:keyword"] = probe_filters
    fetch = max(recipe.candidates, request.limit)
    fetches: dict[str, Fetch] = {}
    for text, pages in by_vector.items():
        vector = vectors_by_text[text]
        fetches[next(iter(pages))] = functools.partial(
            _nearest, backend, tenant_id, pages, vector, fetch
        )
    for text, pages in by_words.items():
        words = query_terms(backend.keys.current(tenant_id), text)
        fetches[next(iter(pages))] = functools.partial(
            _bm25, backend, tenant_id, pages, words, ceilings, fetch
        )
    return weights, fetches


FACT_VECTOR = "facts:vector"
FACT_KEYWORD = "facts:keyword"


def _fact_lists(
    backend: Backend,
    tenant_id: str,
    request: SearchRequest,
    recipe: SearchConfig,
    filters: MemoryFilter,
    vectors_by_text: dict[str, tuple[Embedded, int]],
    weights: dict[str, float],
    fetches: dict[str, Fetch],
) -> None:
    """Facts as extra keys of their source memories: the query's vector and keyword matches
    among the owner's facts, each lifting the memories the fact was read from."""
    fetch = max(recipe.candidates, request.limit)
    share = backend.settings.graph_fact_keys_weight
    vector = vectors_by_text.get(request.query)
    if recipe.vector_weight and vector is not None:
        embedded, index = vector
        weights[FACT_VECTOR] = recipe.vector_weight * share
        fetches[FACT_VECTOR] = functools.partial(
            _fact_nearest, tenant_id, filters, embedded.vectors[index], embedded.model_id, fetch
        )
    if recipe.keyword_weight:
        term_ids = query_term_ids(backend.keys.current(tenant_id), request.query)
        weights[FACT_KEYWORD] = recipe.keyword_weight * share
        fetches[FACT_KEYWORD] = functools.partial(_fact_terms, tenant_id, filters, term_ids, fetch)


async def _fact_nearest(
    tenant_id: str,
    filters: MemoryFilter,
    vector: list[float],
    model: str,
    limit: int,
    conn: AsyncConnection,
) -> dict[str, Sequence[RankedMemory]]:
    found = await graph_walk.memories_by_fact_vectors(
        conn, tenant_id, filters, vector, model, limit
    )
    return {FACT_VECTOR: found}


async def _fact_terms(
    tenant_id: str, filters: MemoryFilter, term_ids: list[int], limit: int, conn: AsyncConnection
) -> dict[str, Sequence[RankedMemory]]:
    found = await graph_walk.memories_by_fact_terms(conn, tenant_id, filters, term_ids, limit)
    return {FACT_KEYWORD: found}


async def _retrieve(
    backend: Backend, fetches: dict[str, Fetch], weights: dict[str, float], clock: _Clock
) -> dict[str, list[RankedMemory]]:
    """The lists at once, each fetch on a pooled connection of its own, so retrieving takes as
    long as the slowest fetch rather than their sum; each connection goes back to the pool
    behind the search (``read_released_behind``). The tasks inherit the caller's tenant scope
    (a context variable), which every transaction announces to PostgreSQL. The lists come
    back in ``weights``' order, the order fusion adds them up in."""

    async def one(fetch: Fetch) -> tuple[dict[str, Sequence[RankedMemory]], float]:
        started = time.perf_counter()
        with tenancy.ranking_transactions():
            async with read_released_behind(backend.engine) as conn:
                found = await fetch(conn)
        seconds = time.perf_counter() - started
        for name, rows in found.items():
            # Names of the recipe's lists ("query:vector", "facts:keyword"), never text.
            tracing.record("memvault.search.list", seconds, list=name, rows=len(rows))
        return found, round(seconds * 1000, 3)

    with tracing.span("memvault.search.retrieve", fetches=len(fetches)):
        done = await asyncio.gather(*(one(fetch) for fetch in fetches.values()))
        clock.lap("retrieve", traced=False)
        lists: dict[str, list[RankedMemory]] = {}
        for found, ms in done:
            for name, rows in found.items():
                lists[name] = list(rows)
                clock.timings[f"retrieve:{name}"] = ms
    return {name: lists[name] for name in weights if name in lists}


async def _updates_first(
    backend: Backend,
    tenant_id: str,
    request: SearchRequest,
    ranked: list[tuple[RankedMemory, dict[str, float | None]]],
    question: tuple[Embedded, int] | None,
    when: TimeRange | None,
    reference: datetime,
) -> tuple[list[tuple[RankedMemory, dict[str, float | None]]], dict[UUID, UUID]]:
    """The best candidates with every update above what it replaced, for a question about how
    things stand (retrieval/updates.py); and which returned memory each replaced one gave way
    to. The candidates are compared with each other by their stored vectors."""
    if not backend.settings.search_updates_first:
        return ranked, {}
    asked, as_of = updates.asked_about(request.query, when, reference)
    pool = ranked[: updates.POOL]
    if asked == "none" or question is None or len({row.occurred_at for row, _ in pool}) < 2:
        return ranked, {}
    asked_with, index = question
    texts = [_opened(backend, row) for row, _ in pool]
    pooled = await _statement_vectors(backend, tenant_id, pool, texts, asked_with)
    if pooled is None:
        return ranked, {}
    # A memory dated after this moment was not said then: its date is of an event it names
    # ("ballet on Tuesday afternoons" stored on a Sunday), so it is no later statement.
    said = datetime.now(UTC)
    statements = [
        updates.Statement(row.id, text, row.occurred_at, vector)
        for (row, _), text, vector in zip(pool, texts, pooled, strict=True)
        if row.occurred_at <= said
    ]
    found = updates.replacements(statements, asked_with.vectors[index], asked, as_of)
    if not found:
        return ranked, {}
    final = {row.id: float(scores["final"] or 0.0) for row, scores in pool}
    moved = updates.reorder(final, found)
    rescored = [
        (row, {**scores, "final": moved[row.id]} if row.id in moved else scores)
        for row, scores in ranked
    ]
    rescored.sort(key=lambda r: (-float(r[1]["final"] or 0.0), str(r[0].id)))
    return rescored, {r.loser: r.winner for r in found if r.past}


async def _statement_vectors(
    backend: Backend,
    tenant_id: str,
    pool: list[tuple[RankedMemory, dict[str, float | None]]],
    texts: list[str],
    asked_with: Embedded,
) -> list[Sequence[float]] | None:
    """The candidates' vectors in the question's model: as stored with them (one read), and
    embedded only for one that has none yet (a write still pending). Embedding the whole pool
    again cost a search five times its time with the embedding cache off."""
    ids = [row.id for row, _ in pool]
    # A read: nothing to commit, so its rollback and the connection's return run behind.
    with tenancy.ranking_transactions():
        async with read_released_behind(backend.engine) as conn:
            stored = await vectors.first_vectors(conn, tenant_id, ids, asked_with.model_id)
    missing = [n for n, memory_id in enumerate(ids) if memory_id not in stored]
    if missing:
        embedded = await _embed(backend, [texts[n] for n in missing])
        if embedded is None or embedded.model_id != asked_with.model_id:
            return None
        stored.update({ids[n]: v for n, v in zip(missing, embedded.vectors, strict=True)})
    return [stored[memory_id] for memory_id in ids]


def _opened(backend: Backend, row: RankedMemory) -> str:
    """A candidate's text, decrypted (a whole record costs more than the text alone)."""
    return open_content(backend.keys, row.tenant_id, row.id, row.ciphertext, row.nonce, row.key_id)


async def _superseded(
    backend: Backend, tenant_id: str, lists: dict[str, list[RankedMemory]]
) -> set[UUID]:
    """The candidates whose facts have all been replaced by newer ones."""
    ids = sorted({row.id for rows in lists.values() for row in rows})
    if not ids:
        return set()
    with tenancy.ranking_transactions():
        async with read_released_behind(backend.engine) as conn:
            return await graph_walk.superseded_sources(conn, tenant_id, ids)


async def _nearest(
    backend: Backend,
    tenant_id: str,
    pages: dict[str, MemoryFilter],
    vector: tuple[Embedded, int],
    limit: int,
    conn: AsyncConnection,
) -> dict[str, Sequence[RankedMemory]]:
    embedded, index = vector
    found = await backend.vector_index.pages(
        conn,
        tenant_id,
        list(pages.values()),
        embedded.vectors[index],
        embedded.model_id,
        embedded.dimensions,
        limit,
    )
    return dict(zip(pages, found, strict=True))


async def _bm25(
    backend: Backend,
    tenant_id: str,
    pages: dict[str, MemoryFilter],
    words: dict[str, list[int]],
    ceilings: dict[str, float],
    limit: int,
    conn: AsyncConnection,
) -> dict[str, Sequence[RankedMemory]]:
    term_ids = sorted({i for ids in words.values() for i in ids})
    found = await keywords.bm25(
        conn, tenant_id, list(pages.values()), term_ids, limit, known=backend.keyword_stats
    )
    for name, matches in zip(pages, found, strict=True):
        ceilings[name] = _ceiling(words, matches)
    return {name: matches.rows for name, matches in zip(pages, found, strict=True)}


def _ceiling(words: dict[str, list[int]], matches: keywords.KeywordMatches) -> float:
    """A keyword list's best possible BM25 for its probe's text: the sum of the query words'
    IDF over the owner's memories (a word no memory holds counts too: the query asked for it
    and nothing matched)."""
    return sum(
        keywords.idf(matches.n_docs, sum(matches.dfs.get(i, 0) for i in ids))
        for ids in words.values()
    )


def rrf(ranked: dict[str, list[Any]], weights: dict[str, float], k: int) -> dict[Any, float]:
    """Reciprocal rank fusion: each list adds weight / (k + rank) to the items it ranks."""
    fused: dict[Any, float] = {}
    for source, items in ranked.items():
        for position, item in enumerate(items, start=1):
            fused[item] = fused.get(item, 0.0) + weights[source] / (k + position)
    return fused


def fuse(
    ranked: dict[str, list[tuple[Any, float]]], weights: dict[str, float], k: int
) -> dict[Any, float]:
    """Score-aware reciprocal rank fusion: each list adds weight * evidence / (k + rank) to
    the items it ranks, where evidence (0-1) is how strongly that list vouches for the item.
    A list whose best match is weak adds little, however high it ranks it."""
    fused: dict[Any, float] = {}
    for source, items in ranked.items():
        for position, (item, evidence) in enumerate(items, start=1):
            fused[item] = fused.get(item, 0.0) + weights[source] * evidence / (k + position)
    return fused


def keyword_evidence(score: float, ceiling: float, full_at: float) -> float:
    """A BM25 score as evidence: its share of the query's best possible score (every query
    term matched once, in a memory of average length), counting in full from ``full_at``.
    A match on words most memories share ("Sara" in every fact about Sara) carries little."""
    if ceiling <= 0:
        return 0.0
    return min(1.0, score / ceiling / full_at)


def vector_evidence(similarities: list[float], floor: float | None) -> list[float]:
    """Similarities as evidence: with a floor, how far each rises above it relative to the
    list's best, so a list of near-equal weak matches carries little; without one, all 1."""
    if floor is None or not similarities:
        return [1.0] * len(similarities)
    span = max(similarities[0] - floor, 1e-9)
    return [min(1.0, max(0.0, (s - floor) / span)) for s in similarities]


def list_evidence(
    lists: dict[str, list[RankedMemory]], ceilings: dict[str, float], recipe: SearchConfig
) -> dict[str, list[tuple[UUID, float]]]:
    """Each list's items with their evidence, in the list's order."""
    out: dict[str, list[tuple[UUID, float]]] = {}
    for name, items in lists.items():
        if name.endswith(":vector"):
            evidence = vector_evidence([_similarity(r) for r in items], recipe.vector_floor)
        else:
            ceiling = ceilings.get(name, 0.0)
            evidence = [keyword_evidence(r.rank, ceiling, recipe.keyword_full_at) for r in items]
        # Rank alone keeps a share, so a list's order still counts where its scores say little.
        share = recipe.rank_share
        out[name] = [(r.id, share + (1 - share) * e) for r, e in zip(items, evidence, strict=True)]
    return out


def _similarity(row: RankedMemory) -> float:
    return 1.0 - min(max(row.rank, 0.0), 1.0)


_KINDS = ("vector", "keyword")


def relevances(
    lists: dict[str, list[RankedMemory]], own: set[str], ceilings: dict[str, float]
) -> dict[UUID, float]:
    """Each candidate's calibrated relevance to the question itself, 0-1, which unlike the
    rank-relative score falls when the text stops matching, whatever else the store holds: the
    stronger of its meaning (the cosine similarity of its best chunk, or of a fact read from
    it, to the query) and its words (its BM25 over the query's best possible BM25, capped at
    1). Both, as fusion does: a rare name the query and the memory share is a match the small
    embedding model may not see. ``own`` names the lists of the question's own text (an LLM's
    rewording of it is not what the caller asked)."""
    best: dict[UUID, float] = {}
    for name, items in lists.items():
        if name == FACT_VECTOR or (name in own and name.endswith(":vector")):
            found = [(row.id, _similarity(row)) for row in items]
        elif name in own:
            found = [(row.id, _share(row.rank, ceilings.get(name, 0.0))) for row in items]
        else:
            continue
        for ident, value in found:
            best[ident] = max(value, best.get(ident, 0.0))
    return best


def _share(bm25: float, ceiling: float) -> float:
    return min(1.0, max(bm25, 0.0) / ceiling) if ceiling > 0 else 0.0


def _at_least(relevance: dict[UUID, float], floor: float | None) -> Callable[[UUID], bool] | None:
    if floor is None:
        return None
    return lambda i: relevance.get(i, 0.0) >= floor


def _rank(
    lists: dict[str, list[RankedMemory]],
    weights: dict[str, float],
    recipe: SearchConfig,
    now: datetime,
    when: TimeRange | None,
    limit: int,
    ceilings: dict[str, float] | None = None,
    *,
    superseded: frozenset[UUID] | set[UUID] = frozenset(),
    keep: Callable[[UUID], bool] | None = None,
) -> list[tuple[RankedMemory, dict[str, float | None]]]:
    """The top ``limit`` candidates with their score breakdowns, best first; ``now`` is the
    moment the question is asked. ``keep`` drops candidates before the cut (min_relevance),
    so the page still fills from those that pass; it never reorders them."""
    rows: dict[UUID, RankedMemory] = {}
    similarity: dict[UUID, float] = {}
    bm25: dict[UUID, float] = {}
    for name, items in lists.items():
        for row in items:
            rows.setdefault(row.id, row)
            if name in (FACT_VECTOR, FACT_KEYWORD):
                # A fact's score is the fact's, not the memory's own match.
                continue
            if name.endswith(":vector"):
                similarity[row.id] = max(_similarity(row), similarity.get(row.id, 0.0))
            else:
                bm25[row.id] = max(row.rank, bm25.get(row.id, 0.0))
    if ceilings is None:
        fused = rrf({n: [r.id for r in items] for n, items in lists.items()}, weights, recipe.rrf_k)
    else:
        fused = fuse(list_evidence(lists, ceilings, recipe), weights, recipe.rrf_k)
    best = max(fused.values(), default=0.0)
    ranked = {
        i: rank(rows[i], fused[i], best, recipe, now, when, i in superseded)
        for i in fused
        if fused[i] > 0
    }
    final = {i: r.final(recipe) for i, r in ranked.items()}
    order = sorted(final, key=lambda i: (-final[i], str(i)))
    order = [i for i in order if keep is None or keep(i)][:limit]
    return [
        (
            rows[i],
            {
                "final": final[i],
                "vector": similarity.get(i),
                "keyword": bm25.get(i),
                "fused": fused[i],
                "relevance": ranked[i].relevance,
                "importance": ranked[i].importance,
                "recency": ranked[i].recency,
                "validity": ranked[i].validity,
                "reinforcement": ranked[i].reinforcement,
                "time": ranked[i].time,
            },
        )
        for i in order
    ]


async def _context(
    backend: Backend, tenant_id: str, rows: list[RankedMemory], window: int
) -> dict[UUID, list[MemoryRow]]:
    """The turns around each conversational hit, from the same user, app and session."""
    wanted = {
        row.id: (row.user_id, row.app_id, row.metadata["session_id"], int(row.metadata["turn"]))
        for row in rows
        if isinstance(row.metadata, dict)
        and isinstance(row.metadata.get("session_id"), str)
        and isinstance(row.metadata.get("turn"), int)
    }
    if not wanted:
        return {}
    spans = [
        (user, app, session, turn - window, turn + window)
        for user, app, session, turn in wanted.values()
    ]
    async with transaction(backend.engine) as conn:
        around = await store.session_turns(conn, tenant_id, spans)
    return {
        hit: sorted(
            (
                r
                for r in around
                if (r.user_id, r.app_id, r.metadata.get("session_id")) == (user, app, session)
                and abs(r.metadata["turn"] - turn) <= window
                and r.id != hit
            ),
            key=lambda r: r.metadata["turn"],
        )
        for hit, (user, app, session, turn) in wanted.items()
    }


def _hit(
    backend: Backend,
    row: RankedMemory,
    scores: dict[str, float | None],
    relevance: float,
    context: list[MemoryRow] | None,
) -> SearchHit:
    # Only the hits returned (and their context) are decrypted.
    final = scores.pop("final")
    assert final is not None
    return SearchHit(
        **to_record(backend.keys, row).model_dump(),
        similarity=scores["vector"],
        relevance=relevance,
        score=final,
        scores=scores,
        context=[MemoryRecord.model_validate(to_record(backend.keys, r)) for r in context]
        if context is not None
        else None,
    )
