"""The knowledge graph's read paths beyond single rows: the walk (a recursive CTE over the
owner's current graph) and the candidate queries of recall (blind terms, vectors), with
reinforcement of what recall returned."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.graph import (
    ENTITY_COLUMNS,
    FACT_COLUMNS,
    EntityRow,
    FactRow,
    as_of_text,
    records,
    scope,
)
from memvault.db.records import RankedMemory
from memvault.db.store import (
    ACCESS_COUNTS,
    ACCESSED,
    add_access_counts,
    fetch_ranked,
    ranked_page,
)
from memvault.db.tables import (
    entities,
    entity_terms,
    fact_sources,
    fact_terms,
    facts,
    relations,
)
from memvault.db.templates import param, template
from memvault.db.vectors import vector_text
from memvault.models import MemoryFilter

_e = entities.c
R = TypeVar("R", EntityRow, FactRow)
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


# A fact's source memories as a column of its row, in ``graph.sources_of``'s order (the
# primary key's): ``{fact}`` names the facts' table or alias in the statement.
_SOURCES = (
    "ARRAY(SELECT fs.memory_id FROM fact_sources AS fs WHERE fs.tenant_id = {fact}.tenant_id "
    "AND fs.fact_id = {fact}.id ORDER BY fs.memory_id)"
)


# An entity's support as columns of its row: its mentions up to ``{cap}`` (a constant of the
# caller's, part of the template's shape), and whether a current fact is about it.
_SUPPORT = (
    "(SELECT count(*) FROM (SELECT 1 FROM entity_mentions AS em "
    "WHERE em.tenant_id = entities.tenant_id AND em.entity_id = entities.id LIMIT {cap}) AS em)",
    # Two lookups, one per index: with "subject or object" in one condition PostgreSQL read
    # the whole facts table for every candidate with no current fact (0.8 ms each at 3,657
    # facts; a named entity without facts is common: one mentioned but never described).
    "(EXISTS (SELECT 1 FROM facts AS sf WHERE sf.tenant_id = entities.tenant_id "
    "AND sf.subject_id = entities.id AND sf.superseded_at IS NULL) "
    "OR EXISTS (SELECT 1 FROM facts AS sf WHERE sf.tenant_id = entities.tenant_id "
    "AND sf.object_id = entities.id AND sf.superseded_at IS NULL))",
)


# --- traversal ----------------------------------------------------------------------------

# The owner's current graph, walked from the start by index lookups per node (relations both
# ways, and facts whose object is an entity), each node's neighbours capped at :fanout and the
# nodes at :max_nodes, so a hub cannot blow the walk up. The edges are those the walk took:
# a hub's thousandth fact is never read. These are the current graph's conditions (what the
# as-of rule of db/graph.py answers with neither moment given, kept as the plain conditions
# recall's walk has always run); with a moment given, that rule itself is used.
_LIVE_R = "(r.valid_until IS NULL OR r.valid_until > :now)"
_LIVE_F = (
    "f.object_id IS NOT NULL AND f.superseded_at IS NULL "
    "AND (f.valid_until IS NULL OR f.valid_until > :now) "
    "AND (f.valid_from IS NULL OR f.valid_from <= :now)"
)
# Each node comes back with its entity row (one round trip for the whole view).
_NODE_COLUMNS = ", ".join(f"e.{f.name} AS node_{f.name}" for f in fields(EntityRow))
_NO_NODE = ", ".join(f"NULL AS node_{f.name}" for f in fields(EntityRow))


def _walk_nodes(live_r: str, live_f: str) -> str:
    """The walk over the relations and facts that ``live_r`` and ``live_f`` keep."""
    return f"""
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
            WHERE r.tenant_id = :tenant AND r.source_id = w.node AND {live_r}
            UNION ALL
            SELECT r.source_id, r.source_id, r.type, r.target_id, r.id, true FROM relations r
            WHERE r.tenant_id = :tenant AND r.target_id = w.node AND {live_r}
            UNION ALL
            SELECT f.object_id, f.subject_id, f.predicate, f.object_id, f.id, false
            FROM facts f
            WHERE f.tenant_id = :tenant AND f.subject_id = w.node AND {live_f}
            UNION ALL
            SELECT f.subject_id, f.subject_id, f.predicate, f.object_id, f.id, false
            FROM facts f
            WHERE f.tenant_id = :tenant AND f.object_id = w.node AND {live_f}
            LIMIT :fanout
        ) n
        WHERE w.depth < :depth
    ),
    nodes AS MATERIALIZED (
        -- reached: how many the walk found before the limit cut them (said on the page).
        SELECT node, min(depth) AS depth, count(*) OVER () AS reached FROM walk GROUP BY node
        ORDER BY min(depth), node LIMIT :max_nodes
    )
    SELECT n.node AS source_id, NULL AS kind, NULL AS target_id, NULL AS via,
           NULL AS relation, n.depth, n.reached, {_NODE_COLUMNS}
    FROM nodes n
    CROSS JOIN LATERAL (
        SELECT * FROM entities x WHERE x.tenant_id = :tenant AND x.id = n.node OFFSET 0
    ) e
    """


_WALK_NODES = _walk_nodes(_LIVE_R, _LIVE_F)
_WALK_EDGES = f"""
    UNION ALL (
        -- The nearest edges first when the limit cuts them, and how many there were.
        SELECT d.source_id, d.kind, d.target_id, d.via, d.relation, d.depth,
               count(*) OVER () AS reached, {_NO_NODE}
        FROM (
            SELECT DISTINCT ON (w.via) w.source_id, w.kind, w.target_id, w.via, w.relation,
                   GREATEST(a.depth, b.depth) AS depth
            FROM walk w
            JOIN nodes a ON a.node = w.source_id
            JOIN nodes b ON b.node = w.target_id
            WHERE w.via IS NOT NULL
            ORDER BY w.via
        ) d
        ORDER BY d.depth, d.via
        LIMIT :max_edges
    )
    """
# With the edges among the nodes (a view of the graph), or the nodes alone (recall).
_WALK = sa.text(_WALK_NODES + _WALK_EDGES)
_WALK_NODES_ONLY = sa.text(_WALK_NODES)


def _walk_as_of(
    valid_at: datetime | None, known_at: datetime | None, now: datetime, edges: bool
) -> tuple[sa.TextClause, dict[str, datetime]]:
    """The walk over the graph as of ``valid_at`` and ``known_at``: the facts that
    ``GET /v1/facts`` lists for those moments (the same rule, :func:`as_of_text`) and the
    relations whose stated interval holds then, recorded by ``known_at``."""
    live_f, values = as_of_text(facts, "f", valid_at, known_at, now)
    live_r, _ = as_of_text(relations, "r", valid_at, known_at, now)

    def build() -> sa.TextClause:
        nodes = _walk_nodes(live_r, f"f.object_id IS NOT NULL AND {live_f}")
        return sa.text(nodes + _WALK_EDGES if edges else nodes)

    shape = ("graph walk as of", valid_at is None, known_at is None, edges)
    return template(shape, build), values


@dataclass(frozen=True)
class Walk:
    nodes: dict[UUID, int]  # entity id → hops from the start
    edges: list[Edge]
    entities: dict[UUID, EntityRow]
    # How many nodes and edges there were before the limits cut them (the walk's own cut,
    # each node's neighbours at most :fanout, comes first and is not counted).
    reached_nodes: int = 0
    reached_edges: int = 0


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
    edges: bool = True,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
) -> Walk:
    """The entities within ``depth`` hops of any of ``starts`` (the owner's: others start
    nothing) in the owner's current graph, each at its fewest hops from one of them, with
    their rows, and the edges among them (``edges=False``: the nodes alone): one statement
    however many starts. ``valid_at`` / ``known_at``: the graph as of those moments (the
    rule of ``GET /v1/facts``) instead of the current one."""
    params: dict[str, Any] = {
        "tenant": tenant_id,
        "user": user_id,
        "starts": list(starts),
        "depth": depth,
        "now": now,
        "fanout": fanout,
        "max_nodes": max_nodes,
    }
    if valid_at is not None or known_at is not None:
        statement, moments = _walk_as_of(valid_at, known_at, now, edges)
        rows = await conn.execute(
            statement, params | moments | {"max_edges": max_edges} if edges else params | moments
        )
    elif edges:
        rows = await conn.execute(_WALK, params | {"max_edges": max_edges})
    else:
        rows = await conn.execute(_WALK_NODES_ONLY, params)
    return _walked(rows)


def _walked(rows: Any) -> Walk:
    nodes: dict[UUID, int] = {}
    edges: list[Edge] = []
    entities: dict[UUID, EntityRow] = {}
    reached = {"nodes": 0, "edges": 0}
    names = [f.name for f in fields(EntityRow)]
    for r in rows:
        if r.kind is None:
            nodes[r.source_id] = int(r.depth)
            mapping = r._mapping
            entities[r.source_id] = EntityRow(**{n: mapping[f"node_{n}"] for n in names})
            reached["nodes"] = int(r.reached)
        else:
            edges.append(
                Edge(r.source_id, r.kind, r.target_id, r.via, int(r.depth), bool(r.relation))
            )
            reached["edges"] = int(r.reached)
    return Walk(nodes, edges, entities, reached["nodes"], reached["edges"])


# --- the whole of a user's graph ------------------------------------------------------------


def _whole(live_r: str, live_f: str) -> str:
    """Every current entity of the owner known by ``:as_of_known_at`` (the most salient first,
    at most :max_nodes) and the edges among them that ``live_r`` and ``live_f`` keep."""
    return f"""
    WITH nodes AS MATERIALIZED (
        SELECT e.id AS node, 0 AS depth, count(*) OVER () AS reached FROM entities e
        WHERE e.tenant_id = :tenant AND e.user_id = :user AND e.merged_into IS NULL
          AND e.first_seen <= :as_of_known_at
        ORDER BY e.salience DESC, e.id LIMIT :max_nodes
    ),
    edges AS MATERIALIZED (
        SELECT r.source_id, r.type AS kind, r.target_id, r.id AS via, true AS relation
        FROM relations r
        JOIN nodes a ON a.node = r.source_id
        JOIN nodes b ON b.node = r.target_id
        WHERE r.tenant_id = :tenant AND {live_r}
        UNION ALL
        SELECT f.subject_id, f.predicate, f.object_id, f.id, false
        FROM facts f
        JOIN nodes a ON a.node = f.subject_id
        JOIN nodes b ON b.node = f.object_id
        WHERE f.tenant_id = :tenant AND {live_f}
    )
    SELECT n.node AS source_id, NULL AS kind, NULL AS target_id, NULL AS via,
           NULL AS relation, n.depth, n.reached, {_NODE_COLUMNS}
    FROM nodes n
    CROSS JOIN LATERAL (
        SELECT * FROM entities x WHERE x.tenant_id = :tenant AND x.id = n.node OFFSET 0
    ) e
    UNION ALL (
        SELECT d.source_id, d.kind, d.target_id, d.via, d.relation, 0,
               count(*) OVER () AS reached, {_NO_NODE}
        FROM edges d
        ORDER BY d.via
        LIMIT :max_edges
    )
    """


async def whole(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    *,
    now: datetime,
    max_nodes: int,
    max_edges: int,
    valid_at: datetime | None = None,
    known_at: datetime | None = None,
) -> Walk:
    """The owner's whole graph (every node at depth 0), as of ``valid_at`` / ``known_at``
    by the rule of ``GET /v1/facts`` (now, when neither is given)."""
    live_f, moments = as_of_text(facts, "f", valid_at, known_at, now)
    live_r, _ = as_of_text(relations, "r", valid_at, known_at, now)
    shape = ("whole graph", valid_at is None, known_at is None)
    statement = template(shape, lambda: sa.text(_whole(live_r, live_f)))
    params = {"tenant": tenant_id, "user": user_id, "now": now, "max_nodes": max_nodes}
    rows = await conn.execute(statement, params | moments | {"max_edges": max_edges})
    return _walked(rows)


@dataclass(frozen=True)
class Candidate(Generic[R]):
    """A fact or entity that recall found: how many of the query's terms it holds (0: none)
    and how near its text is to the query's vector (``None``: not among the nearest)."""

    row: R
    matched: int
    similarity: float | None
    # A fact's source memories (``graph.sources_of``'s order), read with it: recall shows
    # them for the facts it keeps without another round trip. None for an entity.
    sources: list[UUID] | None = None
    # An entity's support, when asked for (``entity_candidates``' ``support``).
    support: Support | None = None


@dataclass(frozen=True)
class Support:
    """How much stands behind an entity: the memories that mention it (counted up to the cap
    asked for) and whether a current fact (not superseded) is about it."""

    mentions: int
    facts: bool


async def facts_near_entities(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    closeness: Mapping[UUID, float],
    channels: Sequence[str] | None,
    now: datetime,
    *,
    boosts: tuple[float, float],
    pool: int,
    keep: int,
) -> list[Candidate[FactRow]]:
    """Of the ``pool`` newest current facts about these entities (``query_facts``' page), the
    ``keep`` that rank best by nearness alone, best first (then by id): half the better of
    their subject's and object's ``closeness``, times ``boosts`` (current, past) and ``0.5 +
    0.5 x confidence``; only those live at ``now`` (not superseded, never an empty interval,
    not yet to come) and, given ``channels``, recorded in one of them. Recall scores the
    rest of a fact (its words, its meaning) only for the facts its other search found, so the
    best of these are all it can keep; the others are never read back. Each comes with its
    sources, found by neither words nor meaning (``matched`` 0, ``similarity`` None)."""
    if not closeness:
        return []
    ids = list(closeness)
    as_of, moments = as_of_text(facts, "f", None, None, now)
    query = template(
        ("graph", "facts near entities", channels is not None), _facts_near, as_of, channels
    )
    current, past = boosts
    params: dict[str, Any] = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "ids": ids,
        "weights": [float(closeness[i]) for i in ids],
        "now": now,
        "current": float(current),
        "past": float(past),
        "pool": pool,
        "keep": keep,
        **moments,
    }
    if channels is not None:
        params["channels"] = list(channels)
    rows = list(await conn.execute(query, params))
    return [
        Candidate(found, 0, None, row.sources)
        for found, row in zip(records(FactRow, rows), rows, strict=True)
    ]


def _facts_near(as_of: str, channels: Sequence[str] | None) -> sa.TextClause:
    columns = ", ".join(f"f.{c.name}" for c in FACT_COLUMNS)
    page = ", ".join(f"p.{c.name}" for c in FACT_COLUMNS)
    in_channels = "AND p.channel = ANY(CAST(:channels AS TEXT[]))" if channels is not None else ""
    # The same operations in the same order as recall's own scoring, in double precision.
    return sa.text(f"""
        WITH page AS MATERIALIZED (
            SELECT {columns} FROM facts AS f
            WHERE f.tenant_id = :tenant_id AND f.user_id = :user_id
              AND (f.subject_id = ANY(CAST(:ids AS UUID[]))
                   OR f.object_id = ANY(CAST(:ids AS UUID[])))
              AND {as_of}
            ORDER BY f.recorded_at DESC, f.id
            LIMIT :pool
        ), near AS (
            SELECT unnest(CAST(:ids AS UUID[])) AS id,
                   unnest(CAST(:weights AS DOUBLE PRECISION[])) AS weight
        )
        SELECT {page}, {_SOURCES.format(fact="p")} AS sources FROM page AS p
        LEFT JOIN near AS s ON s.id = p.subject_id
        LEFT JOIN near AS o ON o.id = p.object_id
        WHERE p.superseded_at IS NULL
          AND NOT (p.valid_from IS NOT NULL AND p.valid_from IS NOT DISTINCT FROM p.valid_until)
          AND (p.valid_from IS NULL OR p.valid_from <= :now)
          {in_channels}
        ORDER BY (CAST(0.5 AS DOUBLE PRECISION)
                  * greatest(coalesce(s.weight, 0.0), coalesce(o.weight, 0.0)))
                 * (CASE WHEN p.temporal = 'past' OR p.valid_until <= :now
                         THEN CAST(:past AS DOUBLE PRECISION)
                         ELSE CAST(:current AS DOUBLE PRECISION) END)
                 * (CAST(0.5 AS DOUBLE PRECISION)
                    + CAST(0.5 AS DOUBLE PRECISION) * p.confidence) DESC,
                 p.id
        LIMIT :keep
    """)


async def entity_candidates(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    term_ids: Sequence[int],
    vector: Sequence[float] | None,
    model: str | None,
    *,
    by_terms: int,
    by_meaning: int,
    support: int = 0,
) -> list[Candidate[EntityRow]]:
    """The owner's entities holding most of the query's terms (at most ``by_terms``) and
    those whose names are nearest ``vector`` (unmerged, at most ``by_meaning``), with their
    rows: one statement. ``support`` > 0: each with its ``Support``, mentions counted up to
    ``support`` (a bar needs no more; a popular name's thousand mentions are not read)."""
    rows = await _candidates(
        conn, "entity", tenant_id, user_id, term_ids, vector, model, by_terms, by_meaning, support
    )
    found = _found(EntityRow, rows)
    if not support:
        return found
    return [
        dataclasses.replace(c, support=Support(int(row.mentions), bool(row.about)))
        for c, row in zip(found, rows, strict=True)
    ]


async def fact_candidates(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    term_ids: Sequence[int],
    vector: Sequence[float] | None,
    model: str | None,
    *,
    limit: int,
) -> list[Candidate[FactRow]]:
    """The owner's facts holding most of the query's terms and the current facts (not
    superseded) whose claims are nearest ``vector`` (exact), at most ``limit`` of each, with
    their rows: one statement."""
    rows = await _candidates(
        conn, "fact", tenant_id, user_id, term_ids, vector, model, limit, limit
    )
    return _found(FactRow, rows)


def _found(cls: type[R], rows: Sequence[Any]) -> list[Candidate[R]]:
    sourced = cls is FactRow
    return [
        Candidate(found, int(row.matched or 0), _similarity(row), row.sources if sourced else None)
        for found, row in zip(records(cls, rows), rows, strict=True)
    ]


def _similarity(row: Any) -> float | None:
    return None if row.distance is None else 1.0 - float(row.distance)


async def _candidates(
    conn: AsyncConnection,
    kind: str,
    tenant_id: str,
    user_id: str,
    term_ids: Sequence[int],
    vector: Sequence[float] | None,
    model: str | None,
    by_terms: int,
    by_meaning: int,
    support: int = 0,
) -> Sequence[Any]:
    terms = sorted(set(term_ids))
    near = vector is not None and model is not None and by_meaning > 0
    if not terms and not near:
        return []
    dims = len(vector) if near and vector is not None else None
    shape = (kind, bool(terms), by_terms, dims, by_meaning, support)
    query = template(("graph", "candidates", *shape), _candidates_query, *shape)
    params: dict[str, Any] = {"tenant_id": tenant_id, "user_id": user_id}
    if terms:
        params["terms"] = terms
    if near and vector is not None:
        params |= {"model": model, "q": vector_text(vector)}
    return list(await conn.execute(query, params))


def _candidates_query(
    kind: str, with_terms: bool, by_terms: int, dims: int | None, by_meaning: int, support: int
) -> sa.Select[Any]:
    """The term matches and the nearest rows, each ranked in a materialised CTE and only
    then joined to their rows by primary key (the plan holds without table statistics)."""
    table, terms, item = (
        (facts, fact_terms, "fact_id") if kind == "fact" else (entities, entity_terms, "entity_id")
    )
    columns = FACT_COLUMNS if kind == "fact" else ENTITY_COLUMNS
    c, t = table.c, terms.c
    ranked: list[sa.CTE] = []
    if with_terms:
        matched = sa.func.count(sa.distinct(t.term))
        ranked.append(
            sa.select(t[item].label("id"), matched.label("matched"))
            .where(
                t.tenant_id == param("tenant_id"),
                t.user_id == param("user_id"),
                t.term.in_(param("terms", expanding=True)),
            )
            .group_by(t[item])
            .order_by(matched.desc(), t[item])
            .limit(by_terms)
            .cte("by_terms")
            .prefix_with("MATERIALIZED")
        )
    if dims is not None:
        probe = sa.cast(param("q", type_=sa.Text()), Vector(dims))
        distance = c.embedding.op("<=>", return_type=sa.Float)(probe)
        where = [
            c.tenant_id == param("tenant_id"),
            c.user_id == param("user_id"),
            c.embedding_model == param("model"),
        ]
        if kind == "entity":
            where.append(c.merged_into.is_(None))
        else:
            # A replaced value is never recalled: scanned, it costs a distance and takes a
            # place among the nearest that a current fact should have.
            where.append(c.superseded_at.is_(None))
        ranked.append(
            sa.select(c.id, distance.label("distance"))
            .where(*where)
            .order_by(distance)
            .limit(by_meaning)
            .cte("by_meaning")
            .prefix_with("MATERIALIZED")
        )
    ids = sa.union(*(sa.select(r.c.id) for r in ranked)).subquery("found")
    joined = ids.join(table, sa.and_(c.tenant_id == param("tenant_id"), c.id == ids.c.id))
    by_terms_cte = next((r for r in ranked if r.name == "by_terms"), None)
    by_meaning_cte = next((r for r in ranked if r.name == "by_meaning"), None)
    extra: list[sa.ColumnElement[Any]] = []
    if kind == "fact":
        extra.append(sa.literal_column(_SOURCES.format(fact=table.name)).label("sources"))
    if support:
        mentions, about = _SUPPORT
        extra.append(sa.literal_column(mentions.format(cap=int(support))).label("mentions"))
        extra.append(sa.literal_column(about).label("about"))
    for cte, name in ((by_terms_cte, "matched"), (by_meaning_cte, "distance")):
        if cte is None:
            extra.append(sa.null().label(name))
        else:
            joined = joined.outerjoin(cte, cte.c.id == ids.c.id)
            extra.append(cte.c[name])
    return sa.select(*columns, *extra).select_from(joined)


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
    """Recalled facts and entities count their accesses ((tenant, id) → how many) for the
    lifecycle (idle decay and cleanup read ``last_accessed``); salience is left alone, since
    retrieval alone is not use and must not shift later rankings."""
    await add_access_counts(conn, _FACT_ACCESS, fact_counts, at)
    await add_access_counts(conn, _ENTITY_ACCESS, entity_counts, at)


_FACT_ACCESS = sa.text(f"UPDATE facts AS t SET {ACCESSED} {ACCESS_COUNTS}")
_ENTITY_ACCESS = sa.text(f"UPDATE entities AS t SET {ACCESSED} {ACCESS_COUNTS}")
