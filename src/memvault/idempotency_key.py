"""The ``Idempotency-Key`` on the wire: its header, what a key may be, and what makes two
requests the same request. The server keeps the answers (``memvault.idempotency``); the HTTP
clients make a key per write and send it with every try of that write."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from memvault.errors import InvalidInput

HEADER = "Idempotency-Key"
# On an answer sent again: the first answer of the request this key named.
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_LENGTH = 255


def checked(key: str) -> str:
    if not 0 < len(key) <= MAX_LENGTH or not key.isascii() or not key.isprintable():
        raise InvalidInput(
            f"{HEADER} must be 1 to {MAX_LENGTH} printable ASCII characters "
            "(a UUID made for each write is a good key).",
            details={"field": HEADER},
        )
    return key


def fingerprint(method: str, operation: str, arguments: Any) -> bytes:
    """What makes two requests the same request: method, operation and what they asked (a
    JSON value, so key order and spacing do not count)."""
    asked = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{method.upper()} {operation}\n{asked}".encode()).digest()


__all__ = ["HEADER", "MAX_LENGTH", "REPLAYED_HEADER", "checked", "fingerprint"]
