"""The scheduled jobs that stand on the memories table: cleanup, tiers, decay, and the audit
log's partitions — registered in the scheduler's table at the bottom.

Each job first counts, per user, what it would change; if that is more than
``lifecycle_max_share`` of some user's memories (and more than ``lifecycle_safety_min``), the
job stops and reports instead of acting. A dry run counts and changes nothing. Jobs that
stand on the graph and cognitive tables join through ``CLEANUP_STEPS`` and
``DECAY_TARGETS`` (and ``schedule.register`` for whole new jobs).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memvault.cognitive import upkeep
from memvault.db import audit
from memvault.db import idempotency as idempotency_db
from memvault.db import lifecycle as db
from memvault.db.audit import AuditEvent
from memvault.db.erasure import expired_where, in_tenant, one_of
from memvault.db.records import UserShare
from memvault.db.units import reading, transaction
from memvault.graph import promote
from memvault.lifecycle import graph_jobs, health, merge_undo
from memvault.lifecycle.deletion import erase
from memvault.lifecycle.reports import DeletionReceipt, HealthFinding
from memvault.lifecycle.schedule import (
    JOBS,
    history,
    register,
    run_due,
    run_job,
    statuses,
    undo,
)
from memvault.scheduling import OUTAGES, Outcome, RunContext, ScheduledJob, skipped

if TYPE_CHECKING:
    from memvault.backend import Backend
    from memvault.db.erasure import MemoryCondition


async def _per_user(ctx: RunContext, condition: MemoryCondition) -> list[UserShare]:
    async with reading(ctx.backend.engine) as conn:
        return await db.touched_per_user(conn, condition)


def _over_share(ctx: RunContext, per_user: Sequence[UserShare]) -> list[dict[str, Any]]:
    """The users a run would change too much of (the safety stop's report)."""
    share, least = ctx.settings.lifecycle_max_share, ctx.settings.lifecycle_safety_min
    return [
        {"tenant_id": r.tenant_id, "user_id": r.user_id, "touched": r.touched, "total": r.total}
        for r in per_user
        if r.touched > least and r.touched > share * r.total
    ]


def _audit_per_user(ctx: RunContext, operation: str, per_user: Sequence[UserShare]) -> None:
    for r in per_user:
        ctx.backend.audit.record(
            AuditEvent(
                tenant_id=r.tenant_id,
                operation=operation,
                actor=f"lifecycle:{operation}",
                user_id=r.user_id,
                result_count=r.touched,
                details={"run_id": ctx.run_id},
                at=ctx.now,
            )
        )


# --- cleanup -----------------------------------------------------------------------------------

CleanupStep = Callable[[RunContext], Awaitable[dict[str, int]]]
# Kept answers of keyed writes taken per cleanup run, at most: a backlog goes over a few runs
# rather than in one long statement.
IDEMPOTENT_PURGE_BATCH = 50_000


async def _purge_idempotent_answers(ctx: RunContext) -> dict[str, int]:
    """The kept answers of writes sent with an Idempotency-Key, once past their time."""
    if ctx.dry_run:
        return {}
    async with transaction(ctx.backend.engine) as conn:
        return {"deleted": await idempotency_db.purge_expired(conn, IDEMPOTENT_PURGE_BATCH)}


# What cleanup does beyond expired memories; each honours ctx.dry_run and returns its counts.
CLEANUP_STEPS: dict[str, CleanupStep] = {
    "entities": graph_jobs.forget_entities,
    "conversations": upkeep.archive_conversations,
    "working_memory": upkeep.purge_working_memory,
    "idempotent_writes": _purge_idempotent_answers,
    "merge_undos": merge_undo.purge_expired,
}


async def cleanup(ctx: RunContext) -> Outcome:
    """Delete expired memories (past ``expires_at``, or temporal and past ``valid_until``: the
    one definition, in db/erasure.py, that ``memvault cleanup`` deletes too), through the
    deletion path (every derived row, a receipt per tenant in the audit)."""
    condition = expired_where(ctx.now)
    per_user = await _per_user(ctx, condition)
    if stopped := _over_share(ctx, per_user):
        return Outcome({"would_delete": sum(r.touched for r in per_user)}, stopped)
    counts: dict[str, int] = {}
    passed: list[dict[str, str]] = []
    if ctx.dry_run:
        counts["would_delete"] = sum(r.touched for r in per_user)
    else:
        for tenant_id in sorted({r.tenant_id for r in per_user}):
            where = in_tenant(condition, tenant_id)
            for receipt in await _erase_isolated(ctx, tenant_id, where, passed):
                for store, n in receipt.counts.items():
                    counts[store] = counts.get(store, 0) + n
        counts["deleted"] = counts.get("memories", 0)
    for name, step in CLEANUP_STEPS.items():
        for key, n in (await step(ctx)).items():
            counts[f"{name}.{key}"] = n
    return Outcome(counts, changed={"deleted": counts.get("deleted", 0)}, skipped=passed)


async def _erase_isolated(
    ctx: RunContext,
    tenant_id: str,
    where: MemoryCondition,
    passed: list[dict[str, str]],
) -> list[DeletionReceipt]:
    """The tenant's expired memories in one deletion; if that fails, one deletion per memory,
    so one that cannot go is skipped (and reported) and the others go."""
    try:
        return [await _erase_expired(ctx, tenant_id, where)]
    except OUTAGES:
        raise
    except Exception:  # narrowed below, memory by memory
        async with reading(ctx.backend.engine) as conn:
            doomed = [(r.id, r.user_id) for r in await db.pick_for_deletion(conn, where)]
    receipts = []
    for memory_id, user_id in doomed:
        try:
            one = one_of(where, memory_id)
            receipts.append(await _erase_expired(ctx, tenant_id, one))
        except OUTAGES:
            raise
        except Exception as exc:  # reported in the run and the owner's memory health
            passed.append(skipped(tenant_id, user_id, memory_id, exc))
    return receipts


async def _erase_expired(
    ctx: RunContext, tenant_id: str, where: MemoryCondition
) -> DeletionReceipt:
    return await erase(
        ctx.backend,
        tenant_id,
        where,
        scope="expired",
        user_id=None,
        actor="lifecycle:cleanup",
        now=ctx.now,
    )


# --- tiers -------------------------------------------------------------------------------------


async def tiers(ctx: RunContext) -> Outcome:
    """hot -> warm -> cold as memories go unread and unwritten; a recalled one comes back to
    hot at the next run."""
    settings = ctx.settings
    due = db.tier_due(
        ctx.now,
        timedelta(days=settings.tier_warm_after_days),
        timedelta(days=settings.tier_cold_after_days),
    )
    per_user = await _per_user(ctx, db.tier_changes(due))
    async with reading(ctx.backend.engine) as conn:
        moves = await db.tier_moves(conn, due)
    if stopped := _over_share(ctx, per_user):
        return Outcome({"would_move": moves}, stopped)
    if ctx.dry_run:
        return Outcome({"would_move": moves})
    async with transaction(ctx.backend.engine) as conn:
        moved = await db.apply_tiers(conn, due)
    _audit_per_user(ctx, "tier", per_user)
    return Outcome({"moved": moved, **moves}, changed={"tiered": moved})


# --- decay -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecayTarget:
    """Something that decays: which rows it would touch (for the safety stop; None when it is
    not a user's memories), how to decay them under a run id, how to undo that run."""

    condition: Callable[[RunContext], MemoryCondition | None]
    apply: Callable[[RunContext], Awaitable[int]]
    undo: Callable[[Backend, int], Awaitable[int]]


def _idle_importance(ctx: RunContext) -> MemoryCondition:
    s = ctx.settings
    return db.decaying(ctx.now, timedelta(days=s.decay_idle_days), s.decay_importance_floor)


async def _decay_importance(ctx: RunContext) -> int:
    s = ctx.settings
    async with transaction(ctx.backend.engine) as conn:
        return await db.decay_importance(
            conn,
            ctx.run_id,
            ctx.now - timedelta(days=s.decay_idle_days),
            s.decay_importance_floor,
            s.decay_importance_step,
        )


async def _undo_importance(backend: Backend, run_id: int) -> int:
    async with transaction(backend.engine) as conn:
        return await db.undo_importance(conn, run_id)


# Entity salience and inferred-fact confidence register here with the graph's tables.
DECAY_TARGETS: dict[str, DecayTarget] = {
    "memory_importance": DecayTarget(_idle_importance, _decay_importance, _undo_importance)
}


async def decay(ctx: RunContext) -> Outcome:
    """Idle memories lose importance step by step, never below the floor; every change is
    recorded under the run so ``undo`` can put it back."""
    per_user: list[UserShare] = []
    for target in DECAY_TARGETS.values():
        condition = target.condition(ctx)
        if condition is not None:
            per_user.extend(await _per_user(ctx, condition))
    would = sum(r.touched for r in per_user)
    if stopped := _over_share(ctx, per_user):
        return Outcome({"would_decay": would}, stopped)
    if ctx.dry_run:
        return Outcome({"would_decay": would})
    counts = {name: await target.apply(ctx) for name, target in DECAY_TARGETS.items()}
    _audit_per_user(ctx, "decay", per_user)
    return Outcome(counts, changed={"decayed": sum(counts.values())})


async def undo_decay(backend: Backend, run_id: int) -> int:
    return sum([await t.undo(backend, run_id) for t in DECAY_TARGETS.values()])


# --- audit partitions --------------------------------------------------------------------------


async def audit_partitions(ctx: RunContext) -> Outcome:
    """Make the next days' audit partitions; drop those past ``audit_retention_days``."""
    settings = ctx.settings
    today = ctx.now.date()
    wanted = {today + timedelta(days=n) for n in range(settings.audit_partitions_ahead_days + 1)}
    oldest_kept = today - timedelta(days=settings.audit_retention_days)
    async with reading(ctx.backend.ddl_engine) as conn:
        existing = set(await audit.partition_days(conn))
    create, drop = sorted(wanted - existing), sorted(d for d in existing if d < oldest_kept)
    counts: dict[str, Any] = {
        "create": [d.isoformat() for d in create],
        "drop": [d.isoformat() for d in drop],
    }
    if ctx.dry_run:
        return Outcome(counts)
    async with transaction(ctx.backend.ddl_engine) as conn:
        for day in create:
            await audit.create_partition(conn, day)
        for day in drop:
            await audit.drop_partition(conn, day)
    return Outcome(
        counts, changed={"partitions_created": len(create), "partitions_dropped": len(drop)}
    )


# The scheduler's table, in the order a due run takes them: every job is named here (the
# graph's and cognitive memory's beside the memories'), so whoever imports this module has
# them all, whatever else was imported.
for _job in (
    ScheduledJob("cleanup", "cleanup_interval_s", cleanup, description="expired memories go"),
    ScheduledJob("tiers", "tiers_interval_s", tiers, description="hot -> warm -> cold"),
    ScheduledJob(
        "decay", "decay_interval_s", decay, undo=undo_decay, description="idle importance decays"
    ),
    ScheduledJob(
        "audit_partitions",
        "audit_partitions_interval_s",
        audit_partitions,
        description="audit partitions ahead, old ones dropped",
    ),
    graph_jobs.CONSOLIDATE,
    upkeep.PATTERNS,
    promote.PROMOTE,
):
    register(_job)

# The graph's decay targets (lifecycle/graph_jobs.py).
for _name, (_apply, _undo) in graph_jobs.DECAY.items():
    DECAY_TARGETS[_name] = DecayTarget(lambda _ctx: None, _apply, _undo)

# --- what the jobs skipped, in memory health ----------------------------------------------


async def skipped_probe(backend: Backend, tenant_id: str, user_id: str) -> HealthFinding | None:
    """The user's records the latest run of each job went past (it could not handle them)."""
    async with reading(backend.engine) as conn:
        found = await db.skipped_for(conn, tenant_id, user_id)
    if not found:
        return None
    jobs = ", ".join(f"{job} ({', '.join(sorted(set(codes)))})" for job, codes in found.items())
    return HealthFinding(
        kind="skipped_by_jobs",
        count=sum(len(codes) for codes in found.values()),
        recommendation=f"Scheduled jobs went past records of this user they could not handle: "
        f"{jobs}. The job's run lists them (`memvault jobs schedule runs`); a record that "
        "cannot be read was altered or is under a key no longer held: delete it.",
    )


health.PROBES["skipped_by_jobs"] = skipped_probe

# The scheduler's entry points, from here so that whoever runs jobs has the table filled.
__all__ = [
    "CLEANUP_STEPS",
    "DECAY_TARGETS",
    "JOBS",
    "DecayTarget",
    "history",
    "run_due",
    "run_job",
    "statuses",
    "undo",
]
