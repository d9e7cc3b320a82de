"""Sealing a cognitive row's secret fields: one JSON payload per row, bound to the table and
the row's primary key, so a payload copied to another row (or tenant) does not open."""

from __future__ import annotations

import json
from typing import Any

from memvault.crypto import Keyring, KeyringSource, Sealed, associated_data


def bound_to(table: str, *key: object) -> bytes:
    return associated_data(table, *(str(part) for part in key))


def seal_payload(
    keys: KeyringSource, table: str, key: tuple[Any, ...], payload: Any
) -> dict[str, Any]:
    sealed = keys.current(str(key[0])).seal(
        json.dumps(payload, ensure_ascii=False), bound_to(table, *key)
    )
    return {"ciphertext": sealed.ciphertext, "nonce": sealed.nonce, "key_id": sealed.key_id}


def open_payload(keys: KeyringSource, table: str, key: tuple[Any, ...], row: Any) -> Any:
    sealed = Sealed(row.ciphertext, row.nonce, row.key_id)
    return json.loads(keys.current(str(key[0])).open(sealed, bound_to(table, *key)))


def reseal_payload(
    keyring: Keyring, table: str, key: tuple[Any, ...], ciphertext: bytes, nonce: bytes, key_id: str
) -> dict[str, Any]:
    """The same payload sealed under the active key (key rotation)."""
    aad = bound_to(table, *key)
    sealed = keyring.seal(keyring.open(Sealed(ciphertext, nonce, key_id), aad), aad)
    return {"ciphertext": sealed.ciphertext, "nonce": sealed.nonce, "key_id": sealed.key_id}
