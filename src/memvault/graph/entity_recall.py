"""Facts and entities for a search (``include=["facts", "entities"]``), entity-centric.

"Tell me about X": the entities the query names (their name words on the blind index, or
their name embedding near the query's), their neighbours within two hops, the current facts of
all of them, and facts whose own words or meaning match the query. Scores are relevance
(keywords, meaning, closeness to a named entity) times a temporal boost (current times 1.2, past
times 0.7) and the fact's confidence. What is returned counts an access (the lifecycle's
measure of use), which no later ranking reads: retrieval alone is not use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from uuid import UUID

from memvault.db import graph as graph_db
from memvault.db import graph_walk
from memvault.db.graph import EntityRow, FactRow
from memvault.db.units import read_released_behind, reading
from memvault.embedding.chunking import clean
from memvault.embedding.embedding_service import Embedded
from memvault.errors import MemvaultError
from memvault.graph import sealed
from memvault.language.terms import query_terms
from memvault.models import EntityHit, FactHit, SearchRequest

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend


class _Unset:
    """No query vector given: recall embeds the query itself."""


_UNSET = _Unset()

CURRENT_BOOST, PAST_BOOST = 1.2, 0.7
# How much a fact counts for being about a named entity, by hops from it.
HOP_WEIGHT = {0: 1.0, 1: 0.6, 2: 0.4}
ENTITY_SIMILARITY_FLOOR = 0.5
EXPANDED_ENTITIES = 3
CANDIDATES = 50


@dataclass(frozen=True)
class Recalled:
    facts: list[FactHit] | None
    entities: list[EntityHit] | None
    entity_channels: dict[UUID, str] = field(default_factory=dict)
    # What stands behind each entity returned, when recall was asked for it (``support``).
    entity_support: dict[UUID, graph_walk.Support] = field(default_factory=dict)


async def recall(
    backend: Backend,
    tenant_id: str,
    request: SearchRequest,
    *,
    embedded: Embedded | _Unset | None = _UNSET,
    channels: Collection[str] | None = None,
    support: int = 0,
) -> Recalled:
    """``embedded``: the query's vector when the caller already has it (``None``: keywords
    only); ``channels``: only facts and entities recorded in these (default: every channel);
    ``support`` > 0: each entity's ``Support`` too, mentions counted up to ``support``."""
    keyring = backend.keys.current(tenant_id)
    words = query_terms(keyring, request.query)
    term_ids = sorted({i for ids in words.values() for i in ids})
    user = request.user_id
    if isinstance(embedded, _Unset):
        vector, model = await _query_vector(backend, request.query)
    elif embedded is None:
        vector, model = None, None
    else:
        vector, model = embedded.vectors[0], embedded.model_id

    def in_scope(channel: str) -> bool:
        return channels is None or channel in channels

    now = datetime.now(UTC)
    supported: dict[UUID, graph_walk.Support] = {}

    async def about_named() -> tuple[
        dict[UUID, float],
        dict[UUID, EntityRow],
        graph_walk.Walk,
        list[graph_walk.Candidate[FactRow]],
    ]:
        """The entities the query names, the graph around the best of them, and the facts
        about that neighbourhood: one connection, three statements in turn."""
        async with read_released_behind(backend.engine) as conn:
            found = await graph_walk.entity_candidates(
                conn,
                tenant_id,
                user,
                term_ids,
                vector,
                model,
                by_terms=CANDIDATES,
                by_meaning=10,
                support=support,
            )
            supported.update({c.row.id: c.support for c in found if c.support is not None})
            scores: dict[UUID, float] = {}
            for c in found:
                if c.matched:
                    scores[c.row.id] = c.matched / max(len(words), 1)
                if c.similarity is not None and c.similarity >= ENTITY_SIMILARITY_FLOOR:
                    scores[c.row.id] = scores.get(c.row.id, 0.0) + c.similarity
            named = {
                c.row.id: c.row
                for c in found
                if c.row.id in scores and c.row.user_id == user and in_scope(c.row.channel)
            }
            walked = await _expand(backend, conn, tenant_id, user, named, scores, now)
            # Of the neighbourhood's facts only those that can still make the cut come back:
            # one the other search did not find scores by nearness alone, so no more than
            # ``request.limit`` of them can rank in the end (twice that leaves room for
            # rounding at the edge).
            about = await graph_walk.facts_near_entities(
                conn,
                tenant_id,
                user,
                {i: HOP_WEIGHT.get(h, 0.0) for i, h in sorted(walked.nodes.items())},
                None if channels is None else sorted(channels),
                now,
                boosts=(CURRENT_BOOST, PAST_BOOST),
                pool=CANDIDATES * 4,
                keep=2 * request.limit,
            )
        return scores, named, walked, about

    async def matching() -> list[graph_walk.Candidate[FactRow]]:
        async with read_released_behind(backend.engine) as conn:
            return await graph_walk.fact_candidates(
                conn, tenant_id, user, term_ids, vector, model, limit=CANDIDATES
            )

    # Two independent searches on two connections (their own even inside remember()'s shared
    # reads): recall waits for the longer, not both, and for neither's rollback.
    (entity_scores, named, walked, about), matches = await asyncio.gather(about_named(), matching())
    hops = walked.nodes
    fact_words = {c.row.id: c.matched for c in matches if c.matched}
    fact_meaning = {c.row.id: c.similarity for c in matches if c.similarity is not None}
    found = {c.row.id: c for c in [*matches, *about]}
    rows = {i: c.row for i, c in found.items() if _live(c.row, now) and in_scope(c.row.channel)}
    scored = {
        i: _fact_scores(r, fact_words, len(words), fact_meaning, hops, now) for i, r in rows.items()
    }
    fact_order = sorted(scored, key=lambda i: (-scored[i]["final"], str(i)))[: request.limit]
    entity_order = sorted(
        (i for i in entity_scores if i in named),
        key=lambda i: (-entity_scores[i], str(i)),
    )[: request.limit]
    kept = [rows[i] for i in fact_order]
    # Names for what is shown: the walk and the named entities brought most of them.
    entities = {**walked.entities, **named}
    shown = {i for r in kept for i in (r.subject_id, r.object_id) if i is not None}
    if shown - entities.keys():
        async with reading(backend.engine) as conn:
            entities |= await graph_db.fetch_entities(conn, tenant_id, shown - entities.keys())
    if request.track_access:  # written in the background, as memories' accesses are
        backend.access.record_graph(tenant_id, fact_order, entity_order)
    names = {
        i: sealed.open_entity(keyring, entities[i]).name
        for i in shown | set(entity_order)
        if i in entities
    }
    wanted = set(request.include)
    return Recalled(
        facts=[
            FactHit(
                **sealed.to_fact(backend.keys, rows[i], names, found[i].sources or []).model_dump(),
                score=scored[i]["final"],
                scores=scored[i],
            )
            for i in fact_order
        ]
        if "facts" in wanted
        else None,
        entities=[
            EntityHit(
                **sealed.to_entity(backend.keys, named[i]).model_dump(),
                score=entity_scores[i],
                scores={"match": entity_scores[i]},
            )
            for i in entity_order
        ]
        if "entities" in wanted
        else None,
        entity_channels={i: named[i].channel for i in entity_order},
        entity_support={i: supported[i] for i in entity_order if i in supported},
    )


async def _query_vector(backend: Backend, query: str) -> tuple[list[float] | None, str | None]:
    try:
        embedded = await backend.embeddings.embed_batch(
            [clean(query, backend.settings.embedding_max_chars)]
        )
    except MemvaultError:
        return None, None  # keywords alone, as memory search degrades
    return embedded.vectors[0], embedded.model_id


async def _expand(
    backend: Backend,
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    named: dict[UUID, EntityRow],
    scores: dict[UUID, float],
    now: datetime,
) -> graph_walk.Walk:
    """The best-named entities and their neighbours within two hops (id → hops), with
    their rows."""
    best = sorted(named, key=lambda i: (-scores[i], str(i)))[:EXPANDED_ENTITIES]
    if not best:
        return graph_walk.Walk({}, [], {})
    settings = backend.settings
    return await graph_walk.walk(
        conn,
        tenant_id,
        user_id,
        best,
        depth=2,
        now=now,
        fanout=settings.graph_fanout,
        max_nodes=settings.graph_max_nodes * len(best),  # as many as walking each alone
        max_edges=settings.graph_max_edges,
        edges=False,  # recall scores the nodes' facts; the edges among them are not read
    )


def _live(row: FactRow, now: datetime) -> bool:
    """Not replaced, and not a value that never held (corrected or rejected)."""
    empty = row.valid_from is not None and row.valid_from == row.valid_until
    future = row.valid_from is not None and row.valid_from > now
    return row.superseded_at is None and not empty and not future


def _is_past(row: FactRow, now: datetime) -> bool:
    return row.temporal == "past" or (row.valid_until is not None and row.valid_until <= now)


def _fact_scores(
    row: FactRow,
    words: dict[UUID, int],
    n_words: int,
    meaning: dict[UUID, float],
    hops: dict[UUID, int],
    now: datetime,
) -> dict[str, float]:
    keyword = words.get(row.id, 0) / max(n_words, 1)
    vector = max(meaning.get(row.id, 0.0), 0.0)
    closeness = max(
        (HOP_WEIGHT.get(hops[i], 0.0) for i in (row.subject_id, row.object_id) if i in hops),
        default=0.0,
    )
    boost = PAST_BOOST if _is_past(row, now) else CURRENT_BOOST
    relevance = 0.5 * keyword + 0.5 * vector + 0.5 * closeness
    final = relevance * boost * (0.5 + 0.5 * row.confidence)
    return {
        "final": final,
        "keyword": keyword,
        "vector": vector,
        "entity": closeness,
        "temporal": boost,
        "confidence": row.confidence,
    }
