"""Memory health: what a user's memories need — stale, expired, near-duplicate, unimportant
and never recalled, without vectors, stuck in failed jobs — each finding with a
recommendation and the action route that fixes it through the normal write path.

Findings that stand on later tables (consolidation lag, contradictions awaiting review)
register a probe in ``PROBES``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from uuid import UUID

from memvault.db import health as db
from memvault.db.units import reading
from memvault.lifecycle import graph_jobs
from memvault.lifecycle.models import HEALTH_ACTIONS as ACTIONS
from memvault.lifecycle.models import HealthAction, HealthFinding, MemoryHealth

if TYPE_CHECKING:
    from memvault.backend import Backend

Probe = Callable[["Backend", str, str], Awaitable[HealthFinding | None]]
# Consolidation lag (graph) and contradictions awaiting review (graph) register here.
PROBES: dict[str, Probe] = {**graph_jobs.PROBES}


def _action(user_id: str, action: str, ids: list[UUID]) -> HealthAction:
    body = {"user_id": user_id, "action": action, "memory_ids": [str(i) for i in ids]}
    return HealthAction(path=ACTIONS, body=body)


def clusters(pairs: list[tuple[UUID, UUID]]) -> list[list[UUID]]:
    """Group near-duplicate pairs into clusters (connected components), each sorted."""
    parent: dict[UUID, UUID] = {}

    def root(x: UUID) -> UUID:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        parent[root(a)] = root(b)
    groups: dict[UUID, list[UUID]] = {}
    for member in parent:
        groups.setdefault(root(member), []).append(member)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])


async def report(
    backend: Backend, tenant_id: str, user_id: str, now: datetime | None = None
) -> MemoryHealth:
    now = now or datetime.now(UTC)
    s = backend.settings
    findings: list[HealthFinding] = []
    async with reading(backend.engine) as conn:
        total, _ = await db.count_where(conn, tenant_id, user_id)
        checks = (
            (
                "expired_temporal",
                db.expired_temporal(now),
                "archive",
                "Temporal memories past their valid_until: no longer true; archive them "
                "(cleanup deletes them at its next run).",
            ),
            (
                "stale",
                db.not_recalled_since(now - timedelta(days=s.health_stale_days)),
                "archive",
                f"Not recalled for {s.health_stale_days:g} days; archive them to the cold tier.",
            ),
            (
                "low_importance_unrecalled",
                db.low_importance_unrecalled(
                    s.decay_importance_floor, now - timedelta(days=s.decay_idle_days)
                ),
                "delete",
                f"Low importance and never recalled in {s.decay_idle_days:g} days; delete "
                "them if they are noise.",
            ),
            (
                "vectorless",
                db.vectorless(now - timedelta(minutes=5)),
                "retry_jobs",
                "Not searchable by meaning (no vectors); retry their embedding jobs.",
            ),
        )
        for kind, condition, action, advice in checks:
            count, sample = await db.count_where(conn, tenant_id, user_id, condition)
            if count:
                findings.append(
                    HealthFinding(
                        kind=kind,
                        count=count,
                        memory_ids=sample,
                        recommendation=advice,
                        action=_action(user_id, action, sample),
                    )
                )
        failed = await db.failed_jobs(conn, tenant_id, user_id)
        pairs = await db.near_duplicate_pairs(
            conn,
            tenant_id,
            user_id,
            backend.embeddings.active_model,
            s.health_duplicate_similarity,
        )
    if failed:
        ids = [r.memory_id for r in failed][: db.SAMPLE]
        findings.append(
            HealthFinding(
                kind="failed_jobs",
                count=len(failed),
                memory_ids=ids,
                recommendation="Embedding jobs that gave up; retry them.",
                action=_action(user_id, "retry_jobs", ids),
            )
        )
    if pairs:
        groups = clusters(pairs)
        findings.append(
            HealthFinding(
                kind="near_duplicates",
                count=len(groups),
                clusters=groups[: db.SAMPLE],
                recommendation="Near-duplicate memories; merge each cluster into its first "
                "memory (one action per cluster).",
                action=_action(user_id, "merge", groups[0]),
            )
        )
    for probe in PROBES.values():
        found = await probe(backend, tenant_id, user_id)
        if found is not None:
            findings.append(found)
    return MemoryHealth(user_id=user_id, total=total, findings=findings)
