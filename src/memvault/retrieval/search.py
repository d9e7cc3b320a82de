"""Search strategies as data, and the hybrid search they drive: vector candidates (HNSW or
exact) and blind-index BM25 candidates, fused by reciprocal rank fusion.

RRF is used because BM25 and cosine scores live on different scales: a rank-based fusion
lets a strong keyword match win where the small embedding model is unsure, and vice versa.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memvault.db import keywords, vectors
from memvault.db.store import AnyRow
from memvault.embedding.chunking import clean
from memvault.embedding.service import Embedded
from memvault.errors import MemvaultError
from memvault.models import SearchHit, SearchRequest, SearchResult
from memvault.retrieval.terms import query_term_ids
from memvault.sealing import to_record

if TYPE_CHECKING:
    from memvault.runtime import Backend

log = logging.getLogger(__name__)
RecipeName = Literal["hybrid", "vector", "keyword", "recent"]


@dataclass(frozen=True)
class SearchConfig:
    """One named way to search: which candidate sources, how many, how they are fused."""

    name: str
    vector_weight: float
    keyword_weight: float
    candidates: int = 50
    rrf_k: int = 60
    # The final score: relevance (fused, scaled so the best candidate is 1) plus these
    # weights times importance (0.1-1.0) and recency (halving every half_life_days of
    # occurred_at age), times expired_factor for a temporal memory past valid_until.
    importance_weight: float = 0.02
    recency_weight: float = 0.02
    half_life_days: float = 30.0
    # Mild: an expired plan is still the evidence of what happened (0.5 cost 0.02 R@10 on the
    # LoCoMo dev split, where most dated turns have long expired).
    expired_factor: float = 0.9


RECIPES: dict[str, SearchConfig] = {
    # Tuned on the LoCoMo dev split (bench/locomo.py): keywords outrank a small embedding
    # model on conversational memory, so they weigh more, and a low k lets a clear first
    # place in either list count.
    "hybrid": SearchConfig("hybrid", vector_weight=0.6, keyword_weight=1.0, rrf_k=10),
    "vector": SearchConfig("vector", vector_weight=1.0, keyword_weight=0.0),
    "keyword": SearchConfig("keyword", vector_weight=0.0, keyword_weight=1.0),
    # What happened lately, among what is relevant: recency outweighs relevance.
    "recent": SearchConfig(
        "recent",
        vector_weight=0.6,
        keyword_weight=1.0,
        rrf_k=10,
        recency_weight=2.0,
        half_life_days=7.0,
    ),
}


@dataclass(frozen=True)
class Ranked:
    relevance: float
    importance: float
    recency: float
    validity: float

    def final(self, recipe: SearchConfig) -> float:
        boost = recipe.importance_weight * self.importance + recipe.recency_weight * self.recency
        return (self.relevance + boost) * self.validity


def rank(row: AnyRow, fused: float, best: float, recipe: SearchConfig, now: datetime) -> Ranked:
    """The documented blend, for one candidate row."""
    age_days = max((now - row.occurred_at).total_seconds(), 0.0) / 86_400
    expired = (
        row.memory_type == "temporal" and row.valid_until is not None and row.valid_until <= now
    )
    return Ranked(
        relevance=fused / best if best else 0.0,
        importance=(row.importance or 5) / 10,
        recency=0.5 ** (age_days / recipe.half_life_days),
        validity=recipe.expired_factor if expired else 1.0,
    )


async def search(
    backend: Backend, tenant_id: str, request: SearchRequest, recipe: SearchConfig
) -> SearchResult:
    filters = request.model_dump(exclude={"query", "limit", "recipe"})
    fetch = max(recipe.candidates, request.limit)
    embedded = await _embed_query(backend, request.query) if recipe.vector_weight else None
    async with backend.engine.begin() as conn:
        near = await _vector_candidates(conn, backend, tenant_id, filters, embedded, fetch)
        term_ids = query_term_ids(backend.keys.current(), request.query)
        keyed = (
            await keywords.bm25(conn, tenant_id, filters, term_ids, fetch)
            if recipe.keyword_weight
            else []
        )
    hits = _fuse(backend, recipe, near, keyed, request.limit)
    model = embedded.model_id if embedded else backend.embeddings.active_model
    degraded = bool(recipe.vector_weight) and (embedded is None or embedded.fallback)
    return SearchResult(results=hits, model=model, degraded=degraded, recipe=recipe.name)


async def _embed_query(backend: Backend, query: str) -> Embedded | None:
    try:
        return await backend.embeddings.embed_batch(
            [clean(query, backend.settings.embedding_max_chars)]
        )
    except MemvaultError as exc:
        # No model could embed the query: answer from keywords alone, and say so.
        log.warning("query embedding failed (%s); keyword results only", exc.code)
        return None


async def _vector_candidates(
    conn: Any,
    backend: Backend,
    tenant_id: str,
    filters: dict[str, Any],
    embedded: Embedded | None,
    fetch: int,
) -> list[AnyRow]:
    if embedded is None:
        return []
    settings = backend.settings
    size = await vectors.scope_size(
        conn, tenant_id, filters["user_id"], embedded.model_id, cap=settings.search_exact_max_chunks
    )
    return list(
        await vectors.nearest(
            conn,
            tenant_id,
            filters,
            embedded.vectors[0],
            embedded.model_id,
            embedded.dimensions,
            fetch,
            exact=size <= settings.search_exact_max_chunks,
            ef_search=settings.hnsw_ef_search,
        )
    )


def rrf(ranked: dict[str, list[Any]], weights: dict[str, float], k: int) -> dict[Any, float]:
    """Reciprocal rank fusion: each list adds weight / (k + rank) to the items it ranks."""
    fused: dict[Any, float] = {}
    for source, items in ranked.items():
        for rank, item in enumerate(items, start=1):
            fused[item] = fused.get(item, 0.0) + weights[source] / (k + rank)
    return fused


def _fuse(
    backend: Backend,
    recipe: SearchConfig,
    near: list[AnyRow],
    keyed: list[AnyRow] | Any,
    limit: int,
) -> list[SearchHit]:
    rows = {row.id: row for row in (*keyed, *near)}
    similarity = {row.id: 1.0 - min(max(float(row.distance), 0.0), 1.0) for row in near}
    bm25 = {row.id: float(row.score) for row in keyed}
    fused = rrf(
        {"vector": [r.id for r in near], "keyword": [r.id for r in keyed]},
        {"vector": recipe.vector_weight, "keyword": recipe.keyword_weight},
        recipe.rrf_k,
    )
    now = datetime.now(UTC)
    best = max(fused.values(), default=0.0)
    ranked = {i: rank(rows[i], fused[i], best, recipe, now) for i in fused if fused[i] > 0}
    final = {i: r.final(recipe) for i, r in ranked.items()}
    # Only the hits returned are decrypted.
    order = sorted(final, key=lambda i: (-final[i], str(i)))[:limit]
    return [
        SearchHit(
            **to_record(backend.keys, rows[i]).model_dump(),
            similarity=similarity.get(i),
            score=final[i],
            scores={
                "vector": similarity.get(i),
                "keyword": bm25.get(i),
                "fused": fused[i],
                "relevance": ranked[i].relevance,
                "importance": ranked[i].importance,
                "recency": ranked[i].recency,
                "validity": ranked[i].validity,
            },
        )
        for i in order
    ]
