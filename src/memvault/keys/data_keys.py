"""Per-tenant data keys (``per_tenant_keys``): made on a tenant's first use, held in the
process's ``KeyringSource``, re-checked against their row every few seconds, re-wrapped by a
master-key rotation, destroyed to crypto-shred a tenant.

A tenant's data key is 32 random bytes sealed (AES-GCM) under the active master key with the
tenant's id as associated data. Everything of the tenant that is sealed or keyed (content,
content hashes, blind-index terms, graph name keys) uses its data key, so deleting the one
row leaves every copy of that content — in the database, a replica or a later backup — sealed
under a key nobody holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memvault.crypto.envelope import (
    KeyringSource,
    Sealed,
    new_tenant_key,
    unwrap_tenant_key,
    wrap_tenant_key,
)
from memvault.db import tenant_keys as db
from memvault.db.units import reading, transaction

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

# How long a held key is trusted before its row is read again: a shred in another process
# takes effect here within this many seconds (at once in the process that shreds).
RECHECK_S = 5.0


async def load(
    keys: KeyringSource,
    engine: AsyncEngine,
    tenant_ids: Iterable[str],
    conn: AsyncConnection | None = None,
) -> None:
    """Make sure ``keys.current(t)`` works for each tenant: load (or create) the keys not
    held or not checked lately. Runs in ``conn`` when given, else in its own transaction (in
    the caller's tenant scope: a tenant's scope sees only its own key row)."""
    if not keys.per_tenant:
        return
    todo = sorted({t for t in tenant_ids if keys.tenant_key(t, RECHECK_S) is None})
    if not todo:
        return
    if conn is not None:
        await _load(keys, conn, todo)
        return
    async with transaction(engine) as own:
        await _load(keys, own, todo)


async def _load(keys: KeyringSource, conn: AsyncConnection, tenant_ids: list[str]) -> None:
    master = keys.current()
    for tenant_id in tenant_ids:
        row = await db.get(conn, tenant_id)
        if row is None:
            key = new_tenant_key()
            wrapped = wrap_tenant_key(master, tenant_id, key)
            row = await db.create(
                conn,
                tenant_id,
                key_id=key.key_id,
                wrapped=wrapped.ciphertext,
                nonce=wrapped.nonce,
                master_key_id=wrapped.key_id,
            )
        held = keys.tenant_key(tenant_id, float("inf"))
        if held is None or held.key_id != row.key_id:
            held = unwrap_tenant_key(
                master, tenant_id, Sealed(row.wrapped, row.nonce, row.master_key_id)
            )
        keys.hold_tenant_key(tenant_id, held)


async def destroy(keys: KeyringSource, conn: AsyncConnection, tenant_id: str) -> str | None:
    """Delete the tenant's key row (in ``conn``'s transaction); answers the key's id, None
    when the tenant had none. Call ``forget`` once the transaction has committed."""
    return await db.destroy(conn, tenant_id)


def forget(keys: KeyringSource, tenant_id: str) -> None:
    keys.drop_tenant_key(tenant_id)


async def rewrap_all(keys: KeyringSource, engine: AsyncEngine, batch: int) -> int:
    """Re-wrap every tenant key still under an older master key under the active one (no
    content is re-sealed); answers how many. Run across tenants."""
    master = keys.current()
    total = 0
    while True:
        async with transaction(engine) as conn:
            rows = await db.claim_to_rewrap(conn, master.active.key_id, batch)
            for row in rows:
                key = unwrap_tenant_key(
                    master, row.tenant_id, Sealed(row.wrapped, row.nonce, row.master_key_id)
                )
                wrapped = wrap_tenant_key(master, row.tenant_id, key)
                await db.rewrap(
                    conn,
                    row.tenant_id,
                    wrapped=wrapped.ciphertext,
                    nonce=wrapped.nonce,
                    master_key_id=wrapped.key_id,
                )
        total += len(rows)
        if len(rows) < batch:
            break
    async with reading(engine) as conn:
        left = await db.count_under_other_masters(conn, master.active.key_id)
    if left:
        raise RuntimeError(f"{left} tenant keys stayed locked during rotation; run it again.")
    return total
