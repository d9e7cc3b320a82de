"""Encryption-key rotation without downtime.

A new key becomes active first (every process picks it up within a second and seals new writes
with it); then rows still sealed under older keys are re-sealed in small batches, each its own
short transaction. Rows a writer holds are skipped and taken in a later pass, so nothing waits
on the rotation and no row is lost. Old keys are forgotten only once no row needs them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from memvault import data_keys
from memvault.backend import Backend
from memvault.cognitive.payloads import reseal_payload
from memvault.crypto import (
    Keyring,
    KeyringSource,
    Sealed,
    add_key_to_file,
    associated_data,
    forget_keys_in_file,
)
from memvault.db import audit, cognitive, keywords, store
from memvault.db.keysets import StaleKeys
from memvault.db.tenancy import across_tenants
from memvault.db.units import reading, transaction
from memvault.graph.rotate import reseal_graph
from memvault.language.terms import blind_terms
from memvault.lifecycle.audit import query_aad
from memvault.models import RotationReport

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

log = logging.getLogger(__name__)
BATCH = 500
MAX_IDLE_PASSES = 50


@across_tenants
async def rotate(backend: Backend, *, reload_grace_s: float) -> RotationReport:
    if backend.key_file is not None:
        await asyncio.to_thread(add_key_to_file, backend.key_file)
        backend.keys.refresh()
        # Other processes re-read the key file at most a second late; wait them out so no new
        # row is sealed with the old key after we start sweeping.
        await asyncio.sleep(reload_grace_s)
    master = backend.keys.current()
    async with transaction(backend.engine) as conn:
        await store.register_key(conn, master.active.key_id)
        registered = await store.registered_key_ids(conn)
    rewrapped = 0
    stale = StaleKeys(master.active.key_id)
    if backend.keys.per_tenant:
        # Tenant data keys move to the new master key by re-wrapping (no content re-sealed);
        # rows still under a master key (written before per-tenant keys were on) move to
        # their tenant's data key.
        rewrapped = await data_keys.rewrap_all(backend.keys, backend.engine, BATCH)
        stale = StaleKeys(master.active.key_id, tuple(sorted(master.key_ids | registered)))
    memories_done, history_done = await _sweep(backend, stale)
    backend.analyzer.wrote(memories_done)  # every moved memory's postings were rewritten
    retired = await _forget_retired(backend, master)
    return RotationReport(
        active_key_id=master.active.key_id,
        memories_reencrypted=memories_done,
        history_reencrypted=history_done,
        retired_key_ids=retired,
        tenant_keys_rewrapped=rewrapped,
    )


async def _sweep(backend: Backend, stale: StaleKeys) -> tuple[int, int]:
    """Re-seal every row under a stale key, batch by batch, until none is left."""
    memories_done = history_done = idle = 0
    while True:
        moved_m = await _reseal_memories(backend, stale)
        moved_h = await _reseal_history(backend, stale)
        moved_a = await _reseal_audit_queries(backend, stale)
        moved_c = await _reseal_cognitive(backend, stale)
        moved_g = await reseal_graph(backend, stale, BATCH)
        memories_done, history_done = memories_done + moved_m, history_done + moved_h
        if moved_m or moved_h or moved_a or moved_c or moved_g:
            log.info(
                "rotation: %d memories, %d history rows re-sealed so far",
                memories_done,
                history_done,
            )
            continue
        async with reading(backend.engine) as conn:
            left = await store.count_sealed_under_other_keys(conn, stale)
        if left == 0:
            return memories_done, history_done
        idle += 1  # the rows left are locked by writers right now; they free up in a moment
        if idle > MAX_IDLE_PASSES:
            raise RuntimeError(f"{left} rows stayed locked during rotation; run it again.")
        await asyncio.sleep(0.1)


async def _keyrings(backend: Backend, conn: AsyncConnection, tenants: set[str]) -> KeyringSource:
    """The keys to re-seal these tenants' rows with (their data keys loaded, if per tenant)."""
    await data_keys.load(backend.keys, backend.engine, tenants, conn)
    return backend.keys


def _reseal(
    keyring: Keyring, tenant_id: str, memory_id: Any, ciphertext: bytes, nonce: bytes, key_id: str
) -> tuple[str, Sealed]:
    aad = associated_data(tenant_id, str(memory_id))
    plaintext = keyring.open(Sealed(ciphertext, nonce, key_id), aad)
    return plaintext, keyring.seal(plaintext, aad)


async def _reseal_memories(backend: Backend, stale: StaleKeys) -> int:
    async with transaction(backend.engine) as conn:
        rows = await store.claim_memories_to_reseal(conn, stale, BATCH)
        keys = await _keyrings(backend, conn, {r.tenant_id for r in rows})
        postings: dict[str, dict[Any, tuple[str, dict[int, int], int]]] = {}
        for row in rows:
            keyring = keys.current(row.tenant_id)
            plaintext, sealed = _reseal(
                keyring, row.tenant_id, row.id, row.ciphertext, row.nonce, row.key_id
            )
            await store.reseal_memory(
                conn,
                row.tenant_id,
                row.id,
                {
                    "ciphertext": sealed.ciphertext,
                    "nonce": sealed.nonce,
                    "key_id": sealed.key_id,
                    "content_hash": keyring.content_hash(plaintext),
                },
            )
            # The blind index is keyed too: its terms move to the new key with the text.
            postings.setdefault(row.tenant_id, {})[row.id] = (
                row.user_id,
                *blind_terms(keyring, plaintext),
            )
        for tenant_id, batch in postings.items():
            await keywords.replace_terms(conn, tenant_id, batch)
    return len(rows)


async def _reseal_history(backend: Backend, stale: StaleKeys) -> int:
    async with transaction(backend.engine) as conn:
        rows = await store.claim_history_to_reseal(conn, stale, BATCH)
        keys = await _keyrings(backend, conn, {r.tenant_id for r in rows})
        for row in rows:
            values: dict[str, Any] = {}
            for side in ("old", "new"):
                key_id = getattr(row, f"{side}_key_id")
                if not stale.holds(key_id):
                    continue
                _, sealed = _reseal(
                    keys.current(row.tenant_id),
                    row.tenant_id,
                    row.memory_id,
                    getattr(row, f"{side}_ciphertext"),
                    getattr(row, f"{side}_nonce"),
                    key_id,
                )
                values.update(
                    {
                        f"{side}_ciphertext": sealed.ciphertext,
                        f"{side}_nonce": sealed.nonce,
                        f"{side}_key_id": sealed.key_id,
                    }
                )
            await store.reseal_history(conn, row.tenant_id, row.id, values)
    return len(rows)


async def _reseal_audit_queries(backend: Backend, stale: StaleKeys) -> int:
    """The verbose audit level's sealed query texts (bound to the tenant and audit row id)."""
    async with transaction(backend.engine) as conn:
        rows = await audit.claim_queries_to_reseal(conn, stale, BATCH)
        keys = await _keyrings(backend, conn, {r.tenant_id for r in rows})
        for row in rows:
            keyring = keys.current(row.tenant_id)
            aad = query_aad(row.tenant_id, row.id)
            text = keyring.open(
                Sealed(row.query_ciphertext, row.query_nonce, row.query_key_id), aad
            )
            sealed = keyring.seal(text, aad)
            await audit.reseal_query(conn, row, sealed.ciphertext, sealed.nonce, sealed.key_id)
    return len(rows)


async def _reseal_cognitive(backend: Backend, stale: StaleKeys) -> int:
    """Conversations, working memory, tool use, strategies, goals, profiles and merge undo
    records: one sealed payload per row, bound to its table and primary key."""
    async with transaction(backend.engine) as conn:
        rows = await cognitive.claim_sealed_to_reseal(conn, stale, BATCH)
        keys = await _keyrings(backend, conn, {r.key[0] for r in rows})
        for row in rows:
            values = reseal_payload(
                keys.current(row.key[0]), row.table, row.key, row.ciphertext, row.nonce, row.key_id
            )
            await cognitive.reseal(conn, row, values)
    return len(rows)


async def _forget_retired(backend: Backend, keyring: Keyring) -> list[str]:
    async with transaction(backend.engine) as conn:
        retired = sorted(await store.registered_key_ids(conn) - {keyring.active.key_id})
        if retired:
            await store.unregister_keys(conn, retired)
    if backend.key_file is not None:
        await asyncio.to_thread(forget_keys_in_file, backend.key_file, retired)
        backend.keys.refresh()
    return retired
