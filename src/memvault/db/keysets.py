"""Which key ids a rotation moves rows off: with one key for every tenant, every id but the
active key; with per-tenant keys, only the master keys' ids (a row under its tenant's data
key is where it belongs, and a master rotation only re-wraps the data keys)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa


@dataclass(frozen=True)
class StaleKeys:
    active: str
    # Per-tenant keys: exactly these ids are stale (the master keys, old and active).
    only: tuple[str, ...] | None = None

    def where(self, column: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
        return column != self.active if self.only is None else column.in_(self.only)

    def holds(self, key_id: str | None) -> bool:
        if key_id is None:
            return False
        return key_id != self.active if self.only is None else key_id in self.only
