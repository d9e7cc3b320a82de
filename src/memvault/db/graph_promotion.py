"""SQL for fact promotion: the project facts prominent enough to copy to ``_global``, the
conversations each was seen in, and the PROMOTED_FROM links."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.tables import (
    conversation_turns,
    fact_promotions,
    fact_sources,
    facts,
    memories,
)

GLOBAL = "_global"


@dataclass(frozen=True)
class Candidate:
    tenant_id: str
    fact_id: UUID
    user_id: str
    confidence: float
    access_count: int


async def promoted_copy_of(conn: AsyncConnection, tenant_id: str, fact_id: UUID) -> UUID | None:
    p = fact_promotions.c
    query = sa.select(p.fact_id).where(p.tenant_id == tenant_id, p.promoted_from == fact_id)
    found: UUID | None = (await conn.execute(query)).scalar_one_or_none()
    return found


async def link(
    conn: AsyncConnection, tenant_id: str, copy_id: UUID, source_id: UUID, user_id: str, actor: str
) -> None:
    await conn.execute(
        sa.insert(fact_promotions).values(
            tenant_id=tenant_id,
            fact_id=copy_id,
            promoted_from=source_id,
            user_id=user_id,
            actor=actor,
        )
    )


async def lock_fact(conn: AsyncConnection, tenant_id: str, fact_id: UUID) -> None:
    """Two promotions of one fact at once copy it once: the second waits, then finds the
    first's link."""
    key = f"promote:{tenant_id}:{fact_id}"
    await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(key))))


async def conversations_of(
    conn: AsyncConnection, tenant_id: str, fact_ids: Iterable[UUID]
) -> dict[UUID, int]:
    """Per fact: the distinct conversations its source memories were said in (a stored turn's
    conversation, else the ``session_id`` a message carries in its metadata)."""
    wanted = sorted(set(fact_ids))
    found = dict.fromkeys(wanted, 0)
    if not wanted:
        return found
    s, t, m = fact_sources.c, conversation_turns.c, memories.c
    conversation = sa.func.coalesce(
        sa.cast(t.conversation_id, sa.Text), m.metadata["session_id"].astext
    )
    query = (
        sa.select(s.fact_id, sa.func.count(sa.distinct(conversation)))
        .select_from(
            fact_sources.join(
                memories, sa.and_(m.tenant_id == s.tenant_id, m.id == s.memory_id)
            ).outerjoin(
                conversation_turns,
                sa.and_(t.tenant_id == s.tenant_id, t.memory_id == s.memory_id),
            )
        )
        .where(s.tenant_id == tenant_id, s.fact_id.in_(wanted))
        .group_by(s.fact_id)
    )
    for fact_id, count in await conn.execute(query):
        found[fact_id] = int(count)
    return found


async def candidates(
    conn: AsyncConnection, min_confidence: float, min_access_count: int, now: datetime
) -> list[Candidate]:
    """Current project-channel facts over the confidence and access thresholds, not promoted
    yet, in every tenant the connection may see (the job runs across tenants)."""
    f, p = facts.c, fact_promotions.c
    promoted = sa.exists().where(p.tenant_id == f.tenant_id, p.promoted_from == f.id)
    query = (
        sa.select(f.tenant_id, f.id, f.user_id, f.confidence, f.access_count)
        .where(
            f.channel != GLOBAL,
            f.superseded_at.is_(None),
            sa.or_(f.valid_until.is_(None), f.valid_until > now),
            f.confidence >= min_confidence,
            f.access_count >= min_access_count,
            ~promoted,
        )
        .order_by(f.tenant_id, f.id)
    )
    return [Candidate(*row) for row in await conn.execute(query)]


async def copy_fact(
    conn: AsyncConnection, tenant_id: str, source_id: UUID, changes: Mapping[str, Any]
) -> None:
    """A new facts row: the source's columns (its embedding and times included) with
    ``changes`` over them (the new id, channel and the claim sealed to the new id)."""
    f = facts.c
    columns = [c for c in facts.columns if c.name not in changes]
    chosen = [
        *(f[c.name] for c in columns),
        *(sa.literal(v, type_=facts.c[k].type).label(k) for k, v in changes.items()),
    ]
    names = [*(c.name for c in columns), *changes]
    source = sa.select(*chosen).where(f.tenant_id == tenant_id, f.id == source_id)
    await conn.execute(sa.insert(facts).from_select(names, source))
