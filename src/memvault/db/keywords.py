"""The blind keyword index: writing a memory's postings, and BM25 over them in SQL.

BM25 (k1 = 1.2, b = 0.75) with IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))`` over the owner's
memories: ``N`` and the average length come from the owner's live memories, ``n`` from the
postings. Everything runs inside PostgreSQL from the (tenant, user, term) primary key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy import BigInteger
from sqlalchemy.dialects.postgresql import ARRAY, aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import RankedMemory, RankedPage
from memvault.db.remembered import Remembered
from memvault.db.store import (
    LOOKUP_MIN_SCOPE,
    fetch_pages,
    filter_parameters,
    filter_values,
    lookup_fetch,
    narrows,
    owner_of,
    page_parameters,
    ranked_pages_template,
)
from memvault.db.tables import memories, memory_terms
from memvault.db.templates import param, template
from memvault.models import MemoryFilter

_t = memory_terms.c
_m = memories.c
K1, B = 1.2, 0.75


async def insert_terms(
    conn: AsyncConnection,
    tenant_id: str,
    postings: Mapping[UUID, tuple[str, Mapping[int, int], int]],
) -> None:
    """Postings of new memories (id → (user id, term id → tf, length)) in one statement:
    parallel arrays unnested server-side, whatever the batch size."""
    columns: tuple[list[Any], ...] = ([], [], [], [], [])
    for memory_id, (user_id, terms, length) in postings.items():
        for term, tf in terms.items():
            for column, value in zip(
                columns, (memory_id, user_id, term, min(tf, 32_767), length), strict=True
            ):
                column.append(value)
    if not columns[0]:
        return
    await conn.execute(
        _INSERT_TERMS,
        {
            "tenant_id": tenant_id,
            "memory_ids": columns[0],
            "user_ids": columns[1],
            "terms": columns[2],
            "tfs": columns[3],
            "dls": columns[4],
        },
    )


_INSERT_TERMS = sa.text(
    "INSERT INTO memory_terms (tenant_id, memory_id, user_id, term, tf, dl) "
    "SELECT :tenant_id, * FROM unnest(CAST(:memory_ids AS uuid[]), CAST(:user_ids AS text[]), "
    "CAST(:terms AS bigint[]), CAST(:tfs AS smallint[]), CAST(:dls AS integer[]))"
)


async def replace_terms(
    conn: AsyncConnection,
    tenant_id: str,
    postings: Mapping[UUID, tuple[str, Mapping[int, int], int]],
) -> None:
    """Postings of changed memories, replacing their old ones, and their lengths."""
    if not postings:
        return
    await conn.execute(
        memory_terms.delete().where(_t.tenant_id == tenant_id, _t.memory_id.in_(list(postings)))
    )
    await insert_terms(conn, tenant_id, postings)
    await conn.execute(
        memories.update()
        .where(_m.tenant_id == tenant_id, _m.id == sa.bindparam("memory_id"))
        .values(term_count=sa.bindparam("term_count")),
        [{"memory_id": k, "term_count": length} for k, (_, _, length) in postings.items()],
    )


@dataclass(frozen=True)
class KeywordMatches:
    """A BM25 list and the statistics it was scored with: the owner's live memories and, of
    the query's terms, how many memories hold each (a term none holds is absent). Empty when
    nothing matched, statistics included: there is no evidence to weigh then."""

    rows: list[RankedMemory] = field(default_factory=list)
    n_docs: int = 0
    dfs: dict[int, int] = field(default_factory=dict)


async def bm25(
    conn: AsyncConnection,
    tenant_id: str,
    pages: Sequence[MemoryFilter],
    term_ids: Sequence[int],
    limit: int,
    *,
    known: Remembered[ScopeStatistics] | None = None,
) -> list[KeywordMatches]:
    """Memories of one owner ranked by BM25 for the query terms, one page per filter set (a
    question, and the question narrowed to the time it names, share one scoring), filtered
    in SQL, with the statistics behind the scores (search weighs a score against the query's
    best possible one; reading them here saves a transaction of their own).

    Every step is a materialised CTE computed once: the postings of each query term, read by
    the (tenant, user, term) key one term at a time, with the term's document frequency; the
    owner's statistics; the scores. Only then are they joined to ``memories`` (see
    ``store.fetch_ranked``) to filter and return them. The shape leaves the planner no choice
    that depends on statistics (unanalysed, it once scanned all the owner's postings and
    recomputed the aggregates per posting: 500 ms for 466 postings). Every candidate is kept:
    the join reads the owner's memories once whatever the cut, and a complete list is never
    short, however selective the filters.

    Large scopes (``known``: the owner's statistics from an earlier search, of at least
    ``LOOKUP_MIN_SCOPE`` memories) without narrowing filters skip both reads of the owner's
    memories: the remembered statistics are given, and only the best ``fetch`` scores are
    looked up by id (at 10,000 memories the statistics and the join were 11 of the
    statement's 16 ms). A page the cut leaves short while more memories matched is ranked
    again the whole way. Remembered statistics are at most ``known``'s lifetime old: a score
    differs from the exact one by what the owner's writes since then moved the counts.
    """
    user_id = owner_of(pages)
    terms = sorted(set(term_ids))
    if not terms:
        return [KeywordMatches() for _ in pages]
    values = [filter_values(tenant_id, f) for f in pages]
    shapes = tuple(tuple(v) for v in values)
    # Memories that one metadata value sets apart (an API that keeps many people under one
    # owner, as the mem0 compatibility does) are a collection of their own: their statistics
    # score them, as they would in a store of their own. A time window or a tag is not.
    within = values[0].get("metadata")
    apart = bool(within) and all(v.get("metadata") == within for v in values)
    params = {"tenant_id": tenant_id, "user_id": user_id, "terms": terms}
    params |= page_parameters(values)
    stats = known.get((tenant_id, user_id)) if known is not None else None
    if stats is not None and stats.n_docs >= LOOKUP_MIN_SCOPE and not any(map(narrows, pages)):
        fetch = lookup_fetch(limit)
        statement = template(("bm25-cut", shapes, limit, fetch), _scored, shapes, limit, fetch)
        given = {"n_docs": stats.n_docs, "avgdl": stats.avgdl}
        found = await fetch_pages(
            conn, statement, len(pages), descending=True, params=params | given
        )
        if all(_complete(page, limit, fetch) for page in found):
            return [_matches(page) for page in found]
    statement = template(("bm25", shapes, limit, apart), _scored, shapes, limit, None, apart)
    found = await fetch_pages(conn, statement, len(pages), descending=True, params=params)
    if known is not None and found[0].rows and not apart:
        extra = found[0].extra
        counted = ScopeStatistics(int(extra["n_docs"]), float(extra["avgdl"]))
        known.put((tenant_id, user_id), counted)
    return [_matches(page) for page in found]


@dataclass(frozen=True)
class ScopeStatistics:
    """What BM25 scores an owner's memories with: how many are live, their mean length."""

    n_docs: int
    avgdl: float


def _complete(page: RankedPage, limit: int, fetch: int) -> bool:
    """A page from the best ``fetch`` is the whole answer when it is full, or when no more
    memories than those matched at all."""
    return len(page.rows) == limit or (bool(page.rows) and page.extra["matched"] <= fetch)


def _matches(page: RankedPage) -> KeywordMatches:
    if not page.rows:
        return KeywordMatches()
    terms, counts = page.extra["df_terms"], page.extra["df_counts"]
    return KeywordMatches(
        rows=page.rows,
        n_docs=int(page.extra["n_docs"]),
        dfs={int(t): int(n) for t, n in zip(terms, counts, strict=True)},
    )


def _scored(
    shapes: Sequence[Sequence[str]], limit: int, fetch: int | None, apart: bool = False
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """The template of the statement: values from the parameters ``tenant_id``, ``user_id``,
    ``terms`` and the pages' filters (``store.page_parameters``). ``fetch``: the statistics
    are given (``n_docs``, ``avgdl``) and the best ``fetch`` scores looked up by id.
    ``apart``: the statistics and postings are those of the memories holding the first
    page's ``metadata`` (every page's)."""
    tenant_id, user_id = param("tenant_id"), param("user_id")
    within = [_m.metadata.contains(param("p0_metadata"))] if apart else []
    if fetch is None:
        counted = sa.select(
            sa.func.count().label("n_docs"),
            sa.func.greatest(sa.func.coalesce(sa.func.avg(_m.term_count), 1), 1).label("avgdl"),
        ).where(*filter_parameters(("tenant_id", "user_id"), "", _m), *within)
    else:
        counted = sa.select(
            sa.cast(param("n_docs", type_=BigInteger), BigInteger).label("n_docs"),
            sa.cast(param("avgdl", type_=sa.Float), sa.Float).label("avgdl"),
        )
    stats = counted.cte("stats").prefix_with("MATERIALIZED")
    asked = sa.func.unnest(sa.cast(param("terms", type_=ARRAY(BigInteger)), ARRAY(BigInteger)))
    query_terms = asked.table_valued("term", name="query_terms").render_derived()
    reading = sa.select(_t.memory_id, _t.term, _t.tf, _t.dl).where(
        _t.tenant_id == tenant_id, _t.user_id == user_id, _t.term == query_terms.c.term
    )
    if apart:
        reading = reading.join(memories, _m.id == _t.memory_id).where(
            _m.tenant_id == tenant_id, *within
        )
    # OFFSET 0 keeps this a lookup per query term on the primary key.
    posting = reading.offset(0).lateral("posting")
    postings = (
        sa.select(
            posting.c.memory_id,
            posting.c.term,
            posting.c.tf,
            posting.c.dl,
            sa.func.count().over(partition_by=posting.c.term).label("df"),
        )
        .select_from(query_terms.join(posting, sa.true()))
        .cte("postings")
        .prefix_with("MATERIALIZED")
    )
    p = postings.c
    # A remembered count can be older than a term's postings: never below the term's own.
    n_docs = sa.func.greatest(stats.c.n_docs, p.df)
    idf = sa.func.ln(1 + (n_docs - p.df + 0.5) / (p.df + 0.5))
    tf = sa.cast(p.tf, sa.Float)
    length = sa.cast(p.dl, sa.Float) / sa.cast(stats.c.avgdl, sa.Float)
    # Summed in term order: a float sum depends on the order of its terms, and a plan's row
    # order would otherwise break ties between equal-scoring memories differently from one
    # search to the next (the whole ranking against the cut one, say).
    term_score = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length))
    score = sa.func.sum(aggregate_order_by(term_score, p.term)).label("score")
    scoring = sa.select(p.memory_id, score).select_from(postings.join(stats, sa.true()))
    scoring = scoring.group_by(p.memory_id)
    if fetch is not None:
        scoring = scoring.order_by(score.desc(), p.memory_id).limit(fetch)
    scored = scoring.cte("scored").prefix_with("MATERIALIZED")
    # The statistics ride on every row (computed once: uncorrelated subqueries).
    frequencies = sa.select(p.term, p.df).distinct().subquery("frequencies")
    statistics = [
        sa.select(stats.c.n_docs).scalar_subquery().label("n_docs"),
        sa.select(stats.c.avgdl).scalar_subquery().label("avgdl"),
        sa.select(sa.func.count(sa.distinct(p.memory_id))).scalar_subquery().label("matched"),
        sa.select(sa.func.array_agg(frequencies.c.term)).scalar_subquery().label("df_terms"),
        sa.select(sa.func.array_agg(frequencies.c.df)).scalar_subquery().label("df_counts"),
    ]
    order = scored.c.score.desc()
    return ranked_pages_template(
        shapes, scored, order, limit, columns=statistics, by_id=fetch is not None
    )


def idf(n_docs: int, df: int) -> float:
    """BM25's IDF, as the SQL above computes it."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
