"""Fact promotion: a project-channel fact copied to the user's ``_global``
channel, with a PROMOTED_FROM link (``fact_promotions``), so what was learned in one project is
recalled in every other. By hand (``promote``) or by the scheduled ``promote`` job when a fact
is prominent: confident, recalled often, seen in more than one conversation
(``cognitive.promotion.is_prominent``). Promoting twice answers the first copy.

The copy keeps the source's memories as its own sources, so erasing what a fact was learned
from takes the global copy too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

from memvault.db import graph as graph_db
from memvault.db import graph_promotion as db
from memvault.db.audit import AuditEvent
from memvault.db.tenancy import tenant_scope
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound
from memvault.graph import sealed
from memvault.graph.promotion import PromotionThresholds, is_prominent
from memvault.language import keyed
from memvault.models import Fact
from memvault.scheduling import (
    OUTAGES,
    Outcome,
    RunContext,
    ScheduledJob,
    skipped,
)

if TYPE_CHECKING:
    from memvault.backend import Backend

GLOBAL = db.GLOBAL
MAX_REASON = 200


@dataclass(frozen=True)
class Promotion:
    fact: Fact
    created: bool


async def promote_fact(
    backend: Backend,
    tenant_id: str,
    fact_id: UUID,
    *,
    user_id: str,
    reason: str,
    actor: str,
    score: float | None = None,
) -> Promotion:
    """Copy ``fact_id`` (the user's, in a project channel) to ``_global`` once."""
    async with reading(backend.engine) as conn:
        row = (await graph_db.fetch_facts(conn, tenant_id, [fact_id])).get(fact_id)
        if row is None or row.user_id != user_id:
            raise NotFound("No such fact.", details={"fact_id": str(fact_id)})
        if row.channel == GLOBAL:
            raise InvalidInput("The fact is already in _global.", details={"fact_id": str(fact_id)})
        names = await _names(backend, conn, tenant_id, [row.subject_id, row.object_id])
        sources = (await graph_db.sources_of(conn, tenant_id, [fact_id]))[fact_id]
        existing = await db.promoted_copy_of(conn, tenant_id, fact_id)
    if existing is not None:
        return Promotion(await _fact(backend, tenant_id, existing), created=False)
    source = sealed.to_fact(backend.keys, row, names, sources)
    keyring = backend.keys.current(tenant_id)
    copy_id = uuid4()
    async with transaction(backend.engine) as conn:
        await db.lock_fact(conn, tenant_id, fact_id)
        existing = await db.promoted_copy_of(conn, tenant_id, fact_id)
        if existing is None:
            # A row of its own, not the graph writer's: the writer would find the source (same
            # subject, predicate and value, whatever the channel) and answer it.
            await db.copy_fact(
                conn,
                tenant_id,
                fact_id,
                {
                    "id": copy_id,
                    "channel": GLOBAL,
                    "source": "promoted",
                    "recorded_at": datetime.now(UTC),
                    "access_count": 0,
                    "last_accessed": None,
                    **sealed.fact_columns(keyring, tenant_id, copy_id, source.claim, source.value),
                },
            )
            terms = keyed.text_terms(keyring, source.claim)
            await graph_db.replace_terms(conn, tenant_id, "fact", {copy_id: (user_id, terms)})
            for memory_id in sources:
                await graph_db.add_fact_source(conn, tenant_id, user_id, copy_id, memory_id)
            await db.link(conn, tenant_id, copy_id, fact_id, user_id, actor)
    if existing is not None:
        return Promotion(await _fact(backend, tenant_id, existing), created=False)
    backend.audit.record(
        AuditEvent(
            tenant_id=tenant_id,
            operation="promote",
            actor=actor,
            user_id=user_id,
            memory_kind="fact",
            source_channel=row.channel,
            target_channel=GLOBAL,
            memory_ids=list(sources),
            result_count=1,
            promotion_rule=reason[:MAX_REASON],
            promotion_score=score,
            details={"fact_id": str(copy_id), "promoted_from": str(fact_id)},
        )
    )
    return Promotion(await _fact(backend, tenant_id, copy_id), created=True)


async def _names(
    backend: Backend, conn: Any, tenant_id: str, ids: list[UUID | None]
) -> dict[UUID, str]:
    keyring = backend.keys.current(tenant_id)
    found = await graph_db.fetch_entities(conn, tenant_id, [i for i in ids if i is not None])
    return {i: sealed.open_entity(keyring, e).name for i, e in found.items()}


async def _fact(backend: Backend, tenant_id: str, fact_id: UUID) -> Fact:
    async with reading(backend.engine) as conn:
        row = (await graph_db.fetch_facts(conn, tenant_id, [fact_id]))[fact_id]
        names = await _names(backend, conn, tenant_id, [row.subject_id, row.object_id])
        sources = (await graph_db.sources_of(conn, tenant_id, [fact_id]))[fact_id]
    return sealed.to_fact(backend.keys, row, names, sources)


# --- the scheduled job -------------------------------------------------------------------------


async def promote_prominent(ctx: RunContext) -> Outcome:
    """Every prominent project fact, in every tenant, copied to ``_global`` (dry: counted)."""
    thresholds = PromotionThresholds.of(ctx.settings)
    backend = ctx.backend
    async with reading(backend.engine) as conn:
        found = await db.candidates(
            conn, thresholds.min_confidence, thresholds.min_access_count, ctx.now
        )
        by_tenant: dict[str, list[db.Candidate]] = {}
        for c in found:
            by_tenant.setdefault(c.tenant_id, []).append(c)
        seen: dict[UUID, int] = {}
        for tenant_id, facts in by_tenant.items():
            seen.update(await db.conversations_of(conn, tenant_id, [c.fact_id for c in facts]))
    prominent = [
        c
        for c in found
        if is_prominent(c.confidence, c.access_count, seen.get(c.fact_id, 0), thresholds)
    ]
    counts: dict[str, Any] = {"candidates": len(found), "would_promote": len(prominent)}
    if ctx.dry_run:
        return Outcome(counts)
    promoted, passed = 0, []
    for c in prominent:
        try:
            with tenant_scope(c.tenant_id):
                await backend.load_tenant_keys((c.tenant_id,))
                done = await promote_fact(
                    backend,
                    c.tenant_id,
                    c.fact_id,
                    user_id=c.user_id,
                    reason="prominent",
                    actor="lifecycle:promote",
                    score=c.confidence,
                )
        except OUTAGES:
            raise
        except Exception as exc:  # one tenant's fact stops no one: reported, not swallowed
            passed.append(skipped(c.tenant_id, c.user_id, c.fact_id, exc))
            continue
        promoted += done.created
    return Outcome({**counts, "promoted": promoted}, changed={"promoted": promoted}, skipped=passed)


PROMOTE = ScheduledJob(
    "promote",
    "promote_interval_s",
    promote_prominent,
    description="prominent project facts copied to _global",
)
