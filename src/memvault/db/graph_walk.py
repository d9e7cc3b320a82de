"""The knowledge graph's read paths beyond single rows: the walk (a recursive CTE over the
owner's current graph) and the candidate queries of recall (blind terms, vectors), with
reinforcement of what recall returned."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.graph import EntityRow, scope, vector_text
from memvault.db.records import RankedMemory
from memvault.db.store import (
    ACCESS_COUNTS,
    ACCESSED,
    add_access_counts,
    fetch_ranked,
    ranked_page,
)
from memvault.db.tables import entities, entity_terms, fact_sources, fact_terms, facts
from memvault.db.templates import param, template
from memvault.models import MemoryFilter

_e = entities.c
_f = facts.c


@dataclass(frozen=True)
class Edge:
    """One step of a walk: ``source`` —kind→ ``target`` (a relation, or a fact whose object
    is an entity), found at ``depth`` hops from the start."""

    source_id: UUID
    kind: str
    target_id: UUID
    via: UUID
    depth: int
    relation: bool


# --- traversal ----------------------------------------------------------------------------

# The owner's current graph, walked from the start by index lookups per node (relations both
# ways, and facts whose object is an entity), each node's neighbours capped at :fanout and the
# nodes at :max_nodes, so a hub cannot blow the walk up. The edges are those the walk took:
# a hub's thousandth fact is never read.
_LIVE_R = "(r.valid_until IS NULL OR r.valid_until > :now)"
_LIVE_F = (
    "f.object_id IS NOT NULL AND f.superseded_at IS NULL "
    "AND (f.valid_until IS NULL OR f.valid_until > :now) "
    "AND (f.valid_from IS NULL OR f.valid_from <= :now)"
)
# Each node comes back with its entity row (one round trip for the whole view).
_NODE_COLUMNS = ", ".join(f"e.{f.name} AS node_{f.name}" for f in fields(EntityRow))
_NO_NODE = ", ".join(f"NULL AS node_{f.name}" for f in fields(EntityRow))
_WALK = sa.text(
    f"""
    WITH RECURSIVE start AS MATERIALIZED (
        -- By primary key alone: unanalysed, the planner would read the owner's entities
        -- through the (tenant, user, name) index to find one id.
        SELECT e.id, e.user_id FROM entities e
        WHERE e.tenant_id = :tenant AND e.id = ANY(CAST(:starts AS uuid[]))
    ),
    walk(node, depth, source_id, kind, target_id, via, relation) AS (
        SELECT s.id, 0, NULL::uuid, NULL::text, NULL::uuid, NULL::uuid, NULL::boolean
        FROM start s WHERE s.user_id = :user
        UNION
        SELECT n.other, w.depth + 1, n.source_id, n.kind, n.target_id, n.via, n.relation
        FROM walk w
        CROSS JOIN LATERAL (
            SELECT r.target_id AS other, r.source_id, r.type AS kind, r.target_id, r.id AS via,
                   true AS relation
            FROM relations r
            WHERE r.tenant_id = :tenant AND r.source_id = w.node AND {_LIVE_R}
            UNION ALL
            SELECT r.source_id, r.source_id, r.type, r.target_id, r.id, true FROM relations r
            WHERE r.tenant_id = :tenant AND r.target_id = w.node AND {_LIVE_R}
            UNION ALL
            SELECT f.object_id, f.subject_id, f.predicate, f.object_id, f.id, false
            FROM facts f
            WHERE f.tenant_id = :tenant AND f.subject_id = w.node AND {_LIVE_F}
            UNION ALL
            SELECT f.subject_id, f.subject_id, f.predicate, f.object_id, f.id, false
            FROM facts f
            WHERE f.tenant_id = :tenant AND f.object_id = w.node AND {_LIVE_F}
            LIMIT :fanout
        ) n
        WHERE w.depth < :depth
    ),
    nodes AS MATERIALIZED (
        SELECT node, min(depth) AS depth FROM walk GROUP BY node
        ORDER BY min(depth), node LIMIT :max_nodes
    )
    SELECT n.node AS source_id, NULL AS kind, NULL AS target_id, NULL AS via,
           NULL AS relation, n.depth, {_NODE_COLUMNS}
    FROM nodes n
    CROSS JOIN LATERAL (
        SELECT * FROM entities x WHERE x.tenant_id = :tenant AND x.id = n.node OFFSET 0
    ) e
    UNION ALL (
        SELECT DISTINCT ON (w.via) w.source_id, w.kind, w.target_id, w.via, w.relation,
               GREATEST(a.depth, b.depth) AS depth, {_NO_NODE}
        FROM walk w
        JOIN nodes a ON a.node = w.source_id
        JOIN nodes b ON b.node = w.target_id
        WHERE w.via IS NOT NULL
        ORDER BY w.via
        LIMIT :max_edges
    )
    """
)


@dataclass(frozen=True)
class Walk:
    nodes: dict[UUID, int]  # entity id → hops from the start
    edges: list[Edge]
    entities: dict[UUID, EntityRow]


async def walk(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    starts: Sequence[UUID],
    *,
    depth: int,
    now: datetime,
    fanout: int,
    max_nodes: int,
    max_edges: int,
) -> Walk:
    """The entities within ``depth`` hops of any of ``starts`` (the owner's: others start
    nothing) in the owner's current graph, each at its fewest hops from one of them, with
    their rows, and the edges among them: one statement however many starts."""
    rows = await conn.execute(
        _WALK,
        {
            "tenant": tenant_id,
            "user": user_id,
            "starts": list(starts),
            "depth": depth,
            "now": now,
            "fanout": fanout,
            "max_nodes": max_nodes,
            "max_edges": max_edges,
        },
    )
    found = Walk({}, [], {})
    names = [f.name for f in fields(EntityRow)]
    for r in rows:
        if r.kind is None:
            found.nodes[r.source_id] = int(r.depth)
            mapping = r._mapping
            found.entities[r.source_id] = EntityRow(**{n: mapping[f"node_{n}"] for n in names})
        else:
            found.edges.append(
                Edge(r.source_id, r.kind, r.target_id, r.via, int(r.depth), bool(r.relation))
            )
    return found


async def keyword_matches(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    kind: str,
    term_ids: Sequence[int],
    limit: int,
) -> dict[UUID, int]:
    """Facts or entities of the owner by how many of the query's terms they hold."""
    if not term_ids:
        return {}
    query = template(("graph", "keyword matches", kind, limit), _keyword_matches, kind, limit)
    params = {"tenant_id": tenant_id, "user_id": user_id, "terms": list(term_ids)}
    return {r.item: int(r.matched) for r in await conn.execute(query, params)}


def _keyword_matches(kind: str, limit: int) -> sa.Select[Any]:
    table, column = (fact_terms, "fact_id") if kind == "fact" else (entity_terms, "entity_id")
    c = table.c
    matched = sa.func.count(sa.distinct(c.term)).label("matched")
    return (
        sa.select(c[column].label("item"), matched)
        .where(
            c.tenant_id == param("tenant_id"),
            c.user_id == param("user_id"),
            c.term.in_(param("terms", expanding=True)),
        )
        .group_by(c[column])
        .order_by(matched.desc(), c[column])
        .limit(limit)
    )


async def nearest_facts(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    vector: Sequence[float],
    model: str,
    limit: int,
) -> dict[UUID, float]:
    """The owner's facts by cosine similarity of their claims to ``vector`` (exact)."""
    shape = (len(vector), limit)
    query = template(("graph", "nearest facts", *shape), _nearest_facts, *shape)
    params = {"tenant_id": tenant_id, "user_id": user_id, "model": model, "q": vector_text(vector)}
    return {r.id: 1.0 - float(r.distance) for r in await conn.execute(query, params)}


def _nearest_facts(dims: int, limit: int) -> sa.Select[Any]:
    probe = sa.cast(param("q", type_=sa.Text()), Vector(dims))
    distance = _f.embedding.op("<=>", return_type=sa.Float)(probe)
    return (
        sa.select(_f.id, distance.label("distance"))
        .where(
            _f.tenant_id == param("tenant_id"),
            _f.user_id == param("user_id"),
            _f.embedding_model == param("model"),
        )
        .order_by(distance)
        .limit(limit)
    )


# --- facts as extra keys of the memories they were read from -------------------------------
# A fact's claim is a short restatement of its source ("Caroline's sister is Ana"): a query
# that matches it lifts the memory it came from, as one more candidate list of search.

_fs = fact_sources.c


def _by_source(matched: sa.CTE, score: sa.ColumnElement[float], name: str) -> sa.CTE:
    """Each source memory of the matched facts with its best fact's score."""
    return (
        sa.select(_fs.memory_id, score.label("score"))
        .select_from(
            matched.join(
                fact_sources,
                sa.and_(_fs.tenant_id == matched.c.tenant_id, _fs.fact_id == matched.c.fact_id),
            )
        )
        .group_by(_fs.memory_id)
        .cte(name)
        .prefix_with("MATERIALIZED")
    )


async def memories_by_fact_terms(
    conn: AsyncConnection,
    tenant_id: str,
    filters: MemoryFilter,
    term_ids: Sequence[int],
    limit: int,
) -> list[RankedMemory]:
    """The owner's memories (passing ``filters``) whose facts hold the query's terms, ranked
    by how many distinct terms their best fact holds (``rank``, highest first)."""
    if not term_ids:
        return []
    c = fact_terms.c
    matched = (
        sa.select(
            sa.literal(tenant_id).label("tenant_id"),
            c.fact_id,
            sa.func.count(sa.distinct(c.term)).label("matched"),
        )
        .where(*scope(c, tenant_id, filters.user_id), c.term.in_(sorted(set(term_ids))))
        .group_by(c.fact_id)
        .order_by(sa.func.count(sa.distinct(c.term)).desc(), c.fact_id)
        .limit(limit)
        .cte("matched_facts")
        .prefix_with("MATERIALIZED")
    )
    by_memory = _by_source(matched, sa.func.max(matched.c.matched), "fact_term_sources")
    return await fetch_ranked(
        conn, ranked_page(tenant_id, filters, by_memory, by_memory.c.score.desc(), limit)
    )


async def memories_by_fact_vectors(
    conn: AsyncConnection,
    tenant_id: str,
    filters: MemoryFilter,
    vector: Sequence[float],
    model: str,
    limit: int,
) -> list[RankedMemory]:
    """The owner's memories (passing ``filters``) whose facts' claims are nearest ``vector``,
    ranked by their nearest fact's cosine distance (``rank``, nearest first)."""
    probe = sa.cast(sa.literal(vector_text(vector)), Vector(len(vector)))
    distance = _f.embedding.op("<=>", return_type=sa.Float)(probe)
    matched = (
        sa.select(_f.tenant_id, _f.id.label("fact_id"), distance.label("distance"))
        .where(*scope(_f, tenant_id, filters.user_id), _f.embedding_model == model)
        .order_by(distance, _f.id)
        .limit(limit)
        .cte("near_facts")
        .prefix_with("MATERIALIZED")
    )
    by_memory = _by_source(matched, sa.func.min(matched.c.distance), "fact_vector_sources")
    return await fetch_ranked(
        conn, ranked_page(tenant_id, filters, by_memory, by_memory.c.score.asc(), limit)
    )


async def superseded_sources(
    conn: AsyncConnection, tenant_id: str, memory_ids: Sequence[UUID]
) -> set[UUID]:
    """Those of ``memory_ids`` that facts were read from and every one of whose facts a newer
    fact has replaced (system time): what they said no longer holds."""
    if not memory_ids:
        return set()
    query = template(("graph", "superseded sources"), _superseded_sources)
    found = await conn.execute(query, {"tenant_id": tenant_id, "ids": sorted(set(memory_ids))})
    return {row.memory_id for row in found}


def _superseded_sources() -> sa.Select[Any]:
    joined = fact_sources.join(facts, sa.and_(_f.tenant_id == _fs.tenant_id, _f.id == _fs.fact_id))
    return (
        sa.select(_fs.memory_id)
        .select_from(joined)
        .where(_fs.tenant_id == param("tenant_id"), _fs.memory_id.in_(param("ids", expanding=True)))
        .group_by(_fs.memory_id)
        .having(sa.func.bool_and(_f.superseded_at.is_not(None)))
    )


async def record_access(
    conn: AsyncConnection,
    fact_counts: dict[tuple[str, UUID], int],
    entity_counts: dict[tuple[str, UUID], int],
    at: datetime,
) -> None:
    """Reinforcement: recalled facts and entities count their accesses ((tenant, id) → how
    many), entities growing salient with each."""
    await add_access_counts(conn, _FACT_ACCESS, fact_counts, at)
    await add_access_counts(conn, _ENTITY_ACCESS, entity_counts, at)


_FACT_ACCESS = sa.text(f"UPDATE facts AS t SET {ACCESSED} {ACCESS_COUNTS}")
_ENTITY_ACCESS = sa.text(
    f"UPDATE entities AS t SET {ACCESSED}, salience = least(1.0, t.salience + 0.02 * v.n) "
    f"{ACCESS_COUNTS}"
)
