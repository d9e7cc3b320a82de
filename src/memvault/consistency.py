"""The consistency token: read-your-writes across API processes, on the wire.

With ``MEMVAULT_DATABASE_READ_URL`` set, an answer to a request that used the primary (a write,
or a read such as ``wait=true``'s wait) carries ``Memvault-Written-Lsn``: the primary's WAL
position once the request was done, as PostgreSQL writes it (``16/B374D848``). A request that
carries ``Memvault-Read-After: <that position>`` reads (search, list, ``remember()``) on a
replica only once the replica has replayed past it, whichever API process answers; else it
waits up to ``MEMVAULT_DATABASE_READ_OWN_WRITES_WAIT_S`` and reads the primary
(``db/replica.py``). ``MemoryClient`` keeps the highest position it was given and sends it on
every request. A malformed ``Memvault-Read-After`` is refused (422, ``invalid_input``), with a
read URL or without: a caller that sends one expects it to hold.

This module is the format alone (names, parsing): the HTTP client imports it, so it loads
nothing of the store.
"""

from __future__ import annotations

import re

from memvault.errors import InvalidInput

WRITTEN_HEADER = "Memvault-Written-Lsn"
READ_AFTER_HEADER = "Memvault-Read-After"
# Two 32-bit halves in hex, as pg_lsn is written.
_POSITION = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")


def position(text: str) -> int:
    """``'16/B374D848'`` as one number, so positions compare; anything else is InvalidInput."""
    found = _POSITION.fullmatch(text.strip())
    if found is None:
        raise InvalidInput(
            f"{READ_AFTER_HEADER} must be a WAL position as the server gave it in "
            f"{WRITTEN_HEADER}, e.g. 16/B374D848.",
            details={"field": READ_AFTER_HEADER},
        )
    return (int(found[1], 16) << 32) | int(found[2], 16)


def position_text(value: int) -> str:
    """A position as PostgreSQL writes it."""
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


__all__ = ["READ_AFTER_HEADER", "WRITTEN_HEADER", "position", "position_text"]
