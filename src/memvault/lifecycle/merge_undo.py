"""Undoing a health merge, as a whole and once.

A merge (``lifecycle.health``) writes, in the transaction that folds the clusters, one undo
record sealed under the tenant's key: every copy it is about to erase as an export line
(``lifecycle.portable``: content, tags, metadata, dates, importance, expiry, source, history,
vectors) with its history rows' ids and its source links, and each kept memory's values before
the merge with the links the merge gave it. The undo puts every copy back under its own id
(vectors restored, or an embedding job where the active model had none), its history rows as
they were, its links to the facts, relations and entities that still stand; takes back the
links the kept memories gained; and puts the kept memories' merged values back through the
normal update (so their history records the undo). The record then keeps only when it was
undone; it expires after ``merge_undo_days`` (the scheduled cleanup takes it) and goes with
its user.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from memvault.cognitive.payloads import open_payload, seal_payload
from memvault.db import curated as curated_db
from memvault.db import lifecycle as lifecycle_db
from memvault.db import merge_undos as db
from memvault.db import store, webhooks
from memvault.db.curated import SourceLink
from memvault.db.portable import TABLES, owners
from memvault.db.tables import merge_undos
from memvault.db.units import transaction
from memvault.errors import Conflict, NotFound
from memvault.lifecycle import portable
from memvault.lifecycle.portable_format import MemoryLine
from memvault.lifecycle.reports import MergeUndone
from memvault.scheduling import RunContext

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend
    from memvault.db.records import MemoryRow


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Link(_Strict):
    table: str
    target: UUID
    memory_id: UUID


class Before(_Strict):
    """A kept memory's columns the merge changed (``merging.plan``'s values), as they were."""

    tags: list[str] = []
    metadata: dict[str, Any] = {}
    occurred_at: datetime | None = None
    created_at: datetime | None = None
    importance: int | None = None
    expires_at: datetime | None = None


class Kept(_Strict):
    id: UUID
    before: Before
    gained: list[Link]


class _Copy(_Strict):
    line: MemoryLine
    history_ids: list[int]


class _Record(_Strict):
    copies: list[_Copy]
    links: list[Link]
    kept: list[Kept]


def kept_before(old: MemoryRow, values: dict[str, Any], gained: list[SourceLink]) -> Kept:
    """What the undo puts back on a kept memory: the columns ``values`` change, as ``old``
    has them, and the links it gained."""
    before = Before(**{name: getattr(old, name) for name in values})
    return Kept(id=old.id, before=before, gained=[_link(g) for g in gained])


def _link(link: SourceLink) -> Link:
    return Link(table=link.table, target=link.target, memory_id=link.memory_id)


def _links(links: list[Link]) -> list[SourceLink]:
    return [SourceLink(link.table, link.target, link.memory_id) for link in links]


async def record(
    backend: Backend,
    conn: AsyncConnection,
    owner: tuple[str, str],
    merge_id: UUID,
    kept: list[Kept],
    rest: list[UUID],
    now: datetime,
) -> datetime:
    """In the merge's transaction, before the copies go: the undo record; until when it
    holds."""
    tenant_id, user_id = owner
    copies = await portable.memory_lines(backend, conn, tenant_id, rest)
    links = await curated_db.source_links(conn, tenant_id, rest)
    payload = _Record(
        copies=[_Copy(line=line, history_ids=ids) for line, ids in copies],
        links=[_link(link) for link in links],
        kept=kept,
    ).model_dump(mode="json", exclude_unset=True)
    until = now + timedelta(days=backend.settings.merge_undo_days)
    sealed = seal_payload(backend.keys, merge_undos.name, (tenant_id, merge_id), payload)
    values = {"tenant_id": tenant_id, "id": merge_id, "user_id": user_id, "expires_at": until}
    await db.insert(conn, {**values, **sealed})
    return until


async def undo(
    backend: Backend,
    conn: AsyncConnection,
    owner: tuple[str, str],
    merge_id: UUID,
    actor: str,
    now: datetime,
) -> MergeUndone:
    """In the caller's transaction: the merge undone (see the module's notes)."""
    tenant_id, user_id = owner
    row = await db.claim(conn, tenant_id, merge_id, user_id, now)
    if row is None:
        days = f"{backend.settings.merge_undo_days:g}"
        raise NotFound(
            f"No merge {merge_id} of this user to undo: it was never made, is another user's, "
            f"or is older than {days} days (MEMVAULT_MERGE_UNDO_DAYS).",
            details={"merge_id": str(merge_id)},
        )
    if row.undone_at is not None:
        raise Conflict(
            f"This merge was undone already, at {row.undone_at.isoformat()}.",
            details={"merge_id": str(merge_id)},
        )
    key = (tenant_id, merge_id)
    found = _Record.model_validate(open_payload(backend.keys, merge_undos.name, key, row))
    # A copy whose id is held again (brought back by an import) is left as it is now.
    held = await owners(conn, TABLES["memory"], tenant_id, [c.line.id for c in found.copies])
    back = [(c.line, c.history_ids) for c in found.copies if c.line.id not in held]
    ids = [line.id for line, _ in back]
    # Their history as the deletion left it (tombstones, the DELETE row) gives way to theirs.
    await lifecycle_db.purge_history(conn, tenant_id, ids, None)
    await portable.put_back(backend, conn, owner, back, actor)
    mine = [link for link in found.links if link.memory_id in set(ids)]
    links = await curated_db.restore_links(conn, tenant_id, user_id, _links(mine))
    reverted = [k.id for k in found.kept if await _revert(conn, owner, k, actor)]
    await webhooks.emit(conn, await _created(conn, owner, ids))
    emptied = seal_payload(backend.keys, merge_undos.name, key, {})
    await db.mark_undone(conn, tenant_id, merge_id, emptied, now)
    backend.analyzer.wrote(len(ids))
    return MergeUndone(merge_id=merge_id, restored=ids, reverted=reverted, links=links)


async def _revert(conn: AsyncConnection, owner: tuple[str, str], kept: Kept, actor: str) -> bool:
    """The kept memory's merged values and gained links back as they were (after the copies'
    links are back, so no fact is left without a source in between); a kept memory deleted
    since has nothing to put back."""
    tenant_id, user_id = owner
    await curated_db.drop_links(conn, tenant_id, _links(kept.gained))
    old = await store.fetch_memory(conn, tenant_id, kept.id, user_id, lock=True)
    values = kept.before.model_dump(exclude_unset=True)
    if old is None or not values:
        return False
    await store.update_memory(conn, old, values, actor)
    return True


async def _created(
    conn: AsyncConnection, owner: tuple[str, str], ids: list[UUID]
) -> list[webhooks.Event]:
    """Each copy back is a memory created again, as the webhooks tell it."""
    tenant_id, user_id = owner
    events = []
    for ident in ids:
        row = await store.fetch_memory(conn, tenant_id, ident, user_id)
        if row is not None:
            data = webhooks.memory_data(row)
            events.append(webhooks.Event(tenant_id, "memory.created", data, user_id, row.app_id))
    return events


async def purge_expired(ctx: RunContext) -> dict[str, int]:
    """Undo records past ``merge_undo_days`` (the scheduled cleanup's step): their merges stay."""
    async with transaction(ctx.backend.engine) as conn:
        if ctx.dry_run:
            return {"would_purge": await db.count_expired(conn, ctx.now)}
        return {"purged": await db.purge_expired(conn, ctx.now)}
