"""Key rotation for the graph: sealed columns re-sealed under the active key, and the keyed
hashes and blind terms made again under it, row by row in small batches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault import data_keys
from memvault.crypto import Keyring
from memvault.db import graph as graph_db
from memvault.db import graph_admin
from memvault.db.graph import EntityRow, FactRow, RelationRow
from memvault.db.keysets import StaleKeys
from memvault.db.units import transaction
from memvault.graph import sealed

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend


async def reseal_graph(backend: Backend, stale: StaleKeys, batch: int) -> int:
    """One batch of each sealed graph table; how many rows moved (each under its tenant's
    keyring: the master one, or the tenant's data key with per-tenant keys)."""
    moved = 0
    for table in graph_admin.SEALED_TABLES:
        async with transaction(backend.engine) as conn:
            rows = await graph_admin.claim_to_reseal(conn, table, stale, batch)
            await data_keys.load(backend.keys, backend.engine, {r.tenant_id for r in rows}, conn)
            for row in rows:
                await _reseal(conn, backend.keys.current(row.tenant_id), row)
            moved += len(rows)
    return moved


async def _reseal(conn: AsyncConnection, keyring: Keyring, row: Any) -> None:
    if isinstance(row, EntityRow):
        opened = sealed.open_entity(keyring, row)
        values = sealed.entity_columns(
            keyring, row.tenant_id, row.id, opened.name, opened.aliases, opened.description
        )
        if row.properties.get("self"):
            values["name_key"] = sealed.self_key(keyring)
        await graph_admin.reseal(conn, "entities", row.tenant_id, row.id, values)
        terms = sealed.entity_terms(keyring, opened.name, opened.aliases)
        await graph_db.replace_terms(conn, row.tenant_id, "entity", {row.id: (row.user_id, terms)})
    elif isinstance(row, FactRow):
        claim, value = sealed.open_claim(keyring, row)
        values = sealed.fact_columns(keyring, row.tenant_id, row.id, claim, value)
        await graph_admin.reseal(conn, "facts", row.tenant_id, row.id, values)
        terms = sealed.text_terms(keyring, claim)
        await graph_db.replace_terms(conn, row.tenant_id, "fact", {row.id: (row.user_id, terms)})
    elif isinstance(row, RelationRow):
        properties = sealed.open_relation_properties(keyring, row)
        values = sealed.relation_columns(keyring, row.tenant_id, row.id, properties)
        await graph_admin.reseal(conn, "relations", row.tenant_id, row.id, values)
