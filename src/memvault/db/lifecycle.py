"""SQL of the lifecycle: scheduled runs and their advisory locks, the jobs' set-wise changes
(cleanup, tiers, decay and its undo), and the deletion of a memory's every derived row.

Times come in as parameters (the jobs' injected clock), never from ``now()``, so a test can
run a job at any moment it likes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db.records import DoomedMemory, ScheduledRunRow, UserShare
from memvault.db.tables import (
    api_keys,
    audit_log,
    fact_promotions,
    fact_sources,
    memories,
    memory_chunks,
    memory_history,
    scheduled_runs,
)

_m = memories.c
_h = memory_history.c
_r = scheduled_runs.c

# --- scheduled runs ----------------------------------------------------------------------------


def _lock_key(job: str) -> sa.ColumnElement[Any]:
    return sa.func.hashtextextended(f"memvault.schedule:{job}", 0)


async def try_lock(conn: AsyncConnection, job: str) -> bool:
    """A lock on ``job`` held until ``conn``'s transaction ends, so a crashed runner's lock
    goes with it. The caller keeps that transaction open while the job runs: it writes nothing
    and, between statements, holds no snapshot, and it keeps its server connection even
    behind a transaction pooler (a session lock could be left on a connection others reuse)."""
    return bool(await conn.scalar(sa.select(sa.func.pg_try_advisory_xact_lock(_lock_key(job)))))


async def last_started(conn: AsyncConnection, job: str) -> datetime | None:
    """When the job last really ran (dry runs change nothing, so they do not count)."""
    query = sa.select(sa.func.max(_r.started_at)).where(_r.job == job, _r.dry_run.is_(False))
    found: datetime | None = await conn.scalar(query)
    return found


async def start_run(conn: AsyncConnection, job: str, started_at: datetime, dry_run: bool) -> int:
    query = (
        scheduled_runs.insert()
        .values(job=job, started_at=started_at, dry_run=dry_run)
        .returning(_r.id)
    )
    return int((await conn.execute(query)).scalar_one())


async def finish_run(conn: AsyncConnection, run_id: int, **values: Any) -> None:
    await conn.execute(scheduled_runs.update().where(_r.id == run_id).values(**values))


async def latest_runs(conn: AsyncConnection) -> dict[str, ScheduledRunRow]:
    newest = sa.func.row_number().over(
        partition_by=_r.job, order_by=(_r.started_at.desc(), _r.id.desc())
    )
    ranked = sa.select(scheduled_runs, newest.label("newest")).subquery()
    query = sa.select(*(ranked.c[c.name] for c in scheduled_runs.c)).where(ranked.c.newest == 1)
    return {r.job: ScheduledRunRow.from_row(r) for r in await conn.execute(query)}


async def skipped_for(conn: AsyncConnection, tenant_id: str, user_id: str) -> dict[str, list[str]]:
    """Per job, the error codes of the user's records its latest real run skipped."""
    newest = sa.func.row_number().over(
        partition_by=_r.job, order_by=(_r.started_at.desc(), _r.id.desc())
    )
    latest = (
        sa.select(_r.job, _r.counts, newest.label("newest"))
        .where(_r.dry_run.is_(False), _r.outcome != "running")
        .subquery()
    )
    listed = sa.case(
        (
            sa.func.jsonb_typeof(latest.c.counts["skipped_records"]) == "array",
            latest.c.counts["skipped_records"],
        ),
        else_=sa.cast(sa.literal("[]"), JSONB),
    )
    entry = sa.func.jsonb_array_elements(listed).table_valued(sa.column("value", JSONB))
    entry = entry.alias("entry")
    query = (
        sa.select(latest.c.job, entry.c.value["error_code"].astext)
        .select_from(latest.join(entry, sa.true()))
        .where(
            latest.c.newest == 1,
            entry.c.value["tenant_id"].astext == tenant_id,
            entry.c.value["user_id"].astext == user_id,
        )
    )
    found: dict[str, list[str]] = {}
    for job, code in await conn.execute(query):
        found.setdefault(job, []).append(code)
    return found


async def runs(conn: AsyncConnection, job: str | None, limit: int) -> list[ScheduledRunRow]:
    query = sa.select(scheduled_runs).order_by(_r.id.desc()).limit(limit)
    if job is not None:
        query = query.where(_r.job == job)
    return [ScheduledRunRow.from_row(r) for r in await conn.execute(query)]


async def get_run(conn: AsyncConnection, run_id: int) -> ScheduledRunRow | None:
    found = (await conn.execute(sa.select(scheduled_runs).where(_r.id == run_id))).one_or_none()
    return ScheduledRunRow.from_row(found) if found is not None else None


# --- what a run would touch, per user (the safety stop) -----------------------------------------


async def touched_per_user(
    conn: AsyncConnection, condition: sa.ColumnElement[bool]
) -> list[UserShare]:
    """(tenant, user, touched, total) for every user with a memory that ``condition`` picks."""
    touched = sa.func.count().filter(condition)
    query = (
        sa.select(
            _m.tenant_id, _m.user_id, touched.label("touched"), sa.func.count().label("total")
        )
        .group_by(_m.tenant_id, _m.user_id)
        .having(touched > 0)
    )
    return [UserShare.from_row(r) for r in await conn.execute(query)]


def tier_due(now: datetime, warm_after: timedelta, cold_after: timedelta) -> sa.ColumnElement[Any]:
    """The tier a memory belongs in now: by the later of its last write and its last recall."""
    idle_since = sa.func.greatest(_m.updated_at, sa.func.coalesce(_m.last_accessed, _m.created_at))
    return sa.case(
        (idle_since < now - cold_after, "cold"),
        (idle_since < now - warm_after, "warm"),
        else_="hot",
    )


def tier_changes(due: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """The memories not in the tier ``due`` says they belong in."""
    return _m.tier != due


async def tier_moves(conn: AsyncConnection, due: sa.ColumnElement[Any]) -> dict[str, int]:
    """How many memories would move, by ``from->to``."""
    query = (
        sa.select(_m.tier, due.label("due"), sa.func.count())
        .where(_m.tier != due)
        .group_by(_m.tier, due)
    )
    return {f"{old}->{new}": n for old, new, n in await conn.execute(query)}


async def apply_tiers(conn: AsyncConnection, due: sa.ColumnElement[Any]) -> int:
    """Move memories to their due tier. The tier lives on the memory row alone: chunks and
    postings join it at search time, so no index has a copy to keep in step."""
    result = await conn.execute(memories.update().where(_m.tier != due).values(tier=due))
    return result.rowcount or 0


def decaying(now: datetime, idle: timedelta, floor: int) -> sa.ColumnElement[bool]:
    idle_since = sa.func.greatest(_m.updated_at, sa.func.coalesce(_m.last_accessed, _m.created_at))
    return sa.and_(_m.importance.is_not(None), _m.importance > floor, idle_since < now - idle)


_DECAY = sa.text(
    """
    WITH picked AS (
        SELECT tenant_id, id, importance FROM memories
        WHERE importance IS NOT NULL AND importance > :floor
          AND GREATEST(updated_at, COALESCE(last_accessed, created_at)) < :idle_before
        FOR UPDATE
    ), changed AS (
        UPDATE memories m SET importance = GREATEST(:floor, p.importance - :step)
        FROM picked p WHERE m.tenant_id = p.tenant_id AND m.id = p.id
        RETURNING m.tenant_id, m.id, p.importance AS old_value, m.importance AS new_value
    )
    INSERT INTO decay_changes (tenant_id, run_id, target, item_id, old_value, new_value)
    SELECT tenant_id, :run_id, 'memory_importance', id, old_value, new_value FROM changed
    RETURNING tenant_id
    """
)


async def decay_importance(
    conn: AsyncConnection, run_id: int, idle_before: datetime, floor: int, step: int
) -> int:
    """Lower idle memories' importance by ``step``, never below ``floor``; each change is
    kept in ``decay_changes`` under the run, for undo."""
    params = {"run_id": run_id, "idle_before": idle_before, "floor": floor, "step": step}
    return len((await conn.execute(_DECAY, params)).all())


_UNDO_IMPORTANCE = sa.text(
    """
    UPDATE memories m SET importance = CAST(d.old_value AS smallint)
    FROM decay_changes d
    WHERE d.run_id = :run_id AND d.target = 'memory_importance'
      AND m.tenant_id = d.tenant_id AND m.id = d.item_id
      AND m.importance = CAST(d.new_value AS smallint)
    """
)


async def undo_importance(conn: AsyncConnection, run_id: int) -> int:
    """Put back what the run lowered, unless the value has changed since (an edit wins)."""
    return (await conn.execute(_UNDO_IMPORTANCE, {"run_id": run_id})).rowcount or 0


async def mark_undone(conn: AsyncConnection, run_id: int, at: datetime) -> None:
    await conn.execute(scheduled_runs.update().where(_r.id == run_id).values(undone_at=at))


# --- deletion ----------------------------------------------------------------------------------


async def pick_for_deletion(
    conn: AsyncConnection, where: sa.ColumnElement[bool]
) -> list[DoomedMemory]:
    """The memories a deletion takes, locked until it commits."""
    query = (
        sa.select(
            _m.tenant_id,
            _m.id,
            _m.user_id,
            _m.ciphertext,
            _m.nonce,
            _m.key_id,
            _m.embedding_model,
            _m.channel,
            _m.source,
            _m.metadata,
        )
        .where(where)
        .with_for_update()
    )
    return [DoomedMemory.from_row(r) for r in await conn.execute(query)]


async def delete_rows(conn: AsyncConnection, tenant_id: str, ids: Sequence[UUID]) -> int:
    where = sa.and_(_m.tenant_id == tenant_id, _m.id.in_(list(ids)))
    return (await conn.execute(memories.delete().where(where))).rowcount or 0


def _history_of(tenant_id: str, ids: Sequence[UUID], user_id: str | None) -> sa.ColumnElement[bool]:
    # A user's erasure takes the history of every memory they ever had, deleted long ago too.
    owned: sa.ColumnElement[bool] = _h.memory_id.in_(list(ids))
    if user_id is not None:
        owned = sa.or_(owned, _h.user_id == user_id)
    return sa.and_(_h.tenant_id == tenant_id, owned)


async def purge_history(
    conn: AsyncConnection, tenant_id: str, ids: Sequence[UUID], user_id: str | None
) -> int:
    query = memory_history.delete().where(_history_of(tenant_id, ids, user_id))
    return (await conn.execute(query)).rowcount or 0


async def tombstone_history(
    conn: AsyncConnection,
    tenant_id: str,
    rows: Sequence[DoomedMemory],
    user_id: str | None,
    actor: str,
) -> int:
    """Strip the content from these memories' history (who did what, and when, stays) and
    add a content-free DELETE row for each; returns the rows stripped."""
    stripped = await conn.execute(
        memory_history.update()
        .where(_history_of(tenant_id, [r.id for r in rows], user_id))
        .values(
            old_ciphertext=None,
            old_nonce=None,
            old_key_id=None,
            new_ciphertext=None,
            new_nonce=None,
            new_key_id=None,
            old_metadata=None,
            new_metadata=None,
        )
    )
    if rows:
        await conn.execute(
            memory_history.insert(),
            [
                {
                    "tenant_id": tenant_id,
                    "memory_id": r.id,
                    "user_id": r.user_id,
                    "action": "DELETE",
                    "actor": actor,
                }
                for r in rows
            ],
        )
    return stripped.rowcount or 0


async def forget_audit_queries(conn: AsyncConnection, tenant_id: str, user_id: str | None) -> int:
    """Drop sealed query texts (the verbose level's) of a user, or of the whole tenant: a
    query may quote what is being erased. Who did what, and when, stays."""
    c = audit_log.c
    where = [c.tenant_id == tenant_id, c.query_ciphertext.is_not(None)]
    if user_id is not None:
        where.append(c.user_id == user_id)
    query = (
        audit_log.update()
        .where(*where)
        .values(query_ciphertext=None, query_nonce=None, query_key_id=None)
    )
    return (await conn.execute(query)).rowcount or 0


async def forget_audit_reasons(
    conn: AsyncConnection, tenant_id: str, user_id: str | None, memory_ids: Sequence[UUID]
) -> int:
    """Drop the reasons promotions were given (the caller's words) for a user, or for the
    promotions of facts read from these memories. Who promoted what, and when, stays."""
    c = audit_log.c
    about = []
    if memory_ids and await _promoted_from(conn, tenant_id, memory_ids):
        about.append(c.memory_ids.overlap(sa.cast(list(memory_ids), c.memory_ids.type)))
    if user_id is not None:
        about.append(c.user_id == user_id)
    if not about:
        return 0  # no promotion stood on these memories: the audit log is not read at all
    query = (
        audit_log.update()
        .where(c.tenant_id == tenant_id, c.promotion_rule.is_not(None), sa.or_(*about))
        .values(promotion_rule=None)
    )
    return (await conn.execute(query)).rowcount or 0


async def _promoted_from(conn: AsyncConnection, tenant_id: str, memory_ids: Sequence[UUID]) -> bool:
    """Whether a promoted fact was read from any of these memories (its promotion's audit row
    names them)."""
    s, p = fact_sources.c, fact_promotions.c
    promoted = sa.select(p.fact_id).where(p.tenant_id == tenant_id)
    query = sa.select(
        sa.exists().where(
            s.tenant_id == tenant_id, s.memory_id.in_(list(memory_ids)), s.fact_id.in_(promoted)
        )
    )
    return bool((await conn.execute(query)).scalar())


async def delete_tenant_rows(conn: AsyncConnection, table: sa.Table, tenant_id: str) -> int:
    return (await conn.execute(table.delete().where(table.c.tenant_id == tenant_id))).rowcount or 0


async def delete_api_keys(conn: AsyncConnection, tenant_id: str) -> int:
    query = api_keys.delete().where(api_keys.c.tenant_id == tenant_id)
    return (await conn.execute(query)).rowcount or 0


async def history_contents(
    conn: AsyncConnection, tenant_id: str, ids: Sequence[UUID]
) -> list[tuple[UUID, bytes, bytes, str]]:
    """Every sealed version of these memories kept in history: (memory id, ciphertext, nonce,
    key id) — the versions a deletion must clear from caches as well."""
    found: list[tuple[UUID, bytes, bytes, str]] = []
    for side in ("old", "new"):
        ciphertext, nonce, key_id = (_h[f"{side}_{c}"] for c in ("ciphertext", "nonce", "key_id"))
        query = sa.select(_h.memory_id, ciphertext, nonce, key_id).where(
            _h.tenant_id == tenant_id, _h.memory_id.in_(list(ids)), ciphertext.is_not(None)
        )
        found.extend((r[0], r[1], r[2], r[3]) for r in await conn.execute(query))
    return found


async def chunked(conn: AsyncConnection, tenant_id: str, ids: Sequence[UUID]) -> set[UUID]:
    """Which of these memories were embedded in more than one chunk."""
    query = (
        sa.select(memory_chunks.c.memory_id)
        .where(
            memory_chunks.c.tenant_id == tenant_id,
            memory_chunks.c.memory_id.in_(list(ids)),
            memory_chunks.c.chunk_index > 0,
        )
        .distinct()
    )
    return {r[0] for r in await conn.execute(query)}
