"""Whole-store work on the knowledge graph: deleting an owner's graph, exporting it, key
rotation of its sealed columns, and bulk inserts (imports, benchmarks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.graph import (
    ENTITY_COLUMNS,
    FACT_COLUMNS,
    EntityRow,
    FactQuery,
    FactRow,
    RelationRow,
    fact_conditions,
    records,
    scope,
)
from memvault.db.tables import (
    entities,
    entity_mentions,
    fact_sources,
    facts,
    relations,
)

_e = entities.c
_f = facts.c
_r = relations.c


# --- whole-user deletion, export, rotation ------------------------------------------------


async def delete_owner(
    conn: AsyncConnection, tenant_id: str, user_id: str, app_id: str | None
) -> int:
    """Every graph row of the owner (in one app, if given): facts stated directly too.
    Deleting the entities cascades to their facts, relations, mentions, keys, merges and
    reviews."""
    where = scope(_e, tenant_id, user_id)
    fact_where = scope(_f, tenant_id, user_id)
    if app_id is not None:
        where.append(_e.app_id == app_id)
        fact_where.append(_f.app_id == app_id)
    await conn.execute(facts.delete().where(*fact_where))
    result = await conn.execute(entities.delete().where(*where).returning(_e.id))
    return len(result.all())


async def delete_tenant(conn: AsyncConnection, tenant_id: str) -> int:
    """Every graph row of a tenant (its erasure); entities cascade as in ``delete_owner``."""
    await conn.execute(facts.delete().where(_f.tenant_id == tenant_id))
    result = await conn.execute(entities.delete().where(_e.tenant_id == tenant_id).returning(_e.id))
    return len(result.all())


async def export_rows(
    conn: AsyncConnection, tenant_id: str, user_id: str | None, now: datetime
) -> tuple[list[EntityRow], list[FactRow], list[RelationRow]]:
    """The current graph of one owner, or of the whole tenant: unmerged entities, current
    facts, live relations."""

    def owner(c: Any) -> list[sa.ColumnElement[bool]]:
        return [c.tenant_id == tenant_id] + ([c.user_id == user_id] if user_id else [])

    q = FactQuery(user_id=user_id or "")
    fact_where = [*owner(_f), *fact_conditions(tenant_id, q, now)[2:]]
    ents = await conn.execute(
        sa.select(*ENTITY_COLUMNS).where(*owner(_e), _e.merged_into.is_(None)).order_by(_e.id)
    )
    fs = await conn.execute(sa.select(*FACT_COLUMNS).where(*fact_where).order_by(_f.id))
    rs = await conn.execute(
        sa.select(relations)
        .where(*owner(_r), sa.or_(_r.valid_until.is_(None), _r.valid_until > now))
        .order_by(_r.id)
    )
    return records(EntityRow, ents), records(FactRow, fs), records(RelationRow, rs)


async def insert_many(
    conn: AsyncConnection, table_name: str, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Bulk rows of one graph table (imports and benchmarks): one statement per batch."""
    tables = {
        "entities": entities,
        "facts": facts,
        "relations": relations,
        "fact_sources": fact_sources,
        "entity_mentions": entity_mentions,
    }
    if rows:
        await conn.execute(tables[table_name].insert(), list(rows))


# --- what a deletion's cache clearing needs -------------------------------------------------


async def derived_rows(
    conn: AsyncConnection,
    tenant_id: str,
    memory_ids: Sequence[UUID],
    user_id: str | None = None,
) -> tuple[list[FactRow], list[EntityRow]]:
    """The facts read from these memories and the entities they mention or name (every fact
    and entity of ``user_id``, when given): whose texts the embedding cache may hold."""
    ids = list(memory_ids)
    sourced = sa.select(fact_sources.c.fact_id).where(
        fact_sources.c.tenant_id == tenant_id, fact_sources.c.memory_id.in_(ids)
    )
    fact_where = _f.id.in_(sourced) if user_id is None else _f.user_id == user_id
    found = await conn.execute(
        sa.select(*FACT_COLUMNS).where(_f.tenant_id == tenant_id, fact_where)
    )
    fact_rows = records(FactRow, found)
    named = {f.subject_id for f in fact_rows} | {f.object_id for f in fact_rows if f.object_id}
    mentioned = sa.select(entity_mentions.c.entity_id).where(
        entity_mentions.c.tenant_id == tenant_id, entity_mentions.c.memory_id.in_(ids)
    )
    entity_where = (
        sa.or_(_e.id.in_(mentioned), _e.id.in_(sorted(named)))
        if user_id is None
        else _e.user_id == user_id
    )
    found = await conn.execute(
        sa.select(*ENTITY_COLUMNS).where(_e.tenant_id == tenant_id, entity_where)
    )
    return fact_rows, records(EntityRow, found)
