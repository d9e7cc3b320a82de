"""Sealing a cognitive row's secret fields: one JSON payload per row, bound to the table and
the row's primary key, so a payload copied to another row (or tenant) does not open."""

from __future__ import annotations

import json
from typing import Any

from memvault.crypto.envelope import KeyringSource, Sealed
from memvault.db.sealed_columns import payload_aad


def seal_payload(
    keys: KeyringSource, table: str, key: tuple[Any, ...], payload: Any
) -> dict[str, Any]:
    sealed = keys.current(str(key[0])).seal(
        json.dumps(payload, ensure_ascii=False), payload_aad(table, *key)
    )
    return {"ciphertext": sealed.ciphertext, "nonce": sealed.nonce, "key_id": sealed.key_id}


def open_payload(keys: KeyringSource, table: str, key: tuple[Any, ...], row: Any) -> Any:
    sealed = Sealed(row.ciphertext, row.nonce, row.key_id)
    return json.loads(keys.current(str(key[0])).open(sealed, payload_aad(table, *key)))
