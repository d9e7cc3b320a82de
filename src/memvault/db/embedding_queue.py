"""The embedding job queue, in PostgreSQL.

Workers claim with ``FOR UPDATE SKIP LOCKED`` and a lease (``locked_until``); a crashed worker's
jobs come back when the lease runs out. New jobs ``NOTIFY`` idle workers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import psycopg
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.db import webhooks
from memvault.db.records import ClaimedJob, JobRow
from memvault.db.tables import JOBS_CHANNEL, embedding_jobs, memories, worker_heartbeats

CHANNEL = JOBS_CHANNEL
_j = embedding_jobs.c
_m = memories.c
_LIVE = ("queued", "processing")


async def enqueue(conn: AsyncConnection, tenant_id: str, memory_ids: Sequence[UUID]) -> None:
    if not memory_ids:
        return
    await conn.execute(
        insert(embedding_jobs)
        .values([{"tenant_id": tenant_id, "memory_id": m} for m in memory_ids])
        .on_conflict_do_nothing(
            index_elements=["tenant_id", "memory_id"], index_where=_j.status == "queued"
        )
    )
    await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, "")))


async def claim(conn: AsyncConnection, limit: int, lease_s: float) -> list[ClaimedJob]:
    ready = sa.or_(
        sa.and_(_j.status == "queued", _j.available_at <= sa.func.now()),
        sa.and_(_j.status == "processing", _j.locked_until < sa.func.now()),
    )
    picked = (
        sa.select(_j.tenant_id, _j.id)
        .where(ready)
        .order_by(_j.available_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("picked")
    )
    statement = (
        embedding_jobs.update()
        .where(sa.tuple_(_j.tenant_id, _j.id).in_(sa.select(picked.c.tenant_id, picked.c.id)))
        .values(
            status="processing",
            attempts=_j.attempts + 1,
            updated_at=sa.func.now(),
            locked_until=sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, lease_s),
        )
        .returning(_j.tenant_id, _j.id, _j.memory_id, _j.kind, _j.attempts, _j.locked_until)
    )
    return [ClaimedJob.from_row(row) for row in await conn.execute(statement)]


def _mine(job: ClaimedJob) -> sa.ColumnElement[bool]:
    # A lease that ran out may have been claimed by another worker: touch only our own claim.
    return sa.and_(
        _j.tenant_id == job.tenant_id,
        _j.id == job.id,
        _j.status == "processing",
        _j.locked_until == job.locked_until,
    )


async def complete(conn: AsyncConnection, claimed: Sequence[ClaimedJob]) -> int:
    """Mark our claims done; a claim whose lease ran out and was re-claimed is left alone."""
    if not claimed:
        return 0
    ours = sa.tuple_(_j.tenant_id, _j.id, _j.locked_until).in_(
        [(j.tenant_id, j.id, j.locked_until) for j in claimed]
    )
    done = (
        embedding_jobs.update()
        .where(ours, _j.status == "processing")
        .values(status="done", locked_until=None, last_error=None, updated_at=sa.func.now())
        .returning(_j.tenant_id, _j.id, _j.memory_id, _j.kind, _j.status)
        .cte("done")
    )
    hooks = webhooks.fanout(webhooks.job_events(done, "job.finished")).cte("hooks")
    result = await conn.execute(sa.select(done.c.id).add_cte(hooks))
    return len(result.all())


async def fail(
    conn: AsyncConnection, job: ClaimedJob, error: str, *, max_attempts: int, backoff_base_s: float
) -> str:
    """Back off exponentially; after the last attempt the job is ``failed`` (dead letter)."""
    other = embedding_jobs.alias("other")
    other_queued = sa.exists().where(
        other.c.tenant_id == _j.tenant_id,
        other.c.memory_id == _j.memory_id,
        other.c.status == "queued",
    )
    status = sa.case(
        (_j.attempts >= max_attempts, "failed"),
        (other_queued, "done"),  # a newer job for the same memory is already waiting
        else_="queued",
    )
    delay = backoff_base_s * 2 ** (job.attempts - 1)
    changed = (
        embedding_jobs.update()
        .where(_mine(job))
        .values(
            status=status,
            last_error=error[:500],
            locked_until=None,
            updated_at=sa.func.now(),
            available_at=sa.func.now() + sa.func.make_interval(0, 0, 0, 0, 0, 0, delay),
        )
        .returning(_j.tenant_id, _j.id, _j.memory_id, _j.kind, _j.status)
        .cte("changed")
    )
    # Only a job that failed for good is an event (job_events keeps done and failed ones;
    # ``done`` here is a job a newer one replaced, no outcome of its own).
    failed = sa.select(changed).where(changed.c.status == "failed").cte("failed")
    hooks = webhooks.fanout(webhooks.job_events(failed, "job.failed")).cte("hooks")
    result = await conn.execute(sa.select(changed.c.status).add_cte(hooks))
    return str(result.scalar_one_or_none() or "lost")


async def sweep(
    conn: AsyncConnection,
    *,
    active_model: str | None,
    limit: int,
    models: Sequence[str] = (),
) -> int:
    """Queue memories that need vectors: never embedded, (``active_model`` given) embedded by
    another model, or (``models``) embedded by one of these. Dead letters are left for a
    person to retry."""
    needs: sa.ColumnElement[bool] = _m.embedded.is_(False)
    if active_model is not None:
        # An embedded memory with no model was stored unindexed on purpose: nothing to redo.
        needs = sa.or_(needs, _m.embedding_model != active_model)
    if models:
        needs = sa.or_(needs, _m.embedding_model.in_(list(models)))
    has_job = sa.exists().where(
        _j.tenant_id == _m.tenant_id, _j.memory_id == _m.id, _j.status.in_((*_LIVE, "failed"))
    )
    pending = sa.select(_m.tenant_id, _m.id).where(needs, ~has_job).limit(limit)
    result = await conn.execute(
        insert(embedding_jobs)
        .from_select(["tenant_id", "memory_id"], pending)
        .on_conflict_do_nothing(
            index_elements=["tenant_id", "memory_id"], index_where=_j.status == "queued"
        )
        .returning(_j.id)
    )
    count = len(result.all())
    if count:
        await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, "")))
    return count


async def has_models(conn: AsyncConnection, models: Sequence[str]) -> bool:
    """Are there memories embedded by one of these models?"""
    if not models:
        return False
    query = sa.select(
        sa.exists().where(_m.embedded.is_(True), _m.embedding_model.in_(list(models)))
    )
    return bool((await conn.execute(query)).scalar())


async def purge_done(conn: AsyncConnection, older_than_s: float) -> None:
    await conn.execute(
        embedding_jobs.delete().where(
            _j.status == "done",
            _j.updated_at < sa.func.now() - sa.func.make_interval(0, 0, 0, 0, 0, 0, older_than_s),
        )
    )


async def list_jobs(conn: AsyncConnection, status: str | None, limit: int) -> list[JobRow]:
    query = sa.select(embedding_jobs).order_by(_j.updated_at.desc()).limit(limit)
    if status:
        query = query.where(_j.status == status)
    return [JobRow.from_row(row) for row in await conn.execute(query)]


async def retry_failed(conn: AsyncConnection, job_ids: Sequence[int] | None) -> int:
    other = embedding_jobs.alias("other")
    already_queued = sa.exists().where(
        other.c.tenant_id == _j.tenant_id,
        other.c.memory_id == _j.memory_id,
        other.c.status == "queued",
    )
    where: list[Any] = [_j.status == "failed", ~already_queued]
    if job_ids:
        where.append(_j.id.in_(job_ids))
    result = await conn.execute(
        embedding_jobs.update()
        .where(*where)
        .values(
            status="queued",
            attempts=0,
            available_at=sa.func.now(),
            last_error=None,
            updated_at=sa.func.now(),
        )
        .returning(_j.id)
    )
    count = len(result.all())
    await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, "")))
    return count


async def counts(conn: AsyncConnection) -> dict[str, int]:
    rows = await conn.execute(sa.select(_j.status, sa.func.count()).group_by(_j.status))
    return {str(status): int(n) for status, n in rows}


# --- liveness ---------------------------------------------------------------------------------


async def heartbeat(conn: AsyncConnection, worker_id: str) -> None:
    statement = insert(worker_heartbeats).values(worker_id=worker_id, beat_at=sa.func.now())
    await conn.execute(
        statement.on_conflict_do_update(
            index_elements=["worker_id"], set_={"beat_at": statement.excluded.beat_at}
        )
    )


async def forget_worker(conn: AsyncConnection, worker_id: str) -> None:
    await conn.execute(worker_heartbeats.delete().where(worker_heartbeats.c.worker_id == worker_id))


async def last_heartbeat_age_s(conn: AsyncConnection) -> float | None:
    """Seconds since the freshest worker heartbeat; None when no worker is running."""
    age = await conn.scalar(
        sa.select(
            sa.func.extract("epoch", sa.func.now() - sa.func.max(worker_heartbeats.c.beat_at))
        )
    )
    return None if age is None else float(age)


class Notifications:
    """A LISTEN connection on the jobs channel, re-opened after any failure: waiting for work
    survives a database restart."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: psycopg.AsyncConnection[object] | None = None

    async def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for a new job's NOTIFY; False when no LISTEN connection could
        be had (the caller polls meanwhile)."""
        if self._conn is None or self._conn.closed:
            self._conn = await self._open()
        if self._conn is None:
            return False
        try:
            async for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                break
        except (psycopg.Error, OSError):
            await self.close()
            return False
        return True

    async def _open(self) -> psycopg.AsyncConnection[object] | None:
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=5
            )
            await conn.execute(f"LISTEN {CHANNEL}")
            return conn
        except (psycopg.Error, OSError):
            return None

    async def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error, OSError):
                await self._conn.close()
            self._conn = None
