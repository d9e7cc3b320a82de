"""Provable deletion: a memory, a user or a tenant goes from every store that holds anything
derived from it, in one transaction where it lives in PostgreSQL, and the caller gets a
receipt (counts per store, time, request id) that is also written to the audit log.

What a deletion covers is a registry, so the stores added later register here instead of
editing this file:

* ``DERIVED`` — rows in PostgreSQL derived from the memories (chunks, postings, jobs, decay
  records; the graph's facts and entities, the cognitive tables) — deleted in the deleting
  transaction, before the memory rows;
* ``OUTSIDE`` — stores outside that transaction (the embedding cache, Redis working memory) —
  cleared before it commits, so the receipt counts them.

History follows ``deletion_history``: ``tombstone`` keeps who did what and when without any
content; ``purge`` removes the rows.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from memvault import tenant_keys
from memvault.db import audit, graph_admin
from memvault.db import lifecycle as db
from memvault.db.records import DoomedMemory
from memvault.db.tables import audit_log, conversation_turns, memories, memory_history
from memvault.embedding.chunking import chunk, clean
from memvault.errors import KeyMismatch, NotFound, StoreUnavailable
from memvault.graph import sealed
from memvault.lifecycle.audit import AuditEvent
from memvault.lifecycle.models import DeletionReceipt, DeletionScope
from memvault.logs import request_id
from memvault.metrics import DELETION_RECEIPTS
from memvault.sealing import open_content

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Targets:
    """What one deletion takes: the tenant, the user (for user scope), the memory rows."""

    tenant_id: str
    scope: DeletionScope
    user_id: str | None
    rows: Sequence[DoomedMemory]
    # Every version of each memory's text (current and in history), opened: for the caches.
    texts: dict[uuid.UUID, list[str]]
    # Memories whose vectors came in several chunks (each chunk's text was cached apart).
    chunked: frozenset[uuid.UUID] = frozenset()
    # A user-scope deletion limited to one app (None: every app of the user).
    app_id: str | None = None
    # A user erased as a whole (not one app's memories): what is theirs beyond memories goes.
    whole_user: bool = False
    # Texts derived from the memories (fact claims, entity names), by owner: the embedding
    # cache may hold their vectors too.
    derived: Sequence[tuple[str, str]] = ()
    # A conversation-scope deletion's conversation (its rows beyond the turns go too).
    conversation_id: str | None = None

    @property
    def ids(self) -> list[uuid.UUID]:
        return [r.id for r in self.rows]


InStore = Callable[[AsyncConnection, Targets], Awaitable[int]]
Outside = Callable[["Backend", Targets], Awaitable[int]]


def _derived(table: str) -> InStore:
    async def delete(conn: AsyncConnection, targets: Targets) -> int:
        return await db.delete_derived(conn, table, targets.tenant_id, targets.ids)

    return delete


async def _decay_records(conn: AsyncConnection, targets: Targets) -> int:
    return await db.delete_decay_changes(conn, targets.tenant_id, targets.ids)


async def _graph_rows(conn: AsyncConnection, targets: Targets) -> int:
    """Graph rows the owner has beyond what the memories derived (facts stated directly).
    A memory's own facts, mentions and orphaned entities go with it by the graph's triggers."""
    if targets.scope == "tenant":
        return await graph_admin.delete_tenant(conn, targets.tenant_id)
    if targets.scope == "user" and targets.user_id is not None:
        return await graph_admin.delete_owner(
            conn, targets.tenant_id, targets.user_id, targets.app_id
        )
    return 0


DERIVED: dict[str, InStore] = {
    "memory_chunks": _derived("memory_chunks"),
    "memory_terms": _derived("memory_terms"),
    "embedding_jobs": _derived("embedding_jobs"),
    "decay_changes": _decay_records,
    "graph": _graph_rows,
}


def register_derived(name: str, delete: InStore) -> None:
    """A store of rows derived from memories (graph facts, cognitive tables) joins deletion."""
    DERIVED[name] = delete


async def _embedding_cache(backend: Backend, targets: Targets) -> int:
    """The entries of the memories' texts, of what was derived from them, and (a user or a
    tenant erased) every entry made for its users: their queries too."""
    cache = backend.embeddings.cache
    if cache is None:
        return 0
    keys = {
        k
        for row in targets.rows
        for text in targets.texts[row.id]
        for k in _cache_keys(backend, row, text, chunks=row.id in targets.chunked)
    }
    for user_id, text in targets.derived:
        keys.update(_text_keys(backend, targets.tenant_id, user_id, [text], None))
    try:
        forgotten = await cache.forget_many(sorted(keys))
        for tag in _owner_tags(backend, targets):
            forgotten += await cache.forget_owned(tag)
        return forgotten
    except Exception as exc:  # redis raises many unrelated types; any of them fails this
        raise StoreUnavailable(
            "The embedding cache could not be cleared, so nothing was deleted; try again.",
            details={"store": "embedding_cache"},
        ) from exc


OUTSIDE: dict[str, Outside] = {"embedding_cache": _embedding_cache}


def register_outside(name: str, delete: Outside) -> None:
    """A store outside PostgreSQL (Redis working memory) joins deletion."""
    OUTSIDE[name] = delete


def _owner_tags(backend: Backend, targets: Targets) -> list[bytes]:
    """The tags an erasure forgets every entry under: the user's, or the tenant's."""
    if targets.scope == "user" and targets.whole_user and targets.user_id is not None:
        return backend.embeddings.owner_tags((targets.tenant_id, targets.user_id))
    if targets.scope == "tenant":
        return backend.embeddings.tenant_tags(targets.tenant_id)
    return []


def _text_keys(
    backend: Backend, tenant_id: str, user_id: str, pieces: Sequence[str], model: str | None
) -> set[bytes]:
    """Keys of these texts for every model that may have embedded them, made by the user's
    calls or by the worker's batches (no owner), under every secret held."""
    limit = backend.settings.embedding_max_chars
    service = backend.embeddings
    models = {service.primary.model_id, *(f.model_id for f in service.fallbacks)}
    if model:
        models.add(model)
    texts = sorted({*pieces, *(clean(p, limit) for p in pieces)})
    return {
        k
        for m in models
        for owner in (None, (tenant_id, user_id))
        for k in service.cache_keys(m, texts, owner)
    }


def _cache_keys(backend: Backend, row: DoomedMemory, text: str, *, chunks: bool) -> set[bytes]:
    """Every key the embedding cache may hold this text's vectors under: the whole text and,
    for a memory embedded in chunks, each chunk the worker makes (only then is the tokenizer
    needed: a delete never loads the model for nothing), for each model that may have
    embedded it."""
    settings, primary = backend.settings, backend.embeddings.primary
    whole = clean(text, settings.embedding_max_chars)
    pieces = {whole}
    if chunks:
        window = min(settings.chunk_tokens, primary.max_tokens)
        pieces.update(chunk(whole, primary.tokenizer(), window, settings.chunk_overlap))
    return _text_keys(backend, row.tenant_id, row.user_id, sorted(pieces), row.embedding_model)


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
    where: sa.ColumnElement[bool],
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
    async with backend.engine.begin() as conn:
        rows = await db.pick_for_deletion(conn, where)
        if scope == "memory" and not rows:
            raise NotFound("No such memory for this user.")
        texts = await _texts(backend, conn, tenant_id, rows)
        chunked = frozenset(await db.chunked(conn, tenant_id, [r.id for r in rows]))
        whole = user_id if scope == "user" and whole_user else None
        derived = await _derived_texts(backend, conn, tenant_id, [r.id for r in rows], whole)
        targets = Targets(
            tenant_id,
            scope,
            user_id,
            rows,
            texts,
            chunked,
            app_id=app_id,
            whole_user=whole_user,
            derived=derived,
            conversation_id=conversation_id,
        )
        # A promotion's reason is the caller's words about what goes: they go too (read before
        # the facts that say which promotions stood on these memories go).
        reasons = await db.forget_audit_reasons(conn, tenant_id, whole, targets.ids)
        counts = {name: await delete(conn, targets) for name, delete in DERIVED.items()}
        counts["audit_reasons"] = reasons
        counts["memories"] = await db.delete_rows(conn, tenant_id, targets.ids)
        history_of = user_id if whole_user else None
        if history == "purge":
            counts["memory_history"] = await db.purge_history(
                conn, tenant_id, targets.ids, history_of
            )
        else:
            counts["memory_history"] = await db.tombstone_history(
                conn, tenant_id, rows, history_of, actor
            )
        destroyed = None
        if scope == "tenant":
            counts.update(await _tenant_rest(conn, tenant_id))
            if backend.keys.per_tenant:
                # Last: the texts above were opened with it (their cache entries go below).
                destroyed = await tenant_keys.destroy(backend.keys, conn, tenant_id)
                counts["tenant_key"] = int(destroyed is not None)
        elif scope == "user":
            counts["audit_queries"] = await db.forget_audit_queries(conn, tenant_id, user_id)
        for name, delete_outside in OUTSIDE.items():
            counts[name] = await delete_outside(backend, targets)
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
    if scope == "tenant":
        tenant_keys.forget(backend.keys, tenant_id)
    DELETION_RECEIPTS.labels(scope).inc()
    return receipt


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


def memory_where(tenant_id: str, memory_id: uuid.UUID, user_id: str) -> sa.ColumnElement[bool]:
    c = memories.c
    return sa.and_(c.tenant_id == tenant_id, c.id == memory_id, c.user_id == user_id)


def conversation_where(
    tenant_id: str, user_id: str, conversation_id: str
) -> sa.ColumnElement[bool]:
    """The memories that are this conversation's turns."""
    t = conversation_turns.c
    turns = sa.select(t.memory_id).where(
        t.tenant_id == tenant_id, t.user_id == user_id, t.conversation_id == conversation_id
    )
    c = memories.c
    return sa.and_(c.tenant_id == tenant_id, c.user_id == user_id, c.id.in_(turns))


def user_where(tenant_id: str, user_id: str, app_id: str | None) -> sa.ColumnElement[bool]:
    c = memories.c
    where = [c.tenant_id == tenant_id, c.user_id == user_id]
    if app_id is not None:
        where.append(c.app_id == app_id)
    return sa.and_(*where)


def tenant_where(tenant_id: str) -> sa.ColumnElement[bool]:
    return memories.c.tenant_id == tenant_id


def memories_where(
    tenant_id: str, user_id: str, memory_ids: Sequence[uuid.UUID]
) -> sa.ColumnElement[bool]:
    c = memories.c
    return sa.and_(c.tenant_id == tenant_id, c.user_id == user_id, c.id.in_(list(memory_ids)))


async def erase_expired(backend: Backend, now: datetime, actor: str) -> int:
    """Delete every tenant's memories past ``expires_at`` (one receipt per tenant)."""
    condition = sa.and_(memories.c.expires_at.is_not(None), memories.c.expires_at <= now)
    async with backend.engine.connect() as conn:
        tenants = sorted({r.tenant_id for r in await db.touched_per_user(conn, condition)})
    total = 0
    for tenant_id in tenants:
        receipt = await erase(
            backend,
            tenant_id,
            sa.and_(memories.c.tenant_id == tenant_id, condition),
            scope="expired",
            user_id=None,
            actor=actor,
            now=now,
        )
        total += receipt.memories
    return total
