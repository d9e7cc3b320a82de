"""Merging near-duplicate memories without losing anything.

A cluster merges into its earliest memory (the original, not the newest copy). The kept memory
takes the union of every copy's tags and metadata (a key the copies disagree on keeps the kept
memory's value, the others' under ``merged_conflicts``), the earliest ``occurred_at`` and
``created_at``, the highest importance, the latest expiry (none if any copy never expires),
every source (``merged_sources``) and every copy's id (``merged_from``); the facts, relations
and mentions derived from the copies become its own, and its history records the merge. The
copies are then deleted, all clusters together with one receipt.

``plan`` is pure, so the dashboard's preview shows exactly what the merge will do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID


class Copy(Protocol):
    """What a merge reads of a memory (a stored row or a record both have it)."""

    @property
    def id(self) -> UUID: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def occurred_at(self) -> datetime: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def importance(self) -> int | None: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def source(self) -> str | None: ...


@dataclass(frozen=True)
class Plan:
    keep: UUID
    rest: list[UUID]
    values: dict[str, Any] = field(default_factory=dict)


def order(copies: Sequence[Copy]) -> list[Copy]:
    """The kept memory first: the earliest created (ties by id, so the choice is stable)."""
    return sorted(copies, key=lambda c: (c.created_at, str(c.id)))


def plan(copies: Sequence[Copy]) -> Plan:
    """The kept memory's column values after the merge (only those that change)."""
    kept, *rest = order(copies)
    values: dict[str, Any] = {}
    tags = sorted({t for c in copies for t in c.tags})
    if tags != sorted(kept.tags):
        values["tags"] = tags
    metadata = _metadata(kept, rest)
    if metadata != kept.metadata:
        values["metadata"] = metadata
    for name in ("occurred_at", "created_at"):
        earliest = min(getattr(c, name) for c in copies)
        if earliest != getattr(kept, name):
            values[name] = earliest
    importance = max((c.importance for c in copies if c.importance is not None), default=None)
    if importance != kept.importance:
        values["importance"] = importance
    expiries = [c.expires_at for c in copies]
    expires = None if None in expiries else max(e for e in expiries if e is not None)
    if expires != kept.expires_at:
        values["expires_at"] = expires
    return Plan(kept.id, [c.id for c in rest], values)


def _metadata(kept: Copy, rest: Sequence[Copy]) -> dict[str, Any]:
    merged = dict(kept.metadata)
    conflicts: dict[str, list[Any]] = dict(merged.pop("merged_conflicts", None) or {})
    for copy in rest:
        for key, value in copy.metadata.items():
            if key in ("merged_from", "merged_sources", "merged_conflicts"):
                continue
            if key not in merged:
                merged[key] = value
            elif merged[key] != value and value not in conflicts.setdefault(key, []):
                conflicts[key].append(value)
    merged["merged_from"] = _union(kept, rest, "merged_from", [str(c.id) for c in rest])
    sources = sorted({c.source for c in (kept, *rest) if c.source})
    if len(sources) > 1 or kept.metadata.get("merged_sources"):
        merged["merged_sources"] = _union(kept, rest, "merged_sources", sources)
    conflicts = {k: v for k, v in conflicts.items() if v}
    if conflicts:
        merged["merged_conflicts"] = conflicts
    return merged


def _union(kept: Copy, rest: Sequence[Copy], key: str, new: list[str]) -> list[str]:
    """A list the copies may already carry from earlier merges, with the new entries."""
    earlier = [v for c in (kept, *rest) for v in (c.metadata.get(key) or [])]
    return list(dict.fromkeys([*earlier, *new]))


__all__ = ["Copy", "Plan", "order", "plan"]
