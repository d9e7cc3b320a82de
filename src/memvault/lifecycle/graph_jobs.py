"""The lifecycle jobs that stand on the knowledge graph: ``consolidate`` (conversations'
turns through the graph extractor), entity salience and inferred-fact confidence decay,
low-salience entity cleanup, and the health probes for consolidation lag and open fact
reviews. ``lifecycle.jobs`` and ``lifecycle.health`` plug them into their extension points.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from memvault.db import graph_lifecycle as db
from memvault.db.units import reading, transaction
from memvault.graph.derive import Source, derive_many, lock_names
from memvault.graph.writer import Owner
from memvault.keys.sealing import open_content
from memvault.lifecycle.reports import HEALTH_ACTIONS, HealthAction, HealthFinding
from memvault.metrics import CONSOLIDATION_BACKLOG, CONSOLIDATION_LAG, CONSOLIDATION_SKIPPED
from memvault.scheduling import Outcome, RunContext, ScheduledJob

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)

_DAY_S = 86_400.0
# Conversations read per pass; their factless turns are extracted consolidate_batch at a time.
_CONVERSATIONS_PER_PASS = 100


# --- consolidate -------------------------------------------------------------------------------


async def _derive_turns(backend: Backend, turns: list[db.FactlessTurn], *, offline: bool) -> int:
    """The same path as extraction at write time: extract and embed outside the transaction,
    then write each turn's claims in one transaction per batch."""
    keys = backend.keys
    batch = backend.settings.consolidate_batch
    written = 0
    for start in range(0, len(turns), batch):
        part = turns[start : start + batch]
        await backend.load_tenant_keys({t.tenant_id for t in part})
        sources = [
            Source(
                Owner(t.tenant_id, t.user_id, t.app_id, t.channel),
                open_content(keys, t.tenant_id, t.id, t.ciphertext, t.nonce, t.key_id),
                t.metadata,
                t.occurred_at,
            )
            for t in part
        ]
        derived = await derive_many(backend, sources, offline=offline)
        async with transaction(backend.engine) as conn:
            await lock_names(conn, derived)
            for turn, derivation in zip(part, derived, strict=True):
                if derivation is not None:
                    await derivation.write(conn, turn.id)
                    written += 1
    return written


async def _set_lag_metrics(backend: Backend, ctx: RunContext) -> db.ConsolidationLag:
    async with reading(backend.engine) as conn:
        lag = await db.consolidation_lag(conn)
    CONSOLIDATION_BACKLOG.set(lag.count)
    CONSOLIDATION_LAG.set((ctx.now - lag.oldest).total_seconds() if lag.oldest else 0.0)
    return lag


async def _consolidate_one(
    backend: Backend, pending: db.PendingConversation, now: datetime
) -> tuple[int, int]:
    """One conversation's waiting turns through the extractor, then its watermark moved up:
    (turns read, turns that gave facts). Offline, only turns without facts are read again
    (extraction at write took the others); with an LLM, every waiting turn goes to it."""
    offline = backend.judge.llm is None
    async with reading(backend.engine) as conn:
        turns = await db.waiting_turns(conn, [pending], factless_only=offline)
    with_facts = await _derive_turns(backend, turns, offline=offline)
    async with transaction(backend.engine) as conn:
        await db.mark_consolidated(conn, pending, now)
    return len(turns), with_facts


async def _consolidate_all(
    backend: Backend, now: datetime, owner: tuple[str, str] | None = None
) -> dict[str, int]:
    """Every waiting conversation (of one user, with ``owner``). One that fails (a record the
    store refuses) is skipped, logged and counted, and keeps its watermark; every other
    conversation, of every tenant, goes on."""
    counts = {"conversations": 0, "turns_extracted": 0, "turns_with_facts": 0, "skipped": 0}
    last: db.PendingConversation | None = None
    while True:
        async with reading(backend.engine) as conn:
            pending = await db.pending_conversations(conn, _CONVERSATIONS_PER_PASS, last, owner)
        if not pending:
            return counts
        last = pending[-1]
        for conversation in pending:
            try:
                read, with_facts = await _consolidate_one(backend, conversation, now)
            except Exception as exc:  # isolated: one tenant's bad record stops no one else
                counts["skipped"] += 1
                CONSOLIDATION_SKIPPED.inc()
                log.warning(
                    "consolidate: skipped a conversation of tenant %s (%s)",
                    conversation.tenant_id,
                    type(exc).__name__,
                )
                continue
            counts["conversations"] += 1
            counts["turns_extracted"] += read
            counts["turns_with_facts"] += with_facts


async def consolidate_user(backend: Backend, tenant_id: str, user_id: str) -> dict[str, int]:
    """A user's waiting turns consolidated now (memory health's "consolidate" action)."""
    return await _consolidate_all(backend, datetime.now(UTC), (tenant_id, user_id))


async def consolidate(ctx: RunContext) -> Outcome:
    """Every conversation's turns past its watermark go through the graph extractor, then the
    watermark moves up, so turns added later are taken by the next run. Only adds what a turn
    claims, so the safety stop (a share of a user's memories changed) has nothing to weigh.
    A conversation that fails is skipped and reported (``skipped``); the rest go on."""
    if ctx.dry_run:
        async with reading(ctx.backend.engine) as conn:
            lag = await db.consolidation_lag(conn)
            waiting = await db.count_waiting_turns(conn)
        return Outcome({"would_consolidate": lag.count, "would_extract": waiting})
    counts = await _consolidate_all(ctx.backend, ctx.now)
    await _set_lag_metrics(ctx.backend, ctx)
    return Outcome(
        counts,
        changed={
            "consolidated": counts["conversations"],
            "facts_derived": counts["turns_with_facts"],
        },
    )


# --- decay -------------------------------------------------------------------------------------


def _per_run(rate: float, period_s: float, ctx: RunContext) -> float:
    """A per-period rate as the factor for one run of the decay job (runs every
    ``decay_interval_s``), so the rate holds whatever the job's interval."""
    return float(rate ** (ctx.settings.decay_interval_s / period_s))


async def _decay_entities(ctx: RunContext) -> int:
    s = ctx.settings
    async with transaction(ctx.backend.engine) as conn:
        return await db.decay_entities(
            conn,
            ctx.run_id,
            ctx.now - timedelta(hours=s.entity_decay_idle_hours),
            _per_run(s.entity_decay_rate, _DAY_S, ctx),
        )


async def _decay_facts(ctx: RunContext) -> int:
    s = ctx.settings
    async with transaction(ctx.backend.engine) as conn:
        return await db.decay_facts(
            conn, ctx.run_id, _per_run(s.fact_decay_rate, 7 * _DAY_S, ctx), s.fact_decay_floor
        )


async def _undo_entities(backend: Backend, run_id: int) -> int:
    async with transaction(backend.engine) as conn:
        return await db.undo_decay(conn, run_id, db.ENTITY_SALIENCE)


async def _undo_facts(backend: Backend, run_id: int) -> int:
    async with transaction(backend.engine) as conn:
        return await db.undo_decay(conn, run_id, db.FACT_CONFIDENCE)


# Not a user's memories, so the safety stop (a share of a user's memories) does not weigh
# these: (apply, undo) per decay target, for ``jobs.DECAY_TARGETS``.
DECAY = {
    db.ENTITY_SALIENCE: (_decay_entities, _undo_entities),
    db.FACT_CONFIDENCE: (_decay_facts, _undo_facts),
}


# --- cleanup -----------------------------------------------------------------------------------


async def forget_entities(ctx: RunContext) -> dict[str, int]:
    """Entities below the salience floor and not accessed for the idle period go, with the
    facts and relations that name them."""
    s = ctx.settings
    below, before = s.entity_cleanup_salience, ctx.now - timedelta(days=s.entity_cleanup_idle_days)
    if ctx.dry_run:
        async with reading(ctx.backend.engine) as conn:
            counts = await db.count_forgettable_entities(conn, below, before)
        return {f"would_delete_{k}": n for k, n in counts.items()}
    async with transaction(ctx.backend.engine) as conn:
        return {"deleted": await db.delete_forgettable_entities(conn, below, before)}


# --- health probes -----------------------------------------------------------------------------


async def consolidation_probe(
    backend: Backend, tenant_id: str, user_id: str
) -> HealthFinding | None:
    async with reading(backend.engine) as conn:
        lag = await db.user_consolidation_lag(conn, tenant_id, user_id)
    if not lag.count:
        return None
    since = f", the oldest said {lag.oldest:%Y-%m-%d %H:%M} UTC" if lag.oldest else ""
    return HealthFinding(
        kind="consolidation_lag",
        count=lag.turns,
        recommendation=f"{lag.turns} turn(s) in {lag.count} conversation(s) not consolidated "
        f"into the knowledge graph yet{since}; the consolidate job takes them at its next "
        "run, or consolidate them now (this finding's action).",
        action=HealthAction(
            method="POST",
            path=HEALTH_ACTIONS,
            body={"user_id": user_id, "action": "consolidate", "memory_ids": []},
        ),
    )


async def reviews_probe(backend: Backend, tenant_id: str, user_id: str) -> HealthFinding | None:
    async with reading(backend.engine) as conn:
        count = await db.open_reviews(conn, tenant_id, user_id)
    if not count:
        return None
    return HealthFinding(
        kind="contradictions_awaiting_review",
        count=count,
        recommendation="Facts that contradict a current one were kept beside it for review. "
        "List them (each names both facts and their source memories) and decide each with "
        "POST /v1/facts/reviews/{id}/resolve: keep the newer fact, the one it contradicts, or "
        "both (the dashboard's knowledge graph page has the buttons).",
        action=HealthAction(method="GET", path="/v1/facts/reviews", body={"user_id": user_id}),
    )


CONSOLIDATE = ScheduledJob(
    "consolidate",
    "consolidate_interval_s",
    consolidate,
    description="conversations' turns into the knowledge graph",
)
PROBES = {
    "consolidation_lag": consolidation_probe,
    "contradictions_awaiting_review": reviews_probe,
}
