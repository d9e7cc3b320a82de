"""Memory health: what a user's memories need — stale, expired, near-duplicate, unimportant
and never recalled, without vectors, stuck in failed jobs — each finding with a
recommendation and the action route that fixes it through the normal write path.

Findings that stand on later tables (consolidation lag, contradictions awaiting review)
register a probe in ``PROBES``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

from memvault.db import curated as curated_db
from memvault.db import embedding_queue, store
from memvault.db import health as db
from memvault.db.tenancy import scoped_to_tenant
from memvault.db.units import reading, transaction
from memvault.errors import Conflict, InvalidInput, NotFound
from memvault.lifecycle import deletion, duplicates, graph_jobs, merge_undo, merging
from memvault.lifecycle.lifecycle import identifier
from memvault.lifecycle.reports import HEALTH_ACTIONS as ACTIONS
from memvault.lifecycle.reports import (
    HealthAction,
    HealthActionRequest,
    HealthActionResult,
    HealthFinding,
    MemoryHealth,
    MergeUndone,
)
from memvault.models import TURN_SOURCE
from memvault.validation import parse_id

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend
    from memvault.context import TenantContext
    from memvault.memories import Memories

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
        total, counts = await db.counts_where(conn, tenant_id, user_id, [c[1] for c in checks])
        for (kind, condition, action, advice), count in zip(checks, counts, strict=True):
            if count:
                sample = await db.sample_where(conn, tenant_id, user_id, condition)
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
        pairs = await _near_duplicates(backend, conn, tenant_id, user_id)
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
                recommendation="Near-duplicate memories; merge each cluster into its earliest "
                "memory, which keeps every copy's tags, metadata, dates and sources.",
                action=HealthAction(
                    path=ACTIONS,
                    body={
                        "user_id": user_id,
                        "action": "merge",
                        "clusters": [[str(i) for i in g] for g in groups[: db.SAMPLE]],
                    },
                ),
            )
        )
    for probe in PROBES.values():
        found = await probe(backend, tenant_id, user_id)
        if found is not None:
            findings.append(found)
    return MemoryHealth(user_id=user_id, total=total, findings=findings)


async def _near_duplicates(
    backend: Backend, conn: AsyncConnection, tenant_id: str, user_id: str
) -> list[tuple[UUID, UUID]]:
    """Near-duplicate pairs among the user's newest memories, comparing only what changed
    since the last report (``lifecycle.duplicates``)."""
    model = backend.embeddings.active_model
    similarity = backend.settings.health_duplicate_similarity
    key = (tenant_id, user_id, model, similarity)
    window = await db.duplicate_window(conn, tenant_id, user_id, model, duplicates.SCAN)
    fresh, kept = backend.duplicate_scans.plan(key, window)
    room = duplicates.PAIRS - len(kept)
    if fresh and room > 0:
        found = await db.near_duplicate_pairs(
            conn,
            tenant_id,
            user_id,
            model,
            similarity,
            window=list(window),
            fresh=fresh,
            pairs=room,
        )
        kept.update(found)
    backend.duplicate_scans.keep(key, window, kept)
    return sorted(kept)


class Health:
    """What a user's memories need (duplicates, stale or unembedded memories, …) and the
    actions that fix it, through the normal write path of ``memories``."""

    def __init__(self, context: TenantContext, memories: Memories) -> None:
        self._context = context
        self._backend = context.backend
        self.tenant_id = context.tenant_id
        self.actor = context.actor
        self._memories = memories

    @scoped_to_tenant
    async def memory_health(self, *, user_id: str) -> MemoryHealth:
        """What this user's memories need, each finding with its recommended action."""
        owner = identifier(user_id, "user_id")
        return await report(self._backend, self.tenant_id, owner)

    @scoped_to_tenant
    async def health_action(
        self, request: HealthActionRequest | dict[str, Any]
    ) -> HealthActionResult:
        """Act on a finding through the normal write path (and so the audit): ``merge`` keeps
        the first memory and deletes the rest (noting them on the first), ``archive`` moves
        them to the cold tier, ``delete`` erases them, ``retry_jobs`` requeues failed jobs."""
        if not isinstance(request, HealthActionRequest):
            request = HealthActionRequest.model_validate(request)
        owner = identifier(request.user_id, "user_id")
        ids = list(dict.fromkeys(request.memory_ids))
        if request.action == "consolidate":
            with self._context.audit("update", owner, details={"via": "consolidate"}) as event:
                counts = await graph_jobs.consolidate_user(self._backend, self.tenant_id, owner)
                event.result_count = counts["turns_extracted"]
            return HealthActionResult(action="consolidate", changed=counts["conversations"])
        if request.action == "merge":
            return await self._merge(owner, request.clusters or [ids])
        if request.action != "retry_jobs" and not ids:
            raise InvalidInput("Name the memories to act on.", details={"field": "memory_ids"})
        if request.action == "delete":
            receipt = await deletion.erase(
                self._backend,
                self.tenant_id,
                deletion.memories_where(self.tenant_id, owner, ids),
                scope="memory",
                user_id=owner,
                actor=self.actor,
            )
            return HealthActionResult(action="delete", changed=receipt.memories, receipt=receipt)
        with self._context.audit(
            "tier" if request.action == "archive" else "update", owner, memory_ids=ids
        ) as event:
            async with transaction(self._backend.engine) as conn:
                if request.action == "archive":
                    changed = await db.set_tier(conn, self.tenant_id, owner, ids, "cold")
                else:
                    failed = await db.failed_jobs(conn, self.tenant_id, owner)
                    wanted = [j.id for j in failed if not ids or j.memory_id in ids]
                    changed = await embedding_queue.retry_failed(conn, wanted) if wanted else 0
                    # Memories with no job at all get one (a queued one is not doubled).
                    bare = await db.owned_unembedded(conn, self.tenant_id, owner, ids)
                    await embedding_queue.enqueue(conn, self.tenant_id, bare)
                    changed = max(changed, len(bare))
            event.result_count = changed
        return HealthActionResult(action=request.action, changed=changed)

    @scoped_to_tenant
    async def undo_merge(self, merge_id: UUID | str, *, user_id: str) -> MergeUndone:
        """Undo a merge as a whole, once (``lifecycle.merge_undo``): every copy back as it was,
        the kept memories' merged values as they were before (their history records it)."""
        owner = identifier(user_id, "user_id")
        ident = parse_id(merge_id, field="merge_id")
        details = {"via": "undo_merge", "merge_id": str(ident)}
        with self._context.audit("update", owner, details=details) as event:
            async with transaction(self._backend.engine) as conn:
                undone = await merge_undo.undo(
                    self._backend, conn, (self.tenant_id, owner), ident, self.actor, _now()
                )
            event.memory_ids = [*undone.restored, *undone.reverted][:100]
            event.result_count = len(undone.restored)
        return undone

    async def _merge(self, owner: str, clusters: list[list[UUID]]) -> HealthActionResult:
        """Each cluster into its earliest memory, losing nothing (``lifecycle.merging``); the
        copies of every cluster are deleted together, with one receipt, and can be brought
        back together by :meth:`undo_merge` with the id the answer carries."""
        clusters = _checked(clusters)
        everyone = [i for c in clusters for i in c]
        merge_id = uuid4()
        with self._context.audit("merge", owner, memory_ids=everyone[:100]) as event:
            kept, rest, until = await self._fold(owner, clusters, merge_id)
            receipt = await deletion.erase(
                self._backend,
                self.tenant_id,
                deletion.memories_where(self.tenant_id, owner, rest),
                scope="memory",
                user_id=owner,
                actor=self.actor,
            )
            event.result_count = receipt.memories
            event.details = {
                "via": "health_merge",
                "clusters": len(clusters),
                "kept": [f"memory:{k}" for k in kept[:100]],
                "request_id": receipt.request_id,
                "merge_id": str(merge_id),
            }
        return HealthActionResult(
            action="merge",
            changed=receipt.memories,
            receipt=receipt,
            merge_id=merge_id,
            undo_until=until,
        )

    async def _fold(
        self, owner: str, clusters: list[list[UUID]], merge_id: UUID
    ) -> tuple[list[UUID], list[UUID], datetime]:
        """In one transaction: each kept memory takes what its copies held (the normal
        update, so its history records it) and their source links, and the merge's undo
        record keeps what that changed and the copies about to go; until when it holds."""
        kept: list[UUID] = []
        rest: list[UUID] = []
        before: list[merge_undo.Kept] = []
        async with transaction(self._backend.engine) as conn:
            for cluster in clusters:
                rows = [
                    await store.fetch_memory(conn, self.tenant_id, i, owner, lock=True)
                    for i in sorted(cluster)
                ]
                found = [r for r in rows if r is not None]
                if len(found) < 2:
                    raise NotFound(
                        "A cluster to merge has fewer than two memories of this user left.",
                        details={"memory_ids": [str(i) for i in cluster]},
                    )
                if any(r.source == TURN_SOURCE for r in found):
                    raise Conflict(
                        "A conversation turn is kept as it was said; it is not merged.",
                        details={"memory_ids": [str(i) for i in cluster]},
                    )
                plan = merging.plan(found)
                old = next(r for r in found if r.id == plan.keep)
                if plan.values:
                    await store.update_memory(conn, old, plan.values, self.actor)
                gained = await curated_db.adopt_sources(conn, self.tenant_id, plan.keep, plan.rest)
                before.append(merge_undo.kept_before(old, plan.values, gained))
                kept.append(plan.keep)
                rest.extend(plan.rest)
            owner_key = (self.tenant_id, owner)
            until = await merge_undo.record(
                self._backend, conn, owner_key, merge_id, before, rest, _now()
            )
        return kept, rest, until


def _now() -> datetime:
    return datetime.now(UTC)


def _checked(clusters: list[list[UUID]]) -> list[list[UUID]]:
    clusters = [list(dict.fromkeys(c)) for c in clusters]
    if not clusters or any(len(c) < 2 for c in clusters):
        raise InvalidInput(
            "A merge needs two memories or more in each cluster.", details={"field": "clusters"}
        )
    everyone = [i for c in clusters for i in c]
    if len(set(everyone)) != len(everyone):
        raise InvalidInput("A memory is in two clusters.", details={"field": "clusters"})
    if len(everyone) > 1000:
        raise InvalidInput("At most 1,000 memories a merge.", details={"field": "clusters"})
    return clusters
