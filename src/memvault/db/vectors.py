"""Chunk vectors: writing them, per-model HNSW indexes, and nearest-neighbour search.

The ``embedding`` column has no fixed dimension; each model gets a partial HNSW index over
``embedding::vector(d)`` restricted to its rows, and queries use the same expression.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

import numpy as np
import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from memvault import metrics
from memvault.db.engine import pgvector_version
from memvault.db.records import RankedMemory
from memvault.db.remembered import Remembered
from memvault.db.store import (
    LOOKUP_MIN_SCOPE,
    fetch_pages,
    fetch_ranked,
    filter_parameters,
    filter_values,
    lookup_fetch,
    narrows,
    nested_loops_off,
    owner_of,
    page_parameters,
    ranked_page_template,
    ranked_pages_template,
)
from memvault.db.tables import memories, memory_chunks
from memvault.db.templates import param, template
from memvault.models import MemoryFilter

_c = memory_chunks.c
_m = memories.c
_MODEL_ID = re.compile(r"^[A-Za-z0-9._/:@-]{1,200}$")
_INDEX_LOCK = 0x6D76696478  # "mvidx"


# pgvector 0.8 added iterative index scans: an HNSW scan whose rows a filter drops keeps
# walking the graph until the LIMIT is filled (or ``hnsw.max_scan_tuples`` are seen), where
# earlier versions end after ``hnsw.ef_search`` candidates, however few pass the filter.
ITERATIVE_SCANS_SINCE = (0, 8, 0)
# Relaxed: the scan may hand rows back slightly out of order, which the ranking below sorts
# again by their exact distance anyway. MAX_SCAN_TUPLES: how far a scan may walk for one
# owner's rows before it gives up, and the owner's nearest chunks are ranked exactly instead
# (measured: see docs/cluster.md, "Scale on one machine").
ITERATIVE_ORDER = "relaxed_order"
MAX_SCAN_TUPLES = 20_000
# The owner's chunks an iterative scan looks for, per row of the page: each one costs the
# scan about 1/share index tuples (the owner's share of the index), so a page's worth.
ITERATIVE_CHUNKS_PER_ROW = 1


def has_iterative_scans(version: str | None) -> bool:
    """Whether pgvector ``version`` (``extversion``; None: not installed) scans iteratively."""
    if version is None:
        return False
    numbers = tuple(int(part) for part in re.findall(r"\d+", version)[:3])
    return numbers >= ITERATIVE_SCANS_SINCE


async def iterative_scans(conn: AsyncConnection) -> bool:
    """Whether the server's pgvector scans iteratively (read once, when a store opens)."""
    return has_iterative_scans(await pgvector_version(conn))


def _checked(model: str, dims: int) -> tuple[str, int]:
    if not _MODEL_ID.match(model) or not 0 < int(dims) <= 16_000:
        raise ValueError(f"unusable model id or dimension: {model!r}, {dims!r}")
    return model, int(dims)


def _cast(dims: int) -> sa.ColumnElement[Any]:
    return sa.literal_column(f"memory_chunks.embedding::vector({int(dims)})")


def index_name(model: str) -> str:
    return f"ix_memory_chunks_hnsw_{hashlib.sha256(model.encode()).hexdigest()[:12]}"


async def ensure_index(engine: AsyncEngine, model: str, dims: int) -> None:
    """Create the model's HNSW index if missing, without blocking writes (CONCURRENTLY).
    An index that a failed concurrent build left behind (invalid: PostgreSQL keeps it up to
    date but never reads it) is dropped and built again, not taken for a finished one."""
    model, dims = _checked(model, dims)
    name = index_name(model)
    ddl = (
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memory_chunks "
        f"USING hnsw ((embedding::vector({dims})) vector_cosine_ops) "
        f"WHERE model = '{model}'"
    )
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        valid = (await conn.execute(_INDEX_VALID, {"n": name})).scalar()
        if valid:
            return
        # Never wait for this lock: a concurrent build waits for every open transaction, and a
        # second builder queued on a lock would be one of them. Whoever holds it builds.
        locked = await conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": _INDEX_LOCK})
        if not locked.scalar():
            return
        try:
            # An index there but invalid: a build that failed half-way (a deadlock's victim).
            if valid is not None:
                await conn.execute(sa.text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))
            await conn.execute(sa.text(ddl))
        finally:
            await conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": _INDEX_LOCK})


# The index's validity: NULL when there is none.
_INDEX_VALID = sa.text(
    "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "WHERE c.relname = :n AND c.relkind = 'i'"
)


async def replace_chunks(
    conn: AsyncConnection,
    tenant_id: str,
    vectors_by_memory: Mapping[UUID, tuple[str, Sequence[Sequence[float]]]],
    model: str,
) -> None:
    """Memories' vectors (memory id → (user id, one vector per chunk)), replacing every older
    vector of those memories, of any model, in the caller's transaction."""
    if not vectors_by_memory:
        return
    await conn.execute(
        memory_chunks.delete().where(
            _c.tenant_id == tenant_id, _c.memory_id.in_(list(vectors_by_memory))
        )
    )
    columns: tuple[list[Any], ...] = ([], [], [], [])
    for memory_id, (user_id, vecs) in vectors_by_memory.items():
        for i, v in enumerate(vecs):
            for column, value in zip(columns, (memory_id, i, user_id, _exact_text(v)), strict=True):
                column.append(value)
    # One statement for the batch, the vectors as text pgvector parses: row by row, 600 rows
    # took 0.78 s where this takes 0.47 (at load 5); what is left is mostly HNSW inserts.
    await conn.execute(
        _INSERT_CHUNKS,
        {
            "tenant_id": tenant_id,
            "model": model,
            "memory_ids": columns[0],
            "indexes": columns[1],
            "user_ids": columns[2],
            "embeddings": columns[3],
        },
    )


_INSERT_CHUNKS = sa.text(
    "INSERT INTO memory_chunks (tenant_id, memory_id, model, chunk_index, user_id, embedding) "
    "SELECT :tenant_id, m, :model, i, u, CAST(e AS vector) FROM unnest(CAST(:memory_ids AS "
    "uuid[]), CAST(:indexes AS integer[]), CAST(:user_ids AS text[]), CAST(:embeddings AS "
    "text[])) AS t(m, i, u, e)"
)


def _exact_text(values: Sequence[float]) -> str:
    """A vector as pgvector reads it, every float as written (``repr`` round-trips)."""
    return "[" + ",".join(map(repr, map(float, values))) + "]"


async def scope_size(
    conn: AsyncConnection, tenant_id: str, user_id: str, model: str, *, cap: int
) -> int:
    """How many chunks the owner has under ``model``, counting no further than ``cap + 1``
    (all the caller needs to choose exact or approximate search, at a bounded cost)."""
    limited = (
        sa.select(sa.literal(1))
        .select_from(memory_chunks)
        .where(_c.tenant_id == tenant_id, _c.user_id == user_id, _c.model == model)
        .limit(cap + 1)
        .subquery()
    )
    return int((await conn.execute(sa.select(sa.func.count()).select_from(limited))).scalar_one())


class ScopeSizes:
    """How many chunks each owner had under a model when last counted, remembered for a
    while: counting a scope cost a search a round trip and a read of the owner's chunk index
    (3 of a hybrid search's 22 ms at 675 memories). The size only chooses how to rank
    (exactly, looked up by id, or through HNSW) and every choice returns the same memories,
    so a stale size costs time, never results. An empty scope is never remembered: it ends a
    search early, and the owner's first memory must be found at once."""

    def __init__(self, ttl_s: float = 30.0, max_entries: int = 10_000) -> None:
        self._sizes: Remembered[int] = Remembered(ttl_s, max_entries)

    def get(self, tenant_id: str, user_id: str, model: str) -> int | None:
        return self._sizes.get((tenant_id, user_id, model))

    def put(self, tenant_id: str, user_id: str, model: str, size: int) -> None:
        if size <= 0:
            self._sizes.forget((tenant_id, user_id, model))
        else:
            self._sizes.put((tenant_id, user_id, model), size)


async def known_scope_size(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    model: str,
    *,
    cap: int,
    sizes: ScopeSizes | None,
) -> int:
    """:func:`scope_size`, or the size ``sizes`` remembers (and remembers what it counts)."""
    scope = sizes.get(tenant_id, user_id, model) if sizes is not None else None
    if scope is None:
        scope = await scope_size(conn, tenant_id, user_id, model, cap=cap)
        if sizes is not None:
            sizes.put(tenant_id, user_id, model, scope)
    return scope


async def nearest(
    conn: AsyncConnection,
    tenant_id: str,
    pages: Sequence[MemoryFilter],
    query: Sequence[float],
    model: str,
    dims: int,
    limit: int,
    *,
    exact_max_chunks: int,
    ef_search: int,
    exclude_id: UUID | None = None,
    sizes: ScopeSizes | None = None,
    derived_only: bool = False,
    iterative_scans: bool = False,
) -> list[list[RankedMemory]]:
    """One owner's memories by their best chunk's cosine distance, nearest first, one page for
    each filter set (a question, and the question narrowed to the time it names): the pages an
    exact ranking answers share one ranking and one statement.

    Scopes of at most ``exact_max_chunks`` chunks are scored exactly (fast and perfect);
    larger ones ask the HNSW index first: with ``iterative_scans`` (pgvector 0.8 or later),
    for the owner's own nearest chunks, which the scan keeps looking for past other owners'
    rows; without, for the nearest chunks of every owner, the owner's picked from them. In
    scopes of over ``LOOKUP_MIN_SCOPE`` chunks the best few hundred memories are looked up by
    id first, and a page they cannot fill (selective filters) is ranked from the whole scope.
    The candidates are ranked in a materialised CTE and only then joined to or looked up in
    ``memories`` (see ``store.ranked_page``), so the plan is the same with or without table
    statistics (unanalysed, the planner joined every memory to every chunk: 230,860
    comparisons for 680 memories). ``sizes``: scope sizes counted earlier, to skip the count.
    """
    owner = owner_of(pages)
    model, dims = _checked(model, dims)
    scope = await known_scope_size(conn, tenant_id, owner, model, cap=exact_max_chunks, sizes=sizes)
    if scope == 0:
        return [[] for _ in pages]
    values = [filter_values(tenant_id, f, exclude_id, derived_only=derived_only) for f in pages]
    ranking = {"tenant_id": tenant_id, "user_id": owner, "model": model, "q": vector_text(query)}
    indexed = scope > exact_max_chunks
    if indexed:
        await _scan_settings(conn, ef_search, iterative=iterative_scans)
    hnsw = (iterative_scans, ef_search) if indexed else None
    cut = scope > min(exact_max_chunks, LOOKUP_MIN_SCOPE)
    found: list[list[RankedMemory]] = []
    ranked_by: list[str] = []
    for filters, own in zip(pages, values, strict=True):
        rows, how = await _candidate_page(
            conn, ranking, own, limit, dims, hnsw, cut and not narrows(filters)
        )
        found.append(rows)
        ranked_by.append(how)
    if indexed and iterative_scans:
        await conn.execute(_SORTS_BACK)
    short = [n for n, rows in enumerate(found) if len(rows) < limit]
    if short:
        asked = [values[n] for n in short]
        shapes = tuple(tuple(v) for v in asked)
        every = template(("vector-exact", shapes, dims, limit), _exact_pages, shapes, dims, limit)
        params = ranking | page_parameters(asked)
        exact = await fetch_pages(conn, every, len(short), descending=False, params=params)
        for n, page in zip(short, exact, strict=True):
            found[n] = page.rows
            ranked_by[n] = "scope"
    for how in ranked_by:
        metrics.VECTOR_RANKINGS.labels(by=how).inc()
    return found


async def _scan_settings(conn: AsyncConnection, ef_search: int, *, iterative: bool) -> None:
    if iterative:
        settings = {
            "ef": str(int(ef_search)),
            "order": ITERATIVE_ORDER,
            "most": str(MAX_SCAN_TUPLES),
        }
        await conn.execute(_ITERATIVE_SCAN, settings)
    else:
        await conn.execute(sa.text(f"SET LOCAL hnsw.ef_search = {int(ef_search)}"))


# Per transaction (``SET LOCAL``'s scope): connections are pooled. Sorting is off while the
# owner's chunks are asked for, so that the planner walks the index for them, with or without
# statistics: unanalysed, or guessing the owner small, it read every chunk of the owner's
# and sorted them (exact, and as slow as the path this replaces).
_ITERATIVE_SCAN = sa.text(
    "SELECT set_config('hnsw.ef_search', :ef, true), "
    "set_config('hnsw.iterative_scan', :order, true), "
    "set_config('hnsw.max_scan_tuples', :most, true), "
    "set_config('enable_sort', 'off', true)"
)
_SORTS_BACK = sa.text("SET LOCAL enable_sort TO DEFAULT")


async def _candidate_page(
    conn: AsyncConnection,
    ranking: dict[str, Any],
    own: dict[str, Any],
    limit: int,
    dims: int,
    hnsw: tuple[bool, int] | None,
    cut: bool,
) -> tuple[list[RankedMemory], str]:
    """One page from the HNSW index (``hnsw``: iterative scans, ``ef_search``), else from the
    owner's nearest chunks (``cut``); a short page (and how it was ranked) otherwise."""
    shape, fetch = tuple(own), lookup_fetch(limit)
    params = ranking | page_parameters([own])
    rows: list[RankedMemory] = []
    how = "scope"
    if hnsw is not None:
        iterative, ef_search = hnsw
        if iterative:
            own_ann = (shape, dims, limit * ITERATIVE_CHUNKS_PER_ROW, limit)
            statement = template(("vector-iterative", *own_ann), _indexed_page, *own_ann)
        else:
            ann = (shape, dims, fetch, limit, ef_search)
            statement = template(("vector-cut", *ann), _cut_page, *ann)
        rows, how = await fetch_ranked(conn, statement, params), "index"
    if len(rows) < limit and cut:
        # The nearest ``fetch`` memories first: a full page from them is the exact answer
        # (anything nearer that passes the filters is among them), and looking a few
        # hundred rows up instead of joining the whole scope is most of the statement at
        # 10k memories. Also the second try of a short page from the HNSW index (an owner
        # with a small share of it): cheaper than grouping every chunk of a large scope.
        exact = (shape, dims, fetch, limit, None)
        statement = template(("vector-cut", NEAREST_CHUNKS_PER_MEMORY, *exact), _cut_page, *exact)
        rows, how = await fetch_ranked(conn, statement, params), "nearest_chunks"
    return rows, how


# The rankings below are templates (``db.templates``): the owner, the model and the query
# vector are the parameters ``tenant_id``, ``user_id``, ``model`` and ``q``.


def _distance(dims: int) -> sa.ColumnElement[Any]:
    probe = sa.cast(param("q", type_=sa.Text()), Vector(dims))
    return _cast(dims).op("<=>")(probe)


# The nearest ``fetch`` memories are grouped from this many nearest chunks for each: a memory
# with no chunk among them is no nearer than the last of them, so the memories found there
# are the exact nearest (a short page falls back to the whole ranking, as filters make it).
NEAREST_CHUNKS_PER_MEMORY = 4


def _exact(dims: int, fetch: int | None) -> sa.CTE:
    """Every chunk in the owner's scope scored, each memory by its best chunk (the nearest
    ``fetch`` memories; all of them without it). With ``fetch``, only the nearest chunks are
    grouped: a top-N sort of the distances, where grouping every chunk by memory took as long
    as scoring them (10,000 chunks: 30 → 17 ms)."""
    scored = sa.select(_c.memory_id, _distance(dims).label("distance")).where(
        _c.tenant_id == param("tenant_id"),
        _c.user_id == param("user_id"),
        _c.model == param("model"),
    )
    if fetch is None:
        return _best(scored, None)
    chunks = scored.offset(0).subquery("chunks")
    nearest = (
        sa.select(chunks.c.memory_id, chunks.c.distance)
        .order_by(chunks.c.distance, chunks.c.memory_id)
        .limit(fetch * NEAREST_CHUNKS_PER_MEMORY)
    )
    return _best(nearest, fetch)


def _approximate(dims: int, fetch: int, ef_search: int) -> sa.CTE:
    """The HNSW index's nearest chunks of the model (the index holds every tenant's, so the
    owner's are picked from an over-fetch), the best ``fetch`` memories kept."""
    distance = _distance(dims)
    ann = (
        sa.select(_c.tenant_id, _c.user_id, _c.memory_id, distance.label("distance"))
        .where(_c.model == param("model"))
        .order_by(distance)
        .limit(max(ef_search, fetch))
        .cte("ann")
        .prefix_with("MATERIALIZED")
    )
    mine = sa.and_(ann.c.tenant_id == param("tenant_id"), ann.c.user_id == param("user_id"))
    return _best(sa.select(ann.c.memory_id, ann.c.distance).where(mine), fetch)


def _iterative(dims: int, fetch: int) -> sa.CTE:
    """The owner's nearest chunks through the HNSW index, which walks on past other owners'
    rows until ``fetch`` of the owner's are found (an iterative scan; ``MAX_SCAN_TUPLES`` at
    most), the best ``fetch`` memories kept, sorted again by their exact distances."""
    distance = _distance(dims)
    ann = (
        sa.select(_c.memory_id, distance.label("distance"))
        .where(
            _c.model == param("model"),
            _c.tenant_id == param("tenant_id"),
            _c.user_id == param("user_id"),
        )
        .order_by(distance)
        .limit(fetch)
        .cte("ann")
        .prefix_with("MATERIALIZED")
    )
    return _best(sa.select(ann.c.memory_id, ann.c.distance), fetch)


def _best(candidates: sa.Select[Any], fetch: int | None) -> sa.CTE:
    # OFFSET 0 keeps the subquery whole, so each chunk's distance is computed before the rows
    # are sorted by memory: folded into the aggregate, the sort carried every 1.5 kB vector
    # and spilled to disk past work_mem (7.7 MB at 5,000 chunks: half the statement).
    scored = candidates.offset(0).subquery("scored")
    distance = sa.func.min(scored.c.distance).label("distance")
    return (
        sa.select(scored.c.memory_id, distance)
        .group_by(scored.c.memory_id)
        .order_by(distance, scored.c.memory_id)
        .limit(fetch)
        .cte("best")
        .prefix_with("MATERIALIZED")
    )


def _cut_page(
    shape: tuple[str, ...], dims: int, fetch: int, limit: int, ef_search: int | None
) -> sa.Select[Any]:
    """A page looked up by id from the nearest ``fetch`` memories: through the HNSW index
    with ``ef_search``, exactly without."""
    best = _exact(dims, fetch) if ef_search is None else _approximate(dims, fetch, ef_search)
    return ranked_page_template(shape, best, best.c.distance, limit, by_id=True)


def _indexed_page(shape: tuple[str, ...], dims: int, fetch: int, limit: int) -> sa.Select[Any]:
    """A page looked up by id from the owner's nearest ``fetch`` memories, found by an
    iterative HNSW scan."""
    best = _iterative(dims, fetch)
    return ranked_page_template(shape, best, best.c.distance, limit, by_id=True)


def _exact_pages(
    shapes: tuple[tuple[str, ...], ...], dims: int, limit: int
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    best = _exact(dims, None)
    return ranked_pages_template(shapes, best, best.c.distance, limit)


def vector_text(values: Sequence[float]) -> str:
    """A query vector in pgvector's text form. One question's vector goes into several
    statements (a search's lists, remember()'s entity and fact candidates): formatting its
    floats costs far more than hashing them, so the last few are remembered."""
    return _formatted(tuple(values))


@functools.lru_cache(maxsize=8)
def _formatted(values: tuple[float, ...]) -> str:
    return "[" + ",".join(f"{float(v):.7g}" for v in values) + "]"


async def first_vectors(
    conn: AsyncConnection, tenant_id: str, memory_ids: Sequence[UUID], model: str
) -> dict[UUID, list[float]]:
    """Each memory's first chunk vector of ``model`` (a short memory's only one: its whole
    text's), for those that have one."""
    if not memory_ids:
        return {}
    query = template(("first vectors",), _first_vectors)
    values = {"tenant_id": tenant_id, "ids": list(memory_ids), "model": model}
    return {row.memory_id: _unpacked(row.vector) for row in await conn.execute(query, values)}


def _first_vectors() -> sa.Select[Any]:
    # pgvector's binary form (vector_send): the same float4 values as the text form, read
    # without parsing 384 decimals a vector in Python (a search reads 15 for updates first).
    packed = sa.func.vector_send(_c.embedding, type_=sa.LargeBinary)
    return sa.select(_c.memory_id, packed.label("vector")).where(
        _c.tenant_id == param("tenant_id"),
        _c.memory_id.in_(param("ids", expanding=True)),
        _c.model == param("model"),
        _c.chunk_index == 0,
    )


def _unpacked(packed: bytes) -> list[float]:
    """A vector from ``vector_send``: its dimension and a reserved field (two 16-bit integers),
    then the values as big-endian float4."""
    values: list[float] = np.frombuffer(packed, dtype=">f4", offset=4).astype(np.float64).tolist()
    return values


async def first_vector(
    conn: AsyncConnection, tenant_id: str, memory_id: UUID
) -> tuple[str, list[float]] | None:
    """A memory's first chunk vector and its model (what a background add is compared by)."""
    query = (
        sa.select(_c.model, _c.embedding)
        .where(_c.tenant_id == tenant_id, _c.memory_id == memory_id)
        .order_by(_c.chunk_index)
        .limit(1)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else (str(row.model), [float(x) for x in row.embedding])


async def nearest_each(
    conn: AsyncConnection,
    tenant_id: str,
    owner: tuple[str, str],
    queries: Sequence[Sequence[float]],
    model: str,
    dims: int,
) -> list[RankedMemory | None]:
    """For each query vector, the owner's (user, app) nearest live memory other than a
    conversation turn, by its best chunk's cosine distance (ties to the lower id), in one
    statement for them all: what :func:`nearest` answers for one query with the owner's
    filter, ``limit=1`` and ``derived_only``, scored exactly. Dedup asked it an item at a
    time (a count, a setting and a ranking: three round trips an item in a bulk write)."""
    if not queries:
        return []
    model, dims = _checked(model, dims)
    user_id, app_id = owner
    wanted = MemoryFilter.model_construct(user_id=user_id, app_id=app_id)
    own = filter_values(tenant_id, wanted, derived_only=True)
    shape = tuple(own)
    statement = template(("vector-nearest-each", shape, dims), _nearest_each, shape, dims)
    params = {
        **page_parameters([own]),
        "model": model,
        "queries": [vector_text(q) for q in queries],
    }
    await nested_loops_off(conn)
    found: list[RankedMemory | None] = [None] * len(queries)
    for row in await conn.execute(statement, params):
        found[row.query - 1] = RankedMemory.from_row(row)
    return found


def _nearest_each(shape: tuple[str, ...], dims: int) -> sa.Select[Any]:
    """The owner's candidate chunks (those of the memories that pass the filters named in
    ``shape``, as a page template takes them) are read once, and each query keeps the nearest
    of them (a top-1 scan, not a sort): the memory of the nearest chunk is the memory whose
    best chunk is nearest."""
    owned = (
        sa.select(_c.memory_id, _cast(dims).label("embedding"))
        .join(memories, sa.and_(_m.tenant_id == _c.tenant_id, _m.id == _c.memory_id))
        .where(
            _c.tenant_id == param("p0_tenant_id"),
            _c.user_id == param("p0_user_id"),
            _c.model == param("model"),
            *filter_parameters(shape, "p0_", _m),
        )
        .cte("owned")
        .prefix_with("MATERIALIZED")
    )
    given = (
        sa.func.unnest(sa.cast(param("queries"), sa.ARRAY(sa.Text())))
        .table_valued("probe", with_ordinality="query")
        .render_derived(name="given")
    )
    # Each probe is parsed into a vector once, in a materialised CTE: cast inside the lateral
    # scan, its text was parsed again for every candidate chunk (a bulk write of 100 items
    # against an owner of 550 memories spent 270 ms of the server's CPU on it).
    asked = (
        sa.select(given.c.query, sa.cast(given.c.probe, Vector(dims)).label("probe"))
        .cte("asked")
        .prefix_with("MATERIALIZED")
    )
    distance = owned.c.embedding.op("<=>")(asked.c.probe)
    best = (
        sa.select(owned.c.memory_id, distance.label("distance"))
        .order_by(distance, owned.c.memory_id)
        .limit(1)
        .lateral("best")
    )
    return (
        sa.select(memories, best.c.distance.label("rank"), asked.c.query)
        .select_from(asked)
        .join(best, sa.true())
        .join(
            memories,
            sa.and_(
                _m.tenant_id == param("p0_tenant_id"),
                _m.user_id == param("p0_user_id"),
                _m.id == best.c.memory_id,
            ),
        )
    )
