"""The scheduler: named jobs, each with its interval setting, run when due by whichever worker
process gets its advisory lock first, and recorded in ``scheduled_runs``.

A job serves every tenant, so no tenant's record may stop it: a record it cannot handle is
skipped (``Outcome.skipped``, made by ``skipped``), reported in the run's counts as
``skipped_records`` and in its owner's memory health, and the job goes on; only the store
being away (``OUTAGES``) fails a run.

A run takes ``pg_try_advisory_lock`` on the job's name on a connection of its own, then checks
again, under the lock, that the job is still due: two workers that wake together run it once,
and a worker that wakes just after the other finished finds it no longer due. The lock is a
session lock, so a runner that dies releases it with its connection.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memvault import tracing
from memvault.db import lifecycle as db
from memvault.db.driver_errors import store_errors
from memvault.db.tenancy import all_tenants
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound
from memvault.lifecycle.reports import JobStatus, ScheduledRun
from memvault.metrics import LIFECYCLE_CHANGES, SCHEDULED_DURATION, SCHEDULED_RUNS
from memvault.scheduling import MAX_REPORTED, Clock, RunContext, ScheduledJob, utc_now

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)


# Filled by ``lifecycle.jobs`` (import the jobs from there: importing it fills the table).
JOBS: dict[str, ScheduledJob] = {}


def register(job: ScheduledJob) -> None:
    """Add a job to the table (the graph's consolidate, cognitive's patterns and promote)."""
    JOBS[job.name] = job


def job_named(name: str) -> ScheduledJob:
    if name not in JOBS:
        raise NotFound(f"No scheduled job named {name!r}.", details={"jobs": sorted(JOBS)})
    return JOBS[name]


async def run_job(
    backend: Backend,
    name: str,
    *,
    dry_run: bool = False,
    clock: Clock = utc_now,
    only_if_due: bool = False,
) -> ScheduledRun:
    """Run one job now (or, ``only_if_due``, only when its interval has passed), as the only
    runner across every process; another runner holding it answers ``skipped``."""
    job = job_named(name)
    if dry_run and not job.dry_run:
        raise InvalidInput(f"The job {name!r} has no dry run.", details={"job": name})
    with all_tenants(), store_errors():
        # The lock lasts as long as this connection's transaction: until the block ends.
        async with reading(backend.engine) as lock_conn:
            if not await db.try_lock(lock_conn, name):
                return _skipped(name, clock(), dry_run, "another runner holds the job")
            return await _run_locked(backend, job, dry_run, clock, only_if_due)


async def _run_locked(
    backend: Backend, job: ScheduledJob, dry_run: bool, clock: Clock, only_if_due: bool
) -> ScheduledRun:
    now = clock()
    async with transaction(backend.engine) as conn:
        if only_if_due and not _due(await db.last_started(conn, job.name), job, backend, now):
            return _skipped(job.name, now, dry_run, "not due")
        run_id = await db.start_run(conn, job.name, now, dry_run)
    started = time.perf_counter()
    values: dict[str, Any]
    report: list[dict[str, Any]] = []
    try:
        with tracing.span(f"memvault.job.{job.name}", job=job.name, dry_run=dry_run) as traced:
            outcome = await job.run(RunContext(backend, now, dry_run, run_id))
            # The change kinds are the metrics' fixed labels; counts, never whose.
            traced.set(stopped=bool(outcome.stopped), skipped=len(outcome.skipped))
            traced.set(**{f"changed.{k}": n for k, n in outcome.changed.items()})
    except Exception as exc:
        code = str(getattr(exc, "code", type(exc).__name__))
        log.warning("scheduled job %s failed: %s", job.name, code)
        values = {"outcome": "failed", "error_code": code, "counts": {}}
    else:
        report = outcome.stopped
        counts = dict(outcome.counts)
        if report:
            counts["stopped_users"] = report
        if outcome.skipped:
            counts["skipped_records"] = outcome.skipped[:MAX_REPORTED]
            counts["skipped_count"] = len(outcome.skipped)
        values = {
            "outcome": "stopped" if report else "ok",
            "error_code": "safety_stop" if report else None,
            "counts": counts,
        }
        if not dry_run and not report:
            for change, n in outcome.changed.items():
                LIFECYCLE_CHANGES.labels(job.name, change).inc(n)
    duration = time.perf_counter() - started
    values.update(finished_at=now + timedelta(seconds=duration), duration_ms=duration * 1000)
    async with transaction(backend.engine) as conn:
        await db.finish_run(conn, run_id, **values)
    SCHEDULED_RUNS.labels(job.name, values["outcome"]).inc()
    SCHEDULED_DURATION.labels(job.name).observe(duration)
    return ScheduledRun(
        id=run_id, job=job.name, started_at=now, dry_run=dry_run, report=report, **values
    )


def _due(last: datetime | None, job: ScheduledJob, backend: Backend, now: datetime) -> bool:
    return last is None or last + timedelta(seconds=job.interval_s(backend.settings)) <= now


def _skipped(name: str, now: datetime, dry_run: bool, reason: str) -> ScheduledRun:
    SCHEDULED_RUNS.labels(name, "skipped").inc()
    return ScheduledRun(
        id=None,
        job=name,
        started_at=now,
        outcome="skipped",
        dry_run=dry_run,
        counts={"reason": reason},
    )


async def run_due(backend: Backend, *, clock: Clock = utc_now) -> list[ScheduledRun]:
    """Run every job whose interval has passed (what the worker calls each tick)."""
    ran = []
    for name in list(JOBS):
        run = await run_job(backend, name, clock=clock, only_if_due=True)
        if run.outcome != "skipped":
            ran.append(run)
    return ran


async def statuses(backend: Backend, *, clock: Clock = utc_now) -> list[JobStatus]:
    """Every job with its last run (dry or not) and when it is next due."""
    now = clock()
    with all_tenants(), store_errors():
        async with reading(backend.engine) as conn:
            latest = await db.latest_runs(conn)
            last_real = {name: await db.last_started(conn, name) for name in JOBS}
    found = []
    for name, job in JOBS.items():
        interval = job.interval_s(backend.settings)
        real = last_real[name]
        row = latest.get(name)
        found.append(
            JobStatus(
                name=name,
                interval_s=interval,
                interval_setting=job.interval_setting,
                dry_run=job.dry_run,
                undo=job.undo is not None,
                last_run=ScheduledRun.model_validate(row, from_attributes=True) if row else None,
                next_due=now if real is None else max(now, real + timedelta(seconds=interval)),
            )
        )
    return found


async def history(backend: Backend, job: str | None, limit: int) -> list[ScheduledRun]:
    with all_tenants(), store_errors():
        async with reading(backend.engine) as conn:
            rows = await db.runs(conn, job, limit)
    return [ScheduledRun.model_validate(r, from_attributes=True) for r in rows]


async def undo(backend: Backend, name: str, run_id: int, *, clock: Clock = utc_now) -> int:
    """Reverse what one run changed (decay); returns how many values were put back. A value
    changed again since the run is left as it is now."""
    job = job_named(name)
    if job.undo is None:
        raise InvalidInput(f"The job {name!r} cannot be undone.", details={"job": name})
    with all_tenants(), store_errors():
        async with reading(backend.engine) as conn:
            run = await db.get_run(conn, run_id)
        if run is None or run.job != name:
            raise NotFound(f"No run {run_id} of {name!r}.", details={"run_id": run_id})
        if run.dry_run or run.undone_at is not None or run.outcome != "ok":
            raise InvalidInput(
                "Only a finished, real run that is not undone yet can be undone.",
                details={"run_id": run_id, "outcome": run.outcome},
            )
        restored = await job.undo(backend, run_id)
        async with transaction(backend.engine) as conn:
            await db.mark_undone(conn, run_id, clock())
    return restored
