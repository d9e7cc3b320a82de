"""Encryption-key rotation without downtime.

A new key becomes active first (every process picks it up within a second and seals new writes
with it); then rows still sealed under older keys are re-sealed in small batches, each its own
short transaction. Rows a writer holds are skipped and taken in a later pass, so nothing waits
on the rotation and no row is lost. Old keys are forgotten only once no row needs them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

from memvault.backend import Backend
from memvault.crypto.envelope import Keyring, add_key_to_file, forget_keys_in_file
from memvault.db import sealed_columns, store
from memvault.db.keysets import StaleKeys
from memvault.db.sealed_columns import SEALED, SealedTable
from memvault.db.tenancy import across_tenants
from memvault.db.units import reading, transaction
from memvault.keys import data_keys
from memvault.models import RotationReport

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
    """Re-seal every row under a stale key, batch by batch, table by table, until none is
    left; how many memories and history rows moved."""
    moved: Counter[str] = Counter()
    idle = 0
    while True:
        batch = {entry.name: await _reseal(backend, entry, stale) for entry in SEALED}
        moved.update(batch)
        done = moved["memories"], moved["memory_history"]
        if any(batch.values()):
            log.info("rotation: %d memories, %d history rows re-sealed so far", *done)
            continue
        async with reading(backend.engine) as conn:
            left = await sealed_columns.count_stale(conn, stale)
        if left == 0:
            return done
        idle += 1  # the rows left are locked by writers right now; they free up in a moment
        if idle > MAX_IDLE_PASSES:
            raise RuntimeError(f"{left} rows stayed locked during rotation; run it again.")
        await asyncio.sleep(0.1)


async def _reseal(backend: Backend, entry: SealedTable, stale: StaleKeys) -> int:
    """One batch of one table, in its own short transaction, each row under its tenant's
    keyring (the master one, or the tenant's data key with per-tenant keys)."""
    async with transaction(backend.engine) as conn:
        rows = await sealed_columns.claim(conn, entry, stale, BATCH)
        if not entry.under_master:
            await data_keys.load(backend.keys, backend.engine, {r.tenant_id for r in rows}, conn)
        await sealed_columns.reseal(conn, entry, backend.keys, rows, stale)
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
