"""Every SQL statement of the knowledge graph: entities, bi-temporal facts, relations, their
sources, keys, merges and reviews. Rows go in and come out sealed, as typed records.

Deletion that follows a memory needs nothing here: the sources, mentions and their cleanup
triggers (migration 0007) remove what only that memory held, in the deleting transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from operator import itemgetter
from typing import Any, TypeVar
from uuid import UUID

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import field_names
from memvault.db.tables import (
    entities,
    entity_mentions,
    entity_merges,
    entity_terms,
    fact_reviews,
    fact_sources,
    fact_terms,
    facts,
    relation_sources,
    relations,
)
from memvault.db.templates import param, template
from memvault.db.vectors import vector_text

_e = entities.c
_f = facts.c
_r = relations.c


@dataclass(frozen=True)
class EntityRow:
    tenant_id: str
    id: UUID
    user_id: str
    app_id: str
    channel: str
    type: str
    name_ciphertext: bytes
    name_nonce: bytes
    aliases_ciphertext: bytes | None
    aliases_nonce: bytes | None
    description_ciphertext: bytes | None
    description_nonce: bytes | None
    key_id: str
    name_key: bytes
    alias_keys: list[bytes]
    salience: float
    access_count: int
    last_accessed: datetime | None
    first_seen: datetime
    properties: dict[str, Any]
    merged_into: UUID | None


@dataclass(frozen=True)
class FactRow:
    tenant_id: str
    id: UUID
    user_id: str
    app_id: str
    channel: str
    subject_id: UUID
    predicate: str
    object_id: UUID | None
    value_ciphertext: bytes | None
    value_nonce: bytes | None
    value_key: bytes | None
    claim_ciphertext: bytes
    claim_nonce: bytes
    key_id: str
    confidence: float
    certainty: str
    temporal: str
    source: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    superseded_by: UUID | None
    access_count: int
    last_accessed: datetime | None


@dataclass(frozen=True)
class RelationRow:
    tenant_id: str
    id: UUID
    user_id: str
    source_id: UUID
    type: str
    target_id: UUID
    properties_ciphertext: bytes | None
    properties_nonce: bytes | None
    key_id: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    recorded_at: datetime


@dataclass(frozen=True)
class MergeRow:
    tenant_id: str
    id: UUID
    user_id: str
    merged_id: UUID
    into_id: UUID
    subject_facts: list[UUID]
    object_facts: list[UUID]
    source_relations: list[UUID]
    target_relations: list[UUID]
    created_at: datetime
    split_at: datetime | None


@dataclass(frozen=True)
class ReviewRow:
    id: UUID
    user_id: str
    fact_id: UUID
    conflicts_with: UUID
    reason: str
    created_at: datetime


T = TypeVar("T")

# The columns a record carries (vectors stay in the database: nothing reads them back).
ENTITY_COLUMNS = [entities.c[f.name] for f in fields(EntityRow)]
FACT_COLUMNS = [facts.c[f.name] for f in fields(FactRow)]


def record(cls: type[T], row: Any) -> T:
    mapping = row._mapping
    return cls(*(mapping[name] for name in field_names(cls)))


def records(cls: type[T], rows: Iterable[Any]) -> list[T]:
    """Rows as ``cls``, the columns found by name once per result rather than once per row
    and field (recall reads hundreds of fact rows a question)."""
    rows = list(rows)
    if not rows:
        return []
    columns = list(rows[0]._fields)
    at = [columns.index(name) for name in field_names(cls)]
    if len(at) == 1:  # itemgetter of one index gives the value, not a tuple
        return [cls(*(row[i] for i in at)) for row in rows]
    # One C call per row picks the fields: graph recall turns a hundred rows into records a
    # question, and a generator per row cost more than the rest of the conversion.
    pick = itemgetter(*at)
    return [cls(*pick(row)) for row in rows]


# --- entities -----------------------------------------------------------------------------


def scope(c: Any, tenant_id: str, user_id: str) -> list[sa.ColumnElement[bool]]:
    return [c.tenant_id == tenant_id, c.user_id == user_id]


async def entities_by_keys(
    conn: AsyncConnection, tenant_id: str, user_id: str, keys: Sequence[bytes]
) -> list[EntityRow]:
    """The owner's entities whose name or an alias has one of these keyed hashes."""
    if not keys:
        return []
    params = {"tenant_id": tenant_id, "user_id": user_id, "keys": list(keys)}
    return records(EntityRow, await conn.execute(_ENTITIES_BY_KEYS, params))


def _entities_by_keys() -> sa.Select[Any]:
    wanted = sa.cast(param("keys", type_=ARRAY(sa.LargeBinary)), ARRAY(sa.LargeBinary))
    return (
        sa.select(*ENTITY_COLUMNS)
        .where(
            _e.tenant_id == param("tenant_id"),
            _e.user_id == param("user_id"),
            sa.or_(_e.name_key == sa.any_(wanted), _e.alias_keys.overlap(wanted)),
        )
        .order_by(_e.merged_into.is_not(None), _e.first_seen, _e.id)
    )


# The statements an extraction's entities and facts run for each name and claim are built
# once: building them again for every claim of a bulk write cost more than running them.
_ENTITIES_BY_KEYS = _entities_by_keys()


async def nearest_entities(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    vector: Sequence[float],
    model: str,
    limit: int,
) -> list[tuple[EntityRow, float]]:
    """The owner's unmerged entities by cosine similarity of their names to ``vector``."""
    shape = (len(vector), limit)
    query = template(("graph", "nearest entities", *shape), _nearest_entities, *shape)
    params = {"tenant_id": tenant_id, "user_id": user_id, "model": model, "q": vector_text(vector)}
    rows = await conn.execute(query, params)
    return [(record(EntityRow, r), 1.0 - float(r.distance)) for r in rows]


def _nearest_entities(
    dims: int, limit: int, probe: sa.ColumnElement[Any] | None = None
) -> sa.Select[Any]:
    if probe is None:
        probe = sa.cast(param("q", type_=sa.Text()), Vector(dims))
    distance = _e.embedding.op("<=>", return_type=sa.Float)(probe)
    return (
        sa.select(*ENTITY_COLUMNS, distance.label("distance"))
        .where(
            _e.tenant_id == param("tenant_id"),
            _e.user_id == param("user_id"),
            _e.embedding_model == param("model"),
            _e.merged_into.is_(None),
        )
        .order_by(distance)
        .limit(limit)
    )


async def nearest_entities_each(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    vectors: Sequence[Sequence[float]],
    model: str,
) -> list[tuple[EntityRow, float] | None]:
    """:func:`nearest_entities` (the nearest one) for each of ``vectors`` in one statement,
    in their order; ``None`` where the owner has no entity of that model."""
    if not vectors:
        return []
    dims = len(vectors[0])
    query = template(("graph", "nearest entity each", dims), _nearest_entities_each, dims)
    params = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "model": model,
        "qs": [vector_text(v) for v in vectors],
    }
    found: list[tuple[EntityRow, float] | None] = [None] * len(vectors)
    rows = list(await conn.execute(query, params))
    for row, entity in zip(rows, records(EntityRow, rows), strict=True):
        found[row.n - 1] = (entity, 1.0 - float(row.distance))
    return found


def _nearest_entities_each(dims: int) -> sa.Select[Any]:
    texts = (
        sa.func.unnest(sa.cast(param("qs", type_=ARRAY(sa.Text())), ARRAY(sa.Text())))
        .table_valued("q", with_ordinality="n")
        .render_derived()
        .alias("texts")
    )
    # Parsed into vectors once: cast inside the lateral scan, a probe's text would be parsed
    # again for every entity it is compared with (db.vectors.nearest_each measured it).
    given = (
        sa.select(texts.c.n, sa.cast(texts.c.q, Vector(dims)).label("q"))
        .cte("given")
        .prefix_with("MATERIALIZED")
    )
    nearest = _nearest_entities(dims, 1, probe=given.c.q).lateral("near")
    return sa.select(given.c.n, nearest).select_from(given.join(nearest, sa.true()))


async def insert_entity(conn: AsyncConnection, values: Mapping[str, Any]) -> EntityRow:
    row = (await conn.execute(_INSERT_ENTITY, dict(values))).one()
    return record(EntityRow, row)


_INSERT_ENTITY = entities.insert().returning(*ENTITY_COLUMNS)


async def insert_entities(conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Many entities in one statement (every row with the same columns)."""
    if rows:
        await conn.execute(entities.insert(), [dict(r) for r in rows])


async def update_entity(
    conn: AsyncConnection, tenant_id: str, entity_id: UUID, values: Mapping[str, Any]
) -> None:
    await conn.execute(
        entities.update().where(_e.tenant_id == tenant_id, _e.id == entity_id).values(**values)
    )


async def fetch_entity(
    conn: AsyncConnection, tenant_id: str, user_id: str, entity_id: UUID, *, lock: bool = False
) -> EntityRow | None:
    # By primary key, the owner checked here: with the owner in the WHERE clause an
    # unanalysed planner reads all the owner's entities through the (tenant, user) index.
    query = sa.select(*ENTITY_COLUMNS).where(_e.tenant_id == tenant_id, _e.id == entity_id)
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).one_or_none()
    if row is None or row.user_id != user_id:
        return None
    return record(EntityRow, row)


async def fetch_entities(
    conn: AsyncConnection, tenant_id: str, ids: Iterable[UUID]
) -> dict[UUID, EntityRow]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    query = template(("graph", "entities by id"), _by_ids, ENTITY_COLUMNS, _e)
    found = await conn.execute(query, {"tenant_id": tenant_id, "ids": wanted})
    return {r.id: r for r in records(EntityRow, found)}


def _by_ids(columns: Sequence[Any], c: Any) -> sa.Select[Any]:
    """A template: rows of the tenant (``tenant_id``) by their ids (``ids``)."""
    return sa.select(*columns).where(
        c.tenant_id == param("tenant_id"), c.id.in_(param("ids", expanding=True))
    )


async def list_entities(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    *,
    type: str | None,
    keys: Sequence[bytes],
    term_ids: Sequence[int],
    limit: int,
) -> list[EntityRow]:
    """The owner's unmerged entities, most salient first; with ``keys``/``term_ids`` only
    those whose name or alias hashes to a key, or whose name words match a term."""
    where = [*scope(_e, tenant_id, user_id), _e.merged_into.is_(None)]
    if type is not None:
        where.append(_e.type == type)
    if keys or term_ids:
        wanted = sa.cast(sa.literal(list(keys), ARRAY(sa.LargeBinary)), ARRAY(sa.LargeBinary))
        by_words = sa.select(entity_terms.c.entity_id).where(
            *scope(entity_terms.c, tenant_id, user_id), entity_terms.c.term.in_(list(term_ids))
        )
        where.append(
            sa.or_(
                _e.name_key == sa.any_(wanted), _e.alias_keys.overlap(wanted), _e.id.in_(by_words)
            )
        )
    query = (
        sa.select(*ENTITY_COLUMNS)
        .where(*where)
        .order_by(_e.salience.desc(), _e.access_count.desc(), _e.first_seen, _e.id)
        .limit(limit)
    )
    return records(EntityRow, await conn.execute(query))


async def add_mentions(
    conn: AsyncConnection, tenant_id: str, user_id: str, memory_id: UUID, ids: Iterable[UUID]
) -> None:
    await add_many_mentions(conn, tenant_id, {memory_id: (user_id, set(ids))})


async def add_many_mentions(
    conn: AsyncConnection, tenant_id: str, mentions: Mapping[UUID, tuple[str, Iterable[UUID]]]
) -> None:
    """Which entities each memory (id → (user id, entity ids)) mentions, one statement for a
    whole batch. Its shape never varies with the row count, so it is compiled once (a
    ``VALUES`` list per call was compiled again for every memory)."""
    rows = [
        {"tenant_id": tenant_id, "memory_id": memory, "entity_id": i, "user_id": user}
        for memory, (user, ids) in mentions.items()
        for i in sorted(set(ids))
    ]
    if rows:
        await conn.execute(_ADD_MENTIONS, rows)


_ADD_MENTIONS = insert(entity_mentions).on_conflict_do_nothing()


# --- facts --------------------------------------------------------------------------------


async def insert_fact(conn: AsyncConnection, values: Mapping[str, Any]) -> FactRow:
    row = (await conn.execute(_INSERT_FACT, dict(values))).one()
    return record(FactRow, row)


_INSERT_FACT = facts.insert().returning(*FACT_COLUMNS)
# What the database fills in a new fact's row where its values leave a column out.
_NEW_FACT_DEFAULTS: dict[str, Any] = {
    "superseded_at": None,
    "superseded_by": None,
    "access_count": 0,
    "last_accessed": None,
}


def new_fact(values: Mapping[str, Any]) -> FactRow:
    """The record :func:`insert_fact` returns for ``values``, without the round trip."""
    full = {**_NEW_FACT_DEFAULTS, **values}
    return FactRow(*(full[name] for name in field_names(FactRow)))


async def insert_facts(conn: AsyncConnection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Many new facts in one statement; a column some rows leave out is NULL in those."""
    columns = {c for r in rows for c in r}
    if rows:
        await conn.execute(facts.insert(), [{**dict.fromkeys(columns), **r} for r in rows])


async def add_fact_source(
    conn: AsyncConnection, tenant_id: str, user_id: str, fact_id: UUID, memory_id: UUID
) -> None:
    await add_fact_sources(conn, tenant_id, user_id, [(fact_id, memory_id)])


async def add_fact_sources(
    conn: AsyncConnection,
    tenant_id: str,
    user_id: str,
    sources: Sequence[tuple[UUID, UUID]],
) -> None:
    """The memories (fact id, memory id) facts came from, one statement for a batch."""
    rows = [
        {"tenant_id": tenant_id, "fact_id": f, "memory_id": m, "user_id": user_id}
        for f, m in sources
    ]
    if rows:
        await conn.execute(_ADD_FACT_SOURCES, rows)


_ADD_FACT_SOURCES = insert(fact_sources).on_conflict_do_nothing()


async def update_fact(
    conn: AsyncConnection, tenant_id: str, fact_id: UUID, values: Mapping[str, Any]
) -> None:
    await conn.execute(
        facts.update().where(_f.tenant_id == tenant_id, _f.id == fact_id).values(**values)
    )


async def fact_undo(conn: AsyncConnection, tenant_id: str, fact_id: UUID) -> dict[str, Any] | None:
    """What a person's retire or correction of the fact changed (``None``: nothing to undo)."""
    query = sa.select(_f.undo).where(_f.tenant_id == tenant_id, _f.id == fact_id)
    found: dict[str, Any] | None = (await conn.execute(query)).scalar_one_or_none()
    return found


async def current_facts_of(
    conn: AsyncConnection, tenant_id: str, user_id: str, subject_id: UUID, predicate: str
) -> list[FactRow]:
    """The subject's facts of this predicate that nothing has superseded, locked: two writers
    deciding about the same subject and predicate take turns."""
    params = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "subject_id": subject_id,
        "predicate": predicate,
    }
    return records(FactRow, await conn.execute(_CURRENT_FACTS_OF, params))


_CURRENT_FACTS_OF = (
    sa.select(*FACT_COLUMNS)
    .where(
        _f.tenant_id == param("tenant_id"),
        _f.user_id == param("user_id"),
        _f.subject_id == param("subject_id", type_=_f.subject_id.type),
        _f.predicate == param("predicate"),
        _f.superseded_at.is_(None),
    )
    .order_by(_f.recorded_at, _f.id)
    .with_for_update()
)


async def current_facts_of_many(
    conn: AsyncConnection, tenant_id: str, user_id: str, pairs: Sequence[tuple[UUID, str]]
) -> dict[tuple[UUID, str], list[FactRow]]:
    """:func:`current_facts_of` for many (subject id, predicate) pairs of one owner in one
    statement, locked as it locks them: every pair asked for is in the answer."""
    found: dict[tuple[UUID, str], list[FactRow]] = {pair: [] for pair in pairs}
    if not found:
        return found
    params = {"tenant_id": tenant_id, "user_id": user_id, "pairs": list(found)}
    for row in records(FactRow, await conn.execute(_CURRENT_FACTS_OF_MANY, params)):
        found[(row.subject_id, row.predicate)].append(row)
    return found


_CURRENT_FACTS_OF_MANY = (
    sa.select(*FACT_COLUMNS)
    .where(
        _f.tenant_id == param("tenant_id"),
        _f.user_id == param("user_id"),
        sa.tuple_(_f.subject_id, _f.predicate).in_(param("pairs", expanding=True)),
        _f.superseded_at.is_(None),
    )
    .order_by(_f.recorded_at, _f.id)
    .with_for_update()
)


async def lock_name(conn: AsyncConnection, tenant_id: str, user_id: str, normalised: str) -> None:
    """Serialise resolvers of one name, so two writers never create the same entity twice."""
    await lock_names(conn, tenant_id, user_id, [normalised])


async def lock_names(
    conn: AsyncConnection, tenant_id: str, user_id: str, normalised: Iterable[str]
) -> None:
    """:func:`lock_name` for many names of one owner (see :func:`lock_owned_names`)."""
    await lock_owned_names(conn, [(tenant_id, user_id, n) for n in normalised])


async def lock_owned_names(conn: AsyncConnection, names: Iterable[tuple[str, str, str]]) -> None:
    """:func:`lock_name` for many (tenant, user, normalised name)s in one round trip, taken in
    one global order (the lock ids'), so two writers naming the same entities the other way
    round never deadlock. A transaction that writes several extractions locks all their names
    in one call, before any: locking each in turn, it held some names while it waited for
    others, in no global order."""
    await _lock_in_order(conn, [f"entity\x00{t}\x00{u}\x00{n}" for t, u, n in names])


async def _lock_in_order(conn: AsyncConnection, keys: Iterable[str]) -> None:
    """Every key's advisory lock in one round trip, in one global order (the lock ids')."""
    ids = sorted({_lock_id(key) for key in keys})
    if ids:
        await conn.execute(_LOCK_IN_ORDER, {"ids": ids})


_LOCK_IN_ORDER = sa.text(
    "SELECT pg_advisory_xact_lock(k) FROM unnest(CAST(:ids AS bigint[]))"
    " WITH ORDINALITY AS t(k, n) ORDER BY n"
)


def _lock_id(key: str) -> int:
    # Hashed here: the name never reaches the server, not even as a lock key.
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def _lock(conn: AsyncConnection, key: str) -> None:
    await conn.execute(_LOCK, {"lock_id": _lock_id(key)})


_LOCK = sa.select(sa.func.pg_advisory_xact_lock(param("lock_id", type_=sa.BigInteger)))


async def lock_subject(
    conn: AsyncConnection, tenant_id: str, subject_id: UUID, predicate: str
) -> None:
    """Serialise writers of one subject's predicate even when it has no current fact yet."""
    await _lock(conn, _subject_key(tenant_id, subject_id, predicate))


async def lock_subjects(
    conn: AsyncConnection, tenant_id: str, pairs: Iterable[tuple[UUID, str]]
) -> None:
    """:func:`lock_subject` for many (subject id, predicate) pairs in one round trip, in the
    global order :func:`lock_owned_names` takes (a batch's writer takes them all before it
    writes any fact)."""
    await _lock_in_order(conn, [_subject_key(tenant_id, s, p) for s, p in pairs])


def _subject_key(tenant_id: str, subject_id: UUID, predicate: str) -> str:
    return f"fact\x00{tenant_id}\x00{subject_id}\x00{predicate}"


async def insert_review(conn: AsyncConnection, values: Mapping[str, Any]) -> None:
    await conn.execute(fact_reviews.insert().values(**values))


async def list_reviews(
    conn: AsyncConnection, tenant_id: str, user_id: str, limit: int, offset: int = 0
) -> list[ReviewRow]:
    c = fact_reviews.c
    query = (
        sa.select(fact_reviews)
        .where(*scope(c, tenant_id, user_id))
        .order_by(c.created_at.desc(), c.id)
        .limit(limit)
        .offset(offset)
    )
    return records(ReviewRow, await conn.execute(query))


async def fetch_review(
    conn: AsyncConnection, tenant_id: str, user_id: str, review_id: UUID
) -> ReviewRow | None:
    """The owner's open review, locked: two people resolving it at once decide once."""
    c = fact_reviews.c
    query = (
        sa.select(fact_reviews)
        .where(*scope(c, tenant_id, user_id), c.id == review_id)
        .with_for_update()
    )
    found = records(ReviewRow, await conn.execute(query))
    return found[0] if found else None


async def close_reviews(
    conn: AsyncConnection, tenant_id: str, review_id: UUID, settled: Sequence[UUID]
) -> list[UUID]:
    """Close the review and every other naming a fact in ``settled`` (one no longer current
    has nothing left to contradict); answers the ids closed."""
    c = fact_reviews.c
    named = sa.or_(c.fact_id.in_(list(settled)), c.conflicts_with.in_(list(settled)))
    query = (
        fact_reviews.delete()
        .where(c.tenant_id == tenant_id, sa.or_(c.id == review_id, named))
        .returning(c.id)
    )
    return sorted((await conn.execute(query)).scalars())


@dataclass(frozen=True)
class FactQuery:
    """Which facts: about these entities (any when ``None``), of this predicate; at a valid
    time and/or a system time; or the whole history."""

    user_id: str
    entity_ids: Sequence[UUID] | None = None
    predicate: str | None = None
    valid_at: datetime | None = None
    known_at: datetime | None = None
    include_superseded: bool = False
    # Only the facts read from this memory (one of their sources).
    memory_id: UUID | None = None
    limit: int = 100
    # Only facts recorded in these channels, each after its moment (None: whenever): what a
    # reader of each channel has not seen yet.
    unseen: Mapping[str, datetime | None] | None = None
    predicates: PredicateSet | None = None


@dataclass(frozen=True)
class PredicateSet:
    """Predicates by name, and by how their names begin ("favourite_")."""

    names: frozenset[str]
    prefixes: tuple[str, ...] = ()

    def __contains__(self, predicate: object) -> bool:
        return isinstance(predicate, str) and (
            predicate in self.names or predicate.startswith(self.prefixes)
        )


def fact_conditions(tenant_id: str, q: FactQuery, now: datetime) -> list[sa.ColumnElement[bool]]:
    where = scope(_f, tenant_id, q.user_id)
    if q.unseen is not None:
        where.append(
            sa.or_(
                sa.false(),
                *(
                    sa.and_(_f.channel == channel, _f.recorded_at > since)
                    if since is not None
                    else _f.channel == channel
                    for channel, since in sorted(q.unseen.items())
                ),
            )
        )
    if q.predicates is not None:
        names = sorted(q.predicates.names)
        where.append(
            sa.or_(
                _f.predicate.in_(names),
                *(_f.predicate.startswith(p, autoescape=True) for p in q.predicates.prefixes),
            )
        )
    if q.entity_ids is not None:
        ids = list(q.entity_ids)
        where.append(sa.or_(_f.subject_id.in_(ids), _f.object_id.in_(ids)))
    if q.predicate is not None:
        where.append(_f.predicate == q.predicate)
    if q.memory_id is not None:
        src = fact_sources.c
        read = sa.select(src.fact_id).where(
            src.tenant_id == tenant_id, src.memory_id == q.memory_id
        )
        where.append(_f.id.in_(read))
    if q.include_superseded:
        return where
    return where + _as_of(q.valid_at, q.known_at, now)


def _as_of(
    valid_at: datetime | None, known_at: datetime | None, now: datetime, c: Any = _f
) -> list[sa.ColumnElement[bool]]:
    """Facts valid at ``valid_at`` as the store knew them at ``known_at`` (each defaulting to
    the other, then to now). A supersession sets a fact's ``valid_until`` and its
    ``superseded_at`` together, so the end is known only from ``superseded_at`` on: before
    it, the fact was believed to hold on. Without ``valid_at`` only what was current then is
    listed; an empty interval (a corrected or rejected value) never held at any moment.

    ``c``: the columns of ``facts`` (or an alias of it), or of ``relations``, which are never
    superseded: a relation's interval is the one stated. The two moments are the named
    parameters ``as_of_valid_at`` and ``as_of_known_at`` (see :func:`as_of_text`)."""
    moment = sa.DateTime(timezone=True)
    known = sa.bindparam("as_of_known_at", known_at or now, type_=moment)
    at = sa.bindparam("as_of_valid_at", valid_at or known_at or now, type_=moment)
    where = [sa.or_(c.valid_from.is_(None), c.valid_from <= at)]
    if known_at is not None:
        where.append(c.recorded_at <= known)
    superseded = getattr(c, "superseded_at", None)
    if superseded is None:
        where.append(sa.or_(c.valid_until.is_(None), c.valid_until > at))
        return where
    end_not_yet_known = sa.and_(superseded.is_not(None), superseded > known)
    where.append(sa.or_(end_not_yet_known, c.valid_until.is_(None), c.valid_until > at))
    if valid_at is None:
        where.append(sa.or_(superseded.is_(None), superseded > known))
    return where


# Generic SQL with ``:name`` parameters and no casts, as ``sa.text`` reads them.
_NAMED = DefaultDialect(paramstyle="named")


def as_of_text(
    table: sa.Table, alias: str, valid_at: datetime | None, known_at: datetime | None, now: datetime
) -> tuple[str, dict[str, datetime]]:
    """The as-of rule of :func:`_as_of` as SQL text over ``table`` (``facts`` or
    ``relations``) aliased ``alias``, with its parameters, for statements written as text
    (the graph walk): the same rule as the fact listing, not a second copy of it. The text
    depends only on which moments are given, so it is built once per shape."""

    def build() -> str:
        where = sa.and_(*_as_of(valid_at, known_at, now, table.alias(alias).c))
        return str(where.compile(dialect=_NAMED))

    shape = ("as of", table.name, alias, valid_at is None, known_at is None)
    known = known_at or now
    return template(shape, build), {"as_of_known_at": known, "as_of_valid_at": valid_at or known}


async def query_facts(
    conn: AsyncConnection, tenant_id: str, q: FactQuery, now: datetime
) -> list[FactRow]:
    query = (
        sa.select(*FACT_COLUMNS)
        .where(*fact_conditions(tenant_id, q, now))
        .order_by(_f.recorded_at.desc(), _f.id)
        .limit(q.limit)
    )
    return records(FactRow, await conn.execute(query))


async def fetch_facts(
    conn: AsyncConnection, tenant_id: str, ids: Iterable[UUID]
) -> dict[UUID, FactRow]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    query = template(("graph", "facts by id"), _by_ids, FACT_COLUMNS, _f)
    found = await conn.execute(query, {"tenant_id": tenant_id, "ids": wanted})
    return {r.id: r for r in records(FactRow, found)}


async def sources_of(
    conn: AsyncConnection, tenant_id: str, fact_ids: Iterable[UUID]
) -> dict[UUID, list[UUID]]:
    wanted = sorted(set(fact_ids))
    found: dict[UUID, list[UUID]] = {i: [] for i in wanted}
    if not wanted:
        return found
    query = template(("graph", "sources of facts"), _sources_of)
    for fact_id, memory_id in await conn.execute(query, {"tenant_id": tenant_id, "ids": wanted}):
        found[fact_id].append(memory_id)
    return found


def _sources_of() -> sa.Select[Any]:
    c = fact_sources.c
    return (
        sa.select(c.fact_id, c.memory_id)
        .where(c.tenant_id == param("tenant_id"), c.fact_id.in_(param("ids", expanding=True)))
        .order_by(c.fact_id, c.memory_id)
    )


# --- relations ----------------------------------------------------------------------------


async def upsert_relation(conn: AsyncConnection, values: Mapping[str, Any]) -> UUID:
    """The edge (one per source, type and target, unless a merge brought two together); an
    edge stated again keeps its row."""
    edge = (values["tenant_id"], values["source_id"], values["type"], values["target_id"])
    await _lock(conn, "relation\x00" + "\x00".join(str(part) for part in edge))
    existing = await conn.scalar(
        sa.select(_r.id)
        .where(
            _r.tenant_id == edge[0],
            _r.source_id == edge[1],
            _r.type == edge[2],
            _r.target_id == edge[3],
        )
        .order_by(_r.recorded_at, _r.id)
        .limit(1)
    )
    if existing is not None:
        found: UUID = existing
        return found
    await conn.execute(relations.insert().values(**values))
    created: UUID = values["id"]
    return created


async def add_relation_source(
    conn: AsyncConnection, tenant_id: str, user_id: str, relation_id: UUID, memory_id: UUID
) -> None:
    await conn.execute(
        insert(relation_sources)
        .values(tenant_id=tenant_id, relation_id=relation_id, memory_id=memory_id, user_id=user_id)
        .on_conflict_do_nothing()
    )


async def merged_into(conn: AsyncConnection, tenant_id: str, entity_id: UUID) -> list[UUID]:
    """The entities merged into this one."""
    query = (
        sa.select(_e.id)
        .where(_e.tenant_id == tenant_id, _e.merged_into == entity_id)
        .order_by(_e.id)
    )
    return list((await conn.execute(query)).scalars())


# --- merges -------------------------------------------------------------------------------


async def merge(
    conn: AsyncConnection, tenant_id: str, user_id: str, merged_id: UUID, into_id: UUID, actor: str
) -> MergeRow:
    """Re-point the merged entity's facts and relations at ``into`` and record which moved.
    Mentions stay where they are: they say what a text named."""
    moved: dict[str, list[UUID]] = {}
    for name, table, column in (
        ("subject_facts", facts, "subject_id"),
        ("object_facts", facts, "object_id"),
        ("source_relations", relations, "source_id"),
        ("target_relations", relations, "target_id"),
    ):
        c = table.c
        result = await conn.execute(
            table.update()
            .where(c.tenant_id == tenant_id, c[column] == merged_id)
            .values({column: into_id})
            .returning(c.id)
        )
        moved[name] = list(result.scalars())
    await update_entity(conn, tenant_id, merged_id, {"merged_into": into_id})
    row = (
        await conn.execute(
            entity_merges.insert()
            .values(
                tenant_id=tenant_id,
                id=sa.func.gen_random_uuid(),
                user_id=user_id,
                merged_id=merged_id,
                into_id=into_id,
                actor=actor,
                **moved,
            )
            .returning(entity_merges)
        )
    ).one()
    return record(MergeRow, row)


async def last_merge(
    conn: AsyncConnection, tenant_id: str, user_id: str, merged_id: UUID
) -> MergeRow | None:
    c = entity_merges.c
    query = (
        sa.select(entity_merges)
        .where(*scope(c, tenant_id, user_id), c.merged_id == merged_id, c.split_at.is_(None))
        .order_by(c.created_at.desc(), c.id)
        .limit(1)
        .with_for_update()
    )
    row = (await conn.execute(query)).one_or_none()
    return None if row is None else record(MergeRow, row)


async def split(conn: AsyncConnection, merge_row: MergeRow, at: datetime) -> None:
    """Undo a merge: what moved and still points at ``into`` moves back."""
    t = merge_row.tenant_id
    for ids, table, column in (
        (merge_row.subject_facts, facts, "subject_id"),
        (merge_row.object_facts, facts, "object_id"),
        (merge_row.source_relations, relations, "source_id"),
        (merge_row.target_relations, relations, "target_id"),
    ):
        if not ids:
            continue
        c = table.c
        await conn.execute(
            table.update()
            .where(c.tenant_id == t, c.id.in_(list(ids)), c[column] == merge_row.into_id)
            .values({column: merge_row.merged_id})
        )
    await update_entity(conn, t, merge_row.merged_id, {"merged_into": None})
    c = entity_merges.c
    await conn.execute(
        entity_merges.update().where(c.tenant_id == t, c.id == merge_row.id).values(split_at=at)
    )


# --- keyword postings and vectors ---------------------------------------------------------


async def replace_terms(
    conn: AsyncConnection,
    tenant_id: str,
    kind: str,
    postings: Mapping[UUID, tuple[str, Mapping[int, int]]],
    *,
    fresh: bool = False,
) -> None:
    """Blind postings of facts (``kind="fact"``) or entities, replacing their old ones
    (``fresh``: rows inserted in this transaction, which have none to replace)."""
    if not postings:
        return
    table, column = (fact_terms, "fact_id") if kind == "fact" else (entity_terms, "entity_id")
    c = table.c
    if not fresh:
        await conn.execute(
            table.delete().where(c.tenant_id == tenant_id, c[column].in_(list(postings)))
        )
    rows = [
        {"tenant_id": tenant_id, "user_id": user, "term": term, column: item, "tf": min(tf, 32_767)}
        for item, (user, terms) in postings.items()
        for term, tf in terms.items()
    ]
    if rows:
        await conn.execute(table.insert(), rows)


async def forget_memory(conn: AsyncConnection, tenant_id: str, memory_id: UUID) -> None:
    """Drop what a memory's text was said to claim (its sources and mentions); the cleanup
    triggers remove the facts, relations and entities nothing else holds."""
    for table in (fact_sources, relation_sources, entity_mentions):
        await conn.execute(
            table.delete().where(table.c.tenant_id == tenant_id, table.c.memory_id == memory_id)
        )
