"""SQL of the graph's lifecycle: which conversations await consolidation and which of their
turn memories have no facts yet, entity salience and inferred-fact confidence decay (each
change kept in ``decay_changes`` for undo), low-salience entity cleanup, and the probes'
counts (consolidation lag, open fact reviews).

Times come in as parameters (the jobs' injected clock), never from ``now()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import _Record
from memvault.db.tables import (
    conversation_turns,
    conversations,
    decay_changes,
    entities,
    fact_reviews,
    fact_sources,
    memories,
)

_c = conversations.c
_t = conversation_turns.c
_m = memories.c
_e = entities.c

ENTITY_SALIENCE = "entity_salience"
FACT_CONFIDENCE = "fact_confidence"
# Certainties the system guessed rather than read: only these lose confidence with time.
GUESSED = ("inferred", "uncertain")


@dataclasses.dataclass(frozen=True, slots=True)
class PendingConversation(_Record):
    """A conversation with turns past its consolidation watermark."""

    tenant_id: str
    user_id: str
    id: str
    consolidated_turns: int
    turn_count: int
    started_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class FactlessTurn(_Record):
    """A turn's memory with no fact derived from it yet, sealed."""

    tenant_id: str
    id: UUID
    user_id: str
    app_id: str
    channel: str
    ciphertext: bytes
    nonce: bytes
    key_id: str
    metadata: dict[str, Any]
    occurred_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class ConsolidationLag(_Record):
    count: int  # conversations with turns waiting
    turns: int  # turns waiting
    oldest: datetime | None  # when the oldest waiting turn was said


# --- consolidation -----------------------------------------------------------------------------
# A conversation's watermark, ``consolidated_turns``, is the index below which its turns went
# through the extractor; turns appended later lie above it and wait for the next run.


def _unconsolidated() -> sa.ColumnElement[bool]:
    return _c.consolidated_turns < _c.turn_count


_ORDER = (_c.started_at, _c.tenant_id, _c.user_id, _c.id)


async def pending_conversations(
    conn: AsyncConnection,
    limit: int,
    after: PendingConversation | None = None,
    owner: tuple[str, str] | None = None,
) -> list[PendingConversation]:
    """Conversations with turns past their watermark (of one (tenant, user) ``owner``, or
    all), oldest first, from just past ``after`` (a run walks them once even when one stays
    pending)."""
    query = sa.select(
        _c.tenant_id, _c.user_id, _c.id, _c.consolidated_turns, _c.turn_count, _c.started_at
    ).where(_unconsolidated())
    if owner is not None:
        query = query.where(_c.tenant_id == owner[0], _c.user_id == owner[1])
    if after is not None:
        key = (after.started_at, after.tenant_id, after.user_id, after.id)
        query = query.where(sa.tuple_(*_ORDER) > sa.tuple_(*(sa.literal(k) for k in key)))
    query = query.order_by(*_ORDER).limit(limit)
    return [PendingConversation.from_row(r) for r in await conn.execute(query)]


def _waiting(pending: Sequence[PendingConversation]) -> sa.ColumnElement[bool]:
    """The turns of these conversations between each one's watermark and its count as read."""
    return sa.or_(
        *(
            sa.and_(
                _t.tenant_id == p.tenant_id,
                _t.user_id == p.user_id,
                _t.conversation_id == p.id,
                _t.turn_index >= p.consolidated_turns,
                _t.turn_index < p.turn_count,
            )
            for p in pending
        )
    )


async def waiting_turns(
    conn: AsyncConnection, pending: Sequence[PendingConversation], *, factless_only: bool
) -> list[FactlessTurn]:
    """The turn memories of these conversations past their watermark; ``factless_only``:
    only those no fact names as its source yet."""
    if not pending:
        return []
    where = [_waiting(pending)]
    if factless_only:
        has_fact = (
            sa.select(sa.literal(1))
            .where(fact_sources.c.tenant_id == _m.tenant_id, fact_sources.c.memory_id == _m.id)
            .exists()
        )
        where.append(~has_fact)
    query = (
        sa.select(
            _m.tenant_id,
            _m.id,
            _m.user_id,
            _m.app_id,
            _m.channel,
            _m.ciphertext,
            _m.nonce,
            _m.key_id,
            _m.metadata,
            _m.occurred_at,
        )
        .join(conversation_turns, sa.and_(_t.tenant_id == _m.tenant_id, _t.memory_id == _m.id))
        .where(*where)
        .order_by(_t.tenant_id, _t.user_id, _t.conversation_id, _t.turn_index)
    )
    return [FactlessTurn.from_row(r) for r in await conn.execute(query)]


async def count_waiting_turns(conn: AsyncConnection) -> int:
    """How many turns wait past their conversation's watermark (a dry run's count)."""
    query = sa.select(sa.func.coalesce(sa.func.sum(_c.turn_count - _c.consolidated_turns), 0))
    return int(await conn.scalar(query.where(_unconsolidated())) or 0)


async def mark_consolidated(
    conn: AsyncConnection, pending: PendingConversation, at: datetime
) -> int:
    """Move a conversation's watermark up to the turns read (never down: a concurrent run
    may have moved it further)."""
    query = (
        conversations.update()
        .where(
            _c.tenant_id == pending.tenant_id,
            _c.user_id == pending.user_id,
            _c.id == pending.id,
            _c.consolidated_turns < pending.turn_count,
        )
        .values(consolidated_turns=pending.turn_count, consolidated_at=at)
    )
    return (await conn.execute(query)).rowcount or 0


def _lag(where: list[sa.ColumnElement[bool]]) -> sa.Select[Any]:
    """Conversations and turns waiting, and when the oldest waiting turn was said."""
    oldest = (
        sa.select(sa.func.min(_t.occurred_at))
        .join(
            conversations,
            sa.and_(
                _c.tenant_id == _t.tenant_id, _c.user_id == _t.user_id, _c.id == _t.conversation_id
            ),
        )
        .where(_unconsolidated(), _t.turn_index >= _c.consolidated_turns, *where)
        .correlate(None)
        .scalar_subquery()
    )
    return sa.select(
        sa.func.count().label("count"),
        sa.func.coalesce(sa.func.sum(_c.turn_count - _c.consolidated_turns), 0).label("turns"),
        oldest.label("oldest"),
    ).where(_unconsolidated(), *where)


async def consolidation_lag(
    conn: AsyncConnection, tenant_id: str | None = None
) -> ConsolidationLag:
    where = [] if tenant_id is None else [_c.tenant_id == tenant_id]
    return ConsolidationLag.from_row((await conn.execute(_lag(where))).one())


async def user_consolidation_lag(
    conn: AsyncConnection, tenant_id: str, user_id: str
) -> ConsolidationLag:
    where = [_c.tenant_id == tenant_id, _c.user_id == user_id]
    return ConsolidationLag.from_row((await conn.execute(_lag(where))).one())


# --- decay -------------------------------------------------------------------------------------

_DECAY_ENTITIES = sa.text(
    """
    WITH picked AS (
        SELECT tenant_id, id, salience FROM entities
        WHERE salience > 0 AND COALESCE(last_accessed, first_seen) < :idle_before
        FOR UPDATE
    ), changed AS (
        UPDATE entities e SET salience = p.salience * :factor
        FROM picked p WHERE e.tenant_id = p.tenant_id AND e.id = p.id
        RETURNING e.tenant_id, e.id, p.salience AS old_value, e.salience AS new_value
    )
    INSERT INTO decay_changes (tenant_id, run_id, target, item_id, old_value, new_value)
    SELECT tenant_id, :run_id, 'entity_salience', id, old_value, new_value FROM changed
    RETURNING tenant_id
    """
)

_DECAY_FACTS = sa.text(
    """
    WITH picked AS (
        SELECT tenant_id, id, confidence FROM facts
        WHERE certainty IN ('inferred', 'uncertain') AND superseded_at IS NULL
          AND confidence > :floor
        FOR UPDATE
    ), changed AS (
        UPDATE facts f SET confidence = GREATEST(:floor, p.confidence * :factor)
        FROM picked p WHERE f.tenant_id = p.tenant_id AND f.id = p.id
        RETURNING f.tenant_id, f.id, p.confidence AS old_value, f.confidence AS new_value
    )
    INSERT INTO decay_changes (tenant_id, run_id, target, item_id, old_value, new_value)
    SELECT tenant_id, :run_id, 'fact_confidence', id, old_value, new_value FROM changed
    RETURNING tenant_id
    """
)


async def decay_entities(
    conn: AsyncConnection, run_id: int, idle_before: datetime, factor: float
) -> int:
    """Salience x ``factor`` for entities not accessed since ``idle_before``."""
    params = {"run_id": run_id, "idle_before": idle_before, "factor": factor}
    return len((await conn.execute(_DECAY_ENTITIES, params)).all())


async def decay_facts(conn: AsyncConnection, run_id: int, factor: float, floor: float) -> int:
    """Confidence x ``factor`` for current inferred/uncertain facts, never below ``floor``."""
    params = {"run_id": run_id, "factor": factor, "floor": floor}
    return len((await conn.execute(_DECAY_FACTS, params)).all())


_UNDO = {
    ENTITY_SALIENCE: sa.text(
        """
        UPDATE entities e SET salience = d.old_value
        FROM decay_changes d
        WHERE d.run_id = :run_id AND d.target = 'entity_salience'
          AND e.tenant_id = d.tenant_id AND e.id = d.item_id AND e.salience = d.new_value
        """
    ),
    FACT_CONFIDENCE: sa.text(
        """
        UPDATE facts f SET confidence = d.old_value
        FROM decay_changes d
        WHERE d.run_id = :run_id AND d.target = 'fact_confidence'
          AND f.tenant_id = d.tenant_id AND f.id = d.item_id AND f.confidence = d.new_value
        """
    ),
}


async def undo_decay(conn: AsyncConnection, run_id: int, target: str) -> int:
    """Put back what the run lowered, unless the value has changed since (a write wins)."""
    return (await conn.execute(_UNDO[target], {"run_id": run_id})).rowcount or 0


# --- cleanup -----------------------------------------------------------------------------------


def _forgettable(salience_below: float, idle_before: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        _e.salience < salience_below,
        sa.func.coalesce(_e.last_accessed, _e.first_seen) < idle_before,
    )


async def count_forgettable_entities(
    conn: AsyncConnection, salience_below: float, idle_before: datetime
) -> dict[str, int]:
    """What deleting them would take: the entities, and the facts and relations that name
    them (which go by the graph's cascades)."""
    doomed = sa.select(_e.tenant_id, _e.id).where(_forgettable(salience_below, idle_before))
    ids = doomed.cte("doomed")
    counts = {}
    counts["entities"] = int(await conn.scalar(sa.select(sa.func.count()).select_from(ids)) or 0)
    for name, sql in (
        (
            "facts",
            "SELECT count(*) FROM facts f WHERE EXISTS (SELECT 1 FROM entities e "
            "WHERE e.tenant_id = f.tenant_id AND e.id IN (f.subject_id, f.object_id) "
            "AND e.salience < :below AND COALESCE(e.last_accessed, e.first_seen) < :before)",
        ),
        (
            "relations",
            "SELECT count(*) FROM relations r WHERE EXISTS (SELECT 1 FROM entities e "
            "WHERE e.tenant_id = r.tenant_id AND e.id IN (r.source_id, r.target_id) "
            "AND e.salience < :below AND COALESCE(e.last_accessed, e.first_seen) < :before)",
        ),
    ):
        params = {"below": salience_below, "before": idle_before}
        counts[name] = int(await conn.scalar(sa.text(sql), params) or 0)
    return counts


async def delete_forgettable_entities(
    conn: AsyncConnection, salience_below: float, idle_before: datetime
) -> int:
    """Delete them: their facts, relations, mentions and postings go by the foreign keys'
    cascades and the graph's cleanup triggers (migration 0007), in this transaction; their
    decay records go too, as there is nothing left to restore."""
    doomed = (
        entities.delete()
        .where(_forgettable(salience_below, idle_before))
        .returning(_e.tenant_id, _e.id)
    )
    gone = (await conn.execute(doomed)).all()
    if gone:
        await conn.execute(
            decay_changes.delete().where(
                decay_changes.c.target == ENTITY_SALIENCE,
                sa.tuple_(decay_changes.c.tenant_id, decay_changes.c.item_id).in_(
                    [(r[0], r[1]) for r in gone]
                ),
            )
        )
    return len(gone)


# --- reviews -----------------------------------------------------------------------------------


async def open_reviews(conn: AsyncConnection, tenant_id: str, user_id: str) -> int:
    query = sa.select(sa.func.count()).where(
        fact_reviews.c.tenant_id == tenant_id, fact_reviews.c.user_id == user_id
    )
    return int(await conn.scalar(query) or 0)
