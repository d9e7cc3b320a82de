"""Provable deletion: a memory, a user or a tenant goes from every store that holds anything
derived from it, in one transaction where it lives in PostgreSQL, and the caller gets a
receipt (counts per store, time, request id) that is also written to the audit log.

What a deletion covers is the catalogue of where user data lives (db/catalogue.py), read at
each deletion: rows derived from the memories (chunks, postings, jobs, decay records; the
graph's facts and entities, the cognitive tables) go in the deleting transaction, before the
memory rows; stores outside that transaction (the embedding cache, Redis working memory) are
cleared just before it, so the receipt counts them and the transaction never holds a pooled
connection while a step waits for another. Each way of erasing has its step in
``deletion_steps``.

History follows ``deletion_history``: ``tombstone`` keeps who did what and when without any
content; ``purge`` removes the rows.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memvault.db import audit, graph_admin, webhooks
from memvault.db import lifecycle as db
from memvault.db.audit import AuditEvent
from memvault.db.erasure import (
    conversation_where,
    expired_where,
    in_tenant,
    memories_where,
    memory_where,
    tenant_where,
    user_where,
)
from memvault.db.records import DoomedMemory
from memvault.db.tables import audit_log, memory_history
from memvault.db.units import reading, transaction
from memvault.errors import KeyMismatch, NotFound
from memvault.graph import sealed
from memvault.keys import data_keys
from memvault.keys.sealing import open_content
from memvault.lifecycle import deletion_steps as steps
from memvault.lifecycle.deletion_steps import Targets
from memvault.lifecycle.reports import DeletionReceipt, DeletionScope
from memvault.logs import request_id
from memvault.metrics import DELETION_RECEIPTS

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend
    from memvault.db.erasure import MemoryCondition

# The conditions callers pick memories with, from db/ (where SQL is built).
__all__ = [
    "conversation_where",
    "erase",
    "erase_expired",
    "memories_where",
    "memory_where",
    "tenant_where",
    "user_where",
]

log = logging.getLogger(__name__)


async def _texts(
    backend: Backend, conn: AsyncConnection, tenant_id: str, rows: Sequence[DoomedMemory]
) -> dict[uuid.UUID, list[str]]:
    texts: dict[uuid.UUID, set[str]] = {r.id: set() for r in rows}
    for r in rows:
        texts[r.id].update(_opened(backend, r.tenant_id, r.id, r.ciphertext, r.nonce, r.key_id))
    if rows:
        for memory_id, ciphertext, nonce, key_id in await db.history_contents(
            conn, tenant_id, list(texts)
        ):
            texts[memory_id].update(
                _opened(backend, tenant_id, memory_id, ciphertext, nonce, key_id)
            )
    return {k: sorted(v) for k, v in texts.items()}


def _opened(
    backend: Backend,
    tenant_id: str,
    memory_id: uuid.UUID,
    ciphertext: bytes,
    nonce: bytes,
    key_id: str,
) -> list[str]:
    """A text for the caches, or none when it cannot be opened (altered, or under a key no
    longer held): such a memory is deleted all the same, its cache entries by owner only."""
    try:
        return [open_content(backend.keys, tenant_id, memory_id, ciphertext, nonce, key_id)]
    except KeyMismatch:
        log.warning("deleting a memory of tenant %r whose text cannot be opened", tenant_id)
        return []


async def erase(
    backend: Backend,
    tenant_id: str,
    where: MemoryCondition,
    *,
    scope: DeletionScope,
    user_id: str | None,
    actor: str,
    now: datetime | None = None,
    whole_user: bool = False,
    app_id: str | None = None,
    conversation_id: str | None = None,
) -> DeletionReceipt:
    """Delete the memories ``where`` picks and everything derived from them; a memory-scope
    deletion that finds nothing is NotFound (and changes nothing). ``whole_user``: the user's
    history of memories deleted before goes too (an erasure of the user, not of one app).
    A tenant's erasure with per-tenant keys destroys its data key in the same transaction
    (crypto-shredding): whatever copy of its content survives elsewhere cannot be opened."""
    at = now or datetime.now(UTC)
    history = backend.settings.deletion_history
    await backend.audit.ensure_days({at.date()})
    # Audit rows are written in batches: one still queued would land after the erasure (a
    # tenant's audit trail back, a user's sealed query text kept) unless written first.
    await backend.audit.flush()
    await backend.load_tenant_keys((tenant_id,))
    whole = user_id if scope == "user" and whole_user else None
    # Its row locks commit (a transaction id) but delete nothing: the steps below may still
    # fail, and a keyed erasure's retry must then run again, not be told it was done.
    async with transaction(backend.engine, side_work=True) as conn:
        targets = await _targets(backend, conn, tenant_id, where, scope, user_id, whole)
    targets = replace(
        targets, app_id=app_id, whole_user=whole_user, conversation_id=conversation_id
    )
    # The stores outside PostgreSQL's transaction are cleared before it opens, not inside it:
    # without Redis they live in PostgreSQL and take a pooled connection of their own, and a
    # deletion awaiting one while it held another starved the pool under concurrent deletions
    # (20 at once stalled for the pool's whole timeout). A failure here still deletes
    # nothing; the caches refill from what stays.
    outside = {name: await step(backend, targets) for name, step in steps.outside()}
    async with transaction(backend.engine) as conn:
        # Only what was picked above and is still there: what the caches were cleared for.
        # (A memory added since is newer than this deletion; one deleted since is gone.)
        picked = set(targets.ids)
        rows = [r for r in await db.pick_for_deletion(conn, where) if r.id in picked]
        if scope == "memory" and not rows:
            raise NotFound("No such memory for this user.")
        targets = replace(targets, rows=rows)
        counts, destroyed = await _delete_rows(backend, conn, targets, whole, actor)
        counts.update(outside)
        receipt = DeletionReceipt(
            request_id=request_id.get() or uuid.uuid4().hex,
            scope=scope,
            tenant_id=tenant_id,
            user_id=user_id,
            memories=len(rows),
            counts=counts,
            history=history,
            deleted_at=at,
            key_destroyed=destroyed,
        )
        await _write_receipt(backend, conn, receipt, targets, actor)
        await webhooks.emit(conn, _erasure_events(receipt, targets))
    if scope == "tenant":
        data_keys.forget(backend.keys, tenant_id)
    DELETION_RECEIPTS.labels(scope).inc()
    return receipt


async def _delete_rows(
    backend: Backend, conn: AsyncConnection, targets: Targets, whole: str | None, actor: str
) -> tuple[dict[str, int], str | None]:
    """Every row the deletion takes in PostgreSQL, counted per store, and the tenant's data
    key's id when it was destroyed."""
    tenant_id, scope, ids = targets.tenant_id, targets.scope, targets.ids
    # A promotion's reason is the caller's words about what goes: they go too (read before
    # the facts that say which promotions stood on these memories go).
    reasons = await db.forget_audit_reasons(conn, tenant_id, whole, ids)
    counts = {name: await delete(conn, targets) for name, delete in steps.in_store()}
    counts["audit_reasons"] = reasons
    counts["memories"] = await db.delete_rows(conn, tenant_id, ids)
    history_of = targets.user_id if targets.whole_user else None
    if backend.settings.deletion_history == "purge":
        counts["memory_history"] = await db.purge_history(conn, tenant_id, ids, history_of)
    else:
        counts["memory_history"] = await db.tombstone_history(
            conn, tenant_id, targets.rows, history_of, actor
        )
    destroyed = None
    if scope == "tenant":
        counts.update(await _tenant_rest(conn, tenant_id))
        if backend.keys.per_tenant:
            # Last: the texts were opened with it (their cache entries went before).
            destroyed = await data_keys.destroy(backend.keys, conn, tenant_id)
            counts["tenant_key"] = int(destroyed is not None)
    elif scope == "user":
        counts["audit_queries"] = await db.forget_audit_queries(conn, tenant_id, targets.user_id)
    return counts, destroyed


async def _targets(
    backend: Backend,
    conn: AsyncConnection,
    tenant_id: str,
    where: MemoryCondition,
    scope: DeletionScope,
    user_id: str | None,
    whole: str | None,
) -> Targets:
    """What a deletion takes, with every text the caches may hold for it; a memory-scope
    deletion that finds nothing is NotFound."""
    rows = await db.pick_for_deletion(conn, where)
    if scope == "memory" and not rows:
        raise NotFound("No such memory for this user.")
    ids = [r.id for r in rows]
    return Targets(
        tenant_id,
        scope,
        user_id,
        rows,
        await _texts(backend, conn, tenant_id, rows),
        frozenset(await db.chunked(conn, tenant_id, ids)),
        derived=await _derived_texts(backend, conn, tenant_id, ids, whole),
    )


async def _derived_texts(
    backend: Backend,
    conn: AsyncConnection,
    tenant_id: str,
    memory_ids: list[uuid.UUID],
    user_id: str | None,
) -> list[tuple[str, str]]:
    """Claims and entity names derived from the memories (all of the user's, when erasing a
    user), by owner: texts the graph embedded, so the cache may hold them."""
    if not memory_ids and user_id is None:
        return []
    fact_rows, entity_rows = await graph_admin.derived_rows(conn, tenant_id, memory_ids, user_id)
    keyring = backend.keys.current(tenant_id)
    texts = []
    for f in fact_rows:
        with contextlib.suppress(KeyMismatch):  # unreadable: its entries go by owner only
            texts.append((f.user_id, sealed.open_claim(keyring, f)[0]))
    for e in entity_rows:
        with contextlib.suppress(KeyMismatch):
            opened = sealed.open_entity(keyring, e)
            texts.extend((e.user_id, name) for name in (opened.name, *opened.aliases))
    return texts


async def _tenant_rest(conn: AsyncConnection, tenant_id: str) -> dict[str, int]:
    """A tenant's erasure also takes what is not derived from one memory: its remaining
    history, its audit trail (the receipt is written after) and its API keys."""
    return {
        "memory_history_rest": await db.delete_tenant_rows(conn, memory_history, tenant_id),
        "audit_log": await db.delete_tenant_rows(conn, audit_log, tenant_id),
        "api_keys": await db.delete_api_keys(conn, tenant_id),
    }


def _erasure_events(receipt: DeletionReceipt, targets: Targets) -> list[webhooks.Event]:
    """What the deletion tells the tenant's webhooks, in its transaction: a user's or the
    tenant's erasure (with the receipt's id), or each memory deleted."""
    tenant_id = targets.tenant_id
    told = {
        "receipt_id": receipt.request_id,
        "memories": receipt.memories,
        "deleted_at": receipt.deleted_at.isoformat(),
    }
    if receipt.scope == "tenant":
        return [webhooks.Event(tenant_id, "tenant.erased", told)]
    if receipt.scope == "user" and targets.user_id is not None:
        data = {**told, "user_id": targets.user_id, "app_id": targets.app_id}
        return [webhooks.Event(tenant_id, "user.erased", data, targets.user_id, targets.app_id)]
    return [
        webhooks.Event(
            tenant_id,
            "memory.deleted",
            {"memory_id": str(row.id), "user_id": row.user_id, "reason": receipt.scope, **told},
            row.user_id,
        )
        for row in targets.rows
    ]


async def _write_receipt(
    backend: Backend,
    conn: AsyncConnection,
    receipt: DeletionReceipt,
    targets: Targets,
    actor: str,
) -> None:
    """The receipt goes into the audit in the deleting transaction: no receipt, no deletion.
    Written whatever the audit level, but ``off``, since it is the proof asked for."""
    if backend.audit.level == "off":
        return
    event = AuditEvent(
        tenant_id=targets.tenant_id,
        operation="delete",
        actor=actor,
        user_id=targets.user_id or (targets.rows[0].user_id if targets.rows else None),
        memory_ids=targets.ids[:100] if targets.scope == "memory" else [],
        result_count=receipt.memories,
        details={"receipt": receipt.model_dump(mode="json")},
        at=receipt.deleted_at,
    )
    await backend.audit.remember_settings(conn)
    await audit.insert_rows(conn, [backend.audit.row_for(event)])


async def erase_expired(backend: Backend, now: datetime, actor: str) -> int:
    """Delete every tenant's expired memories (db/erasure.py says which: the scheduled cleanup
    deletes the same), one receipt per tenant."""
    condition = expired_where(now)
    async with reading(backend.engine) as conn:
        tenants = sorted({r.tenant_id for r in await db.touched_per_user(conn, condition)})
    total = 0
    for tenant_id in tenants:
        receipt = await erase(
            backend,
            tenant_id,
            in_tenant(condition, tenant_id),
            scope="expired",
            user_id=None,
            actor=actor,
            now=now,
        )
        total += receipt.memories
    return total
