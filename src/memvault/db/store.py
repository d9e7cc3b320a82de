"""Every database call memvault makes, as small functions over an open connection.

Callers pass the tenant explicitly; every statement on a tenant table filters by it. Nothing
here encrypts or decrypts: rows go in and come out sealed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db import tenancy, webhooks
from memvault.db.records import (
    AnyRow,
    HistoryRow,
    MemoryRow,
    RankedMemory,
    RankedPage,
)
from memvault.db.tables import (
    JOBS_CHANNEL,
    embedding_jobs,
    encryption_keys,
    memories,
    memory_history,
)
from memvault.db.templates import param
from memvault.models import TURN_SOURCE, MemoryFilter

_m = memories.c
_h = memory_history.c

_live = sa.or_(_m.expires_at.is_(None), _m.expires_at > sa.func.now())


def _owned(tenant_id: str, memory_id: UUID, user_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(_m.tenant_id == tenant_id, _m.id == memory_id, _m.user_id == user_id)


# Every column an add may set; the statements are built once (building and cache-keying a CTE
# statement per call cost more CPU than the insert itself).
_ADD_COLUMNS = (
    "tenant_id",
    "id",
    "user_id",
    "app_id",
    "project_id",
    "environment",
    "channel",
    "source",
    "tags",
    "ciphertext",
    "nonce",
    "key_id",
    "content_hash",
    "metadata",
    "expires_at",
    "embedded",
    "embedding_model",
    "importance",
    "memory_type",
    "valid_until",
    "categories",
    "term_count",
)
_ADD_DEFAULTS: dict[str, Any] = {
    "app_id": "default",
    "channel": "_global",
    "tags": [],
    "metadata": {},
    "occurred_at": None,
    "project_id": None,
    "environment": None,
    "source": None,
    "expires_at": None,
    "embedded": False,
    "embedding_model": None,
    "importance": None,
    "memory_type": "persistent",
    "valid_until": None,
    "categories": [],
    "term_count": 0,
}


# What a memory event's data names (db/webhooks.py): ids, kinds and times, never content.
_EVENT_COLUMNS = (
    "tenant_id",
    "id",
    "user_id",
    "app_id",
    "memory_type",
    "source",
    "created_at",
    "updated_at",
)


def _build_add_many(job_kind: str | None) -> sa.Select[Any]:
    """The memories :data:`_INSERT_MEMORIES` inserted (by ``keys``, (tenant, id) pairs) with
    each row's history and events, and with ``job_kind`` each row's job. Its shape never
    depends on the rows, so SQLAlchemy compiles it once (a multi-row ``VALUES`` insert is
    never cached: 100 rows took longer to compile than to store)."""
    keys: sa.BindParameter[Any] = sa.bindparam("keys", expanding=True)
    new = sa.select(memories).where(sa.tuple_(_m.tenant_id, _m.id).in_(keys)).cte("new")
    kind = sa.literal(job_kind, type_=sa.Text()) if job_kind is not None else None
    return _added(new, sa.bindparam("actor", type_=sa.Text()), kind)


# Rows of a batch with one compiled statement (psycopg sends them in few round trips).
_INSERT_MEMORIES = memories.insert().values(
    occurred_at=sa.func.coalesce(
        sa.bindparam("occurred_at_given", type_=memories.c.occurred_at.type), sa.func.now()
    )
)


def _added(
    new: sa.CTE, actor: sa.ColumnElement[Any], job_kind: sa.ColumnElement[Any] | None
) -> sa.Select[Any]:
    """The inserted memories (``new``) with their ADD history rows and created events, and,
    given ``job_kind``, their embedding jobs (waking the workers)."""
    history = (
        memory_history.insert()
        .from_select(
            [
                "tenant_id",
                "memory_id",
                "user_id",
                "action",
                "new_ciphertext",
                "new_nonce",
                "new_key_id",
                "new_metadata",
                "actor",
            ],
            sa.select(
                new.c.tenant_id,
                new.c.id,
                new.c.user_id,
                sa.literal("ADD"),
                new.c.ciphertext,
                new.c.nonce,
                new.c.key_id,
                new.c.metadata,
                actor,
            ),
        )
        .cte("history")
    )
    hooks = webhooks.fanout(webhooks.memory_events(new, "memory.created")).cte("hooks")
    if job_kind is None:
        return sa.select(new).add_cte(history, hooks)
    job = (
        embedding_jobs.insert()
        .from_select(
            ["tenant_id", "memory_id", "kind"],
            sa.select(new.c.tenant_id, new.c.id, job_kind),
        )
        .cte("job")
    )
    notify = sa.func.pg_notify(JOBS_CHANNEL, "").label("notified")
    return sa.select(new, notify).add_cte(history, job, hooks)


# Memories a history-and-events statement takes: their keys are two parameters each.
_ROWS_A_STATEMENT = 500


async def insert_memories(
    conn: AsyncConnection,
    values: Sequence[dict[str, Any]],
    actor: str,
    *,
    job_kind: str | None = None,
) -> dict[UUID, MemoryRow]:
    """Memories with their ADD history rows (and, unless their vectors come with them, their
    embedding jobs, waking the workers), a few hundred to a statement: a bulk import's rows in
    a handful of round trips, not one each. ``job_kind``: each gets an embedding job of that
    kind (None: their vectors come with them). By id, since a multi-row insert does not
    promise to return rows in order."""
    rows = [{**_ADD_DEFAULTS, **v} for v in values]
    found: dict[UUID, MemoryRow] = {}
    if not rows:
        return found
    await conn.execute(
        _INSERT_MEMORIES,
        [{**{c: r[c] for c in _ADD_COLUMNS}, "occurred_at_given": r["occurred_at"]} for r in rows],
    )
    added = _build_add_many(job_kind)
    for start in range(0, len(rows), _ROWS_A_STATEMENT):
        keys = [(r["tenant_id"], r["id"]) for r in rows[start : start + _ROWS_A_STATEMENT]]
        for row in await conn.execute(added, {"keys": keys, "actor": actor}):
            record = MemoryRow.from_row(row)
            found[record.id] = record
    return found


async def find_by_hashes(
    conn: AsyncConnection,
    tenant_id: str,
    wanted: Sequence[tuple[str, str, Sequence[bytes]]],
) -> list[MemoryRow | None]:
    """``find_by_hash`` for many (user, app, hashes) at once, in one statement: for each, the
    earliest live memory of that owner holding one of the hashes (turns aside), or None."""
    if not wanted:
        return []
    every = sorted({h for _, _, hashes in wanted for h in hashes})
    query = (
        sa.select(memories)
        .where(
            _m.tenant_id == tenant_id,
            _m.user_id.in_(sorted({user for user, _, _ in wanted})),
            _m.content_hash.in_(every),
            _m.source.is_distinct_from(TURN_SOURCE),
            _live,
        )
        .order_by(_m.created_at, _m.id)
    )
    first: dict[tuple[str, str, bytes], MemoryRow] = {}
    for row in await conn.execute(query):
        record = MemoryRow.from_row(row)
        first.setdefault((record.user_id, record.app_id, bytes(row.content_hash)), record)
    answers: list[MemoryRow | None] = []
    for user, app, hashes in wanted:
        matches = [m for h in hashes if (m := first.get((user, app, bytes(h)))) is not None]
        answers.append(min(matches, key=lambda m: m.created_at) if matches else None)
    return answers


async def find_by_hash(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    app_id: str,
    hashes: Sequence[bytes],
    *,
    exclude: UUID | None = None,
) -> MemoryRow | None:
    """A live memory of this owner (other than ``exclude``) whose keyed content hash is one of
    ``hashes``, conversation turns aside: what someone said is never folded into."""
    query = (
        sa.select(memories)
        .where(
            _m.tenant_id == tenant_id,
            _m.user_id == user_id,
            _m.app_id == app_id,
            _m.content_hash.in_(list(hashes)),
            _m.id != exclude if exclude is not None else sa.true(),
            _m.source.is_distinct_from(TURN_SOURCE),
            _live,
        )
        .order_by(_m.created_at)
        .limit(1)
    )
    return _memory((await conn.execute(query)).first())


async def lock_content(conn: AsyncConnection, keys: Sequence[str]) -> None:
    """Serialise writers of the same content for the rest of the transaction (sorted, so two
    batches never wait on each other in opposite orders), in one round trip for a batch."""
    ordered = sorted(set(keys))
    if ordered:
        await conn.execute(_LOCK_CONTENT, {"keys": ordered})


_LOCK_CONTENT = sa.text(
    "SELECT pg_advisory_xact_lock(hashtextextended(k, 0))"
    " FROM unnest(CAST(:keys AS text[])) WITH ORDINALITY AS t(k, n) ORDER BY n"
)


async def fetch_memory(
    conn: AsyncConnection, tenant_id: str, memory_id: UUID, user_id: str, *, lock: bool = False
) -> MemoryRow | None:
    query = sa.select(memories).where(_owned(tenant_id, memory_id, user_id), _live)
    if lock:
        query = query.with_for_update()
    return _memory((await conn.execute(query)).one_or_none())


def _memory(row: Any) -> MemoryRow | None:
    return None if row is None else MemoryRow.from_row(row)


# Each filter's condition on ``c`` given its value (or its parameter, in a template), by the
# name ``filter_values`` gives the value: one definition for both ways of building. A filter
# named after a column and not listed here is that column's equality.
_SPECIAL: dict[str, Callable[[Any, Any], sa.ColumnElement[bool]]] = {
    "tags": lambda c, v: c.tags.contains(v),
    "metadata": lambda c, v: c.metadata.contains(v),
    "tags_any": lambda c, v: c.tags.overlap(v),
    "categories": lambda c, v: c.categories.overlap(v),
    "channels": lambda c, v: c.channel.in_(v),
    "min_importance": lambda c, v: c.importance >= v,
    "created_after": lambda c, v: c.created_at >= v,
    "created_before": lambda c, v: c.created_at < v,
    "occurred_after": lambda c, v: c.occurred_at >= v,
    "occurred_before": lambda c, v: c.occurred_at < v,
}
# The filters are ``MemoryFilter``'s fields (the user is always applied): list-valued ones
# filter when not empty, the rest when set.
_FILTERS = tuple(name for name in MemoryFilter.model_fields if name != "user_id")
_LISTS = tuple(
    name for name in _FILTERS if isinstance(MemoryFilter.model_fields[name].default, list)
)
_SCALARS = tuple(name for name in _FILTERS if name not in _LISTS)


def _equal(name: str) -> Callable[[Any, Any], sa.ColumnElement[bool]]:
    return lambda c, v: c[name] == v


_CONDITIONS: dict[str, Callable[[Any, Any], sa.ColumnElement[bool]]] = {
    "tenant_id": lambda c, v: c.tenant_id == v,
    "user_id": lambda c, v: c.user_id == v,
    **{name: _SPECIAL.get(name) or _equal(name) for name in _FILTERS},
    "exclude_id": lambda c, v: c.id != v,
    "not_source": lambda c, v: c.source.is_distinct_from(v),
}


def filter_values(
    tenant_id: str,
    f: MemoryFilter,
    exclude_id: UUID | None = None,
    *,
    derived_only: bool = False,
) -> dict[str, Any]:
    """The values of the filters that are set, by condition name (the keys are the shape of
    the conditions, the values their parameters). Each field of ``MemoryFilter`` is here."""
    values: dict[str, Any] = {"tenant_id": tenant_id, "user_id": f.user_id}
    for name in _SCALARS:
        if getattr(f, name) is not None:
            values[name] = getattr(f, name)
    for name in _LISTS:  # an empty list filters nothing
        if getattr(f, name):
            values[name] = list(getattr(f, name))
    if exclude_id is not None:
        values["exclude_id"] = exclude_id
    if derived_only:  # conversation turns aside (dedup never rewrites what was said)
        values["not_source"] = TURN_SOURCE
    return values


def _live_condition(c: Any) -> sa.ColumnElement[bool]:
    return sa.or_(c.expires_at.is_(None), c.expires_at > sa.func.now())


def list_filters(
    tenant_id: str,
    f: MemoryFilter,
    c: Any = memories.c,
    *,
    exclude_id: UUID | None = None,
) -> list[sa.ColumnElement[bool]]:
    """The filters as conditions on ``c``: the memories table's columns, or those of a
    subquery that selects its rows."""
    values = filter_values(tenant_id, f, exclude_id)
    return [_live_condition(c), *(_CONDITIONS[name](c, v) for name, v in values.items())]


def filter_parameters(shape: Sequence[str], prefix: str, c: Any) -> list[sa.ColumnElement[bool]]:
    """:func:`list_filters` for a template: the conditions of the filters named in ``shape``
    (``filter_values``' keys), each taking its value from the parameter ``prefix + name``."""
    return [
        _live_condition(c),
        *(
            _CONDITIONS[name](c, param(prefix + name, expanding=name == "channels"))
            for name in shape
        ),
    ]


def page_parameters(pages: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each page's ``filter_values`` as the parameters of a page template: page ``n``'s as
    ``p<n>_<name>`` (see :func:`ranked_page_template`, :func:`ranked_pages_template`)."""
    return {f"p{n}_{name}": v for n, values in enumerate(pages) for name, v in values.items()}


# Filters that usually keep a small part of a scope (a time window, a tag): every filter but
# those that name the scope itself. A list filtered by them ranks the whole scope at once
# rather than trying its best few hundred first.
_SCOPE = frozenset({"app_id", "project_id", "environment", "channel", "channels"})
_NARROWING = tuple(name for name in _FILTERS if name not in _SCOPE)


def narrows(f: MemoryFilter) -> bool:
    return any(getattr(f, name) not in (None, []) for name in _NARROWING)


def owner_of(pages: Sequence[MemoryFilter]) -> str:
    """The one owner whose memories all the pages of a ranking rank (one ranking, one scope)."""
    owners = {f.user_id for f in pages}
    if len(owners) != 1:
        raise ValueError("the pages of one ranking belong to one owner")
    return owners.pop()


Conditions = Callable[[Any], list[sa.ColumnElement[bool]]]

# A ranking of a scope larger than this first keeps its best ``lookup_fetch(limit)``
# candidates and looks them up by id (a page template's ``by_id``), instead of joining the
# whole scope: below it the join costs less (on a 675-turn conversation the lookups were 0-8%
# slower for vectors, 14% for keywords). Vector and keyword lists share both numbers.
LOOKUP_MIN_SCOPE = 2_000


def lookup_fetch(limit: int) -> int:
    """The candidates kept before the lookup: enough that ordinary filters still fill the
    page (a page they cannot fill is ranked the whole way), few enough to look up."""
    return max(limit * 4, 200)


def ranked_page(
    tenant_id: str,
    filters: MemoryFilter,
    ranked: sa.CTE,
    order: sa.ColumnElement[Any],
    limit: int,
    *,
    exclude_id: UUID | None = None,
) -> sa.Select[Any]:
    """The best ``limit`` of ``ranked`` (a materialised CTE of candidate ``memory_id``s and
    their score) that pass the filters, as memory rows with the score beside them as
    ``rank``, joined to the owner's memories (read once). Run it with :func:`fetch_ranked`."""
    return _ranked_page(
        lambda c: list_filters(tenant_id, filters, c, exclude_id=exclude_id),
        tenant_id,
        ranked,
        order,
        limit,
        by_id=False,
    )


def ranked_page_template(
    shape: Sequence[str],
    ranked: sa.CTE,
    order: sa.ColumnElement[Any],
    limit: int,
    *,
    by_id: bool = False,
) -> sa.Select[Any]:
    """:func:`ranked_page` as a template: the filters named in ``shape`` take their values from
    the parameters ``p0_<name>`` (``page_parameters``), the tenant from ``p0_tenant_id``.
    ``by_id``: ``ranked`` was cut to a few hundred, look each up by id instead of joining the
    owner's memories."""
    return _page_template(shape, 0, ranked, order, limit, by_id)


def _page_template(
    shape: Sequence[str],
    n: int,
    ranked: sa.CTE,
    order: sa.ColumnElement[Any],
    limit: int,
    by_id: bool,
) -> sa.Select[Any]:
    """Page ``n`` of a template: its tenant and filters from the parameters ``p<n>_…``."""
    prefix = f"p{n}_"
    return _ranked_page(
        functools.partial(filter_parameters, shape, prefix),
        param(prefix + "tenant_id"),
        ranked,
        order,
        limit,
        by_id,
    )


def _ranked_page(
    conditions: Conditions,
    tenant: Any,
    ranked: sa.CTE,
    order: sa.ColumnElement[Any],
    limit: int,
    by_id: bool,
) -> sa.Select[Any]:
    (score,) = [column for column in ranked.c if column.name != "memory_id"]
    if not by_id:
        return (
            sa.select(memories, score.label("rank"))
            .join(ranked, sa.and_(_m.tenant_id == tenant, _m.id == ranked.c.memory_id))
            .where(*conditions(_m))
            .order_by(order, _m.id)
            .limit(limit)
        )
    # Each candidate's row by its id, through ``ix_memories_id``: a LATERAL subquery with an
    # OFFSET is never flattened into a join, and ``id`` alone is a condition no other index
    # serves, so no index ties with it however empty the statistics (with ``tenant_id`` in
    # the lookup, an owner index did, and was scanned once per candidate). The tenant and the
    # filters apply to the few rows found: the hash join reads all the owner's memories (15
    # of a vector list's 35 ms at 10k memories).
    row = sa.select(memories).where(_m.id == ranked.c.memory_id).offset(0).lateral("memory")
    return (
        sa.select(row, score.label("rank"))
        .select_from(ranked)
        .join(row, sa.true())
        .where(*conditions(row.c))
        .order_by(order, row.c.id)
        .limit(limit)
    )


def ranked_pages_template(
    shapes: Sequence[Sequence[str]],
    ranked: sa.CTE,
    order: sa.ColumnElement[Any],
    limit: int,
    *,
    columns: Sequence[sa.ColumnElement[Any]] = (),
    by_id: bool = False,
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """A template of :func:`ranked_page` joined to ``ranked`` once for each filter set, in one
    statement (a question and its time-narrowed probe share one ranking of the owner's
    memories): page ``n`` filtered by the parameters ``p<n>_<name>`` (``page_parameters``), each
    row tagged with its page's index as ``page``, with ``columns`` beside it; ``by_id`` as
    for :func:`ranked_page`. Read it with :func:`fetch_pages`."""
    branches = [
        _page_template(shape, n, ranked, order, limit, by_id).add_columns(
            sa.literal(n, sa.Integer).label("page"), *columns
        )
        for n, shape in enumerate(shapes)
    ]
    return branches[0] if len(branches) == 1 else sa.union_all(*branches)


async def fetch_pages(
    conn: AsyncConnection,
    statement: sa.Select[Any] | sa.CompoundSelect[Any],
    count: int,
    *,
    descending: bool,
    params: dict[str, Any] | None = None,
) -> list[RankedPage]:
    """A :func:`ranked_pages_template` statement's pages, each in its ranking's order (``rank`` then
    id, as :func:`ranked_page` orders; a union promises no order of its own), with a plan
    that does not depend on statistics (see :func:`fetch_ranked`)."""
    await nested_loops_off(conn)
    rows = sorted(
        await conn.execute(statement, params),
        key=lambda row: (-row.rank if descending else row.rank, row.id),
    )
    pages: list[list[AnyRow]] = [[] for _ in range(count)]
    for row in rows:
        pages[row.page].append(row)
    return [RankedPage.from_rows(page) for page in pages]


# Without statistics every candidate list and every owner's memories look like one row, so
# the planner nests one over the other, comparing every pair (230,860 pairs for 680 memories).
# A hash or merge join reads each side once whatever the estimates say; nested loops stay only
# where nothing else can run (the lookups by id of ``ranked_page``).
_NESTED_LOOPS_OFF = sa.text("SELECT set_config('enable_nestloop', 'off', true)")


async def fetch_ranked(
    conn: AsyncConnection, statement: sa.Select[Any], params: dict[str, Any] | None = None
) -> list[RankedMemory]:
    """Run a :func:`ranked_page` statement with a plan that does not depend on statistics.
    Nested loops stay off for the rest of the transaction (a round trip saved per list): run
    it last in a transaction of its own or whose later statements are lookups by key."""
    await nested_loops_off(conn)
    return [RankedMemory.from_row(row) for row in await conn.execute(statement, params)]


async def nested_loops_off(conn: AsyncConnection) -> None:
    """Nested loops off for the rest of ``conn``'s transaction, unless it began so
    (``tenancy.ranking_transactions``; the flag is set afresh as each transaction begins)."""
    if not conn.info.get(tenancy.NESTED_LOOPS_OFF):
        await conn.execute(_NESTED_LOOPS_OFF)


async def session_turns(
    conn: AsyncConnection, tenant_id: str, spans: Sequence[tuple[str, str, str, int, int]]
) -> list[MemoryRow]:
    """Live memories of conversation turns: for each (user, app, session, first turn, last
    turn), the turns in that range, by the ``session_id`` and ``turn`` their metadata holds."""
    turn_value = sa.case(
        (
            sa.func.jsonb_typeof(_m.metadata["turn"]) == "number",
            _m.metadata["turn"].astext.cast(sa.Numeric),
        ),
        else_=None,
    )
    wanted = sa.or_(
        *(
            sa.and_(
                _m.user_id == user,
                _m.app_id == app,
                _m.metadata["session_id"].astext == session,
                turn_value.between(first, last),
            )
            for user, app, session, first, last in spans
        )
    )
    # The owners again outside the OR, so the (tenant, user, app) index narrows the scan
    # before the per-span conditions run, whatever the planner knows about the table.
    owners = (
        _m.user_id.in_(sorted({s[0] for s in spans})),
        _m.app_id.in_(sorted({s[1] for s in spans})),
    )
    query = sa.select(memories).where(_m.tenant_id == tenant_id, *owners, _live, wanted)
    return [MemoryRow.from_row(row) for row in await conn.execute(query)]


async def list_memories(
    conn: AsyncConnection,
    tenant_id: str,
    filters: MemoryFilter,
    limit: int,
    after: tuple[datetime, UUID] | None,
) -> list[MemoryRow]:
    """Newest first, keyset-paginated on (created_at, id) so pages stay stable under writes."""
    where = list_filters(tenant_id, filters)
    if after is not None:
        where.append(sa.tuple_(_m.created_at, _m.id) < sa.tuple_(*after))
    query = (
        sa.select(memories).where(*where).order_by(_m.created_at.desc(), _m.id.desc()).limit(limit)
    )
    return [MemoryRow.from_row(row) for row in await conn.execute(query)]


async def count_memories(conn: AsyncConnection, tenant_id: str, filters: MemoryFilter) -> int:
    """How many memories ``list_memories`` would page through with these filters."""
    where = list_filters(tenant_id, filters)
    return int(
        await conn.scalar(sa.select(sa.func.count()).select_from(memories).where(*where)) or 0
    )


async def update_memory(
    conn: AsyncConnection, old: MemoryRow, values: dict[str, Any], actor: str
) -> MemoryRow:
    row = MemoryRow.from_row(
        (
            await conn.execute(
                memories.update()
                .where(_m.tenant_id == old.tenant_id, _m.id == old.id)
                .values(**values, updated_at=sa.func.now())
                .returning(memories)
            )
        ).one()
    )
    content_changed = row.ciphertext != old.ciphertext
    await conn.execute(
        memory_history.insert().values(
            tenant_id=row.tenant_id,
            memory_id=row.id,
            user_id=row.user_id,
            action="UPDATE",
            old_ciphertext=old.ciphertext if content_changed else None,
            old_nonce=old.nonce if content_changed else None,
            old_key_id=old.key_id if content_changed else None,
            new_ciphertext=row.ciphertext if content_changed else None,
            new_nonce=row.nonce if content_changed else None,
            new_key_id=row.key_id if content_changed else None,
            old_metadata=old.metadata,
            new_metadata=row.metadata,
            actor=actor,
        )
    )
    event = webhooks.Event(
        row.tenant_id, "memory.updated", webhooks.memory_data(row), row.user_id, row.app_id
    )
    await webhooks.emit(conn, [event])
    return row


async def delete_where(
    conn: AsyncConnection,
    where: sa.ColumnElement[bool],
    actor: str,
    *,
    note: dict[str, Any] | None = None,
) -> int:
    """Delete matching memories and record a DELETE history row for each, in one statement.
    ``note`` is kept as the history row's new metadata (e.g. which memory absorbed it)."""
    gone = (
        memories.delete()
        .where(where)
        .returning(
            *(_m[c] for c in _EVENT_COLUMNS), _m.ciphertext, _m.nonce, _m.key_id, _m.metadata
        )
        .cte("gone")
    )
    hooks = webhooks.fanout(webhooks.memory_events(gone, "memory.deleted")).cte("hooks")
    history = memory_history.insert().from_select(
        [
            "tenant_id",
            "memory_id",
            "user_id",
            "action",
            "old_ciphertext",
            "old_nonce",
            "old_key_id",
            "old_metadata",
            "new_metadata",
            "actor",
        ],
        sa.select(
            gone.c.tenant_id,
            gone.c.id,
            gone.c.user_id,
            sa.literal("DELETE"),
            gone.c.ciphertext,
            gone.c.nonce,
            gone.c.key_id,
            gone.c.metadata,
            sa.cast(sa.literal(note, type_=JSONB), JSONB) if note else sa.null(),
            sa.literal(actor),
        ),
    )
    return len((await conn.execute(history.add_cte(hooks).returning(_h.id))).all())


def owned_by(tenant_id: str, memory_id: UUID, user_id: str) -> sa.ColumnElement[bool]:
    return _owned(tenant_id, memory_id, user_id)


async def fetch_history(
    conn: AsyncConnection, tenant_id: str, memory_id: UUID, user_id: str
) -> list[HistoryRow]:
    query = (
        sa.select(memory_history)
        .where(_h.tenant_id == tenant_id, _h.memory_id == memory_id, _h.user_id == user_id)
        .order_by(_h.id)
    )
    return [HistoryRow.from_row(row) for row in await conn.execute(query)]


# --- keys -------------------------------------------------------------------------------------


async def registered_key_ids(conn: AsyncConnection) -> set[str]:
    return set((await conn.execute(sa.select(encryption_keys.c.key_id))).scalars())


async def register_key(conn: AsyncConnection, key_id: str) -> None:
    from sqlalchemy.dialects.postgresql import insert

    await conn.execute(insert(encryption_keys).values(key_id=key_id).on_conflict_do_nothing())


async def unregister_keys(conn: AsyncConnection, key_ids: Sequence[str]) -> None:
    await conn.execute(encryption_keys.delete().where(encryption_keys.c.key_id.in_(key_ids)))


# --- the worker and the background pipeline ----------------------------------------------------


async def fetch_memories(
    conn: AsyncConnection, keys: Sequence[tuple[str, UUID]]
) -> dict[tuple[str, UUID], MemoryRow]:
    """Memories of any tenants by (tenant, id), for work that spans tenants (the worker)."""
    if not keys:
        return {}
    query = sa.select(memories).where(sa.tuple_(_m.tenant_id, _m.id).in_(list(keys)))
    found = [MemoryRow.from_row(row) for row in await conn.execute(query)]
    return {(r.tenant_id, r.id): r for r in found}


async def lock_content_hashes(
    conn: AsyncConnection, keys: Sequence[tuple[str, UUID]]
) -> dict[tuple[str, UUID], bytes]:
    """Lock these memories for the transaction and say what content each holds now."""
    query = (
        sa.select(_m.tenant_id, _m.id, _m.content_hash)
        .where(sa.tuple_(_m.tenant_id, _m.id).in_(list(keys)))
        .with_for_update()
    )
    return {(r.tenant_id, r.id): r.content_hash for r in await conn.execute(query)}


async def mark_embedded(
    conn: AsyncConnection, keys: Sequence[tuple[str, UUID]], *, searchable: bool, model: str
) -> None:
    if not keys:
        return
    await conn.execute(
        memories.update()
        .where(sa.tuple_(_m.tenant_id, _m.id).in_(list(keys)))
        .values(embedded=searchable, embedding_model=model)
    )


async def set_enrichment(
    conn: AsyncConnection, tenant_id: str, memory_id: UUID, values: dict[str, Any]
) -> None:
    """A background add's enrichment, once the worker has settled it."""
    await conn.execute(
        memories.update().where(_m.tenant_id == tenant_id, _m.id == memory_id).values(values)
    )


async def reinforce(
    conn: AsyncConnection, tenant_id: str, user_id: str, ids: Collection[UUID]
) -> int:
    """Count one more "this helped" for each of the user's memories named; returns how many."""
    counted = (
        memories.update()
        .where(_m.tenant_id == tenant_id, _m.user_id == user_id, _m.id.in_(list(ids)))
        .values(reinforced_count=sa.func.least(_m.reinforced_count + 1, 2_147_483_647))
        .returning(_m.id)
    )
    return len((await conn.execute(counted)).all())


# An access-count UPDATE of a table aliased ``t``: SET ACCESSED [, more] ACCESS_COUNTS, run by
# add_access_counts (memories here; the graph's facts and entities in graph_walk).
ACCESSED = (
    # Saturating: a count at the INTEGER column's limit (an imported one) must not fail reads.
    "access_count = LEAST(CAST(t.access_count AS bigint) + v.n, 2147483647), "
    "last_accessed = GREATEST(COALESCE(t.last_accessed, CAST(:at AS timestamptz)), "
    "CAST(:at AS timestamptz))"
)
ACCESS_COUNTS = (
    "FROM unnest(CAST(:tenants AS text[]), CAST(:ids AS uuid[]), CAST(:ns AS int[])) "
    "AS v(tenant_id, id, n) WHERE t.tenant_id = v.tenant_id AND t.id = v.id"
)
_RECORD_ACCESS = sa.text(f"UPDATE memories AS t SET {ACCESSED} {ACCESS_COUNTS}")


async def record_access(
    conn: AsyncConnection, counts: dict[tuple[str, UUID], int], at: datetime
) -> None:
    """Add recall counts to memories ((tenant, id) → how many)."""
    await add_access_counts(conn, _RECORD_ACCESS, counts, at)


async def add_access_counts(
    conn: AsyncConnection,
    statement: sa.TextClause,
    counts: dict[tuple[str, UUID], int],
    at: datetime,
) -> None:
    """Run an access-count UPDATE for (tenant, id) → how many, in one statement, in one lock
    order for every process; nothing when there is nothing to count."""
    keys = sorted(counts)
    if not keys:
        return
    await conn.execute(
        statement,
        {
            "tenants": [t for t, _ in keys],
            "ids": [i for _, i in keys],
            "ns": [counts[k] for k in keys],
            "at": at,
        },
    )
