"""Sealing memory content for its row: the associated data is always (tenant, memory id)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from memvault import jsonvalues
from memvault.crypto.envelope import KeyringSource, Sealed
from memvault.db.records import MemoryRow
from memvault.db.sealed_columns import memory_aad
from memvault.models import MemoryRecord


def seal_content(
    keys: KeyringSource, tenant_id: str, memory_id: UUID, content: str
) -> dict[str, Any]:
    """Column values for a memory's content: ciphertext, nonce, key id and content hash."""
    keyring = keys.current(tenant_id)
    sealed = keyring.seal(content, memory_aad(tenant_id, memory_id))
    return {
        "ciphertext": sealed.ciphertext,
        "nonce": sealed.nonce,
        "key_id": sealed.key_id,
        "content_hash": keyring.content_hash(content),
    }


def open_content(
    keys: KeyringSource,
    tenant_id: str,
    memory_id: UUID,
    ciphertext: bytes,
    nonce: bytes,
    key_id: str,
) -> str:
    return keys.current(tenant_id).open(
        Sealed(ciphertext, nonce, key_id), memory_aad(tenant_id, memory_id)
    )


def to_record(keys: KeyringSource, row: MemoryRow) -> MemoryRecord:
    """A memories row, decrypted, as the caller sees it."""
    content = open_content(keys, row.tenant_id, row.id, row.ciphertext, row.nonce, row.key_id)
    fields = {name: getattr(row, name) for name in MemoryRecord.model_fields if name != "content"}
    fields["metadata"] = jsonvalues.bounded(fields["metadata"])
    return MemoryRecord(content=content, **fields)
