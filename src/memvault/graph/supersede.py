"""What a new fact does to the current facts of its subject and predicate, bi-temporally.

Nothing is deleted: a replaced fact gets ``superseded_at``/``superseded_by`` (system time) and
a ``valid_until`` (valid time). A correction ("actually…") says the old value never held, so
its valid interval becomes empty and the new value inherits its start. A value the store
already knows to be older than the current one is recorded as past at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from memvault.db.graph import FactRow
from memvault.graph.claims import is_functional

Policy = Literal["prefer_new", "prefer_old", "flag_review"]


@dataclass(frozen=True)
class NewFact:
    predicate: str
    temporal: str
    corrects: bool
    valid_from: datetime | None
    # Whether the text gave the start; otherwise it is the time the text was said.
    explicit_start: bool = False


@dataclass
class Plan:
    """Column changes: to the new fact, to current ones (by id), and review items to list."""

    new: dict[str, Any] = field(default_factory=dict)
    old: dict[UUID, dict[str, Any]] = field(default_factory=dict)
    reviews: list[UUID] = field(default_factory=list)
    # The new fact's own changes point at another fact.
    superseded_by_old: UUID | None = None


def contested(new: NewFact) -> bool:
    return new.corrects or is_functional(new.predicate)


def plan(policy: Policy, new: NewFact, rivals: list[FactRow], now: datetime) -> Plan:
    """The changes for a new fact given its subject's other current values of the predicate
    (``rivals``: same subject and predicate, a different value, not superseded)."""
    result = Plan()
    # A value that had already ended when the new one starts is history, not a rival: "I moved
    # to Hamburg" (or "actually, Hamburg") says nothing about having lived in Berlin before.
    rivals = [r for r in rivals if r.valid_until is None or r.valid_until > (new.valid_from or now)]
    if not rivals or not contested(new) or new.temporal == "past":
        return result
    if new.corrects:
        start = min((r.valid_from or r.recorded_at for r in rivals), default=None)
        for rival in rivals:
            never = rival.valid_from or rival.recorded_at
            result.old[rival.id] = _closed(now, valid_from=never, valid_until=never)
        if not new.explicit_start and start is not None:
            result.new["valid_from"] = start
        return result
    newer = [r for r in rivals if _starts_after(r, new)]
    if newer:
        # Older news: the store already holds what replaced it.
        first = min(newer, key=lambda r: (r.valid_from or now, r.id))
        result.new = {"valid_until": first.valid_from, "superseded_at": now}
        result.superseded_by_old = first.id
        return result
    if policy == "prefer_new":
        for rival in rivals:
            until = new.valid_from or now
            if rival.valid_until is not None:
                until = min(until, rival.valid_until)
            result.old[rival.id] = _closed(now, valid_until=until)
    elif policy == "prefer_old":
        at = new.valid_from or now
        result.new = {"valid_from": at, "valid_until": at, "superseded_at": now}
        result.superseded_by_old = rivals[0].id
    else:
        result.reviews = [r.id for r in rivals]
    return result


def _starts_after(rival: FactRow, new: NewFact) -> bool:
    return (
        new.valid_from is not None
        and rival.valid_from is not None
        and rival.valid_from > new.valid_from
    )


def _closed(now: datetime, **valid: datetime | None) -> dict[str, Any]:
    return {"superseded_at": now, **valid}
